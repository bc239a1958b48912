/*
 * The monitor on real threads of this test process: a spinning thread's run time grows
 * more than a sleeping one's, a sleeping thread's voluntary switches grow, an exited
 * thread is reported gone (logged once), the fd limit degrades instead of failing. Plus
 * the /proc parsers on fixed text, including the core scheduling line this host's kernel
 * cannot show.
 */
#include "host/monitor.h"
#include "checkmain.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- log capture: counts messages containing a word --- */

static GPtrArray *logged;

static GLogWriterOutput
captureWriter(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
    for (gsize i = 0; i < n; i++) {
        if (strcmp(fields[i].key, "MESSAGE") == 0)
            g_ptr_array_add(logged, g_strdup(fields[i].value));
    }
    return g_log_writer_standard_streams(level, fields, n, data);
}

static guint
loggedCount(const char *needle)
{
    guint n = 0;

    for (guint i = 0; i < logged->len; i++)
        n += strstr(g_ptr_array_index(logged, i), needle) != NULL;
    return n;
}

/* --- threads --- */

typedef struct {
    GThread *thread;
    gint tid;
    gint stop;
    bool spin;
} Worker;

static gpointer
workerMain(gpointer data)
{
    Worker *w = data;

    g_atomic_int_set(&w->tid, (gint)syscall(SYS_gettid));
    while (!g_atomic_int_get(&w->stop)) {
        if (!w->spin)
            g_usleep(1000);
    }
    return NULL;
}

static Worker *
workerStart(bool spin)
{
    Worker *w = g_new0(Worker, 1);

    w->spin = spin;
    w->thread = g_thread_new(spin ? "spin" : "nap", workerMain, w);
    while (!g_atomic_int_get(&w->tid))
        g_usleep(100);
    return w;
}

static void
workerStop(Worker *w)
{
    g_atomic_int_set(&w->stop, 1);
    g_thread_join(w->thread);
    g_free(w);
}

/* pthread_join returns when the kernel clears the thread id, a little before the thread
 * leaves /proc: only then may the monitor call it gone. */
static void
waitReaped(pid_t tid)
{
    g_autofree char *dir = g_strdup_printf("/proc/self/task/%d", tid);

    for (int i = 0; i < 5000 && g_file_test(dir, G_FILE_TEST_EXISTS); i++)
        g_usleep(1000);
    ck_assert_msg(!g_file_test(dir, G_FILE_TEST_EXISTS), "%s still there after 5 s", dir);
}

static const vpMonitorSample *
find(GArray *samples, const char *domain, int vcpu)
{
    for (guint i = 0; i < samples->len; i++) {
        const vpMonitorSample *s = &g_array_index(samples, vpMonitorSample, i);

        if (strcmp(s->domain, domain) == 0 && s->vcpu == vcpu)
            return s;
    }
    ck_abort_msg("no sample for %s vCPU %d", domain, vcpu);
    return NULL;
}

static void
addOrFail(vpMonitor *mon, const char *domain, int vcpu, pid_t tid)
{
    g_autoptr(GError) err = NULL;

    ck_assert_msg(vpMonitorAdd(mon, domain, vcpu, getpid(), tid, &err), "%s",
                  err ? err->message : "");
}

