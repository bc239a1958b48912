/*
 * vcpuplace score: feeds the outcome of another placer (a benchmark baseline) through the
 * scorer that `vcpuplace simulate` uses, so that every placer's figures are computed by the
 * same code. The outcome file is JSON lines, one per trace event:
 *   {"op":"start","domain":"vm1","vcpus":2,"smt":"spread","group":"g1","threads":2,
 *    "coresched":"group","memory":"4GiB","cpus":[0,16],"reserved":[],"us":12.5}
 *   {"op":"start","domain":"vm3","vcpus":2,"smt":"isolate","cpus":[2,4],
 *    "moves":[{"domain":"vm1","from":16,"to":17}],"us":30}
 *   {"op":"start","domain":"vm2","vcpus":4,"smt":"pack","refused":true,"us":3.1}
 *   {"op":"stop","domain":"vm1"}
 * "cpus" is the Linux CPU of each vCPU, "reserved" the CPUs held idle, "us" the decision
 * time, "coresched" (default vm) decides with "group" who trusts whom, "memory" (as in a trace;
 * absent: none) what the VM holds on its vCPUs' nodes, "moves" the running
 * vCPUs re-pinned (Linux CPUs) to make room before this start. A stop of a VM that is not running
 * (it was refused) is ignored, as in simulate. "name" for "domain", as outcomes said before
 * the JSON format 1, is still read.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/trace.h"
#include "core/codec/jsonkeys.h"
#include "core/place/score.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define VP_SCORE_MAX_VCPUS 4096

static gboolean
memberUs(JsonObject *obj, double *us, GError **error)
{
    JsonNode *node = json_object_get_member(obj, "us");
    GType type = node && JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_NONE;

    if (type != G_TYPE_DOUBLE && type != G_TYPE_INT64) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"us\" must be a number");
        return FALSE;
    }
    *us = json_node_get_double(node);
    if (!isfinite(*us) || *us < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"us\": %g is not a duration", *us);
        return FALSE;
    }
    return TRUE;
}

/* An array of Linux CPU numbers; the scorer checks them against the topology. */
static int *
memberCpus(JsonObject *obj, const char *key, guint *n, GError **error)
{
    JsonNode *node = json_object_get_member(obj, key);
    JsonArray *arr;
    g_autofree int *cpus = NULL;

    if (!node || !JSON_NODE_HOLDS_ARRAY(node)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"%s\" must be an array of CPU numbers",
                    key);
        return NULL;
    }
    arr = json_node_get_array(node);
    *n = json_array_get_length(arr);
    cpus = g_new(int, MAX(*n, 1));
    for (guint i = 0; i < *n; i++) {
        JsonNode *e = json_array_get_element(arr, i);
        gint64 v;

        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64 ||
            (v = json_node_get_int(e)) < 0 || v > G_MAXINT) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "\"%s\"[%u] must be a CPU number (an integer >= 0)", key, i);
            return NULL;
        }
        cpus[i] = (int)v;
    }
    return g_steal_pointer(&cpus);
}

static gboolean
moveCpu(JsonObject *mobj, guint i, const char *key, unsigned *out, GError **error)
{
    JsonNode *e = json_object_get_member(mobj, key);
    gint64 v;

    if (!e || !JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64 ||
        (v = json_node_get_int(e)) < 0 || v > 65535) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "\"moves\"[%u].%s must be a CPU number (an integer in 0..65535)", i, key);
        return FALSE;
    }
    *out = (unsigned)v;
    return TRUE;
}

static gboolean
scoreMoves(vpScore *score, JsonObject *obj, GError **error)
{
    static const char *const keys[] = {"domain", "name", "from", "to", NULL};
    JsonNode *node = json_object_get_member(obj, "moves");
    JsonArray *arr;

    if (!node)
        return TRUE;
    if (!JSON_NODE_HOLDS_ARRAY(node)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"moves\" must be an array");
        return FALSE;
    }
    arr = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(arr); i++) {
        JsonNode *m = json_array_get_element(arr, i);
        JsonObject *mobj = JSON_NODE_HOLDS_OBJECT(m) ? json_node_get_object(m) : NULL;
        const char *vm;
        unsigned from, to;

        if (!mobj) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"moves\"[%u] is not an object", i);
            return FALSE;
        }
        if (!vpJsonCheckKeys(mobj, "move", keys, error) || !(vm = vpTraceGetDomain(mobj, error)) ||
            !moveCpu(mobj, i, "from", &from, error) || !moveCpu(mobj, i, "to", &to, error) ||
            !vpScoreMoved(score, vm, from, to, error))
            return FALSE;
    }
    return TRUE;
}

