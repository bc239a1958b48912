/*
 * Wakeup pressure: per-interval counter deltas of vCPU threads and host CPUs in; smoothed
 * scores per vCPU, per PU and per core out, with a hotspot declared only once it has
 * lasted a configured number of intervals. Pure: the daemon feeds it from the monitor
 * (plugin/host/monitor.h) each interval, tests replay recorded series (JSON lines).
 *
 * A vCPU counts against the PU the ledger pins it to; vCPUs the ledger does not pin are
 * scored but belong to no PU. Busy time of a PU not explained by its pinned vCPUs (host
 * tasks, emulator threads, unpinned vCPUs) is its "other" load. Two PUs of one core held
 * by holders that do not share a cookie (model/trust.h: not one domain, nor one trust group
 * at coresched=group or off), or a held PU next to host load, "co-run foreign"; the expected
 * overlap of two siblings busy a and b of the time is taken as a*b, since nothing cheaper
 * tells when each ran.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/model/topology.h"
#include <json-glib/json-glib.h>
#include <stdbool.h>

/* Which counters a sample carries: a monitor may lack some (no schedstat, no perf). */
typedef enum {
    VP_HAVE_SCHEDSTAT = 1 << 0,  /* run_ns, wait_ns */
    VP_HAVE_SWITCHES = 1 << 1,   /* voluntary, involuntary */
    VP_HAVE_MIGRATIONS = 1 << 2, /* migrations */
    VP_HAVE_FORCEIDLE = 1 << 3,  /* forceidle_ns (core scheduling kernels with schedstats) */
} vpHave;

/* One vCPU thread over one interval: deltas, not totals. */
typedef struct {
    char *domain;
    int vcpu;
    guint64 interval_ns;  /* wall time the deltas cover, > 0 */
    guint32 have;         /* vpHave bits: which fields below were measured */
    guint64 run_ns;       /* on a CPU */
    guint64 wait_ns;      /* runnable, waiting for a CPU */
    guint64 voluntary;    /* blocked, then woken: the wakeups of this thread */
    guint64 involuntary;  /* preempted */
    guint64 migrations;   /* moved between CPUs */
    guint64 forceidle_ns; /* ran while core scheduling held a sibling idle */
} vpPressureSample;

/* One host CPU over one interval. */
typedef struct {
    unsigned cpu; /* Linux CPU number */
    guint64 interval_ns;
    guint64 busy_ns; /* neither idle nor iowait */
} vpCpuSample;

/* One interval's input (pressureinput.c). The arrays own the domain strings of their
 * samples. */
typedef struct {
    GArray *vcpus; /* vpPressureSample */
    GArray *cpus;  /* vpCpuSample */
} vpPressureInput;

vpPressureInput *vpPressureInputNew(void);
void vpPressureInputFree(vpPressureInput *in);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpPressureInput, vpPressureInputFree)
/* Appends a copy of s (domain included). */
void vpPressureInputAddVcpu(vpPressureInput *in, const vpPressureSample *s);
void vpPressureInputAddCpu(vpPressureInput *in, const vpCpuSample *s);

/* One line of a recorded series: {"vcpus":[{"domain","vcpu","interval_ns","run_ns",...}],
 * "cpus":[{"cpu","interval_ns","busy_ns"}]}. A counter left out was not measured. */
JsonNode *vpPressureInputToJson(const vpPressureInput *in);
/* Rejects unknown members, negative or missing required numbers and deltas longer than
 * twice their interval, naming the field and the value. */
vpPressureInput *vpPressureInputFromJson(JsonNode *node, GError **error);

typedef struct {
    double alpha;         /* weight of the newest interval in the moving averages, (0, 1] */
    double hot_wait;      /* a PU turns hot when its smoothed wait fraction reaches this */
    double cool_wait;     /* ... and stops being hot below this (<= hot_wait) */
    double hot_corun;     /* a core is contended from this foreign co-run + forced idle */
    double idle_busy;     /* a PU is idle below this smoothed busy fraction */
    unsigned persistence; /* intervals a condition must last before it counts, >= 1 */
} vpPressureConfig;

