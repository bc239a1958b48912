/*
 * Core selection: what each policy takes inside one group, tier by tier, and the search
 * over tiers and locality levels (placer.c, steps 2 and 3), numa:N splits and the
 * overcommit of share domains.
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

static void
pickReset(vpPick *pick)
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

static void
pickInGroup(const vpCtx *ctx, const vpGroup *g, vpSmt smt, vpTier tier, int n, vpPick *pick)
{
    vpGroup view = *g;
    int freepus = 0;

    view.cores = (int *)vpPlacerOrderCores(ctx, g, smt < VP_SMT_LAST ? smt : VP_SMT_SHARE);
    pickReset(pick);
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

static const vpTier *
tiersFor(const vpCtx *ctx, vpSmt smt, int *ntiers)
{
    static const vpTier whole[] = {TIER_WHOLE};
    static const vpTier pack_group[] = {TIER_PACK_GROUP};
    static const vpTier spread[] = {TIER_SPREAD, TIER_SPREAD_OWN, TIER_SPREAD_GROUP};
    static const vpTier share[] = {TIER_SHARE};

    switch (smt) {
    case VP_SMT_PACK:
        if (vpTrustGroupCookie(&ctx->req->policy)) {
            *ntiers = G_N_ELEMENTS(pack_group);
            return pack_group;
        }
        *ntiers = G_N_ELEMENTS(whole);
        return whole;
    case VP_SMT_ISOLATE:
        *ntiers = G_N_ELEMENTS(whole);
        return whole;
    case VP_SMT_SPREAD:
        *ntiers = G_N_ELEMENTS(spread);
        return spread;
    default:
        *ntiers = G_N_ELEMENTS(share);
        return share;
    }
}

/* Fewest vCPUs on shared cores, then fewest whole cores broken, then best fit: for groups inside
 * one NUMA node the node the VM fills most closely first, then the group, so that the roomiest
 * nodes stay whole for VMs that need a whole node. */
static bool
better(const vpPick *a, const vpPick *b)
{
    if (a->nshared != b->nshared)
        return a->nshared < b->nshared;
    if (a->nwhole != b->nwhole)
        return a->nwhole < b->nwhole;
    if (a->node_left != b->node_left)
        return a->node_left < b->node_left;
    return a->leftover < b->leftover;
}

/* Free PUs of group g that the mask allows: at least what any pick there can take (a PU
 * vpPlacerCtxHold took stays counted until the next vpPlacerCtxSetMask). */
static int
okFree(const vpCtx *ctx, const vpGroup *g)
{
    int n = 0;

    for (int i = 0; i < g->ncores; i++)
        n += ctx->nok[g->cores[i]];
    return n;
}

/* Free PUs the NUMA node of group g keeps after the pick; 0 when g is not inside one node. */
static int
nodeLeft(const vpCtx *ctx, const vpGroup *g, const vpPick *pick)
{
    int node = vpTopologyCore(ctx->topo, g->cores[0])->group[VP_LEVEL_NUMA];

    for (int i = 1; i < g->ncores; i++) {
        if (vpTopologyCore(ctx->topo, g->cores[i])->group[VP_LEVEL_NUMA] != node)
            return 0;
    }
    if (node < 0)
        return 0;
    return okFree(ctx, vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, node)) - pick->n -
           (int)pick->reserved->len;
}

static bool
searchLevel(const vpCtx *ctx, vpLevel level, vpSmt smt, vpTier tier, int n, vpChoice *best)
{
    vpPick cand;
    bool found = false;

    vpPlacerPickInit(&cand, n);
    for (int gi = 0; gi < vpTopologyNGroups(ctx->topo, level); gi++) {
        const vpGroup *g = vpTopologyGroup(ctx->topo, level, gi);

        if (g->npus < n)
            continue;
        if (okFree(ctx, g) < n) {
            /* no pick can fill it; its walking order is still owed to this snapshot, as a
             * pick would have fixed it, so that later searches of this placement see the
             * same */
            vpPlacerOrderOwe(ctx, g, smt < VP_SMT_LAST ? smt : VP_SMT_SHARE);
            continue;
        }
        pickInGroup(ctx, g, smt, tier, n, &cand);
        cand.node_left = level < VP_LEVEL_NUMA ? nodeLeft(ctx, g, &cand) : 0;
        if (cand.n < n || (found && !better(&cand, &best->pick)))
            continue;
        vpPick tmp = best->pick;
        best->pick = cand;
        cand = tmp;
        best->level = level;
        best->index = gi;
        found = true;
    }
    vpPlacerPickClear(&cand);
    return found;
}

