/*
 * Shared option handling for the offline commands, so that `plan`, `simulate` and
 * `topology` read a topology and policy defaults exactly as vcpuplaced does.
 */
#include "cli/common.h"

#include "conf/conf.h"
#include "core/codec/jsonkeys.h"
#include "host/ledgerfile.h"
#include "core/model/request.h"
#include "host/hwtopo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
addOptions(GOptionContext *ctx, vpCliOptions *opts)
{
    GOptionEntry entries[] = {
        {"topology", 't', 0, G_OPTION_ARG_STRING, &opts->topology,
         "host (default), synthetic:DESCRIPTION, or an hwloc XML file", "SOURCE"},
        {"host-cpus", 0, 0, G_OPTION_ARG_STRING, &opts->host_cpus,
         "CPUs vcpuplace may hand out (default: all)", "LIST"},
        {"housekeeping", 0, 0, G_OPTION_ARG_STRING, &opts->housekeeping,
         "CPUs never handed out (host threads, emulators)", "LIST"},
        {"node-memory", 0, 0, G_OPTION_ARG_STRING, &opts->node_memory,
         "memory of each NUMA node the topology gives none (e.g. 64GiB)", "SIZE"},
        {"config", 0, 0, G_OPTION_ARG_FILENAME, &opts->config,
         "vcpuplaced.conf whose [policy] group gives the defaults", "FILE"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &opts->json, "print JSON", NULL},
        G_OPTION_ENTRY_NULL,
    };
    /* main entries, so that each command's --help lists them (a group shows only under
     * --help-all) */
    g_option_context_add_main_entries(ctx, entries, NULL);
}

gboolean
vpCliParseOptions(GOptionContext *ctx, const GOptionEntry *entries, vpCliOptions *opts,
                  const char *cmd, int *argc, char ***argv)
{
    g_autoptr(GError) error = NULL;

    if (entries)
        g_option_context_add_main_entries(ctx, entries, NULL);
    addOptions(ctx, opts);
    if (!g_option_context_parse(ctx, argc, argv, &error)) {
        vpCliError(cmd, error);
        return FALSE;
    }
    return TRUE;
}

gboolean
vpCliNoArguments(const char *cmd, int argc, char **argv)
{
    if (argc <= 1)
        return TRUE;
    fprintf(stderr, "vcpuplace %s: unexpected argument '%s'\n", cmd, argv[1]);
    return FALSE;
}

gboolean
vpCliOneArgument(const char *cmd, const char *what, int argc)
{
    if (argc == 2)
        return TRUE;
    fprintf(stderr, "vcpuplace %s: expected one %s argument\n", cmd, what);
    return FALSE;
}

gboolean
vpCliCheckMaxMoves(const char *cmd, gint max_moves)
{
    if (max_moves >= 0 && max_moves <= 64)
        return TRUE;
    fprintf(stderr, "vcpuplace %s: --max-moves=%d is not within 0..64\n", cmd, max_moves);
    return FALSE;
}

vpTopology *
vpCliLoadTopology(const vpCliOptions *opts, GError **error)
{
    hwloc_bitmap_t host = NULL, hk = NULL;
    vpTopology *topo = NULL;

    if (opts->host_cpus && !(host = vpCpuListParse("--host-cpus", opts->host_cpus, error)))
        goto out;
    if (opts->housekeeping && !(hk = vpCpuListParse("--housekeeping", opts->housekeeping, error)))
        goto out;
    topo = vpHwtopoLoad(opts->topology, host, hk, error);
    if (topo && opts->node_memory) {
        guint64 bytes;

        if (!vpMemorySizeParse("--node-memory", opts->node_memory, &bytes, error))
            g_clear_pointer(&topo, vpTopologyFree);
        else
            vpTopologySetUnknownMemory(topo, bytes);
    }
out:
    if (host)
        hwloc_bitmap_free(host);
    if (hk)
        hwloc_bitmap_free(hk);
    return topo;
}

vpConf *
vpCliConfLoad(const char *path, gboolean missing_ok, GError **error)
{
    char *why = NULL;
    vpConf *conf = vpConfLoad(path, missing_ok, &why);

    if (!conf) {
        g_set_error_literal(error, VP_ERROR, VP_ERROR_INVALID, why ? why : "out of memory");
        free(why);
    }
    return conf;
}

