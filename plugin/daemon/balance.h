/*
 * Runtime rebalancing in vcpuplaced: each interval ([rebalance] interval, default 1 s) the
 * monitor samples the vCPU threads of every domain the daemon has live, the pressure model
 * folds the samples in, and the rebalancer's moves are pinned through libvirt the way
 * placement pins (virDomainPinVcpuFlags, the emulator where the plan moves it) before the
 * ledger records them. Every decision, and every reason to leave a hotspot alone, is
 * logged once with its figures. Answers the socket operations top and rebalance (ops.c)
 * and gives its figures to the metrics (metrics.h). Moves go through the actuator
 * (actuator.h), which records them in the ledger before it pins.
 *
 * Thread ids come from plugin/host/threads.h when a domain goes live, and are looked up
 * again when one of them exits and every ten intervals (vCPU hotplug). Drivers whose
 * threads cannot be found (the test driver) give no samples; vpBalanceFeed() stands in.
 */
#pragma once

#include "core/balance/pressure.h"
#include "daemon/actuator.h"
#include "daemon/config.h"

#include <json-glib/json-glib.h>

typedef struct _vpBalance vpBalance;

/* Unless [rebalance] mode=off, starts sampling. cfg, mgr and act are borrowed; the state
 * lock is held whenever the main loop runs this module. */
vpBalance *vpBalanceNew(const vpConfig *cfg, vpManager *mgr, vpActuator *act);
void vpBalanceFree(vpBalance *b);

/* A domain's placement went live (plan) or was released (NULL): its vCPU threads are
 * looked up and measured, or forgotten. */
void vpBalanceDomain(vpBalance *b, const char *name, const vpPlan *plan);

/* After a configuration reload (cfg is the new one): the pressure model restarts on the
 * new topology, the rebalancer keeps its memory of past moves unless its settings
 * changed, the timer follows the new interval and mode. */
void vpBalanceReload(vpBalance *b, const vpConfig *cfg);
/* func runs after each interval has been folded in and passed (the metrics textfile). */
void vpBalanceSetIntervalFunc(vpBalance *b, void (*func)(gpointer data), gpointer data);

/* One interval's measurements: what each tick does with the monitor's samples, then a pass
 * as the mode says (auto: move; advise: log what would move). The integration tier feeds
 * recorded intervals here, since the test driver has no threads to sample. */
void vpBalanceFeed(vpBalance *b, const vpPressureInput *in);

/* top's reply: {mode, interval_s, intervals, vcpus: [{domain, vcpu, cpu, tid, run, wait,
 * wakeups, moves, time_shared, ...}], cpus: [{cpu, usable, busy, wait, hot, idle}]} */
JsonNode *vpBalanceTopJson(vpBalance *b);
/* rebalance {dry_run?}'s reply: {dry_run, moves: [{domain, vcpu, from, to, reason,
 * applied, error?}], notes: [...]}: a pass now, whatever the mode. */
JsonNode *vpBalanceRebalanceJson(vpBalance *b, JsonObject *req, GError **error);

/* The loop's counters since vcpuplaced started, for the metrics. */
typedef struct {
    guint64 intervals;    /* fed */
    guint64 moves_total;  /* committed */
    guint64 failed_total; /* libvirt did not take them */
    guint64 reloads;
    gint64 tick_us;  /* how long the last tick took */
    guint monitored; /* vCPU threads measured */
} vpBalanceFigures;

vpBalanceFigures vpBalanceGetFigures(const vpBalance *b);
const vpPressure *vpBalancePressure(const vpBalance *b);
/* Moves committed for one vCPU. */
guint64 vpBalanceMoves(const vpBalance *b, const char *domain, unsigned vcpu);
