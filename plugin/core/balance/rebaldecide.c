/*
 * The rebalancer's decision for one candidate: may the vCPU move at all, which cores may
 * it go to, and, tier by tier, which PU there is best (rebalance.c says the order). First
 * the questions every decision of a pass asks, re-expansion's (rebalexpand.c) too: a
 * vCPU's history, where a PU is, whether a core is whole and idle.
 */
#include "core/balance/rebalpriv.h"

#include <string.h>

char *
vpRbHistKey(const char *domain, unsigned vcpu)
{
    return g_strdup_printf("%s\037%u", domain, vcpu);
}

const History *
vpRbHistoryOf(const vpRebalancer *rb, const char *domain, unsigned vcpu)
{
    g_autofree char *key = vpRbHistKey(domain, vcpu);

    return g_hash_table_lookup(rb->hist, key);
}

void
vpRbNote(Ctx *ctx, const char *fmt, ...)
{
    va_list ap;

    if (!ctx->notes)
        return;
    va_start(ap, fmt);
    g_ptr_array_add(ctx->notes, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

unsigned
vpRbOsOf(const Ctx *ctx, int pu)
{
    return vpTopologyPU(ctx->topo, pu)->os;
}

int
vpRbCoreOf(const Ctx *ctx, int pu)
{
    return vpTopologyPU(ctx->topo, pu)->core;
}

double
vpRbResidencyLeft(const Ctx *ctx, const History *h)
{
    const vpRebalanceConfig *cfg = &ctx->rb->cfg;
    gint64 last = G_MININT64, need;
    int recent = 0;

    if (!h)
        return 0;
    for (guint i = 0; i < h->recs->len; i++) {
        const MoveRec *r = &g_array_index(h->recs, MoveRec, i);

        if (ctx->now - r->when < cfg->memory_ns) {
            recent++;
            last = MAX(last, r->when);
        }
    }
    if (!recent)
        return 0;
    need = cfg->min_residency_ns << MIN(recent - 1, MAX_BACKOFF_SHIFT);
    need = MIN(need, cfg->memory_ns);
    return ctx->now - last >= need ? 0 : (double)(need - (ctx->now - last)) / NS;
}

bool
vpRbInCpuset(const Ctx *ctx, const vpPlan *plan, int pu)
{
    return !plan->cpuset || hwloc_bitmap_isset(plan->cpuset, vpRbOsOf(ctx, pu));
}

bool
vpRbReturnForbidden(const Ctx *ctx, const History *h, int pu)
{
    if (!h)
        return false;
    for (guint i = 0; i < h->recs->len; i++) {
        const MoveRec *r = &g_array_index(h->recs, MoveRec, i);

        if (r->from_pu == pu && ctx->now - r->when < ctx->rb->cfg.memory_ns &&
            vpPressurePU(ctx->p, pu)->idle_streak < ctx->rb->cfg.return_quiet)
            return true;
    }
    return false;
}

bool
vpRbDedicatedEmulator(const vpPlan *plan)
{
    return !hwloc_bitmap_iszero(plan->emulator) &&
           hwloc_bitmap_isincluded(plan->emulator, plan->reserved);
}

bool
vpRbWholeCores(const vpPlan *plan)
{
    return plan->policy.smt == VP_SMT_ISOLATE || plan->policy.smt == VP_SMT_PACK;
}

/* Why this vCPU may not move now, or NULL. */
static char *
ineligible(const Ctx *ctx, const vpPlan *plan, const Cand *c, const History *h)
{
    double left;

    if (plan->how == VP_HOW_PINNED)
        return g_strdup("its domain has pins of its own");
    if (plan->policy.rebalance == VP_REBALANCE_OFF)
        return g_strdup("its domain says rebalance=off");
    if ((left = vpRbResidencyLeft(ctx, h)) > 0)
        return g_strdup_printf("it was moved recently and stays %.0f s more", left);
    if (vpRbWholeCores(plan) && vpRbDedicatedEmulator(plan)) {
        const vpCore *core = vpTopologyCore(ctx->topo, vpRbCoreOf(ctx, c->pu));

        for (int i = 0; i < core->npus; i++) {
            if (hwloc_bitmap_isset(plan->emulator, vpRbOsOf(ctx, core->pus[i])))
                return g_strdup("its core also holds the domain's dedicated emulator PU");
        }
    }
    return NULL;
}

/* The L3 that holds most of the domain's pinned vCPUs (ties: the lowest index). */
static int
homeL3(const Ctx *ctx, const vpPlan *plan)
{
    int n = vpTopologyNGroups(ctx->topo, VP_LEVEL_L3);
    g_autofree int *count = g_new0(int, n);
    int best = -1;

    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(ctx->topo, plan->vcpu_pu[v]) : -1;

        if (pu >= 0)
            count[vpTopologyCore(ctx->topo, vpRbCoreOf(ctx, pu))->group[VP_LEVEL_L3]]++;
    }
    for (int i = 0; i < n; i++) {
        if (count[i] > 0 && (best < 0 || count[i] > count[best]))
            best = i;
    }
    return best;
}

static bool
coupled(const Ctx *ctx, const vpPlan *plan, int l3, double *wakeups)
{
    const vpDomainPressure *d = vpPressureDomain(ctx->p, plan->domain);

    *wakeups = d ? d->wakeups : 0;
    return plan->nvcpus >= 2 && d && d->wakeups >= ctx->rb->cfg.coupled_wakeups &&
           plan->nvcpus <= (unsigned)vpTopologyGroup(ctx->topo, VP_LEVEL_L3, l3)->npus;
}

/* --- questions about one target --- */

static bool
leaving(const Decision *d, int pu)
{
    for (int i = 0; i < d->n; i++) {
        if (d->from[i] == pu)
            return true;
    }
    return false;
}

/* Free for a newcomer: usable, held by nobody, nobody moving there, and idle for the
 * persistence (not merely in a lull). */
static bool
puFree(const Ctx *ctx, int pu)
{
    return vpTopologyPU(ctx->topo, pu)->usable && vpLedgerPUFree(ctx->ledger, pu) &&
           !ctx->taken[pu] && vpPressurePUIdle(ctx->p, pu);
}

bool
vpRbCoreWholeIdle(const Ctx *ctx, int c, const Decision *d)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    for (int i = 0; i < core->npus; i++) {
        if (!puFree(ctx, core->pus[i]) || leaving(d, core->pus[i]))
            return false;
    }
    return true;
}

