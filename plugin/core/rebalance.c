/*
 * The rebalancer. A pass collects candidates (a vCPU on a PU hot for the persistence, or
 * on a core where it co-runs with foreign load), most delayed first, and for each asks in
 * order: may this vCPU move at all (policy, own pins, residency)? which cores may it go
 * to (its L3, then its NUMA node; only its domain's home L3 when wake-coupled)? and, tier
 * by tier, which idle PU there is best (whole idle core, then siblings of its own domain,
 * its trust group, share domains as the policy allows; the least busy core wins, ties to
 * the lowest index so the answer is reproducible)?
 */
#include "core/rebalance.h"

#include <string.h>

#define NS 1000000000LL
#define MAX_BACKOFF_SHIFT 6
/* Cores whose busy figures differ by less than this are equally good: the lower index wins,
 * so that measurement noise does not pick the target. */
#define BUSY_EPSILON 0.05

typedef struct {
    gint64 when;
    int from_pu;
} MoveRec;

typedef struct {
    GArray *recs; /* MoveRec, oldest first */
    guint64 total;
} History;

struct _vpRebalancer {
    vpRebalanceConfig cfg;
    GHashTable *hist; /* "domain\037vcpu" -> History */
};

typedef enum { TRIG_WAIT, TRIG_CORUN } Trigger;

typedef struct {
    int pu;
    const char *domain;
    int vcpu;
    Trigger trig;
    double score;
} Cand;

/* How a core's other PUs relate to a vCPU that would join it; worse is larger. */
typedef enum { REL_IDLE, REL_SELF, REL_GROUP, REL_SHARE, REL_FOREIGN } Rel;

typedef struct {
    const vpRebalancer *rb;
    const vpPressure *p;
    const vpLedger *ledger;
    const vpTopology *topo;
    gint64 now;
    bool *taken; /* PUs moved onto or off in this pass */
    GHashTable *moved;
    GPtrArray *moves;
    GPtrArray *notes;
} Ctx;

/* Who moves in one decision: one vCPU, or the guest threads of one pack core. */
typedef struct {
    int n;
    int vcpus[8];
    int from[8]; /* logical PUs */
    int to[8];
    const char *scope;
    Rel rel;
} Decision;

void
vpRebalanceConfigInit(vpRebalanceConfig *cfg)
{
    cfg->max_moves = 2;
    cfg->min_residency_ns = 60 * NS;
    cfg->memory_ns = 600 * NS;
    cfg->return_quiet = 30;
    cfg->coupled_wakeups = 1000;
}

gboolean
vpRebalanceConfigValidate(const vpRebalanceConfig *cfg, GError **error)
{
    if (cfg->max_moves < 1 || cfg->max_moves > 1000) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "max_moves=%u is outside [1, 1000]",
                    cfg->max_moves);
        return FALSE;
    }
    if (cfg->min_residency_ns < 0 || cfg->memory_ns < cfg->min_residency_ns) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "memory=%gs must be at least min_residency=%gs (and neither negative)",
                    (double)cfg->memory_ns / NS, (double)cfg->min_residency_ns / NS);
        return FALSE;
    }
    if (cfg->return_quiet > 86400) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "return_quiet=%u is outside [0, 86400]",
                    cfg->return_quiet);
        return FALSE;
    }
    if (!(cfg->coupled_wakeups > 0) || cfg->coupled_wakeups > 1e7) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "coupled_wakeups=%g is outside (0, 10000000]", cfg->coupled_wakeups);
        return FALSE;
    }
    return TRUE;
}

void
vpMoveFree(vpMove *move)
{
    if (!move)
        return;
    g_free(move->domain);
    g_free(move->reason);
    g_free(move);
}

static void
historyFree(gpointer data)
{
    History *h = data;

    g_array_free(h->recs, TRUE);
    g_free(h);
}

vpRebalancer *
vpRebalancerNew(const vpRebalanceConfig *cfg)
{
    vpRebalancer *rb = g_new0(vpRebalancer, 1);

    if (cfg)
        rb->cfg = *cfg;
    else
        vpRebalanceConfigInit(&rb->cfg);
    rb->hist = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, historyFree);
    return rb;
}

