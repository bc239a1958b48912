/*
 * The monitor. Costs measured on this kind of host decide the shape: with 1000 threads,
 * pread of a kept schedstat fd is ~1.5 us per thread, one read of a perf group ~1 us, the
 * sched or status file ~4.5 us (printed in full on each read), /proc/stat tens of us for
 * all CPUs. So descriptors stay open, perf counters form one group per thread, and the
 * voluntary switches are counted in that group by the sched_switch tracepoint filtered on
 * the state the thread left in (sleeping: it blocked, and its next run is a wakeup); the
 * sched or status file is read only where the tracepoint is unavailable (no tracefs, no
 * permission) or for core scheduling's forced idle. Opening per read is the fallback
 * when the fd limit is reached.
 *
 * A kept /proc descriptor refers to the task, not to its number: once the thread exits
 * reads fail with ESRCH even if the number is reused, which is how "gone" is detected.
 */
#include "host/monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FILE_BUF 8192

typedef enum {
    WARN_FDLIMIT = 1 << 0,
    WARN_PERF = 1 << 1,
    WARN_SCHEDSTAT = 1 << 2,
    WARN_SWITCHES = 1 << 3,
    WARN_HW = 1 << 4,
    WARN_TRACEPOINT = 1 << 5,
} Warned;

/* Interruptible or uninterruptible sleep: the thread blocked. A preempted thread is
 * reported running (0) or with a high "preempted" marker, never with these bits. */
#define VOLUNTARY_FILTER "prev_state & 3"

static const char *const switch_tp_paths[] = {
    "/sys/kernel/tracing/events/sched/sched_switch/id",
    "/sys/kernel/debug/tracing/events/sched/sched_switch/id",
};

typedef struct {
    char *domain;
    int vcpu;
    pid_t pid, tid;
    char *dir; /* /proc/PID/task/TID/ */
    int schedstat_fd;
    int switches_fd;
    bool schedstat_reopen; /* no kept fd (fd limit): open for each read */
    bool switches_reopen;
    /* group: context switches (leader), migrations, task clock, voluntary switches */
    int perf_fd[4];
    int nperf;
    int hw_fd[2]; /* group: cycles (leader), instructions */
    bool gone;
    bool sampled;
    gint64 prev_ts;
    guint32 prev_sources;
    vpMonitorCounters prev;
} Thread;

struct _vpMonitor {
    GPtrArray *threads; /* Thread *, in the order added */
    GHashTable *index;  /* "domain\037vcpu" -> Thread * */
    const char *switches_file;
    int switch_tp; /* sched_switch tracepoint id, -1 when switches come from /proc */
    /* The probe's tracepoint event, kept: the kernel registers the tracepoint with its first
     * perf event (about 30 ms here) and unregisters it with its last (about 50 ms), and the
     * daemon's main thread, which hooks may be waiting on, should pay that once, at start,
     * not whenever the first vCPU thread is watched or the last one leaves. */
    int switch_probe[2];
    bool forceidle;
    bool perf;
    bool hw;
    guint32 warned;
    int stat_fd;
    GArray *stat_prev; /* vpMonitorCpuTicks */
    char *buf;
    gsize bufsize;
    guint64 tick_ns;
    int fd_ceiling; /* descriptors numbered from here on are not kept */
};

/* Descriptors the monitor leaves to the rest of the daemon at RLIMIT_NOFILE: its socket's
 * clients (up to 128), libvirt, the ledger's writes, the per-read /proc opens. */
#define VP_MONITOR_FD_RESERVE 192

