/*
 * Making room at admission (DESIGN.md "Making room"): when the placer's answer for a start
 * is a refusal, a relaxed policy, a core shared with a stranger, or a wider locality than
 * the domain needs, look for at most max_moves moves of running vCPUs after which the
 * placer answers better, and return that plan with its moves. Pure and deterministic, like
 * the placer. A move keeps the moved domain's policy and memory: a spread VM moves only onto
 * a sibling of a core it already runs on (of a one-cookie trust group: or of a core of its
 * node its group runs on), a share VM only onto a share-held core of the same
 * node (and of its own locality group); never beside a stranger, never off the domain's
 * memory nodes (vpPlanMemoryNodes()), never a domain with rebalance=off, pins of its own or
 * an adopted plan. Fewest moves first, then the smallest locality level.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/place/placer.h"
#include "core/model/request.h"

#include <stdbool.h>

#define VP_COMPACT_MAX_MOVES 2

typedef struct {
    unsigned max_moves; /* moves one admission may make; 0: the placer alone */
} vpCompactConfig;

/* max_moves = VP_COMPACT_MAX_MOVES. */
void vpCompactConfigInit(vpCompactConfig *cfg);

/* vpPlace(), then the search above. A refusal that no legal moves lift keeps the placer's
 * message and says why moving did not help. */
vpPlan *vpPlaceCompact(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                       const vpCompactConfig *cfg, GError **error);

/* Applies plan's moves to the ledger (each moved domain's plan replaced; the emulator set of
 * a domain whose emulator floats over its vCPUs follows them), as the daemon's actuator
 * does on the host. Changes nothing when a move does not match the ledger. */
bool vpCompactApply(vpLedger *ledger, const vpPlan *plan, GError **error);
