/*
 * vcpuplace capacity: the host's capacity (core/place/capacity.h) for the cloud's flavors or a
 * list of vCPU counts, as text or JSON, offline or from the running daemon's topology and
 * ledger.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/live.h"
#include "core/place/capacity.h"
#include "core/model/error.h"
#include "core/model/request.h"

#include <stdio.h>
#include <stdlib.h>

/* memory and page_size in bytes (null: not counted, base pages), cpus and, when shared, the
 * ratio. */
static void
addFlavorMembers(JsonBuilder *b, const vpCapacityShape *fit)
{
    json_builder_set_member_name(b, "memory");
    if (fit->memory)
        json_builder_add_int_value(b, (gint64)fit->memory);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "page_size");
    if (fit->page_size)
        json_builder_add_int_value(b, (gint64)fit->page_size);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "cpus");
    json_builder_add_string_value(b, vpCpusName(fit->cpus));
    json_builder_set_member_name(b, "ratio");
    if (fit->cpus == VP_CPUS_SHARED)
        json_builder_add_double_value(b, fit->ratio);
    else
        json_builder_add_null_value(b);
}

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
        json_builder_set_member_name(b, "flavor");
        if (fits[i].flavor)
            json_builder_add_string_value(b, fits[i].flavor);
        else
            json_builder_add_null_value(b);
        json_builder_set_member_name(b, "vcpus");
        json_builder_add_int_value(b, fits[i].vcpus);
        json_builder_set_member_name(b, "smt");
        json_builder_add_string_value(b, vpSmtName(fits[i].smt));
        addFlavorMembers(b, &fits[i]);
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

/* "m1.iso" or, for a shape of vCPU counts, "-"; with memory "8 GiB" or "8 GiB/1 GiB pages";
 * a shared shape its ratio. */
static void
printShape(const vpCapacityShape *s, int nnodes)
{
    g_autofree char *mem = s->memory ? vpMemoryFormat(s->memory) : g_strdup("-");
    g_autofree char *pages = s->page_size ? vpMemoryFormat(s->page_size) : NULL;
    g_autofree char *ratio = s->cpus == VP_CPUS_SHARED ? vpRatioFormat(s->ratio) : NULL;
    g_autofree char *memcol = pages ? g_strdup_printf("%s/%s pages", mem, pages) : NULL;
    g_autofree char *smtcol = ratio ? g_strdup_printf("shared:%s", ratio) : NULL;

    printf("%-16s %-6u %-9s %-20s %5u", s->flavor ? s->flavor : "-", s->vcpus,
           smtcol ? smtcol : vpSmtName(s->smt), memcol ? memcol : mem, s->host);
    for (int n = 0; n < nnodes; n++)
        printf(" %6u", s->nodes[n]);
    printf(" %8u\n", s->spanning);
}

static void
printText(const vpTopology *topo, const vpLedger *ledger, const vpCapacityShape *fits, guint nfits)
{
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    unsigned held = vpLedgerNDomains(ledger);

    printf("%s: %d usable CPUs; %u domain%s in the ledger\n", vpTopologyGetSource(topo),
           hwloc_bitmap_weight(vpTopologyUsableSet(topo)), held, held == 1 ? "" : "s");
    printf("%-16s %-6s %-9s %-20s %5s", "flavor", "vcpus", "smt", "memory", "host");
    for (int n = 0; n < nnodes; n++) {
        g_autofree char *col =
            g_strdup_printf("node%u", vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->os);
        printf(" %6s", col);
    }
    printf(" %8s\n", "spanning");
    for (guint i = 0; i < nfits; i++)
        printShape(&fits[i], nnodes);
}

/* --flavor; else --vcpus; else what the gauges count: the configuration's capacity_vcpus (else
 * the built-in list), then its capacity_flavors. */
static vpCapacity *
compute(const vpCliOptions *opts, const vpTopology *topo, const vpLedger *ledger,
        const vpPolicy *defaults, char **flavor_specs, const char *vcpus_list, GError **error)
{
    g_autoptr(GArray) flavors = vpFlavorArrayNew();
    g_autoptr(GArray) counts = NULL;
    g_autofree char *list = g_strdup(vcpus_list);
    g_autofree char *conf_flavors = NULL;

    for (char **f = flavor_specs; f && *f; f++) {
        if (!vpFlavorParseList("--flavor", *f, defaults, flavors, error))
            return NULL;
    }
    if (flavor_specs)
        return vpCapacityComputeFlavors(topo, ledger, flavors, error);
    if (!list && !(list = vpCliConfValue(opts, "daemon", "capacity_vcpus", error))) {
        if (*error)
            return NULL;
        list = g_strdup(VP_CAPACITY_DEFAULT_VCPUS);
    }
    if (!(counts = vpCapacityParseVcpus(list, error)))
        return NULL;
    vpCapacityCountFlavors(flavors, counts, defaults);
    if (!vcpus_list && (conf_flavors = vpCliConfValue(opts, "daemon", "capacity_flavors", error)) &&
        !vpFlavorParseList("capacity_flavors", conf_flavors, defaults, flavors, error))
        return NULL;
    if (*error)
        return NULL;
    return vpCapacityComputeFlavors(topo, ledger, flavors, error);
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
    g_auto(GStrv) flavor_specs = NULL;
    g_autoptr(GOptionContext) octx = g_option_context_new(NULL);
    GOptionEntry entries[] = {
        {"flavor", 'f', 0, G_OPTION_ARG_STRING_ARRAY, &flavor_specs,
         "a flavor, NAME:vcpus=N[,memory=SIZE][,pages=SIZE][,POLICY=VALUE...] (repeatable)",
         "SPEC"},
        {"vcpus", 0, 0, G_OPTION_ARG_STRING, &vcpus_list,
         "vCPU counts of the shapes (default " VP_CAPACITY_DEFAULT_VCPUS ")", "LIST"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(vpCapacity) cap = NULL;
    vpPolicy defaults;
    int rc;

    g_option_context_set_summary(octx, "How many more VMs of each flavor (vCPUs, memory, huge "
                                       "pages, policy) or shape (vCPUs x smt policy)\nfit now, on "
                                       "the host and per NUMA node, by repeated placement on a "
                                       "copy of the ledger.");
    if (!vpCliParseHeldOptions(octx, entries, &opts, &held, "capacity", &argc, &argv))
        return VP_EXIT_ERROR;
    if (flavor_specs && vcpus_list) {
        fprintf(stderr, "vcpuplace capacity: --flavor and --vcpus: give one of the two\n");
        return VP_EXIT_ERROR;
    }
    if (!vpCliLoadDefaults(&opts, &defaults, &error)) {
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }
    if ((rc = vpCliLoadHeld("capacity", &opts, &held, &topo, &ledger)) == VP_EXIT_OK &&
        !(cap = compute(&opts, topo, ledger, &defaults, flavor_specs, vcpus_list, &error))) {
        vpCliError("capacity", error);
        rc = VP_EXIT_ERROR;
    }
    vpPolicyClear(&defaults);
    if (rc == VP_EXIT_OK)
        printCapacity(&opts, topo, ledger, cap);
    return rc;
}