/* How many of the levels (smallest first) lie within one NUMA node: a spread VM uses its
 * own siblings there before it takes free cores of a wider level, since a VM split over
 * nodes pays on every memory access and leaves half-used cores that no later isolate or
 * pack VM can take. Its own siblings are no stranger's, so sibling avoidance between VMs
 * still holds. */
static int
nodeLevels(const vpLevel *levels, int nlevels)
{
    int local = 0;

    for (int l = 0; l < nlevels; l++) {
        if (levels[l] == VP_LEVEL_NUMA)
            local = l + 1;
    }
    return local;
}

static bool
searchTiers(const vpCtx *ctx, vpSmt smt, const vpTier *tiers, int ntiers, const vpLevel *levels,
            int from, int to, int n, vpChoice *best)
{
    for (int t = 0; t < ntiers; t++) {
        for (int l = from; l < to; l++) {
            if (searchLevel(ctx, levels[l], smt, tiers[t], n, best))
                return true;
        }
    }
    return false;
}

/* TIER_SPREAD_OWN over levels [from, to) inside one node: the level whose pick puts the fewest
 * vCPUs on their own siblings, the smallest on a tie. An idle core before an idle sibling, as
 * select_idle_sibling() chooses, outweighs staying inside an L3: on SMT4 and SMT8 the L3
 * would otherwise hold a VM on half its node's cores, four or eight threads to a core. */
static bool
searchOwnSiblings(const vpCtx *ctx, const vpLevel *levels, int from, int to, int n, vpChoice *best)
{
    vpChoice cand = {0};
    bool found = false;

    vpPlacerPickInit(&cand.pick, n);
    for (int l = from; l < to; l++) {
        if (!searchLevel(ctx, levels[l], VP_SMT_SPREAD, TIER_SPREAD_OWN, n, &cand) ||
            (found && cand.pick.nshared >= best->pick.nshared))
            continue;
        vpChoice tmp = *best;
        *best = cand;
        cand = tmp;
        found = true;
    }
    vpPlacerPickClear(&cand.pick);
    return found;
}

/* A spread VM's free cores, then its own siblings, at levels [0, to), which lie within one
 * NUMA node. */
static bool
searchSpreadInNode(const vpCtx *ctx, const vpLevel *levels, int to, int n, vpChoice *best)
{
    static const vpTier spread[] = {TIER_SPREAD};

    return searchTiers(ctx, VP_SMT_SPREAD, spread, 1, levels, 0, to, n, best) ||
           searchOwnSiblings(ctx, levels, 0, to, n, best);
}

/* --- locality="numa:N": N equal blocks of vCPUs, each on a NUMA node of its own --- */

static int
compareInts(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static int
packageOfNode(const vpCtx *ctx, int node)
{
    const vpGroup *g = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, node);

    return vpTopologyCore(ctx->topo, g->cores[0])->group[VP_LEVEL_PACKAGE];
}

/* The nodes to use among those where one block fits (fits[i]), into chosen (ascending):
 * within one package when one has room for every block, the package whose chosen nodes
 * share fewest cores and leave the fewest free PUs behind (nodes of one package are
 * nearer each other); else the best nodes host-wide. Best fit as in vpPlacerSearch(). */
static bool
chooseNodes(const vpCtx *ctx, const vpPick *picks, const bool *fits, unsigned nodes, int *chosen,
            bool *onepkg)
{
    int nn = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);
    int npkg = vpTopologyNGroups(ctx->topo, VP_LEVEL_PACKAGE);
    gint64 bestscore = G_MAXINT64;
    g_autofree bool *used = g_new0(bool, nn);

    for (int p = 0; p <= npkg; p++) {
        bool host = p == npkg;
        int pick[VP_LOCALITY_SPLIT_MAX];
        unsigned k = 0;
        gint64 score = 0;

        if (host && bestscore < G_MAXINT64)
            break;
        memset(used, 0, sizeof(bool) * nn);
        for (; k < nodes; k++) {
            int best = -1;

            for (int i = 0; i < nn; i++) {
                if (fits[i] && !used[i] && (host || packageOfNode(ctx, i) == p) &&
                    (best < 0 || better(&picks[i], &picks[best])))
                    best = i;
            }
            if (best < 0)
                break;
            used[best] = true;
            pick[k] = best;
            score += (gint64)picks[best].nshared * INT_MAX + picks[best].leftover;
        }
        if (k < nodes || score >= bestscore)
            continue;
        bestscore = score;
        *onepkg = !host;
        for (unsigned j = 0; j < nodes; j++)
            chosen[j] = pick[j];
    }
    if (bestscore == G_MAXINT64)
        return false;
    qsort(chosen, nodes, sizeof(int), compareInts);
    return true;
}