/* Whether holder o of PU y is a vCPU that decision d takes away from y. */
static bool
leavesWith(const Decision *d, const vpPlan *plan, int y, vpOwner o)
{
    for (int k = 0; k < d->n; k++) {
        if (d->from[k] == y && o.kind == VP_OWN_VCPU && o.vcpu == d->vcpus[k] &&
            strcmp(o.domain, plan->domain) == 0)
            return true;
    }
    return false;
}

static vpTrust
siblingRel(const Ctx *ctx, const vpPlan *plan, int pu, const Decision *d)
{
    const vpCore *core = vpTopologyCore(ctx->topo, vpRbCoreOf(ctx, pu));
    vpTrust worst = VP_TRUST_NONE;

    for (int i = 0; i < core->npus; i++) {
        int y = core->pus[i];
        unsigned n = vpLedgerNOwners(ctx->ledger, y);
        vpTrust r = VP_TRUST_NONE;

        if (y == pu)
            continue;
        if (ctx->taken[y]) {
            r = VP_TRUST_STRANGER;
        } else if (leaving(d, y) && n <= 1) {
            r = vpPressurePU(ctx->p, y)->other < vpPressureGetConfig(ctx->p)->idle_busy
                    ? VP_TRUST_NONE
                    : VP_TRUST_STRANGER;
        } else if (n == 0) {
            r = vpPressurePUIdle(ctx->p, y) ? VP_TRUST_NONE : VP_TRUST_STRANGER;
        } else {
            /* a time-shared sibling: the worst of the holders that stay */
            for (unsigned k = 0; k < n; k++) {
                vpOwner o = vpLedgerOwnerAt(ctx->ledger, y, k);

                if (!leavesWith(d, plan, y, o))
                    r = MAX(r, vpTrustHolder(ctx->ledger, plan, o.domain));
            }
        }
        worst = MAX(worst, r);
    }
    return worst;
}

/* Cores of one scope: the L3 group (intersected with the node) or the node. */
typedef struct {
    vpLevel level;
    int index;
    int numa;
} Scope;

static bool
inScope(const Ctx *ctx, const Scope *s, int c)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    return core->group[VP_LEVEL_NUMA] == s->numa && core->group[s->level] == s->index;
}

/* A vCPU never moves off the nodes that hold its domain's memory (plans without memory
 * recorded hold none, and any node of the scope will do). */
