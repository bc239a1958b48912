/*
 * The rebalancer's re-expansion of squeezed spread domains: a vCPU of a spread plan that
 * shares a core with another of its own vCPUs (compaction put them on siblings, or no whole
 * core was free at the start), or with a vCPU of another domain of its trust group
 * (compaction's group move, or the same start), gets onto a whole idle core (see
 * vpRbReexpand).
 */
#include "core/balance/rebalpriv.h"

/* A squeezed vCPU and why: the vCPU beside it, its own (mate NULL) or a group mate's. */
typedef struct {
    int vcpu;
    int partner;
    const char *mate; /* the trust group's domain beside it, or NULL */
    int home;         /* the logical core whose L3 goes first */
} Squeeze;

static int
coreOfVcpu(const Ctx *ctx, const vpPlan *plan, unsigned v)
{
    int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(ctx->topo, plan->vcpu_pu[v]) : -1;

    return pu < 0 ? -1 : vpRbCoreOf(ctx, pu);
}

/* The later of the first two vCPUs of a spread plan that share a core. */
static bool
squeezedOwn(const Ctx *ctx, const vpPlan *plan, Squeeze *sq)
{
    g_autofree int *seen = g_new(int, vpTopologyNCores(ctx->topo));

    for (int c = 0; c < vpTopologyNCores(ctx->topo); c++)
        seen[c] = -1;
    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int c = coreOfVcpu(ctx, plan, v);

        if (c < 0)
            continue;
        if (seen[c] >= 0) {
            *sq = (Squeeze){(int)v, seen[c], NULL, c};
            return true;
        }
        seen[c] = (int)v;
    }
    return false;
}

/* The core of another of plan's own vCPUs than v on core c's node (c when none), so that a
 * vCPU beside its group goes back to its own L3 first. */
static int
homeCore(const Ctx *ctx, const vpPlan *plan, unsigned v, int c)
{
    int node = vpTopologyCore(ctx->topo, c)->group[VP_LEVEL_NUMA];

    for (unsigned w = 0; w < plan->nvcpus; w++) {
        int hc = coreOfVcpu(ctx, plan, w);

        if (w != v && hc >= 0 && vpTopologyCore(ctx->topo, hc)->group[VP_LEVEL_NUMA] == node)
            return hc;
    }
    return c;
}

/* The first vCPU of plan with a vCPU of a trust group mate on a sibling that stays there in
 * this pass (a mate moving off it this pass leaves the core whole to plan). */
static bool
squeezedByGroup(const Ctx *ctx, const vpPlan *plan, Squeeze *sq)
{
    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int c = coreOfVcpu(ctx, plan, v);
        const vpCore *core = c >= 0 ? vpTopologyCore(ctx->topo, c) : NULL;

        for (int i = 0; core && i < core->npus; i++) {
            int y = core->pus[i];

            if (ctx->taken[y] || (int)vpRbOsOf(ctx, y) == plan->vcpu_pu[v])
                continue;
            for (unsigned k = 0; k < vpLedgerNOwners(ctx->ledger, y); k++) {
                vpOwner o = vpLedgerOwnerAt(ctx->ledger, y, k);

                if (o.kind == VP_OWN_VCPU &&
                    vpTrustHolder(ctx->ledger, plan, o.domain) == VP_TRUST_GROUP) {
                    *sq = (Squeeze){(int)v, o.vcpu, o.domain, homeCore(ctx, plan, v, c)};
                    return true;
                }
            }
        }
    }
    return false;
}

/* Whether core c is off sq's nodes: the plan's memory nodes, and beside a group mate also
 * the node the group move kept it on (a wider level is no spread placement's first choice). */
static bool
offNodes(const Ctx *ctx, const vpPlan *plan, hwloc_const_bitmap_t mem, const Squeeze *sq, int c)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);
    const vpCore *src = vpTopologyCore(ctx->topo, coreOfVcpu(ctx, plan, sq->vcpu));

    return !hwloc_bitmap_isset(
               mem, vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, core->group[VP_LEVEL_NUMA])->os) ||
           (sq->mate && core->group[VP_LEVEL_NUMA] != src->group[VP_LEVEL_NUMA]);
}

/* Whether core c is a target for sq by its place: on its nodes, in home's L3 under
 * locality=l3; a numa:N VM's node is one of its guest cells, so it stays there. tier: 0
 * home's L3, 1 its node, 2 another memory node. */
static bool
reexpandScope(const Ctx *ctx, const vpPlan *plan, hwloc_const_bitmap_t mem, const Squeeze *sq,
              int c, int *tier)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);
    const vpCore *home = vpTopologyCore(ctx->topo, sq->home);
    bool samel3 = core->group[VP_LEVEL_L3] == home->group[VP_LEVEL_L3];

    *tier = samel3 ? 0 : core->group[VP_LEVEL_NUMA] == home->group[VP_LEVEL_NUMA] ? 1 : 2;
    return !offNodes(ctx, plan, mem, sq, c) &&
           !(plan->policy.locality == VP_LOCALITY_L3 && !samel3) &&
           !(vpLocalitySplit(plan->policy.locality) && *tier == 2);
}

/* The best whole idle core for d (reexpandScope's tiers in order; the least busy, ties to
 * the lowest index) with a PU inside the cpuset that the vCPU may return to. */
