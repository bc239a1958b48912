/*
 * Fixtures of the rebalancer's tests (unit and golden): topologies numbered as on Intel,
 * plans written by hand, and one interval of the daemon's loop with the policy check run
 * after every applied move. Failures are Check assertions.
 */
#pragma once

#include "core/balance/rebalance.h"

#include <stdbool.h>

#define VP_FIX_SEC 1000000000LL

/* packages x numa x l3 x cores x threads, Linux numbering as on Intel (sibling = n + cores). */
vpTopology *vpFixTopology(int packages, int numa, int l3, int cores, int threads);
/* Logical PU, core, and group at level of Linux CPU os (asserts that it exists). */
int vpFixPU(const vpTopology *topo, unsigned os);
int vpFixCoreOf(const vpTopology *topo, unsigned os);
int vpFixGroupOf(const vpTopology *topo, unsigned os, vpLevel level);
/* A plan as the placer would record it: vCPUs on cpus, reserved siblings, the emulator on
 * both, the smallest level that holds the vCPUs. */
vpPlan *vpFixPlan(const vpTopology *topo, const char *domain, const char *smt, const char *group,
                  const int *cpus, unsigned n, const int *reserved, unsigned nres);
/* vpFixPlan of a trust group with one cookie (coresched=group). */
vpPlan *vpFixGroupPlan(const vpTopology *topo, const char *domain, const char *smt,
                       const char *group, const int *cpus, unsigned n);
/* Whether one of the rebalancer's notes contains needle. */
bool vpFixNotesHave(const GPtrArray *notes, const char *needle);
/* Adds plan (asserting the ledger takes it) and frees it. */
void vpFixAddPlan(vpLedger *ledger, vpPlan *plan);
/* That moves, applied to the ledger that was before, kept every policy and changed nothing
 * else. */
void vpFixCheckMoves(const vpLedger *ledger, GHashTable *before, GPtrArray *moves);
/* Plan, apply, check, commit: one interval of the daemon's loop; returns the moves. */
GPtrArray *vpFixPass(vpRebalancer *rb, vpPressure *p, vpLedger *ledger, gint64 now,
                     GPtrArray *notes);
