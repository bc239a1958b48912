/*
 * guest-forceidle SECONDS: what a cookie costs when placement ignores it, in the kernel's
 * own figures, with tolerances.
 *
 * Two CPU-bound one-vCPU "VMs" with different cookies run pinned (1) on the two siblings
 * of one core, (2) on two different cores, and (3) on one core's siblings again after
 * the second joined the first one's cookie. The kernel's accounting says how long each
 * ran (se.sum_exec_runtime in /proc/PID/sched) and how long it ran while its sibling was
 * forced idle (core_forceidle_sum, kept only with schedstats on); the first burner's
 * cgroup says the same in cpu.stat (core_sched.force_idle_usec). A sched_switch trace of
 * the two siblings shows directly whether the two cookies ever ran at the same time.
 *
 * What the kernel must show, and the tolerance allowed. Guest CPUs are host threads under
 * TCG, shared with other work: a loaded host stretches every reschedule and IPI in guest
 * time, so the checks rest on the kernel's own accounting where they can, and the shares
 * of the span are loose (with a QEMU build on the host's 2 CPUs a burner alone on its CPU
 * got 0.81 of the span, against 1.00 without). Each check must hold at load average 4:
 *   (1) only one of the two runs at a time: forced idle covers the two's run time (at
 *       least 80% of it) and at least 85% of the span, and is charged once (at most the
 *       span + 5% + 20 ms); each burner 40-60% of the two's run time (its share of the
 *       span is reported, not asserted); the cgroup's figure = the task's within 10%
 *       (+ 5 ms); in the trace the two cookies overlap on the siblings for at most 1% of
 *       the span, never for more than 1% at a stretch. Forced idle exceeds run time by the
 *       time the core spends switching between the cookies (the core is in forced idle,
 *       neither burner runs: 2-19% of run time on an idle host, 25% at load 2);
 *   (2) and (3) nothing forces idle: forced idle at most 1% of run time, each burner at
 *       least 75% of the span; in (3) the trace shows the two together most of the span
 *       (at least 50%), the control that the trace check can see an overlap at all. A
 *       third party woken beside a burner forces idle too, for longer on a loaded host:
 *       such a span is measured again (up to 3), the bound stays.
 */
#include "host/coresched.h"
#include "host/hwtopo.h"
#include "report.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACEFS "/sys/kernel/tracing"
#define CGROUPFS "/sys/fs/cgroup"
#define CGROUP_X CGROUPFS "/vp-burner-x"

#define FORCEIDLE_RUN_TOLERANCE 0.20 /* (1): forced idle at least run time less this */
#define FORCEIDLE_SPAN_MIN 0.85      /* (1): forced idle of the span: one sibling always idle */
#define FORCEIDLE_SPAN_MAX 1.05      /* (1): ... and charged once: at most the span */
#define ACCOUNTING_SLACK_MS 20.0     /* (1): accounting lags to the next tick or switch */
#define HALF_CORE_MIN 0.40           /* (1): each burner's share of the core's run time */
#define HALF_CORE_MAX 0.60
#define CGROUP_TOLERANCE 0.10 /* (1): cgroup figure vs the task's */
#define CGROUP_SLACK_MS 5.0
#define OVERLAP_MAX 0.01         /* (1): two cookies together on the siblings, of the span */
#define OVERLAP_STRETCH_MAX 0.01 /* (1): ... the longest stretch of it, of the span */
#define SPAN_TRIES 3             /* spans measured until one is undisturbed (measureUntil) */
#define NO_FORCEIDLE_MAX 0.01    /* (2), (3): forced idle of run time */
#define FULL_CPU_MIN 0.75        /* (2), (3): each burner's share of the span */
#define SHARE_MAX 1.05           /* (2), (3): ... at most (accounting lags by a tick) */
#define TOGETHER_MIN 0.50        /* (3): one cookie: together on the siblings, of the span */

typedef struct {
    double forceidleMs;
    double runMs;
} SchedFigures;

typedef struct {
    SchedFigures x, y;
    double cgroupForceidleMs; /* < 0: not read */
    double overlapMs;         /* < 0: no trace */
    double longestMs;         /* the longest stretch of overlapMs */
    double tracedMs;
    unsigned switches;
    unsigned spanMs;
} Phase;

