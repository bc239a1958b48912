/*
 * vcpuplace topology: the host as the placer sees it, packages > NUMA > L3 > cores, each
 * PU with its owner from a ledger file or, with --live, from the running daemon (which
 * also says which topology and CPU sets it uses). Text for people, a flat PU list in JSON
 * for scripts.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/live.h"
#include "cli/picture.h"
#include "core/model/ledger.h"
#include "core/model/request.h"

#include <stdio.h>

/* One cell per PU: "CPU:owner" where owner is vm/vCPU, vm/emu, vm/rsv, hk, "-" (not handed
 * out) or "." (free). */
static char *
puCell(const vpTopology *topo, const vpLedger *ledger, int pu)
{
    const vpPU *p = vpTopologyPU(topo, pu);
    vpOwner owner = vpLedgerOwner(ledger, pu);

    if (owner.domain && owner.kind == VP_OWN_VCPU)
        return g_strdup_printf("%u:%s/%d", p->os, owner.domain, owner.vcpu);
    if (owner.domain)
        return g_strdup_printf("%u:%s/%s", p->os, owner.domain,
                               owner.kind == VP_OWN_EMULATOR ? "emu"
                               : owner.kind == VP_OWN_PINNED ? "own"
                                                             : "rsv");
    if (hwloc_bitmap_isset(vpTopologyHousekeeping(topo), p->os))
        return g_strdup_printf("%u:hk", p->os);
    return g_strdup_printf("%u:%s", p->os, p->usable ? "." : "-");
}

/* ", 64 GiB, 1G pages 4 of 4" or ", memory unknown": what a node gives the placer. */
static char *
nodeMemoryText(const vpGroup *g)
{
    GString *s = g_string_new(NULL);

    if (g->made_up)
        return g_string_free(s, FALSE);
    if (g->memory) {
        g_autofree char *mem = vpMemoryFormat(g->memory);

        g_string_append_printf(s, ", %s", mem);
    } else {
        g_string_append(s, ", memory unknown (no limit; give it with --node-memory)");
    }
    for (unsigned i = 0; i < g->npools; i++) {
        g_autofree char *size = vpMemoryFormat(g->pools[i].size);

        g_string_append_printf(s, ", %s pages: %" G_GUINT64_FORMAT, size, g->pools[i].count);
    }
    return g_string_free(s, FALSE);
}

/* What the model made up a group for: the machine has no such object above these CPUs. */
static const char *
madeUpText(vpLevel level)
{
    switch (level) {
    case VP_LEVEL_NUMA:
        return "these CPUs have no NUMA node";
    case VP_LEVEL_L3:
        return "these cores share no L3 cache";
    default:
        return "these CPUs have no package";
    }
}

/* "numa 4: no CPUs, memory 16 GiB, near nodes 0": memory a nodeset may name. */
static void
printMemNodes(const vpTopology *topo)
{
    for (int i = 0; i < vpTopologyNMemNodes(topo); i++) {
        const vpGroup *g = vpTopologyMemNode(topo, i);
        g_autofree char *near = vpCpuListFormat(g->near);
        g_autofree char *mem = g->memory ? vpMemoryFormat(g->memory) : g_strdup("unknown");

        printf("numa %u: no CPUs, memory %s, near nodes %s", g->os, mem, near);
        for (unsigned p = 0; p < g->npools; p++) {
            g_autofree char *size = vpMemoryFormat(g->pools[p].size);

            printf(", %s pages: %" G_GUINT64_FORMAT, size, g->pools[p].count);
        }
        printf("\n");
    }
}

