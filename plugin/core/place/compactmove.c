/*
 * Compaction's moves (compact.h has the rules a move keeps): where a vCPU of a running
 * domain may go, what vacating a core costs, and the moves that vacate a set of cores. A
 * destination is a free PU beside the moved domain's own or trusted (model/trust.h) vCPUs,
 * so no move puts a stranger on a core at any instant.
 */
#include "core/place/compactpriv.h"

#include <string.h>

static int
nodeOf(const vpTopology *topo, int core)
{
    return vpTopologyCore(topo, core)->group[VP_LEVEL_NUMA];
}

/* May this running domain's vCPUs be moved to make room? */
static bool
movable(const vpRoom *r, const vpPlan *plan)
{
    return plan && plan->how == VP_HOW_PLACED && plan->policy.rebalance == VP_REBALANCE_AUTO &&
           (plan->policy.smt == VP_SMT_SPREAD || plan->policy.smt == VP_SMT_SHARE) &&
           !plan->overcommit && strcmp(plan->domain, r->req->name) != 0;
}

/* Does every holder of core c (after the moves) trust a vCPU of plan? */
static bool
coreTrusts(const vpRoom *r, const vpMove *moves, unsigned nmoves, int c, const vpPlan *plan)
{
    const vpCore *core = vpTopologyCore(r->topo, c);

    for (int i = 0; i < core->npus; i++) {
        vpOwner o = vpCompactOwnerAt(r, moves, nmoves, core->pus[i]);
        const vpPlan *holder = o.domain ? vpLedgerLookup(r->ledger, o.domain) : NULL;

        if (o.domain && (!holder || !vpTrustMutual(plan->domain, &plan->policy, holder->domain,
                                                   &holder->policy)))
            return false;
    }
    return true;
}

/* Does core c (after the moves) run a vCPU of plan's domain, or (any_share) of a share
 * domain, or (any_mate) of a domain of plan's cookie group? */
static bool
coreRuns(const vpRoom *r, const vpMove *moves, unsigned nmoves, int c, const vpPlan *plan,
         bool any_share, bool any_mate)
{
    const vpCore *core = vpTopologyCore(r->topo, c);

    for (int i = 0; i < core->npus; i++) {
        vpOwner o = vpCompactOwnerAt(r, moves, nmoves, core->pus[i]);
        const vpPlan *holder = o.domain ? vpLedgerLookup(r->ledger, o.domain) : NULL;

        if (o.kind != VP_OWN_VCPU || !holder)
            continue;
        if (strcmp(o.domain, plan->domain) == 0 ||
            (any_share && holder->policy.smt == VP_SMT_SHARE) ||
            (any_mate &&
             vpTrustMutual(plan->domain, &plan->policy, holder->domain, &holder->policy)))
            return true;
    }
    return false;
}

/* Is core c inside the group that holds plan (its level), so that a move keeps locality? */
static bool
inPlanGroup(const vpRoom *r, const vpPlan *plan, int c)
{
    if (plan->level >= VP_LEVEL_HOST || plan->level_index < 0)
        return true;
    return vpTopologyCore(r->topo, c)->group[plan->level] == plan->level_index;
}

static hwloc_const_bitmap_t
memoryNodes(const vpRoom *r, const vpPlan *plan)
{
    hwloc_bitmap_t nodes = g_hash_table_lookup(r->memory, plan->domain);

    if (!nodes) {
        nodes = vpPlanMemoryNodes(plan, r->topo);
        g_hash_table_insert(r->memory, plan->domain, nodes);
    }
    return nodes;
}

/* Core c as a destination for plan's vCPU from from_core: its first free usable PU when
 * the policy allows the core, else -1. */
static int
destinationOn(const vpRoom *r, const vpPlan *plan, int from_core, int c, const bool *vacated,
              const vpMove *moves, unsigned nmoves)
{
    const vpCore *core = vpTopologyCore(r->topo, c);
    int node = nodeOf(r->topo, c);
    int pu = -1;

    if (c == from_core || vacated[c] ||
        !hwloc_bitmap_isset(memoryNodes(r, plan),
                            vpTopologyGroup(r->topo, VP_LEVEL_NUMA, node)->os))
        return -1;
    for (int i = 0; i < core->npus && pu < 0; i++) {
        const vpPU *p = vpTopologyPU(r->topo, core->pus[i]);

        if (p->usable && !vpCompactOwnerAt(r, moves, nmoves, core->pus[i]).domain &&
            (!plan->cpuset || hwloc_bitmap_isset(plan->cpuset, p->os)))
            pu = core->pus[i];
    }
    if (pu < 0 || !coreTrusts(r, moves, nmoves, c, plan))
        return -1;
    /* a numa:N VM's vCPUs stay on their node: each node is one of its guest cells; a VM of
     * a cookie group may join its group's cores, as its placement would once no core is free */
    if (plan->policy.smt == VP_SMT_SPREAD)
        return coreRuns(r, moves, nmoves, c, plan, false, vpTrustGroupCookie(&plan->policy)) &&
                       (!vpLocalitySplit(plan->policy.locality) ||
                        node == nodeOf(r->topo, from_core))
                   ? pu
                   : -1;
    return node == nodeOf(r->topo, from_core) && inPlanGroup(r, plan, c) &&
                   coreRuns(r, moves, nmoves, c, plan, true, false)
               ? pu
               : -1;
}

