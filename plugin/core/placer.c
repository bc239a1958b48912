/*
 * The placer, in the manner of select_idle_sibling(): small questions asked at one
 * topology level at a time.
 *
 * 1. Snapshot every core once: how many usable PUs are free, and who holds the others
 *    (nobody, domains that may share the requester's cookie, VMs that said smt=share,
 *    or strangers).
 * 2. Try the policy's tiers from strictest to loosest, e.g. for spread: a free core per
 *    vCPU, then the VM's own siblings, then siblings of its cookie group. Within a tier, walk
 *    locality levels from the smallest groups up (auto: L3, NUMA node, package, host,
 *    ordered by group size since an L3 can be larger than a NUMA node), and among the
 *    groups where the tier fits take the best fit (fewest free PUs left behind) so that big
 *    holes stay whole for big VMs. Sibling avoidance thus outranks locality: a sibling is
 *    shared only when the host has no free core for the vCPU, as DESIGN.md defines spread.
 * 3. Only when no group of any level fits may spread and share use siblings of other trust
 *    groups: that is what "no two untrusted VMs on one core while a free core exists" means.
 * 4. Otherwise refuse, with the figures an operator needs, or, with unmet=degrade, relax
 *    the policy one step (isolate/pack -> spread, forced locality -> auto) and say so.
 *    A share domain that finds no free PU at all may then time-share PUs that hold only
 *    vCPUs of other share domains that also said unmet=degrade, least shared first: the
 *    overcommit operators of shared CPU pools expect, and what the rebalancer later undoes
 *    when room appears.
 */
#include "core/placer.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    REL_NONE = 0, /* no PU of the core is held */
    REL_GROUP,    /* held only by domains that may share the requester's cookie */
    REL_SHARE,    /* held by VMs that asked for smt=share (they accept any neighbour) */
    REL_FOREIGN,  /* held by a VM that may not share the cookie */
} vpRel;

typedef enum {
    TIER_WHOLE,        /* isolate, pack: whole free cores only */
    TIER_SPREAD,       /* a free core per vCPU */
    TIER_SPREAD_OWN,   /* ... then the VM's own siblings */
    TIER_SPREAD_GROUP, /* ... then siblings of domains that share its cookie */
    TIER_SPREAD_ANY,   /* ... then any free sibling (no free core left anywhere) */
    TIER_SHARE,        /* fill cores of the group / of share VMs, then whole free cores */
    TIER_SHARE_ANY,    /* ... then any free PU */
} vpTier;

typedef struct {
    const vpTopology *topo;
    const vpLedger *ledger;
    const vpRequest *req;
    const vpMove *moves; /* applied to the ledger's holdings first (compaction) */
    unsigned nmoves;
    int ncores;
    int *nfree; /* usable free PUs per core */
    int *nusable;
    vpRel *rel;
    bool *pufree;                    /* per logical PU: usable and not held */
    GHashTable *orders[VP_SMT_LAST]; /* group -> its cores in walking order (orderCores) */
    /* NUMA and cpuset constraints (see "Constraints" below): per logical PU whether a vCPU
     * of the part being placed may take it (NULL: any), and per core how many free PUs
     * are such. */
    const bool *ok;
    int *nok;
} vpCtx;

typedef struct {
    int n;            /* PUs picked */
    int *pus;         /* logical PU per vCPU */
    int nshared;      /* vCPUs that share a core with another vCPU of the VM */
    int leftover;     /* free PUs the group keeps */
    GArray *reserved; /* logical PUs held idle */
} vpPick;

static void
pickInit(vpPick *pick, unsigned n)
{
    memset(pick, 0, sizeof(*pick));
    pick->pus = g_new(int, n);
    pick->reserved = g_array_new(FALSE, FALSE, sizeof(int));
}

static void
pickClear(vpPick *pick)
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
    pick->leftover = 0;
    g_array_set_size(pick->reserved, 0);
}

/* Siblings run one cookie's threads at a time, so a core is shared only by domains that may
 * share a cookie: one trust group that asked for a group cookie, or one trust group that
 * asked for none. Members of one group with a cookie each would force each other idle. */
static bool
sameCookie(const vpPolicy *a, const vpPolicy *b)
{
    return a->group && b->group && strcmp(a->group, b->group) == 0 &&
           a->coresched == b->coresched && a->coresched != VP_CORESCHED_VM;
}

static vpRel
relationOf(const vpCtx *ctx, const vpPlan *owner)
{
    if (sameCookie(&ctx->req->policy, &owner->policy))
        return REL_GROUP;
    if (owner->policy.smt == VP_SMT_SHARE)
        return REL_SHARE;
    return REL_FOREIGN;
}

vpOwner
vpOwnerAfterMoves(const vpTopology *topo, const vpLedger *ledger, const vpMove *moves,
                  unsigned nmoves, int pu)
{
    vpOwner owner = ledger ? vpLedgerOwner(ledger, pu) : (vpOwner){NULL, VP_OWN_NONE, -1};
    unsigned os = vpTopologyPU(topo, pu)->os;

    for (unsigned i = 0; i < nmoves; i++) {
        if (moves[i].from == os && owner.domain && owner.kind == VP_OWN_VCPU &&
            owner.vcpu == (int)moves[i].vcpu && strcmp(owner.domain, moves[i].domain) == 0)
            owner = (vpOwner){NULL, VP_OWN_NONE, -1};
        if (moves[i].to == os)
            owner = (vpOwner){moves[i].domain, VP_OWN_VCPU, (int)moves[i].vcpu};
    }
    return owner;
}

static bool
movedPU(const vpCtx *ctx, int pu)
{
    unsigned os = vpTopologyPU(ctx->topo, pu)->os;

    for (unsigned i = 0; i < ctx->nmoves; i++) {
        if (ctx->moves[i].from == os || ctx->moves[i].to == os)
            return true;
    }
    return false;
}

static void
ctxInit(vpCtx *ctx, const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
        const vpMove *moves, unsigned nmoves)
{
    g_autoptr(GHashTable) rel_by_domain = g_hash_table_new(NULL, NULL);

    ctx->topo = topo;
    ctx->ledger = ledger;
    ctx->req = req;
    ctx->moves = moves;
    ctx->nmoves = nmoves;
    ctx->ncores = vpTopologyNCores(topo);
    ctx->nfree = g_new0(int, ctx->ncores);
    ctx->nusable = g_new0(int, ctx->ncores);
    ctx->rel = g_new0(vpRel, ctx->ncores);
    ctx->pufree = g_new0(bool, vpTopologyNPUs(topo));
    for (int i = 0; i < VP_SMT_LAST; i++)
        ctx->orders[i] = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    ctx->nok = g_new0(int, ctx->ncores);

    for (int c = 0; c < ctx->ncores; c++) {
        const vpCore *core = vpTopologyCore(topo, c);

        for (int i = 0; i < core->npus; i++) {
            int pu = core->pus[i];
            vpOwner owner = vpOwnerAfterMoves(topo, ledger, moves, nmoves, pu);
            gpointer r;

            if (!owner.domain) {
                if (vpTopologyPU(topo, pu)->usable) {
                    ctx->nusable[c]++;
                    ctx->nfree[c]++;
                    ctx->pufree[pu] = true;
                }
                continue;
            }
            ctx->nusable[c] += vpTopologyPU(topo, pu)->usable;
            if (!g_hash_table_lookup_extended(rel_by_domain, owner.domain, NULL, &r)) {
                const vpPlan *plan = vpLedgerLookup(ledger, owner.domain);

                r = GINT_TO_POINTER(plan ? relationOf(ctx, plan) : REL_FOREIGN);
                g_hash_table_insert(rel_by_domain, (gpointer)owner.domain, r);
            }
            ctx->rel[c] = MAX(ctx->rel[c], (vpRel)GPOINTER_TO_INT(r));
        }
        ctx->nok[c] = ctx->nfree[c];
    }
}