static void
printText(const vpTopology *topo, const vpLedger *ledger)
{
    static const vpLevel shown[] = {VP_LEVEL_PACKAGE, VP_LEVEL_NUMA, VP_LEVEL_L3};
    int last[G_N_ELEMENTS(shown)] = {-1, -1, -1};
    g_autofree char *usable = vpCpuListFormat(vpTopologyUsableSet(topo));
    g_autofree char *hk = vpCpuListFormat(vpTopologyHousekeeping(topo));
    g_autofree char *offline = vpCpuListFormat(vpTopologyOffline(topo));

    int npackages = vpTopologyNGroups(topo, VP_LEVEL_PACKAGE);
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    int nl3 = vpTopologyNGroups(topo, VP_LEVEL_L3);
    int ncores = vpTopologyNCores(topo), ncpus = vpTopologyNPUs(topo);

    printf("%s: %d package%s, %d NUMA node%s, %d L3 group%s, %d core%s, %d CPU%s (SMT%d)",
           vpTopologyGetSource(topo), npackages, vpCliPlural(npackages), nnodes,
           vpCliPlural(nnodes), nl3, vpCliPlural(nl3), ncores, vpCliPlural(ncores), ncpus,
           vpCliPlural(ncpus), vpTopologyMaxSMT(topo));
    if (vpTopologyNMemNodes(topo))
        printf(", %d NUMA node%s without CPUs", vpTopologyNMemNodes(topo),
               vpCliPlural(vpTopologyNMemNodes(topo)));
    printf("\n");
    printf("usable %s; housekeeping (hk) %s; offline %s\n", *usable ? usable : "none",
           *hk ? hk : "none", *offline ? offline : "none");
    for (int c = 0; c < vpTopologyNCores(topo); c++) {
        const vpCore *core = vpTopologyCore(topo, c);
        g_autoptr(GString) line = g_string_new(NULL);

        for (gsize l = 0; l < G_N_ELEMENTS(shown); l++) {
            if (core->group[shown[l]] == last[l])
                continue;
            last[l] = core->group[shown[l]];
            for (gsize k = l + 1; k < G_N_ELEMENTS(shown); k++)
                last[k] = -1;
            const vpGroup *g = vpTopologyGroup(topo, shown[l], last[l]);
            g_autofree char *mem = shown[l] == VP_LEVEL_NUMA ? nodeMemoryText(g) : g_strdup("");

            if (g->made_up)
                printf("%*s%s - (%s)\n", (int)l * 2, "", vpLevelName(shown[l]),
                       madeUpText(shown[l]));
            else
                printf("%*s%s %u%s\n", (int)l * 2, "", vpLevelName(shown[l]), g->os, mem);
        }
        for (int i = 0; i < core->npus; i++) {
            g_autofree char *cell = puCell(topo, ledger, core->pus[i]);

            g_string_append_printf(line, " [%s]", cell);
        }
        printf("      core %d:%s\n", c, line->str);
    }
    printMemNodes(topo);
}

/* The CPUs of a node as a Linux CPU list, "" for a CPU-less one. */
static char *
nodeCpus(const vpTopology *topo, const vpGroup *g)
{
    g_autoptr(vpBitmap) set = hwloc_bitmap_alloc();

    for (int c = 0; c < g->ncores; c++) {
        const vpCore *core = vpTopologyCore(topo, g->cores[c]);

        for (int i = 0; i < core->npus; i++)
            hwloc_bitmap_set(set, vpTopologyPU(topo, core->pus[i])->os);
    }
    return vpCpuListFormat(set);
}

/* "memory" and "hugepages" of a node. */
static void
nodePoolsJson(JsonBuilder *b, const vpGroup *g)
{
    json_builder_set_member_name(b, "memory");
    if (g->memory)
        json_builder_add_int_value(b, (gint64)g->memory);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "hugepages");
    json_builder_begin_array(b);
    for (unsigned i = 0; i < g->npools; i++) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "size");
        json_builder_add_int_value(b, (gint64)g->pools[i].size);
        json_builder_set_member_name(b, "count");
        json_builder_add_int_value(b, (gint64)g->pools[i].count);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

/* {"numa", "cpus", "usable_cpus", "near" (the CPU nodes of a CPU-less node, else null),
 * "memory" (null: unknown), "hugepages": [{"size", "count"}]} a node. */
static void
nodeJson(JsonBuilder *b, const vpTopology *topo, const vpGroup *g)
{
    g_autofree char *cpus = nodeCpus(topo, g);
    int os;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "numa");
    json_builder_add_int_value(b, g->os);
    json_builder_set_member_name(b, "cpus");
    json_builder_add_string_value(b, cpus);
    json_builder_set_member_name(b, "usable_cpus");
    json_builder_add_int_value(b, g->npus);
    json_builder_set_member_name(b, "near");
    if (g->near) {
        json_builder_begin_array(b);
        hwloc_bitmap_foreach_begin(os, g->near) json_builder_add_int_value(b, os);
        hwloc_bitmap_foreach_end();
        json_builder_end_array(b);
    } else {
        json_builder_add_null_value(b);
    }
    nodePoolsJson(b, g);
    json_builder_end_object(b);
}