static gint64
monotonicNs(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void warnOnce(vpMonitor *mon, Warned cause, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void
warnOnce(vpMonitor *mon, Warned cause, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    if (mon->warned & cause)
        return;
    mon->warned |= cause;
    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE", "monitor: %s", msg);
}

static bool
fdLimit(int err)
{
    return err == EMFILE || err == ENFILE;
}

static void
closeFd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* fd, or -1 with EMFILE when it is numbered at or above the ceiling: descriptors are handed
 * out lowest first, so such a number means the process is near its limit, and a placement
 * daemon that cannot accept its hook's connection is worse than one that measures less. */
static int
keepFd(const vpMonitor *mon, int fd)
{
    if (fd >= mon->fd_ceiling) {
        close(fd);
        errno = EMFILE;
        return -1;
    }
    return fd;
}

/* keepFd() for a perf group that opened: 0, or EMFILE with the whole group closed. */
static int
keepGroup(const vpMonitor *mon, int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        if (fds[i] >= mon->fd_ceiling) {
            for (int k = 0; k < n; k++)
                closeFd(&fds[k]);
            return EMFILE;
        }
    }
    return 0;
}

/* --- parsers --- */

/* Parses an unsigned decimal at *p, moving *p past it. */
static bool
parseU64(const char **p, guint64 *out)
{
    char *end;

    while (**p == ' ' || **p == '\t')
        (*p)++;
    if (!g_ascii_isdigit(**p))
        return false;
    errno = 0;
    *out = g_ascii_strtoull(*p, &end, 10);
    if (errno)
        return false;
    *p = end;
    return true;
}

guint32
vpMonitorParseSchedstat(const char *text, vpMonitorCounters *c)
{
    const char *p = text;
    guint64 run, wait, slices;

    if (!parseU64(&p, &run) || !parseU64(&p, &wait) || !parseU64(&p, &slices))
        return 0;
    c->run_ns = run;
    c->wait_ns = wait;
    c->timeslices = slices;
    return VP_SRC_SCHEDSTAT;
}

/* "key : value" lines; calls back with the trimmed key and the text after the colon. */
typedef void (*LineFunc)(const char *key, gsize keylen, const char *value, gpointer data);

static void
forEachKeyLine(const char *text, LineFunc fn, gpointer data)
{
    const char *line = text;

    while (line && *line) {
        const char *nl = strchr(line, '\n');
        const char *colon = memchr(line, ':', nl ? (gsize)(nl - line) : strlen(line));

        if (colon) {
            const char *end = colon;

            while (end > line && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
            fn(line, end - line, colon + 1, data);
        }
        line = nl ? nl + 1 : NULL;
    }
}

static bool
keyIs(const char *key, gsize len, const char *want)
{
    gsize n = strlen(want);

    /* suffix match: kernels have prefixed these with "se." or "stats." over time */
    return len >= n && memcmp(key + len - n, want, n) == 0 && (len == n || key[len - n - 1] == '.');
}

typedef struct {
    vpMonitorCounters *c;
    guint32 found; /* 1: voluntary, 2: involuntary, 4: forceidle */
} SchedParse;

/* core_forceidle_sum is printed in milliseconds with six decimals (ns remainder). */
static bool
parseMsDecimal(const char *p, guint64 *ns)
{
    guint64 ms, frac = 0;
    int digits = 0;

    if (!parseU64(&p, &ms))
        return false;
    if (*p == '.') {
        p++;
        while (g_ascii_isdigit(*p) && digits < 6) {
            frac = frac * 10 + (*p++ - '0');
            digits++;
        }
        for (; digits < 6; digits++)
            frac *= 10;
    }
    *ns = ms * 1000000 + frac;
    return true;
}

static void
schedLine(const char *key, gsize len, const char *value, gpointer data)
{
    SchedParse *sp = data;
    const char *p = value;

    if (keyIs(key, len, "nr_voluntary_switches") && parseU64(&p, &sp->c->voluntary))
        sp->found |= 1;
    else if (keyIs(key, len, "nr_involuntary_switches") && parseU64(&p, &sp->c->involuntary))
        sp->found |= 2;
    else if (keyIs(key, len, "core_forceidle_sum") && parseMsDecimal(p, &sp->c->forceidle_ns))
        sp->found |= 4;
}

guint32
vpMonitorParseSched(const char *text, vpMonitorCounters *c)
{
    SchedParse sp = {c, 0};

    forEachKeyLine(text, schedLine, &sp);
    return ((sp.found & 3) == 3 ? VP_SRC_SWITCHES : 0) | (sp.found & 4 ? VP_SRC_FORCEIDLE : 0);
}

static void
statusLine(const char *key, gsize len, const char *value, gpointer data)
{
    SchedParse *sp = data;
    const char *p = value;

    if (len == strlen("voluntary_ctxt_switches") &&
        memcmp(key, "voluntary_ctxt_switches", len) == 0 && parseU64(&p, &sp->c->voluntary))
        sp->found |= 1;
    else if (len == strlen("nonvoluntary_ctxt_switches") &&
             memcmp(key, "nonvoluntary_ctxt_switches", len) == 0 &&
             parseU64(&p, &sp->c->involuntary))
        sp->found |= 2;
}

guint32
vpMonitorParseStatus(const char *text, vpMonitorCounters *c)
{
    SchedParse sp = {c, 0};

    forEachKeyLine(text, statusLine, &sp);
    return (sp.found & 3) == 3 ? VP_SRC_SWITCHES : 0;
}

gboolean
vpMonitorParseStat(const char *text, GArray *ticks, GError **error)
{
    const char *line = text;
    unsigned lineno = 0;

    while (line && *line) {
        const char *nl = strchr(line, '\n');

        lineno++;
        if (g_str_has_prefix(line, "cpu") && g_ascii_isdigit(line[3])) {
            const char *p = line + 3;
            guint64 cpu, v[8] = {0};
            int n = 0;
            vpMonitorCpuTicks t;

            if (!parseU64(&p, &cpu) || cpu > 65535)
                n = -1;
            while (n >= 0 && n < 8 && (*p == ' ' || *p == '\t') && parseU64(&p, &v[n]))
                n++;
            /* user nice system idle [iowait irq softirq steal]; guest time is inside user */
            if (n < 4) {
                g_autofree char *bad = g_strndup(line, nl ? (gsize)(nl - line) : strlen(line));

                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "/proc/stat line %u '%s' is not 'cpuN user nice system idle ...'",
                            lineno, bad);
                return FALSE;
            }
            t.cpu = cpu;
            t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
            t.total = t.busy + v[3] + v[4];
            g_array_append_val(ticks, t);
        }
        line = nl ? nl + 1 : NULL;
    }
    return TRUE;
}

/* --- perf --- */

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
                closeFd(&fds[k]);
            return err;
        }
    }
    return 0;
}

