/*
 * The placer's parts, shared by the files that make it up (placer.c has the outline);
 * nothing outside the placer includes this.
 */
#pragma once

#include "core/model/trust.h"
#include "core/place/placer.h"

#include <stdbool.h>
#include <string.h>

typedef enum {
    TIER_WHOLE,        /* isolate, pack: whole free cores only */
    TIER_PACK_GROUP,   /* a pack VM of a cookie group: its group's cores, then whole cores */
    TIER_PACK_ANY,     /* ... then siblings of share VMs' and strangers' cores (no whole core) */
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
    vpTrust *rel; /* per core, its worst holder to the requester (the requester's own count
                   * as its group's: VP_TRUST_SELF never appears) */
    bool *pufree; /* per logical PU: usable and not held */
    int nclosed; /* free usable PUs hidden on cores other domains keep (snapshot.c), for refusals */
    bool *closed; /* per core: kept by another domain's pack or isolate vCPU (snapshot.c) */
    GHashTable *orders[VP_SMT_LAST]; /* group -> its vpOrder (orderCores) */
    /* orders whose keys are still to be taken from the snapshot as it is: taken before the
     * snapshot changes (ctxSetMask, ctxHold), dropped unused when the placement ends */
    GPtrArray *owed;
    /* NUMA and cpuset constraints (see "Constraints" in numafit.c): per logical PU whether a vCPU
     * of the part being placed may take it (NULL: any), and per core how many free PUs
     * are such. */
    const bool *ok;
    int *nok;
    /* The memory ask of a part that may span nodes (numafit.c): per NUMA node (logical
     * index) how many of the part's vCPUs its free memory holds, each vCPU bringing its
     * share of the part's memory; NULL while every allowed node holds the whole part. */
    const int *room;
} vpCtx;

typedef struct {
    int n;            /* PUs picked */
    int *pus;         /* logical PU per vCPU */
    int nshared;      /* vCPUs that share a core with another vCPU of the VM (pack: with
                       * another trust group's, TIER_PACK_ANY) */
    int nwhole;       /* whole cores a pack VM of a cookie group breaks (TIER_PACK_GROUP) */
    int leftover;     /* free PUs the group keeps */
    int node_left;    /* free PUs its NUMA node keeps, for a group inside one node; else 0 */
    GArray *reserved; /* logical PUs held idle */
} vpPick;

typedef struct {
    vpLevel level;
    int index;
    vpPick pick;
} vpChoice;

/* A group's walking order (orderCores): sort keys taken from the snapshot of the search
 * that first reached the group, sorted into cores only once a pick walks it. */
typedef struct {
    const vpGroup *g;
    vpSmt smt;
    guint64 *keys; /* NULL while owed (ctx->owed) */
    int *cores;    /* NULL until sorted */
} vpOrder;

/* One part of a domain, placed as one (see "Constraints" in numafit.c). */
typedef struct {
    unsigned n;
    unsigned *ids;       /* vCPU ids */
    guint64 memory;      /* bytes */
    hwloc_bitmap_t hard; /* Linux node numbers the part must stay on, NULL: any */
    /* The hard nodeset as the domain wrote it when it names CPU-less nodes (then hard holds
     * the CPU nodes near them, see vpPlacerPlaceParts), else NULL. */
    hwloc_bitmap_t mem;
    hwloc_bitmap_t prefer; /* tried first, NULL: none */
    bool one_node;
    int cell;     /* guest cell id, -1 */
    guint64 page; /* huge page size of a cell's own <page nodeset>, 0: the domain's */
} vpPart;

static inline guint64
partPage(const vpCtx *ctx, const vpPart *part)
{
    return part->page ? part->page : ctx->req->hugepage_size;
}

/* A core every PU of which is usable and free: isolate and pack own such cores. */
static inline bool
coreWhole(const vpCtx *ctx, int c)
{
    return ctx->rel[c] == VP_TRUST_NONE && ctx->nok[c] > 0 &&
           ctx->nfree[c] == vpTopologyCore(ctx->topo, c)->npus;
}

