/*
 * The monitor's perf counters: per thread, one software group (context switches,
 * migrations, task clock, and the voluntary switches from the sched_switch tracepoint)
 * and, where the host has them, one hardware group (cycles, instructions); what the host
 * offers is detected once. monitor.c says why they are shaped so.
 */
#include "host/monitorpriv.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Interruptible or uninterruptible sleep: the thread blocked. A preempted thread is
 * reported running (0) or with a high "preempted" marker, never with these bits. */
#define VOLUNTARY_FILTER "prev_state & 3"

static const char *const switch_tp_paths[] = {
    "/sys/kernel/tracing/events/sched/sched_switch/id",
    "/sys/kernel/debug/tracing/events/sched/sched_switch/id",
};

/* vpMonKeepFd() for a perf group that opened: 0, or EMFILE with the whole group closed. */
static int
keepGroup(const vpMonitor *mon, int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        if (fds[i] >= mon->fd_ceiling) {
            for (int k = 0; k < n; k++)
                vpMonCloseFd(&fds[k]);
            return EMFILE;
        }
    }
    return 0;
}

static int
perfOpen(guint32 type, guint64 config, pid_t tid, int group)
{
    struct perf_event_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = type;
    attr.config = config;
    /* A member added to a group that is already counting on a running thread stays off
     * until the thread is next switched in, so a leader starts disabled and the caller
     * enables the whole group once it is complete (see perfEnable). */
    attr.disabled = group < 0;
    attr.read_format =
        PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    return syscall(SYS_perf_event_open, &attr, tid, -1, group, PERF_FLAG_FD_CLOEXEC);
}

/* Starts a complete group counting; returns 0 or an errno. */
static int
perfEnable(int leader)
{
    return ioctl(leader, PERF_EVENT_IOC_ENABLE, 0) < 0 ? errno : 0;
}

/* Opens a group of events on tid, all or none; returns 0 or an errno. */
static int
perfOpenGroup(guint32 type, const guint64 *configs, int n, pid_t tid, int *fds)
{
    for (int i = 0; i < n; i++) {
        fds[i] = perfOpen(type, configs[i], tid, i ? fds[0] : -1);
        if (fds[i] < 0) {
            int err = errno;

            for (int k = 0; k <= i; k++)
                vpMonCloseFd(&fds[k]);
            return err;
        }
    }
    return 0;
}

/* Reads a group; scales for multiplexing (hardware counters only ever are). */
bool
vpMonPerfReadGroup(int leader, int n, guint64 *out)
{
    guint64 buf[3 + 4];
    ssize_t len = read(leader, buf, sizeof(buf));

    if (len < (ssize_t)((3 + n) * sizeof(guint64)) || buf[0] != (guint64)n)
        return false;
    for (int i = 0; i < n; i++) {
        guint64 v = buf[3 + i];

        if (buf[2] && buf[2] < buf[1])
            v = (guint64)((double)v * buf[1] / buf[2]);
        out[i] = v;
    }
    return true;
}

/* Voluntary switches of tid, as a member of group: -1 with errno set on failure. */
static int
voluntaryOpen(int tp, pid_t tid, int group)
{
    int fd = perfOpen(PERF_TYPE_TRACEPOINT, tp, tid, group);

    if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, VOLUNTARY_FILTER) < 0) {
        int err = errno;

        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

static const guint64 sw_events[] = {PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_CPU_MIGRATIONS,
                                    PERF_COUNT_SW_TASK_CLOCK};
static const guint64 hw_events[] = {PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS};

static int
switchTracepoint(GString *why)
{
    for (gsize i = 0; i < G_N_ELEMENTS(switch_tp_paths); i++) {
        g_autofree char *text = NULL;
        guint64 id;

        if (g_file_get_contents(switch_tp_paths[i], &text, NULL, NULL) &&
            g_ascii_string_to_unsigned(g_strstrip(text), 10, 0, G_MAXINT, &id, NULL))
            return id;
    }
    g_string_append(why, "tracefs is not mounted");
    return -1;
}

static void
detectSwitches(vpMonitor *mon, const vpMonitorOptions *opts)
{
    g_autoptr(GString) why = g_string_new(NULL);
    int leader = -1, fd = -1, tp = -1, err = 0;

    if (opts && opts->proc_switches)
        g_string_append(why, "asked to");
    else
        tp = switchTracepoint(why);
    if (tp >= 0) {
        err = perfOpenGroup(PERF_TYPE_SOFTWARE, sw_events, 1, 0, &leader);
        if (!err && (fd = voluntaryOpen(tp, 0, leader)) < 0)
            err = errno;
        if (err) {
            g_string_append_printf(why, "sched_switch tracepoint: %s", g_strerror(err));
            tp = -1;
            vpMonCloseFd(&fd);
            vpMonCloseFd(&leader);
        }
    }
    mon->switch_probe[0] = leader;
    mon->switch_probe[1] = fd;
    mon->switch_tp = tp;
    if (tp < 0)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "MESSAGE",
                         "monitor: switch counts read from /proc/PID/task/TID/%s (%s), about 4 us "
                         "per thread and sample",
                         mon->switches_file, why->str);
}