/* Reads a group; scales for multiplexing (hardware counters only ever are). */
static bool
perfReadGroup(int leader, int n, guint64 *out)
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
            closeFd(&fd);
            closeFd(&leader);
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

static void
detect(vpMonitor *mon, const vpMonitorOptions *opts)
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
        warnOnce(mon, WARN_PERF,
                 "perf software counters unavailable (%s): no context switch, migration "
                 "or task clock counts",
                 g_strerror(err));
    for (int i = 0; i < 3 && !err; i++)
        closeFd(&fds[i]);

    err = perfOpenGroup(PERF_TYPE_HARDWARE, hw_events, 2, 0, fds);
    mon->hw = err == 0;
    if (err)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "MESSAGE",
                         "monitor: no hardware counters (%s): cycles and instructions not sampled",
                         g_strerror(err));
    for (int i = 0; i < 2 && !err; i++)
        closeFd(&fds[i]);
    mon->switch_tp = -1;
    mon->switch_probe[0] = mon->switch_probe[1] = -1;
    if (mon->perf)
        detectSwitches(mon, opts);
}

vpMonitor *
vpMonitorNew(const vpMonitorOptions *opts)
{
    vpMonitor *mon = g_new0(vpMonitor, 1);
    long tck = sysconf(_SC_CLK_TCK);
    struct rlimit rl;

    mon->threads = g_ptr_array_new();
    mon->index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    mon->stat_fd = -1;
    mon->bufsize = FILE_BUF;
    mon->buf = g_malloc(mon->bufsize);
    mon->tick_ns = 1000000000 / (tck > 0 ? tck : 100);
    mon->fd_ceiling = G_MAXINT;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        mon->fd_ceiling = rl.rlim_cur > 2 * VP_MONITOR_FD_RESERVE
                              ? (int)MIN(rl.rlim_cur - VP_MONITOR_FD_RESERVE, G_MAXINT)
                              : (int)rl.rlim_cur / 2;
    detect(mon, opts);
    return mon;
}

static void
threadClose(Thread *t)
{
    closeFd(&t->schedstat_fd);
    closeFd(&t->switches_fd);
    for (int i = 0; i < 4; i++)
        closeFd(&t->perf_fd[i]);
    t->nperf = 0;
    for (int i = 0; i < 2; i++)
        closeFd(&t->hw_fd[i]);
}

static void
threadFree(Thread *t)
{
    threadClose(t);
    g_free(t->domain);
    g_free(t->dir);
    g_free(t);
}

