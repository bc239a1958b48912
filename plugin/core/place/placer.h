/*
 * The placer: a pure, deterministic function (topology, ledger, request) -> plan, or a
 * refusal (VP_ERROR_REFUSED) whose message an operator can act on. With unmet=degrade a
 * plan that relaxes the policy is returned instead, with degraded_reason saying what.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/model/plan.h"
#include "core/model/request.h"
#include "core/model/topology.h"

vpPlan *vpPlace(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                GError **error);
/* vpPlace() as if the moves had been applied to the ledger first (the compaction search in
 * compact.h asks this); the plan does not carry the moves. */
vpPlan *vpPlaceAfter(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                     const vpMove *moves, unsigned nmoves, GError **error);
/* The levels a locality lets the placer try, smallest groups first (at most 4). */
int vpPlacerLevels(const vpTopology *topo, vpLocality locality, vpLevel *out);
/* The owner of logical PU pu once the moves are applied in order: a moved vCPU's source is
 * free, its destination holds it. Without moves, vpLedgerOwner(). */
vpOwner vpOwnerAfterMoves(const vpTopology *topo, const vpLedger *ledger, const vpMove *moves,
                          unsigned nmoves, int pu);