static void
ctxClear(vpCtx *ctx)
{
    g_free(ctx->nfree);
    g_free(ctx->nusable);
    g_free(ctx->rel);
    g_free(ctx->pufree);
    for (int i = 0; i < VP_SMT_LAST; i++) {
        if (ctx->orders[i])
            g_hash_table_destroy(ctx->orders[i]);
    }
    g_free(ctx->nok);
}

/* A core every PU of which is usable and free: isolate and pack own such cores. */
static bool
coreWhole(const vpCtx *ctx, int c)
{
    return ctx->rel[c] == REL_NONE && ctx->nok[c] > 0 &&
           ctx->nfree[c] == vpTopologyCore(ctx->topo, c)->npus;
}

/* A core no VM holds anything on (housekeeping siblings do not count against it). */
static bool
coreIdle(const vpCtx *ctx, int c)
{
    return ctx->rel[c] == REL_NONE && ctx->nok[c] > 0;
}

static void
takeFree(const vpCtx *ctx, int c, int limit, vpPick *pick, int n)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

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

/* What one core offers a policy: a whole core for isolate, its PUs for pack when whole, its
 * free PUs for spread when no VM holds it, its free PUs for share unless a stranger holds it. */
static int
coreRoom(const vpCtx *ctx, int c, vpSmt smt)
{
    switch (smt) {
    case VP_SMT_ISOLATE:
        return coreWhole(ctx, c);
    case VP_SMT_PACK:
        return coreWhole(ctx, c) ? ctx->nfree[c] : 0;
    case VP_SMT_SPREAD:
        return coreIdle(ctx, c) ? ctx->nfree[c] : 0;
    default:
        return ctx->rel[c] == REL_FOREIGN ? 0 : ctx->nfree[c];
    }
}

typedef struct {
    const vpCtx *ctx;
    const int *node_room; /* per NUMA group index */
    const int *l3_room;   /* per L3 group index */
} vpOrderKey;

static int
compareCores(gconstpointer a, gconstpointer b, gpointer data)
{
    const vpOrderKey *key = data;
    const vpCore *ca = vpTopologyCore(key->ctx->topo, *(const int *)a);
    const vpCore *cb = vpTopologyCore(key->ctx->topo, *(const int *)b);
    int na = key->node_room[ca->group[VP_LEVEL_NUMA]];
    int nb = key->node_room[cb->group[VP_LEVEL_NUMA]];
    int la = key->l3_room[ca->group[VP_LEVEL_L3]];
    int lb = key->l3_room[cb->group[VP_LEVEL_L3]];

    if (na != nb)
        return nb - na;
    if (la != lb)
        return lb - la;
    return *(const int *)a - *(const int *)b;
}

/* The group's cores, roomiest NUMA node first and inside it roomiest L3 first, then in
 * topology order: a VM that must spill over several nodes or L3s then takes the fewest, not
 * the first ones with any room. Groups no larger than an L3 keep topology order. The room
 * depends only on the snapshot and the policy, so each group is sorted once per placement
 * (the ctx owns the result). */
static const int *
orderCores(const vpCtx *ctx, const vpGroup *g, vpSmt smt)
{
    int nnodes = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);
    int nl3 = vpTopologyNGroups(ctx->topo, VP_LEVEL_L3);
    g_autofree int *node_room = NULL;
    g_autofree int *l3_room = NULL;
    vpOrderKey key = {ctx, NULL, NULL};
    int *order;

    if (g->level <= VP_LEVEL_L3 || g->ncores < 2)
        return g->cores;
    if ((order = g_hash_table_lookup(ctx->orders[smt], g)))
        return order;
    order = g_memdup2(g->cores, sizeof(int) * g->ncores);
    g_hash_table_insert(ctx->orders[smt], (gpointer)g, order);
    node_room = g_new0(int, MAX(nnodes, 1));
    l3_room = g_new0(int, MAX(nl3, 1));
    for (int i = 0; i < g->ncores; i++) {
        const vpCore *core = vpTopologyCore(ctx->topo, g->cores[i]);
        int room = coreRoom(ctx, g->cores[i], smt);

        if (core->group[VP_LEVEL_NUMA] >= 0)
            node_room[core->group[VP_LEVEL_NUMA]] += room;
        if (core->group[VP_LEVEL_L3] >= 0)
            l3_room[core->group[VP_LEVEL_L3]] += room;
    }
    key.node_room = node_room;
    key.l3_room = l3_room;
    g_qsort_with_data(order, g->ncores, sizeof(int), compareCores, &key);
    return order;
}

static void
pickIsolate(const vpCtx *ctx, const vpGroup *g, int n, vpPick *pick)
{
    for (int i = 0; i < g->ncores && pick->n < n; i++) {
        int c = g->cores[i];

        if (!coreWhole(ctx, c))
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

            if (!coreWhole(ctx, c) || vpTopologyCore(ctx->topo, c)->npus != size)
                continue;
            takeFree(ctx, c, size, pick, n);
            reserveRest(ctx, c, pick);
        }
    }
}

