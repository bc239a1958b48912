/*
 * The rebalancer's re-expansion of squeezed spread domains: two vCPUs of a spread plan on
 * one core (compaction put them on siblings, or no whole core was free at the start) get
 * one of them onto a whole idle core (see vpRbReexpand).
 */
#include "core/rebalint.h"

/* The later of the first two vCPUs of a spread plan that share a core (compaction squeezed
 * them onto siblings, or no whole core was left when it started), or -1. */
static int
squeezedVcpu(const Ctx *ctx, const vpPlan *plan, int *partner)
{
    g_autofree int *seen = g_new(int, vpTopologyNCores(ctx->topo));

    for (int c = 0; c < vpTopologyNCores(ctx->topo); c++)
        seen[c] = -1;
    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(ctx->topo, plan->vcpu_pu[v]) : -1;

        if (pu < 0)
            continue;
        if (seen[vpRbCoreOf(ctx, pu)] >= 0) {
            *partner = seen[vpRbCoreOf(ctx, pu)];
            return (int)v;
        }
        seen[vpRbCoreOf(ctx, pu)] = (int)v;
    }
    return -1;
}

/* The best whole idle core on the plan's memory nodes for d (the source core's L3 first,
 * then its node, then the other memory nodes; only the L3 under locality=l3; the least
 * busy, ties to the lowest index). */
static bool
pickReexpand(const Ctx *ctx, const vpPlan *plan, const History *h, Decision *d)
{
    g_autoptr(vpBitmap) mem = vpPlanMemoryNodes(plan, ctx->topo);
    const vpCore *src = vpTopologyCore(ctx->topo, vpRbCoreOf(ctx, d->from[0]));
    int best = -1, besttier = 0, bestpu = -1;
    double bestbusy = 0;

    for (int c = 0; c < vpTopologyNCores(ctx->topo); c++) {
        const vpCore *core = vpTopologyCore(ctx->topo, c);
        int node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, core->group[VP_LEVEL_NUMA])->os;
        bool samel3 = core->group[VP_LEVEL_L3] == src->group[VP_LEVEL_L3];
        int tier = samel3 ? 0 : core->group[VP_LEVEL_NUMA] == src->group[VP_LEVEL_NUMA] ? 1 : 2;
        int to = -1;
        double busy;

        /* a numa:N VM's node is one of its guest cells: it stays there */
        if (!hwloc_bitmap_isset(mem, node) ||
            (plan->policy.locality == VP_LOCALITY_L3 && !samel3) ||
            (vpLocalitySplit(plan->policy.locality) && tier == 2) || !vpRbCoreWholeIdle(ctx, c, d))
            continue;
        for (int k = 0; k < core->npus && to < 0; k++) {
            if (!vpRbReturnForbidden(ctx, h, core->pus[k]) && vpRbInCpuset(ctx, plan, core->pus[k]))
                to = core->pus[k];
        }
        if (to < 0)
            continue;
        busy = vpPressureCore(ctx->p, c)->busy;
        if (best < 0 || tier < besttier || (tier == besttier && busy < bestbusy - BUSY_EPSILON)) {
            best = c;
            besttier = tier;
            bestbusy = busy;
            bestpu = to;
        }
    }
    if (best < 0)
        return false;
    d->to[0] = bestpu;
    d->rel = REL_IDLE;
    d->scope = besttier == 0 ? "L3" : besttier == 1 ? "NUMA node" : "memory nodes";
    return true;
}

/* Whether some core outside the plan's memory nodes is whole and idle (for the note). */
static bool
wholeIdleElsewhere(const Ctx *ctx, const vpPlan *plan, const Decision *d)
{
    g_autoptr(vpBitmap) mem = vpPlanMemoryNodes(plan, ctx->topo);

    for (int c = 0; c < vpTopologyNCores(ctx->topo); c++) {
        const vpCore *core = vpTopologyCore(ctx->topo, c);

        if (!hwloc_bitmap_isset(
                mem, vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, core->group[VP_LEVEL_NUMA])->os) &&
            vpRbCoreWholeIdle(ctx, c, d))
            return true;
    }
    return false;
}

/* After the hotspots have taken what they need: a spread domain two of whose vCPUs share
 * a core gets one of them onto a whole idle core of its memory nodes, one vCPU per domain
 * and pass, within the pass's decisions. Residency and the return rule apply as to any
 * move, so a vCPU the hotspot rule squeezed back is not chased again; only whole idle
 * cores qualify, so nobody gains a stranger. */
void
vpRbReexpand(Ctx *ctx, unsigned *decisions)
{
    g_autoptr(GPtrArray) names = vpLedgerDomains(ctx->ledger);

    for (guint i = 0; i < names->len; i++) {
        const vpPlan *plan = vpLedgerLookup(ctx->ledger, g_ptr_array_index(names, i));
        g_autofree char *key = NULL;
        const History *h;
        Decision d = {0};
        double left;
        int v, partner = -1;
        vpMove *m;

        if (plan->policy.smt != VP_SMT_SPREAD || plan->how == VP_HOW_PINNED ||
            plan->policy.rebalance == VP_REBALANCE_OFF ||
            (v = squeezedVcpu(ctx, plan, &partner)) < 0)
            continue;
        key = vpRbHistKey(plan->domain, v);
        d.n = 1;
        d.vcpus[0] = v;
        d.from[0] = vpTopologyPUByOS(ctx->topo, plan->vcpu_pu[v]);
        if (g_hash_table_contains(ctx->moved, key) || ctx->taken[d.from[0]])
            continue;
        h = vpRbHistoryOf(ctx->rb, plan->domain, v);
        if (!pickReexpand(ctx, plan, h, &d)) {
            if (wholeIdleElsewhere(ctx, plan, &d))
                vpRbNote(ctx,
                         "CPU %u: vCPU %d of '%s' stays on its own sibling: the whole idle cores "
                         "are off its memory nodes",
                         vpRbOsOf(ctx, d.from[0]), v, plan->domain);
            continue;
        }
        if ((left = vpRbResidencyLeft(ctx, h)) > 0) {
            vpRbNote(ctx,
                     "CPU %u: vCPU %d of '%s' stays on its own sibling: it was moved recently and "
                     "stays %.0f s more",
                     vpRbOsOf(ctx, d.from[0]), v, plan->domain, left);
            continue;
        }
        if (*decisions >= ctx->rb->cfg.max_moves) {
            vpRbNote(
                ctx,
                "CPU %u: vCPU %d of '%s' re-expands in a later pass: %u moves per pass at most",
                vpRbOsOf(ctx, d.from[0]), v, plan->domain, ctx->rb->cfg.max_moves);
            continue;
        }
        m = g_new0(vpMove, 1);
        m->domain = g_strdup(plan->domain);
        m->vcpu = v;
        m->from = vpRbOsOf(ctx, d.from[0]);
        m->to = vpRbOsOf(ctx, d.to[0]);
        m->reason = g_strdup_printf(
            "smt=spread re-expands: vCPU %d of '%s' on CPU %u shares a core with its own vCPU "
            "%d; to CPU %u: %s (core busy %.1f%%) in the same %s",
            v, plan->domain, m->from, partner, m->to, vpRbRelPhrase(REL_IDLE),
            vpPressureCore(ctx->p, vpRbCoreOf(ctx, d.to[0]))->busy * 100, d.scope);
        g_ptr_array_add(ctx->moves, m);
        g_hash_table_add(ctx->moved, g_steal_pointer(&key));
        ctx->taken[d.from[0]] = true;
        ctx->taken[d.to[0]] = true;
        (*decisions)++;
    }
}