/* The start's policy: "smt" (already read), then "group" (null or "" for none) and
 * "coresched", each checked as a domain's metadata would be. */
static gboolean
startPolicy(JsonObject *obj, const char *smt, vpPolicy *policy, GError **error)
{
    const char *coresched = NULL, *group = NULL;

    if (json_object_has_member(obj, "group") && !json_object_get_null_member(obj, "group") &&
        !(group = vpTraceGetString(obj, "group", error)))
        return FALSE;
    if (group && *group && !vpPolicyValidGroup(group)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"group\": '%s' is not a valid group",
                    group);
        return FALSE;
    }
    if (json_object_has_member(obj, "coresched") &&
        !(coresched = vpTraceGetString(obj, "coresched", error)))
        return FALSE;
    vpPolicyInitDefaults(policy);
    if (!vpPolicySetAttr(policy, "smt", smt, error) ||
        (coresched && !vpPolicySetAttr(policy, "coresched", coresched, error))) {
        vpPolicyClear(policy);
        return FALSE;
    }
    policy->group = g_strdup(group && *group ? group : NULL);
    return TRUE;
}

/* "refused" (absent: false); a refused start names no CPUs. */
static gboolean
startRefused(JsonObject *obj, gboolean *refused, GError **error)
{
    JsonNode *r = json_object_get_member(obj, "refused");

    *refused = FALSE;
    if (!r)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(r) || json_node_get_value_type(r) != G_TYPE_BOOLEAN) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"refused\" must be true or false");
        return FALSE;
    }
    *refused = json_node_get_boolean(r);
    if (*refused &&
        (json_object_has_member(obj, "cpus") || json_object_has_member(obj, "reserved"))) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "a refused start has no \"cpus\" or \"reserved\"");
        return FALSE;
    }
    return TRUE;
}

/* "reserved" as a set (*out NULL when absent); a CPU named twice is an error. */
static gboolean
startReserved(JsonObject *obj, vpBitmap **out, GError **error)
{
    g_autofree int *reserved = NULL;
    g_autoptr(vpBitmap) held = NULL;
    guint nreserved = 0;

    *out = NULL;
    if (!json_object_has_member(obj, "reserved"))
        return TRUE;
    if (!(reserved = memberCpus(obj, "reserved", &nreserved, error)))
        return FALSE;
    held = hwloc_bitmap_alloc();
    for (guint i = 0; i < nreserved; i++) {
        if (hwloc_bitmap_isset(held, reserved[i])) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"reserved\" names CPU %d twice",
                        reserved[i]);
            return FALSE;
        }
        hwloc_bitmap_set(held, reserved[i]);
    }
    *out = g_steal_pointer(&held);
    return TRUE;
}

/* "memory", a size as a trace gives it (absent: 0, none asked). */
static gboolean
startMemory(JsonObject *obj, guint64 *memory, GError **error)
{
    const char *size;

    *memory = 0;
    if (!json_object_has_member(obj, "memory"))
        return TRUE;
    return (size = vpTraceGetString(obj, "memory", error)) &&
           vpMemorySizeParse("\"memory\"", size, memory, error);
}

/* An admitted start: one CPU per vCPU, the reserved ones, and the moves made before it. */
static gboolean
startPlaced(vpScore *score, JsonObject *obj, const char *name, const vpPolicy *policy,
            unsigned threads, unsigned vcpus, guint64 memory, double us, GError **error)
{
    g_autofree int *cpus = NULL;
    g_autoptr(vpBitmap) held = NULL;
    guint ncpus;

    if (!(cpus = memberCpus(obj, "cpus", &ncpus, error)))
        return FALSE;
    if (ncpus != vcpus) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"cpus\" has %u entries for %u vCPUs",
                    ncpus, vcpus);
        return FALSE;
    }
    return startReserved(obj, &held, error) && scoreMoves(score, obj, error) &&
           vpScorePlaced(score, name, policy, threads, vcpus, cpus, held, memory, us, error);
}

