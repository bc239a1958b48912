/*
 * The daemon's socket under load, in process (the real server, dispatcher and manager;
 * libvirt's test driver and a synthetic 256-CPU topology): --idle connections that never
 * speak, a thread sending 4 MiB hostile domain XMLs in a loop, and --hooks clients that
 * each do what the hook does at a start (reserve, then release) at the same moment, each
 * with the hook's default bound (500 ms for connect and reply). Prints how many reserves
 * were answered ok within the bound, refused or failed, and the answer time's p50, p99 and
 * maximum; writes bench-socket.json into the results directory (argument, else
 * $VP_BENCH_RESULTS, else the current directory). Not a test: nothing passes or fails.
 *
 * Real starts through libvirt and QEMU are the e2e tier's (test-daemon-concurrency.sh);
 * this measures what the socket answers, which is what a start waits for.
 */
#include "daemon/daemon.h"
#include "libvirt/domxml.h"
#include "proto/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int opt_hooks = 200;
static int opt_idle = 1000;
static int opt_timeout_ms = 500;
static gboolean opt_no_hostile;

static const GOptionEntry entries[] = {
    {"hooks", 'n', 0, G_OPTION_ARG_INT, &opt_hooks, "clients starting at once (200)", "N"},
    {"idle", 'i', 0, G_OPTION_ARG_INT, &opt_idle, "idle connections held (1000)", "N"},
    {"timeout-ms", 't', 0, G_OPTION_ARG_INT, &opt_timeout_ms, "each client's bound (500)", "MS"},
    {"no-hostile", 0, 0, G_OPTION_ARG_NONE, &opt_no_hostile, "no 4 MiB hostile XML sender", NULL},
    G_OPTION_ENTRY_NULL,
};

static char *sockpath;
static gint go;   /* atomic: the clients start */
static gint done; /* atomic: clients finished */
static gint stop; /* atomic: the hostile sender stops */

typedef struct {
    int index;
    double ms;
    int outcome; /* 0 ok, 1 refused, 2 failed */
    char *error;
} vpClientRun;

static JsonObject *
request(const char *op, const char *name, const char *xml)
{
    JsonObject *o = json_object_new();
    json_object_set_string_member(o, "op", op);
    json_object_set_string_member(o, "name", name);
    if (xml)
        json_object_set_string_member(o, "xml", xml);
    return o;
}

static gpointer
hookClient(gpointer data)
{
    vpClientRun *r = data;
    g_autofree char *name = g_strdup_printf("load-%d", r->index);
    g_autofree char *xml =
        g_strdup_printf("<domain type='test'><name>%s</name><memory>65536</memory><vcpu>1</vcpu>"
                        "<os><type>hvm</type></os></domain>",
                        name);
    while (!g_atomic_int_get(&go))
        g_usleep(100);
    g_autoptr(JsonObject) req = request("reserve", name, xml);
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(JsonNode) reply = vpClientCallTimeout(sockpath, req, opt_timeout_ms, &err);
    r->ms = (g_get_monotonic_time() - t0) / 1000.0;
    r->outcome = reply ? 0 : g_error_matches(err, VP_CLIENT_ERROR, VP_CLIENT_ERROR_REFUSED) ? 1 : 2;
    if (err)
        r->error = g_strdup(err->message);
    g_autoptr(JsonObject) rel = request("release", name, NULL);
    G_GNUC_UNUSED g_autoptr(JsonNode) released = vpClientCallTimeout(sockpath, rel, 5000, NULL);
    g_atomic_int_inc(&done);
    return NULL;
}

/* 4 MiB of one element's attributes: refused by the pre-scan, after a read of 4 MiB. */
static gpointer
hostileSender(gpointer data)
{
    guint *sent = data;
    g_autoptr(GString) xml = g_string_new("<domain type='test'><name>hostile</name><metadata>"
                                          "<t:x xmlns:t='urn:t'");
    for (guint a = 0; xml->len < VP_DOMXML_MAX_BYTES - 64; a++)
        g_string_append_printf(xml, " a%u='%u'", a, a);
    g_string_append(xml, "/></metadata></domain>");
    g_autoptr(JsonObject) req = request("reserve", "hostile", xml->str);
    while (!g_atomic_int_get(&stop)) {
        G_GNUC_UNUSED g_autoptr(JsonNode) reply = vpClientCallTimeout(sockpath, req, 10000, NULL);
        (*sent)++;
    }
    return NULL;
}

