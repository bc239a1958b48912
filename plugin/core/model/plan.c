/*
 * Plans and their text (their JSON: codec/planwrite.c and codec/planread.c).
 */
#include "core/model/plan.h"
#include "core/model/request.h"

#include <stdarg.h>
#include <string.h>

static const char *const howNames[VP_HOW_LAST] = {
    [VP_HOW_PLACED] = "placed",
    [VP_HOW_PINNED] = "pinned",
    [VP_HOW_ADOPTED] = "adopted",
};

vpPlan *
vpPlanNew(const char *domain, unsigned nvcpus)
{
    vpPlan *plan = g_new0(vpPlan, 1);
    unsigned i;

    plan->domain = g_strdup(domain);
    vpPolicyInitDefaults(&plan->policy);
    plan->how = VP_HOW_PLACED;
    plan->nvcpus = nvcpus;
    plan->vcpu_pu = g_new(int, nvcpus);
    for (i = 0; i < nvcpus; i++)
        plan->vcpu_pu[i] = -1;
    plan->emulator = hwloc_bitmap_alloc();
    plan->reserved = hwloc_bitmap_alloc();
    plan->own = hwloc_bitmap_alloc();
    plan->shared = hwloc_bitmap_alloc();
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
    return plan;
}

void
vpPlanFree(vpPlan *plan)
{
    if (!plan)
        return;
    g_free(plan->domain);
    vpPolicyClear(&plan->policy);
    g_free(plan->vcpu_pu);
    hwloc_bitmap_free(plan->emulator);
    hwloc_bitmap_free(plan->reserved);
    hwloc_bitmap_free(plan->own);
    hwloc_bitmap_free(plan->shared);
    for (unsigned i = 0; plan->vcpu_set && i < plan->nvcpus; i++)
        hwloc_bitmap_free(plan->vcpu_set[i]);
    g_free(plan->vcpu_set);
    if (plan->cpuset)
        hwloc_bitmap_free(plan->cpuset);
    g_free(plan->mem);
    g_free(plan->degraded_reason);
    for (unsigned i = 0; i < plan->nmoves; i++) {
        g_free(plan->moves[i].domain);
        g_free(plan->moves[i].reason);
    }
    g_free(plan->moves);
    g_free(plan);
}

vpPlan *
vpPlanCopy(const vpPlan *plan)
{
    vpPlan *copy = vpPlanNew(plan->domain, plan->nvcpus);

    vpPolicyCopy(&copy->policy, &plan->policy);
    copy->how = plan->how;
    memcpy(copy->vcpu_pu, plan->vcpu_pu, sizeof(int) * plan->nvcpus);
    hwloc_bitmap_copy(copy->emulator, plan->emulator);
    hwloc_bitmap_copy(copy->reserved, plan->reserved);
    copy->level = plan->level;
    copy->level_index = plan->level_index;
    copy->guest_sockets = plan->guest_sockets;
    copy->guest_cores = plan->guest_cores;
    copy->guest_threads = plan->guest_threads;
    copy->topology_mismatch = plan->topology_mismatch;
    copy->overcommit = plan->overcommit;
    copy->beside_others = plan->beside_others;
    copy->degraded = plan->degraded;
    copy->degraded_reason = g_strdup(plan->degraded_reason);
    for (unsigned i = 0; i < plan->nmoves; i++)
        vpPlanAddMove(copy, plan->moves[i].domain, plan->moves[i].vcpu, plan->moves[i].from,
                      plan->moves[i].to, plan->moves[i].reason);
    hwloc_bitmap_copy(copy->own, plan->own);
    if (plan->vcpu_set) {
        vpPlanMakeShared(copy);
        hwloc_bitmap_copy(copy->shared, plan->shared);
        for (unsigned i = 0; i < plan->nvcpus; i++)
            hwloc_bitmap_copy(copy->vcpu_set[i], plan->vcpu_set[i]);
    }
    copy->cpuset = plan->cpuset ? hwloc_bitmap_dup(plan->cpuset) : NULL;
    copy->nmem = plan->nmem;
    copy->mem = g_memdup2(plan->mem, sizeof(*plan->mem) * plan->nmem);
    copy->page_size = plan->page_size;
    return copy;
}

void
vpPlanMakeShared(vpPlan *plan)
{
    if (plan->vcpu_set)
        return;
    plan->vcpu_set = g_new(hwloc_bitmap_t, plan->nvcpus);
    for (unsigned i = 0; i < plan->nvcpus; i++)
        plan->vcpu_set[i] = hwloc_bitmap_alloc();
}

