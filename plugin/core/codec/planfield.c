/*
 * The plan reader's field helpers (planreadpriv.h): each names the field as a path
 * ("vcpus[2].cpu") and the bad value.
 */
#include "core/codec/planreadpriv.h"
#include "core/model/topology.h"

#include <string.h>

JsonNode *
vpPlanMember(JsonObject *obj, const char *field, GError **error)
{
    JsonNode *node = json_object_get_member(obj, field);

    if (!node)
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s is missing", field);
    return node;
}

/* A short rendering of a JSON value for error messages. */
char *
vpPlanShow(JsonNode *node)
{
    g_autofree char *text = json_to_string(node, FALSE);

    if (strlen(text) > 40)
        return g_strdup_printf("%.40s...", text);
    return g_steal_pointer(&text);
}

bool
vpPlanGetInt(JsonObject *obj, const char *path, const char *field, gint64 min, gint64 max,
             gint64 *out, GError **error)
{
    JsonNode *node = json_object_get_member(obj, field);
    g_autofree char *shown = NULL;

    if (!node) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s%s is missing", path, field);
        return false;
    }
    if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_INT64) {
        *out = json_node_get_int(node);
        if (*out >= min && *out <= max)
            return true;
    }
    shown = vpPlanShow(node);
    if (min == max)
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s%s=%s, expected %" G_GINT64_FORMAT, path,
                    field, shown, min);
    else
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s%s=%s, expected an integer in %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT, path,
                    field, shown, min, max);
    return false;
}

bool
vpPlanGetBool(JsonObject *obj, const char *field, bool *out, GError **error)
{
    JsonNode *node = vpPlanMember(obj, field, error);
    g_autofree char *shown = NULL;

    if (!node)
        return false;
    if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_BOOLEAN) {
        *out = json_node_get_boolean(node);
        return true;
    }
    shown = vpPlanShow(node);
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s=%s is not true or false", field, shown);
    return false;
}

/* An index that may be none: null (or -1, as ledgers before format 1 wrote it) gives -1. */
bool
vpPlanGetIndex(JsonObject *obj, const char *path, const char *field, gint64 max, gint64 *out,
               GError **error)
{
    JsonNode *node = json_object_get_member(obj, field);

    if (node && JSON_NODE_HOLDS_NULL(node)) {
        *out = -1;
        return true;
    }
    return vpPlanGetInt(obj, path, field, -1, max, out, error);
}

/* The member's name in this format, or its name before format 1 (the ledger written by an
 * older vcpuplaced) when only that is present. */
const char *
vpPlanLegacyName(JsonObject *obj, const char *name, const char *legacy)
{
    if (!json_object_has_member(obj, name) && json_object_has_member(obj, legacy))
        return legacy;
    return name;
}

/* A string, or NULL in *out for JSON null when nullable. */
bool
vpPlanGetString(JsonObject *obj, const char *path, const char *field, bool nullable,
                const char **out, GError **error)
{
    g_autofree char *name = g_strconcat(path, field, NULL);
    JsonNode *node = json_object_get_member(obj, field);
    g_autofree char *shown = NULL;

    if (!node) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s is missing", name);
        return false;
    }
    if (nullable && JSON_NODE_HOLDS_NULL(node)) {
        *out = NULL;
        return true;
    }
    if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING) {
        *out = json_node_get_string(node);
        return true;
    }
    shown = vpPlanShow(node);
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s=%s is not a string%s", name, shown,
                nullable ? " or null" : "");
    return false;
}

JsonObject *
vpPlanGetObject(JsonObject *obj, const char *field, GError **error)
{
    JsonNode *node = vpPlanMember(obj, field, error);

    if (!node)
        return NULL;
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        g_autofree char *shown = vpPlanShow(node);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s=%s is not an object", field, shown);
        return NULL;
    }
    return json_node_get_object(node);
}

hwloc_bitmap_t
vpPlanGetSet(JsonObject *obj, const char *field, GError **error)
{
    const char *text;
    hwloc_bitmap_t set;

    if (!vpPlanGetString(obj, "", field, false, &text, error))
        return NULL;
    if (!*text)
        return hwloc_bitmap_alloc();
    if (!(set = vpCpuListParse(field, text, error)))
        return NULL;
    if (hwloc_bitmap_last(set) > VP_PLAN_MAX_CPU) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s='%s' names CPUs above %d", field, text,
                    VP_PLAN_MAX_CPU);
        hwloc_bitmap_free(set);
        return NULL;
    }
    return set;
}