void
vpRebalancerFree(vpRebalancer *rb)
{
    if (!rb)
        return;
    g_hash_table_unref(rb->hist);
    g_free(rb);
}

const vpRebalanceConfig *
vpRebalancerGetConfig(const vpRebalancer *rb)
{
    return &rb->cfg;
}

static char *
histKey(const char *domain, unsigned vcpu)
{
    return g_strdup_printf("%s\037%u", domain, vcpu);
}

static const History *
historyOf(const vpRebalancer *rb, const char *domain, unsigned vcpu)
{
    g_autofree char *key = histKey(domain, vcpu);

    return g_hash_table_lookup(rb->hist, key);
}

guint64
vpRebalancerMoves(const vpRebalancer *rb, const char *domain, unsigned vcpu)
{
    const History *h = historyOf(rb, domain, vcpu);

    return h ? h->total : 0;
}

static gboolean
historyOfDomain(gpointer key, gpointer value, gpointer data)
{
    const char *k = key, *domain = data;
    size_t n = strlen(domain);

    return strncmp(k, domain, n) == 0 && k[n] == '\037';
}

void
vpRebalancerForgetDomain(vpRebalancer *rb, const char *domain)
{
    g_hash_table_foreach_remove(rb->hist, historyOfDomain, (gpointer)domain);
}

/* --- questions about one vCPU --- */