static void
pickSpread(const vpCtx *ctx, const vpGroup *g, int n, vpTier tier, vpPick *pick)
{
    g_autofree int *taken = g_new(int, MIN(g->ncores, n));
    int ntaken = 0;
    bool progress = true;

    for (int i = 0; i < g->ncores && pick->n < n; i++) {
        if (coreIdle(ctx, g->cores[i])) {
            takeFree(ctx, g->cores[i], 1, pick, n);
            taken[ntaken++] = g->cores[i];
        }
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
            if (ctx->rel[g->cores[i]] == REL_GROUP)
                takeFree(ctx, g->cores[i], INT_MAX, pick, n);
        }
    }
    if (tier >= TIER_SPREAD_ANY) {
        for (int rel = REL_SHARE; rel <= REL_FOREIGN; rel++) {
            for (int i = 0; i < g->ncores && pick->n < n; i++) {
                if (ctx->rel[g->cores[i]] == (vpRel)rel)
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
nextShareCore(const vpCtx *ctx, const vpGroup *g, vpRel rel, int want, const bool *done)
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

static void
pickShare(const vpCtx *ctx, const vpGroup *g, int n, vpTier tier, vpPick *pick)
{
    static const vpRel order[] = {REL_GROUP, REL_SHARE, REL_NONE, REL_FOREIGN};
    g_autofree bool *done = g_new0(bool, g->ncores);

    for (gsize r = 0; r < G_N_ELEMENTS(order); r++) {
        int i;

        if (order[r] == REL_FOREIGN && tier < TIER_SHARE_ANY)
            break;
        while (pick->n < n && (i = nextShareCore(ctx, g, order[r], n - pick->n, done)) >= 0) {
            done[i] = true;
            takeFree(ctx, g->cores[i], INT_MAX, pick, n);
        }
    }
}

static void
pickInGroup(const vpCtx *ctx, const vpGroup *g, vpSmt smt, vpTier tier, int n, vpPick *pick)
{
    vpGroup view = *g;
    int freepus = 0;

    view.cores = (int *)orderCores(ctx, g, smt < VP_SMT_LAST ? smt : VP_SMT_SHARE);
    pickReset(pick);
    switch (smt) {
    case VP_SMT_ISOLATE:
        pickIsolate(ctx, &view, n, pick);
        break;
    case VP_SMT_PACK:
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
tiersFor(vpSmt smt, int *ntiers)
{
    static const vpTier whole[] = {TIER_WHOLE};
    static const vpTier spread[] = {TIER_SPREAD, TIER_SPREAD_OWN, TIER_SPREAD_GROUP};
    static const vpTier share[] = {TIER_SHARE};

    switch (smt) {
    case VP_SMT_ISOLATE:
    case VP_SMT_PACK:
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

static bool
better(const vpPick *a, const vpPick *b)
{
    if (a->nshared != b->nshared)
        return a->nshared < b->nshared;
    return a->leftover < b->leftover;
}

static vpLevel
localityLevel(vpLocality locality)
{
    switch (locality) {
    case VP_LOCALITY_L3:
        return VP_LEVEL_L3;
    case VP_LOCALITY_NUMA:
        return VP_LEVEL_NUMA;
    case VP_LOCALITY_PACKAGE:
        return VP_LEVEL_PACKAGE;
    default:
        return VP_LEVEL_HOST;
    }
}

/* Locality levels to try, smallest groups first. */
int
vpPlacerLevels(const vpTopology *topo, vpLocality locality, vpLevel *out)
{
    static const vpLevel all[] = {VP_LEVEL_L3, VP_LEVEL_NUMA, VP_LEVEL_PACKAGE, VP_LEVEL_HOST};
    int n = 0;

    if (locality != VP_LOCALITY_AUTO) {
        out[0] = localityLevel(locality);
        return 1;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(all); i++)
        out[n++] = all[i];
    /* insertion sort by PUs per group: tiny n, and stable */
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0; j--) {
            double a = (double)vpTopologyNPUs(topo) / vpTopologyNGroups(topo, out[j - 1]);
            double b = (double)vpTopologyNPUs(topo) / vpTopologyNGroups(topo, out[j]);

            if (b >= a)
                break;
            vpLevel t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    }
    return n;
}

typedef struct {
    vpLevel level;
    int index;
    vpPick pick;
} vpChoice;

static bool
searchLevel(const vpCtx *ctx, vpLevel level, vpSmt smt, vpTier tier, int n, vpChoice *best)
{
    vpPick cand;
    bool found = false;

    pickInit(&cand, n);
    for (int gi = 0; gi < vpTopologyNGroups(ctx->topo, level); gi++) {
        const vpGroup *g = vpTopologyGroup(ctx->topo, level, gi);

        if (g->npus < n)
            continue;
        pickInGroup(ctx, g, smt, tier, n, &cand);
        if (cand.n < n || (found && !better(&cand, &best->pick)))
            continue;
        vpPick tmp = best->pick;
        best->pick = cand;
        cand = tmp;
        best->level = level;
        best->index = gi;
        found = true;
    }
    pickClear(&cand);
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

static char *splitImpossible(const vpCtx *ctx, unsigned nodes, int n);
static bool searchSplit(const vpCtx *ctx, vpSmt smt, unsigned nodes, int n, vpChoice *best);
static char *splitRefusal(const vpCtx *ctx, vpSmt smt, unsigned nodes, int n);

static bool
search(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n, vpChoice *best)
{
    vpLevel levels[4];
    int nlevels = vpPlacerLevels(ctx->topo, locality, levels);
    int ntiers;
    const vpTier *tiers = tiersFor(smt, &ntiers);
    int local = smt == VP_SMT_SPREAD ? nodeLevels(levels, nlevels) : 0;
    unsigned split = vpLocalitySplit(locality);

    if (split) {
        g_autofree char *impossible = splitImpossible(ctx, split, n);

        return !impossible && searchSplit(ctx, smt, split, n, best);
    }
    if (local > 0 && local < nlevels) {
        /* free cores, then own siblings, inside a node; then the same wider */
        if (searchTiers(ctx, smt, tiers, 2, levels, 0, local, n, best) ||
            searchTiers(ctx, smt, tiers, 2, levels, local, nlevels, n, best) ||
            searchTiers(ctx, smt, tiers + 2, ntiers - 2, levels, 0, nlevels, n, best))
            return true;
    } else if (searchTiers(ctx, smt, tiers, ntiers, levels, 0, nlevels, n, best)) {
        return true;
    }
    /* Siblings of other trust groups, only once no group of any level has room. */
    if (smt == VP_SMT_SPREAD)
        return searchLevel(ctx, levels[nlevels - 1], smt, TIER_SPREAD_ANY, n, best);
    if (smt == VP_SMT_SHARE)
        return searchLevel(ctx, levels[nlevels - 1], smt, TIER_SHARE_ANY, n, best);
    return false;
}

static const char *
levelPhrase(vpLevel level)
{
    switch (level) {
    case VP_LEVEL_L3:
        return "L3 group";
    case VP_LEVEL_NUMA:
        return "NUMA node";
    case VP_LEVEL_PACKAGE:
        return "package";
    case VP_LEVEL_CLUSTER:
        return "cluster";
    default:
        return "host";
    }
}

/* What the policy counts as room in one group: whole cores for isolate, PUs of whole cores
 * for pack, free PUs otherwise. */
static int
roomIn(const vpCtx *ctx, const vpGroup *g, vpSmt smt)
{
    int room = 0;

    for (int i = 0; i < g->ncores; i++) {
        int c = g->cores[i];

        if (smt == VP_SMT_ISOLATE)
            room += coreWhole(ctx, c);
        else if (smt == VP_SMT_PACK)
            room += coreWhole(ctx, c) ? ctx->nok[c] : 0;
        else
            room += ctx->nok[c];
    }
    return room;
}

static char *
refusalText(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n)
{
    g_autoptr(GString) s = g_string_new(NULL);
    vpLevel levels[4];
    int nlevels = vpPlacerLevels(ctx->topo, locality, levels);
    const char *unit = smt == VP_SMT_ISOLATE ? "free whole cores"
                       : smt == VP_SMT_PACK  ? "free PUs on whole cores"
                                             : "free PUs";
    unsigned split = vpLocalitySplit(locality);

    if (split) {
        char *impossible = splitImpossible(ctx, split, n);

        return impossible ? impossible : splitRefusal(ctx, smt, split, n);
    }
    g_string_printf(s, "%d vCPUs with smt=%s need %d %s", n, vpSmtName(smt), n, unit);
    if (locality != VP_LOCALITY_AUTO)
        g_string_append_printf(s, " within one %s", levelPhrase(levels[0]));
    for (int l = 0; l < nlevels; l++) {
        int best = 0;

        for (int gi = 0; gi < vpTopologyNGroups(ctx->topo, levels[l]); gi++)
            best = MAX(best, roomIn(ctx, vpTopologyGroup(ctx->topo, levels[l], gi), smt));
        g_string_append_printf(s, "%s the %s%s has %d", l == 0 ? ";" : ",",
                               levels[l] == VP_LEVEL_HOST ? "" : "best ", levelPhrase(levels[l]),
                               best);
    }
    return g_string_free(g_steal_pointer(&s), FALSE);
}

/* --- locality="numa:N": N equal blocks of vCPUs, each on a NUMA node of its own --- */

/* Why a split cannot be asked of this host at all, or NULL: N must divide the vCPUs and
 * the host must have N nodes. */
static char *
splitImpossible(const vpCtx *ctx, unsigned nodes, int n)
{
    int have = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);

    if (n % (int)nodes != 0)
        return g_strdup_printf("locality=numa:%u splits the VM into %u equal groups, but %u "
                               "does not divide its %d vCPUs",
                               nodes, nodes, nodes, n);
    if (have < (int)nodes)
        return g_strdup_printf("locality=numa:%u needs %u NUMA nodes; the host has %d", nodes,
                               nodes, have);
    return NULL;
}

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
 * nearer each other); else the best nodes host-wide. Best fit as in search(). */
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

/* Tier by tier as search(), the first tier at which N nodes can each take a block wins. */
static bool
searchSplit(const vpCtx *ctx, vpSmt smt, unsigned nodes, int n, vpChoice *best)
{
    int nn = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA), per = n / (int)nodes;
    int ntiers, chosen[VP_LOCALITY_SPLIT_MAX];
    const vpTier *base = tiersFor(smt, &ntiers);
    vpTier tiers[8];
    g_autofree vpPick *picks = g_new0(vpPick, nn);
    g_autofree bool *fits = g_new0(bool, nn);
    bool found = false, onepkg = false;

    memcpy(tiers, base, sizeof(vpTier) * ntiers);
    if (smt == VP_SMT_SPREAD)
        tiers[ntiers++] = TIER_SPREAD_ANY;
    else if (smt == VP_SMT_SHARE)
        tiers[ntiers++] = TIER_SHARE_ANY;
    for (int i = 0; i < nn; i++)
        pickInit(&picks[i], per);
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
        pickClear(&picks[i]);
    return found;
}

static char *
splitRefusal(const vpCtx *ctx, vpSmt smt, unsigned nodes, int n)
{
    g_autoptr(GString) s = g_string_new(NULL);
    int per = n / (int)nodes;
    const char *unit = smt == VP_SMT_ISOLATE ? "free whole cores"
                       : smt == VP_SMT_PACK  ? "free PUs on whole cores"
                                             : "free PUs";

    g_string_printf(s,
                    "%d vCPUs with smt=%s and locality=numa:%u need %u NUMA nodes with %d %s each",
                    n, vpSmtName(smt), nodes, nodes, per, unit);
    for (int i = 0; i < vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA); i++) {
        const vpGroup *g = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, i);

        g_string_append_printf(s, "%s node %u has %d", i ? "," : ";", g->os, roomIn(ctx, g, smt));
    }
    return g_string_free(g_steal_pointer(&s), FALSE);
}

/* Guest threads per core that line up with the host cores pack took: the largest divisor
 * of the smallest core's size that also divides the vCPU count. */
static void
packTopology(vpPlan *plan, const vpTopology *topo, const vpRequest *req, const vpChoice *choice)
{
    int smallest = vpTopologyMaxSMT(topo);
    int t;

    for (int i = 0; i < choice->pick.n; i++) {
        int core = vpTopologyPU(topo, choice->pick.pus[i])->core;

        smallest = MIN(smallest, vpTopologyCore(topo, core)->npus);
    }
    for (t = smallest; t > 1; t--) {
        if (smallest % t == 0 && plan->nvcpus % t == 0)
            break;
    }
    plan->guest_sockets = 1;
    plan->guest_cores = plan->nvcpus / t;
    plan->guest_threads = t;
    plan->topology_mismatch = req->threads > 0 && req->threads != (unsigned)t;
}

/* A free PU of core c that the pick neither runs a vCPU on nor holds idle. */
static int
spareOn(const vpCtx *ctx, int c, const vpPick *pick)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    for (int i = 0; i < core->npus; i++) {
        int pu = core->pus[i];
        bool used = false;

        for (int k = 0; k < pick->n; k++)
            used |= pick->pus[k] == pu;
        for (guint k = 0; k < pick->reserved->len; k++)
            used |= g_array_index(pick->reserved, int, k) == pu;
        if (ctx->pufree[pu] && !used && (!ctx->ok || ctx->ok[pu]))
            return pu;
    }
    return -1;
}

/* Where the dedicated emulator goes: a spare sibling the VM already holds idle (pack's odd
 * leftover), else a free sibling of one of its vCPUs, else a PU of an idle core, fewest free
 * PUs first so that whole cores stay whole. Never the sibling isolate keeps idle: that
 * sibling is what isolate promised. */
static bool
pickEmulatorPU(const vpCtx *ctx, vpPlan *plan, vpChoice *choice)
{
    const vpTopology *topo = ctx->topo;
    int os = -1;
    int best = -1;

    if (ctx->req->policy.smt != VP_SMT_ISOLATE)
        os = hwloc_bitmap_first(plan->reserved);
    for (int c = 0; c < ctx->ncores && os < 0; c++) {
        bool ours = false;
        int pu;

        for (int i = 0; i < choice->pick.n; i++)
            ours |= vpTopologyPU(topo, choice->pick.pus[i])->core == c;
        if (ours && (pu = spareOn(ctx, c, &choice->pick)) >= 0)
            os = vpTopologyPU(topo, pu)->os;
    }
    for (int c = 0; c < ctx->ncores && os < 0; c++) {
        if (coreIdle(ctx, c) && spareOn(ctx, c, &choice->pick) >= 0 &&
            (best < 0 || ctx->nfree[c] < ctx->nfree[best]))
            best = c;
    }
    if (os < 0 && best >= 0)
        os = vpTopologyPU(topo, spareOn(ctx, best, &choice->pick))->os;
    if (os < 0)
        return false;
    hwloc_bitmap_set(plan->reserved, os);
    hwloc_bitmap_only(plan->emulator, os);
    return true;
}

/* A PU whose every holder is a vCPU of an smt=share domain that itself accepts degrading:
 * only domains that consented to overcommit are given a time-sharing neighbour. */
static int
shareHolders(const vpCtx *ctx, int pu)
{
    unsigned n = ctx->ledger ? vpLedgerNOwners(ctx->ledger, pu) : 0;

    if (movedPU(ctx, pu))
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
static bool
pickOvercommit(const vpCtx *ctx, int n, vpChoice *choice)
{
    int npus = vpTopologyNPUs(ctx->topo);
    int maxholders = 0;

    pickReset(&choice->pick);
    for (int pu = 0; pu < npus; pu++)
        maxholders = MAX(maxholders, shareHolders(ctx, pu));
    for (int want = 0; want <= maxholders && choice->pick.n < n; want++) {
        for (int pu = 0; pu < npus && choice->pick.n < n; pu++) {
            if (vpTopologyPU(ctx->topo, pu)->usable && (!ctx->ok || ctx->ok[pu]) &&
                shareHolders(ctx, pu) == want)
                choice->pick.pus[choice->pick.n++] = pu;
        }
    }
    choice->level = VP_LEVEL_HOST;
    choice->index = -1;
    return choice->pick.n == n;
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

static gboolean
placeEmulator(const vpCtx *ctx, vpPlan *plan, vpChoice *choice, GError **error)
{
    hwloc_const_bitmap_t hk = vpTopologyHousekeeping(ctx->topo);

    for (unsigned i = 0; i < plan->nvcpus; i++)
        hwloc_bitmap_set(plan->emulator, plan->vcpu_pu[i]);
    hwloc_bitmap_or(plan->emulator, plan->emulator, plan->reserved);

    switch (ctx->req->policy.emulator) {
    case VP_EMULATOR_HOUSEKEEPING:
        if (!hwloc_bitmap_iszero(hk))
            hwloc_bitmap_copy(plan->emulator, hk);
        return TRUE;
    case VP_EMULATOR_DEDICATED:
        if (pickEmulatorPU(ctx, plan, choice))
            return TRUE;
        if (ctx->req->policy.unmet == VP_UNMET_REFUSE) {
            g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                        "emulator=dedicated needs one more free PU for domain '%s'; none is left",
                        plan->domain);
            return FALSE;
        }
        vpPlanDegrade(plan, "emulator=dedicated relaxed to emulator=vcpus: no free PU left");
        return TRUE;
    default:
        return TRUE;
    }
}

/* The domain's own multi-CPU <vcpupin>, <emulatorpin> and <iothreadpin>: kept as they are,
 * their CPUs held for it. Single-CPU vCPU pins are vcpu_pu themselves. */
static void
holdOwnPins(vpPlan *plan, const vpRequest *req)
{
    for (unsigned i = 0; i < req->max_vcpus; i++) {
        if (req->pins[i] && hwloc_bitmap_weight(req->pins[i]) > 1)
            hwloc_bitmap_or(plan->own, plan->own, req->pins[i]);
    }
    if (req->emulator_pin)
        hwloc_bitmap_or(plan->own, plan->own, req->emulator_pin);
    if (req->iothread_pin)
        hwloc_bitmap_or(plan->own, plan->own, req->iothread_pin);
}

/* A pinned domain's memory is recorded on its single-pinned vCPUs' nodes, in proportion,
 * as first touch puts it; with no single pin its node is not known and nothing is held. */
static void
pinnedMemory(const vpTopology *topo, vpPlan *plan, guint64 memory)
{
    unsigned n = 0, given = 0;

    for (unsigned i = 0; i < plan->nvcpus; i++)
        n += plan->vcpu_pu[i] >= 0;
    for (unsigned i = 0; i < plan->nvcpus && memory; i++) {
        int pu = plan->vcpu_pu[i] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[i]) : -1;
        const vpGroup *node;

        if (pu < 0)
            continue;
        node = vpTopologyGroup(topo, VP_LEVEL_NUMA, vpTopologyNodeOfPU(topo, pu));
        if (!node->made_up)
            vpPlanAddMemory(plan, node->os, memory / n + (given++ == 0 ? memory % n : 0));
    }
}

static vpPlan *
placePinned(const vpTopology *topo, const vpRequest *req)
{
    g_autoptr(vpPlan) plan = vpPlanNew(req->name, vpRequestPlanVcpus(req));

    vpPolicyCopy(&plan->policy, &req->policy);
    plan->group = g_strdup(req->policy.group);
    plan->how = VP_HOW_PINNED;
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        hwloc_const_bitmap_t pin = req->pins ? req->pins[i] : NULL;

        if (vpRequestOnline(req, i) && pin && hwloc_bitmap_weight(pin) == 1 &&
            vpTopologyPUByOS(topo, hwloc_bitmap_first(pin)) >= 0)
            plan->vcpu_pu[i] = hwloc_bitmap_first(pin);
    }
    if (req->emulator_pin)
        hwloc_bitmap_copy(plan->emulator, req->emulator_pin);
    holdOwnPins(plan, req);
    plan->page_size = req->hugepage_size;
    pinnedMemory(topo, plan, req->memory);
    return g_steal_pointer(&plan);
}

