/*
 * What the rebalancer's files share: rebalance.c (the object, its history, a pass and
 * its commit), rebaldecide.c (one candidate's decision), rebalexpand.c (re-expansion of
 * squeezed spread domains), rebalapply.c (moves applied to a ledger). Nothing outside
 * plugin/core/rebal*.c includes this.
 */
#pragma once

#include "core/balance/rebalance.h"
#include "core/model/trust.h"

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

/* rebalance.c */
char *vpRbHistKey(const char *domain, unsigned vcpu);
const History *vpRbHistoryOf(const vpRebalancer *rb, const char *domain, unsigned vcpu);

/* rebaldecide.c */
void vpRbNote(Ctx *ctx, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
unsigned vpRbOsOf(const Ctx *ctx, int pu);
int vpRbCoreOf(const Ctx *ctx, int pu);
double vpRbResidencyLeft(const Ctx *ctx, const History *h);
bool vpRbReturnForbidden(const Ctx *ctx, const History *h, int pu);
bool vpRbInCpuset(const Ctx *ctx, const vpPlan *plan, int pu);
bool vpRbDedicatedEmulator(const vpPlan *plan);
bool vpRbWholeCores(const vpPlan *plan);
bool vpRbCoreWholeIdle(const Ctx *ctx, int c, const Decision *d);
const char *vpRbRelPhrase(vpTrust r);
void vpRbDecide(Ctx *ctx, const Cand *c);

/* rebalexpand.c */
void vpRbReexpand(Ctx *ctx, unsigned *decisions);
