/*
 * The monitor's own CPU cost: a helper process runs N real threads (default 1000) that
 * stand in for vCPUs (each sleeps --period-ms, then spins briefly, like a mostly idle
 * guest); this process samples all of them, plus /proc/stat, once a second for
 * --duration seconds, exactly as the daemon's timer would, and builds the pressure input.
 * Reports the CPU time this process used per wall second (getrusage: target < 0.5% of
 * one CPU) and the cost of each pass. Writes bench-monitor.json into the results
 * directory (argument, else $VP_BENCH_RESULTS, else the current directory).
 * Not a test: nothing here passes or fails on time.
 */
#include "host/monitor.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int opt_threads = 1000;
static int opt_duration = 30;
static int opt_period_ms = 100;
static gboolean opt_proc_switches;

static const GOptionEntry entries[] = {
    {"threads", 't', 0, G_OPTION_ARG_INT, &opt_threads, "helper threads (default 1000)", "N"},
    {"duration", 'd', 0, G_OPTION_ARG_INT, &opt_duration, "seconds sampled at 1 Hz (30)", "S"},
    {"period-ms", 'p', 0, G_OPTION_ARG_INT, &opt_period_ms,
     "each helper thread wakes this often (100 ms)", "MS"},
    {"proc-switches", 0, 0, G_OPTION_ARG_NONE, &opt_proc_switches,
     "read switch counts from /proc, not the sched_switch tracepoint", NULL},
    G_OPTION_ENTRY_NULL,
};

/* vpMonitorSource bit i */
static const char *const source_names[] = {"schedstat", "switches", "forceidle", "perf", "hw"};

