/*
 * The compaction search, in the placer's manner: small questions, one topology level at a
 * time.
 *
 * 1. Judge the placer's own answer: refused, relaxed, beside a stranger, more NUMA nodes
 *    than the fewest that could hold the domain, or a wider level than the smallest that
 *    could. An answer with none of these is final.
 * 2. Per group of every level the domain may use (smallest first), count what the policy
 *    needs beyond what the group offers, and take the cheapest cores to vacate there (cost:
 *    the vCPUs to move off, each of which has a legal destination) until the need is met or
 *    the move budget is spent. Destinations are the costly question (a walk of the node's
 *    cores per vCPU): a group whose best cores within the budget could not meet its need
 *    is passed over first, and a core is asked only when it would be taken.
 * 3. Try the candidates, fewest moves first and smallest level next: give each vacated
 *    vCPU its destination, ask the placer as if the moves were done, and take the first
 *    answer that is better than the original. A vacated core is what the domain gets, so a
 *    move never lands on one; destinations are free PUs beside the moved domain's own or
 *    trusted vCPUs, so no move puts a stranger on a core at any instant.
 */
#include "core/place/compactpriv.h"

#include <string.h>

/* Placer calls per admission, bounding the cost of a search that finds nothing. */
#define VP_COMPACT_TRIES 8

void
vpCompactConfigInit(vpCompactConfig *cfg)
{
    cfg->max_moves = VP_COMPACT_MAX_MOVES;
}

/* A set of cores to vacate, and what it costs. */
typedef struct {
    int cost;
    int level; /* index into vpRoom.levels */
    int group;
    GArray *cores;
} vpCandidate;

/* How good an answer is, worst first in each field. */
typedef struct {
    bool refused;
    bool degraded;
    int strangers;   /* vCPUs on a core with a vCPU of an untrusted domain */
    int extra_nodes; /* NUMA nodes beyond the fewest that could hold the domain */
    double width;    /* PUs per group at the plan's level */
} vpOutcome;

/* Per core: what vacating it costs and adds (rateCores()), and whether its vCPUs have a
 * legal destination once it is vacated: 0 not asked yet, 1 they have, -1 one has none. */
typedef struct {
    int *cost;
    int *gain;
    signed char *dest;
    bool *vacated; /* all false between questions */
} vpRating;

/* Does some vCPU on core c have no legal destination when c alone is vacated? Asked once
 * per core and search. */
static bool
stuck(const vpRoom *r, vpRating *rate, int c)
{
    const vpCore *core = vpTopologyCore(r->topo, c);

    if (rate->dest[c])
        return rate->dest[c] < 0;
    rate->dest[c] = 1;
    rate->vacated[c] = true;
    for (int i = 0; i < core->npus && rate->dest[c] > 0; i++) {
        vpOwner o = vpCompactOwnerAt(r, NULL, 0, core->pus[i]);

        if (o.domain && vpCompactDestination(r, vpLedgerLookup(r->ledger, o.domain), core->pus[i],
                                             rate->vacated, NULL, 0) < 0)
            rate->dest[c] = -1;
    }
    rate->vacated[c] = false;
    return rate->dest[c] < 0;
}

/* What core c offers the request, as the placer counts room: a whole core for isolate, its
 * PUs when whole for pack, its free PUs when no VM holds it for spread, its free PUs unless
 * a stranger holds it for share. vacated: as if every vCPU on it had moved off. */
static int
coreRoom(const vpRoom *r, int c, bool vacated)
{
    const vpCore *core = vpTopologyCore(r->topo, c);
    int usable = 0, nfree = 0;
    bool held = false, stranger = false;

    for (int i = 0; i < core->npus; i++) {
        int pu = core->pus[i];
        vpOwner o = vacated ? (vpOwner){NULL, VP_OWN_NONE, -1} : vpCompactOwnerAt(r, NULL, 0, pu);
        const vpPlan *holder = o.domain ? vpLedgerLookup(r->ledger, o.domain) : NULL;

        usable += vpTopologyPU(r->topo, pu)->usable;
        if (!o.domain) {
            nfree += vpTopologyPU(r->topo, pu)->usable;
            continue;
        }
        held = true;
        stranger |= !holder ||
                    !vpTrustMutual(r->req->name, &r->req->policy, holder->domain, &holder->policy);
    }
    switch (r->req->policy.smt) {
    case VP_SMT_ISOLATE:
        return !held && usable == core->npus;
    case VP_SMT_PACK:
        return !held && usable == core->npus ? usable : 0;
    case VP_SMT_SPREAD:
        return held ? 0 : nfree;
    default:
        return stranger ? 0 : nfree;
    }
}

