/*
 * The memory a domain holds per NUMA node, corrected to libvirt's live XML (ledger.h,
 * vpLedgerReconcileMemory()): the holdings change through vpLedgerReplace() like any other.
 */
#include "core/model/ledger.h"

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

/* Per node group index, how memory that must go somewhere inside allowed is spread (as first
 * touch would): over the nodes of the domain's vCPUs there, else evenly over allowed. All
 * zero when allowed names no node of this host. */
static guint64 *
spreadWeights(const vpTopology *topo, const vpPlan *plan, hwloc_const_bitmap_t allowed)
{
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    guint64 *w = g_new0(guint64, nnodes);
    bool any = false;

    for (unsigned i = 0; i < plan->nvcpus; i++) {
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

/* Adds bytes in pages of page_size to plan, split by the weights w; false (nothing added)
 * when every weight is zero. */
static bool
spreadPages(vpPlan *plan, const vpTopology *topo, const guint64 *w, guint64 page_size,
            guint64 bytes)
{
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA), first = -1;
    guint64 sum = 0, given = 0;

    for (int g = 0; g < nnodes; g++) {
        sum += w[g];
        if (w[g] && first < 0)
            first = g;
    }
    if (first < 0)
        return false;
    for (int g = first + 1; g < nnodes; g++) {
        /* 128-bit: sizes in bytes times weights in bytes overflow 64 bits */
        guint64 share = (guint64)((unsigned __int128)bytes * w[g] / sum);

        if (!share)
            continue;
        vpPlanAddPages(plan, vpTopologyGroup(topo, VP_LEVEL_NUMA, g)->os, page_size, share);
        given += share;
    }
    vpPlanAddPages(plan, vpTopologyGroup(topo, VP_LEVEL_NUMA, first)->os, page_size, bytes - given);
    return true;
}

static char *
memoryText(const vpPlan *plan)
{
    g_autoptr(GString) s = g_string_new(NULL);

    if (!plan->nmem)
        return g_strdup("nothing");
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

/* Each holding of plan scaled to the live total, into fixed: base pages that lie outside
 * allowed are spread inside it (the kernel migrates them when cpuset.mems changes; where
 * allowed names no node of this host they cannot be elsewhere and stay), huge pages stay
 * where they are (neither libvirt nor a cpuset change moves a running domain's huge pages),
 * and each such holding is named in stay. */
static void
followHoldings(const vpTopology *topo, const vpPlan *plan, hwloc_const_bitmap_t allowed,
               guint64 total, vpPlan *fixed, GString *stay)
{
    g_autofree guint64 *w = allowed ? spreadWeights(topo, plan, allowed) : NULL;
    bool movable = false;
    guint64 sum = 0, given = 0, moving = 0;

    for (int g = 0; w && g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++)
        movable |= w[g] > 0;
    for (unsigned i = 0; i < plan->nmem; i++)
        sum += plan->mem[i].bytes;
    for (unsigned i = 0; i < plan->nmem && sum; i++) {
        const vpNodeMemory *m = &plan->mem[i];
        guint64 bytes = (guint64)((unsigned __int128)total * m->bytes / sum);
        bool outside = allowed && !hwloc_bitmap_isset(allowed, m->node);

        if (i == plan->nmem - 1)
            bytes = total - given;
        given += bytes;
        if (outside && !m->page_size && movable) {
            moving += bytes;
            continue;
        }
        if (bytes)
            vpPlanAddPages(fixed, m->node, m->page_size, bytes);
        if (outside && m->page_size) {
            g_autofree char *mem = vpMemoryFormat(bytes);
            g_autofree char *page = vpMemoryFormat(m->page_size);
            g_string_append_printf(stay, "%snode %u: %s in %s pages", stay->len ? ", " : "",
                                   m->node, mem, page);
        }
    }
    if (moving)
        spreadPages(fixed, topo, w, 0, moving);
}

char *
vpLedgerReconcileMemory(vpLedger *ledger, const char *domain, const vpRequest *live)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    const vpPlan *plan = vpLedgerLookup(ledger, domain);
    g_autoptr(vpBitmap) allowed = NULL;
    g_autoptr(vpPlan) fixed = NULL;
    g_autoptr(GString) stay = g_string_new(NULL);

    if (!plan || !live->memory)
        return NULL;
    allowed = liveMemoryNodes(topo, live);
    fixed = vpPlanCopy(plan);
    g_clear_pointer(&fixed->mem, g_free);
    fixed->nmem = 0;
    if (plan->nmem) {
        followHoldings(topo, plan, allowed, live->memory, fixed, stay);
    } else {
        g_autofree guint64 *w = spreadWeights(topo, plan, allowed);

        fixed->page_size = live->hugepage_size;
        spreadPages(fixed, topo, w, fixed->page_size, live->memory);
    }
    if (sameMemory(plan, fixed) && !stay->len)
        return NULL;
    g_autofree char *was = memoryText(plan);
    g_autofree char *now = memoryText(fixed);
    if (!vpLedgerReplace(ledger, fixed, NULL))
        g_assert_not_reached(); /* the same PUs as the plan it replaces */
    if (!stay->len)
        return g_strdup_printf("%s -> %s", was, now);
    return g_strdup_printf("%s -> %s; huge pages outside the live nodeset stay (%s): libvirt "
                           "does not move them live",
                           was, now, stay->str);
}