static bool
onMemoryNode(const Ctx *ctx, const vpPlan *plan, int c)
{
    const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA,
                                          vpTopologyCore(ctx->topo, c)->group[VP_LEVEL_NUMA]);

    return plan->nmem == 0 || (!node->made_up && vpPlanMemoryOn(plan, node->os) > 0);
}

/* Best whole idle core in scope for decision d (same shape as the source core for pack). */
static bool
pickWhole(const Ctx *ctx, const Scope *s, const vpPlan *plan, const History *h, Decision *d,
          const Scope *skip)
{
    const vpGroup *g = vpTopologyGroup(ctx->topo, s->level, s->index);
    int src = vpRbCoreOf(ctx, d->from[0]);
    const vpCore *score = vpTopologyCore(ctx->topo, src);
    int best = -1, bestpu[8] = {0};
    double bestbusy = 0;

    for (int i = 0; i < g->ncores; i++) {
        int c = g->cores[i];
        const vpCore *core = vpTopologyCore(ctx->topo, c);
        int to[8];
        bool ok = true;
        double busy;

        if (c == src || !inScope(ctx, s, c) || (skip && inScope(ctx, skip, c)) ||
            !onMemoryNode(ctx, plan, c) || !vpRbCoreWholeIdle(ctx, c, d))
            continue;
        if (plan->policy.smt == VP_SMT_PACK) {
            /* guest thread k of the core stays on the k-th sibling */
            if (core->npus != score->npus)
                continue;
            for (int k = 0; k < d->n && ok; k++) {
                int idx = 0;

                while (score->pus[idx] != d->from[k])
                    idx++;
                to[k] = core->pus[idx];
                ok = !vpRbReturnForbidden(ctx, h, to[k]) && vpRbInCpuset(ctx, plan, to[k]);
            }
        } else {
            ok = false;
            for (int k = 0; k < core->npus && !ok; k++) {
                to[0] = core->pus[k];
                ok = !vpRbReturnForbidden(ctx, h, to[0]) && vpRbInCpuset(ctx, plan, to[0]);
            }
        }
        if (!ok)
            continue;
        busy = vpPressureCore(ctx->p, c)->busy;
        if (best < 0 || busy < bestbusy - BUSY_EPSILON) {
            best = c;
            bestbusy = busy;
            memcpy(bestpu, to, sizeof(bestpu));
        }
    }
    if (best < 0)
        return false;
    memcpy(d->to, bestpu, sizeof(d->to));
    d->rel = VP_TRUST_NONE;
    return true;
}

/* Best free idle PU in scope whose siblings relate to the vCPU no worse than tier. */
static bool
pickSibling(const Ctx *ctx, const Scope *s, const vpPlan *plan, const History *h, Decision *d,
            vpTrust tier, const Scope *skip)
{
    const vpGroup *g = vpTopologyGroup(ctx->topo, s->level, s->index);
    int best = -1;
    double bestbusy = 0;
    vpTrust bestrel = VP_TRUST_NONE;

    for (int i = 0; i < g->ncores; i++) {
        int c = g->cores[i];
        const vpCore *core = vpTopologyCore(ctx->topo, c);

        if (!inScope(ctx, s, c) || (skip && inScope(ctx, skip, c)) || !onMemoryNode(ctx, plan, c))
            continue;
        for (int k = 0; k < core->npus; k++) {
            int pu = core->pus[k];
            double busy;
            vpTrust r;

            if (!puFree(ctx, pu) || leaving(d, pu) || vpRbReturnForbidden(ctx, h, pu) ||
                !vpRbInCpuset(ctx, plan, pu))
                continue;
            r = siblingRel(ctx, plan, pu, d);
            if (r > tier)
                continue;
            busy = vpPressureCore(ctx->p, c)->busy;
            if (best < 0 || busy < bestbusy - BUSY_EPSILON) {
                best = pu;
                bestbusy = busy;
                bestrel = r;
            }
        }
    }
    if (best < 0)
        return false;
    d->to[0] = best;
    d->rel = bestrel;
    return true;
}

const char *
vpRbRelPhrase(vpTrust r)
{
    switch (r) {
    case VP_TRUST_NONE:
        return "an idle whole core";
    case VP_TRUST_SELF:
        return "an idle sibling next to its own domain";
    case VP_TRUST_GROUP:
        return "an idle sibling next to its trust group";
    case VP_TRUST_SHARE:
        return "an idle sibling next to a domain with smt=share";
    case VP_TRUST_STRANGER:
        break;
    }
    return "a sibling of another trust group";
}