static void
busyAndSleeping(const vpMonitorOptions *opts)
{
    g_autoptr(vpMonitor) mon = vpMonitorNew(opts);
    Worker *busy = workerStart(true), *nap = workerStart(false);
    g_autoptr(GArray) first = NULL;
    g_autoptr(GArray) second = NULL;
    g_autoptr(vpPressureInput) in = NULL;
    const vpMonitorSample *b, *n;
    guint32 host = vpMonitorHostSources(mon);

    addOrFail(mon, "vm", 0, busy->tid);
    addOrFail(mon, "vm", 1, nap->tid);
    ck_assert_uint_eq(vpMonitorSize(mon), 2);
    first = vpMonitorSampleAll(mon);
    ck_assert_uint_eq(first->len, 2);
    b = find(first, "vm", 0);
    ck_assert_int_eq(b->tid, busy->tid);
    ck_assert_int_eq(b->interval_ns, 0);
    ck_assert_uint_eq(b->delta_sources, 0);
    ck_assert(b->sources & VP_SRC_SCHEDSTAT);
    ck_assert(b->sources & VP_SRC_SWITCHES);

    g_usleep(300 * 1000);
    second = vpMonitorSampleAll(mon);
    b = find(second, "vm", 0);
    n = find(second, "vm", 1);
    ck_assert(!b->gone && !n->gone);
    ck_assert_int_gt(b->interval_ns, 0);
    ck_assert_int_gt(b->timestamp_ns, find(first, "vm", 0)->timestamp_ns);
    ck_assert(b->delta_sources & VP_SRC_SCHEDSTAT);
    ck_assert(n->delta_sources & VP_SRC_SWITCHES);
    ck_assert_uint_gt(b->delta.run_ns, 0);
    ck_assert_uint_gt(b->delta.run_ns, n->delta.run_ns);
    ck_assert_uint_eq(b->total.run_ns, find(first, "vm", 0)->total.run_ns + b->delta.run_ns);
    ck_assert_uint_gt(n->delta.voluntary, 0);
    ck_assert_uint_gt(n->delta.voluntary, b->delta.voluntary);
    if (host & VP_SRC_PERF) {
        ck_assert(b->delta_sources & VP_SRC_PERF);
        ck_assert_uint_gt(b->delta.task_clock_ns, n->delta.task_clock_ns);
        ck_assert_uint_gt(n->delta.ctx_switches, 0);
    } else {
        g_print("perf software counters unavailable here: perf figures not checked\n");
    }
    if (!(host & VP_SRC_HW))
        ck_assert(!(b->sources & VP_SRC_HW));

    /* a first sample has no deltas: nothing for the pressure model */
    in = vpMonitorPressureInput(first, NULL);
    ck_assert_uint_eq(in->vcpus->len, 0);
    vpPressureInputFree(in);
    in = vpMonitorPressureInput(second, NULL);
    ck_assert_uint_eq(in->vcpus->len, 2);
    for (guint i = 0; i < in->vcpus->len; i++) {
        const vpPressureSample *s = &g_array_index(in->vcpus, vpPressureSample, i);
        const vpMonitorSample *m = find(second, s->domain, s->vcpu);

        ck_assert(s->have & VP_HAVE_SCHEDSTAT);
        ck_assert(s->have & VP_HAVE_SWITCHES);
        ck_assert_uint_eq(s->run_ns, m->delta.run_ns);
        ck_assert_uint_eq(s->voluntary, m->delta.voluntary);
        ck_assert_uint_eq(s->interval_ns, m->interval_ns);
    }
    workerStop(busy);
    workerStop(nap);
}

START_TEST(test_busy_and_sleeping)
{
    g_autoptr(vpMonitor) probe = vpMonitorNew(NULL);
    vpMonitorOptions proc = {.proc_switches = true};

    g_print("switch counts from %s\n", vpMonitorSwitchesFrom(probe));
    busyAndSleeping(NULL);
    busyAndSleeping(&proc);
}
END_TEST

/* The tracepoint and /proc count the same switches of one thread. */
START_TEST(test_switch_sources_agree)
{
    vpMonitorOptions proc = {.proc_switches = true};
    g_autoptr(vpMonitor) tp = vpMonitorNew(NULL);
    g_autoptr(vpMonitor) pr = vpMonitorNew(&proc);
    Worker *nap = workerStart(false);
    const vpMonitorSample *a, *b;
    GArray *sa, *sb;

    if (strcmp(vpMonitorSwitchesFrom(tp), "tracepoint") != 0) {
        g_print("sched_switch tracepoint unavailable here (no tracefs or no permission): only "
                "/proc switch counts are tested\n");
        workerStop(nap);
        return;
    }
    addOrFail(tp, "vm", 0, nap->tid);
    addOrFail(pr, "vm", 0, nap->tid);
    g_array_free(vpMonitorSampleAll(tp), TRUE);
    g_array_free(vpMonitorSampleAll(pr), TRUE);
    g_usleep(300 * 1000);
    sa = vpMonitorSampleAll(tp);
    sb = vpMonitorSampleAll(pr);
    a = find(sa, "vm", 0);
    b = find(sb, "vm", 0);
    g_print("voluntary switches in one interval: tracepoint %" G_GUINT64_FORMAT
            ", /proc %" G_GUINT64_FORMAT "\n",
            a->delta.voluntary, b->delta.voluntary);
    ck_assert_uint_gt(a->delta.voluntary, 10);
    /* both read within microseconds of each other: a switch or two apart at most */
    ck_assert_uint_le(a->delta.voluntary, b->delta.voluntary + 3);
    ck_assert_uint_le(b->delta.voluntary, a->delta.voluntary + 3);
    ck_assert_uint_le(a->delta.involuntary, b->delta.involuntary + 3);
    ck_assert_uint_le(b->delta.involuntary, a->delta.involuntary + 3);
    g_array_free(sa, TRUE);
    g_array_free(sb, TRUE);
    workerStop(nap);
}
END_TEST

