/*
 * The rebalancer: (pressure, ledger, topology, policies) -> a short list of vCPU moves.
 * Pure and deterministic; it keeps only the memory of its own past moves, fed back by
 * vpRebalanceCommit() once the daemon has actuated them.
 *
 * Like select_idle_sibling() for one woken task, it asks small questions one topology
 * level at a time, but only for a vCPU that has waited (or co-run with foreign load) for
 * the configured persistence: an idle whole core in the same L3 first, then in the same
 * NUMA node (never off the node: the guest's memory stays where it is). isolate and pack
 * domains move only onto whole idle cores, and pack moves a core's guest threads together
 * so they stay on one core's siblings; spread may then share a sibling with its own
 * domain, then with its trust group; share also with domains that said smt=share. Domains
 * with rebalance=off or pins of their own (how=pinned) are never moved.
 *
 * Re-expansion: after the hotspots, a spread domain two of whose vCPUs share a core gets one
 * of them moved onto a whole idle core of its memory nodes (its L3 first), one per domain
 * and pass, under the same bounds as any move; failing that, a spread vCPU that shares a
 * core with a vCPU of another domain of its trust group (compaction's group move) goes onto
 * a whole idle core of its node, its other vCPUs' L3 first.
 *
 * Bounds: at most max_moves decisions per pass; a moved vCPU stays min_residency, doubled
 * for each earlier move still remembered; it does not return to a PU it left within
 * memory unless that PU has been idle for return_quiet intervals since (the load that
 * drove it away is gone).
 *
 * Wake-coupled domains (wake_wide, inverted): the kernel's wake_wide() spreads a waker
 * whose wakees keep changing and otherwise keeps wakeups cache-affine. Host counters do not
 * say which vCPU woke which, but a vCPU's voluntary switches are its wakeups, and in a
 * guest most of them are interrupts, many of them IPIs from its sibling vCPUs. A domain of
 * two or more vCPUs that fits one L3 and whose vCPUs each wake at least coupled_wakeups
 * times a second (smoothed mean) is taken to be talking to itself: its moves stay within
 * the L3 that holds most of its vCPUs, where an IPI and the data it announces are cheap.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/balance/pressure.h"
#include "core/model/topology.h"

#include <stdbool.h>

typedef struct {
    unsigned max_moves;      /* decisions per pass (a pack core is one), >= 1 */
    gint64 min_residency_ns; /* a moved vCPU stays at least this long */
    gint64 memory_ns;        /* how long a move is remembered, >= min_residency_ns */
    unsigned return_quiet;   /* idle intervals before a vCPU may return to a PU it left */
    double coupled_wakeups;  /* wakeups/s per vCPU from which a domain is wake-coupled */
} vpRebalanceConfig;

/* max_moves 2, min_residency 60 s, memory 600 s, return_quiet 30, coupled_wakeups 1000. */
void vpRebalanceConfigInit(vpRebalanceConfig *cfg);
bool vpRebalanceConfigValidate(const vpRebalanceConfig *cfg, GError **error);

/* vpMove is plan.h's: rebalance and admission moves go through one actuator. */
void vpMoveFree(vpMove *move);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpMove, vpMoveFree)

typedef struct _vpRebalancer vpRebalancer;

vpRebalancer *vpRebalancerNew(const vpRebalanceConfig *cfg);
void vpRebalancerFree(vpRebalancer *rb);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpRebalancer, vpRebalancerFree)
const vpRebalanceConfig *vpRebalancerGetConfig(const vpRebalancer *rb);

/* The moves for this pass, most urgent first (an array of vpMove that frees them); nothing
 * changes, so this is also the dry run. now_ns: CLOCK_MONOTONIC or any steady clock used
 * consistently. notes, when not NULL, receives one line (char *, caller frees) per
 * hotspot left alone and why. */
GPtrArray *vpRebalancePlan(const vpRebalancer *rb, const vpPressure *p, const vpLedger *ledger,
                           gint64 now_ns, GPtrArray *notes);
/* Moves the vCPUs in the ledger: per domain a copy of its plan with vcpu_pu updated, the
 * reserved siblings of isolate and pack carried to the new cores, an emulator set that
 * followed the vCPUs still following them, and the locality level widened if a move left
 * it; then vpLedgerReplace. All or nothing. An overcommitted smt=share plan that no longer
 * time-shares a PU afterwards loses its overcommit flag and that part of its degradation. */
bool vpRebalanceApply(vpLedger *ledger, GPtrArray *moves, GError **error);
/* Records actuated moves (residency, memory, counts) and restarts the pressure figures
 * of the PUs and vCPUs involved, so that what follows is measured afresh. */
void vpRebalanceCommit(vpRebalancer *rb, vpPressure *p, const vpTopology *topo, GPtrArray *moves,
                       gint64 now_ns);
/* Moves committed for one vCPU since the rebalancer started. */
guint64 vpRebalancerMoves(const vpRebalancer *rb, const char *domain, unsigned vcpu);
/* Drops what is remembered of a domain (it stopped). */
void vpRebalancerForgetDomain(vpRebalancer *rb, const char *domain);