/* Tier by tier as vpPlacerSearch(), the first tier at which N nodes can each take a block wins. */
static bool
searchSplit(const vpCtx *ctx, vpSmt smt, unsigned nodes, int n, vpChoice *best)
{
    int nn = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA), per = n / (int)nodes;
    int ntiers, chosen[VP_LOCALITY_SPLIT_MAX];
    const vpTier *base = tiersFor(ctx, smt, &ntiers);
    vpTier tiers[8];
    g_autofree vpPick *picks = g_new0(vpPick, nn);
    g_autofree bool *fits = g_new0(bool, nn);
    bool found = false, onepkg = false;

    memcpy(tiers, base, sizeof(vpTier) * ntiers);
    if (smt == VP_SMT_SPREAD)
        tiers[ntiers++] = TIER_SPREAD_ANY;
    else if (smt == VP_SMT_PACK)
        tiers[ntiers++] = TIER_PACK_ANY;
    else if (smt == VP_SMT_SHARE)
        tiers[ntiers++] = TIER_SHARE_ANY;
    for (int i = 0; i < nn; i++)
        vpPlacerPickInit(&picks[i], per);
    for (int t = 0; t < ntiers && !found; t++) {
        for (int i = 0; i < nn; i++) {
            const vpGroup *g = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, i);

            fits[i] = false;
            if (g->npus < per)
                continue;
            pickInGroup(ctx, g, smt, tiers[t], per, &picks[i]);
            fits[i] = picks[i].n == per;
        }
        found = chooseNodes(ctx, picks, fits, nodes, chosen, &onepkg);
    }
    if (found) {
        pickReset(&best->pick);
        for (unsigned k = 0; k < nodes; k++) {
            const vpPick *p = &picks[chosen[k]];

            memcpy(best->pick.pus + best->pick.n, p->pus, sizeof(int) * p->n);
            best->pick.n += p->n;
            g_array_append_vals(best->pick.reserved, p->reserved->data, p->reserved->len);
            best->pick.nshared += p->nshared;
            best->pick.leftover += p->leftover;
        }
        best->level = onepkg ? VP_LEVEL_PACKAGE : VP_LEVEL_HOST;
        best->index = onepkg ? packageOfNode(ctx, chosen[0]) : -1;
    }
    for (int i = 0; i < nn; i++)
        vpPlacerPickClear(&picks[i]);
    return found;
}

bool
vpPlacerSearch(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n, vpChoice *best)
{
    vpLevel levels[4];
    int nlevels = vpPlacerLevels(ctx->topo, locality, levels);
    int ntiers;
    const vpTier *tiers = tiersFor(ctx, smt, &ntiers);
    int local = smt == VP_SMT_SPREAD ? nodeLevels(levels, nlevels) : 0;
    unsigned split = vpLocalitySplit(locality);

    if (split) {
        g_autofree char *impossible = vpPlacerSplitImpossible(ctx, split, n);

        return !impossible && searchSplit(ctx, smt, split, n, best);
    }
    if (local > 0) {
        /* free cores, then own siblings, inside a node; then the same wider */
        if (searchSpreadInNode(ctx, levels, local, n, best) ||
            searchTiers(ctx, smt, tiers, 2, levels, local, nlevels, n, best) ||
            searchTiers(ctx, smt, tiers + 2, ntiers - 2, levels, 0, nlevels, n, best))
            return true;
    } else if (searchTiers(ctx, smt, tiers, ntiers, levels, 0, nlevels, n, best)) {
        return true;
    }
    /* Siblings of other trust groups, only once no group of any level has room. */
    if (smt == VP_SMT_SPREAD)
        return searchLevel(ctx, levels[nlevels - 1], smt, TIER_SPREAD_ANY, n, best);
    if (smt == VP_SMT_PACK)
        return searchLevel(ctx, levels[nlevels - 1], smt, TIER_PACK_ANY, n, best);
    if (smt == VP_SMT_SHARE)
        return searchLevel(ctx, levels[nlevels - 1], smt, TIER_SHARE_ANY, n, best);
    return false;
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

    pickReset(&choice->pick);
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