/* What group g could offer the request on an empty host: whole cores for isolate, PUs of
 * whole cores for pack, usable PUs otherwise. */
static int
emptyRoom(const vpRoom *r, const vpGroup *g)
{
    int room = 0;

    for (int i = 0; i < g->ncores; i++) {
        int usable = vpTopologyCoreUsable(r->topo, g->cores[i]);
        bool whole = usable == vpTopologyCore(r->topo, g->cores[i])->npus;

        if (r->req->policy.smt == VP_SMT_ISOLATE)
            room += whole;
        else if (r->req->policy.smt == VP_SMT_PACK)
            room += whole ? usable : 0;
        else
            room += usable;
    }
    return room;
}

static int
compareCost(gconstpointer a, gconstpointer b, gpointer data)
{
    const int *cost = data;
    int ca = *(const int *)a, cb = *(const int *)b;

    if (cost[ca] != cost[cb])
        return cost[ca] - cost[cb];
    return ca - cb;
}

/* Could the best `budget` cores of g add need? Each costs a move at least, so no set within
 * the budget adds more: a group that fails this is passed over before any destination is
 * looked for. */
static bool
mayCover(const vpRoom *r, const vpGroup *g, const vpRating *rate, int need)
{
    g_autofree int *best = g_new0(int, r->budget + 1);

    for (int i = 0; i < g->ncores; i++) {
        int c = g->cores[i], k = (int)r->budget;

        if (rate->cost[c] < 0)
            continue;
        /* insert gain into the descending list best[0..budget-1] */
        for (; k > 0 && best[k - 1] < rate->gain[c]; k--)
            best[k] = best[k - 1];
        best[k] = rate->gain[c];
    }
    for (unsigned k = 0; k < r->budget; k++)
        need -= best[k];
    return need <= 0;
}

/* The cheapest cores of group g whose vacating covers what the request lacks there, within
 * the budget; false when g needs nothing or cannot be helped. */
static bool
candidateIn(const vpRoom *r, const vpGroup *g, vpRating *rate, vpCandidate *out)
{
    g_autofree int *order = NULL;
    int need = (int)r->req->vcpus;
    int spent = 0;

    for (int i = 0; i < g->ncores; i++)
        need -= r->room[g->cores[i]];
    if (need <= 0 || emptyRoom(r, g) < (int)r->req->vcpus || !mayCover(r, g, rate, need))
        return false;
    order = g_memdup2(g->cores, sizeof(int) * g->ncores);
    g_qsort_with_data(order, g->ncores, sizeof(int), compareCost, rate->cost);
    out->cores = g_array_new(FALSE, FALSE, sizeof(int));
    for (int i = 0; i < g->ncores && need > 0; i++) {
        int c = order[i];

        if (rate->cost[c] < 0 || spent + rate->cost[c] > (int)r->budget || stuck(r, rate, c))
            continue;
        g_array_append_val(out->cores, c);
        spent += rate->cost[c];
        need -= rate->gain[c];
    }
    out->cost = spent;
    if (need > 0) {
        g_array_free(out->cores, TRUE);
        out->cores = NULL;
        return false;
    }
    return true;
}

static int
compareCandidates(gconstpointer a, gconstpointer b)
{
    const vpCandidate *x = a, *y = b;

    if (x->cost != y->cost)
        return x->cost - y->cost;
    if (x->level != y->level)
        return x->level - y->level;
    return x->group - y->group;
}

/* Why no candidate exists, for the refusal an operator reads. */
typedef struct {
    int unmovable; /* helpful cores holding something that may not move */
    int costly;    /* helpful cores that need more moves than the budget */
    int stuck;     /* helpful cores whose vCPUs have nowhere legal to go */
    int tried;     /* sets of cores vacated, after which the placer did no better */
} vpBlocked;