/* Where plan's vCPU runs once the moves are made. */
static int
pinAfter(const vpPlan *plan, unsigned v, const vpMove *moves, unsigned nmoves)
{
    int os = plan->vcpu_pu[v];

    for (unsigned i = 0; i < nmoves; i++) {
        if (moves[i].vcpu == v && strcmp(moves[i].domain, plan->domain) == 0)
            os = (int)moves[i].to;
    }
    return os;
}

/* A legal destination for plan's vCPU now on logical PU from: a free usable PU, not on a
 * vacated core nor taken by an earlier move, inside the domain's memory nodes, on a core of
 * its own (spread: walked in vCPU order), else for spread of a cookie group a core of its
 * node its group runs on, or a share-held core of its node (share); those two walked in core
 * order. -1 when there is none. */
int
vpCompactDestination(const vpRoom *r, const vpPlan *plan, int from, const bool *vacated,
                     const vpMove *moves, unsigned nmoves)
{
    int from_core = vpTopologyPU(r->topo, from)->core;
    const vpGroup *node = vpTopologyGroup(r->topo, VP_LEVEL_NUMA, nodeOf(r->topo, from_core));
    int pu = -1;

    if (plan->policy.smt == VP_SMT_SPREAD) {
        for (unsigned v = 0; v < plan->nvcpus && pu < 0; v++) {
            int os = pinAfter(plan, v, moves, nmoves);
            int at = os >= 0 ? vpTopologyPUByOS(r->topo, os) : -1;

            if (at >= 0)
                pu = destinationOn(r, plan, from_core, vpTopologyPU(r->topo, at)->core, vacated,
                                   moves, nmoves);
        }
        if (pu >= 0 || !vpTrustGroupCookie(&plan->policy))
            return pu;
    }
    for (int i = 0; i < node->ncores && pu < 0; i++)
        pu = destinationOn(r, plan, from_core, node->cores[i], vacated, moves, nmoves);
    return pu;
}

/* vCPUs to move off core c to vacate it, or -1 when something on it may not move (an
 * emulator, a reserved sibling, a time-shared PU, an unmovable domain). */
int
vpCompactVacateCost(const vpRoom *r, int c)
{
    const vpCore *core = vpTopologyCore(r->topo, c);
    int cost = 0;

    for (int i = 0; i < core->npus; i++) {
        int pu = core->pus[i];
        vpOwner o = vpCompactOwnerAt(r, NULL, 0, pu);

        if (!o.domain)
            continue;
        if (o.kind != VP_OWN_VCPU || vpLedgerNOwners(r->ledger, pu) != 1 ||
            !movable(r, vpLedgerLookup(r->ledger, o.domain)))
            return -1;
        cost++;
    }
    return cost;
}

/* What a move's destination is, for its reason. */
static const char *
moveKind(const vpRoom *r, const vpPlan *plan, int to, const vpPlan *into)
{
    if (plan->policy.smt != VP_SMT_SPREAD)
        return "a share-held core of the same node";
    return coreRuns(r, into->moves, into->nmoves, vpTopologyPU(r->topo, to)->core, plan, false,
                    false)
               ? "a sibling of a core it runs on"
               : "a sibling of a core its trust group runs on";
}

/* The moves that vacate the given cores: every vCPU on them to its first legal
 * destination. false when one has none. */
bool
vpCompactMovesFor(const vpRoom *r, const GArray *cores, const char *reason, vpPlan *into)
{
    g_autofree bool *vacated = g_new0(bool, vpTopologyNCores(r->topo));

    for (guint i = 0; i < cores->len; i++)
        vacated[g_array_index(cores, int, i)] = true;
    for (guint i = 0; i < cores->len; i++) {
        const vpCore *core = vpTopologyCore(r->topo, g_array_index(cores, int, i));

        for (int k = 0; k < core->npus; k++) {
            vpOwner o = vpCompactOwnerAt(r, NULL, 0, core->pus[k]);
            const vpPlan *plan;
            g_autofree char *why = NULL;
            int to;

            if (!o.domain)
                continue;
            plan = vpLedgerLookup(r->ledger, o.domain);
            to = vpCompactDestination(r, plan, core->pus[k], vacated, into->moves, into->nmoves);
            if (to < 0)
                return false;
            why = g_strdup_printf("makes room for domain '%s' (%s): onto %s", r->req->name, reason,
                                  moveKind(r, plan, to, into));
            vpPlanAddMove(into, o.domain, o.vcpu, vpTopologyPU(r->topo, core->pus[k])->os,
                          vpTopologyPU(r->topo, to)->os, why);
        }
    }
    return true;
}
