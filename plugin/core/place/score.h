/*
 * One scorer for every placer: vcpuplace's own (`vcpuplace simulate`) and the baselines of
 * the benchmarks (`vcpuplace score`), so that their figures are computed the same way.
 * It keeps its own occupancy map and knows nothing of how placements were decided.
 */
#pragma once

#include "core/model/policy.h"
#include "core/model/topology.h"

#include <json-glib/json-glib.h>
#include <stdbool.h>

typedef struct _vpScore vpScore;

vpScore *vpScoreNew(const vpTopology *topo);
void vpScoreFree(vpScore *score);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpScore, vpScoreFree)

/* A placed cpus=shared VM of n vCPUs: counted as started and placed; its cores are the
 * ledger's business (vpSharedCookies() in placer.h tells who meets whom there), so the
 * figures of sibling sharing cover dedicated VMs only. */
bool vpScoreSharedPlaced(vpScore *score, const char *name, const vpPolicy *policy, unsigned n,
                         double us, GError **error);
/* A placed VM: its policy (smt, trust group and coresched decide who it trusts), Linux CPU
 * per vCPU, the CPUs it holds idle (reserved siblings) and the memory it asked (bytes, 0:
 * none; held on its vCPUs' nodes in proportion to its vCPUs there). Fails on a CPU the
 * topology lacks or one another VM holds (a placer bug worth reporting). */
bool vpScorePlaced(vpScore *score, const char *name, const vpPolicy *policy, unsigned guest_threads,
                   unsigned nvcpus, const int *vcpu_cpu, hwloc_const_bitmap_t reserved,
                   guint64 memory, double decision_us, GError **error);
/* A running VM's vCPU re-pinned from one Linux CPU to a free one, to make room for the next
 * placement (counted as that admission's move). */
bool vpScoreMoved(vpScore *score, const char *name, unsigned from, unsigned to, GError **error);
void vpScoreRefused(vpScore *score, unsigned nvcpus, double decision_us);
bool vpScoreStopped(vpScore *score, const char *name);
/* Untrusted pairs on one core right now: not one VM, one cookie group nor two smt=share VMs
 * (vpTrustMutual). */
int vpScoreUntrustedSharedCores(const vpScore *score);
JsonNode *vpScoreToJson(const vpScore *score);
