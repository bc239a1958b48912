/*
 * A running domain's vCPU count changed (`virsh setvcpus DOMAIN N --live`): the plan for
 * the new count. vCPUs that stay keep their PUs; new ones are placed by the placer under
 * the domain's own policy, beside the vCPUs it has: within the same locality group while
 * that has room, its own cores' siblings before other domains' (they share its cookie),
 * pack filling the sibling it holds idle first. A vCPU that exists cannot be refused: when
 * the policy cannot be met it is relaxed, and when no PU is free at all the vCPU is left
 * unpinned (vcpu_pu -1); either way degraded_reason says so. Removed vCPUs free their PUs
 * and, for isolate, the siblings held idle for them.
 */
#pragma once

#include "ledger.h"
#include "plan.h"

/* plan: the domain's current plan (how placed or adopted), as recorded in ledger. Returns
 * the plan for nvcpus vCPUs, which vpLedgerReplace() accepts in place of plan. */
vpPlan *vpPlanResize(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan,
                     unsigned nvcpus, GError **error);