static void G_GNUC_NORETURN
burn(void)
{
    volatile unsigned long spins = 0;

    prctl(PR_SET_NAME, "CPU 0/KVM");
    for (;;)
        spins++;
}

static pid_t
startBurner(void)
{
    pid_t pid = fork();

    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0)
        burn();
    return pid;
}

/* Reads "name : value" (or "name value") from a kernel text file; false when absent. */
static bool
readField(const char *text, const char *field, double *value)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

    for (char **line = lines; *line; line++) {
        char *rest = *line + strspn(*line, " \t");
        size_t len = strlen(field);
        char *end;

        if (strncmp(rest, field, len) != 0 || !strchr(" \t:", rest[len]) || !rest[len])
            continue;
        rest += len + strspn(rest + len, " \t:");
        *value = g_ascii_strtod(rest, &end);
        return end != rest;
    }
    return false;
}

static bool
readFigures(pid_t pid, SchedFigures *figures, GError **error)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/sched", (int)pid);
    g_autofree char *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, error))
        return false;
    if (!readField(text, "core_forceidle_sum", &figures->forceidleMs)) {
        g_set_error(error, VP_ERROR, VP_ERROR_UNSUPPORTED,
                    "%s has no core_forceidle_sum: the kernel lacks CONFIG_SCHEDSTATS or "
                    "schedstats are off (boot with schedstats=enable)",
                    path);
        return false;
    }
    if (!readField(text, "se.sum_exec_runtime", &figures->runMs)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s has no se.sum_exec_runtime", path);
        return false;
    }
    return true;
}

/* The first burner's cgroup forced idle in ms, or < 0 when the cgroup has no figure. */
static double
readCgroupForceidle(void)
{
    g_autofree char *text = NULL;
    double usec;

    if (!g_file_get_contents(CGROUP_X "/cpu.stat", &text, NULL, NULL) ||
        !readField(text, "core_sched.force_idle_usec", &usec))
        return -1;
    return usec / 1000.0;
}

static bool
writeFile(const char *path, const char *value, GError **error)
{
    if (!g_file_set_contents_full(path, value, -1, G_FILE_SET_CONTENTS_NONE, 0644, error))
        return false;
    return true;
}

/* Puts pid into a cgroup of its own (cgroup v2, mounted here if it is not). */
static bool
setupCgroup(pid_t pid, GError **error)
{
    g_autofree char *procs = g_strdup_printf("%d", (int)pid);

    if (!g_file_test(CGROUPFS "/cgroup.procs", G_FILE_TEST_EXISTS) &&
        mount("cgroup2", CGROUPFS, "cgroup2", 0, NULL) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "mount cgroup2 on %s: %s", CGROUPFS,
                    g_strerror(errno));
        return false;
    }
    if (mkdir(CGROUP_X, 0755) < 0 && errno != EEXIST) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "mkdir %s: %s", CGROUP_X, g_strerror(errno));
        return false;
    }
    return writeFile(CGROUP_X "/cgroup.procs", procs, error);
}

/* sched_switch events of the two siblings only, on a clock comparable across CPUs. */
static bool
setupTrace(unsigned cpuA, unsigned cpuB, GError **error)
{
    g_autofree char *mask = g_strdup_printf("%lx", (1UL << cpuA) | (1UL << cpuB));

    if (!g_file_test(TRACEFS "/trace", G_FILE_TEST_EXISTS) &&
        mount("tracefs", TRACEFS, "tracefs", 0, NULL) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "mount tracefs on %s: %s", TRACEFS,
                    g_strerror(errno));
        return false;
    }
    return writeFile(TRACEFS "/tracing_on", "0", error) &&
           writeFile(TRACEFS "/trace_clock", "mono", error) &&
           writeFile(TRACEFS "/buffer_size_kb", "4096", error) &&
           writeFile(TRACEFS "/tracing_cpumask", mask, error) &&
           writeFile(TRACEFS "/events/sched/sched_switch/enable", "1", error);
}

static bool
traceOn(bool on, GError **error)
{
    /* Opening the trace for writing with O_TRUNC empties the ring buffer. */
    int fd = on ? open(TRACEFS "/trace", O_WRONLY | O_TRUNC) : -2;

    if (fd == -1) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "empty %s/trace: %s", TRACEFS,
                    g_strerror(errno));
        return false;
    }
    if (fd >= 0)
        close(fd);
    return writeFile(TRACEFS "/tracing_on", on ? "1" : "0", error);
}