START_TEST(test_exited_thread_gone)
{
    g_autoptr(vpMonitor) mon = vpMonitorNew(NULL);
    Worker *w = workerStart(false);
    Worker *alive = workerStart(false);
    pid_t tid = w->tid;
    GArray *s;

    g_ptr_array_set_size(logged, 0);
    addOrFail(mon, "vm", 0, tid);
    addOrFail(mon, "vm", 1, alive->tid);
    s = vpMonitorSampleAll(mon);
    ck_assert(!find(s, "vm", 0)->gone);
    g_array_free(s, TRUE);
    workerStop(w);
    waitReaped(tid);

    for (int round = 0; round < 3; round++) {
        g_autoptr(vpPressureInput) in = NULL;

        s = vpMonitorSampleAll(mon);
        ck_assert(find(s, "vm", 0)->gone);
        ck_assert(!find(s, "vm", 1)->gone);
        ck_assert_int_eq(find(s, "vm", 0)->tid, tid);
        in = vpMonitorPressureInput(s, NULL);
        ck_assert_uint_eq(in->vcpus->len, 1);
        ck_assert_int_eq(g_array_index(in->vcpus, vpPressureSample, 0).vcpu, 1);
        g_array_free(s, TRUE);
    }
    ck_assert_uint_eq(loggedCount("has exited"), 1);
    ck_assert(vpMonitorRemove(mon, "vm", 0));
    ck_assert(!vpMonitorRemove(mon, "vm", 0));
    ck_assert_uint_eq(vpMonitorSize(mon), 1);
    workerStop(alive);
}
END_TEST

START_TEST(test_add_refused)
{
    g_autoptr(vpMonitor) mon = vpMonitorNew(NULL);
    g_autoptr(GError) err = NULL;

    /* PID 1 is not a thread of this process */
    ck_assert(!vpMonitorAdd(mon, "vm", 0, getpid(), 1, &err));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_SYSTEM));
    ck_assert_msg(strstr(err->message, "domain 'vm' vCPU 0: thread 1 of process"), "%s",
                  err->message);
    g_clear_error(&err);
    ck_assert(!vpMonitorAdd(mon, "vm", -1, getpid(), getpid(), &err));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    g_clear_error(&err);
    ck_assert(!vpMonitorAdd(mon, "", 0, getpid(), getpid(), &err));
    g_clear_error(&err);
    ck_assert(!vpMonitorAdd(mon, "vm", 0, 0, getpid(), &err));
    ck_assert_uint_eq(vpMonitorSize(mon), 0);
}
END_TEST

START_TEST(test_replace_and_remove)
{
    g_autoptr(vpMonitor) mon = vpMonitorNew(NULL);
    Worker *a = workerStart(false), *b = workerStart(false);
    g_autoptr(GArray) s = NULL;

    addOrFail(mon, "vm", 0, a->tid);
    /* the vCPU got a new thread (hotplug, restart): same key, new tid */
    addOrFail(mon, "vm", 0, b->tid);
    ck_assert_uint_eq(vpMonitorSize(mon), 1);
    s = vpMonitorSampleAll(mon);
    ck_assert_int_eq(find(s, "vm", 0)->tid, b->tid);
    addOrFail(mon, "vm", 1, a->tid);
    addOrFail(mon, "other", 0, a->tid);
    ck_assert_uint_eq(vpMonitorRemoveDomain(mon, "vm"), 2);
    ck_assert_uint_eq(vpMonitorSize(mon), 1);
    ck_assert(!vpMonitorRemove(mon, "vm", 1));
    ck_assert(vpMonitorRemove(mon, "other", 0));
    workerStop(a);
    workerStop(b);
}
END_TEST

/* The lowest limit under which exactly `room` more descriptors can be opened. */
static rlim_t
limitLeaving(int room)
{
    int fd = 0;

    for (;; fd++) {
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF && --room == 0)
            return fd + 1;
    }
}