static int
connectIdle(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    g_strlcpy(sa.sun_path, sockpath, sizeof(sa.sun_path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

static int
cmpDouble(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static GLogWriterOutput
quiet(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
    if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
        return g_log_writer_standard_streams(level, fields, n, data);
    return G_LOG_WRITER_HANDLED;
}

int
main(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new("[RESULTS-DIR]");
    g_autoptr(GError) err = NULL;
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err) || opt_hooks < 1 || opt_idle < 0) {
        fprintf(stderr, "bench-socket: %s\n", err ? err->message : "bad counts");
        return 2;
    }
    const char *results = argc > 1 ? argv[1] : g_getenv("VP_BENCH_RESULTS");
    if (!results)
        results = ".";
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    g_log_set_writer_func(quiet, NULL, NULL);

    g_autofree char *dir = g_dir_make_tmp("vp-bench-socket-XXXXXX", NULL);
    sockpath = g_build_filename(dir, "sock", NULL);
    g_autofree char *conf = g_build_filename(dir, "vcpuplaced.conf", NULL);
    g_autofree char *text =
        g_strdup_printf("[daemon]\nmode=enforce\nadopt_running=yes\nuri=test:///"
                        "default\ntopology=synthetic:pack:2 group:4 [numa] l3:2 core:8 "
                        "pu:2\nsocket=%s\nstate=%s/ledger.json\n",
                        sockpath, dir);
    g_file_set_contents(conf, text, -1, NULL);
    vpConfig *cfg = vpConfigLoad(conf, &err);
    vpDaemon *d = cfg ? vpDaemonNew(cfg, &err) : NULL;
    if (!d) {
        fprintf(stderr, "bench-socket: %s\n", err->message);
        return 1;
    }
    vpDaemonStart(d);

    int *idle = g_new(int, MAX(opt_idle, 1));
    int held = 0;
    for (int i = 0; i < opt_idle; i++)
        if ((idle[i] = connectIdle()) >= 0)
            held++;
    guint hostile_sent = 0;
    GThread *hostile =
        opt_no_hostile ? NULL : g_thread_new("hostile", hostileSender, &hostile_sent);
    vpClientRun *runs = g_new0(vpClientRun, opt_hooks);
    GThread **threads = g_new(GThread *, opt_hooks);
    for (int i = 0; i < opt_hooks; i++) {
        runs[i].index = i;
        threads[i] = g_thread_new("hook", hookClient, &runs[i]);
    }
    /* Let the idle connections be accepted (and the hostile sender start) first. */
    for (gint64 until = g_get_monotonic_time() + 300 * 1000; g_get_monotonic_time() < until;)
        g_main_context_iteration(NULL, FALSE);
    g_atomic_int_set(&go, 1);
    while (g_atomic_int_get(&done) < opt_hooks)
        g_main_context_iteration(NULL, TRUE);
    for (int i = 0; i < opt_hooks; i++)
        g_thread_join(threads[i]);
    g_atomic_int_set(&stop, 1);
    if (hostile)
        g_thread_join(hostile);

    g_autofree double *ms = g_new(double, opt_hooks);
    int ok = 0, refused = 0, failed = 0;
    const char *sample = NULL;
    for (int i = 0; i < opt_hooks; i++) {
        ms[i] = runs[i].ms;
        ok += runs[i].outcome == 0;
        refused += runs[i].outcome == 1;
        failed += runs[i].outcome == 2;
        if (runs[i].outcome && !sample)
            sample = runs[i].error;
    }
    qsort(ms, opt_hooks, sizeof(double), cmpDouble);
    double p50 = ms[opt_hooks / 2], p99 = ms[(opt_hooks * 99) / 100 - (opt_hooks >= 100)],
           max = ms[opt_hooks - 1];
    printf("%d reserves at once, %d idle connections held, hostile 4 MiB XMLs sent: %u\n",
           opt_hooks, held, hostile_sent);
    printf("ok %d  refused %d  failed %d (bound %d ms)\n", ok, refused, failed, opt_timeout_ms);
    printf("answer time: p50 %.1f ms  p99 %.1f ms  max %.1f ms\n", p50, p99, max);
    if (sample)
        printf("first error: %s\n", sample);
    g_autofree char *quoted = g_strescape(sample ? sample : "", NULL);
    g_autofree char *json = g_strdup_printf(
        "{\"bench\":\"socket\",\"hooks\":%d,\"idle_held\":%d,\"hostile_sent\":%u,"
        "\"timeout_ms\":%d,\"ok\":%d,\"refused\":%d,\"failed\":%d,\"p50_ms\":%.3f,"
        "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"first_error\":\"%s\"}\n",
        opt_hooks, held, hostile_sent, opt_timeout_ms, ok, refused, failed, p50, p99, max, quoted);
    g_autofree char *path = g_build_filename(results, "bench-socket.json", NULL);
    if (!g_file_set_contents(path, json, -1, &err))
        fprintf(stderr, "bench-socket: %s\n", err->message);
    else
        printf("wrote %s\n", path);

    for (int i = 0; i < opt_idle; i++)
        if (idle[i] >= 0)
            close(idle[i]);
    vpDaemonFree(d);
    g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