void
vpMonitorFree(vpMonitor *mon)
{
    if (!mon)
        return;
    for (guint i = 0; i < mon->threads->len; i++)
        threadFree(g_ptr_array_index(mon->threads, i));
    g_ptr_array_free(mon->threads, TRUE);
    g_hash_table_unref(mon->index);
    if (mon->stat_fd >= 0)
        close(mon->stat_fd);
    closeFd(&mon->switch_probe[1]);
    closeFd(&mon->switch_probe[0]);
    if (mon->stat_prev)
        g_array_free(mon->stat_prev, TRUE);
    g_free(mon->buf);
    g_free(mon);
}

guint32
vpMonitorHostSources(const vpMonitor *mon)
{
    return VP_SRC_SCHEDSTAT | VP_SRC_SWITCHES | (mon->forceidle ? VP_SRC_FORCEIDLE : 0) |
           (mon->perf ? VP_SRC_PERF : 0) | (mon->hw ? VP_SRC_HW : 0);
}

const char *
vpMonitorSwitchesFrom(const vpMonitor *mon)
{
    return mon->switch_tp >= 0 ? "tracepoint" : mon->switches_file;
}

static char *
indexKey(const char *domain, int vcpu)
{
    return g_strdup_printf("%s\037%d", domain, vcpu);
}

/* Opens name in the thread's directory and keeps it; at the fd limit, falls back to
 * opening per read. Returns 0 or the errno that says the file is not there. */
static int
keepOpen(vpMonitor *mon, int dirfd, const char *name, int *fd, bool *reopen)
{
    *fd = keepFd(mon, openat(dirfd, name, O_RDONLY | O_CLOEXEC));
    if (*fd >= 0)
        return 0;
    if (fdLimit(errno)) {
        *reopen = true;
        warnOnce(mon, WARN_FDLIMIT,
                 "fd limit reached (%s): /proc files of some vCPU threads are opened on each "
                 "read and their perf counters left out; raise RLIMIT_NOFILE",
                 g_strerror(errno));
        return 0;
    }
    return errno;
}

static void
openPerf(vpMonitor *mon, Thread *t)
{
    int err;

    if (mon->perf) {
        err = perfOpenGroup(PERF_TYPE_SOFTWARE, sw_events, 3, t->tid, t->perf_fd);
        if (!err)
            err = keepGroup(mon, t->perf_fd, 3);
        t->nperf = err ? 0 : 3;
        if (!err && mon->switch_tp >= 0) {
            t->perf_fd[3] = keepFd(mon, voluntaryOpen(mon->switch_tp, t->tid, t->perf_fd[0]));
            if (t->perf_fd[3] >= 0)
                t->nperf = 4;
            else
                warnOnce(mon, fdLimit(errno) ? WARN_FDLIMIT : WARN_TRACEPOINT,
                         "sched_switch tracepoint on thread %d (domain '%s' vCPU %d): %s; switch "
                         "counts of such threads read from /proc",
                         t->tid, t->domain, t->vcpu, g_strerror(errno));
        }
        if (!err && (err = perfEnable(t->perf_fd[0]))) {
            for (int i = 0; i < t->nperf; i++)
                closeFd(&t->perf_fd[i]);
            t->nperf = 0;
        }
        if (fdLimit(err))
            warnOnce(mon, WARN_FDLIMIT,
                     "fd limit reached (%s): perf counters of some vCPU threads left out; "
                     "raise RLIMIT_NOFILE",
                     g_strerror(err));
        else if (err)
            warnOnce(mon, WARN_PERF,
                     "perf software counters of thread %d (domain '%s' vCPU %d): %s; left out "
                     "where they fail",
                     t->tid, t->domain, t->vcpu, g_strerror(err));
    }
    if (mon->hw) {
        err = perfOpenGroup(PERF_TYPE_HARDWARE, hw_events, 2, t->tid, t->hw_fd);
        if (!err)
            err = keepGroup(mon, t->hw_fd, 2);
        if (!err && (err = perfEnable(t->hw_fd[0]))) {
            closeFd(&t->hw_fd[0]);
            closeFd(&t->hw_fd[1]);
        }
        if (err)
            warnOnce(mon, fdLimit(err) ? WARN_FDLIMIT : WARN_HW,
                     "hardware counters of thread %d (domain '%s' vCPU %d): %s; left out "
                     "where they fail",
                     t->tid, t->domain, t->vcpu, g_strerror(err));
    }
}