static bool
together(const pid_t running[2], pid_t x, pid_t y)
{
    return (running[0] == x && running[1] == y) || (running[0] == y && running[1] == x);
}

/*
 * From the trace of the two siblings: how long x ran on one while y ran on the other
 * (overlapMs), over the time both CPUs' running task was known (tracedMs: from the time
 * both CPUs had an event, which the burners' migration onto them makes sure of, to endMs,
 * on the trace's clock, CLOCK_MONOTONIC).
 */
static bool
traceOverlap(pid_t x, pid_t y, unsigned cpuA, unsigned cpuB, double endMs, Phase *phase,
             GError **error)
{
    g_autofree char *text = NULL;
    g_autoptr(GRegex) re = NULL;
    g_auto(GStrv) lines = NULL;
    pid_t running[2] = {-1, -1};
    double last = -1, start = -1, stretch = 0;

    if (!g_file_get_contents(TRACEFS "/trace", &text, NULL, error))
        return false;
    re = g_regex_new("\\[(\\d+)\\][^:]*\\s(\\d+\\.\\d+): sched_switch: .*next_pid=(\\d+) ", 0, 0,
                     error);
    if (!re)
        return false;
    phase->overlapMs = 0;
    phase->longestMs = 0;
    phase->tracedMs = 0;
    phase->switches = 0;
    lines = g_strsplit(text, "\n", -1);
    for (char **line = lines; *line; line++) {
        g_autoptr(GMatchInfo) m = NULL;
        g_autofree char *cpuText = NULL, *tsText = NULL, *pidText = NULL;
        unsigned cpu;
        double ts;

        if (!g_regex_match(re, *line, 0, &m))
            continue;
        cpuText = g_match_info_fetch(m, 1);
        tsText = g_match_info_fetch(m, 2);
        pidText = g_match_info_fetch(m, 3);
        cpu = (unsigned)atoi(cpuText);
        ts = g_ascii_strtod(tsText, NULL) * 1000.0;
        if (cpu != cpuA && cpu != cpuB)
            continue;
        if (start >= 0 && ts > last) {
            double span = ts - last;
            phase->tracedMs += span;
            if (together(running, x, y)) {
                phase->overlapMs += span;
                stretch += span;
            }
        }
        running[cpu == cpuA ? 0 : 1] = atoi(pidText);
        if (!together(running, x, y)) {
            phase->longestMs = MAX(phase->longestMs, stretch);
            stretch = 0;
        }
        phase->switches++;
        last = ts;
        if (start < 0 && running[0] >= 0 && running[1] >= 0)
            start = ts;
    }
    if (start >= 0 && endMs > last) {
        phase->tracedMs += endMs - last;
        if (together(running, x, y)) {
            phase->overlapMs += endMs - last;
            stretch += endMs - last;
        }
    }
    phase->longestMs = MAX(phase->longestMs, stretch);
    if (start < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "the trace has no sched_switch on CPU %u and %u (%u events)", cpuA, cpuB,
                    phase->switches);
        return false;
    }
    return true;
}

static bool
pin(pid_t pid, unsigned cpu, GError **error)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(pid, sizeof(set), &set) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "cannot pin %d to CPU %u: %s", (int)pid, cpu,
                    g_strerror(errno));
        return false;
    }
    return true;
}

/*
 * Runs both burners on cpuX / cpuY for seconds; stores the figures of that span. With a
 * trace, both first wait on the staging CPU, so that moving them onto cpuX and cpuY puts
 * a sched_switch on each of those while the trace runs.
 */
