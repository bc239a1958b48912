/*
 * The placer's private header: the snapshot, pick and part types, and what each of its
 * files offers the others (placer.c has the outline and includes the rest through here).
 * Calls run one way: placer.c -> numafit.c -> search.c -> corepick.c -> snapshot.c, search.c
 * -> refusal.c -> snapshot.c, and emulator.c beside numafit.c, shared.c beside it (placer.c
 * -> shared.c). Nothing outside plugin/core/place includes this.
 */
#pragma once

#include "core/model/trust.h"
#include "core/place/placer.h"

#include <stdbool.h>

typedef enum {
    TIER_WHOLE,        /* isolate, pack: whole free cores only */
    TIER_PACK_GROUP,   /* a pack VM of a cookie group: its group's cores, then whole cores */
    TIER_PACK_ANY,     /* ... then siblings of share VMs' and strangers' cores (no whole core) */
    TIER_SPREAD,       /* a free core per vCPU */
    TIER_SPREAD_OWN,   /* ... then the VM's own siblings */
    TIER_SPREAD_GROUP, /* ... then siblings of domains that share its cookie */
    TIER_SPREAD_ANY,   /* ... then any free sibling (no free core left anywhere) */
    TIER_SHARE,        /* its group's cores, whole free cores, then share VMs' cores */
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
                       * another trust group's, TIER_PACK_ANY; share: with another
                       * cookie's) */
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

/*
 * snapshot.c: the host as one placement sees it. Each call of vpPlaceAfter() takes one
 * snapshot (vpPlacerCtxInit), narrows it to the part being placed (vpPlacerCtxSetMask),
 * takes what each part placed out of it (vpPlacerCtxHold) and frees it (vpPlacerCtxClear).
 */
void vpPlacerCtxInit(vpCtx *ctx, const vpTopology *topo, const vpLedger *ledger,
                     const vpRequest *req, const vpMove *moves, unsigned nmoves);
void vpPlacerCtxClear(vpCtx *ctx);
/* Only PUs ok[] allows (NULL: every PU) count as free until the next call. */
void vpPlacerCtxSetMask(vpCtx *ctx, const bool *ok);
/* What a placed part holds is no longer free for the next part; its cores count as the
 * domain's own for spread's sibling tiers. */
void vpPlacerCtxHold(vpCtx *ctx, const vpPick *pick);
/* Whether a move of the snapshot's (compaction) leaves or reaches logical PU pu. */
bool vpPlacerMovedPU(const vpCtx *ctx, int pu);
/* Group g's cores, roomiest NUMA node first and inside it roomiest L3 first, then in
 * topology order: a VM that must spill over several nodes or L3s then takes the fewest, not
 * the first ones with any room. Groups no larger than an L3 keep topology order. The order
 * is fixed once per placement, by the snapshot of the first search that reaches g. */
const int *vpPlacerOrderCores(const vpCtx *ctx, const vpGroup *g, vpSmt smt);
/* A search passed g by: its order is still fixed by this snapshot, taken before it changes. */
void vpPlacerOrderOwe(const vpCtx *ctx, const vpGroup *g, vpSmt smt);
/* The level a locality names: l3, numa, package; VP_LEVEL_HOST for the others. */
vpLevel vpPlacerLocalityLevel(vpLocality locality);
/* Bytes still free for a domain of page size page on a NUMA node (with CPUs or without),
 * the plan's earlier parts counted; G_MAXUINT64 when the node's memory is unknown. */
guint64 vpPlacerGroupFree(const vpCtx *ctx, const vpPlan *plan, const vpGroup *node, guint64 page);
/* The node that holds the memory of a part's vCPUs on NUMA group g: g itself, or the
 * CPU-less node of part->mem near g (the kernel binds to the nearest node of the set). */
const vpGroup *vpPlacerMemTarget(const vpCtx *ctx, const vpPart *part, int g);
/* vCPUs the node of logical PU pu may still take beyond those the pick has there: the
 * memory ask per node of a spanning part (ctx->room), else no limit. */
int vpPlacerNodeRoom(const vpCtx *ctx, const vpPick *pick, int pu);

/* search.c: which group of which level takes a VM, tier by tier. */
/* The best pick of n PUs for smt at the locality's levels, the policy's tiers in order
 * (numa:N: one cell per node; a group of several nodes: balanced shares); false when no
 * group of any level holds it. */
bool vpPlacerSearch(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n, vpChoice *best);

/* corepick.c: which cores a policy takes inside one group, tier by tier. */
void vpPlacerPickInit(vpPick *pick, unsigned n);
void vpPlacerPickClear(vpPick *pick);
/* Empties pick for a new try, its storage kept. */
void vpPlacerPickReset(vpPick *pick);
/* Up to n PUs of group g for smt at tier, into pick (pick->n short when g lacks them). */
void vpPlacerPickInGroup(const vpCtx *ctx, const vpGroup *g, vpSmt smt, vpTier tier, int n,
                         vpPick *pick);
/* smt=share with no free PU left: free PUs first, then PUs only share domains hold, by
 * fewest holders; false when even that leaves n short. */
bool vpPlacerPickOvercommit(const vpCtx *ctx, int n, vpChoice *choice);

/* refusal.c: the figures a refusal gives an operator (each returned string: caller frees). */
/* "L3 group", "NUMA node", "package", "cluster" or "host". */
const char *vpPlacerLevelPhrase(vpLevel level);
/* Why locality=numa:nodes cannot be asked of this host at all, or NULL: the n vCPUs must
 * make at least `nodes` guest cores and the host must have that many nodes. */
char *vpPlacerSplitImpossible(const vpCtx *ctx, unsigned nodes, int n);
/* What n vCPUs of smt needed at the locality and what the best group of each level had. */
char *vpPlacerRefusalText(const vpCtx *ctx, vpSmt smt, vpLocality locality, int n);
/* bytes as vpMemoryFormat() writes it, "unknown" for G_MAXUINT64. */
char *vpPlacerBytesText(guint64 bytes);
/* "4 vCPUs with smt=isolate need 4 free whole cores on nodes 5; node 5 has 2": the figures
 * per allowed node, and the free memory of each allowed node when memory was short. */
char *vpPlacerPartRefusal(const vpCtx *ctx, const vpPlan *plan, const vpPart *part);

/* emulator.c: the emulator threads as the policy asks (housekeeping, the vCPUs' CPUs, a
 * dedicated PU), kept off real-time vCPUs; a refusal when it cannot be met. */
bool vpPlacerPlaceEmulator(const vpCtx *ctx, vpPlan *plan, vpChoice *choice, GError **error);

/* numafit.c: the domain's NUMA statements, cpuset and memory, as parts placed one by one. */
/* Refusals for what no placement could meet: nodes the host lacks, a cpuset of no usable
 * CPU, more memory than the host has. */
bool vpPlacerCheckConstraints(const vpTopology *topo, const vpRequest *req, GError **error);
/* The domain cut into parts (vpPart) of the online vCPU ids (ascending): one per guest cell,
 * per node of an interleave nodeset, else one. */
GArray *vpPlacerCutParts(const vpTopology *topo, const vpRequest *req, const unsigned *ids,
                         unsigned n);
/* Places each part in turn into plan, all of them merged into *all. */
bool vpPlacerPlaceParts(vpCtx *ctx, vpPlan *plan, GArray *parts, vpChoice *all, GError **error);
/* The mask for one part: usable PUs inside the cpuset, on allowed nodes (hard, then only and
 * not avoid), whose node has need bytes free; off_own: off the domain's own emulator and
 * iothread pins. Caller frees. */
bool *vpPlacerPartMask(const vpCtx *ctx, const vpPlan *plan, const vpPart *part, guint64 need,
                       hwloc_const_bitmap_t only, hwloc_const_bitmap_t avoid, bool off_own);
/* Whether a refused domain may be cut by its memory: only memory that no node could hold
 * even when empty of others' memory is cut; a domain refused for CPUs, or asking
 * locality=l3/numa, keeps its refusal. */
bool vpPlacerSplittable(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                        GArray *parts);
/* The domain cut into k shares on k distinct nodes (what Nova's hw:numa_nodes asks of a
 * large flavor): vCPUs and memory split evenly. */
GArray *vpPlacerSplitByMemory(const vpRequest *req, const unsigned *ids, unsigned n, unsigned k);

/* shared.c, beside the outline: a cpus=shared VM's plan (vpPlace() hands it over after its
 * checks), or VP_ERROR_REFUSED with each node's shared load against the ratio. */
vpPlan *vpPlaceShared(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                      GError **error);
