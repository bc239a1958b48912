/*
 * A running domain's vCPU count changed (`virsh setvcpus DOMAIN N --live`): the plan for
 * the new count. vCPUs that stay keep their PUs; new ones are placed by the placer under
 * the domain's own policy, beside the vCPUs it has: within the same locality group while
 * that has room, its own cores' siblings before other domains' (they share its cookie),
 * pack filling the sibling it holds idle first. A vCPU that exists cannot be refused: when
 * the policy cannot be met it is relaxed, and when no PU is free at all the vCPU is left
 * unpinned (vcpu_pu -1); either way degraded_reason says so. Removed vCPUs free their PUs
 * and, for isolate, the siblings held idle for them.
 *
 * Memory does not move with a hot-plugged vCPU, so it goes where the domain's memory is:
 * its guest cell's node (where that cell's other vCPUs are), or the nodes the domain holds
 * memory on; failing that, anywhere its strict or restrictive nodeset (the cell's memnode,
 * or the domain's) allows, said in degraded_reason; it never leaves that nodeset (left
 * unpinned instead, said). The new vCPUs also stay inside <vcpu cpuset>.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/model/plan.h"
#include "core/model/request.h"

/* plan: the domain's current plan (how placed or adopted), as recorded in ledger; req: the
 * domain's request (its cells, <numatune>, <vcpu cpuset>), NULL when unknown (then only
 * the plan's memory nodes guide new vCPUs). Returns the plan for nvcpus vCPUs, which
 * vpLedgerReplace() accepts in place of plan. */
vpPlan *vpPlanResize(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan,
                     const vpRequest *req, unsigned nvcpus, GError **error);