static void note(Ctx *ctx, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void
note(Ctx *ctx, const char *fmt, ...)
{
    va_list ap;

    if (!ctx->notes)
        return;
    va_start(ap, fmt);
    g_ptr_array_add(ctx->notes, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

static unsigned
osOf(const Ctx *ctx, int pu)
{
    return vpTopologyPU(ctx->topo, pu)->os;
}

static int
coreOf(const Ctx *ctx, int pu)
{
    return vpTopologyPU(ctx->topo, pu)->core;
}

/* Seconds this vCPU must still stay where it is, 0 when it may move. Each earlier move
 * still remembered doubles the residency, so a vCPU that keeps being chased slows down. */
static double
residencyLeft(const Ctx *ctx, const History *h)
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

/* A PU this vCPU left within memory, unless the PU has been idle since long enough. */
static bool
returnForbidden(const Ctx *ctx, const History *h, int pu)
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

static bool
dedicatedEmulator(const vpPlan *plan)
{
    return !hwloc_bitmap_iszero(plan->emulator) &&
           hwloc_bitmap_isincluded(plan->emulator, plan->reserved);
}

static bool
wholeCores(const vpPlan *plan)
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
    if ((left = residencyLeft(ctx, h)) > 0)
        return g_strdup_printf("it was moved recently and stays %.0f s more", left);
    if (wholeCores(plan) && dedicatedEmulator(plan)) {
        const vpCore *core = vpTopologyCore(ctx->topo, coreOf(ctx, c->pu));

        for (int i = 0; i < core->npus; i++) {
            if (hwloc_bitmap_isset(plan->emulator, osOf(ctx, core->pus[i])))
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
            count[vpTopologyCore(ctx->topo, coreOf(ctx, pu))->group[VP_LEVEL_L3]]++;
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

static bool
coreWholeIdle(const Ctx *ctx, int c, const Decision *d)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    for (int i = 0; i < core->npus; i++) {
        if (!puFree(ctx, core->pus[i]) || leaving(d, core->pus[i]))
            return false;
    }
    return true;
}

/* How one holder of a sibling PU relates to a vCPU of plan. */
static Rel
ownerRel(const Ctx *ctx, const vpPlan *plan, vpOwner o)
{
    const vpPlan *other;

    if (strcmp(o.domain, plan->domain) == 0)
        return REL_SELF;
    other = vpLedgerLookup(ctx->ledger, o.domain);
    if (plan->group && other && other->group && strcmp(plan->group, other->group) == 0)
        return REL_GROUP;
    if (other && other->policy.smt == VP_SMT_SHARE)
        return REL_SHARE;
    return REL_FOREIGN;
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

static Rel
siblingRel(const Ctx *ctx, const vpPlan *plan, int pu, const Decision *d)
{
    const vpCore *core = vpTopologyCore(ctx->topo, coreOf(ctx, pu));
    Rel worst = REL_IDLE;

    for (int i = 0; i < core->npus; i++) {
        int y = core->pus[i];
        unsigned n = vpLedgerNOwners(ctx->ledger, y);
        Rel r = REL_IDLE;

        if (y == pu)
            continue;
        if (ctx->taken[y]) {
            r = REL_FOREIGN;
        } else if (leaving(d, y) && n <= 1) {
            r = vpPressurePU(ctx->p, y)->other < vpPressureGetConfig(ctx->p)->idle_busy
                    ? REL_IDLE
                    : REL_FOREIGN;
        } else if (n == 0) {
            r = vpPressurePUIdle(ctx->p, y) ? REL_IDLE : REL_FOREIGN;
        } else {
            /* a time-shared sibling: the worst of the holders that stay */
            for (unsigned k = 0; k < n; k++) {
                vpOwner o = vpLedgerOwnerAt(ctx->ledger, y, k);

                if (!leavesWith(d, plan, y, o))
                    r = MAX(r, ownerRel(ctx, plan, o));
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
    int src = coreOf(ctx, d->from[0]);
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
            !onMemoryNode(ctx, plan, c) || !coreWholeIdle(ctx, c, d))
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
                ok = !returnForbidden(ctx, h, to[k]);
            }
        } else {
            ok = false;
            for (int k = 0; k < core->npus && !ok; k++) {
                to[0] = core->pus[k];
                ok = !returnForbidden(ctx, h, to[0]);
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
    d->rel = REL_IDLE;
    return true;
}

/* Best free idle PU in scope whose siblings relate to the vCPU no worse than tier. */
static bool
pickSibling(const Ctx *ctx, const Scope *s, const vpPlan *plan, const History *h, Decision *d,
            Rel tier, const Scope *skip)
{
    const vpGroup *g = vpTopologyGroup(ctx->topo, s->level, s->index);
    int best = -1;
    double bestbusy = 0;
    Rel bestrel = REL_IDLE;

    for (int i = 0; i < g->ncores; i++) {
        int c = g->cores[i];
        const vpCore *core = vpTopologyCore(ctx->topo, c);

        if (!inScope(ctx, s, c) || (skip && inScope(ctx, skip, c)) || !onMemoryNode(ctx, plan, c))
            continue;
        for (int k = 0; k < core->npus; k++) {
            int pu = core->pus[k];
            double busy;
            Rel r;

            if (!puFree(ctx, pu) || leaving(d, pu) || returnForbidden(ctx, h, pu))
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

static const char *
relPhrase(Rel r)
{
    switch (r) {
    case REL_IDLE:
        return "an idle whole core";
    case REL_SELF:
        return "an idle sibling next to its own domain";
    case REL_GROUP:
        return "an idle sibling next to its trust group";
    case REL_SHARE:
        return "an idle sibling next to a domain with smt=share";
    case REL_FOREIGN:
        break;
    }
    return "a sibling of another trust group";
}

/* Tiers the policy allows beyond whole idle cores. */
static Rel
loosestTier(const vpPlan *plan)
{
    switch (plan->policy.smt) {
    case VP_SMT_SPREAD:
        return REL_GROUP;
    case VP_SMT_SHARE:
        return REL_SHARE;
    default:
        return REL_IDLE;
    }
}

/* loosest: the worst sibling relation acceptable besides whole idle cores. */
static bool
findTarget(const Ctx *ctx, const vpPlan *plan, const History *h, Decision *d, int l3_only,
           Rel loosest)
{
    const vpCore *core = vpTopologyCore(ctx->topo, coreOf(ctx, d->from[0]));
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
    for (Rel tier = REL_SELF; tier <= loosest; tier++) {
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
        const vpCore *core = vpTopologyCore(ctx->topo, coreOf(ctx, c->pu));

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
    const vpVcpuPressure *vp = vpPressureVcpu(ctx->p, c->domain, c->vcpu);
    const vpPUPressure *pp = vpPressurePU(ctx->p, c->pu);
    const vpCorePressure *cp = vpPressureCore(ctx->p, coreOf(ctx, c->pu));
    GString *s = g_string_new(NULL);
    int tcore = coreOf(ctx, d->to[0]);
    const vpCore *tc = vpTopologyCore(ctx->topo, tcore);

    if (c->trig == TRIG_WAIT)
        g_string_append_printf(s,
                               "CPU %u hot for %u intervals: vCPU %d of '%s' waits %.1f%% of "
                               "the time (runs %.1f%%, %.0f wakeups/s), other load on CPU %u "
                               "%.1f%%",
                               osOf(ctx, c->pu), pp->hot_streak, c->vcpu, c->domain,
                               vp ? vp->wait * 100 : 0, vp ? vp->run * 100 : 0,
                               vp ? vp->wakeups : 0, osOf(ctx, c->pu), pp->other * 100);
    else
        g_string_append_printf(s,
                               "core of CPU %u contended for %u intervals: vCPU %d of '%s' "
                               "co-runs with foreign load %.1f%% of the time, forced idle "
                               "%.1f%% (core: %.1f%% + %.1f%%)",
                               osOf(ctx, c->pu), cp->contended_streak, c->vcpu, c->domain,
                               vp ? vp->corun_foreign * 100 : 0, vp ? vp->forceidle * 100 : 0,
                               cp->corun_foreign * 100, cp->forceidle * 100);
    if (vpLedgerNOwners(ctx->ledger, c->pu) > 1)
        g_string_append_printf(s, "; CPU %u is time-shared by %u vCPUs (smt=share overcommit)",
                               osOf(ctx, c->pu), vpLedgerNOwners(ctx->ledger, c->pu));
    g_string_append_printf(s, "; to CPU %u: %s (core busy %.1f%%) in the same %s",
                           osOf(ctx, d->to[0]), relPhrase(d->rel),
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

static void
decide(Ctx *ctx, const Cand *c)
{
    const vpPlan *plan = vpLedgerLookup(ctx->ledger, c->domain);
    const History *h;
    g_autofree char *why = NULL;
    g_autofree char *coupling = NULL;
    Decision d = {0};
    double wakeups;
    int l3_only = -1;
    int home;
    Rel loosest;

    if (!plan)
        return;
    h = historyOf(ctx->rb, c->domain, c->vcpu);
    if ((why = ineligible(ctx, plan, c, h))) {
        note(ctx, "CPU %u: vCPU %d of '%s' stays: %s", osOf(ctx, c->pu), c->vcpu, c->domain, why);
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
        loosest = MIN(loosest, REL_GROUP);
    if (!findTarget(ctx, plan, h, &d, l3_only, loosest)) {
        note(ctx,
             "CPU %u: vCPU %d of '%s' (smt=%s) stays: no idle target its policy allows in "
             "%s%s",
             osOf(ctx, c->pu), c->vcpu, c->domain, vpSmtName(plan->policy.smt),
             l3_only >= 0 ? "its home L3" : "its L3 or NUMA node",
             coupling ? " (wake-coupled)" : "");
        return;
    }
    for (int k = 0; k < d.n; k++) {
        vpMove *m = g_new0(vpMove, 1);

        m->domain = g_strdup(c->domain);
        m->vcpu = d.vcpus[k];
        m->from = osOf(ctx, d.from[k]);
        m->to = osOf(ctx, d.to[k]);
        m->reason = describe(ctx, plan, c, &d, coupling);
        g_ptr_array_add(ctx->moves, m);
        g_hash_table_add(ctx->moved, histKey(c->domain, d.vcpus[k]));
        ctx->taken[d.from[k]] = true;
    }
    /* nobody else joins a core that just turned whole-core or lost its holder */
    for (int k = 0; k < d.n; k++) {
        const vpCore *tc = vpTopologyCore(ctx->topo, coreOf(ctx, d.to[k]));

        if (wholeCores(plan)) {
            for (int i = 0; i < tc->npus; i++)
                ctx->taken[tc->pus[i]] = true;
        }
        ctx->taken[d.to[k]] = true;
    }
}

static int
candCompare(gconstpointer a, gconstpointer b)
{
    const Cand *x = a, *y = b;

    if (x->trig != y->trig)
        return x->trig < y->trig ? -1 : 1;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->pu > y->pu) - (x->pu < y->pu);
}

/* Every vCPU holding a hot PU: one alone, or each of those that time-share it (overcommitted
 * smt=share domains), so that the most delayed of them is tried first and another one
 * when it may not move. */
static void
collectWait(Ctx *ctx, GArray *cands)
{
    for (int pu = 0; pu < vpTopologyNPUs(ctx->topo); pu++) {
        unsigned n;

        if (!vpPressurePUHot(ctx->p, pu))
            continue;
        n = vpLedgerNOwners(ctx->ledger, pu);
        for (unsigned k = 0; k < n; k++) {
            vpOwner o = vpLedgerOwnerAt(ctx->ledger, pu, k);
            const vpVcpuPressure *vp =
                o.kind == VP_OWN_VCPU ? vpPressureVcpu(ctx->p, o.domain, o.vcpu) : NULL;
            Cand c;

            if (!vp)
                continue;
            c = (Cand){pu, o.domain, o.vcpu, TRIG_WAIT, vp->wait};
            g_array_append_val(cands, c);
        }
    }
}

/* On a contended core, the vCPU that suffers most from its foreign siblings. */
static void
collectCorun(Ctx *ctx, GArray *cands)
{
    for (int ci = 0; ci < vpTopologyNCores(ctx->topo); ci++) {
        const vpCore *core = vpTopologyCore(ctx->topo, ci);
        Cand best = {.pu = -1};

        if (!vpPressureCoreContended(ctx->p, ci))
            continue;
        for (int i = 0; i < core->npus; i++) {
            unsigned n = vpLedgerNOwners(ctx->ledger, core->pus[i]);

            if (vpPressurePUHot(ctx->p, core->pus[i]))
                continue;
            for (unsigned k = 0; k < n; k++) {
                vpOwner o = vpLedgerOwnerAt(ctx->ledger, core->pus[i], k);
                const vpVcpuPressure *vp =
                    o.kind == VP_OWN_VCPU ? vpPressureVcpu(ctx->p, o.domain, o.vcpu) : NULL;
                double score;

                if (!vp)
                    continue;
                score = vp->corun_foreign + vp->forceidle;
                if (best.pu < 0 || score > best.score)
                    best = (Cand){core->pus[i], o.domain, o.vcpu, TRIG_CORUN, score};
            }
        }
        if (best.pu >= 0)
            g_array_append_val(cands, best);
    }
}

/* --- re-expansion of squeezed spread domains --- */

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
        if (seen[coreOf(ctx, pu)] >= 0) {
            *partner = seen[coreOf(ctx, pu)];
            return (int)v;
        }
        seen[coreOf(ctx, pu)] = (int)v;
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
    const vpCore *src = vpTopologyCore(ctx->topo, coreOf(ctx, d->from[0]));
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
            (vpLocalitySplit(plan->policy.locality) && tier == 2) || !coreWholeIdle(ctx, c, d))
            continue;
        for (int k = 0; k < core->npus && to < 0; k++) {
            if (!returnForbidden(ctx, h, core->pus[k]))
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
            coreWholeIdle(ctx, c, d))
            return true;
    }
    return false;
}

/* After the hotspots have taken what they need: a spread domain two of whose vCPUs share
 * a core gets one of them onto a whole idle core of its memory nodes, one vCPU per domain
 * and pass, within the pass's decisions. Residency and the return rule apply as to any
 * move, so a vCPU the hotspot rule squeezed back is not chased again; only whole idle
 * cores qualify, so nobody gains a stranger. */
static void
reexpand(Ctx *ctx, unsigned *decisions)
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
        key = histKey(plan->domain, v);
        d.n = 1;
        d.vcpus[0] = v;
        d.from[0] = vpTopologyPUByOS(ctx->topo, plan->vcpu_pu[v]);
        if (g_hash_table_contains(ctx->moved, key) || ctx->taken[d.from[0]])
            continue;
        h = historyOf(ctx->rb, plan->domain, v);
        if (!pickReexpand(ctx, plan, h, &d)) {
            if (wholeIdleElsewhere(ctx, plan, &d))
                note(ctx,
                     "CPU %u: vCPU %d of '%s' stays on its own sibling: the whole idle cores "
                     "are off its memory nodes",
                     osOf(ctx, d.from[0]), v, plan->domain);
            continue;
        }
        if ((left = residencyLeft(ctx, h)) > 0) {
            note(ctx,
                 "CPU %u: vCPU %d of '%s' stays on its own sibling: it was moved recently and "
                 "stays %.0f s more",
                 osOf(ctx, d.from[0]), v, plan->domain, left);
            continue;
        }
        if (*decisions >= ctx->rb->cfg.max_moves) {
            note(ctx,
                 "CPU %u: vCPU %d of '%s' re-expands in a later pass: %u moves per pass at most",
                 osOf(ctx, d.from[0]), v, plan->domain, ctx->rb->cfg.max_moves);
            continue;
        }
        m = g_new0(vpMove, 1);
        m->domain = g_strdup(plan->domain);
        m->vcpu = v;
        m->from = osOf(ctx, d.from[0]);
        m->to = osOf(ctx, d.to[0]);
        m->reason = g_strdup_printf(
            "smt=spread re-expands: vCPU %d of '%s' on CPU %u shares a core with its own vCPU "
            "%d; to CPU %u: %s (core busy %.1f%%) in the same %s",
            v, plan->domain, m->from, partner, m->to, relPhrase(REL_IDLE),
            vpPressureCore(ctx->p, coreOf(ctx, d.to[0]))->busy * 100, d.scope);
        g_ptr_array_add(ctx->moves, m);
        g_hash_table_add(ctx->moved, g_steal_pointer(&key));
        ctx->taken[d.from[0]] = true;
        ctx->taken[d.to[0]] = true;
        (*decisions)++;
    }
}

GPtrArray *
vpRebalancePlan(const vpRebalancer *rb, const vpPressure *p, const vpLedger *ledger, gint64 now_ns,
                GPtrArray *notes)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    g_autofree bool *taken = g_new0(bool, vpTopologyNPUs(topo));
    g_autoptr(GHashTable) moved = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GArray) cands = g_array_new(FALSE, FALSE, sizeof(Cand));
    Ctx ctx = {
        .rb = rb,
        .p = p,
        .ledger = ledger,
        .topo = topo,
        .now = now_ns,
        .taken = taken,
        .moved = moved,
        .moves = g_ptr_array_new_with_free_func((GDestroyNotify)vpMoveFree),
        .notes = notes,
    };
    unsigned decisions = 0;

    g_return_val_if_fail(vpPressureTopology(p) == topo, ctx.moves);
    collectWait(&ctx, cands);
    collectCorun(&ctx, cands);
    g_array_sort(cands, candCompare);

    for (guint i = 0; i < cands->len; i++) {
        const Cand *c = &g_array_index(cands, Cand, i);
        g_autofree char *key = histKey(c->domain, c->vcpu);
        guint before = ctx.moves->len;

        if (g_hash_table_contains(moved, key) || taken[c->pu])
            continue;
        if (decisions >= rb->cfg.max_moves) {
            note(&ctx, "CPU %u: vCPU %d of '%s' waits for a later pass: %u moves per pass at most",
                 osOf(&ctx, c->pu), c->vcpu, c->domain, rb->cfg.max_moves);
            continue;
        }
        decide(&ctx, c);
        decisions += ctx.moves->len > before;
    }
    reexpand(&ctx, &decisions);
    return ctx.moves;
}

/* --- applying --- */

static hwloc_bitmap_t
vcpuSet(const vpPlan *plan)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();

    for (unsigned v = 0; v < plan->nvcpus; v++) {
        if (plan->vcpu_pu[v] >= 0)
            hwloc_bitmap_set(set, plan->vcpu_pu[v]);
    }
    return set;
}

/* Cores (as a set of core indexes) that hold the plan's vCPUs. */
static hwloc_bitmap_t
coreSet(const vpTopology *topo, const vpPlan *plan)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();

    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[v]) : -1;

        if (pu >= 0)
            hwloc_bitmap_set(set, vpTopologyPU(topo, pu)->core);
    }
    return set;
}

/* isolate and pack hold whole cores: the siblings of a core left behind are released, the
 * siblings of a core moved onto are reserved. A dedicated emulator PU stays put. */
static void
carryReserved(const vpTopology *topo, const vpPlan *old, vpPlan *plan)
{
    hwloc_bitmap_t before = coreSet(topo, old), after = coreSet(topo, plan);
    hwloc_bitmap_t vcpus = vcpuSet(plan);
    bool dedicated = dedicatedEmulator(old);
    int os, c;

    hwloc_bitmap_foreach_begin(os, old->reserved)
    {
        int pu = vpTopologyPUByOS(topo, os);

        if (pu < 0 || (dedicated && hwloc_bitmap_isset(old->emulator, os)))
            continue;
        if (!hwloc_bitmap_isset(after, vpTopologyPU(topo, pu)->core))
            hwloc_bitmap_clr(plan->reserved, os);
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_foreach_begin(c, after)
    {
        const vpCore *core = vpTopologyCore(topo, c);

        if (hwloc_bitmap_isset(before, c))
            continue;
        for (int i = 0; i < core->npus; i++) {
            unsigned pos = vpTopologyPU(topo, core->pus[i])->os;

            if (!hwloc_bitmap_isset(vcpus, pos))
                hwloc_bitmap_set(plan->reserved, pos);
        }
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_free(before);
    hwloc_bitmap_free(after);
    hwloc_bitmap_free(vcpus);
}

/* An emulator that floated over the vCPU PUs (and reserved siblings) keeps doing so. */
static void
carryEmulator(const vpPlan *old, vpPlan *plan)
{
    hwloc_bitmap_t was = vcpuSet(old), now = vcpuSet(plan);

    hwloc_bitmap_or(was, was, old->reserved);
    hwloc_bitmap_or(now, now, plan->reserved);
    if (!hwloc_bitmap_iszero(old->emulator) && hwloc_bitmap_isequal(old->emulator, was))
        hwloc_bitmap_copy(plan->emulator, now);
    hwloc_bitmap_free(was);
    hwloc_bitmap_free(now);
}

/* The smallest level, from the plan's own upwards, whose one group holds every vCPU. */
static void
widenLevel(const vpTopology *topo, vpPlan *plan)
{
    for (int l = MAX(plan->level, VP_LEVEL_CLUSTER); l < VP_LEVEL_HOST; l++) {
        int idx = -1;
        bool one = true;

        for (unsigned v = 0; v < plan->nvcpus && one; v++) {
            int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[v]) : -1;
            int g;

            if (pu < 0)
                continue;
            g = vpTopologyCore(topo, vpTopologyPU(topo, pu)->core)->group[l];
            one = idx < 0 || g == idx;
            idx = g;
        }
        if (one && idx >= 0) {
            if (l != (int)plan->level || idx != plan->level_index) {
                plan->level = l;
                plan->level_index = idx;
            }
            return;
        }
    }
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
}

/* An overcommitted smt=share plan whose vCPUs no longer time-share any PU (moves took them
 * or their neighbours apart) is no longer degraded for that reason: the flag and the
 * placer's "smt=share overcommitted: ..." part of the reason go, so that status shows what
 * holds now. */
static void
settleOvercommit(vpLedger *ledger)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);

    for (guint i = 0; i < names->len; i++) {
        const vpPlan *cur = vpLedgerLookup(ledger, g_ptr_array_index(names, i));
        g_autoptr(vpPlan) plan = NULL;
        g_auto(GStrv) parts = NULL;
        g_autoptr(GStrvBuilder) kept = NULL;
        g_auto(GStrv) left = NULL;
        bool shared = false;

        if (!cur->overcommit)
            continue;
        for (unsigned v = 0; v < cur->nvcpus && !shared; v++) {
            int pu = cur->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(topo, cur->vcpu_pu[v]) : -1;

            shared = pu >= 0 && vpLedgerNOwners(ledger, pu) > 1;
        }
        if (shared)
            continue;
        plan = vpPlanCopy(cur);
        plan->overcommit = false;
        kept = g_strv_builder_new();
        parts = g_strsplit(plan->degraded_reason ? plan->degraded_reason : "", "; ", -1);
        for (char **p = parts; *p; p++) {
            if (**p && !g_str_has_prefix(*p, "smt=share overcommitted"))
                g_strv_builder_add(kept, *p);
        }
        left = g_strv_builder_end(kept);
        g_free(plan->degraded_reason);
        plan->degraded_reason = left[0] ? g_strjoinv("; ", left) : NULL;
        plan->degraded = plan->degraded_reason != NULL;
        /* the same PUs, one holder each: replacing cannot fail */
        if (!vpLedgerReplace(ledger, plan, NULL))
            g_assert_not_reached();
    }
}

gboolean
vpRebalanceApply(vpLedger *ledger, GPtrArray *moves, GError **error)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    g_autoptr(GPtrArray) olds = g_ptr_array_new_with_free_func((GDestroyNotify)vpPlanFree);
    g_autoptr(GPtrArray) news = g_ptr_array_new_with_free_func((GDestroyNotify)vpPlanFree);
    guint done;

    for (guint i = 0; i < moves->len; i++) {
        const vpMove *m = g_ptr_array_index(moves, i);
        vpPlan *plan = NULL;

        for (guint k = 0; k < news->len && !plan; k++) {
            if (strcmp(((vpPlan *)g_ptr_array_index(news, k))->domain, m->domain) == 0)
                plan = g_ptr_array_index(news, k);
        }
        if (!plan) {
            const vpPlan *cur = vpLedgerLookup(ledger, m->domain);

            if (!cur) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "move of vCPU %u: domain '%s' is not in the ledger", m->vcpu,
                            m->domain);
                return FALSE;
            }
            g_ptr_array_add(olds, vpPlanCopy(cur));
            plan = vpPlanCopy(cur);
            g_ptr_array_add(news, plan);
        }
        if (m->vcpu >= plan->nvcpus || plan->vcpu_pu[m->vcpu] != (int)m->from ||
            vpTopologyPUByOS(topo, m->to) < 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "move of vCPU %u of '%s' from CPU %u to CPU %u does not match the "
                        "ledger (vCPU %s)",
                        m->vcpu, m->domain, m->from, m->to,
                        m->vcpu < plan->nvcpus ? "is elsewhere or the target is unknown"
                                               : "does not exist");
            return FALSE;
        }
        plan->vcpu_pu[m->vcpu] = m->to;
    }
    for (guint k = 0; k < news->len; k++) {
        const vpPlan *old = g_ptr_array_index(olds, k);
        vpPlan *plan = g_ptr_array_index(news, k);

        if (wholeCores(old))
            carryReserved(topo, old, plan);
        carryEmulator(old, plan);
        widenLevel(topo, plan);
    }
    for (done = 0; done < news->len; done++) {
        if (!vpLedgerReplace(ledger, g_ptr_array_index(news, done), error))
            break;
    }
    if (done == news->len) {
        settleOvercommit(ledger);
        return TRUE;
    }
    while (done-- > 0)
        vpLedgerReplace(ledger, g_ptr_array_index(olds, done), NULL);
    return FALSE;
}

