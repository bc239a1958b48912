/*
 * Shared option handling for the offline commands, so that `plan`, `simulate` and
 * `topology` read a topology and policy defaults exactly as vcpuplaced does.
 */
#include "cli/common.h"

#include "conf/conf.h"
#include "host/ledgerfile.h"
#include "core/request.h"
#include "host/hwtopo.h"

#include <stdio.h>
#include <stdlib.h>

GOptionGroup *
vpCliOptionGroup(vpCliOptions *opts)
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
        {"config", 'c', 0, G_OPTION_ARG_FILENAME, &opts->config,
         "vcpuplaced.conf whose [policy] group gives the defaults", "FILE"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &opts->json, "print JSON", NULL},
        G_OPTION_ENTRY_NULL,
    };
    GOptionGroup *group = g_option_group_new("common", "Topology and defaults",
                                             "Show topology and default options", NULL, NULL);

    g_option_group_add_entries(group, entries);
    return group;
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

gboolean
vpCliLoadDefaults(const vpCliOptions *opts, vpPolicy *defaults, GError **error)
{
    vpPolicyInitDefaults(defaults);
    if (!opts->config)
        return TRUE;
    char *why = NULL;
    vpConf *conf = vpConfLoad(opts->config, false, &why);
    if (!conf) {
        g_set_error_literal(error, VP_ERROR, VP_ERROR_INVALID, why ? why : "out of memory");
        free(why);
        return FALSE;
    }
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

void
vpCliPrintJson(JsonNode *node)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autofree char *text = NULL;

    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, node);
    text = json_generator_to_data(gen, NULL);
    printf("%s\n", text);
}