void
vpMonDetect(vpMonitor *mon, const vpMonitorOptions *opts)
{
    int fds[3];
    int err;
    g_autofree char *sched = NULL;

    mon->switches_file = g_file_test("/proc/self/sched", G_FILE_TEST_EXISTS) ? "sched" : "status";
    if (g_file_get_contents("/proc/self/sched", &sched, NULL, NULL))
        mon->forceidle = strstr(sched, "core_forceidle_sum") != NULL;

    err = perfOpenGroup(PERF_TYPE_SOFTWARE, sw_events, 3, 0, fds);
    mon->perf = err == 0;
    if (err)
        vpMonWarnOnce(mon, WARN_PERF,
                      "perf software counters unavailable (%s): no context switch, migration "
                      "or task clock counts",
                      g_strerror(err));
    for (int i = 0; i < 3 && !err; i++)
        vpMonCloseFd(&fds[i]);

    err = perfOpenGroup(PERF_TYPE_HARDWARE, hw_events, 2, 0, fds);
    mon->hw = err == 0;
    if (err)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "MESSAGE",
                         "monitor: no hardware counters (%s): cycles and instructions not sampled",
                         g_strerror(err));
    for (int i = 0; i < 2 && !err; i++)
        vpMonCloseFd(&fds[i]);
    mon->switch_tp = -1;
    mon->switch_probe[0] = mon->switch_probe[1] = -1;
    if (mon->perf)
        detectSwitches(mon, opts);
}

void
vpMonOpenPerf(vpMonitor *mon, Thread *t)
{
    int err;

    if (mon->perf) {
        err = perfOpenGroup(PERF_TYPE_SOFTWARE, sw_events, 3, t->tid, t->perf_fd);
        if (!err)
            err = keepGroup(mon, t->perf_fd, 3);
        t->nperf = err ? 0 : 3;
        if (!err && mon->switch_tp >= 0) {
            t->perf_fd[3] = vpMonKeepFd(mon, voluntaryOpen(mon->switch_tp, t->tid, t->perf_fd[0]));
            if (t->perf_fd[3] >= 0)
                t->nperf = 4;
            else
                vpMonWarnOnce(
                    mon, vpMonFdLimit(errno) ? WARN_FDLIMIT : WARN_TRACEPOINT,
                    "sched_switch tracepoint on thread %d (domain '%s' vCPU %d): %s; switch "
                    "counts of such threads read from /proc",
                    t->tid, t->domain, t->vcpu, g_strerror(errno));
        }
        if (!err && (err = perfEnable(t->perf_fd[0]))) {
            for (int i = 0; i < t->nperf; i++)
                vpMonCloseFd(&t->perf_fd[i]);
            t->nperf = 0;
        }
        if (vpMonFdLimit(err))
            vpMonWarnOnce(mon, WARN_FDLIMIT,
                          "fd limit reached (%s): perf counters of some vCPU threads left out; "
                          "raise RLIMIT_NOFILE",
                          g_strerror(err));
        else if (err)
            vpMonWarnOnce(mon, WARN_PERF,
                          "perf software counters of thread %d (domain '%s' vCPU %d): %s; left out "
                          "where they fail",
                          t->tid, t->domain, t->vcpu, g_strerror(err));
    }
    if (mon->hw) {
        err = perfOpenGroup(PERF_TYPE_HARDWARE, hw_events, 2, t->tid, t->hw_fd);
        if (!err)
            err = keepGroup(mon, t->hw_fd, 2);
        if (!err && (err = perfEnable(t->hw_fd[0]))) {
            vpMonCloseFd(&t->hw_fd[0]);
            vpMonCloseFd(&t->hw_fd[1]);
        }
        if (err)
            vpMonWarnOnce(mon, vpMonFdLimit(err) ? WARN_FDLIMIT : WARN_HW,
                          "hardware counters of thread %d (domain '%s' vCPU %d): %s; left out "
                          "where they fail",
                          t->tid, t->domain, t->vcpu, g_strerror(err));
    }
}
