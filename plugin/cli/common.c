/*
 * Shared option handling for the offline commands, so that `plan`, `simulate` and
 * `topology` read a topology and policy defaults exactly as vcpuplaced does.
 */
#include "cli/common.h"

#include "host/hwtopo.h"

#include <stdio.h>

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
    g_autoptr(GKeyFile) kf = NULL;

    vpPolicyInitDefaults(defaults);
    if (!opts->config)
        return TRUE;
    kf = g_key_file_new();
    if (!g_key_file_load_from_file(kf, opts->config, G_KEY_FILE_NONE, error)) {
        g_prefix_error(error, "%s: ", opts->config);
        return FALSE;
    }
    if (!g_key_file_has_group(kf, "policy"))
        return TRUE;
    if (!vpPolicyLoadKeyFile(defaults, kf, "policy", error)) {
        g_prefix_error(error, "%s: ", opts->config);
        return FALSE;
    }
    return TRUE;
}

void
vpCliOptionsClear(vpCliOptions *opts)
{
    g_clear_pointer(&opts->topology, g_free);
    g_clear_pointer(&opts->host_cpus, g_free);
    g_clear_pointer(&opts->housekeeping, g_free);
    g_clear_pointer(&opts->config, g_free);
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
    return vpLedgerLoad(topo, path, error);
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