char *
vpCliConfValue(const vpCliOptions *opts, const char *group, const char *key, GError **error)
{
    if (!opts->config) {
        for (const vpConfKey *k = vpConfKeys; k->key; k++) {
            if (strcmp(k->group, group) == 0 && strcmp(k->key, key) == 0)
                return g_strdup(k->def);
        }
        return NULL;
    }
    vpConf *conf = vpCliConfLoad(opts->config, FALSE, error);
    if (!conf)
        return NULL;
    char *value = g_strdup(vpConfGet(conf, group, key));
    vpConfFree(conf);
    return value;
}

gboolean
vpCliLoadDefaults(const vpCliOptions *opts, vpPolicy *defaults, GError **error)
{
    vpPolicyInitDefaults(defaults);
    if (!opts->config)
        return TRUE;
    vpConf *conf = vpCliConfLoad(opts->config, FALSE, error);
    if (!conf)
        return FALSE;
    gboolean ok = TRUE;
    for (size_t i = 0; ok && i < vpConfCount(conf, "policy"); i++) {
        const char *key, *value;
        vpConfAt(conf, "policy", i, &key, &value);
        ok = vpPolicySetDefault(defaults, key, value, error);
    }
    if (!ok)
        g_prefix_error(error, "%s: ", opts->config);
    vpConfFree(conf);
    return ok;
}

void
vpCliOptionsClear(vpCliOptions *opts)
{
    g_clear_pointer(&opts->topology, g_free);
    g_clear_pointer(&opts->host_cpus, g_free);
    g_clear_pointer(&opts->housekeeping, g_free);
    g_clear_pointer(&opts->config, g_free);
    g_clear_pointer(&opts->node_memory, g_free);
}

vpLedger *
vpCliLoadLedger(const vpTopology *topo, const char *path, GError **error)
{
    if (!path)
        return vpLedgerNew(topo);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "--ledger %s: no such file", path);
        return NULL;
    }
    return vpLedgerFileLoad(topo, path, error);
}

void
vpCliError(const char *cmd, const GError *error)
{
    fprintf(stderr, "vcpuplace %s: %s\n", cmd, error->message);
}

char *
vpCliJsonText(JsonNode *node, gboolean pretty)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;

    /* every document leads with its format (vcpuplace-json(7)); the daemon's replies already
     * carry it */
    if (JSON_NODE_HOLDS_OBJECT(node) &&
        !json_object_has_member(json_node_get_object(node), "format")) {
        JsonObject *src = json_node_get_object(node);
        g_autoptr(JsonObject) obj = json_object_new();
        g_autoptr(GList) members = json_object_get_members(src);

        json_object_set_int_member(obj, "format", VP_JSON_FORMAT);
        for (GList *l = members; l; l = l->next)
            json_object_set_member(obj, l->data, json_object_dup_member(src, l->data));
        root = json_node_init_object(json_node_alloc(), obj);
    } else {
        root = json_node_copy(node);
    }
    json_generator_set_pretty(gen, pretty);
    json_generator_set_root(gen, root);
    return json_generator_to_data(gen, NULL);
}

void
vpCliPrintMetrics(JsonNode *metrics)
{
    JsonObject *m = json_node_get_object(metrics);
    g_autoptr(GList) keys = json_object_get_members(m);

    printf("metrics:\n");
    for (GList *l = keys; l; l = l->next) {
        JsonNode *v = json_object_get_member(m, l->data);

        /* %g: 0.4 and 18.725 as people write them, not the shortest exact double */
        if (json_node_get_value_type(v) == G_TYPE_DOUBLE)
            printf("  %-34s %g\n", (const char *)l->data, json_node_get_double(v));
        else
            printf("  %-34s %" G_GINT64_FORMAT "\n", (const char *)l->data, json_node_get_int(v));
    }
}

void
vpCliPrintJson(JsonNode *node)
{
    g_autofree char *text = vpCliJsonText(node, TRUE);

    printf("%s\n", text);
}
