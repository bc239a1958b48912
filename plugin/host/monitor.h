/*
 * Host counters of vCPU threads, sampled each interval by the daemon's main loop.
 *
 * Per thread: /proc/PID/task/TID/schedstat (run ns, run-queue wait ns, timeslices) read
 * with pread on a descriptor kept open; perf software counters (context switches, CPU
 * migrations, task clock) and the voluntary switches (the sched_switch tracepoint,
 * filtered on the thread leaving asleep) as one group, one read; where that tracepoint is
 * unavailable, the switch counts come from .../sched (or .../status), which costs three
 * times the rest. Cycles and instructions only where the host has hardware counters
 * (detected once). Per host CPU: busy time from /proc/stat. Nothing here is fatal: a
 * thread that exits is reported gone, a counter that cannot be opened (no permission, fd
 * limit) is left out of that thread's samples, each cause logged once. A thread holds up
 * to 6 descriptors (8 with hardware counters), and none is kept within 192 of
 * RLIMIT_NOFILE (of half of it, for small limits), which stay the rest of the daemon's:
 * a daemon watching many vCPUs wants a high RLIMIT_NOFILE.
 */
#pragma once

#include "core/balance/pressure.h"
#include <sys/types.h>

typedef enum {
    VP_SRC_SCHEDSTAT = 1 << 0, /* run_ns, wait_ns, timeslices */
    VP_SRC_SWITCHES = 1 << 1,  /* voluntary, involuntary */
    VP_SRC_FORCEIDLE = 1 << 2, /* forceidle_ns: core scheduling kernels with schedstats on */
    VP_SRC_PERF = 1 << 3,      /* ctx_switches, migrations, task_clock_ns */
    VP_SRC_HW = 1 << 4,        /* cycles, instructions */
} vpMonitorSource;

typedef struct {
    guint64 run_ns, wait_ns, timeslices;
    guint64 voluntary, involuntary;
    guint64 forceidle_ns;
    guint64 ctx_switches, migrations, task_clock_ns;
    guint64 cycles, instructions;
} vpMonitorCounters;

typedef struct {
    char *domain;
    int vcpu;
    pid_t pid, tid;
    gint64 timestamp_ns;     /* CLOCK_MONOTONIC when this thread was read */
    gint64 interval_ns;      /* since its previous sample, 0 on the first */
    guint32 sources;         /* vpMonitorSource bits read this time */
    guint32 delta_sources;   /* ... and the previous time: their deltas are valid */
    bool gone;               /* the thread has exited (reported on every sample until removed) */
    vpMonitorCounters total; /* schedstat (and switches read from /proc) since the thread
                                started; perf counters since it was added */
    vpMonitorCounters delta; /* since the previous sample */
} vpMonitorSample;

typedef struct _vpMonitor vpMonitor;

typedef struct {
    bool proc_switches; /* read switch counts from /proc even where the tracepoint works */
} vpMonitorOptions;

/* Detects once what this host offers (sched_switch tracepoint, sched file, core
 * scheduling figures, perf software and hardware counters). Never fails: a poorer host
 * gives poorer samples. opts may be NULL. */
vpMonitor *vpMonitorNew(const vpMonitorOptions *opts);
void vpMonitorFree(vpMonitor *mon);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpMonitor, vpMonitorFree)
/* vpMonitorSource bits this host can offer at best. */
guint32 vpMonitorHostSources(const vpMonitor *mon);
/* Where switch counts come from: "tracepoint", or the /proc file "sched" or "status". */
const char *vpMonitorSwitchesFrom(const vpMonitor *mon);

/* Watches thread tid of process pid as vCPU vcpu of domain; replaces what was watched for
 * (domain, vcpu) before (the vCPU got a new thread: hotplug, restart). Fails only when the
 * thread does not exist, or pid/tid/vcpu are not valid numbers. */
gboolean vpMonitorAdd(vpMonitor *mon, const char *domain, int vcpu, pid_t pid, pid_t tid,
                      GError **error);
/* FALSE when (domain, vcpu) was not watched. */
gboolean vpMonitorRemove(vpMonitor *mon, const char *domain, int vcpu);
/* Removes every vCPU of domain; returns how many. */
guint vpMonitorRemoveDomain(vpMonitor *mon, const char *domain);
guint vpMonitorSize(const vpMonitor *mon);

/* Reads every watched thread, in the order they were added: a GArray of vpMonitorSample
 * that frees its domain strings. */
GArray *vpMonitorSampleAll(vpMonitor *mon);
/* Busy time per online host CPU since the previous call, as vpCpuSample (empty on the
 * first call). Fails only when /proc/stat cannot be read or parsed. */
GArray *vpMonitorSampleCpus(vpMonitor *mon, GError **error);
/* The pressure model's input for one interval: deltas of threads that are alive and were
 * sampled before, plus the CPU samples (cpus may be NULL). */
vpPressureInput *vpMonitorPressureInput(const GArray *samples, const GArray *cpus);

/* Parsers of the /proc files, exposed for tests and fuzzing. Each fills what it finds
 * and returns the vpMonitorSource bits it found complete. */
guint32 vpMonitorParseSchedstat(const char *text, vpMonitorCounters *c);
guint32 vpMonitorParseSched(const char *text, vpMonitorCounters *c);
guint32 vpMonitorParseStatus(const char *text, vpMonitorCounters *c);
/* Clock ticks of one CPU in /proc/stat: busy (user, nice, system, irq, softirq, steal)
 * and total (busy plus idle and iowait). */
typedef struct {
    unsigned cpu;
    guint64 busy, total;
} vpMonitorCpuTicks;
/* /proc/stat: appends a vpMonitorCpuTicks per cpuN line to ticks. Returns FALSE, naming
 * the line, on a malformed cpuN line. */
gboolean vpMonitorParseStat(const char *text, GArray *ticks, GError **error);
