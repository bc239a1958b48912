/*
 * The memory a domain holds per NUMA node, corrected to libvirt's live XML (ledger.h,
 * vpLedgerReconcileMemory()): the holdings change through vpLedgerReplace() like any other.
 */
#include "ledger.h"

static bool
bindingMode(vpMemMode mode)
{
    return mode == VP_MEM_STRICT || mode == VP_MEM_RESTRICTIVE || mode == VP_MEM_INTERLEAVE;
}

/* The OS nodes of this host that the live <numatune> confines the memory to; NULL when some
 * of it may lie anywhere (no numatune, preferred, a cell without a binding memnode). */
static hwloc_bitmap_t
liveMemoryNodes(const vpTopology *topo, const vpRequest *live)
{
    bool whole = bindingMode(live->mem_mode) && live->nodeset;
    g_autoptr(vpBitmap) in = whole ? hwloc_bitmap_dup(live->nodeset) : hwloc_bitmap_alloc();
    hwloc_bitmap_t out;

    for (unsigned c = 0; c < live->ncells && !whole; c++) {
        const vpCell *cell = &live->cells[c];
        vpMemMode mode = cell->mode != VP_MEM_NONE ? cell->mode : live->mem_mode;

        if (!cell->nodeset || !bindingMode(mode))
            return NULL;
        hwloc_bitmap_or(in, in, cell->nodeset);
    }
    if (!whole && live->ncells == 0)
        return NULL;
    out = hwloc_bitmap_alloc();
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);

        if (!node->made_up && hwloc_bitmap_isset(in, node->os))
            hwloc_bitmap_set(out, node->os);
    }
    return out;
}

/* Per node group index, the weight the live memory is spread by (see the header). */
static guint64 *
memoryWeights(const vpTopology *topo, const vpPlan *plan, hwloc_const_bitmap_t allowed)
{
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    guint64 *w = g_new0(guint64, nnodes);
    bool inside = plan->nmem > 0, any = false;

    for (unsigned i = 0; i < plan->nmem; i++)
        inside &= !allowed || hwloc_bitmap_isset(allowed, plan->mem[i].node);
    for (int g = 0; g < nnodes; g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);

        if (inside && !node->made_up)
            w[g] = vpPlanMemoryOn(plan, node->os);
    }
    for (unsigned i = 0; i < plan->nvcpus && !inside; i++) {
        int pu = plan->vcpu_pu[i] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[i]) : -1;
        int g = pu >= 0 ? vpTopologyNodeOfPU(topo, pu) : -1;
        const vpGroup *node = g >= 0 ? vpTopologyGroup(topo, VP_LEVEL_NUMA, g) : NULL;

        if (node && !node->made_up && (!allowed || hwloc_bitmap_isset(allowed, node->os)))
            w[g]++;
    }
    for (int g = 0; g < nnodes; g++)
        any |= w[g] > 0;
    for (int g = 0; g < nnodes && !any && allowed; g++)
        w[g] = hwloc_bitmap_isset(allowed, vpTopologyGroup(topo, VP_LEVEL_NUMA, g)->os);
    return w;
}

static char *
memoryText(const vpPlan *plan)
{
    g_autoptr(GString) s = g_string_new(NULL);

    for (unsigned i = 0; i < plan->nmem; i++) {
        g_autofree char *mem = vpMemoryFormat(plan->mem[i].bytes);
        g_autofree char *page =
            plan->mem[i].page_size ? vpMemoryFormat(plan->mem[i].page_size) : NULL;

        g_string_append_printf(s, "%snode %u: %s%s%s%s", i ? ", " : "", plan->mem[i].node, mem,
                               page ? " in " : "", page ? page : "", page ? " pages" : "");
    }
    return g_string_free(g_steal_pointer(&s), FALSE);
}

