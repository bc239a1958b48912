/* See flavor.h. */
#include "core/place/flavor.h"
#include "core/model/error.h"
#include "core/model/request.h"

#include <string.h>

void
vpFlavorClear(vpFlavor *flavor)
{
    g_clear_pointer(&flavor->name, g_free);
    vpPolicyClear(&flavor->policy);
}

GArray *
vpFlavorArrayNew(void)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(vpFlavor));

    g_array_set_clear_func(a, (GDestroyNotify)vpFlavorClear);
    return a;
}

static bool
validName(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > VP_FLAVOR_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!g_ascii_isalnum(name[i]) && !strchr("._-", name[i]))
            return false;
    }
    return true;
}

static bool
setKey(vpFlavor *f, const char *key, const char *value, GError **error)
{
    if (strcmp(key, "vcpus") == 0) {
        guint64 v;

        if (!g_ascii_string_to_unsigned(value, 10, 1, 4096, &v, NULL)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "vcpus='%s' is not a vCPU count (1 to 4096)", value);
            return false;
        }
        f->vcpus = (unsigned)v;
        return true;
    }
    if (strcmp(key, "memory") == 0)
        return vpMemorySizeParse("memory", value, &f->memory, error);
    if (strcmp(key, "pages") == 0)
        return vpMemorySizeParse("pages", value, &f->page_size, error);
    if (strcmp(key, "unmet") == 0 || strcmp(key, VP_TENANCY_KEY) == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s='%s': not a flavor's to set (keys: vcpus, memory, pages and the policy's "
                    "smt, cpus, ratio, locality, group, coresched, emulator, rebalance)",
                    key, value);
        return false;
    }
    return vpPolicySetAttr(&f->policy, key, value, error);
}

static bool
parseOne(const char *spec, const vpPolicy *defaults, vpFlavor *f, GError **error)
{
    const char *colon = strchr(spec, ':');
    g_auto(GStrv) pairs = NULL;

    f->name = g_strndup(spec, colon ? (gsize)(colon - spec) : strlen(spec));
    if (!validName(f->name)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "'%s' is not a flavor name (1 to %d characters of A-Z a-z 0-9 . _ -) "
                    "followed by ':' and its keys",
                    f->name, VP_FLAVOR_NAME_MAX);
        return false;
    }
    vpPolicyCopy(&f->policy, defaults);
    pairs = g_strsplit(colon ? colon + 1 : "", ",", -1);
    for (char **p = pairs; *p; p++) {
        char *eq = strchr(*p, '=');

        if (!eq) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "'%s' is not KEY=VALUE", *p);
            return false;
        }
        *eq = '\0';
        if (!setKey(f, *p, eq + 1, error))
            return false;
    }
    f->policy.unmet = VP_UNMET_REFUSE;
    if (f->vcpus == 0) {
        g_set_error_literal(error, VP_ERROR, VP_ERROR_INVALID, "vcpus is missing");
        return false;
    }
    if (f->page_size && !f->memory) {
        g_set_error_literal(error, VP_ERROR, VP_ERROR_INVALID,
                            "pages without memory: huge pages back the flavor's memory");
        return false;
    }
    return true;
}

static bool
named(const GArray *flavors, const char *name)
{
    for (guint i = 0; i < flavors->len; i++) {
        const char *n = g_array_index(flavors, vpFlavor, i).name;
        if (n && strcmp(n, name) == 0)
            return true;
    }
    return false;
}

bool
vpFlavorParseList(const char *what, const char *list, const vpPolicy *defaults, GArray *out,
                  GError **error)
{
    g_auto(GStrv) specs = g_strsplit(list, ";", -1);
    guint before = out->len;

    for (char **s = specs; *s; s++) {
        vpFlavor f = {0};
        g_autoptr(GError) why = NULL;
        char *spec = g_strstrip(*s);

        if (!*spec)
            continue;
        if (parseOne(spec, defaults, &f, &why) && named(out, f.name))
            g_set_error_literal(&why, VP_ERROR, VP_ERROR_INVALID, "named twice");
        if (why) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s '%s': %s", what,
                        f.name ? f.name : spec, why->message);
            vpFlavorClear(&f);
            return false;
        }
        g_array_append_val(out, f);
    }
    if (out->len == before) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: no flavor in '%s'", what, list);
        return false;
    }
    return true;
}