static Thread *
threadOpen(vpMonitor *mon, const char *domain, int vcpu, pid_t pid, pid_t tid, GError **error)
{
    Thread *t = g_new0(Thread, 1);
    int dirfd;
    int err = 0;

    t->domain = g_strdup(domain);
    t->vcpu = vcpu;
    t->pid = pid;
    t->tid = tid;
    t->dir = g_strdup_printf("/proc/%d/task/%d/", pid, tid);
    t->schedstat_fd = t->switches_fd = -1;
    for (int i = 0; i < 4; i++)
        t->perf_fd[i] = -1;
    for (int i = 0; i < 2; i++)
        t->hw_fd[i] = -1;

    dirfd = open(t->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0 && fdLimit(errno)) {
        t->schedstat_reopen = t->switches_reopen = true;
        warnOnce(mon, WARN_FDLIMIT,
                 "fd limit reached (%s): /proc files of some vCPU threads are opened on each "
                 "read and their perf counters left out; raise RLIMIT_NOFILE",
                 g_strerror(errno));
        return t;
    }
    if (dirfd < 0) {
        err = errno;
    } else {
        err = keepOpen(mon, dirfd, "schedstat", &t->schedstat_fd, &t->schedstat_reopen);
        if (err == ENOENT && g_file_test(t->dir, G_FILE_TEST_IS_DIR)) {
            warnOnce(mon, WARN_SCHEDSTAT,
                     "%sschedstat is missing (kernel without CONFIG_SCHED_INFO): no run-queue "
                     "wait figures",
                     t->dir);
            err = 0;
        }
        if (!err && !t->schedstat_reopen)
            openPerf(mon, t);
        /* the tracepoint counts switches; the file is still needed for forced idle */
        if (!err && (t->nperf < 4 || mon->forceidle))
            err = keepOpen(mon, dirfd, mon->switches_file, &t->switches_fd, &t->switches_reopen);
        if (err == ENOENT && g_file_test(t->dir, G_FILE_TEST_IS_DIR)) {
            warnOnce(mon, WARN_SWITCHES, "%s%s is missing: no voluntary switch counts", t->dir,
                     mon->switches_file);
            err = 0;
        }
        close(dirfd);
    }
    if (err) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                    "domain '%s' vCPU %d: thread %d of process %d: %s", domain, vcpu, tid, pid,
                    g_strerror(err));
        threadFree(t);
        return NULL;
    }
    return t;
}

static void
threadDrop(vpMonitor *mon, Thread *t)
{
    g_autofree char *key = indexKey(t->domain, t->vcpu);

    g_hash_table_remove(mon->index, key);
    g_ptr_array_remove(mon->threads, t);
    threadFree(t);
}

gboolean
vpMonitorAdd(vpMonitor *mon, const char *domain, int vcpu, pid_t pid, pid_t tid, GError **error)
{
    Thread *t, *old;

    if (!domain || !*domain || vcpu < 0 || pid <= 0 || tid <= 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "monitor: domain '%s' vCPU %d pid %d tid %d is not a valid thread",
                    domain ? domain : "", vcpu, pid, tid);
        return FALSE;
    }
    if (!(t = threadOpen(mon, domain, vcpu, pid, tid, error)))
        return FALSE;
    {
        g_autofree char *key = indexKey(domain, vcpu);

        if ((old = g_hash_table_lookup(mon->index, key)))
            threadDrop(mon, old);
    }
    g_ptr_array_add(mon->threads, t);
    g_hash_table_insert(mon->index, indexKey(domain, vcpu), t);
    return TRUE;
}

gboolean
vpMonitorRemove(vpMonitor *mon, const char *domain, int vcpu)
{
    g_autofree char *key = indexKey(domain, vcpu);
    Thread *t = g_hash_table_lookup(mon->index, key);

    if (!t)
        return FALSE;
    threadDrop(mon, t);
    return TRUE;
}

guint
vpMonitorRemoveDomain(vpMonitor *mon, const char *domain)
{
    guint n = 0;

    for (guint i = mon->threads->len; i-- > 0;) {
        Thread *t = g_ptr_array_index(mon->threads, i);

        if (strcmp(t->domain, domain) == 0) {
            threadDrop(mon, t);
            n++;
        }
    }
    return n;
}

guint
vpMonitorSize(const vpMonitor *mon)
{
    return mon->threads->len;
}

/* Reads a /proc file of the thread into buf; returns its length or -errno (-ENODATA when
 * the source is not available for this thread). */