/*
 * Constraints: the domain's NUMA statements and its <vcpu cpuset>, applied around the tier
 * search above by masking the PUs a vCPU may take (ctx->ok). The domain is cut into parts:
 * one per guest NUMA cell (each on one host node, distinct nodes first), one per node of an
 * interleave nodeset (vCPUs spread evenly over it), else a single part placed by the
 * policy's own locality. A part's memory must fit the node(s) that take it: the node's
 * memory less the host reserve and what the ledger and the part's siblings hold (or the
 * node's huge page pool of the part's size: a guest cell's own <page nodeset>, else the
 * domain's). Nodes whose memory is unknown are no limit.
 */
typedef struct {
    unsigned n;
    unsigned *ids;         /* vCPU ids */
    guint64 memory;        /* bytes */
    hwloc_bitmap_t hard;   /* Linux node numbers the part must stay on, NULL: any */
    hwloc_bitmap_t prefer; /* tried first, NULL: none */
    bool one_node;
    int cell;     /* guest cell id, -1 */
    guint64 page; /* huge page size of a cell's own <page nodeset>, 0: the domain's */
} vpPart;

static guint64
partPage(const vpCtx *ctx, const vpPart *part)
{
    return part->page ? part->page : ctx->req->hugepage_size;
}

static void
partClear(vpPart *part)
{
    g_free(part->ids);
    g_clear_pointer(&part->hard, hwloc_bitmap_free);
    g_clear_pointer(&part->prefer, hwloc_bitmap_free);
}

