/*
 * The placer: a pure, deterministic function (topology, ledger, request) -> plan, or a
 * refusal (VP_ERROR_REFUSED) whose message an operator can act on. With unmet=degrade a
 * plan that relaxes the policy is returned instead, with degraded_reason saying what.
 */
#pragma once

#include "ledger.h"
#include "plan.h"
#include "request.h"
#include "topology.h"

vpPlan *vpPlace(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                GError **error);

/* Marks plan degraded and appends the formatted reason to degraded_reason, "; "-separated,
 * so a plan relaxed for several reasons names them all. Shared with vpPlanResize(), which
 * relaxes plans the same way. */
void vpPlanDegrade(vpPlan *plan, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