double
vpPlanSharedLoad(const vpPlan *plan, int os)
{
    double load = 0;

    for (unsigned i = 0; plan->vcpu_set && i < plan->nvcpus; i++) {
        int n = hwloc_bitmap_weight(plan->vcpu_set[i]);

        if (n > 0 && hwloc_bitmap_isset(plan->vcpu_set[i], os))
            load += 1.0 / n;
    }
    return load;
}

void
vpPlanAddMove(vpPlan *plan, const char *domain, unsigned vcpu, unsigned from, unsigned to,
              const char *reason)
{
    plan->moves = g_renew(vpMove, plan->moves, plan->nmoves + 1);
    plan->moves[plan->nmoves++] = (vpMove){g_strdup(domain), vcpu, from, to, g_strdup(reason)};
}

void
vpGuestCellsFree(vpGuestCells *cells)
{
    if (!cells)
        return;
    for (unsigned i = 0; i < cells->ncells; i++)
        hwloc_bitmap_free(cells->cells[i].vcpus);
    g_free(cells->cells);
    g_free(cells);
}

vpGuestCells *
vpPlanGuestCells(const vpPlan *plan, const vpTopology *topo)
{
    unsigned n = vpLocalitySplit(plan->policy.locality);
    g_autoptr(vpGuestCells) cells = NULL;
    g_autoptr(vpBitmap) used = hwloc_bitmap_alloc();
    vpGuestCell *cell = NULL;

    if (!n || !topo || plan->degraded || plan->nvcpus < n)
        return NULL;
    cells = g_new0(vpGuestCells, 1);
    cells->cells = g_new0(vpGuestCell, n);
    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[v]) : -1;
        int c = pu >= 0 ? vpTopologyPU(topo, pu)->core : -1;
        int g = c >= 0 ? vpTopologyCore(topo, c)->group[VP_LEVEL_NUMA] : -1;
        unsigned os = g >= 0 ? vpTopologyGroup(topo, VP_LEVEL_NUMA, g)->os : 0;

        if (g < 0)
            return NULL;
        if (!cell || cell->node != os) {
            /* a new block: on a node no earlier block took, and no more than n blocks */
            if (cells->ncells == n || hwloc_bitmap_isset(used, os))
                return NULL;
            cell = &cells->cells[cells->ncells];
            cell->id = cells->ncells++;
            cell->node = os;
            cell->vcpus = hwloc_bitmap_alloc();
            hwloc_bitmap_set(used, os);
        }
        hwloc_bitmap_set(cell->vcpus, v);
    }
    if (cells->ncells != n)
        return NULL;
    return g_steal_pointer(&cells);
}

hwloc_bitmap_t
vpPlanMemoryNodes(const vpPlan *plan, const vpTopology *topo)
{
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();

    /* Where the domain's memory is held; a plan without memory figures (a ledger of an
     * earlier version, memory unknown) has its memory where its vCPUs are. */
    for (unsigned i = 0; i < plan->nmem; i++) {
        if (plan->mem[i].bytes)
            hwloc_bitmap_set(nodes, plan->mem[i].node);
    }
    if (!hwloc_bitmap_iszero(nodes))
        return nodes;
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        int pu = plan->vcpu_pu[i] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[i]) : -1;
        int core = pu >= 0 ? vpTopologyPU(topo, pu)->core : -1;

        if (core >= 0) {
            const vpCore *c = vpTopologyCore(topo, core);

            hwloc_bitmap_set(nodes,
                             vpTopologyGroup(topo, VP_LEVEL_NUMA, c->group[VP_LEVEL_NUMA])->os);
        }
    }
    return nodes;
}

void
vpPlanAddPages(vpPlan *plan, unsigned node, guint64 page_size, guint64 bytes)
{
    unsigned i;

    for (i = 0;
         i < plan->nmem && (plan->mem[i].node < node ||
                            (plan->mem[i].node == node && plan->mem[i].page_size < page_size));
         i++)
        ;
    if (i < plan->nmem && plan->mem[i].node == node && plan->mem[i].page_size == page_size) {
        plan->mem[i].bytes += bytes;
        return;
    }
    plan->mem = g_renew(vpNodeMemory, plan->mem, plan->nmem + 1);
    memmove(&plan->mem[i + 1], &plan->mem[i], sizeof(*plan->mem) * (plan->nmem - i));
    plan->mem[i] = (vpNodeMemory){.node = node, .bytes = bytes, .page_size = page_size};
    plan->nmem++;
}

void
vpPlanAddMemory(vpPlan *plan, unsigned node, guint64 bytes)
{
    vpPlanAddPages(plan, node, plan->page_size, bytes);
}