/* Tiers the policy allows beyond whole idle cores. */
static vpTrust
loosestTier(const vpPlan *plan)
{
    switch (plan->policy.smt) {
    case VP_SMT_SPREAD:
        return VP_TRUST_GROUP;
    case VP_SMT_SHARE:
        return VP_TRUST_SHARE;
    default:
        return VP_TRUST_NONE;
    }
}

/* loosest: the worst sibling relation acceptable besides whole idle cores. */
static bool
findTarget(const Ctx *ctx, const vpPlan *plan, const History *h, Decision *d, int l3_only,
           vpTrust loosest)
{
    const vpCore *core = vpTopologyCore(ctx->topo, vpRbCoreOf(ctx, d->from[0]));
    Scope scopes[2];
    int nscopes = 0;

    scopes[nscopes++] = (Scope){VP_LEVEL_L3, l3_only >= 0 ? l3_only : core->group[VP_LEVEL_L3],
                                core->group[VP_LEVEL_NUMA]};
    if (l3_only < 0 && plan->policy.locality != VP_LOCALITY_L3)
        scopes[nscopes++] =
            (Scope){VP_LEVEL_NUMA, core->group[VP_LEVEL_NUMA], core->group[VP_LEVEL_NUMA]};

    for (int s = 0; s < nscopes; s++) {
        if (pickWhole(ctx, &scopes[s], plan, h, d, s ? &scopes[0] : NULL)) {
            d->scope = s ? "NUMA node" : "L3";
            return true;
        }
    }
    for (vpTrust tier = VP_TRUST_SELF; tier <= loosest; tier++) {
        for (int s = 0; s < nscopes; s++) {
            if (pickSibling(ctx, &scopes[s], plan, h, d, tier, s ? &scopes[0] : NULL)) {
                d->scope = s ? "NUMA node" : "L3";
                return true;
            }
        }
    }
    return false;
}

/* The vCPUs that move together: the candidate, or for pack every vCPU of the domain on
 * the candidate's core, in sibling order. */
static void
gatherDecision(const Ctx *ctx, const vpPlan *plan, const Cand *c, Decision *d)
{
    d->n = 0;
    if (plan->policy.smt == VP_SMT_PACK) {
        const vpCore *core = vpTopologyCore(ctx->topo, vpRbCoreOf(ctx, c->pu));

        for (int i = 0; i < core->npus && d->n < (int)G_N_ELEMENTS(d->vcpus); i++) {
            vpOwner o = vpLedgerOwner(ctx->ledger, core->pus[i]);

            if (o.kind == VP_OWN_VCPU && o.domain && strcmp(o.domain, plan->domain) == 0) {
                d->vcpus[d->n] = o.vcpu;
                d->from[d->n++] = core->pus[i];
            }
        }
        return;
    }
    d->vcpus[0] = c->vcpu;
    d->from[0] = c->pu;
    d->n = 1;
}

static char *
describe(const Ctx *ctx, const vpPlan *plan, const Cand *c, const Decision *d, const char *coupling)
{
    /* a vCPU the pressure has no figures for yet reads as all zero */
    static const vpVcpuPressure unmeasured = {0};
    const vpVcpuPressure *vp = vpPressureVcpu(ctx->p, c->domain, c->vcpu);
    const vpPUPressure *pp = vpPressurePU(ctx->p, c->pu);
    const vpCorePressure *cp = vpPressureCore(ctx->p, vpRbCoreOf(ctx, c->pu));
    GString *s = g_string_new(NULL);
    int tcore = vpRbCoreOf(ctx, d->to[0]);
    const vpCore *tc = vpTopologyCore(ctx->topo, tcore);

    if (!vp)
        vp = &unmeasured;
    if (c->trig == TRIG_WAIT)
        g_string_append_printf(s,
                               "CPU %u hot for %u intervals: vCPU %d of '%s' waits %.1f%% of "
                               "the time (runs %.1f%%, %.0f wakeups/s), other load on CPU %u "
                               "%.1f%%",
                               vpRbOsOf(ctx, c->pu), pp->hot_streak, c->vcpu, c->domain,
                               vp->wait * 100, vp->run * 100, vp->wakeups, vpRbOsOf(ctx, c->pu),
                               pp->other * 100);
    else
        g_string_append_printf(s,
                               "core of CPU %u contended for %u intervals: vCPU %d of '%s' "
                               "co-runs with foreign load %.1f%% of the time, forced idle "
                               "%.1f%% (core: %.1f%% + %.1f%%)",
                               vpRbOsOf(ctx, c->pu), cp->contended_streak, c->vcpu, c->domain,
                               vp->corun_foreign * 100, vp->forceidle * 100,
                               cp->corun_foreign * 100, cp->forceidle * 100);
    if (vpLedgerNOwners(ctx->ledger, c->pu) > 1)
        g_string_append_printf(s, "; CPU %u is time-shared by %u vCPUs (smt=share overcommit)",
                               vpRbOsOf(ctx, c->pu), vpLedgerNOwners(ctx->ledger, c->pu));
    g_string_append_printf(s, "; to CPU %u: %s (core busy %.1f%%) in the same %s",
                           vpRbOsOf(ctx, d->to[0]), vpRbRelPhrase(d->rel),
                           vpPressureCore(ctx->p, tcore)->busy * 100, d->scope);
    if (d->scope[0] == 'L')
        g_string_append_printf(s, " #%d", tc->group[VP_LEVEL_L3]);
    if (d->n > 1)
        g_string_append_printf(s, "; smt=pack: its %d guest threads on that core move together",
                               d->n);
    if (plan->policy.smt == VP_SMT_ISOLATE)
        g_string_append(s, "; smt=isolate: the whole core moves with it");
    if (coupling)
        g_string_append_printf(s, "; %s", coupling);
    return g_string_free(s, FALSE);
}

