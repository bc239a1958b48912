/*
 * The rebalancer's private header: what its files share. rebalance.c (the object, its
 * history, a pass and its commit) calls rebaldecide.c (one candidate's decision, and the
 * questions every decision asks) and rebalexpand.c (re-expansion of squeezed spread
 * domains), which calls rebaldecide.c; rebalapply.c (moves applied to a ledger) asks
 * rebaldecide.c too. Nothing outside plugin/core/balance includes this.
 */
#pragma once

#include "core/balance/rebalance.h"
#include "core/model/trust.h"

#include <stdbool.h>

#define NS 1000000000LL
#define MAX_BACKOFF_SHIFT 6
/* Cores whose busy figures differ by less than this are equally good: the lower index wins,
 * so that measurement noise does not pick the target. */
#define BUSY_EPSILON 0.05

typedef struct {
    gint64 when;
    int from_pu;
} MoveRec;

typedef struct {
    GArray *recs; /* MoveRec, oldest first */
    guint64 total;
} History;

struct _vpRebalancer {
    vpRebalanceConfig cfg;
    GHashTable *hist; /* "domain\037vcpu" -> History */
};

typedef enum { TRIG_WAIT, TRIG_CORUN } Trigger;

typedef struct {
    int pu;
    const char *domain;
    int vcpu;
    Trigger trig;
    double score;
} Cand;

typedef struct {
    const vpRebalancer *rb;
    const vpPressure *p;
    const vpLedger *ledger;
    const vpTopology *topo;
    gint64 now;
    bool *taken; /* PUs moved onto or off in this pass */
    GHashTable *moved;
    GPtrArray *moves;
    GPtrArray *notes;
} Ctx;

/* Who moves in one decision: one vCPU, or the guest threads of one pack core. */
typedef struct {
    int n;
    int vcpus[8];
    int from[8]; /* logical PUs */
    int to[8];
    const char *scope;
    vpTrust rel;
} Decision;

/* rebaldecide.c: one candidate's decision, after the questions every decision asks. */
/* The history key of a domain's vCPU ("domain\037vcpu"; caller frees). */
char *vpRbHistKey(const char *domain, unsigned vcpu);
/* The moves remembered for a domain's vCPU, NULL when none. */
const History *vpRbHistoryOf(const vpRebalancer *rb, const char *domain, unsigned vcpu);
/* Adds a note of the pass (when the caller asked for notes). */
void vpRbNote(Ctx *ctx, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Linux CPU and core index of logical PU pu. */
unsigned vpRbOsOf(const Ctx *ctx, int pu);
int vpRbCoreOf(const Ctx *ctx, int pu);
/* Seconds this vCPU must still stay where it is, 0 when it may move. Each earlier move
 * still remembered doubles the residency, so a vCPU that keeps being chased slows down. */
double vpRbResidencyLeft(const Ctx *ctx, const History *h);
/* A PU this vCPU left within memory, unless the PU has been idle since long enough. */
bool vpRbReturnForbidden(const Ctx *ctx, const History *h, int pu);
/* Whether PU pu is inside the domain's <vcpu cpuset> (no cpuset: any PU). */
bool vpRbInCpuset(const Ctx *ctx, const vpPlan *plan, int pu);
/* Whether the plan's emulator runs on a PU of its own (emulator=dedicated). */
bool vpRbDedicatedEmulator(const vpPlan *plan);
/* Whether the plan holds whole cores (isolate, pack): its siblings move with it. */
bool vpRbWholeCores(const vpPlan *plan);
/* Whether every PU of core c is usable, free in the ledger and this pass, and idle, or is
 * left by decision d. */
bool vpRbCoreWholeIdle(const Ctx *ctx, int c, const Decision *d);
/* What a destination is to the vCPU that moves there, for a move's reason. */
const char *vpRbRelPhrase(vpTrust r);
/* Decides candidate c: a move added to ctx->moves, or a note why it stays. */
void vpRbDecide(Ctx *ctx, const Cand *c);

/* rebalexpand.c: a squeezed spread domain gets one vCPU onto a whole idle core per pass,
 * within the pass's decisions (counted in *decisions). */
void vpRbReexpand(Ctx *ctx, unsigned *decisions);
