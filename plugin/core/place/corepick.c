/*
 * Core selection: what each policy takes inside one group, tier by tier (the search over
 * groups, levels and nodes that asks it is search.c), and the overcommit of share domains.
 */
#include "core/place/placerpriv.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void
vpPlacerPickInit(vpPick *pick, unsigned n)
{
    memset(pick, 0, sizeof(*pick));
    pick->pus = g_new(int, n);
    pick->reserved = g_array_new(FALSE, FALSE, sizeof(int));
}

void
vpPlacerPickClear(vpPick *pick)
{
    g_free(pick->pus);
    if (pick->reserved)
        g_array_free(pick->reserved, TRUE);
    memset(pick, 0, sizeof(*pick));
}

void
vpPlacerPickReset(vpPick *pick)
{
    pick->n = 0;
    pick->nshared = 0;
    pick->nwhole = 0;
    pick->leftover = 0;
    pick->node_left = 0;
    g_array_set_size(pick->reserved, 0);
}

static void
takeFree(const vpCtx *ctx, int c, int limit, vpPick *pick, int n)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    limit = MIN(limit, vpPlacerNodeRoom(ctx, pick, core->pus[0]));
    for (int i = 0; i < core->npus && pick->n < n && limit > 0; i++) {
        int pu = core->pus[i];
        bool used = false;

        if (!ctx->pufree[pu] || (ctx->ok && !ctx->ok[pu]))
            continue;
        for (int k = 0; k < pick->n; k++)
            used |= pick->pus[k] == pu;
        if (used)
            continue;
        pick->pus[pick->n++] = pu;
        limit--;
    }
}

static void
reserveRest(const vpCtx *ctx, int c, vpPick *pick)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    for (int i = 0; i < core->npus; i++) {
        int pu = core->pus[i];
        bool used = false;

        if (!ctx->pufree[pu])
            continue;
        for (int k = 0; k < pick->n; k++)
            used |= pick->pus[k] == pu;
        if (!used)
            g_array_append_val(pick->reserved, pu);
    }
}

static void
pickIsolate(const vpCtx *ctx, const vpGroup *g, int n, vpPick *pick)
{
    for (int i = 0; i < g->ncores && pick->n < n; i++) {
        int c = g->cores[i];

        if (!coreWhole(ctx, c) ||
            vpPlacerNodeRoom(ctx, pick, vpTopologyCore(ctx->topo, c)->pus[0]) < 1)
            continue;
        takeFree(ctx, c, 1, pick, n);
        reserveRest(ctx, c, pick);
    }
}

/* Bigger cores first, so that on hybrid machines guest thread pairs land on real sibling
 * pairs; the sort is stable, so cores of one size keep topology order. */
static void
pickPack(const vpCtx *ctx, const vpGroup *g, int n, vpPick *pick)
{
    int maxsmt = vpTopologyMaxSMT(ctx->topo);

    for (int size = maxsmt; size > 0 && pick->n < n; size--) {
        for (int i = 0; i < g->ncores && pick->n < n; i++) {
            int c = g->cores[i];

            /* a core its node's memory cannot fill would break the guest's thread pairs */
            if (!coreWhole(ctx, c) || vpTopologyCore(ctx->topo, c)->npus != size ||
                vpPlacerNodeRoom(ctx, pick, vpTopologyCore(ctx->topo, c)->pus[0]) <
                    MIN(size, n - pick->n))
                continue;
            takeFree(ctx, c, size, pick, n);
            if (!vpTrustGroupCookie(&ctx->req->policy))
                reserveRest(ctx, c, pick);
        }
    }
}

/* Which cores a pack VM may take in one pass of packFill(). */
typedef enum {
    PACK_GROUP,  /* free siblings of cores only its cookie group holds */
    PACK_OWN,    /* ... and whole free cores */
    PACK_IDLE,   /* ... and of cores no VM holds (a housekeeping sibling makes one not whole) */
    PACK_OTHERS, /* free siblings of cores that share VMs or other trust groups hold */
} vpPackCores;

static bool
packMay(const vpCtx *ctx, int c, vpPackCores which)
{
    switch (which) {
    case PACK_GROUP:
        return ctx->rel[c] == VP_TRUST_GROUP;
    case PACK_OWN:
        return coreWhole(ctx, c) || ctx->rel[c] == VP_TRUST_GROUP;
    case PACK_IDLE:
        return coreIdle(ctx, c) || ctx->rel[c] == VP_TRUST_GROUP;
    default:
        return ctx->rel[c] == VP_TRUST_SHARE || ctx->rel[c] == VP_TRUST_STRANGER;
    }
}

/* How many PUs core c gives a pack VM that still needs `want`, in whole guest cores of
 * `block` threads. */
static int
packRoom(const vpCtx *ctx, int c, vpPackCores which, int want, int block, const vpPick *pick)
{
    int room;

    if (!packMay(ctx, c, which))
        return 0;
    room = MIN(ctx->nok[c], vpPlacerNodeRoom(ctx, pick, vpTopologyCore(ctx->topo, c)->pus[0]));
    room = MIN(room, want);
    return room - room % block;
}