/* Per core: the moves to vacate it (-1: not a candidate), the room it would add, and
 * blocked's unmovable and costly counts. Whether its vCPUs have somewhere to go is asked
 * later (stuck()), only of the cores a candidate could take. */
static void
rateCores(const vpRoom *r, vpRating *rate, vpBlocked *blocked)
{
    for (int c = 0; c < vpTopologyNCores(r->topo); c++) {
        r->room[c] = coreRoom(r, c, false);
        rate->gain[c] = coreRoom(r, c, true) - r->room[c];
        rate->cost[c] = rate->gain[c] > 0 ? vpCompactVacateCost(r, c) : -1;
        if (rate->gain[c] <= 0)
            continue;
        if (rate->cost[c] < 0) {
            blocked->unmovable++;
            continue;
        }
        if (rate->cost[c] == 0 || rate->cost[c] > (int)r->budget) {
            blocked->costly += rate->cost[c] > 0;
            rate->cost[c] = -1;
        }
    }
}

/* The helpful cores within the budget whose vCPUs have nowhere legal to go, for a refusal:
 * asking every core is the cost the search saves otherwise. */
static int
countStuck(const vpRoom *r, vpRating *rate)
{
    int n = 0;

    for (int c = 0; c < vpTopologyNCores(r->topo); c++)
        n += rate->cost[c] >= 0 && stuck(r, rate, c);
    return n;
}

static GArray *
candidates(const vpRoom *r, vpRating *rate, vpBlocked *blocked)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(vpCandidate));

    rateCores(r, rate, blocked);
    for (int l = 0; l < r->nlevels; l++) {
        for (int gi = 0; gi < vpTopologyNGroups(r->topo, r->levels[l]); gi++) {
            vpCandidate cand = {.level = l, .group = gi};

            if (candidateIn(r, vpTopologyGroup(r->topo, r->levels[l], gi), rate, &cand))
                g_array_append_val(out, cand);
        }
    }
    g_array_sort(out, compareCandidates);
    return out;
}

static void
candidatesFree(GArray *cands)
{
    for (guint i = 0; i < cands->len; i++)
        g_array_free(g_array_index(cands, vpCandidate, i).cores, TRUE);
    g_array_free(cands, TRUE);
}

/* NUMA nodes the policy needs at least: the fewest whose room on an empty host holds it. */
static int
neededNodes(const vpRoom *r)
{
    int nnodes = vpTopologyNGroups(r->topo, VP_LEVEL_NUMA);
    g_autofree int *room = g_new0(int, MAX(nnodes, 1));
    int need = (int)r->req->vcpus;
    int used = 0;

    for (int n = 0; n < nnodes; n++)
        room[n] = emptyRoom(r, vpTopologyGroup(r->topo, VP_LEVEL_NUMA, n));
    while (need > 0 && used < nnodes) {
        int best = 0;

        for (int n = 1; n < nnodes; n++) {
            if (room[n] > room[best])
                best = n;
        }
        need -= room[best];
        room[best] = 0;
        used++;
    }
    return MAX(used, 1);
}

/* Moves only shuffle held PUs: when the host's free usable PUs fall short of what the
 * request needs (whole cores for isolate), no moves can make room. */
static bool
roomPossible(const vpRoom *r)
{
    int nfree = 0, smallest = vpTopologyMaxSMT(r->topo);

    for (int c = 0; c < vpTopologyNCores(r->topo); c++) {
        const vpCore *core = vpTopologyCore(r->topo, c);

        smallest = MIN(smallest, core->npus);
        for (int i = 0; i < core->npus; i++)
            nfree += vpTopologyPU(r->topo, core->pus[i])->usable &&
                     !vpCompactOwnerAt(r, NULL, 0, core->pus[i]).domain;
    }
    if (r->req->policy.smt == VP_SMT_ISOLATE)
        return nfree >= (int)r->req->vcpus * MAX(smallest, 1);
    return nfree >= (int)r->req->vcpus;
}

static double
levelWidth(const vpTopology *topo, vpLevel level)
{
    return (double)vpTopologyNPUs(topo) / MAX(vpTopologyNGroups(topo, level), 1);
}

