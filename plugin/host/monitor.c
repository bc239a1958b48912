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
#include "host/monitorpriv.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

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

void
vpMonWarnOnce(vpMonitor *mon, Warned cause, const char *fmt, ...)
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

bool
vpMonFdLimit(int err)
{
    return err == EMFILE || err == ENFILE;
}

void
vpMonCloseFd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* fd, or -1 with EMFILE when it is numbered at or above the ceiling: descriptors are handed
 * out lowest first, so such a number means the process is near its limit, and a placement
 * daemon that cannot accept its hook's connection is worse than one that measures less. */
int
vpMonKeepFd(const vpMonitor *mon, int fd)
{
    if (fd >= mon->fd_ceiling) {
        close(fd);
        errno = EMFILE;
        return -1;
    }
    return fd;
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
    vpMonDetect(mon, opts);
    return mon;
}

static void
threadClose(Thread *t)
{
    vpMonCloseFd(&t->schedstat_fd);
    vpMonCloseFd(&t->switches_fd);
    for (int i = 0; i < 4; i++)
        vpMonCloseFd(&t->perf_fd[i]);
    t->nperf = 0;
    for (int i = 0; i < 2; i++)
        vpMonCloseFd(&t->hw_fd[i]);
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
    vpMonCloseFd(&mon->switch_probe[1]);
    vpMonCloseFd(&mon->switch_probe[0]);
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
    *fd = vpMonKeepFd(mon, openat(dirfd, name, O_RDONLY | O_CLOEXEC));
    if (*fd >= 0)
        return 0;
    if (vpMonFdLimit(errno)) {
        *reopen = true;
        vpMonWarnOnce(mon, WARN_FDLIMIT,
                      "fd limit reached (%s): /proc files of some vCPU threads are opened on each "
                      "read and their perf counters left out; raise RLIMIT_NOFILE",
                      g_strerror(errno));
        return 0;
    }
    return errno;
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
    if (dirfd < 0 && vpMonFdLimit(errno)) {
        t->schedstat_reopen = t->switches_reopen = true;
        vpMonWarnOnce(mon, WARN_FDLIMIT,
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
            vpMonWarnOnce(mon, WARN_SCHEDSTAT,
                          "%sschedstat is missing (kernel without CONFIG_SCHED_INFO): no run-queue "
                          "wait figures",
                          t->dir);
            err = 0;
        }
        if (!err && !t->schedstat_reopen)
            vpMonOpenPerf(mon, t);
        /* the tracepoint counts switches; the file is still needed for forced idle */
        if (!err && (t->nperf < 4 || mon->forceidle))
            err = keepOpen(mon, dirfd, mon->switches_file, &t->switches_fd, &t->switches_reopen);
        if (err == ENOENT && g_file_test(t->dir, G_FILE_TEST_IS_DIR)) {
            vpMonWarnOnce(mon, WARN_SWITCHES, "%s%s is missing: no voluntary switch counts", t->dir,
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

        if (vpMonPerfReadGroup(t->perf_fd[0], t->nperf, v)) {
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

        if (vpMonPerfReadGroup(t->hw_fd[0], 2, v)) {
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