static bool
measure(const char *name, pid_t x, unsigned cpuX, pid_t y, unsigned cpuY, unsigned seconds,
        int staging, Phase *phase)
{
    g_autoptr(GError) error = NULL;
    SchedFigures x0, y0, x1, y1;
    double cg0 = -1, cg1 = -1, endMs = 0;
    gint64 start;
    bool trace = staging >= 0;

    phase->spanMs = seconds * 1000;
    phase->overlapMs = -1;
    if (trace) {
        if (!pin(x, (unsigned)staging, &error) || !pin(y, (unsigned)staging, &error))
            return vpgCheck(false, name, "%s", error->message);
        g_usleep(G_USEC_PER_SEC / 10);
        if (!traceOn(true, &error))
            return vpgCheck(false, name, "trace: %s", error->message);
    }
    if (!pin(x, cpuX, &error) || !pin(y, cpuY, &error))
        return vpgCheck(false, name, "%s", error->message);
    /* Let both migrate onto their CPUs before the span starts. */
    g_usleep(G_USEC_PER_SEC / 5);
    cg0 = readCgroupForceidle();
    if (!readFigures(x, &x0, &error) || !readFigures(y, &y0, &error))
        return vpgCheck(false, name, "%s", error->message);
    start = g_get_monotonic_time();
    g_usleep((gulong)seconds * G_USEC_PER_SEC);
    if (!readFigures(x, &x1, &error) || !readFigures(y, &y1, &error))
        return vpgCheck(false, name, "%s", error->message);
    /* The span as it was: a loaded host wakes the sleep late. */
    phase->spanMs = (unsigned)((g_get_monotonic_time() - start) / 1000);
    cg1 = readCgroupForceidle();
    endMs = g_get_monotonic_time() / 1000.0;
    if (trace && (!traceOn(false, &error) || !traceOverlap(x, y, cpuX, cpuY, endMs, phase, &error)))
        return vpgCheck(false, name, "trace: %s", error->message);
    phase->x = (SchedFigures){x1.forceidleMs - x0.forceidleMs, x1.runMs - x0.runMs};
    phase->y = (SchedFigures){y1.forceidleMs - y0.forceidleMs, y1.runMs - y0.runMs};
    phase->cgroupForceidleMs = cg0 >= 0 && cg1 >= 0 ? cg1 - cg0 : -1;
    vpgFigure(name,
              "cpus=%u,%u span_ms=%u x_run_ms=%.1f x_forceidle_ms=%.1f y_run_ms=%.1f "
              "y_forceidle_ms=%.1f cgroup_x_forceidle_ms=%.1f trace_overlap_ms=%.1f "
              "trace_longest_ms=%.1f trace_known_ms=%.1f trace_switches=%u",
              cpuX, cpuY, phase->spanMs, phase->x.runMs, phase->x.forceidleMs, phase->y.runMs,
              phase->y.forceidleMs, phase->cgroupForceidleMs, phase->overlapMs, phase->longestMs,
              phase->tracedMs, phase->switches);
    return true;
}

static double
totalRun(const Phase *p)
{
    return p->x.runMs + p->y.runMs;
}

static double
totalForceidle(const Phase *p)
{
    return p->x.forceidleMs + p->y.forceidleMs;
}

/* Reports a check when asked (the kept span), else only judges it (a span to keep or not). */
static bool
verdict(bool report, bool ok, const char *check, char *detail)
{
    if (report)
        vpgCheck(ok, check, "%s", detail);
    g_free(detail);
    return ok;
}

static bool
checkShares(bool report, const char *check, const Phase *p, double lo, double hi)
{
    double sx = p->x.runMs / p->spanMs, sy = p->y.runMs / p->spanMs;

    return verdict(report, sx >= lo && sx <= hi && sy >= lo && sy <= hi, check,
                   g_strdup_printf("shares of the %u ms span: x %.2f, y %.2f (allowed %.2f-%.2f)",
                                   p->spanMs, sx, sy, lo, hi));
}

static bool
checkNoForceidle(bool report, const char *check, const Phase *p)
{
    return verdict(report, totalForceidle(p) <= NO_FORCEIDLE_MAX * totalRun(p), check,
                   g_strdup_printf("%.1f ms forced idle in %.1f ms run (allowed %.0f%%)",
                                   totalForceidle(p), totalRun(p), NO_FORCEIDLE_MAX * 100));
}

/*
 * (1) in the kernel's own accounting: forced idle is charged to the task running beside
 * the forced-idle sibling, once per instant, so it covers the run time of both burners
 * (the sibling idled whenever one ran) and, with one core, cannot exceed the span. Its
 * excess over run time is the time the core spent switching between the cookies, which
 * grows with the host's load (1.02-1.19 of the run time on an idle host, 1.25 at load 2):
 * no upper bound is drawn from run time.
 */
