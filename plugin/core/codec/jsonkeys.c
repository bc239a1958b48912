#include "core/codec/jsonkeys.h"
#include "core/model/error.h"

bool
vpJsonCheckKeys(JsonObject *obj, const char *object, const char *const *known, GError **error)
{
    g_autoptr(GList) members = json_object_get_members(obj);

    for (GList *m = members; m; m = m->next) {
        if (!g_strv_contains(known, m->data)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "unknown key '%s' in %s",
                        (const char *)m->data, object);
            return false;
        }
    }
    return true;
}
