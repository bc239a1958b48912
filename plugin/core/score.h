/*
 * One scorer for every placer: vcpuplace's own (`vcpuplace simulate`) and the baselines of
 * the benchmarks (`vcpuplace score`), so that their figures are computed the same way.
 * It keeps its own occupancy map and knows nothing of how placements were decided.
 */
#pragma once

#include "policy.h"
#include "topology.h"

#include <json-glib/json-glib.h>

typedef struct _vpScore vpScore;

vpScore *vpScoreNew(const vpTopology *topo);
void vpScoreFree(vpScore *score);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpScore, vpScoreFree)

/* A placed VM: Linux CPU per vCPU, and the CPUs it holds idle (reserved siblings). Fails on
 * a CPU the topology lacks or one another VM holds (a placer bug worth reporting). */
gboolean vpScorePlaced(vpScore *score, const char *name, const char *group, vpSmt smt,
                       unsigned guest_threads, unsigned nvcpus, const int *vcpu_cpu,
                       hwloc_const_bitmap_t reserved, double decision_us, GError **error);
void vpScoreRefused(vpScore *score, unsigned nvcpus, double decision_us);
gboolean vpScoreStopped(vpScore *score, const char *name);
/* Untrusted pairs on one core right now (trust = same non-empty group). */
int vpScoreUntrustedSharedCores(const vpScore *score);
JsonNode *vpScoreToJson(const vpScore *score);
