/*
 * Properties every plan must have, checked on every golden and simulate case:
 * no PU given twice, counting the domains' own pins; no policy puts two trust groups on one
 * core's siblings (two smt=share domains excepted) while a whole free core could hold the PU
 * instead (inside the cpuset and hard nodes, and on a node whose free memory holds the
 * vCPU's share where the memory follows the vCPUs); pack puts guest sibling threads on host
 * sibling PUs; plans stay inside the allowed, online,
 * non-housekeeping PUs; no vCPU outside a strict, restrictive or interleave nodeset or its
 * <vcpu cpuset>; no guest cell split across host nodes unless relaxed where no node could
 * hold it; no node's memory overcommitted; the domain's own pins kept and held.
 * A plan's moves of running vCPUs: at most max_moves; only domains placed by vcpuplace with
 * rebalance=auto; each from the vCPU's PU to a free usable PU, never onto a core with a
 * stranger's vCPU (trust: one domain, one trust group, or two share domains, which accept
 * any neighbour), never off the moved domain's memory nodes.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/model/request.h"

/* ledger: what was held before the plan (the plan is not in it yet). */
gboolean vpCheckPlan(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                     const vpPlan *plan, GError **error);
/* ledger: before the moves; the caller then applies them and checks the plan itself. */
gboolean vpCheckMoves(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan,
                      unsigned max_moves, GError **error);