static double
clockSec(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
rusageSec(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void *
helperThread(void *arg)
{
    struct timespec nap = {opt_period_ms / 1000, (opt_period_ms % 1000) * 1000000L};

    for (;;) {
        /* a short burst of work between sleeps, like a guest handling an interrupt */
        for (volatile int i = 0; i < 2000; i++)
            ;
        nanosleep(&nap, NULL);
    }
    return arg;
}

/* The helper: starts the threads, says so on the pipe, then waits to be killed. */
static void
helperMain(int ready)
{
    pthread_attr_t attr;

    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 0; i < opt_threads; i++) {
        pthread_t t;

        if (pthread_create(&t, &attr, helperThread, NULL) != 0) {
            fprintf(stderr, "bench-monitor helper: thread %d: %s\n", i, g_strerror(errno));
            _exit(1);
        }
    }
    if (write(ready, "r", 1) != 1)
        _exit(1);
    for (;;)
        pause();
}

static GArray *
helperTids(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/task", pid);
    GArray *tids = g_array_new(FALSE, FALSE, sizeof(pid_t));
    DIR *d = opendir(path);
    struct dirent *e;

    while (d && (e = readdir(d))) {
        pid_t tid = atoi(e->d_name);

        if (tid > 0 && tid != pid)
            g_array_append_val(tids, tid);
    }
    if (d)
        closedir(d);
    return tids;
}

static int
cmpDouble(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void
member(JsonBuilder *b, const char *name, double v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_double_value(b, v);
}

int
main(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new("[RESULTS_DIR]");
    g_autoptr(GError) err = NULL;
    g_autoptr(vpMonitor) mon = NULL;
    vpMonitorOptions opts = {0};
    g_autoptr(GArray) tids = NULL;
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree double *pass_cpu = NULL;
    g_autofree char *out = NULL;
    const char *dir;
    struct rlimit rl;
    int ready[2];
    char c;
    pid_t helper;
    double add_t0, add_t1, cpu0, wall0, cpu1, wall1, share;
    guint32 sources = 0;
    int passes = 0;
    struct timespec next;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "bench-monitor: %s\n", err->message);
        return 2;
    }
    if (opt_threads < 1 || opt_duration < 2 || opt_period_ms < 1) {
        fprintf(stderr, "bench-monitor: --threads >= 1, --duration >= 2, --period-ms >= 1\n");
        return 2;
    }
    dir = argc > 1 ? argv[1] : g_getenv("VP_BENCH_RESULTS") ? g_getenv("VP_BENCH_RESULTS") : ".";
    out = g_build_filename(dir, "bench-monitor.json", NULL);

    /* up to 7 descriptors per thread: what a daemon's unit would grant with LimitNOFILE */
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);

    if (pipe(ready) < 0)
        return 1;
    helper = fork();
    if (helper == 0) {
        close(ready[0]);
        helperMain(ready[1]);
    }
    close(ready[1]);
    if (helper < 0 || read(ready[0], &c, 1) != 1) {
        fprintf(stderr, "bench-monitor: the helper did not start its threads\n");
        return 1;
    }
    tids = helperTids(helper);

    opts.proc_switches = opt_proc_switches;
    mon = vpMonitorNew(&opts);
    add_t0 = clockSec(CLOCK_MONOTONIC);
    for (guint i = 0; i < tids->len; i++) {
        g_autofree char *dom = g_strdup_printf("bench%u", i / 8);

        if (!vpMonitorAdd(mon, dom, i % 8, helper, g_array_index(tids, pid_t, i), &err)) {
            fprintf(stderr, "bench-monitor: %s\n", err->message);
            return 1;
        }
    }
    add_t1 = clockSec(CLOCK_MONOTONIC);

    pass_cpu = g_new(double, opt_duration);
    cpu0 = rusageSec();
    wall0 = clockSec(CLOCK_MONOTONIC);
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (passes = 0; passes < opt_duration; passes++) {
        double t0 = clockSec(CLOCK_THREAD_CPUTIME_ID);
        g_autoptr(GArray) samples = vpMonitorSampleAll(mon);
        g_autoptr(GArray) cpus = vpMonitorSampleCpus(mon, NULL);
        G_GNUC_UNUSED g_autoptr(vpPressureInput) in = vpMonitorPressureInput(samples, cpus);

        pass_cpu[passes] = clockSec(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (samples->len)
            sources |= g_array_index(samples, vpMonitorSample, 0).sources;
        next.tv_sec++;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    cpu1 = rusageSec();
    wall1 = clockSec(CLOCK_MONOTONIC);
    kill(helper, SIGKILL);
    waitpid(helper, NULL, 0);

    share = 100.0 * (cpu1 - cpu0) / (wall1 - wall0);
    qsort(pass_cpu, passes, sizeof(double), cmpDouble);
    printf("threads %u (helper wakes each every %d ms), %d passes at 1 Hz, switches from %s, "
           "sources:",
           tids->len, opt_period_ms, passes, vpMonitorSwitchesFrom(mon));
    for (gsize i = 0; i < G_N_ELEMENTS(source_names); i++) {
        if (sources & (1u << i))
            printf(" %s", source_names[i]);
    }
    printf("\n");
    printf("add: %.1f us per thread\n", 1e6 * (add_t1 - add_t0) / tids->len);
    printf("pass CPU time: median %.2f ms, p90 %.2f ms, max %.2f ms (%.2f us per thread)\n",
           1e3 * pass_cpu[passes / 2], 1e3 * pass_cpu[passes * 9 / 10], 1e3 * pass_cpu[passes - 1],
           1e6 * pass_cpu[passes / 2] / tids->len);
    printf("process CPU (getrusage): %.3f%% of one CPU over %.1f s (target < 0.5%%)\n", share,
           wall1 - wall0);

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "benchmark");
    json_builder_add_string_value(b, "monitor");
    json_builder_set_member_name(b, "threads");
    json_builder_add_int_value(b, tids->len);
    json_builder_set_member_name(b, "helper_period_ms");
    json_builder_add_int_value(b, opt_period_ms);
    json_builder_set_member_name(b, "switches_from");
    json_builder_add_string_value(b, vpMonitorSwitchesFrom(mon));
    json_builder_set_member_name(b, "passes");
    json_builder_add_int_value(b, passes);
    json_builder_set_member_name(b, "sources");
    json_builder_begin_array(b);
    for (gsize i = 0; i < G_N_ELEMENTS(source_names); i++) {
        if (sources & (1u << i))
            json_builder_add_string_value(b, source_names[i]);
    }
    json_builder_end_array(b);
    member(b, "add_us_per_thread", 1e6 * (add_t1 - add_t0) / tids->len);
    member(b, "pass_cpu_median_ms", 1e3 * pass_cpu[passes / 2]);
    member(b, "pass_cpu_p90_ms", 1e3 * pass_cpu[passes * 9 / 10]);
    member(b, "pass_cpu_max_ms", 1e3 * pass_cpu[passes - 1]);
    member(b, "pass_cpu_per_thread_us", 1e6 * pass_cpu[passes / 2] / tids->len);
    member(b, "cpu_share_pct", share);
    member(b, "target_pct", 0.5);
    json_builder_end_object(b);
    root = json_builder_get_root(b);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    if (!json_generator_to_file(gen, out, &err)) {
        fprintf(stderr, "bench-monitor: %s: %s\n", out, err->message);
        return 1;
    }
    printf("wrote %s\n", out);
    return 0;
}