/* alpha 0.3, hot_wait 0.10, cool_wait 0.05, hot_corun 0.20, idle_busy 0.10,
 * persistence 5. */
void vpPressureConfigInit(vpPressureConfig *cfg);
bool vpPressureConfigValidate(const vpPressureConfig *cfg, GError **error);

/* Smoothed figures are fractions of wall time, wakeups per second. */
typedef struct {
    const char *domain;
    int vcpu;
    int pu;               /* logical PU the ledger pins it to, -1 */
    guint32 have;         /* vpHave of the newest sample */
    double run;           /* smoothed */
    double wait;          /* smoothed */
    double wakeups;       /* smoothed, per second */
    double forceidle;     /* smoothed */
    double corun_foreign; /* smoothed: its run overlapping foreign load on its siblings */
    double last_wait;     /* newest interval, unsmoothed */
    double wait_seconds;  /* run delay measured since it appeared, moves included */
    unsigned intervals;   /* intervals seen since it appeared or was moved */
} vpVcpuPressure;

typedef struct {
    double wait;          /* smoothed sum of the wait fractions of the vCPUs pinned here */
    double run;           /* smoothed sum of their run fractions */
    double busy;          /* smoothed busy fraction (host CPU samples, else run) */
    double other;         /* smoothed busy not explained by pinned vCPUs */
    bool measured;        /* busy came from host CPU samples */
    unsigned nvcpus;      /* vCPUs pinned here in the newest interval */
    unsigned hot_streak;  /* consecutive intervals hot */
    unsigned idle_streak; /* consecutive intervals idle */
} vpPUPressure;

typedef struct {
    double busy;          /* smoothed sum over its PUs */
    double corun_foreign; /* smoothed expected overlap of foreign siblings */
    double forceidle;     /* smoothed forced idle its vCPUs caused */
    unsigned contended_streak;
} vpCorePressure;

typedef struct {
    unsigned nvcpus; /* vCPUs in the newest interval */
    double wakeups;  /* smoothed wakeups per second, mean over its vCPUs */
    double wait;     /* smoothed wait fraction, mean over its vCPUs */
} vpDomainPressure;

typedef struct _vpPressure vpPressure;

/* topo must outlive the model, and be the topology of every ledger passed in. */
vpPressure *vpPressureNew(const vpTopology *topo, const vpPressureConfig *cfg);
void vpPressureFree(vpPressure *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpPressure, vpPressureFree)

/* Folds one interval in. vCPUs missing from in are forgotten; CPU numbers the topology
 * lacks are ignored. */
void vpPressureUpdate(vpPressure *p, const vpLedger *ledger, const vpPressureInput *in);
/* Restarts the averages and streaks of a PU and its core (after a move changed them). */
void vpPressureForgetPU(vpPressure *p, int pu);
/* Restarts the averages of one vCPU. */
void vpPressureForgetVcpu(vpPressure *p, const char *domain, int vcpu);

const vpPressureConfig *vpPressureGetConfig(const vpPressure *p);
const vpTopology *vpPressureTopology(const vpPressure *p);
/* Intervals folded in since creation. */
guint64 vpPressureIntervals(const vpPressure *p);

/* NULL when the vCPU was not in the newest interval. */
const vpVcpuPressure *vpPressureVcpu(const vpPressure *p, const char *domain, int vcpu);
/* Every vCPU, sorted by domain then vCPU (caller frees the array only). */
GPtrArray *vpPressureVcpus(const vpPressure *p);
const vpPUPressure *vpPressurePU(const vpPressure *p, int pu);
const vpCorePressure *vpPressureCore(const vpPressure *p, int core);
/* NULL when the domain had no vCPU in the newest interval. */
const vpDomainPressure *vpPressureDomain(const vpPressure *p, const char *domain);

/* A hotspot: hot for at least persistence intervals. */
bool vpPressurePUHot(const vpPressure *p, int pu);
/* Idle for at least persistence intervals. */
bool vpPressurePUIdle(const vpPressure *p, int pu);
/* Foreign co-running plus forced idle above hot_corun for persistence intervals. */
bool vpPressureCoreContended(const vpPressure *p, int core);