/* Runs in a child process (the limit must not leak); exit status says what failed. */
static int
fdLimitChild(void)
{
    g_autoptr(vpMonitor) mon = vpMonitorNew(NULL);
    Worker *a = workerStart(false), *b = workerStart(false);
    g_autoptr(GArray) s = NULL;
    struct rlimit rl;
    bool perf = vpMonitorHostSources(mon) & VP_SRC_PERF;

    g_ptr_array_set_size(logged, 0);
    getrlimit(RLIMIT_NOFILE, &rl);
    /* room for the directory, schedstat and sched of thread a, not for its 3 perf fds */
    rl.rlim_cur = limitLeaving(3);
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 10;
    if (!vpMonitorAdd(mon, "vm", 0, getpid(), a->tid, NULL))
        return 11;
    /* no room left at all: thread b's files are opened on each read */
    if (!vpMonitorAdd(mon, "vm", 1, getpid(), b->tid, NULL))
        return 12;
    s = vpMonitorSampleAll(mon);
    for (int v = 0; v < 2; v++) {
        const vpMonitorSample *m = &g_array_index(s, vpMonitorSample, v);

        if (m->gone || !(m->sources & VP_SRC_SCHEDSTAT) || !(m->sources & VP_SRC_SWITCHES))
            return 13 + v;
        if (m->sources & VP_SRC_PERF)
            return 15 + v;
    }
    if (loggedCount("fd limit reached") != 1)
        return 17;
    if (perf && loggedCount("RLIMIT_NOFILE") != 1)
        return 18;
    workerStop(a);
    workerStop(b);
    return 0;
}

START_TEST(test_fd_limit_degrades)
{
    pid_t pid = fork();
    int status;

    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(fdLimitChild());
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status), "child died: status %d", status);
    ck_assert_msg(WEXITSTATUS(status) == 0, "child failed at step %d", WEXITSTATUS(status));
}
END_TEST

