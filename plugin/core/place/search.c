/*
 * The search for a VM's cores (placer.c, steps 2 and 3): tier by tier, the locality levels
 * smallest first, the best group of each level (corepick.c says what a group gives); a VM
 * over several NUMA nodes in balanced shares, and locality="numa:N" as N cells on nodes
 * of their own.
 */
#include "core/place/placerpriv.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

/* Appends sub's PUs and figures to pick. */
static void
pickAppend(vpPick *pick, const vpPick *sub)
{
    memcpy(pick->pus + pick->n, sub->pus, sizeof(int) * sub->n);
    pick->n += sub->n;
    g_array_append_vals(pick->reserved, sub->reserved->data, sub->reserved->len);
    pick->nshared += sub->nshared;
    pick->nwhole += sub->nwhole;
}

/* The NUMA nodes of group g into nodes (ascending), when g is made of two or more whole
 * nodes; else 0. */
static int
spannedNodes(const vpCtx *ctx, const vpGroup *g, int *nodes)
{
    int nn = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA), k = 0;
    g_autofree int *count = g_new0(int, MAX(nn, 1));

    for (int i = 0; i < g->ncores; i++) {
        int node = vpTopologyCore(ctx->topo, g->cores[i])->group[VP_LEVEL_NUMA];

        if (node < 0)
            return 0;
        count[node]++;
    }
    for (int node = 0; node < nn; node++) {
        if (!count[node])
            continue;
        if (count[node] != vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, node)->ncores)
            return 0;
        nodes[k++] = node;
    }
    return k >= 2 ? k : 0;
}

/* Whether a VM of smt spans nodes in balanced shares at tier: only where the tier takes no
 * other cookie's sibling. Where it does (share's, and the last tiers), a node's share could
 * put a vCPU beside a stranger while another node has a free core; there the group's own
 * walk, free cores first host-wide, decides. */
static bool
spansBalanced(vpSmt smt, vpTier tier)
{
    return smt != VP_SMT_SHARE && tier != TIER_SPREAD_ANY && tier != TIER_PACK_ANY &&
           tier != TIER_SHARE_ANY;
}

/* A VM over several NUMA nodes of group g, as kubelet's distribute-cpus-across-numa
 * splits a container: on the fewest nodes that hold it at this tier (the roomiest first),
 * in shares as equal as each node's room allows, whole guest cores at a time, so that no
 * half of the guest waits on a crowded node and each node keeps room. A node's room is
 * what its own pick at this tier takes. */
static void
pickSpanned(const vpCtx *ctx, const vpGroup *g, const int *nodes, int nnodes, vpSmt smt,
            vpTier tier, int n, vpPick *pick)
{
    int t = ctx->req->threads > 1 && n % (int)ctx->req->threads == 0 ? (int)ctx->req->threads : 1;
    g_autofree int *cap = g_new0(int, nnodes);
    g_autofree int *give = g_new0(int, nnodes);
    g_autofree int *order = g_new(int, nnodes);
    int used = 0, room = 0, left = n / t, freepus = 0, j;
    vpPick sub;

    vpPlacerPickInit(&sub, n);
    for (int k = 0; k < nnodes; k++) {
        vpPlacerPickInGroup(ctx, vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, nodes[k]), smt, tier, n,
                            &sub);
        cap[k] = sub.n / t;
        /* roomiest first, node order among equals */
        for (j = k; j > 0 && cap[order[j - 1]] < cap[k]; j--)
            order[j] = order[j - 1];
        order[j] = k;
    }
    while (used < nnodes && room < left)
        room += cap[order[used++]];
    vpPlacerPickReset(pick);
    for (bool progress = room >= left; left > 0 && progress;) {
        progress = false;
        for (j = 0; j < used && left > 0; j++) {
            if (give[order[j]] < cap[order[j]]) {
                give[order[j]]++;
                left--;
                progress = true;
            }
        }
    }
    for (int k = 0; k < nnodes && left == 0; k++) {
        if (!give[k])
            continue;
        vpPlacerPickInGroup(ctx, vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, nodes[k]), smt, tier,
                            give[k] * t, &sub);
        if (sub.n < give[k] * t)
            break;
        pickAppend(pick, &sub);
    }
    vpPlacerPickClear(&sub);
    for (int i = 0; i < g->ncores; i++)
        freepus += ctx->nfree[g->cores[i]];
    pick->leftover = freepus - pick->n - (int)pick->reserved->len;
}