static bool
hardMode(vpMemMode mode)
{
    return mode == VP_MEM_STRICT || mode == VP_MEM_RESTRICTIVE || mode == VP_MEM_INTERLEAVE;
}

/* Bytes still free for a domain of page size page on NUMA group g, G_MAXUINT64 when the
 * node's memory is unknown. */
static guint64
nodeFree(const vpCtx *ctx, const vpPlan *plan, int g, guint64 page)
{
    const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
    guint64 held = (ctx->ledger ? vpLedgerNodeMemory(ctx->ledger, node->os, page) : 0) +
                   vpPlanMemoryOnPages(plan, node->os, page);
    guint64 total = 0;

    if (!node->memory)
        return G_MAXUINT64;
    if (!page) {
        guint64 reserve = vpTopologyNodeReserve(ctx->topo);

        total = node->memory > reserve ? node->memory - reserve : 0;
    }
    for (unsigned i = 0; page && i < node->npools; i++) {
        if (node->pools[i].size == page)
            total = node->pools[i].size * node->pools[i].count;
    }
    return total > held ? total - held : 0;
}

static char *
bytesText(guint64 bytes)
{
    return bytes == G_MAXUINT64 ? g_strdup("unknown") : vpMemoryFormat(bytes);
}

/* The mask for one part: usable PUs inside the cpuset, on allowed nodes (hard, then the
 * given extra limits), whose node has need bytes free. The first try asks room for the
 * whole part on each node; the last asks none, and the split is checked once known. */
static bool *
partMask(const vpCtx *ctx, const vpPlan *plan, const vpPart *part, guint64 need,
         hwloc_const_bitmap_t only, hwloc_const_bitmap_t avoid, bool off_own)
{
    const vpTopology *topo = ctx->topo;
    int npus = vpTopologyNPUs(topo);
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    g_autofree bool *node_ok = g_new0(bool, nnodes);
    bool *ok = g_new0(bool, npus);

    for (int g = 0; g < nnodes; g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);
        node_ok[g] =
            (!part->hard || (!node->made_up && hwloc_bitmap_isset(part->hard, node->os))) &&
            (!only || (!node->made_up && hwloc_bitmap_isset(only, node->os))) &&
            (!avoid || node->made_up || !hwloc_bitmap_isset(avoid, node->os)) &&
            nodeFree(ctx, plan, g, partPage(ctx, part)) >= need;
    }
    for (int pu = 0; pu < npus; pu++) {
        const vpPU *p = vpTopologyPU(topo, pu);

        ok[pu] = node_ok[vpTopologyNodeOfPU(topo, pu)] &&
                 (!ctx->req->cpuset || hwloc_bitmap_isset(ctx->req->cpuset, p->os)) &&
                 !(off_own && ctx->req->emulator_pin &&
                   hwloc_bitmap_isset(ctx->req->emulator_pin, p->os)) &&
                 !(off_own && ctx->req->iothread_pin &&
                   hwloc_bitmap_isset(ctx->req->iothread_pin, p->os));
    }
    return ok;
}

static void
ctxSetMask(vpCtx *ctx, const bool *ok)
{
    ctx->ok = ok;
    for (int c = 0; c < ctx->ncores; c++) {
        const vpCore *core = vpTopologyCore(ctx->topo, c);

        ctx->nok[c] = 0;
        for (int i = 0; i < core->npus; i++)
            ctx->nok[c] += ctx->pufree[core->pus[i]] && (!ok || ok[core->pus[i]]);
    }
}

/* What a placed part holds is no longer free for the next part; its cores count as the
 * domain's own for spread's sibling tiers. */
static void
ctxHold(vpCtx *ctx, const vpPick *pick)
{
    for (int i = 0; i < pick->n + (int)pick->reserved->len; i++) {
        int pu = i < pick->n ? pick->pus[i] : g_array_index(pick->reserved, int, i - pick->n);
        int c = vpTopologyPU(ctx->topo, pu)->core;

        if (!ctx->pufree[pu])
            continue;
        ctx->pufree[pu] = false;
        ctx->nfree[c]--;
        ctx->rel[c] = MAX(ctx->rel[c], REL_GROUP);
    }
}

