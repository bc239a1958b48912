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
}

/* A core every PU of which is usable and free: isolate and pack own such cores. */
static bool
coreWhole(const vpCtx *ctx, int c)
{
    return ctx->rel[c] == REL_NONE && ctx->nfree[c] > 0 &&
           ctx->nfree[c] == vpTopologyCore(ctx->topo, c)->npus;
}

/* A core no VM holds anything on (housekeeping siblings do not count against it). */
static bool
coreIdle(const vpCtx *ctx, int c)
{
    return ctx->rel[c] == REL_NONE && ctx->nfree[c] > 0;
}

static void
takeFree(const vpCtx *ctx, int c, int limit, vpPick *pick, int n)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    for (int i = 0; i < core->npus && pick->n < n && limit > 0; i++) {
        int pu = core->pus[i];
        bool used = false;

        if (!ctx->pufree[pu])
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

static bool
search(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n, vpChoice *best)
{
    vpLevel levels[4];
    int nlevels = vpPlacerLevels(ctx->topo, locality, levels);
    int ntiers;
    const vpTier *tiers = tiersFor(smt, &ntiers);
    int local = smt == VP_SMT_SPREAD ? nodeLevels(levels, nlevels) : 0;

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
            room += coreWhole(ctx, c) ? ctx->nfree[c] : 0;
        else
            room += ctx->nfree[c];
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

static void
planSet(vpPlan *plan, const vpTopology *topo, const vpChoice *choice)
{
    for (int i = 0; i < choice->pick.n; i++)
        plan->vcpu_pu[i] = vpTopologyPU(topo, choice->pick.pus[i])->os;
    for (guint i = 0; i < choice->pick.reserved->len; i++)
        hwloc_bitmap_set(plan->reserved,
                         vpTopologyPU(topo, g_array_index(choice->pick.reserved, int, i))->os);
    plan->level = choice->level;
    plan->level_index = choice->level == VP_LEVEL_HOST ? -1 : choice->index;
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
        if (ctx->pufree[pu] && !used)
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
            if (vpTopologyPU(ctx->topo, pu)->usable && shareHolders(ctx, pu) == want)
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

static vpPlan *
placePinned(const vpTopology *topo, const vpRequest *req)
{
    g_autoptr(vpPlan) plan = vpPlanNew(req->name, req->vcpus);

    vpPolicyCopy(&plan->policy, &req->policy);
    plan->group = g_strdup(req->policy.group);
    plan->how = VP_HOW_PINNED;
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
    for (unsigned i = 0; i < req->vcpus; i++) {
        hwloc_const_bitmap_t pin = req->pins ? req->pins[i] : NULL;

        if (pin && hwloc_bitmap_weight(pin) == 1 &&
            vpTopologyPUByOS(topo, hwloc_bitmap_first(pin)) >= 0)
            plan->vcpu_pu[i] = hwloc_bitmap_first(pin);
    }
    if (req->emulator_pin)
        hwloc_bitmap_copy(plan->emulator, req->emulator_pin);
    return g_steal_pointer(&plan);
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
    g_autoptr(vpPlan) plan = NULL;
    vpCtx ctx;
    vpChoice choice = {0};
    vpSmt smt = req->policy.smt;
    vpLocality locality = req->policy.locality;
    unsigned split = vpLocalitySplit(locality);
    int n = (int)req->vcpus;
    int usable = hwloc_bitmap_weight(vpTopologyUsableSet(topo));
    bool found;

    if (req->vcpus == 0 || req->vcpus > req->max_vcpus) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain '%s': vcpus=%u is not within 1..%u",
                    req->name, req->vcpus, req->max_vcpus);
        return NULL;
    }
    if (req->has_pins)
        return placePinned(topo, req);
    if (n > usable) {
        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': %d vCPUs exceed the %d PUs this host may hand out", req->name, n,
                    usable);
        return NULL;
    }

    plan = vpPlanNew(req->name, req->vcpus);
    vpPolicyCopy(&plan->policy, &req->policy);
    plan->group = g_strdup(req->policy.group);
    plan->how = VP_HOW_PLACED;

    ctxInit(&ctx, topo, ledger, req, moves, nmoves);
    pickInit(&choice.pick, n);
    if (split) {
        g_autofree char *impossible = splitImpossible(&ctx, split, n);

        if (impossible) {
            g_set_error(error, VP_ERROR, VP_ERROR_REFUSED, "domain '%s': %s", req->name,
                        impossible);
            goto fail;
        }
        found = searchSplit(&ctx, smt, split, n, &choice);
        if (!found && req->policy.unmet == VP_UNMET_DEGRADE) {
            g_autofree char *why = splitRefusal(&ctx, smt, split, n);

            found = search(&ctx, smt, VP_LOCALITY_AUTO, n, &choice);
            if (found)
                vpPlanDegrade(plan, "locality=%s relaxed to locality=auto: %s",
                              vpLocalityName(locality), why);
        }
    } else {
        found = search(&ctx, smt, locality, n, &choice);
    }
    if (!found && !split && locality != VP_LOCALITY_AUTO && req->policy.unmet == VP_UNMET_DEGRADE) {
        found = search(&ctx, smt, VP_LOCALITY_AUTO, n, &choice);
        if (found)
            vpPlanDegrade(plan, "locality=%s relaxed to locality=auto: no single %s has room",
                          vpLocalityName(locality), levelPhrase(localityLevel(locality)));
    }
    if (!found && (smt == VP_SMT_ISOLATE || smt == VP_SMT_PACK) &&
        req->policy.unmet == VP_UNMET_DEGRADE) {
        g_autofree char *why =
            split ? splitRefusal(&ctx, smt, split, n) : refusalText(&ctx, smt, locality, n);

        found = search(&ctx, VP_SMT_SPREAD, VP_LOCALITY_AUTO, n, &choice);
        if (found)
            vpPlanDegrade(plan, "smt=%s relaxed to smt=spread: %s", vpSmtName(smt), why);
    }
    if (!found && smt == VP_SMT_SHARE && req->policy.unmet == VP_UNMET_DEGRADE &&
        pickOvercommit(&ctx, n, &choice)) {
        g_autoptr(vpBitmap) shared = hwloc_bitmap_alloc();
        g_autofree char *list = NULL;

        for (int i = 0; i < n; i++) {
            if (!ctx.pufree[choice.pick.pus[i]])
                hwloc_bitmap_set(shared, vpTopologyPU(topo, choice.pick.pus[i])->os);
        }
        list = vpCpuListFormat(shared);
        plan->overcommit = true;
        vpPlanDegrade(plan,
                      "smt=share overcommitted: CPUs %s are time-shared with other smt=share "
                      "domains (no free PU left)",
                      list);
        found = true;
    }
    if (!found) {
        g_autofree char *why =
            split ? splitRefusal(&ctx, smt, split, n) : refusalText(&ctx, smt, locality, n);

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED, "domain '%s': %s", req->name, why);
        goto fail;
    }

    planSet(plan, topo, &choice);
    if (smt == VP_SMT_PACK && !plan->degraded)
        packTopology(plan, topo, req, &choice);
    if (!placeEmulator(&ctx, plan, &choice, error))
        goto fail;

    pickClear(&choice.pick);
    ctxClear(&ctx);
    return g_steal_pointer(&plan);

fail:
    pickClear(&choice.pick);
    ctxClear(&ctx);
    return NULL;
}