static void
nodesJson(JsonBuilder *b, const vpTopology *topo)
{
    json_builder_begin_array(b);
    for (int n = 0; n < vpTopologyNGroups(topo, VP_LEVEL_NUMA); n++) {
        const vpGroup *g = vpTopologyGroup(topo, VP_LEVEL_NUMA, n);

        if (!g->made_up)
            nodeJson(b, topo, g);
    }
    for (int n = 0; n < vpTopologyNMemNodes(topo); n++)
        nodeJson(b, topo, vpTopologyMemNode(topo, n));
    json_builder_end_array(b);
}

/* One PU: its CPU, core, groups (the node by OS number), and who holds it. */
static void
cpuJson(JsonBuilder *b, const vpTopology *topo, const vpLedger *ledger, int pu)
{
    static const vpLevel levels[] = {VP_LEVEL_CLUSTER, VP_LEVEL_L3, VP_LEVEL_NUMA,
                                     VP_LEVEL_PACKAGE};
    const vpPU *p = vpTopologyPU(topo, pu);
    const vpCore *core = vpTopologyCore(topo, p->core);
    vpOwner owner = vpLedgerOwner(ledger, pu);

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "cpu");
    json_builder_add_int_value(b, p->os);
    json_builder_set_member_name(b, "core");
    json_builder_add_int_value(b, p->core);
    for (gsize l = 0; l < G_N_ELEMENTS(levels); l++) {
        int idx = core->group[levels[l]];

        json_builder_set_member_name(b, vpLevelName(levels[l]));
        json_builder_add_int_value(b, levels[l] == VP_LEVEL_NUMA
                                          ? (int)vpTopologyGroup(topo, VP_LEVEL_NUMA, idx)->os
                                          : idx);
    }
    json_builder_set_member_name(b, "usable");
    json_builder_add_boolean_value(b, p->usable);
    json_builder_set_member_name(b, "domain");
    if (owner.domain)
        json_builder_add_string_value(b, owner.domain);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "kind");
    json_builder_add_string_value(b, !owner.domain &&
                                             hwloc_bitmap_isset(vpTopologyHousekeeping(topo), p->os)
                                         ? "housekeeping"
                                         : vpOwnKindName(owner.kind));
    if (owner.kind == VP_OWN_VCPU) {
        json_builder_set_member_name(b, "vcpu");
        json_builder_add_int_value(b, owner.vcpu);
    }
    json_builder_end_object(b);
}

static JsonNode *
toJson(const vpTopology *topo, const vpLedger *ledger)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autofree char *offline = vpCpuListFormat(vpTopologyOffline(topo));
    g_autofree char *hk = vpCpuListFormat(vpTopologyHousekeeping(topo));

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "source");
    json_builder_add_string_value(b, vpTopologyGetSource(topo));
    json_builder_set_member_name(b, "smt");
    json_builder_add_int_value(b, vpTopologyMaxSMT(topo));
    json_builder_set_member_name(b, "offline");
    json_builder_add_string_value(b, offline);
    json_builder_set_member_name(b, "housekeeping");
    json_builder_add_string_value(b, hk);
    json_builder_set_member_name(b, "nodes");
    nodesJson(b, topo);
    json_builder_set_member_name(b, "cpus");
    json_builder_begin_array(b);
    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++)
        cpuJson(b, topo, ledger, pu);
    json_builder_end_array(b);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

int
vpCmdTopology(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_auto(vpCliHeldOptions) held = {0};
    g_autofree char *output = NULL;
    g_autoptr(GOptionContext) octx = g_option_context_new(NULL);
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "draw the host with lstopo into FILE.png, .svg or .pdf", "FILE"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    int rc;

    g_option_context_set_summary(octx, "Draw the host: packages > NUMA > L3 > cores > PUs.");
    if (!vpCliParseHeldOptions(octx, entries, &opts, &held, "topology", &argc, &argv))
        return VP_EXIT_ERROR;
    if ((rc = vpCliLoadHeld("topology", &opts, &held, &topo, &ledger)) != VP_EXIT_OK)
        return rc;
    if (output) {
        if (!vpPictureRender(topo, ledger, output, &error)) {
            vpCliError("topology", error);
            return VP_EXIT_ERROR;
        }
    } else if (opts.json) {
        g_autoptr(JsonNode) node = toJson(topo, ledger);

        vpCliPrintJson(node);
    } else {
        printText(topo, ledger);
    }
    return VP_EXIT_OK;
}