static bool
checkTogether(const Phase *p, bool report)
{
    double fi = totalForceidle(p), run = totalRun(p);
    bool ok = true;

    ok &= verdict(report,
                  run > 0 && fi >= (1 - FORCEIDLE_RUN_TOLERANCE) * run &&
                      fi >= FORCEIDLE_SPAN_MIN * p->spanMs &&
                      fi <= FORCEIDLE_SPAN_MAX * p->spanMs + ACCOUNTING_SLACK_MS,
                  "two-cookies-forceidle-covers-run",
                  g_strdup_printf("%.1f ms forced idle, %.1f ms run, %u ms span (allowed: forced "
                                  "idle at least %.0f%% of the run time and %.0f%% of the span, "
                                  "at most %.0f%% of the span + %.0f ms)",
                                  fi, run, p->spanMs, (1 - FORCEIDLE_RUN_TOLERANCE) * 100,
                                  FORCEIDLE_SPAN_MIN * 100, FORCEIDLE_SPAN_MAX * 100,
                                  ACCOUNTING_SLACK_MS));
    ok &= verdict(
        report, run > 0 && p->x.runMs / run >= HALF_CORE_MIN && p->x.runMs / run <= HALF_CORE_MAX,
        "two-cookies-half-a-core",
        g_strdup_printf("x ran %.1f ms, y %.1f ms: x's share of the two %.2f (allowed "
                        "%.2f-%.2f); of the %u ms span x %.2f, y %.2f",
                        p->x.runMs, p->y.runMs, run > 0 ? p->x.runMs / run : 0, HALF_CORE_MIN,
                        HALF_CORE_MAX, p->spanMs, p->x.runMs / p->spanMs, p->y.runMs / p->spanMs));
    ok &= verdict(report,
                  p->cgroupForceidleMs >= 0 &&
                      fabs(p->cgroupForceidleMs - p->x.forceidleMs) <=
                          CGROUP_TOLERANCE * p->x.forceidleMs + CGROUP_SLACK_MS,
                  "cgroup-force-idle-usec",
                  g_strdup_printf("cpu.stat core_sched.force_idle_usec %.1f ms, the task's "
                                  "core_forceidle_sum %.1f ms",
                                  p->cgroupForceidleMs, p->x.forceidleMs));
    ok &= verdict(report,
                  p->overlapMs >= 0 && p->tracedMs >= 0.5 * p->spanMs &&
                      p->longestMs <= OVERLAP_STRETCH_MAX * p->spanMs &&
                      p->overlapMs <= OVERLAP_MAX * p->spanMs,
                  "two-cookies-never-together",
                  g_strdup_printf("sched_switch: the two cookies ran together on the siblings "
                                  "for %.2f ms of %.1f ms traced, at most %.2f ms at a stretch "
                                  "(%u switches; allowed %.0f%% of the span, %.0f%% at a stretch)",
                                  p->overlapMs, p->tracedMs, p->longestMs, p->switches,
                                  OVERLAP_MAX * 100, OVERLAP_STRETCH_MAX * 100));
    return ok;
}

static bool
checkApart(const Phase *p, bool report)
{
    bool ok = checkNoForceidle(report, "different-cores-no-forceidle", p);

    return checkShares(report, "different-cores-full-cpu", p, FULL_CPU_MIN, SHARE_MAX) && ok;
}

static bool
checkShared(const Phase *p, bool report)
{
    bool ok = checkNoForceidle(report, "same-cookie-no-forceidle", p);

    ok &= checkShares(report, "same-cookie-full-cpu", p, FULL_CPU_MIN, SHARE_MAX);
    return verdict(report, p->overlapMs >= TOGETHER_MIN * p->spanMs, "same-cookie-together",
                   g_strdup_printf("sched_switch: one cookie ran on both siblings together for "
                                   "%.1f ms of %.1f ms traced (at least %.0f%% of the span "
                                   "expected)",
                                   p->overlapMs, p->tracedMs, TOGETHER_MIN * 100)) &&
           ok;
}

