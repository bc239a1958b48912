/*
 * The placer's snapshot of the host, taken once per placement: per core the free usable PUs
 * and who holds the others (see placer.c, step 1), the mask of the part being placed, each
 * group's walking order, the locality levels to try and the memory each node has free. The
 * placer's other files all ask it; it asks none of them.
 */
#include "core/place/placerpriv.h"

#include <stdlib.h>
#include <string.h>

/* A group's walking order (vpPlacerOrderCores): sort keys taken from the snapshot of the search
 * that first reached the group, sorted into cores only once a pick walks it. */
typedef struct {
    const vpGroup *g;
    vpSmt smt;
    guint64 *keys; /* NULL while owed (ctx->owed) */
    int *cores;    /* NULL until sorted */
} vpOrder;

/* A core holding a vCPU of a pack or isolate VM is that VM's (or its cookie group's): its
 * free siblings are no stranger's at any tier. A pack VM of a cookie group leaves them free
 * for its group instead of reserving them (corepick.c), and a group mate that leaves a
 * sibling of such a core frees it for the group only. */
static bool
closesCore(const vpCtx *ctx, const vpPlan *owner)
{
    return (owner->policy.smt == VP_SMT_PACK || owner->policy.smt == VP_SMT_ISOLATE) &&
           owner->how != VP_HOW_PINNED && !owner->degraded &&
           vpTrustOf(ctx->req->name, &ctx->req->policy, owner->domain, &owner->policy) >
               VP_TRUST_GROUP;
}

/* Hides the free PUs of core c from the requester. */
static void
closeCore(vpCtx *ctx, int c)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    for (int i = 0; i < core->npus; i++)
        ctx->pufree[core->pus[i]] = false;
    ctx->nclosed += ctx->nfree[c];
    ctx->nfree[c] = 0;
    ctx->closed[c] = true;
}

/* The placer walks a domain's own cores and its cookie group's alike: a resize's new vCPUs
 * take its own cores' siblings at the tiers where a group's would be taken. */
static vpTrust
relationOf(const vpCtx *ctx, const vpPlan *owner)
{
    vpTrust t = vpTrustOf(ctx->req->name, &ctx->req->policy, owner->domain, &owner->policy);

    return t == VP_TRUST_SELF ? VP_TRUST_GROUP : t;
}

/* ownerRel()'s value: the relation, and whether the holder closes its core (closesCore). */
#define REL_MASK 0xff
#define REL_CLOSES 0x100

/* The relation of one holder, cached per domain (a vCPU and a reserved PU of one domain
 * relate alike; only a vCPU closes its core). */
static gpointer
ownerRel(const vpCtx *ctx, GHashTable *rel_by_domain, vpOwner owner)
{
    gpointer r;

    if (!g_hash_table_lookup_extended(rel_by_domain, owner.domain, NULL, &r)) {
        const vpPlan *plan = vpLedgerLookup(ctx->ledger, owner.domain);
        int v = plan ? (int)relationOf(ctx, plan) : VP_TRUST_STRANGER;

        if (plan && closesCore(ctx, plan))
            v |= REL_CLOSES;
        r = GINT_TO_POINTER(v);
        g_hash_table_insert(rel_by_domain, (gpointer)owner.domain, r);
    }
    if (owner.kind != VP_OWN_VCPU)
        r = GINT_TO_POINTER(GPOINTER_TO_INT(r) & REL_MASK);
    return r;
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

bool
vpPlacerMovedPU(const vpCtx *ctx, int pu)
{
    unsigned os = vpTopologyPU(ctx->topo, pu)->os;

    for (unsigned i = 0; i < ctx->nmoves; i++) {
        if (ctx->moves[i].from == os || ctx->moves[i].to == os)
            return true;
    }
    return false;
}

static void
orderFree(gpointer data)
{
    vpOrder *order = data;

    g_free(order->keys);
    g_free(order->cores);
    g_free(order);
}

void
vpPlacerCtxInit(vpCtx *ctx, const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                const vpMove *moves, unsigned nmoves)
{
    g_autoptr(GHashTable) rel_by_domain = g_hash_table_new(NULL, NULL);
    /* neighbouring PUs mostly have one holder */
    const char *last_domain = NULL;
    vpOwnKind last_kind = VP_OWN_NONE;
    gpointer last_rel = NULL;

    ctx->topo = topo;
    ctx->ledger = ledger;
    ctx->req = req;
    ctx->moves = moves;
    ctx->nmoves = nmoves;
    ctx->ncores = vpTopologyNCores(topo);
    ctx->nfree = g_new0(int, ctx->ncores);
    ctx->nusable = g_new0(int, ctx->ncores);
    ctx->rel = g_new0(vpTrust, ctx->ncores);
    ctx->pufree = g_new0(bool, vpTopologyNPUs(topo));
    ctx->closed = g_new0(bool, ctx->ncores);
    for (int i = 0; i < VP_SMT_LAST; i++)
        ctx->orders[i] = g_hash_table_new_full(NULL, NULL, NULL, orderFree);
    ctx->owed = g_ptr_array_new();
    ctx->nok = g_new0(int, ctx->ncores);
    ctx->room = NULL;
    ctx->nclosed = 0;

    for (int c = 0; c < ctx->ncores; c++) {
        const vpCore *core = vpTopologyCore(topo, c);

        bool closed = false;

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
            if (owner.domain == last_domain && owner.kind == last_kind) {
                r = last_rel;
            } else {
                r = ownerRel(ctx, rel_by_domain, owner);
            }
            last_domain = owner.domain;
            last_kind = owner.kind;
            last_rel = r;
            ctx->rel[c] = MAX(ctx->rel[c], (vpTrust)(GPOINTER_TO_INT(r) & REL_MASK));
            closed |= (GPOINTER_TO_INT(r) & REL_CLOSES) != 0;
        }
        if (closed)
            closeCore(ctx, c);
        ctx->nok[c] = ctx->nfree[c];
    }
}