/* The narrowest level whose largest group could hold the domain on an empty host. */
static double
neededWidth(const vpRoom *r)
{
    for (int l = 0; l < r->nlevels; l++) {
        for (int gi = 0; gi < vpTopologyNGroups(r->topo, r->levels[l]); gi++) {
            if (emptyRoom(r, vpTopologyGroup(r->topo, r->levels[l], gi)) >= (int)r->req->vcpus)
                return levelWidth(r->topo, r->levels[l]);
        }
    }
    return levelWidth(r->topo, VP_LEVEL_HOST);
}

static vpOutcome
judge(const vpRoom *r, const vpPlan *plan, const vpMove *moves, unsigned nmoves)
{
    vpOutcome o = {.refused = plan == NULL};
    g_autoptr(vpBitmap) nodes = NULL;

    if (!plan)
        return o;
    o.degraded = plan->degraded;
    o.width = levelWidth(r->topo, plan->level);
    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(r->topo, plan->vcpu_pu[v]) : -1;
        const vpCore *core =
            pu >= 0 ? vpTopologyCore(r->topo, vpTopologyPU(r->topo, pu)->core) : NULL;
        bool stranger = false;

        for (int i = 0; core && i < core->npus; i++) {
            vpOwner own = vpCompactOwnerAt(r, moves, nmoves, core->pus[i]);
            const vpPlan *holder = own.domain ? vpLedgerLookup(r->ledger, own.domain) : NULL;

            stranger |= own.domain && (!holder || !vpTrustMutual(r->req->name, &r->req->policy,
                                                                 holder->domain, &holder->policy));
        }
        o.strangers += stranger;
    }
    nodes = vpPlanMemoryNodes(plan, r->topo);
    o.extra_nodes = MAX(hwloc_bitmap_weight(nodes) - neededNodes(r), 0);
    return o;
}

static bool
better(const vpOutcome *a, const vpOutcome *b)
{
    if (a->refused != b->refused)
        return !a->refused;
    if (a->degraded != b->degraded)
        return !a->degraded;
    if (a->strangers != b->strangers)
        return a->strangers < b->strangers;
    if (a->extra_nodes != b->extra_nodes)
        return a->extra_nodes < b->extra_nodes;
    return a->width < b->width;
}

/* What is wrong with the placer's own answer, or NULL when nothing moves could improve. */
static char *
shortfall(const vpRoom *r, const vpPlan *plan, const vpOutcome *o, const GError *error)
{
    g_autofree char *prefix = g_strdup_printf("domain '%s': ", r->req->name);

    if (o->refused)
        return g_strdup_printf("it would be refused: %s", g_str_has_prefix(error->message, prefix)
                                                              ? error->message + strlen(prefix)
                                                              : error->message);
    if (o->degraded)
        return g_strdup_printf("it would be degraded: %s", plan->degraded_reason);
    if (o->strangers)
        return g_strdup_printf("%d of its vCPUs would share a core with another trust group",
                               o->strangers);
    if (o->extra_nodes)
        return g_strdup_printf("it would span %d NUMA nodes where %d would do",
                               o->extra_nodes + neededNodes(r), neededNodes(r));
    if (r->req->policy.locality == VP_LOCALITY_AUTO && o->width > neededWidth(r))
        return g_strdup_printf("it would be placed within one %s where a smaller group would do",
                               vpLevelName(plan->level));
    return NULL;
}

/* The first candidate, in order, after whose moves the placer answers better; NULL when
 * none does. */
static vpPlan *
tryCandidates(const vpRoom *r, const GArray *cands, const vpOutcome *base, const char *why)
{
    for (guint i = 0; i < cands->len && i < VP_COMPACT_TRIES; i++) {
        const vpCandidate *cand = &g_array_index(cands, vpCandidate, i);
        g_autoptr(vpPlan) moves = vpPlanNew(r->req->name, 1); /* holds only the moves */
        g_autoptr(vpPlan) plan = NULL;
        vpOutcome o;

        if (!vpCompactMovesFor(r, cand->cores, why, moves))
            continue;
        plan = vpPlaceAfter(r->topo, r->ledger, r->req, moves->moves, moves->nmoves, NULL);
        o = judge(r, plan, moves->moves, moves->nmoves);
        if (!plan || plan->overcommit || !better(&o, base))
            continue;
        for (unsigned m = 0; m < moves->nmoves; m++)
            vpPlanAddMove(plan, moves->moves[m].domain, moves->moves[m].vcpu, moves->moves[m].from,
                          moves->moves[m].to, moves->moves[m].reason);
        return g_steal_pointer(&plan);
    }
    return NULL;
}

