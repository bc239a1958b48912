/*
 * vcpuplace capacity: the host's capacity (core/capacity.h) for a list of vCPU counts, as
 * text or JSON, offline or from the running daemon's topology and ledger.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/live.h"
#include "core/capacity.h"
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>

static JsonNode *
toJson(const vpTopology *topo, const vpCapacityShape *fits, guint nfits)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "source");
    json_builder_add_string_value(b, vpTopologyGetSource(topo));
    json_builder_set_member_name(b, "shapes");
    json_builder_begin_array(b);
    for (guint i = 0; i < nfits; i++) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "vcpus");
        json_builder_add_int_value(b, fits[i].vcpus);
        json_builder_set_member_name(b, "smt");
        json_builder_add_string_value(b, vpSmtName(fits[i].smt));
        json_builder_set_member_name(b, "host");
        json_builder_add_int_value(b, fits[i].host);
        json_builder_set_member_name(b, "nodes");
        json_builder_begin_array(b);
        for (int n = 0; n < nnodes; n++) {
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "numa");
            json_builder_add_int_value(b, vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->os);
            json_builder_set_member_name(b, "fit");
            json_builder_add_int_value(b, fits[i].nodes[n]);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_set_member_name(b, "spanning");
        json_builder_add_int_value(b, fits[i].spanning);
        json_builder_set_member_name(b, "stop");
        if (fits[i].stop)
            json_builder_add_string_value(b, fits[i].stop);
        else
            json_builder_add_null_value(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static void
printText(const vpTopology *topo, const vpLedger *ledger, const vpCapacityShape *fits, guint nfits)
{
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    unsigned held = vpLedgerNDomains(ledger);

    printf("%s: %d usable CPUs; %u domain%s in the ledger\n", vpTopologyGetSource(topo),
           hwloc_bitmap_weight(vpTopologyUsableSet(topo)), held, held == 1 ? "" : "s");
    printf("%-6s %-8s %5s", "vcpus", "smt", "host");
    for (int n = 0; n < nnodes; n++) {
        g_autofree char *col =
            g_strdup_printf("node%u", vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->os);
        printf(" %6s", col);
    }
    printf(" %8s\n", "spanning");
    for (guint i = 0; i < nfits; i++) {
        printf("%-6u %-8s %5u", fits[i].vcpus, vpSmtName(fits[i].smt), fits[i].host);
        for (int n = 0; n < nnodes; n++)
            printf(" %6u", fits[i].nodes[n]);
        printf(" %8u\n", fits[i].spanning);
    }
}

int
vpCmdCapacity(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_autofree char *ledger_path = NULL;
    g_autofree char *socket = NULL;
    g_autofree char *vcpus_list = NULL;
    gboolean live = FALSE;
    g_autoptr(GOptionContext) octx = g_option_context_new(NULL);
    GOptionEntry entries[] = {
        {"ledger", 'l', 0, G_OPTION_ARG_FILENAME, &ledger_path,
         "ledger (JSON) of CPUs already held", "FILE"},
        {"live", 0, 0, G_OPTION_ARG_NONE, &live,
         "the running daemon's topology and ledger (socket from --config or --socket)", NULL},
        {"socket", 's', 0, G_OPTION_ARG_FILENAME, &socket, "the daemon's socket (with --live)",
         "PATH"},
        {"vcpus", 0, 0, G_OPTION_ARG_STRING, &vcpus_list,
         "vCPU counts of the shapes (default " VP_CAPACITY_DEFAULT_VCPUS ")", "LIST"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(GArray) counts = NULL;
    vpPolicy defaults;

    g_option_context_set_summary(octx, "How many more VMs of each shape (vCPUs x smt policy) fit "
                                       "now, on the host and per NUMA node,\nby repeated "
                                       "placement on a copy of the ledger.");
    g_option_context_add_main_entries(octx, entries, NULL);
    vpCliAddOptions(octx, &opts);
    if (!g_option_context_parse(octx, &argc, &argv, &error)) {
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }
    if (argc != 1) {
        fprintf(stderr, "vcpuplace capacity: unexpected argument '%s'\n", argv[1]);
        return VP_EXIT_ERROR;
    }
    if (live && (ledger_path || opts.topology || opts.host_cpus || opts.housekeeping)) {
        fprintf(stderr,
                "vcpuplace capacity: --live takes the topology, CPU sets and ledger "
                "from the daemon; drop --ledger, --topology, --host-cpus, --housekeeping\n");
        return VP_EXIT_ERROR;
    }
    if (!vcpus_list && !(vcpus_list = vpCliConfValue(&opts, "daemon", "capacity_vcpus", &error)) &&
        !error)
        vcpus_list = g_strdup(VP_CAPACITY_DEFAULT_VCPUS);
    if (error || !(counts = vpCapacityParseVcpus(vcpus_list, &error)) ||
        !vpCliLoadDefaults(&opts, &defaults, &error)) {
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }
    if (live) {
        if (!vpCliLoadLive(&opts, socket, &topo, &ledger, &error)) {
            vpPolicyClear(&defaults);
            return vpLiveFail("capacity", error);
        }
    } else if (!(topo = vpCliLoadTopology(&opts, &error)) ||
               !(ledger = vpCliLoadLedger(topo, ledger_path, &error))) {
        vpPolicyClear(&defaults);
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }

    g_autoptr(vpCapacity) cap = vpCapacityCompute(topo, ledger, &defaults, counts, &error);
    vpPolicyClear(&defaults);
    if (!cap) {
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }
    if (opts.json) {
        g_autoptr(JsonNode) node = toJson(topo, cap->shapes, cap->nshapes);
        vpCliPrintJson(node);
    } else {
        printText(topo, ledger, cap->shapes, cap->nshapes);
    }
    return VP_EXIT_OK;
}