/*
 * A loaded host disturbs a span in ways that say nothing about the two burners: a third
 * party woken beside a burner (a kernel worker on an idle sibling) forces idle until the
 * core's next reschedule, which the host delays (132.5 ms in 3886 ms of run at load 2);
 * a vCPU thread the host does not run for a while leaves the kernel's accounting behind
 * the span. So the measurement, not the assertion, is repeated: up to SPAN_TRIES spans,
 * the first that meets every bound of its phase is kept and reported, else the last. A
 * kernel that got it wrong (two cookies together, forced idle across cores, none between
 * siblings) would fail every span.
 */
static void
measureUntil(const char *name, pid_t x, unsigned cpuX, pid_t y, unsigned cpuY, unsigned seconds,
             int staging, Phase *phase, bool (*check)(const Phase *, bool))
{
    for (unsigned i = 1; i <= SPAN_TRIES; i++) {
        if (!measure(name, x, cpuX, y, cpuY, seconds, staging, phase))
            return;
        if (check(phase, false) || i == SPAN_TRIES) {
            vpgFigure(name, "spans=%u (the first within every bound is kept, at most %u)", i,
                      SPAN_TRIES);
            check(phase, true);
            return;
        }
    }
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    const vpCore *core0, *core1;
    unsigned sibling0, sibling1, other;
    vpCoreschedStatus status;
    Phase together = {0}, apart = {0}, shared = {0};
    unsigned seconds;
    pid_t x, y;

    vpgBegin("forceidle");
    if (argc != 2 || (seconds = (unsigned)atoi(argv[1])) == 0) {
        fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
        return 2;
    }
    topo = vpHwtopoLoad(NULL, NULL, NULL, &error);
    if (!vpgCheck(topo && vpTopologyNCores(topo) >= 2 && vpTopologyCore(topo, 0)->npus >= 2,
                  "topology", "%s",
                  topo ? "needs two cores, the first with two siblings" : error->message))
        return vpgEnd();
    /* Siblings come from the topology, never from CPU numbers. */
    core0 = vpTopologyCore(topo, 0);
    core1 = vpTopologyCore(topo, 1);
    sibling0 = vpTopologyPU(topo, core0->pus[0])->os;
    sibling1 = vpTopologyPU(topo, core0->pus[1])->os;
    other = vpTopologyPU(topo, core1->pus[0])->os;

    /* This program and what it forks before pinning stay off the measured cores: a wakeup
     * of it beside a burner is a third party's forced idle. */
    if (vpTopologyNCores(topo) >= 3) {
        const vpCore *last = vpTopologyCore(topo, vpTopologyNCores(topo) - 1);
        cpu_set_t set;

        CPU_ZERO(&set);
        for (int i = 0; i < last->npus; i++)
            CPU_SET(vpTopologyPU(topo, last->pus[i])->os, &set);
        sched_setaffinity(0, sizeof(set), &set);
    }
    x = startBurner();
    y = startBurner();
    if (!vpgCheck(setupCgroup(x, &error), "cgroup", "%s",
                  error ? error->message : "first burner in " CGROUP_X))
        g_clear_error(&error);
    if (!vpgCheck(setupTrace(sibling0, sibling1, &error), "trace", "%s",
                  error ? error->message : "sched_switch on the siblings"))
        g_clear_error(&error);
    status = vpCoreschedCreate(x, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    if (status == VP_CORESCHED_OK)
        status = vpCoreschedCreate(y, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
    if (vpgCheck(status == VP_CORESCHED_OK, "cookies", "%s",
                 error ? error->message : "one cookie per burner")) {
        measureUntil("siblings-different-cookies", x, sibling0, y, sibling1, seconds, (int)other,
                     &together, checkTogether);
        measureUntil("different-cores", x, sibling0, y, other, seconds, -1, &apart, checkApart);
        status = vpCoreschedShare(x, y, VP_CORESCHED_SCOPE_THREAD_GROUP, &error);
        if (vpgCheck(status == VP_CORESCHED_OK, "share", "%s",
                     error ? error->message : "second burner joins the first's cookie"))
            measureUntil("siblings-same-cookie", x, sibling0, y, sibling1, seconds, (int)other,
                         &shared, checkShared);
    }
    kill(x, SIGKILL);
    kill(y, SIGKILL);
    waitpid(x, NULL, 0);
    waitpid(y, NULL, 0);
    return vpgEnd();
}
