/*
 * Trace line parser: outside input, so every field is checked by type and range and
 * errors name the key and the value.
 */
#include "cli/trace.h"
#include "core/codec/jsonkeys.h"

#include "core/codec/jsonparse.h"
#include "core/model/topology.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define VP_TRACE_MAX_VCPUS 4096

/* A start event's keys: nine for the request (the domain as "domain" or, as before the JSON
 * format 1, "name"; "cpuset" as <vcpu cpuset>), then (policy_keys) the policy attributes
 * ("ratio" a string, as the schema writes it). */
static const char *const start_keys[] = {"op",    "domain",    "name",     "vcpus",    "threads",
                                         "cores", "sockets",   "memory",   "cpuset",   "smt",
                                         "group", "coresched", "locality", "emulator", "rebalance",
                                         "unmet", "cpus",      "ratio",    NULL};
static const char *const *const policy_keys = start_keys + 9;
static const char *const stop_keys[] = {"op", "domain", "name", NULL};

gboolean
vpTraceGetUInt(JsonObject *obj, const char *key, unsigned max, unsigned *out, GError **error)
{
    JsonNode *node = json_object_get_member(obj, key);
    gint64 v;

    if (!node)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"%s\" must be an integer", key);
        return FALSE;
    }
    v = json_node_get_int(node);
    if (v < 1 || v > max) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "\"%s\": %" G_GINT64_FORMAT " is not within 1..%u", key, v, max);
        return FALSE;
    }
    *out = (unsigned)v;
    return TRUE;
}

const char *
vpTraceGetString(JsonObject *obj, const char *key, GError **error)
{
    JsonNode *node = json_object_get_member(obj, key);

    if (!node || !JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"%s\" must be a string", key);
        return NULL;
    }
    return json_node_get_string(node);
}

const char *
vpTraceGetDomain(JsonObject *obj, GError **error)
{
    if (json_object_has_member(obj, "domain") && json_object_has_member(obj, "name")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "\"domain\" and \"name\" both given; \"name\" is its older spelling");
        return NULL;
    }
    return vpTraceGetString(obj, json_object_has_member(obj, "name") ? "name" : "domain", error);
}

static gboolean
validName(const char *name)
{
    gsize len = strlen(name);

    if (len == 0 || len > 200 || !g_utf8_validate(name, -1, NULL))
        return FALSE;
    for (const char *p = name; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == '/')
            return FALSE;
    }
    return TRUE;
}

static gboolean
parseStart(JsonObject *obj, const vpPolicy *defaults, vpTraceEvent *ev, GError **error)
{
    unsigned vcpus = 0;

    if (!json_object_has_member(obj, "vcpus")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "start needs \"vcpus\"");
        return FALSE;
    }
    if (!vpTraceGetUInt(obj, "vcpus", VP_TRACE_MAX_VCPUS, &vcpus, error))
        return FALSE;
    ev->req = vpRequestNew(ev->name, vcpus);
    vpPolicyClear(&ev->req->policy);
    vpPolicyCopy(&ev->req->policy, defaults);
    if (!vpTraceGetUInt(obj, "threads", 8, &ev->req->threads, error) ||
        !vpTraceGetUInt(obj, "cores", VP_TRACE_MAX_VCPUS, &ev->req->cores, error) ||
        !vpTraceGetUInt(obj, "sockets", VP_TRACE_MAX_VCPUS, &ev->req->sockets, error))
        return FALSE;
    if (!vpJsonCheckKeys(obj, "start event", start_keys, error))
        return FALSE;
    if (json_object_has_member(obj, "memory")) {
        const char *size = vpTraceGetString(obj, "memory", error);

        if (!size || !vpMemorySizeParse("\"memory\"", size, &ev->req->memory, error))
            return FALSE;
    }
    if (json_object_has_member(obj, "cpuset")) {
        const char *list = vpTraceGetString(obj, "cpuset", error);

        if (!list || !(ev->req->cpuset = vpCpuListParse("\"cpuset\"", list, error)))
            return FALSE;
    }
    for (const char *const *key = policy_keys; *key; key++) {
        const char *value;

        if (!json_object_has_member(obj, *key))
            continue;
        if (!(value = vpTraceGetString(obj, *key, error)) ||
            !vpPolicySetAttr(&ev->req->policy, *key, value, error))
            return FALSE;
    }
    ev->req->has_policy = TRUE;
    return TRUE;
}

JsonObject *
vpTraceParseHead(const char *line, const char *what, JsonNode **root, const char **op,
                 const char **name, GError **error)
{
    JsonObject *obj;

    if (!(*root = vpJsonParse(line, -1, error)))
        return NULL;
    if (!JSON_NODE_HOLDS_OBJECT(*root)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s must be a JSON object", what);
        return NULL;
    }
    obj = json_node_get_object(*root);
    if (!(*op = vpTraceGetString(obj, "op", error)) || !(*name = vpTraceGetDomain(obj, error)))
        return NULL;
    return obj;
}

gboolean
vpTraceParseLine(const char *line, const vpPolicy *defaults, vpTraceEvent *ev, GError **error)
{
    g_autoptr(JsonNode) root = NULL;
    JsonObject *obj;
    const char *op, *name;

    memset(ev, 0, sizeof(*ev));
    if (!(obj = vpTraceParseHead(line, "an event", &root, &op, &name, error)))
        return FALSE;
    if (!validName(name)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "\"domain\": '%s' is not a valid domain name", name);
        return FALSE;
    }
    ev->name = g_strdup(name);
    if (strcmp(op, "start") == 0) {
        ev->op = VP_TRACE_START;
        if (!parseStart(obj, defaults, ev, error)) {
            vpTraceEventClear(ev);
            return FALSE;
        }
        return TRUE;
    }
    if (strcmp(op, "stop") == 0) {
        ev->op = VP_TRACE_STOP;
        if (!vpJsonCheckKeys(obj, "stop event", stop_keys, error)) {
            vpTraceEventClear(ev);
            return FALSE;
        }
        return TRUE;
    }
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"op\": '%s' is not one of start, stop", op);
    vpTraceEventClear(ev);
    return FALSE;
}

gboolean
vpTraceEachLine(const char *path, vpTraceLineFunc fn, gpointer data, GError **error)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;

    if (!g_file_get_contents(path, &text, NULL, error))
        return FALSE;
    lines = g_strsplit(text, "\n", -1);
    for (unsigned i = 0; lines[i]; i++) {
        if (!*g_strstrip(lines[i]))
            continue;
        if (!fn(lines[i], i + 1, data, error)) {
            g_prefix_error(error, "%s:%u: ", path, i + 1);
            return FALSE;
        }
    }
    return TRUE;
}

void
vpTraceEventClear(vpTraceEvent *ev)
{
    g_clear_pointer(&ev->name, g_free);
    g_clear_pointer(&ev->req, vpRequestFree);
}