/* The search with the policy's own fallbacks (unmet=degrade), as for a whole domain. */
static bool
searchPart(vpCtx *ctx, vpPlan *plan, vpLocality locality, int n, vpChoice *choice)
{
    vpSmt smt = ctx->req->policy.smt;
    bool degrade = ctx->req->policy.unmet == VP_UNMET_DEGRADE;
    bool found = search(ctx, smt, locality, n, choice);

    if (!found && locality != VP_LOCALITY_AUTO && degrade) {
        g_autofree char *why =
            vpLocalitySplit(locality)
                ? refusalText(ctx, smt, locality, n)
                : g_strdup_printf("no single %s has room", levelPhrase(localityLevel(locality)));

        found = search(ctx, smt, VP_LOCALITY_AUTO, n, choice);
        if (found)
            vpPlanDegrade(plan, "locality=%s relaxed to locality=auto: %s",
                          vpLocalityName(locality), why);
    }
    if (!found && (smt == VP_SMT_ISOLATE || smt == VP_SMT_PACK) && degrade) {
        g_autofree char *why = refusalText(ctx, smt, locality, n);

        found = search(ctx, VP_SMT_SPREAD, VP_LOCALITY_AUTO, n, choice);
        if (found)
            vpPlanDegrade(plan, "smt=%s relaxed to smt=spread: %s", vpSmtName(smt), why);
    }
    if (!found && smt == VP_SMT_SHARE && degrade && pickOvercommit(ctx, n, choice)) {
        g_autoptr(vpBitmap) shared = hwloc_bitmap_alloc();
        g_autofree char *list = NULL;

        for (int i = 0; i < n; i++) {
            if (!ctx->pufree[choice->pick.pus[i]])
                hwloc_bitmap_set(shared, vpTopologyPU(ctx->topo, choice->pick.pus[i])->os);
        }
        list = vpCpuListFormat(shared);
        plan->overcommit = true;
        vpPlanDegrade(plan,
                      "smt=share overcommitted: CPUs %s are time-shared with other smt=share "
                      "domains (no free PU left)",
                      list);
        found = true;
    }
    return found;
}

/* "4 vCPUs with smt=isolate need 4 free whole cores on nodes 5; node 5 has 2": the figures
 * per allowed node, and the free memory of each allowed node when memory was short. */
static char *
partRefusal(const vpCtx *ctx, const vpPlan *plan, const vpPart *part)
{
    vpSmt smt = ctx->req->policy.smt;
    guint64 page = partPage(ctx, part);
    g_autoptr(GString) s = g_string_new(NULL);
    g_autofree char *nodes = part->hard ? vpCpuListFormat(part->hard) : NULL;
    const char *unit = smt == VP_SMT_ISOLATE ? "free whole cores"
                       : smt == VP_SMT_PACK  ? "free PUs on whole cores"
                                             : "free PUs";
    bool plain = !part->hard && !part->one_node && !ctx->req->cpuset;
    bool short_memory = false;
    const char *sep = "; ";

    for (int g = 0; g < vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA); g++)
        short_memory |= nodeFree(ctx, plan, g, page) < part->memory;
    if (plain) {
        g_autofree char *text = refusalText(ctx, smt, ctx->req->policy.locality, part->n);

        g_string_append(s, text);
    } else {
        if (part->cell >= 0)
            g_string_append_printf(s, "guest cell %d: ", part->cell);
        g_string_append_printf(s, "%u vCPUs with smt=%s need %u %s", part->n, vpSmtName(smt),
                               part->n, unit);
        if (part->one_node)
            g_string_append(s, " on one node");
        if (nodes)
            g_string_append_printf(s, " of nodes %s", nodes);
        if (ctx->req->cpuset) {
            g_autofree char *cpus = vpCpuListFormat(ctx->req->cpuset);

            g_string_append_printf(s, " inside <vcpu cpuset='%s'>", cpus);
        }
    }
    if (short_memory) {
        g_autofree char *mem = vpMemoryFormat(part->memory);

        g_string_append_printf(s, plain ? "; %s of %smemory is needed" : " and %s of %smemory", mem,
                               page ? "huge page " : "");
    }
    for (int g = 0; g < vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
        g_autofree char *mem = bytesText(nodeFree(ctx, plan, g, page));

        if (node->made_up || (part->hard && !hwloc_bitmap_isset(part->hard, node->os)))
            continue;
        if (plain && !short_memory)
            break;
        g_string_append_printf(s, "%snode %u has ", sep, node->os);
        if (!plain)
            g_string_append_printf(s, "%d", roomIn(ctx, node, smt));
        if (short_memory)
            g_string_append_printf(s, "%s%s free", plain ? "" : " and ", mem);
        sep = ", ";
    }
    return g_string_free(g_steal_pointer(&s), FALSE);
}

/* Memory a placed part puts on each node: in proportion to its vCPUs there. */
static gboolean
partMemory(const vpCtx *ctx, vpPlan *plan, const vpPart *part, const vpPick *pick, GError **error)
{
    int nnodes = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);
    g_autofree int *count = g_new0(int, nnodes);
    guint64 page = partPage(ctx, part);
    guint64 given = 0;
    int first = -1;

    if (!part->memory || !pick->n)
        return TRUE;
    for (int i = 0; i < pick->n; i++)
        count[vpTopologyNodeOfPU(ctx->topo, pick->pus[i])]++;
    for (int g = 0; g < nnodes; g++) {
        guint64 share;

        if (!count[g])
            continue;
        if (first < 0)
            first = g;
        share = part->memory / pick->n * count[g];
        if (g == first)
            share += part->memory % pick->n;
        if (nodeFree(ctx, plan, g, page) < share) {
            const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
            g_autofree char *want = vpMemoryFormat(share);
            g_autofree char *have = bytesText(nodeFree(ctx, plan, g, page));
            g_autofree char *pages = page ? vpMemoryFormat(page) : NULL;

            if (pages)
                g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                            "domain '%s': its vCPUs on node %u need %s of %s huge pages there; "
                            "node %u's %s pool has %s free",
                            plan->domain, node->os, want, pages, node->os, pages, have);
            else
                g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                            "domain '%s': its vCPUs on node %u need %s of memory there; node %u "
                            "has %s free",
                            plan->domain, node->os, want, node->os, have);
            return FALSE;
        }
        vpPlanAddPages(plan, vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g)->os, page, share);
        given += share;
    }
    g_assert(given == part->memory);
    return TRUE;
}

/* Tries one part under the masks that apply, strictest first: off the CPUs of the domain's
 * own emulator and iothread pins (Nova often pins the emulator inside the vCPUs' cpuset, so
 * only a preference), the preferred nodes, nodes no other part took (cells on distinct
 * nodes), then any allowed node. */
static bool
placePart(vpCtx *ctx, vpPlan *plan, const vpPart *part, hwloc_const_bitmap_t taken,
          vpChoice *choice)
{
    vpLocality locality = ctx->req->policy.locality;
    hwloc_const_bitmap_t only[] = {part->prefer, NULL};
    hwloc_const_bitmap_t avoid[] = {taken, NULL};

    if (part->one_node && locality != VP_LOCALITY_L3)
        locality = VP_LOCALITY_NUMA;
    for (int own = ctx->req->emulator_pin || ctx->req->iothread_pin ? 1 : 0; own >= 0; own--) {
        for (gsize o = part->prefer ? 0 : 1; o < G_N_ELEMENTS(only); o++) {
            for (gsize a = taken && part->one_node ? 0 : 1; a < G_N_ELEMENTS(avoid); a++) {
                g_autofree bool *ok =
                    partMask(ctx, plan, part, part->memory, only[o], avoid[a], own);
                bool found;

                ctxSetMask(ctx, ok);
                found = search(ctx, ctx->req->policy.smt, locality, part->n, choice);
                ctxSetMask(ctx, NULL);
                if (found)
                    return true;
            }
        }
    }
    return false;
}

