/*
 * Runtime rebalancing in vcpuplaced: each interval ([rebalance] interval, default 1 s) the
 * monitor samples the vCPU threads of every domain the daemon has live, the pressure model
 * folds the samples in, and the rebalancer's moves are pinned through libvirt the way
 * placement pins (virDomainPinVcpuFlags, the emulator where the plan moves it) before the
 * ledger records them. Every decision, and every reason to leave a hotspot alone, is
 * logged once with its figures. Serves the socket operations top, rebalance and metrics,
 * and writes the Prometheus textfile.
 *
 * Thread ids come from plugin/host/threads.h when a domain goes live, and are looked up
 * again when one of them exits and every ten intervals (vCPU hotplug). Drivers whose
 * threads cannot be found (the test driver) give no samples; vpBalanceFeed() stands in.
 */
#pragma once

#include "core/pressure.h"
#include "daemon/daemon.h"

/* Listens to d's domains and, unless [rebalance] mode=off, starts sampling. */
vpBalance *vpBalanceNew(vpDaemon *d);
void vpBalanceFree(vpBalance *b);

/* After vpDaemonReload(): the pressure model restarts on the new topology, the
 * rebalancer keeps its memory of past moves unless its settings changed, the timer
 * follows the new interval and mode. */
void vpBalanceReload(vpBalance *b);

/* One interval's measurements: what each tick does with the monitor's samples, then a pass
 * as the mode says (auto: move; advise: log what would move). The integration tier feeds
 * recorded intervals here, since the test driver has no threads to sample. */
void vpBalanceFeed(vpBalance *b, const vpPressureInput *in);

/* Whether op is one of the operations below. */
gboolean vpBalanceHandles(const char *op);
/* top {} -> {mode, interval_s, intervals, vcpus: [{domain, vcpu, cpu, tid, run, wait,
 *            wakeups, moves, time_shared, ...}], cpus: [{cpu, usable, busy, wait, hot, idle}]}
 * rebalance {dry_run?} -> {dry_run, moves: [{domain, vcpu, from, to, reason, applied,
 *            error?}], notes: [...]}: a pass now, whatever the mode
 * metrics {} -> {text}: Prometheus text exposition */
JsonNode *vpBalanceOp(vpBalance *b, const char *op, JsonObject *req, GError **error);