void
vpPlacerCtxClear(vpCtx *ctx)
{
    g_free(ctx->nfree);
    g_free(ctx->nusable);
    g_free(ctx->rel);
    g_free(ctx->pufree);
    g_free(ctx->closed);
    for (int i = 0; i < VP_SMT_LAST; i++) {
        if (ctx->orders[i])
            g_hash_table_destroy(ctx->orders[i]);
    }
    g_ptr_array_free(ctx->owed, TRUE);
    g_free(ctx->nok);
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
        return ctx->rel[c] == VP_TRUST_STRANGER ? 0 : ctx->nfree[c];
    }
}

/* Sort keys of vpPlacerOrderCores(): room fits in 20 bits and the core index in 21 for any host
 * hwloc describes, so one integer compare orders by node room, then L3 room (both
 * descending), then topology order. */
#define VP_ORDER_BITS 21
#define VP_ORDER_ROOM_MAX ((1 << (VP_ORDER_BITS - 1)) - 1)

static int
compareKeys(const void *a, const void *b)
{
    guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;

    return (x > y) - (x < y);
}

static guint64
orderKey(int node_room, int l3_room, int c)
{
    return (guint64)(VP_ORDER_ROOM_MAX - MIN(node_room, VP_ORDER_ROOM_MAX)) << (2 * VP_ORDER_BITS) |
           (guint64)(VP_ORDER_ROOM_MAX - MIN(l3_room, VP_ORDER_ROOM_MAX)) << VP_ORDER_BITS |
           (guint64)c;
}

static void
orderKeys(const vpCtx *ctx, vpOrder *order)
{
    const vpGroup *g = order->g;
    int nnodes = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);
    int nl3 = vpTopologyNGroups(ctx->topo, VP_LEVEL_L3);
    g_autofree int *node_room = g_new0(int, MAX(nnodes, 1));
    g_autofree int *l3_room = g_new0(int, MAX(nl3, 1));

    order->keys = g_new(guint64, g->ncores);
    for (int i = 0; i < g->ncores; i++) {
        const vpCore *core = vpTopologyCore(ctx->topo, g->cores[i]);
        int room = coreRoom(ctx, g->cores[i], order->smt);

        if (core->group[VP_LEVEL_NUMA] >= 0)
            node_room[core->group[VP_LEVEL_NUMA]] += room;
        if (core->group[VP_LEVEL_L3] >= 0)
            l3_room[core->group[VP_LEVEL_L3]] += room;
    }
    for (int i = 0; i < g->ncores; i++) {
        const vpCore *core = vpTopologyCore(ctx->topo, g->cores[i]);
        int nr = core->group[VP_LEVEL_NUMA] >= 0 ? node_room[core->group[VP_LEVEL_NUMA]] : 0;
        int lr = core->group[VP_LEVEL_L3] >= 0 ? l3_room[core->group[VP_LEVEL_L3]] : 0;

        order->keys[i] = orderKey(nr, lr, g->cores[i]);
    }
}

/* The room depends only on the snapshot and the policy, so each group's order is fixed once
 * per placement (the ctx owns it), by the snapshot of the first vpPlacerSearch that reaches the
 * group; its keys are taken at once when needed now, else before the snapshot changes. */