static gboolean
placeParts(vpCtx *ctx, vpPlan *plan, GArray *parts, vpChoice *all, GError **error)
{
    g_autoptr(vpBitmap) taken = hwloc_bitmap_alloc();
    vpLocality locality = ctx->req->policy.locality;

    for (guint p = 0; p < parts->len; p++) {
        const vpPart *part = &g_array_index(parts, vpPart, p);
        vpChoice choice = {0};
        bool found;

        if (!part->n)
            continue;
        pickInit(&choice.pick, part->n);
        found = placePart(ctx, plan, part, taken, &choice);
        if (!found) {
            /* the policy's own fallbacks, still inside the hard limits and the memory */
            g_autofree bool *ok = partMask(ctx, plan, part, 0, NULL, NULL, false);
            ctxSetMask(ctx, ok);
            found = searchPart(ctx, plan, part->one_node ? VP_LOCALITY_NUMA : locality, part->n,
                               &choice);
            if (!found) {
                g_autofree char *why = partRefusal(ctx, plan, part);

                g_set_error(error, VP_ERROR, VP_ERROR_REFUSED, "domain '%s': %s", plan->domain,
                            why);
            }
            ctxSetMask(ctx, NULL);
        }
        if (found && !partMemory(ctx, plan, part, &choice.pick, error))
            found = false;
        if (!found) {
            pickClear(&choice.pick);
            return FALSE;
        }
        for (int i = 0; i < choice.pick.n; i++) {
            int pu = choice.pick.pus[i];

            plan->vcpu_pu[part->ids[i]] = vpTopologyPU(ctx->topo, pu)->os;
            hwloc_bitmap_set(
                taken,
                vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, vpTopologyNodeOfPU(ctx->topo, pu))->os);
            all->pick.pus[all->pick.n++] = pu;
        }
        for (guint i = 0; i < choice.pick.reserved->len; i++)
            g_array_append_val(all->pick.reserved, g_array_index(choice.pick.reserved, int, i));
        if (parts->len == 1) {
            all->level = choice.level;
            all->index = choice.index;
        }
        ctxHold(ctx, &choice.pick);
        pickClear(&choice.pick);
    }
    return TRUE;
}

static void
partAdd(GArray *parts, const unsigned *ids, unsigned n, guint64 memory, hwloc_const_bitmap_t hard,
        hwloc_const_bitmap_t prefer, bool one_node, int cell)
{
    vpPart part = {.n = n, .memory = memory, .one_node = one_node, .cell = cell};

    part.ids = g_memdup2(ids, sizeof(*ids) * n);
    part.hard = hard ? hwloc_bitmap_dup(hard) : NULL;
    part.prefer = prefer ? hwloc_bitmap_dup(prefer) : NULL;
    g_array_append_val(parts, part);
}

/* Cuts the domain into parts (see "Constraints"). ids: the online vCPU ids, ascending. */
static GArray *
cutParts(const vpTopology *topo, const vpRequest *req, const unsigned *ids, unsigned n)
{
    GArray *parts = g_array_new(FALSE, TRUE, sizeof(vpPart));
    hwloc_const_bitmap_t hard = hardMode(req->mem_mode) ? req->nodeset : NULL;
    hwloc_const_bitmap_t prefer = req->mem_mode == VP_MEM_PREFERRED ? req->nodeset : NULL;
    g_autofree unsigned *rest = g_new(unsigned, n);
    g_autoptr(vpBitmap) incell = hwloc_bitmap_alloc();
    unsigned nrest = 0;

    g_array_set_clear_func(parts, (GDestroyNotify)partClear);
    for (unsigned c = 0; c < req->ncells; c++) {
        const vpCell *cell = &req->cells[c];
        g_autofree unsigned *cids = g_new(unsigned, n);
        unsigned k = 0;
        bool chard = cell->mode != VP_MEM_NONE ? hardMode(cell->mode) : hard != NULL;
        hwloc_const_bitmap_t cnodes = cell->mode != VP_MEM_NONE ? cell->nodeset : req->nodeset;

        for (unsigned i = 0; i < n; i++) {
            if (hwloc_bitmap_isset(cell->vcpus, ids[i]))
                cids[k++] = ids[i];
        }
        hwloc_bitmap_or(incell, incell, cell->vcpus);
        partAdd(parts, cids, k, k ? cell->memory : 0, chard ? cnodes : NULL,
                !chard && cnodes ? cnodes : NULL, true, cell->id);
        g_array_index(parts, vpPart, parts->len - 1).page = vpRequestCellPage(req, cell);
    }
    for (unsigned i = 0; i < n; i++) {
        if (!hwloc_bitmap_isset(incell, ids[i]))
            rest[nrest++] = ids[i];
    }
    if (req->ncells) {
        if (nrest)
            partAdd(parts, rest, nrest, 0, hard, prefer, false, -1);
        return parts;
    }
    if (req->mem_mode == VP_MEM_INTERLEAVE && req->nodeset) {
        g_autoptr(vpBitmap) nodes = hwloc_bitmap_alloc();
        unsigned k = 0, start = 0;
        int os;

        hwloc_bitmap_foreach_begin(os, req->nodeset)
        {
            if (vpTopologyNodeByOS(topo, os) >= 0)
                hwloc_bitmap_set(nodes, os);
        }
        hwloc_bitmap_foreach_end();
        k = hwloc_bitmap_weight(nodes);
        if (k > 1) {
            unsigned i = 0;

            hwloc_bitmap_foreach_begin(os, nodes)
            {
                unsigned cnt = n / k + (i < n % k);
                g_autoptr(vpBitmap) one = hwloc_bitmap_alloc();
                guint64 mem = req->memory / k + (i == 0 ? req->memory % k : 0);

                hwloc_bitmap_set(one, os);
                partAdd(parts, ids + start, cnt, mem, one, NULL, true, -1);
                start += cnt;
                i++;
            }
            hwloc_bitmap_foreach_end();
            return parts;
        }
    }
    partAdd(parts, ids, n, req->memory, hard, prefer, req->placement_auto, -1);
    return parts;
}

static gboolean
checkNodeset(const vpTopology *topo, const vpRequest *req, hwloc_const_bitmap_t set, GError **error)
{
    g_autoptr(vpBitmap) missing = NULL;

    if (!set)
        return TRUE;
    missing = hwloc_bitmap_dup(set);
    hwloc_bitmap_andnot(missing, missing, vpTopologyNodeSet(topo));
    if (!hwloc_bitmap_iszero(missing)) {
        g_autofree char *bad = vpCpuListFormat(missing);
        g_autofree char *have = vpCpuListFormat(vpTopologyNodeSet(topo));

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': <numatune> nodeset names nodes %s this host lacks (it has %s)",
                    req->name, bad, have);
        return FALSE;
    }
    return TRUE;
}

/* Refusals for what no placement could meet: nodes the host lacks, a cpuset of no usable
 * CPU, more memory than the host has. */
static gboolean
checkConstraints(const vpTopology *topo, const vpRequest *req, GError **error)
{
    guint64 total = 0;
    bool known = true;

    if (!checkNodeset(topo, req, req->nodeset, error))
        return FALSE;
    for (unsigned c = 0; c < req->ncells; c++) {
        if (!checkNodeset(topo, req, req->cells[c].nodeset, error))
            return FALSE;
    }
    if (req->cpuset && !hwloc_bitmap_intersects(req->cpuset, vpTopologyUsableSet(topo))) {
        g_autofree char *set = vpCpuListFormat(req->cpuset);
        g_autofree char *usable = vpCpuListFormat(vpTopologyUsableSet(topo));

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': <vcpu cpuset='%s'> names no CPU this host may hand out (%s)",
                    req->name, set, usable);
        return FALSE;
    }
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);

        known &= node->memory > 0 || node->made_up;
        total += node->memory;
    }
    if (known && !req->hugepage_size && req->memory > total) {
        g_autofree char *want = vpMemoryFormat(req->memory);
        g_autofree char *have = vpMemoryFormat(total);

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': <memory> %s is more than this host's %s", req->name, want, have);
        return FALSE;
    }
    return TRUE;
}

/* A real-time vCPU (<vcpusched> fifo or rr) would starve an emulator thread on its CPU:
 * the emulator keeps to the domain's other CPUs, or gets a free one. */