static bool
searchLevel(const vpCtx *ctx, vpLevel level, vpSmt smt, vpTier tier, int n, vpChoice *best)
{
    vpPick cand;
    bool found = false;
    g_autofree int *nodes = g_new(int, MAX(vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA), 1));

    vpPlacerPickInit(&cand, n);
    for (int gi = 0; gi < vpTopologyNGroups(ctx->topo, level); gi++) {
        const vpGroup *g = vpTopologyGroup(ctx->topo, level, gi);
        int nnodes =
            level > VP_LEVEL_NUMA && spansBalanced(smt, tier) ? spannedNodes(ctx, g, nodes) : 0;

        if (g->npus < n)
            continue;
        if (okFree(ctx, g) < n) {
            /* no pick can fill it; its walking order is still owed to this snapshot, as a
             * pick would have fixed it, so that later searches of this placement see the
             * same */
            vpPlacerOrderOwe(ctx, g, smt < VP_SMT_LAST ? smt : VP_SMT_SHARE);
            continue;
        }
        if (nnodes)
            pickSpanned(ctx, g, nodes, nnodes, smt, tier, n, &cand);
        else
            vpPlacerPickInGroup(ctx, g, smt, tier, n, &cand);
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

/* The nodes to use, into chosen: the first nbig for the larger cells (picks[1], fits[1]),
 * the rest for the smaller (picks[0], fits[0]), each part ascending: within one package
 * when one has room for every cell, the package whose chosen nodes share fewest cores and
 * leave the fewest free PUs behind (nodes of one package are nearer each other); else the
 * best nodes host-wide. Best fit as in vpPlacerSearch(). */
static bool
chooseNodes(const vpCtx *ctx, vpPick *const picks[2], bool *const fits[2], unsigned nodes,
            unsigned nbig, int *chosen, bool *onepkg)
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
            const vpPick *pk = picks[k < nbig];
            const bool *ft = fits[k < nbig];
            int best = -1;

            for (int i = 0; i < nn; i++) {
                if (ft[i] && !used[i] && (host || packageOfNode(ctx, i) == p) &&
                    (best < 0 || better(&pk[i], &pk[best])))
                    best = i;
            }
            if (best < 0)
                break;
            used[best] = true;
            pick[k] = best;
            score += (gint64)pk[best].nshared * INT_MAX + pk[best].leftover;
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
    qsort(chosen, nbig, sizeof(int), compareInts);
    qsort(chosen + nbig, nodes - nbig, sizeof(int), compareInts);
    return true;
}

/* Tier by tier as vpPlacerSearch(), the first tier at which N nodes can each take a cell
 * wins. Cells of whole guest cores differ by at most one guest core (the first ones
 * larger, vpLocalityCellVcpus()), so a block size of each kind is tried on every node. */
static bool
searchSplit(const vpCtx *ctx, vpSmt smt, unsigned nodes, int n, vpChoice *best)
{
    int nn = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);
    int size[2], ntiers, chosen[VP_LOCALITY_SPLIT_MAX];
    unsigned nbig = 0;
    const vpTier *base = tiersFor(ctx, smt, &ntiers);
    vpTier tiers[8];
    g_autofree vpPick *small = g_new0(vpPick, nn);
    g_autofree vpPick *big = g_new0(vpPick, nn);
    g_autofree bool *fits_small = g_new0(bool, nn);
    g_autofree bool *fits_big = g_new0(bool, nn);
    vpPick *const picks[2] = {small, big};
    bool *const fits[2] = {fits_small, fits_big};
    bool found = false, onepkg = false;

    size[1] = (int)vpLocalityCellVcpus(n, ctx->req->threads, nodes, 0);
    size[0] = (int)vpLocalityCellVcpus(n, ctx->req->threads, nodes, nodes - 1);
    for (unsigned k = 0; size[1] != size[0] && k < nodes; k++)
        nbig += (int)vpLocalityCellVcpus(n, ctx->req->threads, nodes, k) == size[1];
    memcpy(tiers, base, sizeof(vpTier) * ntiers);
    if (smt == VP_SMT_SPREAD)
        tiers[ntiers++] = TIER_SPREAD_ANY;
    else if (smt == VP_SMT_PACK)
        tiers[ntiers++] = TIER_PACK_ANY;
    else if (smt == VP_SMT_SHARE)
        tiers[ntiers++] = TIER_SHARE_ANY;
    for (int i = 0; i < nn; i++) {
        vpPlacerPickInit(&small[i], size[0]);
        vpPlacerPickInit(&big[i], size[1]);
    }
    for (int t = 0; t < ntiers && !found; t++) {
        for (int i = 0; i < nn; i++) {
            const vpGroup *g = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, i);

            for (int s = 0; s < (nbig ? 2 : 1); s++) {
                fits[s][i] = false;
                if (g->npus < size[s])
                    continue;
                vpPlacerPickInGroup(ctx, g, smt, tiers[t], size[s], &picks[s][i]);
                fits[s][i] = picks[s][i].n == size[s];
            }
        }
        found = chooseNodes(ctx, picks, fits, nodes, nbig, chosen, &onepkg);
    }
    if (found) {
        vpPlacerPickReset(&best->pick);
        for (unsigned k = 0; k < nodes; k++) {
            const vpPick *p = &picks[k < nbig][chosen[k]];

            memcpy(best->pick.pus + best->pick.n, p->pus, sizeof(int) * p->n);
            best->pick.n += p->n;
            g_array_append_vals(best->pick.reserved, p->reserved->data, p->reserved->len);
            best->pick.nshared += p->nshared;
            best->pick.leftover += p->leftover;
        }
        best->level = onepkg ? VP_LEVEL_PACKAGE : VP_LEVEL_HOST;
        best->index = onepkg ? packageOfNode(ctx, chosen[0]) : -1;
    }
    for (int i = 0; i < nn; i++) {
        vpPlacerPickClear(&small[i]);
        vpPlacerPickClear(&big[i]);
    }
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