static gssize
readThreadFile(Thread *t, int fd, bool reopen, const char *name, char *buf, gsize size)
{
    g_autofree char *path = NULL;
    bool temp = false;
    gssize n;
    int err;

    if (fd < 0) {
        if (!reopen)
            return -ENODATA;
        path = g_strconcat(t->dir, name, NULL);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        temp = true;
    }
    n = pread(fd, buf, size - 1, 0);
    err = errno;
    if (temp)
        close(fd);
    if (n < 0)
        return -err;
    buf[n] = '\0';
    return n;
}

static bool
vanished(gssize r)
{
    return r == -ESRCH || r == -ENOENT;
}

static void
diff(const vpMonitorCounters *now, const vpMonitorCounters *prev, guint32 src, vpMonitorCounters *d)
{
#define D(f) d->f = now->f >= prev->f ? now->f - prev->f : 0
    memset(d, 0, sizeof(*d));
    if (src & VP_SRC_SCHEDSTAT) {
        D(run_ns);
        D(wait_ns);
        D(timeslices);
    }
    if (src & VP_SRC_SWITCHES) {
        D(voluntary);
        D(involuntary);
    }
    if (src & VP_SRC_FORCEIDLE)
        D(forceidle_ns);
    if (src & VP_SRC_PERF) {
        D(ctx_switches);
        D(migrations);
        D(task_clock_ns);
    }
    if (src & VP_SRC_HW) {
        D(cycles);
        D(instructions);
    }
#undef D
}

static void
sampleThread(vpMonitor *mon, Thread *t, vpMonitorSample *s)
{
    char buf[FILE_BUF];
    vpMonitorCounters c = t->prev;
    guint32 src = 0;
    gssize r;
    bool gone = false;

    s->domain = g_strdup(t->domain);
    s->vcpu = t->vcpu;
    s->pid = t->pid;
    s->tid = t->tid;
    s->timestamp_ns = monotonicNs();
    if (t->gone) {
        s->gone = true;
        s->total = t->prev;
        return;
    }
    r = readThreadFile(t, t->schedstat_fd, t->schedstat_reopen, "schedstat", buf, sizeof(buf));
    if (r >= 0)
        src |= vpMonitorParseSchedstat(buf, &c);
    gone |= vanished(r);
    r = readThreadFile(t, t->switches_fd, t->switches_reopen, mon->switches_file, buf, sizeof(buf));
    if (r >= 0)
        src |= strcmp(mon->switches_file, "sched") == 0 ? vpMonitorParseSched(buf, &c)
                                                        : vpMonitorParseStatus(buf, &c);
    gone |= vanished(r);
    if (gone) {
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "VCPUPLACE_DOMAIN", t->domain,
                         "MESSAGE", "monitor: domain '%s' vCPU %d: thread %d has exited", t->domain,
                         t->vcpu, t->tid);
        threadClose(t);
        t->gone = true;
        s->gone = true;
        s->total = t->prev;
        return;
    }
    if (t->nperf) {
        guint64 v[4];

        if (perfReadGroup(t->perf_fd[0], t->nperf, v)) {
            c.ctx_switches = v[0];
            c.migrations = v[1];
            c.task_clock_ns = v[2];
            src |= VP_SRC_PERF;
            if (t->nperf == 4) {
                c.voluntary = v[3];
                c.involuntary = v[0] >= v[3] ? v[0] - v[3] : 0;
                src |= VP_SRC_SWITCHES;
            }
        }
    }
    if (t->hw_fd[0] >= 0) {
        guint64 v[2];

        if (perfReadGroup(t->hw_fd[0], 2, v)) {
            c.cycles = v[0];
            c.instructions = v[1];
            src |= VP_SRC_HW;
        }
    }
    s->sources = src;
    s->total = c;
    if (t->sampled) {
        s->interval_ns = s->timestamp_ns - t->prev_ts;
        s->delta_sources = src & t->prev_sources;
        diff(&c, &t->prev, s->delta_sources, &s->delta);
    }
    t->sampled = true;
    t->prev = c;
    t->prev_ts = s->timestamp_ns;
    t->prev_sources = src;
}

static void
monitorSampleClear(gpointer data)
{
    vpMonitorSample *s = data;

    g_free(s->domain);
}