guint64
vpPlanMemoryOn(const vpPlan *plan, unsigned node)
{
    guint64 sum = 0;

    for (unsigned i = 0; i < plan->nmem; i++) {
        if (plan->mem[i].node == node)
            sum += plan->mem[i].bytes;
    }
    return sum;
}

guint64
vpPlanMemoryOnPages(const vpPlan *plan, unsigned node, guint64 page_size)
{
    for (unsigned i = 0; i < plan->nmem; i++) {
        if (plan->mem[i].node == node && plan->mem[i].page_size == page_size)
            return plan->mem[i].bytes;
    }
    return 0;
}

const char *
vpHowName(vpHow how)
{
    return how < VP_HOW_LAST ? howNames[how] : NULL;
}

hwloc_bitmap_t
vpPlanVcpuCpus(const vpPlan *plan, unsigned i)
{
    if (plan->vcpu_set && !hwloc_bitmap_iszero(plan->vcpu_set[i]))
        return hwloc_bitmap_dup(plan->vcpu_set[i]);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (unsigned j = 0; j < plan->nvcpus; j++) {
        if ((j == i || (plan->vcpu_pu[i] < 0 && plan->how == VP_HOW_PLACED)) &&
            plan->vcpu_pu[j] >= 0)
            hwloc_bitmap_set(set, plan->vcpu_pu[j]);
    }
    if (hwloc_bitmap_iszero(set)) {
        hwloc_bitmap_free(set);
        return NULL;
    }
    return set;
}

unsigned
vpPlanUnplacedTail(const vpPlan *plan)
{
    unsigned first = plan->nvcpus;
    while (first > 0 && plan->vcpu_pu[first - 1] < 0 &&
           !(plan->vcpu_set && plan->vcpu_set[first - 1]))
        first--;
    return plan->how == VP_HOW_PLACED && first > 0 ? first : plan->nvcpus;
}

hwloc_bitmap_t
vpPlanHeld(const vpPlan *plan)
{
    hwloc_bitmap_t held = hwloc_bitmap_dup(plan->reserved);
    unsigned i;

    hwloc_bitmap_or(held, held, plan->shared);
    for (i = 0; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] >= 0)
            hwloc_bitmap_set(held, plan->vcpu_pu[i]);
    }
    return held;
}

char *
vpPlanFormatSet(hwloc_const_bitmap_t set)
{
    if (hwloc_bitmap_iszero(set))
        return g_strdup("");
    return vpCpuListFormat(set);
}

void
vpPlanLocate(const vpTopology *topo, int os, int *core, int *l3, int *numa, int *package)
{
    const vpCore *c = NULL;
    const vpGroup *g;
    int pu;

    *core = *l3 = *numa = *package = -1;
    if (!topo || os < 0)
        return;
    pu = vpTopologyPUByOS(topo, os);
    if (pu < 0 || vpTopologyPU(topo, pu)->core < 0)
        return;
    *core = vpTopologyPU(topo, pu)->core;
    c = vpTopologyCore(topo, *core);
    *l3 = c->group[VP_LEVEL_L3];
    g = vpTopologyGroup(topo, VP_LEVEL_NUMA, c->group[VP_LEVEL_NUMA]);
    *numa = g->made_up ? -1 : (int)g->os;
    *package = c->group[VP_LEVEL_PACKAGE];
}

static void
vpPlanFormatVcpus(GString *s, const vpPlan *plan, const vpTopology *topo)
{
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        int core, l3, numa, package;

        if (plan->vcpu_pu[i] < 0) {
            g_string_append_printf(s, "  vcpu %-3u -> not pinned\n", i);
            continue;
        }
        vpPlanLocate(topo, plan->vcpu_pu[i], &core, &l3, &numa, &package);
        g_string_append_printf(s,
                               "  vcpu %-3u -> cpu %-4d core %-4d l3 %-3d numa %-3d package %d\n",
                               i, plan->vcpu_pu[i], core, l3, numa, package);
    }
}

/* The CPUs it holds besides its vCPUs', and the set it was placed inside. */
static void
vpPlanFormatSets(GString *s, const vpPlan *plan)
{
    g_autofree char *emulator = vpPlanFormatSet(plan->emulator);
    g_autofree char *reserved = vpPlanFormatSet(plan->reserved);

    g_string_append_printf(s, "  emulator: %s\n", *emulator ? emulator : "(not pinned)");
    if (*reserved)
        g_string_append_printf(s, "  reserved idle: %s\n", reserved);
    if (!hwloc_bitmap_iszero(plan->own)) {
        g_autofree char *own = vpPlanFormatSet(plan->own);

        g_string_append_printf(s, "  held for its own pins: %s\n", own);
    }
    if (plan->cpuset) {
        g_autofree char *cpuset = vpPlanFormatSet(plan->cpuset);

        g_string_append_printf(s, "  inside <vcpu cpuset='%s'>\n", cpuset);
    }
}

