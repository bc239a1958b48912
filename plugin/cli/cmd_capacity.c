/*
 * vcpuplace capacity: the host's capacity (core/place/capacity.h) for a list of vCPU counts, as
 * text or JSON, offline or from the running daemon's topology and ledger.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/live.h"
#include "core/place/capacity.h"
#include "core/model/error.h"

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

/* --vcpus, else the configuration's capacity_vcpus, else the built-in list. */
static GArray *
shapeCounts(const vpCliOptions *opts, const char *vcpus_list, GError **error)
{
    g_autofree char *list = g_strdup(vcpus_list);

    if (!list && !(list = vpCliConfValue(opts, "daemon", "capacity_vcpus", error))) {
        if (error && *error)
            return NULL;
        list = g_strdup(VP_CAPACITY_DEFAULT_VCPUS);
    }
    return vpCapacityParseVcpus(list, error);
}

static void
printCapacity(const vpCliOptions *opts, const vpTopology *topo, const vpLedger *ledger,
              const vpCapacity *cap)
{
    if (opts->json) {
        g_autoptr(JsonNode) node = toJson(topo, cap->shapes, cap->nshapes);

        vpCliPrintJson(node);
    } else {
        printText(topo, ledger, cap->shapes, cap->nshapes);
    }
}

int
vpCmdCapacity(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_auto(vpCliHeldOptions) held = {0};
    g_autofree char *vcpus_list = NULL;
    g_autoptr(GOptionContext) octx = g_option_context_new(NULL);
    GOptionEntry entries[] = {
        {"vcpus", 0, 0, G_OPTION_ARG_STRING, &vcpus_list,
         "vCPU counts of the shapes (default " VP_CAPACITY_DEFAULT_VCPUS ")", "LIST"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(GArray) counts = NULL;
    g_autoptr(vpCapacity) cap = NULL;
    vpPolicy defaults;
    int rc;

    g_option_context_set_summary(octx, "How many more VMs of each shape (vCPUs x smt policy) fit "
                                       "now, on the host and per NUMA node,\nby repeated "
                                       "placement on a copy of the ledger.");
    if (!vpCliParseHeldOptions(octx, entries, &opts, &held, "capacity", &argc, &argv))
        return VP_EXIT_ERROR;
    if (!(counts = shapeCounts(&opts, vcpus_list, &error)) ||
        !vpCliLoadDefaults(&opts, &defaults, &error)) {
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }
    if ((rc = vpCliLoadHeld("capacity", &opts, &held, &topo, &ledger)) == VP_EXIT_OK &&
        !(cap = vpCapacityCompute(topo, ledger, &defaults, counts, &error))) {
        vpCliError("capacity", error);
        rc = VP_EXIT_ERROR;
    }
    vpPolicyClear(&defaults);
    if (rc == VP_EXIT_OK)
        printCapacity(&opts, topo, ledger, cap);
    return rc;
}