vpPlan *
vpPlaceCompact(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
               const vpCompactConfig *cfg, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(vpPlan) plan = vpPlace(topo, ledger, req, &local);
    g_autofree char *why = NULL;
    g_autoptr(GHashTable) memory =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)hwloc_bitmap_free);
    g_autofree int *room = g_new(int, vpTopologyNCores(topo));
    vpRoom r = {.topo = topo,
                .ledger = ledger,
                .req = req,
                .budget = cfg ? cfg->max_moves : VP_COMPACT_MAX_MOVES,
                .memory = memory,
                .room = room};
    int ncores = vpTopologyNCores(topo);
    g_autofree int *cost = g_new(int, ncores);
    g_autofree int *gain = g_new(int, ncores);
    g_autofree signed char *dest = g_new0(signed char, ncores);
    g_autofree bool *vacated = g_new0(bool, ncores);
    vpRating rate = {cost, gain, dest, vacated};
    vpBlocked blocked = {0};
    vpOutcome base;
    GArray *cands;
    vpPlan *better_plan;

    if (!plan && !g_error_matches(local, VP_ERROR, VP_ERROR_REFUSED)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return NULL;
    }
    if (r.budget == 0 || !ledger || req->has_pins || (plan && plan->how != VP_HOW_PLACED))
        goto keep;
    r.nlevels = vpPlacerLevels(topo, req->policy.locality, r.levels);
    base = judge(&r, plan, NULL, 0);
    if (!(why = shortfall(&r, plan, &base, local)) || !roomPossible(&r))
        goto keep;
    cands = candidates(&r, &rate, &blocked);
    better_plan = tryCandidates(&r, cands, &base, why);
    blocked.tried = MIN(cands->len, VP_COMPACT_TRIES);
    candidatesFree(cands);
    if (better_plan)
        return better_plan;
    if (!plan)
        blocked.stuck = countStuck(&r, &rate);
    if (!plan && blocked.unmovable + blocked.costly + blocked.stuck + blocked.tried > 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "%s; at most %u moves of running vCPUs do not make room: of the cores that "
                    "would help, %d hold what may not move, %d need more moves, %d have no "
                    "legal destination for a vCPU; %d ways to vacate were tried",
                    local->message, r.budget, blocked.unmovable, blocked.costly, blocked.stuck,
                    blocked.tried);
        return NULL;
    }

keep:
    if (!plan)
        g_propagate_error(error, g_steal_pointer(&local));
    return g_steal_pointer(&plan);
}

bool
vpCompactApply(vpLedger *ledger, const vpPlan *plan, GError **error)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    g_autoptr(GHashTable) moved =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)vpPlanFree);
    GHashTableIter it;
    gpointer value;

    for (unsigned i = 0; i < plan->nmoves; i++) {
        const vpMove *m = &plan->moves[i];
        vpPlan *copy = g_hash_table_lookup(moved, m->domain);

        if (!copy) {
            const vpPlan *cur = vpLedgerLookup(ledger, m->domain);

            if (!cur) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "move %u: domain '%s' is not in the ledger", i, m->domain);
                return false;
            }
            copy = vpPlanCopy(cur);
            g_hash_table_insert(moved, copy->domain, copy);
        }
        if (m->vcpu >= copy->nvcpus || copy->vcpu_pu[m->vcpu] != (int)m->from ||
            vpTopologyPUByOS(topo, m->to) < 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "move %u: domain '%s' vcpu %u is not on CPU %u, or CPU %u is unknown", i,
                        m->domain, m->vcpu, m->from, m->to);
            return false;
        }
        copy->vcpu_pu[m->vcpu] = (int)m->to;
        if (copy->policy.emulator != VP_EMULATOR_DEDICATED &&
            hwloc_bitmap_isset(copy->emulator, m->from)) {
            hwloc_bitmap_clr(copy->emulator, m->from);
            hwloc_bitmap_set(copy->emulator, m->to);
        }
    }
    g_hash_table_iter_init(&it, moved);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        if (!vpLedgerReplace(ledger, value, error))
            return false;
    }
    return true;
}