static gboolean
scoreStart(vpScore *score, JsonObject *obj, const char *name, GError **error)
{
    static const char *const keys[] = {"op",    "domain",    "name",    "vcpus",  "smt",
                                       "group", "threads",   "refused", "cpus",   "reserved",
                                       "us",    "coresched", "moves",   "memory", NULL};
    vpPolicy policy;
    unsigned vcpus = 0, threads = 1;
    guint64 memory;
    const char *smt;
    double us;
    gboolean refused, ok;

    if (!vpJsonCheckKeys(obj, "start event", keys, error))
        return FALSE;
    if (!json_object_has_member(obj, "vcpus")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "start needs \"vcpus\"");
        return FALSE;
    }
    if (!vpTraceGetUInt(obj, "vcpus", VP_SCORE_MAX_VCPUS, &vcpus, error) ||
        !(smt = vpTraceGetString(obj, "smt", error)) || !memberUs(obj, &us, error) ||
        !vpTraceGetUInt(obj, "threads", 8, &threads, error) || !startMemory(obj, &memory, error) ||
        !startPolicy(obj, smt, &policy, error))
        return FALSE;
    ok = startRefused(obj, &refused, error) &&
         (refused || startPlaced(score, obj, name, &policy, threads, vcpus, memory, us, error));
    if (ok && refused)
        vpScoreRefused(score, vcpus, us);
    vpPolicyClear(&policy);
    return ok;
}

static gboolean
scoreLine(const char *line, unsigned lineno, gpointer data, GError **error)
{
    vpScore *score = data;
    static const char *const stop_keys[] = {"op", "domain", "name", NULL};
    g_autoptr(JsonNode) root = NULL;
    JsonObject *obj;
    const char *op, *name;

    if (!(obj = vpTraceParseHead(line, "an outcome", &root, &op, &name, error)))
        return FALSE;
    if (!*name) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"domain\" must not be empty");
        return FALSE;
    }
    if (strcmp(op, "start") == 0)
        return scoreStart(score, obj, name, error);
    if (strcmp(op, "stop") == 0) {
        if (!vpJsonCheckKeys(obj, "stop event", stop_keys, error))
            return FALSE;
        vpScoreStopped(score, name);
        return TRUE;
    }
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "\"op\": '%s' is not one of start, stop", op);
    return FALSE;
}

int
vpCmdScore(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_autoptr(GOptionContext) octx = g_option_context_new("OUTCOMES.jsonl");
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpScore) score = NULL;
    g_autoptr(JsonNode) metrics = NULL;

    g_option_context_set_summary(octx, "Score another placer's outcomes (JSON lines of starts "
                                       "with their CPUs, refusals and stops) with the metrics "
                                       "of `vcpuplace simulate`.");
    if (!vpCliParseOptions(octx, NULL, &opts, "score", &argc, &argv))
        return VP_EXIT_ERROR;
    if (!vpCliOneArgument("score", "OUTCOMES.jsonl", argc))
        return VP_EXIT_ERROR;
    if (!(topo = vpCliLoadTopology(&opts, &error))) {
        vpCliError("score", error);
        return VP_EXIT_ERROR;
    }
    score = vpScoreNew(topo);
    if (!vpTraceEachLine(argv[1], scoreLine, score, &error)) {
        vpCliError("score", error);
        return VP_EXIT_ERROR;
    }
    metrics = vpScoreToJson(score);
    if (opts.json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        g_autoptr(JsonNode) root = NULL;

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "metrics");
        json_builder_add_value(b, g_steal_pointer(&metrics));
        json_builder_end_object(b);
        root = json_builder_get_root(b);
        vpCliPrintJson(root);
    } else {
        vpCliPrintMetrics(metrics);
    }
    return VP_EXIT_OK;
}