START_TEST(test_cpu_samples)
{
    g_autoptr(vpMonitor) mon = vpMonitorNew(NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(GArray) first = vpMonitorSampleCpus(mon, &err);
    g_autoptr(GArray) second = NULL;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    ck_assert_msg(first, "%s", err ? err->message : "");
    ck_assert_uint_eq(first->len, 0);
    g_usleep(300 * 1000);
    second = vpMonitorSampleCpus(mon, &err);
    ck_assert_msg(second, "%s", err ? err->message : "");
    ck_assert_uint_ge(second->len, 1);
    ck_assert_uint_le(second->len, ncpu);
    for (guint i = 0; i < second->len; i++) {
        const vpCpuSample *c = &g_array_index(second, vpCpuSample, i);

        ck_assert_uint_gt(c->interval_ns, 0);
        ck_assert_uint_le(c->busy_ns, c->interval_ns);
    }
}
END_TEST

/* --- parsers --- */

START_TEST(test_parse_schedstat)
{
    vpMonitorCounters c = {0};

    ck_assert_uint_eq(vpMonitorParseSchedstat("123 456 7\n", &c), VP_SRC_SCHEDSTAT);
    ck_assert_uint_eq(c.run_ns, 123);
    ck_assert_uint_eq(c.wait_ns, 456);
    ck_assert_uint_eq(c.timeslices, 7);
    ck_assert_uint_eq(vpMonitorParseSchedstat("123 456\n", &c), 0);
    ck_assert_uint_eq(vpMonitorParseSchedstat("-1 2 3", &c), 0);
    ck_assert_uint_eq(vpMonitorParseSchedstat("", &c), 0);
    ck_assert_uint_eq(vpMonitorParseSchedstat("99999999999999999999999 1 1", &c), 0);
}
END_TEST

/* The layout of /proc/PID/sched on a CONFIG_SCHED_CORE kernel with schedstats on. */
static const char sched_text[] =
    "qemu-system-x86 (4242, #threads: 5)\n"
    "-------------------------------------------------------------------\n"
    "se.exec_start                                :        419231.266588\n"
    "se.sum_exec_runtime                          :          1234.000000\n"
    "se.nr_migrations                             :                    3\n"
    "nr_switches                                  :                  130\n"
    "nr_voluntary_switches                        :                  100\n"
    "nr_involuntary_switches                      :                   30\n"
    "se.load.weight                               :              1048576\n"
    "core_forceidle_sum                           :            12.345678\n"
    "policy                                       :                    0\n";

START_TEST(test_parse_sched)
{
    vpMonitorCounters c = {0};

    ck_assert_uint_eq(vpMonitorParseSched(sched_text, &c), VP_SRC_SWITCHES | VP_SRC_FORCEIDLE);
    ck_assert_uint_eq(c.voluntary, 100);
    ck_assert_uint_eq(c.involuntary, 30);
    ck_assert_uint_eq(c.forceidle_ns, 12345678);
    /* "nr_switches" must not be taken for either */
    memset(&c, 0, sizeof(c));
    ck_assert_uint_eq(vpMonitorParseSched("nr_switches : 5\n", &c), 0);
    ck_assert_uint_eq(c.voluntary, 0);
    ck_assert_uint_eq(vpMonitorParseSched("nr_voluntary_switches : 5\n", &c), 0);
    ck_assert_uint_eq(vpMonitorParseSched("stats.core_forceidle_sum : 1.5\n", &c),
                      VP_SRC_FORCEIDLE);
    ck_assert_uint_eq(c.forceidle_ns, 1500000);
    ck_assert_uint_eq(vpMonitorParseSched("garbage without colons", &c), 0);
}
END_TEST

START_TEST(test_parse_status)
{
    vpMonitorCounters c = {0};

    ck_assert_uint_eq(vpMonitorParseStatus("Name:\tqemu\nvoluntary_ctxt_switches:\t77\n"
                                           "nonvoluntary_ctxt_switches:\t8\n",
                                           &c),
                      VP_SRC_SWITCHES);
    ck_assert_uint_eq(c.voluntary, 77);
    ck_assert_uint_eq(c.involuntary, 8);
    ck_assert_uint_eq(vpMonitorParseStatus("voluntary_ctxt_switches:\tx\n", &c), 0);
}
END_TEST

START_TEST(test_parse_stat)
{
    g_autoptr(GArray) t = g_array_new(FALSE, FALSE, sizeof(vpMonitorCpuTicks));
    g_autoptr(GError) err = NULL;
    const vpMonitorCpuTicks *c;

    ck_assert(vpMonitorParseStat("cpu  10 0 10 100 0 0 0 0 0 0\n"
                                 "cpu0 1 2 3 40 5 6 7 8 9 10\n"
                                 "cpu7 1 1 1 1\n"
                                 "intr 12345 1 2 3\n"
                                 "ctxt 999\n",
                                 t, &err));
    ck_assert_uint_eq(t->len, 2);
    c = &g_array_index(t, vpMonitorCpuTicks, 0);
    ck_assert_uint_eq(c->cpu, 0);
    /* user nice system irq softirq steal; guest (inside user) not twice */
    ck_assert_uint_eq(c->busy, 1 + 2 + 3 + 6 + 7 + 8);
    ck_assert_uint_eq(c->total, c->busy + 40 + 5);
    c = &g_array_index(t, vpMonitorCpuTicks, 1);
    ck_assert_uint_eq(c->cpu, 7);
    ck_assert_uint_eq(c->busy, 3);
    ck_assert_uint_eq(c->total, 4);

    ck_assert(!vpMonitorParseStat("cpu0 1 2 3 4\ncpu1 1 2\n", t, &err));
    ck_assert_msg(strstr(err->message, "line 2 'cpu1 1 2'"), "%s", err->message);
}
END_TEST

static Suite *
monitorSuite(void)
{
    Suite *s = suite_create("monitor");
    TCase *threads = tcase_create("threads");
    TCase *parsers = tcase_create("parsers");

    tcase_add_test(threads, test_busy_and_sleeping);
    tcase_add_test(threads, test_switch_sources_agree);
    tcase_add_test(threads, test_exited_thread_gone);
    tcase_add_test(threads, test_add_refused);
    tcase_add_test(threads, test_replace_and_remove);
    tcase_add_test(threads, test_fd_limit_degrades);
    tcase_add_test(threads, test_cpu_samples);
    suite_add_tcase(s, threads);
    tcase_add_test(parsers, test_parse_schedstat);
    tcase_add_test(parsers, test_parse_sched);
    tcase_add_test(parsers, test_parse_status);
    tcase_add_test(parsers, test_parse_stat);
    suite_add_tcase(s, parsers);
    return s;
}

Suite *
vpTestSuite(void)
{
    logged = g_ptr_array_new_with_free_func(g_free);
    g_log_set_writer_func(captureWriter, NULL, NULL);
    return monitorSuite();
}