static gboolean
emulatorOffRealtime(const vpCtx *ctx, vpPlan *plan, vpChoice *choice, GError **error)
{
    g_autoptr(vpBitmap) rt = hwloc_bitmap_alloc();

    if (!ctx->req->realtime || ctx->req->emulator_pin)
        return TRUE;
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] >= 0 && hwloc_bitmap_isset(ctx->req->realtime, i))
            hwloc_bitmap_set(rt, plan->vcpu_pu[i]);
    }
    hwloc_bitmap_andnot(plan->emulator, plan->emulator, rt);
    if (!hwloc_bitmap_iszero(plan->emulator))
        return TRUE;
    hwloc_bitmap_andnot(plan->reserved, plan->reserved, rt);
    if (pickEmulatorPU(ctx, plan, choice))
        return TRUE;
    g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                "domain '%s': every vCPU is real-time (<vcpusched> fifo/rr) and no free PU is "
                "left for the emulator",
                plan->domain);
    return FALSE;
}

/* One attempt with the given parts: the vCPUs, then the emulator inside the same limits. */
static vpPlan *
placeWith(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req, const vpMove *moves,
          unsigned nmoves, GArray *parts, GError **error)
{
    g_autoptr(vpPlan) plan = vpPlanNew(req->name, vpRequestPlanVcpus(req));
    g_autofree bool *dom_ok = NULL;
    vpCtx ctx;
    vpChoice choice = {0};
    gboolean ok = FALSE;

    vpPolicyCopy(&plan->policy, &req->policy);
    plan->group = g_strdup(req->policy.group);
    plan->how = VP_HOW_PLACED;
    plan->page_size = req->hugepage_size;
    ctxInit(&ctx, topo, ledger, req, moves, nmoves);
    pickInit(&choice.pick, req->vcpus);
    choice.level = VP_LEVEL_HOST;
    choice.index = -1;
    if (!placeParts(&ctx, plan, parts, &choice, error))
        goto out;

    plan->level = choice.level;
    plan->level_index = choice.level == VP_LEVEL_HOST ? -1 : choice.index;
    for (guint i = 0; i < choice.pick.reserved->len; i++)
        hwloc_bitmap_set(plan->reserved,
                         vpTopologyPU(topo, g_array_index(choice.pick.reserved, int, i))->os);
    if (req->policy.smt == VP_SMT_PACK && !plan->degraded && !req->online)
        packTopology(plan, topo, req, &choice);
    /* the emulator too stays inside the cpuset and the hard nodes */
    if (req->cpuset || (hardMode(req->mem_mode) && req->nodeset)) {
        vpPart whole = {.hard = hardMode(req->mem_mode) ? req->nodeset : NULL};

        dom_ok = partMask(&ctx, plan, &whole, 0, NULL, NULL, false);
        ctxSetMask(&ctx, dom_ok);
    }
    if (req->emulator_pin)
        hwloc_bitmap_copy(plan->emulator, req->emulator_pin);
    else if (!placeEmulator(&ctx, plan, &choice, error) ||
             !emulatorOffRealtime(&ctx, plan, &choice, error))
        goto out;
    if (req->cpuset && !req->emulator_pin &&
        !hwloc_bitmap_isincluded(plan->emulator, req->cpuset)) {
        hwloc_bitmap_and(plan->emulator, plan->emulator, req->cpuset);
        if (hwloc_bitmap_iszero(plan->emulator)) {
            for (unsigned i = 0; i < plan->nvcpus; i++) {
                if (plan->vcpu_pu[i] >= 0)
                    hwloc_bitmap_set(plan->emulator, plan->vcpu_pu[i]);
            }
        }
    }
    holdOwnPins(plan, req);
    ok = TRUE;

out:
    pickClear(&choice.pick);
    ctxClear(&ctx);
    return ok ? g_steal_pointer(&plan) : NULL;
}

/* A domain whose memory no single node holds, cut into k shares on k distinct nodes (what
 * Nova's hw:numa_nodes asks of a large flavor): vCPUs and memory split evenly. */
static GArray *
splitByMemory(const vpRequest *req, const unsigned *ids, unsigned n, unsigned k)
{
    GArray *parts = g_array_new(FALSE, TRUE, sizeof(vpPart));
    hwloc_const_bitmap_t hard = hardMode(req->mem_mode) ? req->nodeset : NULL;
    hwloc_const_bitmap_t prefer = req->mem_mode == VP_MEM_PREFERRED ? req->nodeset : NULL;
    unsigned start = 0;

    g_array_set_clear_func(parts, (GDestroyNotify)partClear);
    for (unsigned i = 0; i < k; i++) {
        unsigned cnt = n / k + (i < n % k);

        partAdd(parts, ids + start, cnt, req->memory / k + (i == 0 ? req->memory % k : 0), hard,
                prefer, true, -1);
        start += cnt;
    }
    return parts;
}

/* Only memory that no node could hold even when empty of others' memory is cut: a domain
 * refused for CPUs, or asking locality=l3/numa, keeps its refusal. */
static bool
splittable(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req, GArray *parts)
{
    const vpPart *only = parts->len == 1 ? &g_array_index(parts, vpPart, 0) : NULL;
    vpLocality loc = req->policy.locality;

    if (!only || only->one_node || !only->memory || req->vcpus < 2 ||
        (loc != VP_LOCALITY_AUTO && loc != VP_LOCALITY_PACKAGE && loc != VP_LOCALITY_HOST))
        return false;
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);
        guint64 held = ledger ? vpLedgerNodeMemory(ledger, node->os, req->hugepage_size) : 0;

        if (!node->memory || node->memory >= only->memory + held + vpTopologyNodeReserve(topo))
            return false;
    }
    return vpTopologyNGroups(topo, VP_LEVEL_NUMA) > 1;
}

vpPlan *
vpPlace(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req, GError **error)
{
    return vpPlaceAfter(topo, ledger, req, NULL, 0, error);
}

vpPlan *
vpPlaceAfter(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
             const vpMove *moves, unsigned nmoves, GError **error)
{
    g_autoptr(GArray) parts = NULL;
    g_autofree unsigned *ids = NULL;
    g_autoptr(GError) first = NULL;
    vpPlan *plan;
    int usable = hwloc_bitmap_weight(vpTopologyUsableSet(topo));
    unsigned k = 0, nplan;

    if (req->vcpus == 0 || req->vcpus > req->max_vcpus) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain '%s': vcpus=%u is not within 1..%u",
                    req->name, req->vcpus, req->max_vcpus);
        return NULL;
    }
    if (!vpRequestIsQemu(req)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain '%s' is type='%s': vcpuplace places QEMU domains (type='kvm' or "
                    "'qemu') only",
                    req->name, req->type);
        return NULL;
    }
    if (req->has_pins)
        return placePinned(topo, req);
    if ((int)req->vcpus > usable) {
        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': %u vCPUs exceed the %d PUs this host may hand out", req->name,
                    req->vcpus, usable);
        return NULL;
    }
    if (!checkConstraints(topo, req, error))
        return NULL;

    nplan = vpRequestPlanVcpus(req);
    ids = g_new(unsigned, nplan);
    for (unsigned i = 0; i < nplan; i++) {
        if (vpRequestOnline(req, i))
            ids[k++] = i;
    }
    parts = cutParts(topo, req, ids, k);
    if ((plan = placeWith(topo, ledger, req, moves, nmoves, parts, &first)) ||
        !g_error_matches(first, VP_ERROR, VP_ERROR_REFUSED) ||
        !splittable(topo, ledger, req, parts)) {
        if (!plan)
            g_propagate_error(error, g_steal_pointer(&first));
        return plan;
    }
    unsigned most = MIN(k, (unsigned)vpTopologyNGroups(topo, VP_LEVEL_NUMA));

    for (unsigned split = 2; split <= most; split++) {
        g_autoptr(GArray) cut = splitByMemory(req, ids, k, split);

        if ((plan = placeWith(topo, ledger, req, moves, nmoves, cut, NULL)))
            return plan;
    }
    {
        g_autofree char *share = vpMemoryFormat(req->memory / most);

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "%s; nor cut over up to %u nodes (%s and its vCPUs on each)", first->message,
                    most, share);
    }
    return NULL;
}