/* A core no VM holds anything on (housekeeping siblings do not count against it). */
static inline bool
coreIdle(const vpCtx *ctx, int c)
{
    return ctx->rel[c] == VP_TRUST_NONE && ctx->nok[c] > 0;
}

/* snapshot.c: the per-placement snapshot of the host (vpCtx) and the walking order */
bool vpPlacerMovedPU(const vpCtx *ctx, int pu);
void vpPlacerCtxInit(vpCtx *ctx, const vpTopology *topo, const vpLedger *ledger,
                     const vpRequest *req, const vpMove *moves, unsigned nmoves);
void vpPlacerCtxClear(vpCtx *ctx);
vpOrder *vpPlacerOrderEntry(const vpCtx *ctx, const vpGroup *g, vpSmt smt, bool now);
bool vpPlacerOrderKept(const vpGroup *g);
const int *vpPlacerOrderCores(const vpCtx *ctx, const vpGroup *g, vpSmt smt);
void vpPlacerCtxSetMask(vpCtx *ctx, const bool *ok);
void vpPlacerCtxHold(vpCtx *ctx, const vpPick *pick);

/* corepick.c: which cores a policy takes, tier by tier and level by level */
void vpPlacerPickInit(vpPick *pick, unsigned n);
void vpPlacerPickClear(vpPick *pick);
vpLevel vpPlacerLocalityLevel(vpLocality locality);
bool vpPlacerSearch(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n, vpChoice *best);
bool vpPlacerPickOvercommit(const vpCtx *ctx, int n, vpChoice *choice);

/* refusal.c: the figures a refusal gives an operator */
const char *vpPlacerLevelPhrase(vpLevel level);
char *vpPlacerSplitImpossible(const vpCtx *ctx, unsigned nodes, int n);
char *vpPlacerRefusalText(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n);
char *vpPlacerBytesText(guint64 bytes);
char *vpPlacerPartRefusal(const vpCtx *ctx, const vpPlan *plan, const vpPart *part);

/* emulator.c: where the emulator threads go */
gboolean vpPlacerPlaceEmulator(const vpCtx *ctx, vpPlan *plan, vpChoice *choice, GError **error);
gboolean vpPlacerEmulatorOffRealtime(const vpCtx *ctx, vpPlan *plan, vpChoice *choice,
                                     GError **error);

/* numafit.c: NUMA statements, the cpuset and memory: parts, masks and what each node holds */
bool vpPlacerHardMode(vpMemMode mode);
guint64 vpPlacerNodeFree(const vpCtx *ctx, const vpPlan *plan, int g, guint64 page);
guint64 vpPlacerGroupFree(const vpCtx *ctx, const vpPlan *plan, const vpGroup *node, guint64 page);
/* The node that holds the memory of a part's vCPUs on NUMA group g: g itself, or the
 * CPU-less node of part->mem near g. */
const vpGroup *vpPlacerMemTarget(const vpCtx *ctx, const vpPart *part, int g);
bool *vpPlacerPartMask(const vpCtx *ctx, const vpPlan *plan, const vpPart *part, guint64 need,
                       hwloc_const_bitmap_t only, hwloc_const_bitmap_t avoid, bool off_own);
int vpPlacerNodeRoom(const vpCtx *ctx, const vpPick *pick, int pu);
gboolean vpPlacerPlaceParts(vpCtx *ctx, vpPlan *plan, GArray *parts, vpChoice *all, GError **error);
GArray *vpPlacerCutParts(const vpTopology *topo, const vpRequest *req, const unsigned *ids,
                         unsigned n);
gboolean vpPlacerCheckConstraints(const vpTopology *topo, const vpRequest *req, GError **error);
GArray *vpPlacerSplitByMemory(const vpRequest *req, const unsigned *ids, unsigned n, unsigned k);
bool vpPlacerSplittable(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                        GArray *parts);
