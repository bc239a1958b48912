/*
 * The rebalancer. A pass collects candidates (a vCPU on a PU hot for the persistence, or
 * on a core where it co-runs with foreign load), most delayed first, and for each asks in
 * order: may this vCPU move at all (policy, own pins, residency)? which cores may it go
 * to (its L3, then its NUMA node; only its domain's home L3 when wake-coupled)? and, tier
 * by tier, which idle PU there is best (whole idle core, then siblings of its own domain,
 * its trust group, share domains as the policy allows; the least busy core wins, ties to
 * the lowest index so the answer is reproducible)?
 */
#include "core/balance/rebalpriv.h"

#include <string.h>

void
vpRebalanceConfigInit(vpRebalanceConfig *cfg)
{
    cfg->max_moves = 2;
    cfg->min_residency_ns = 60 * NS;
    cfg->memory_ns = 600 * NS;
    cfg->return_quiet = 30;
    cfg->coupled_wakeups = 1000;
}

bool
vpRebalanceConfigValidate(const vpRebalanceConfig *cfg, GError **error)
{
    if (cfg->max_moves < 1 || cfg->max_moves > 1000) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "max_moves=%u is outside [1, 1000]",
                    cfg->max_moves);
        return false;
    }
    if (cfg->min_residency_ns < 0 || cfg->memory_ns < cfg->min_residency_ns) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "memory=%gs must be at least min_residency=%gs (and neither negative)",
                    (double)cfg->memory_ns / NS, (double)cfg->min_residency_ns / NS);
        return false;
    }
    if (cfg->return_quiet > 86400) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "return_quiet=%u is outside [0, 86400]",
                    cfg->return_quiet);
        return false;
    }
    if (!(cfg->coupled_wakeups > 0) || cfg->coupled_wakeups > 1e7) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "coupled_wakeups=%g is outside (0, 10000000]", cfg->coupled_wakeups);
        return false;
    }
    return true;
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

guint64
vpRebalancerMoves(const vpRebalancer *rb, const char *domain, unsigned vcpu)
{
    const History *h = vpRbHistoryOf(rb, domain, vcpu);

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
        g_autofree char *key = vpRbHistKey(c->domain, c->vcpu);
        guint before = ctx.moves->len;

        if (g_hash_table_contains(moved, key) || taken[c->pu])
            continue;
        if (decisions >= rb->cfg.max_moves) {
            vpRbNote(&ctx,
                     "CPU %u: vCPU %d of '%s' waits for a later pass: %u moves per pass at most",
                     vpRbOsOf(&ctx, c->pu), c->vcpu, c->domain, rb->cfg.max_moves);
            continue;
        }
        vpRbDecide(&ctx, c);
        decisions += ctx.moves->len > before;
    }
    vpRbReexpand(&ctx, &decisions);
    return ctx.moves;
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
        g_autofree char *key = vpRbHistKey(m->domain, m->vcpu);
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