/* --- memory --- */

static gboolean
historyPrune(gpointer key, gpointer value, gpointer data)
{
    History *h = value;
    const gint64 *cut = data;
    guint keep = 0;

    while (keep < h->recs->len && g_array_index(h->recs, MoveRec, keep).when < *cut)
        keep++;
    g_array_remove_range(h->recs, 0, keep);
    return FALSE;
}

void
vpRebalanceCommit(vpRebalancer *rb, vpPressure *p, const vpTopology *topo, GPtrArray *moves,
                  gint64 now_ns)
{
    gint64 cut = now_ns - rb->cfg.memory_ns;

    for (guint i = 0; i < moves->len; i++) {
        const vpMove *m = g_ptr_array_index(moves, i);
        g_autofree char *key = histKey(m->domain, m->vcpu);
        History *h = g_hash_table_lookup(rb->hist, key);
        int from = vpTopologyPUByOS(topo, m->from), to = vpTopologyPUByOS(topo, m->to);
        MoveRec rec = {now_ns, from};

        if (!h) {
            h = g_new0(History, 1);
            h->recs = g_array_new(FALSE, FALSE, sizeof(MoveRec));
            g_hash_table_insert(rb->hist, g_steal_pointer(&key), h);
        }
        g_array_append_val(h->recs, rec);
        h->total++;
        if (from >= 0)
            vpPressureForgetPU(p, from);
        if (to >= 0)
            vpPressureForgetPU(p, to);
        vpPressureForgetVcpu(p, m->domain, m->vcpu);
    }
    g_hash_table_foreach_remove(rb->hist, historyPrune, &cut);
}