GArray *
vpMonitorSampleAll(vpMonitor *mon)
{
    GArray *out = g_array_sized_new(FALSE, TRUE, sizeof(vpMonitorSample), mon->threads->len);

    g_array_set_clear_func(out, monitorSampleClear);
    g_array_set_size(out, mon->threads->len);
    for (guint i = 0; i < mon->threads->len; i++)
        sampleThread(mon, g_ptr_array_index(mon->threads, i),
                     &g_array_index(out, vpMonitorSample, i));
    return out;
}

/* Reads /proc/stat whole; its size grows with CPUs and interrupts. */
static gssize
readStat(vpMonitor *mon)
{
    gssize n;

    if (mon->stat_fd < 0 && (mon->stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    for (;;) {
        n = pread(mon->stat_fd, mon->buf, mon->bufsize - 1, 0);
        if (n < 0)
            return -errno;
        if ((gsize)n < mon->bufsize - 1)
            break;
        mon->bufsize *= 2;
        mon->buf = g_realloc(mon->buf, mon->bufsize);
    }
    mon->buf[n] = '\0';
    return n;
}

GArray *
vpMonitorSampleCpus(vpMonitor *mon, GError **error)
{
    g_autoptr(GArray) ticks = g_array_new(FALSE, FALSE, sizeof(vpMonitorCpuTicks));
    GArray *out = g_array_new(FALSE, TRUE, sizeof(vpCpuSample));
    gssize r = readStat(mon);

    if (r < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "monitor: cannot read /proc/stat: %s",
                    g_strerror(-r));
        g_array_free(out, TRUE);
        return NULL;
    }
    if (!vpMonitorParseStat(mon->buf, ticks, error)) {
        g_array_free(out, TRUE);
        return NULL;
    }
    for (guint i = 0; mon->stat_prev && i < ticks->len; i++) {
        const vpMonitorCpuTicks *now = &g_array_index(ticks, vpMonitorCpuTicks, i);

        /* CPUs come and go with hotplug: match by number */
        for (guint k = 0; k < mon->stat_prev->len; k++) {
            const vpMonitorCpuTicks *prev = &g_array_index(mon->stat_prev, vpMonitorCpuTicks, k);
            vpCpuSample cs;

            if (prev->cpu != now->cpu)
                continue;
            if (now->total > prev->total && now->busy >= prev->busy) {
                cs.cpu = now->cpu;
                cs.interval_ns = (now->total - prev->total) * mon->tick_ns;
                cs.busy_ns = MIN(now->busy - prev->busy, now->total - prev->total) * mon->tick_ns;
                g_array_append_val(out, cs);
            }
            break;
        }
    }
    if (mon->stat_prev)
        g_array_free(mon->stat_prev, TRUE);
    mon->stat_prev = g_steal_pointer(&ticks);
    return out;
}

vpPressureInput *
vpMonitorPressureInput(const GArray *samples, const GArray *cpus)
{
    vpPressureInput *in = vpPressureInputNew();

    for (guint i = 0; i < samples->len; i++) {
        const vpMonitorSample *m = &g_array_index(samples, vpMonitorSample, i);
        vpPressureSample s = {
            .domain = m->domain,
            .vcpu = m->vcpu,
            .interval_ns = m->interval_ns,
        };

        if (m->gone || m->interval_ns <= 0)
            continue;
        if (m->delta_sources & VP_SRC_SCHEDSTAT) {
            s.have |= VP_HAVE_SCHEDSTAT;
            s.run_ns = m->delta.run_ns;
            s.wait_ns = m->delta.wait_ns;
        }
        if (m->delta_sources & VP_SRC_SWITCHES) {
            s.have |= VP_HAVE_SWITCHES;
            s.voluntary = m->delta.voluntary;
            s.involuntary = m->delta.involuntary;
        }
        if (m->delta_sources & VP_SRC_PERF) {
            s.have |= VP_HAVE_MIGRATIONS;
            s.migrations = m->delta.migrations;
        }
        if (m->delta_sources & VP_SRC_FORCEIDLE) {
            s.have |= VP_HAVE_FORCEIDLE;
            s.forceidle_ns = m->delta.forceidle_ns;
        }
        vpPressureInputAddVcpu(in, &s);
    }
    for (guint i = 0; cpus && i < cpus->len; i++)
        vpPressureInputAddCpu(in, &g_array_index(cpus, vpCpuSample, i));
    return in;
}