static void
vpPlanFormatMemory(GString *s, const vpPlan *plan)
{
    for (unsigned i = 0; i < plan->nmem; i++) {
        g_autofree char *bytes = vpMemoryFormat(plan->mem[i].bytes);
        g_autofree char *page =
            plan->mem[i].page_size ? vpMemoryFormat(plan->mem[i].page_size) : NULL;

        g_string_append_printf(s, "  memory: %s on numa %u%s%s\n", bytes, plan->mem[i].node,
                               page ? " in huge pages of " : "", page ? page : "");
    }
}

/* The guest's topology, and each guest cell with the XML that puts it on its node. */
static void
vpPlanFormatGuest(GString *s, const vpPlan *plan, const vpTopology *topo)
{
    g_autoptr(vpGuestCells) cells = NULL;

    if (plan->guest_threads)
        g_string_append_printf(s, "  guest topology: sockets=%u cores=%u threads=%u%s\n",
                               plan->guest_sockets, plan->guest_cores, plan->guest_threads,
                               plan->topology_mismatch ? " (the declared topology differs)" : "");
    else if (plan->topology_mismatch)
        g_string_append(s, "  the declared guest topology does not line up with host cores\n");
    if (!(cells = vpPlanGuestCells(plan, topo)))
        return;
    for (unsigned i = 0; i < cells->ncells; i++) {
        g_autofree char *list = vpCpuListFormat(cells->cells[i].vcpus);

        g_string_append_printf(s,
                               "  guest cell %u: vcpus %s on host node %u "
                               "(<cell id='%u' cpus='%s' .../>, <memnode cellid='%u' "
                               "mode='strict' nodeset='%u'/>)\n",
                               cells->cells[i].id, list, cells->cells[i].node, cells->cells[i].id,
                               list, cells->cells[i].id, cells->cells[i].node);
    }
}

char *
vpPlanFormat(const vpPlan *plan, const vpTopology *topo)
{
    g_autoptr(GString) s = g_string_new(NULL);

    g_string_append_printf(s, "domain %s", plan->domain);
    if (plan->policy.group)
        g_string_append_printf(s, " (group %s)", plan->policy.group);
    g_string_append_printf(s, ": %s%s\n", vpHowName(plan->how), plan->degraded ? ", degraded" : "");
    g_string_append_printf(
        s,
        "  policy: smt=%s coresched=%s locality=%s emulator=%s "
        "rebalance=%s unmet=%s\n",
        vpSmtName(plan->policy.smt), vpCoreschedName(plan->policy.coresched),
        vpLocalityName(plan->policy.locality), vpEmulatorName(plan->policy.emulator),
        vpRebalanceName(plan->policy.rebalance), vpUnmetName(plan->policy.unmet));
    if (plan->level_index >= 0)
        g_string_append_printf(s, "  within: %s %d\n", vpLevelName(plan->level), plan->level_index);
    else
        g_string_append_printf(s, "  within: %s\n", vpLevelName(plan->level));
    vpPlanFormatVcpus(s, plan, topo);
    vpPlanFormatSets(s, plan);
    vpPlanFormatMemory(s, plan);
    vpPlanFormatGuest(s, plan, topo);
    if (plan->beside_others)
        g_string_append_printf(s,
                               "  beside other cookies: %u vCPU%s share a core with another cookie "
                               "(no whole core was left)\n",
                               plan->beside_others, plan->beside_others == 1 ? "" : "s");
    if (plan->degraded)
        g_string_append_printf(s, "  degraded: %s\n", plan->degraded_reason);
    if (plan->nmoves)
        g_string_append(s, "  moves first:\n");
    for (unsigned i = 0; i < plan->nmoves; i++)
        g_string_append_printf(s, "    domain %s vcpu %u: cpu %u -> cpu %u (%s)\n",
                               plan->moves[i].domain, plan->moves[i].vcpu, plan->moves[i].from,
                               plan->moves[i].to, plan->moves[i].reason);
    return g_string_free(g_steal_pointer(&s), FALSE);
}

void
vpPlanDegrade(vpPlan *plan, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    plan->degraded = true;
    if (plan->degraded_reason) {
        char *joined = g_strdup_printf("%s; %s", plan->degraded_reason, msg);

        g_free(plan->degraded_reason);
        plan->degraded_reason = joined;
    } else {
        plan->degraded_reason = g_steal_pointer(&msg);
    }
}