/* Best fit among cores that give the same room: the one the VM fills most closely (as share
 * does), so that whole cores stay whole; then, among others' cores, a share VM's (it accepts
 * any neighbour) before a stranger's. */
static bool
packFits(const vpCtx *ctx, int a, int b, vpPackCores which)
{
    if (ctx->nok[a] != ctx->nok[b])
        return ctx->nok[a] < ctx->nok[b];
    return which == PACK_OTHERS && ctx->rel[a] < ctx->rel[b];
}

/* Cores of one kind, one after another: the core that gives the most of what the VM still
 * needs, best fit among those. Each guest core of the VM stays on one host core. */
static void
packFill(const vpCtx *ctx, const vpGroup *g, vpPackCores which, int n, bool *done, vpPick *pick)
{
    int block = ctx->req->threads > 0 ? (int)ctx->req->threads : 1;

    while (pick->n < n) {
        int want = n - pick->n, best = -1, best_room = 0;

        for (int i = 0; i < g->ncores; i++) {
            int room = done[i] ? 0 : packRoom(ctx, g->cores[i], which, want, block, pick);

            if (room > best_room ||
                (room && room == best_room && packFits(ctx, g->cores[i], g->cores[best], which))) {
                best = i;
                best_room = room;
            }
        }
        if (best < 0)
            break;
        done[best] = true;
        if (which == PACK_OWN && coreWhole(ctx, g->cores[best]))
            pick->nwhole++;
        takeFree(ctx, g->cores[best], best_room, pick, n);
        if (which == PACK_OTHERS)
            pick->nshared += best_room;
    }
}

/* TIER_PACK_GROUP: a pack VM of a cookie group takes free siblings of its group's cores
 * first, best fit, then whole cores (fewest, better()): one cookie per core, so no stranger,
 * and whole cores stay whole for isolate and pack VMs, as share fills its group's cores first.
 * TIER_PACK_ANY: once that fails, host-wide, pack's last tier takes any core no VM holds, then
 * free siblings of share VMs' and other trust groups' cores (as spread's and share's last
 * tiers), best fit first: the siblings it leaves free on such a core are lost to all others.
 * Each guest core stays on one host core, and the kernel keeps strangers on a core from
 * running at once (one cookie per VM or trust group). Free PUs of cores that hold a pack or
 * isolate vCPU stay hidden (snapshot.c); nothing is reserved: the core is shared anyway. */
static void
pickPackShared(const vpCtx *ctx, const vpGroup *g, vpTier tier, int n, vpPick *pick)
{
    g_autofree bool *done = g_new0(bool, g->ncores);

    packFill(ctx, g, tier == TIER_PACK_ANY ? PACK_IDLE : PACK_GROUP, n, done, pick);
    packFill(ctx, g, tier == TIER_PACK_ANY ? PACK_OTHERS : PACK_OWN, n, done, pick);
}

static void
pickSpread(const vpCtx *ctx, const vpGroup *g, int n, vpTier tier, vpPick *pick)
{
    g_autofree int *taken = g_new(int, MIN(g->ncores, n));
    int ntaken = 0;
    bool progress = true;

    for (int i = 0; i < g->ncores && pick->n < n; i++) {
        int before = pick->n;

        /* a node whose memory holds no more of the VM gives it no core */
        if (coreIdle(ctx, g->cores[i]))
            takeFree(ctx, g->cores[i], 1, pick, n);
        if (pick->n > before)
            taken[ntaken++] = g->cores[i];
    }
    while (tier >= TIER_SPREAD_OWN && pick->n < n && progress) {
        int before = pick->n;

        for (int i = 0; i < ntaken && pick->n < n; i++)
            takeFree(ctx, taken[i], 1, pick, n);
        pick->nshared += pick->n - before;
        progress = pick->n > before;
    }
    if (tier >= TIER_SPREAD_GROUP) {
        for (int i = 0; i < g->ncores && pick->n < n; i++) {
            if (ctx->rel[g->cores[i]] == VP_TRUST_GROUP)
                takeFree(ctx, g->cores[i], INT_MAX, pick, n);
        }
    }
    if (tier >= TIER_SPREAD_ANY) {
        for (int rel = VP_TRUST_SHARE; rel <= VP_TRUST_STRANGER; rel++) {
            for (int i = 0; i < g->ncores && pick->n < n; i++) {
                if (ctx->rel[g->cores[i]] == (vpTrust)rel)
                    takeFree(ctx, g->cores[i], INT_MAX, pick, n);
            }
        }
    }
}

/* The next core of one relation for a share VM that still needs `want` PUs: the core with
 * the most free PUs that the VM fills completely, else the one with the fewest free PUs
 * beyond what it needs. Whole sibling sets thus go to one VM, and the last vCPUs fill a
 * half-used core rather than split a whole one. -1 when none is left. */