static bool
sameMemory(const vpPlan *a, const vpPlan *b)
{
    if (a->nmem != b->nmem || a->page_size != b->page_size)
        return false;
    for (unsigned i = 0; i < a->nmem; i++) {
        if (a->mem[i].node != b->mem[i].node || a->mem[i].bytes != b->mem[i].bytes ||
            a->mem[i].page_size != b->mem[i].page_size)
            return false;
    }
    return true;
}

static bool
severalPageSizes(const vpPlan *plan, const vpRequest *live)
{
    for (unsigned i = 0; i < plan->nmem; i++) {
        if (plan->mem[i].page_size != plan->mem[0].page_size)
            return true;
    }
    for (unsigned c = 0; c < live->ncells; c++) {
        if (vpRequestCellPage(live, &live->cells[c]) != live->hugepage_size)
            return true;
    }
    return false;
}

/* Guest cells on pages of several sizes: which cell's pages moved where is not in the live
 * XML's figures, so only a changed total is followed, each holding scaled, and only while
 * every holding lies where the live nodeset allows. */
static char *
scaleEntries(vpLedger *ledger, const vpPlan *plan, hwloc_const_bitmap_t allowed, guint64 total)
{
    g_autoptr(vpPlan) fixed = vpPlanCopy(plan);
    guint64 sum = 0, given = 0;

    for (unsigned i = 0; i < plan->nmem; i++) {
        if (allowed && !hwloc_bitmap_isset(allowed, plan->mem[i].node))
            return NULL;
        sum += plan->mem[i].bytes;
    }
    if (!sum || sum == total)
        return NULL;
    for (unsigned i = 0; i < fixed->nmem; i++) {
        fixed->mem[i].bytes = (guint64)((unsigned __int128)total * plan->mem[i].bytes / sum);
        given += fixed->mem[i].bytes;
    }
    fixed->mem[0].bytes += total - given;
    g_autofree char *was = memoryText(plan);
    g_autofree char *now = memoryText(fixed);
    if (!vpLedgerReplace(ledger, fixed, NULL))
        g_assert_not_reached(); /* the same PUs as the plan it replaces */
    return g_strdup_printf("%s -> %s", was, now);
}

char *
vpLedgerReconcileMemory(vpLedger *ledger, const char *domain, const vpRequest *live)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    const vpPlan *plan = vpLedgerLookup(ledger, domain);
    g_autoptr(vpBitmap) allowed = NULL;
    g_autofree guint64 *w = NULL;
    g_autoptr(vpPlan) fixed = NULL;
    guint64 sum = 0, given = 0;
    int first = -1;

    if (!plan || !live->memory)
        return NULL;
    allowed = liveMemoryNodes(topo, live);
    if (severalPageSizes(plan, live))
        return scaleEntries(ledger, plan, allowed, live->memory);
    w = memoryWeights(topo, plan, allowed);
    fixed = vpPlanCopy(plan);
    g_clear_pointer(&fixed->mem, g_free);
    fixed->nmem = 0;
    fixed->page_size = live->hugepage_size;
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        sum += w[g];
        if (w[g] && first < 0)
            first = g;
    }
    for (int g = first; g >= 0 && g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        /* 128-bit: sizes in bytes times weights in bytes overflow 64 bits */
        guint64 share = (guint64)((unsigned __int128)live->memory * w[g] / sum);

        if (!w[g])
            continue;
        vpPlanAddMemory(fixed, vpTopologyGroup(topo, VP_LEVEL_NUMA, g)->os, share);
        given += share;
    }
    if (first >= 0)
        vpPlanAddMemory(fixed, vpTopologyGroup(topo, VP_LEVEL_NUMA, first)->os,
                        live->memory - given);
    if (sameMemory(plan, fixed))
        return NULL;
    g_autofree char *was = plan->nmem ? memoryText(plan) : g_strdup("nothing");
    g_autofree char *now = fixed->nmem ? memoryText(fixed) : g_strdup("nothing");
    if (!vpLedgerReplace(ledger, fixed, NULL))
        g_assert_not_reached(); /* the same PUs as the plan it replaces */
    return g_strdup_printf("%s -> %s", was, now);
}