static vpOrder *
orderEntry(const vpCtx *ctx, const vpGroup *g, vpSmt smt, bool now)
{
    vpOrder *order = g_hash_table_lookup(ctx->orders[smt], g);

    if (!order) {
        order = g_new0(vpOrder, 1);
        order->g = g;
        order->smt = smt;
        g_hash_table_insert(ctx->orders[smt], (gpointer)g, order);
        if (!now)
            g_ptr_array_add(ctx->owed, order);
    }
    if (now && !order->keys)
        orderKeys(ctx, order);
    return order;
}

/* Takes the owed keys from the snapshot before it changes. */
static void
orderSettle(const vpCtx *ctx)
{
    for (guint i = 0; i < ctx->owed->len; i++) {
        vpOrder *order = ctx->owed->pdata[i];

        if (!order->keys)
            orderKeys(ctx, order);
    }
    g_ptr_array_set_size(ctx->owed, 0);
}

static bool
orderKept(const vpGroup *g)
{
    return g->level <= VP_LEVEL_L3 || g->ncores < 2;
}

const int *
vpPlacerOrderCores(const vpCtx *ctx, const vpGroup *g, vpSmt smt)
{
    vpOrder *order;

    if (orderKept(g))
        return g->cores;
    order = orderEntry(ctx, g, smt, true);
    if (!order->cores) {
        qsort(order->keys, g->ncores, sizeof(guint64), compareKeys);
        order->cores = g_new(int, g->ncores);
        for (int i = 0; i < g->ncores; i++)
            order->cores[i] =
                (int)(order->keys[i] & ((G_GUINT64_CONSTANT(1) << VP_ORDER_BITS) - 1));
    }
    return order->cores;
}

void
vpPlacerOrderOwe(const vpCtx *ctx, const vpGroup *g, vpSmt smt)
{
    if (!orderKept(g))
        orderEntry(ctx, g, smt, false);
}

void
vpPlacerCtxSetMask(vpCtx *ctx, const bool *ok)
{
    ctx->ok = ok;
    for (int c = 0; c < ctx->ncores; c++) {
        const vpCore *core = vpTopologyCore(ctx->topo, c);
        int nok = 0;

        for (int i = 0; i < core->npus; i++)
            nok += ctx->pufree[core->pus[i]] && (!ok || ok[core->pus[i]]);
        if (nok != ctx->nok[c])
            orderSettle(ctx);
        ctx->nok[c] = nok;
    }
}

void
vpPlacerCtxHold(vpCtx *ctx, const vpPick *pick)
{
    orderSettle(ctx);
    for (int i = 0; i < pick->n + (int)pick->reserved->len; i++) {
        int pu = i < pick->n ? pick->pus[i] : g_array_index(pick->reserved, int, i - pick->n);
        int c = vpTopologyPU(ctx->topo, pu)->core;

        if (!ctx->pufree[pu])
            continue;
        ctx->pufree[pu] = false;
        ctx->nfree[c]--;
        ctx->rel[c] = MAX(ctx->rel[c], VP_TRUST_GROUP);
    }
}

vpLevel
vpPlacerLocalityLevel(vpLocality locality)
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
        out[0] = vpPlacerLocalityLevel(locality);
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

guint64
vpPlacerGroupFree(const vpCtx *ctx, const vpPlan *plan, const vpGroup *node, guint64 page)
{
    guint64 held, total = 0;

    if (!node->memory)
        return G_MAXUINT64;
    held = (ctx->ledger ? vpLedgerNodeMemory(ctx->ledger, node->os, page) : 0) +
           vpPlanMemoryOnPages(plan, node->os, page);
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

const vpGroup *
vpPlacerMemTarget(const vpCtx *ctx, const vpPart *part, int g)
{
    const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
    int os;

    if (!part->mem || node->made_up || hwloc_bitmap_isset(part->mem, node->os))
        return node;
    hwloc_bitmap_foreach_begin(os, part->mem)
    {
        const vpGroup *mem = vpTopologyMemNodeByOS(ctx->topo, os);

        if (mem && hwloc_bitmap_isset(mem->near, node->os))
            return mem;
    }
    hwloc_bitmap_foreach_end();
    return node;
}

int
vpPlacerNodeRoom(const vpCtx *ctx, const vpPick *pick, int pu)
{
    int g, used = 0;

    if (!ctx->room)
        return G_MAXINT;
    g = vpTopologyNodeOfPU(ctx->topo, pu);
    for (int i = 0; i < pick->n; i++)
        used += vpTopologyNodeOfPU(ctx->topo, pick->pus[i]) == g;
    return MAX(ctx->room[g] - used, 0);
}