static int
nextShareCore(const vpCtx *ctx, const vpGroup *g, vpTrust rel, int want, const bool *done)
{
    int fill = -1, over = -1;

    for (int i = 0; i < g->ncores; i++) {
        int c = g->cores[i];
        int f = ctx->nfree[c];

        if (done[i] || ctx->rel[c] != rel || f == 0)
            continue;
        if (f <= want && (fill < 0 || f > ctx->nfree[g->cores[fill]]))
            fill = i;
        if (f > want && (over < 0 || f < ctx->nfree[g->cores[over]]))
            over = i;
    }
    return fill >= 0 ? fill : over;
}

/* Its trust group's cores (one cookie), then cores no VM holds, whole sibling sets first,
 * and only then another share VM's: siblings of two cookies force one of them idle while the
 * other runs, a cost no VM should pay while a core stands free. A share VM shares a core with
 * another cookie only when its operator put both in one trust group, or no core is free. */
static void
pickShare(const vpCtx *ctx, const vpGroup *g, int n, vpTier tier, vpPick *pick)
{
    static const vpTrust order[] = {VP_TRUST_GROUP, VP_TRUST_NONE, VP_TRUST_SHARE,
                                    VP_TRUST_STRANGER};
    g_autofree bool *done = g_new0(bool, g->ncores);

    for (gsize r = 0; r < G_N_ELEMENTS(order); r++) {
        int i;

        if (order[r] == VP_TRUST_STRANGER && tier < TIER_SHARE_ANY)
            break;
        while (pick->n < n && (i = nextShareCore(ctx, g, order[r], n - pick->n, done)) >= 0) {
            int before = pick->n;

            done[i] = true;
            takeFree(ctx, g->cores[i], INT_MAX, pick, n);
            if (order[r] >= VP_TRUST_SHARE)
                pick->nshared += pick->n - before;
        }
    }
}

void
vpPlacerPickInGroup(const vpCtx *ctx, const vpGroup *g, vpSmt smt, vpTier tier, int n, vpPick *pick)
{
    vpGroup view = *g;
    int freepus = 0;

    view.cores = (int *)vpPlacerOrderCores(ctx, g, smt < VP_SMT_LAST ? smt : VP_SMT_SHARE);
    vpPlacerPickReset(pick);
    switch (smt) {
    case VP_SMT_ISOLATE:
        pickIsolate(ctx, &view, n, pick);
        break;
    case VP_SMT_PACK:
        if (tier == TIER_PACK_GROUP || tier == TIER_PACK_ANY)
            pickPackShared(ctx, &view, tier, n, pick);
        else
            pickPack(ctx, &view, n, pick);
        break;
    case VP_SMT_SPREAD:
        pickSpread(ctx, &view, n, tier, pick);
        break;
    case VP_SMT_SHARE:
    case VP_SMT_LAST:
        pickShare(ctx, &view, n, tier, pick);
        break;
    }
    for (int i = 0; i < g->ncores; i++)
        freepus += ctx->nfree[g->cores[i]];
    pick->leftover = freepus - pick->n - (int)pick->reserved->len;
}

/* A PU whose every holder is a vCPU of an smt=share domain that itself accepts degrading:
 * only domains that consented to overcommit are given a time-sharing neighbour. Never on a
 * core another domain's pack or isolate vCPU keeps (snapshot.c), free PU or not. */
static int
shareHolders(const vpCtx *ctx, int pu)
{
    unsigned n = ctx->ledger ? vpLedgerNOwners(ctx->ledger, pu) : 0;

    if (vpPlacerMovedPU(ctx, pu) || ctx->closed[vpTopologyPU(ctx->topo, pu)->core])
        return -1;
    for (unsigned i = 0; i < n; i++) {
        vpOwner o = vpLedgerOwnerAt(ctx->ledger, pu, i);
        const vpPlan *holder = vpLedgerLookup(ctx->ledger, o.domain);

        if (o.kind != VP_OWN_VCPU || !holder || holder->policy.smt != VP_SMT_SHARE ||
            holder->policy.unmet != VP_UNMET_DEGRADE)
            return -1;
    }
    return n;
}

/* Free PUs first, then share-held PUs by fewest holders; deterministic by PU order. */
bool
vpPlacerPickOvercommit(const vpCtx *ctx, int n, vpChoice *choice)
{
    int npus = vpTopologyNPUs(ctx->topo);
    int maxholders = 0;

    vpPlacerPickReset(&choice->pick);
    for (int pu = 0; pu < npus; pu++)
        maxholders = MAX(maxholders, shareHolders(ctx, pu));
    for (int want = 0; want <= maxholders && choice->pick.n < n; want++) {
        for (int pu = 0; pu < npus && choice->pick.n < n; pu++) {
            if (vpTopologyPU(ctx->topo, pu)->usable && (!ctx->ok || ctx->ok[pu]) &&
                vpPlacerNodeRoom(ctx, &choice->pick, pu) > 0 && shareHolders(ctx, pu) == want)
                choice->pick.pus[choice->pick.n++] = pu;
        }
    }
    choice->level = VP_LEVEL_HOST;
    choice->index = -1;
    return choice->pick.n == n;
}