static bool
pickReexpand(const Ctx *ctx, const vpPlan *plan, const Squeeze *sq, const History *h, Decision *d)
{
    g_autoptr(vpBitmap) mem = vpPlanMemoryNodes(plan, ctx->topo);
    int best = -1, besttier = 0, bestpu = -1;
    double bestbusy = 0;

    for (int c = 0; c < vpTopologyNCores(ctx->topo); c++) {
        const vpCore *core = vpTopologyCore(ctx->topo, c);
        int to = -1, tier;
        double busy;

        if (!reexpandScope(ctx, plan, mem, sq, c, &tier) || !vpRbCoreWholeIdle(ctx, c, d))
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
    d->rel = VP_TRUST_NONE;
    d->scope = besttier == 0 ? "L3" : besttier == 1 ? "NUMA node" : "memory nodes";
    return true;
}

/* Whether some whole idle core is off sq's nodes (for the note). */
static bool
wholeIdleElsewhere(const Ctx *ctx, const vpPlan *plan, const Squeeze *sq, const Decision *d)
{
    g_autoptr(vpBitmap) mem = vpPlanMemoryNodes(plan, ctx->topo);

    for (int c = 0; c < vpTopologyNCores(ctx->topo); c++) {
        if (offNodes(ctx, plan, mem, sq, c) && vpRbCoreWholeIdle(ctx, c, d))
            return true;
    }
    return false;
}

static void
addReexpand(Ctx *ctx, const vpPlan *plan, const Squeeze *sq, const Decision *d)
{
    vpMove *m = g_new0(vpMove, 1);
    g_autofree char *beside = sq->mate ? g_strdup_printf("vCPU %d of '%s' of its trust group '%s'",
                                                         sq->partner, sq->mate, plan->policy.group)
                                       : g_strdup_printf("its own vCPU %d", sq->partner);

    m->domain = g_strdup(plan->domain);
    m->vcpu = sq->vcpu;
    m->from = vpRbOsOf(ctx, d->from[0]);
    m->to = vpRbOsOf(ctx, d->to[0]);
    m->reason = g_strdup_printf(
        "smt=spread re-expands: vCPU %d of '%s' on CPU %u shares a core with %s; to CPU %u: "
        "%s (core busy %.1f%%) in the same %s",
        sq->vcpu, plan->domain, m->from, beside, m->to, vpRbRelPhrase(VP_TRUST_NONE),
        vpPressureCore(ctx->p, vpRbCoreOf(ctx, d->to[0]))->busy * 100, d->scope);
    g_ptr_array_add(ctx->moves, m);
    g_hash_table_add(ctx->moved, vpRbHistKey(plan->domain, sq->vcpu));
    ctx->taken[d->from[0]] = true;
    ctx->taken[d->to[0]] = true;
}

/* After the hotspots have taken what they need: a squeezed spread domain (its own vCPUs on
 * one core first, else one beside its trust group) gets one vCPU onto a whole idle core, one
 * vCPU per domain and pass, within the pass's decisions. Residency and the return rule apply
 * as to any move, so a vCPU the hotspot rule squeezed back is not chased again; only whole
 * idle cores qualify, so nobody gains a stranger. */
void
vpRbReexpand(Ctx *ctx, unsigned *decisions)
{
    g_autoptr(GPtrArray) names = vpLedgerDomains(ctx->ledger);

    for (guint i = 0; i < names->len; i++) {
        const vpPlan *plan = vpLedgerLookup(ctx->ledger, g_ptr_array_index(names, i));
        g_autofree char *key = NULL;
        const History *h;
        const char *stays;
        Decision d = {0};
        Squeeze sq;
        double left;

        if (plan->policy.smt != VP_SMT_SPREAD || plan->how == VP_HOW_PINNED ||
            plan->policy.rebalance == VP_REBALANCE_OFF ||
            !(squeezedOwn(ctx, plan, &sq) || squeezedByGroup(ctx, plan, &sq)))
            continue;
        stays = sq.mate ? "stays beside its trust group" : "stays on its own sibling";
        key = vpRbHistKey(plan->domain, sq.vcpu);
        d.n = 1;
        d.vcpus[0] = sq.vcpu;
        d.from[0] = vpTopologyPUByOS(ctx->topo, plan->vcpu_pu[sq.vcpu]);
        if (g_hash_table_contains(ctx->moved, key) || ctx->taken[d.from[0]])
            continue;
        h = vpRbHistoryOf(ctx->rb, plan->domain, sq.vcpu);
        if (!pickReexpand(ctx, plan, &sq, h, &d)) {
            if (wholeIdleElsewhere(ctx, plan, &sq, &d))
                vpRbNote(ctx, "CPU %u: vCPU %d of '%s' %s: the whole idle cores are off its %s",
                         vpRbOsOf(ctx, d.from[0]), sq.vcpu, plan->domain, stays,
                         sq.mate ? "node or memory nodes" : "memory nodes");
            continue;
        }
        if ((left = vpRbResidencyLeft(ctx, h)) > 0) {
            vpRbNote(ctx, "CPU %u: vCPU %d of '%s' %s: it was moved recently and stays %.0f s more",
                     vpRbOsOf(ctx, d.from[0]), sq.vcpu, plan->domain, stays, left);
            continue;
        }
        if (*decisions >= ctx->rb->cfg.max_moves) {
            vpRbNote(
                ctx,
                "CPU %u: vCPU %d of '%s' re-expands in a later pass: %u moves per pass at most",
                vpRbOsOf(ctx, d.from[0]), sq.vcpu, plan->domain, ctx->rb->cfg.max_moves);
            continue;
        }
        addReexpand(ctx, plan, &sq, &d);
        (*decisions)++;
    }
}
