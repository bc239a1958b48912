/*
 * The compaction search's parts (compact.c: the search; compactmove.c: what a move may do);
 * nothing outside them includes this.
 */
#pragma once

#include "core/model/trust.h"
#include "core/place/compact.h"

#include <stdbool.h>

/* One admission's search: the request, the host, and what is asked once. */
typedef struct {
    const vpTopology *topo;
    const vpLedger *ledger;
    const vpRequest *req;
    unsigned budget;
    vpLevel levels[4];
    int nlevels;
    GHashTable *memory; /* domain -> its memory nodes, asked once per search */
    int *room;          /* per core, what it offers the request now (coreRoom), taken once */
} vpRoom;

static inline vpOwner
vpCompactOwnerAt(const vpRoom *r, const vpMove *moves, unsigned nmoves, int pu)
{
    return vpOwnerAfterMoves(r->topo, r->ledger, moves, nmoves, pu);
}

/* compactmove.c: the rules of a move */
/* A legal destination for plan's vCPU now on logical PU from, or -1. */
int vpCompactDestination(const vpRoom *r, const vpPlan *plan, int from, const bool *vacated,
                         const vpMove *moves, unsigned nmoves);
/* vCPUs to move off core c to vacate it, or -1 when something on it may not move. */
int vpCompactVacateCost(const vpRoom *r, int c);
/* The moves that vacate the given cores, into `into`; false when a vCPU has nowhere to go. */
bool vpCompactMovesFor(const vpRoom *r, const GArray *cores, const char *reason, vpPlan *into);