void
vpRbDecide(Ctx *ctx, const Cand *c)
{
    const vpPlan *plan = vpLedgerLookup(ctx->ledger, c->domain);
    const History *h;
    g_autofree char *why = NULL;
    g_autofree char *coupling = NULL;
    Decision d = {0};
    double wakeups;
    int l3_only = -1;
    int home;
    vpTrust loosest;

    if (!plan)
        return;
    h = vpRbHistoryOf(ctx->rb, c->domain, c->vcpu);
    if ((why = ineligible(ctx, plan, c, h))) {
        vpRbNote(ctx, "CPU %u: vCPU %d of '%s' stays: %s", vpRbOsOf(ctx, c->pu), c->vcpu, c->domain,
                 why);
        return;
    }
    home = homeL3(ctx, plan);
    if (home >= 0 && coupled(ctx, plan, home, &wakeups)) {
        l3_only = home;
        coupling = g_strdup_printf("its vCPUs wake %.0f times/s each (>= %.0f): the domain "
                                   "stays within L3 #%d",
                                   wakeups, ctx->rb->cfg.coupled_wakeups, home);
    }
    gatherDecision(ctx, plan, c, &d);
    /* leaving foreign siblings for a share domain's sibling would only trade one stranger
     * for another */
    loosest = loosestTier(plan);
    if (c->trig == TRIG_CORUN)
        loosest = MIN(loosest, VP_TRUST_GROUP);
    if (!findTarget(ctx, plan, h, &d, l3_only, loosest)) {
        vpRbNote(ctx,
                 "CPU %u: vCPU %d of '%s' (smt=%s) stays: no idle target its policy allows in "
                 "%s%s",
                 vpRbOsOf(ctx, c->pu), c->vcpu, c->domain, vpSmtName(plan->policy.smt),
                 l3_only >= 0 ? "its home L3" : "its L3 or NUMA node",
                 coupling ? " (wake-coupled)" : "");
        return;
    }
    for (int k = 0; k < d.n; k++) {
        vpMove *m = g_new0(vpMove, 1);

        m->domain = g_strdup(c->domain);
        m->vcpu = d.vcpus[k];
        m->from = vpRbOsOf(ctx, d.from[k]);
        m->to = vpRbOsOf(ctx, d.to[k]);
        m->reason = describe(ctx, plan, c, &d, coupling);
        g_ptr_array_add(ctx->moves, m);
        g_hash_table_add(ctx->moved, vpRbHistKey(c->domain, d.vcpus[k]));
        ctx->taken[d.from[k]] = true;
    }
    /* nobody else joins a core that just turned whole-core or lost its holder */
    for (int k = 0; k < d.n; k++) {
        const vpCore *tc = vpTopologyCore(ctx->topo, vpRbCoreOf(ctx, d.to[k]));

        if (vpRbWholeCores(plan)) {
            for (int i = 0; i < tc->npus; i++)
                ctx->taken[tc->pus[i]] = true;
        }
        ctx->taken[d.to[k]] = true;
    }
}
