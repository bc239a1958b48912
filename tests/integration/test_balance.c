/*
 * Integration tier, rebalancing: vcpuplaced in-process against libvirt's test driver, its
 * socket operations top, rebalance (--dry-run and not) and metrics through the real
 * vcpuplace binary, and the configuration reload that makes a CPU usable.
 *
 * The test driver runs no threads, so nothing can be measured: the counters are the one
 * fake here. Recorded intervals go in through vpBalanceFeed(), where the daemon's timer
 * puts the monitor's samples ([rebalance] mode=off keeps the timer out of the way).
 * Everything after that is real: pressure, rebalancer, pinning through libvirt, ledger,
 * and the hook binary that a move's window lets in.
 */
#include "harness.h"

#include "core/model/ledger.h"
#include "daemon/actuator.h"
#include "host/ledgerfile.h"
#include "daemon/balance.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "proto/proto.h"

#include <check.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* This machine's shape: two CPUs, no SMT. */
#define TOPOLOGY "synthetic:pack:1 core:2 pu:1"
#define SEC 1000000000LL

/* test:///default with only this test's domains managed (it runs one of its own). */
static void
writeBalanceConfig(const char *host_cpus, const char *rebalance)
{
    g_autofree char *extra = g_strdup_printf(
        "host_cpus=%s\ndomains=rb-*\n[rebalance]\nmode=off\ntextfile=%s/vcpuplace.prom\n%s",
        host_cpus, tmpdir, rebalance ? rebalance : "");
    writeConfig("test:///default", TOPOLOGY, extra);
}

/* A running 1-vCPU smt=share unmet=degrade domain. */
static virDomainPtr
startShare(vpDaemon *d, const char *name)
{
    g_autofree char *xml = domainXML(name, 1, "smt='share' unmet='degrade' emulator='vcpus'", NULL);
    virDomainPtr dom = define(vpDaemonLibvirt(d), xml);
    ck_assert_int_eq(virDomainCreate(dom), 0);
    waitIdle(d);
    return dom;
}

static int
planned(vpDaemon *d, const char *name)
{
    const vpPlan *plan = vpManagerPlan(vpDaemonManager(d), name);
    ck_assert_ptr_nonnull(plan);
    return plan->vcpu_pu[0];
}

/* The CPU libvirt has vCPU 0 of dom pinned to (-1 when it is not one CPU). */
static int
livePin(virDomainPtr dom)
{
    unsigned char map[1] = {0};
    ck_assert_int_eq(virDomainGetVcpuPinInfo(dom, 1, map, sizeof(map), 0), 1);
    for (int cpu = 0; cpu < 8; cpu++) {
        if (map[0] == (1u << cpu))
            return cpu;
    }
    return -1;
}

/* n intervals of both domains sharing CPU 0, each running half of it; CPU 1 idle. */
static void
feedShared(vpDaemon *d, int n)
{
    for (int i = 0; i < n; i++) {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();
        const char *names[] = {"rb-a", "rb-b"};
        for (int k = 0; k < 2; k++) {
            vpPressureSample s = {
                .domain = (char *)names[k],
                .interval_ns = SEC,
                .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES,
                .run_ns = SEC / 2,
                .wait_ns = SEC / 2,
                .voluntary = 10,
            };
            vpPressureInputAddVcpu(in, &s);
        }
        vpPressureInputAddCpu(in, &(vpCpuSample){0, SEC, SEC});
        vpPressureInputAddCpu(in, &(vpCpuSample){1, SEC, SEC / 100});
        vpBalanceFeed(vpDaemonBalance(d), in);
    }
}

/* ---- the real vcpuplace binary while the daemon's loop turns ---------------------------- */

/* vcpuplace A1 --config CONF [A2 [A3]] */
static int
cli(char **out, const char *a1, const char *a2, const char *a3)
{
    const char *argv[] = {VP_CLI, a1, "--config", confpath, a2, a3, NULL};
    return run(argv, NULL, out, NULL);
}

static JsonObject *
parseObject(const char *text)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    ck_assert_msg(json_parser_load_from_data(parser, text, -1, &err), "%s: %s",
                  err ? err->message : "", text);
    JsonNode *root = json_parser_get_root(parser);
    ck_assert(JSON_NODE_HOLDS_OBJECT(root));
    return json_object_ref(json_node_get_object(root));
}

START_TEST(test_separate_overcommitted)
{
    writeBalanceConfig("0", NULL);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    virDomainPtr a = startShare(d, "rb-a");
    virDomainPtr b = startShare(d, "rb-b");

    /* host_cpus=0: both on CPU 0, the second time-sharing it */
    ck_assert_int_eq(planned(d, "rb-a"), 0);
    ck_assert_int_eq(planned(d, "rb-b"), 0);
    ck_assert(vpManagerPlan(m, "rb-b")->overcommit);
    ck_assert_int_eq(livePin(a), 0);
    ck_assert_int_eq(livePin(b), 0);

    /* hot, but CPU 1 is not usable: the dry run says so and moves nothing */
    feedShared(d, 6);
    g_autofree char *dry0 = NULL;
    ck_assert_int_eq(cli(&dry0, "rebalance", "--dry-run", "--json"), 0);
    g_autoptr(JsonObject) r0 = parseObject(dry0);
    ck_assert_uint_eq(json_array_get_length(json_object_get_array_member(r0, "moves")), 0);
    ck_assert_msg(strstr(dry0, "of 'rb-a' (smt=share) stays: no idle target"), "%s", dry0);

    /* reload with CPU 1 usable: nothing moves by itself (mode=off), the ledger is kept */
    writeBalanceConfig("0-1", NULL);
    g_autoptr(GError) err = NULL;
    ck_assert_msg(vpDaemonReload(d, &err), "%s", err ? err->message : "");
    waitIdle(d);
    ck_assert_int_eq(planned(d, "rb-a"), 0);
    ck_assert_int_eq(planned(d, "rb-b"), 0);

    /* one interval short of the persistence: not yet */
    feedShared(d, 4);
    g_autofree char *dry1 = NULL;
    ck_assert_int_eq(cli(&dry1, "rebalance", "--dry-run", "--json"), 0);
    g_autoptr(JsonObject) r1 = parseObject(dry1);
    ck_assert_uint_eq(json_array_get_length(json_object_get_array_member(r1, "moves")), 0);

    feedShared(d, 1);
    g_autofree char *dry2 = NULL;
    ck_assert_int_eq(cli(&dry2, "rebalance", "--dry-run", "--json"), 0);
    g_autoptr(JsonObject) r2 = parseObject(dry2);
    JsonArray *moves = json_object_get_array_member(r2, "moves");
    ck_assert_uint_eq(json_array_get_length(moves), 1);
    JsonObject *mv = json_array_get_object_element(moves, 0);
    ck_assert_int_eq(json_object_get_int_member(mv, "from"), 0);
    ck_assert_int_eq(json_object_get_int_member(mv, "to"), 1);
    ck_assert(!json_object_get_boolean_member(mv, "applied"));
    ck_assert_msg(strstr(json_object_get_string_member(mv, "reason"), "time-shared by 2 vCPUs"),
                  "%s", dry2);
    char *mover = g_strdup(json_object_get_string_member(mv, "domain"));
    /* a dry run changes nothing */
    ck_assert_int_eq(planned(d, mover), 0);

    /* the text form says the same */
    g_autofree char *text = NULL;
    ck_assert_int_eq(cli(&text, "rebalance", "--dry-run", NULL), 0);
    g_autofree char *line = g_strdup_printf("would move: %s vCPU 0: CPU 0 -> CPU 1\n", mover);
    ck_assert_msg(strstr(text, line), "%s", text);

    /* top: both vCPUs waiting half the time on a CPU two of them share */
    g_autofree char *topj = NULL;
    ck_assert_int_eq(cli(&topj, "top", "--once", "--json"), 0);
    g_autoptr(JsonObject) top = parseObject(topj);
    JsonArray *vcpus = json_object_get_array_member(top, "vcpus");
    ck_assert_uint_eq(json_array_get_length(vcpus), 2);
    for (guint i = 0; i < 2; i++) {
        JsonObject *v = json_array_get_object_element(vcpus, i);
        ck_assert_double_eq_tol(json_object_get_double_member(v, "wait"), 0.5, 1e-9);
        ck_assert_int_eq(json_object_get_int_member(v, "cpu"), 0);
        ck_assert_int_eq(json_object_get_int_member(v, "time_shared"), 2);
        ck_assert_int_eq(json_object_get_int_member(v, "moves"), 0);
    }
    g_autofree char *toptext = NULL;
    ck_assert_int_eq(cli(&toptext, "top", "--once", NULL), 0);
    ck_assert_msg(strstr(toptext, "rb-a") && strstr(toptext, "(CPU time-shared)"), "%s", toptext);

    /* metrics: the wait per vCPU, the hotspot */
    g_autofree char *prom = NULL;
    ck_assert_int_eq(cli(&prom, "metrics", NULL, NULL), 0);
    /* the vCPU's CPU is a value, not a label: a move starts no new series */
    ck_assert_msg(strstr(prom, "vcpuplace_vcpu_wait_ratio{domain=\"rb-a\",vcpu=\"0\"} 0.5\n"), "%s",
                  prom);
    ck_assert_msg(strstr(prom, "vcpuplace_vcpu_cpu{domain=\"rb-a\",vcpu=\"0\"} "), "%s", prom);
    ck_assert_msg(strstr(prom, "vcpuplace_vcpu_wait_seconds_total{domain=\"rb-a\",vcpu=\"0\"} "),
                  "%s", prom);
    ck_assert_msg(strstr(prom, "vcpuplace_cpu_hot{cpu=\"0\"} 1\n"), "%s", prom);
    ck_assert_msg(strstr(prom, "vcpuplace_moves_total{reason=\"rebalance\"} 0\n"), "%s", prom);
    ck_assert_msg(strstr(prom, "vcpuplace_reloads_total 1\n"), "%s", prom);
    /* the cookie pass's verdict per domain (this kernel: no core scheduling, or not) */
    ck_assert_msg(strstr(prom, "vcpuplace_domain_cookie{domain=\"rb-a\",state=\""), "%s", prom);
    /* the textfile is written each interval */
    g_autofree char *path = g_build_filename(tmpdir, "vcpuplace.prom", NULL);
    g_autofree char *file = NULL;
    ck_assert(g_file_get_contents(path, &file, NULL, NULL));
    ck_assert_msg(strstr(file, "vcpuplace_cpu_hot{cpu=\"0\"} 1\n"), "%s", file);
    /* readable by the node exporter's user under the unit's UMask=0077 */
    mode_t umask_was = umask(077);
    ck_assert(vpMetricsWriteFile(path, file, NULL));
    umask(umask_was);
    GStatBuf st;
    ck_assert_int_eq(g_stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);

    /* now for real: pinned through libvirt, then recorded */
    g_autofree char *done = NULL;
    ck_assert_int_eq(cli(&done, "rebalance", "--json", NULL), 0);
    g_autoptr(JsonObject) r3 = parseObject(done);
    moves = json_object_get_array_member(r3, "moves");
    ck_assert_uint_eq(json_array_get_length(moves), 1);
    mv = json_array_get_object_element(moves, 0);
    ck_assert_msg(json_object_get_boolean_member(mv, "applied"), "%s", done);
    ck_assert_str_eq(json_object_get_string_member(mv, "domain"), mover);
    ck_assert_int_eq(planned(d, mover), 1);
    ck_assert_int_eq(livePin(strcmp(mover, "rb-a") == 0 ? a : b), 1);
    ck_assert_int_eq(livePin(strcmp(mover, "rb-a") == 0 ? b : a), 0);
    ck_assert(!vpManagerPlan(m, "rb-a")->overcommit && !vpManagerPlan(m, "rb-b")->overcommit);
    ck_assert_msg(vpLedgerCheck(vpManagerLedger(m), &err), "%s", err ? err->message : "");
    /* the emulator followed its vCPU (emulator='vcpus') */
    ck_assert(hwloc_bitmap_isset(vpManagerPlan(m, mover)->emulator, 1));
    ck_assert(!hwloc_bitmap_isset(vpManagerPlan(m, mover)->emulator, 0));
    /* and the ledger on disk says so */
    g_autofree char *state = g_build_filename(tmpdir, "state", "ledger.json", NULL);
    g_autoptr(vpLedger) saved = vpLedgerFileLoad(vpManagerTopology(m), state, &err);
    ck_assert_ptr_nonnull(saved);
    ck_assert_int_eq(vpLedgerLookup(saved, mover)->vcpu_pu[0], 1);

    g_autofree char *after = NULL;
    ck_assert_int_eq(cli(&after, "metrics", NULL, NULL), 0);
    g_autofree char *count =
        g_strdup_printf("vcpuplace_vcpu_moves_total{domain=\"%s\",vcpu=\"0\"} 1\n", mover);
    ck_assert_msg(strstr(after, count), "%s", after);
    ck_assert_msg(strstr(after, "vcpuplace_moves_total{reason=\"rebalance\"} 1\n"), "%s", after);

    /* apart and measured afresh: nothing more to do */
    g_autofree char *dry3 = NULL;
    ck_assert_int_eq(cli(&dry3, "rebalance", "--dry-run", "--json"), 0);
    g_autoptr(JsonObject) r4 = parseObject(dry3);
    ck_assert_uint_eq(json_array_get_length(json_object_get_array_member(r4, "moves")), 0);

    g_free(mover);
    virDomainFree(a);
    virDomainFree(b);
}
END_TEST

/* Log lines of one event kind (VCPUPLACE_EVENT), while a test listens. */
static GPtrArray *heard;
static const char *listenFor;

static GLogWriterOutput
listeningWriter(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
    const char *event = NULL, *message = NULL;
    for (gsize i = 0; i < n; i++) {
        if (strcmp(fields[i].key, "VCPUPLACE_EVENT") == 0)
            event = fields[i].value;
        else if (strcmp(fields[i].key, "MESSAGE") == 0)
            message = fields[i].value;
    }
    if (heard && event && message && g_strcmp0(event, listenFor) == 0)
        g_ptr_array_add(heard, g_strdup(message));
    if (g_getenv("VP_VERBOSE"))
        return g_log_writer_standard_streams(level, fields, n, data);
    return quietWriter(level, fields, n, data);
}

/* mode=auto (the timer out of the way: it must not feed the test driver's empty samples in
 * between): rb-a and rb-b time-share CPU 0, then a reload makes CPU 1 usable. */
static vpDaemon *
startSharedPair(virDomainPtr *a, virDomainPtr *b)
{
    writeBalanceConfig("0", "mode=auto\ninterval=3600\n");
    vpDaemon *d = startDaemon();
    *a = startShare(d, "rb-a");
    *b = startShare(d, "rb-b");
    writeBalanceConfig("0-1", "mode=auto\ninterval=3600\n");
    g_autoptr(GError) err = NULL;
    ck_assert_msg(vpDaemonReload(d, &err), "%s", err ? err->message : "");
    waitIdle(d);
    return d;
}

/* mode=auto: the pass after each interval moves by itself, says why once, and a steady
 * load for ten minutes of intervals afterwards moves nothing. */
START_TEST(test_auto_moves_once)
{
    virDomainPtr a, b;
    g_autoptr(vpDaemon) d = startSharedPair(&a, &b);
    vpManager *m = vpDaemonManager(d);
    g_autoptr(GError) err = NULL;

    heard = g_ptr_array_new_with_free_func(g_free);
    listenFor = "move";
    feedShared(d, 5);
    ck_assert_uint_eq(heard->len, 1);
    ck_assert_msg(strstr(heard->pdata[0], "moved from CPU 0 to CPU 1: CPU 0 hot for 5 intervals") &&
                      strstr(heard->pdata[0], "waits 50.0% of the time") &&
                      strstr(heard->pdata[0], "time-shared by 2 vCPUs"),
                  "%s", (char *)heard->pdata[0]);
    ck_assert_int_ne(planned(d, "rb-a"), planned(d, "rb-b"));
    ck_assert_int_ne(livePin(a), livePin(b));

    /* each alone now, a little host noise on CPU 0 now and then */
    for (int t = 0; t < 600; t++) {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();
        const char *names[] = {"rb-a", "rb-b"};
        for (int k = 0; k < 2; k++) {
            vpPressureSample s = {
                .domain = (char *)names[k],
                .interval_ns = SEC,
                .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES,
                .run_ns = SEC * 95 / 100,
                .wait_ns = planned(d, names[k]) == 0 && t % 7 == 0 ? SEC * 15 / 100 : SEC / 50,
                .voluntary = 10,
            };
            vpPressureInputAddVcpu(in, &s);
        }
        vpPressureInputAddCpu(in, &(vpCpuSample){0, SEC, SEC});
        vpPressureInputAddCpu(in, &(vpCpuSample){1, SEC, SEC * 97 / 100});
        vpBalanceFeed(vpDaemonBalance(d), in);
    }
    ck_assert_uint_eq(heard->len, 1);
    ck_assert_msg(vpLedgerCheck(vpManagerLedger(m), &err), "%s", err ? err->message : "");
    g_clear_pointer(&heard, g_ptr_array_unref);
    virDomainFree(a);
    virDomainFree(b);
}
END_TEST

/* What the hook did while the actuator had the state lock let go for libvirt. */
typedef struct {
    const char *xml;
    guint calls;
    int status;
    char *err;
} vpHookInWindow;

/* Runs the real hook's prepare begin for rb-c, once, from inside the window: the main
 * thread holds no lock and does not poll, as while it waits on libvirt. */
static void
reserveInWindow(gpointer data)
{
    vpHookInWindow *w = data;
    if (w->calls++)
        return;
    const char *argv[] = {VP_HOOK, "rb-c", "prepare", "begin", "-", NULL};
    w->status = runNow(argv, w->xml, &w->err);
}

/* A start whose hook asks for the CPU a vCPU is being moved to, while the move waits on
 * libvirt: the ledger holds the target before libvirt is told, so the start is refused
 * rather than given a CPU the moved vCPU runs on, and libvirt's pins are the ledger's
 * the moment the pass returns (not only once a tunable event has put them back). */
START_TEST(test_move_holds_target_against_hook)
{
    virDomainPtr a, b;
    g_autoptr(vpDaemon) d = startSharedPair(&a, &b);
    vpManager *m = vpDaemonManager(d);
    g_autoptr(GError) err = NULL;
    ck_assert_int_eq(planned(d, "rb-a"), 0);
    ck_assert_int_eq(planned(d, "rb-b"), 0);

    /* one vCPU that wants a whole free core: CPU 1 is the only candidate */
    g_autofree char *cxml = domainXML("rb-c", 1, "smt='spread' unmet='refuse'", NULL);
    vpHookInWindow w = {.xml = cxml};
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), reserveInWindow, &w);
    feedShared(d, 5);
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), NULL, NULL);

    ck_assert_uint_ge(w.calls, 1);
    ck_assert_msg(w.status == 1 && strstr(w.err, "vcpuplace: refusing to start rb-c:"),
                  "hook status %d: %s", w.status, w.err);
    ck_assert_ptr_null(vpManagerRecord(m, "rb-c"));
    ck_assert_int_ne(planned(d, "rb-a"), planned(d, "rb-b"));
    ck_assert_int_eq(livePin(a), planned(d, "rb-a"));
    ck_assert_int_eq(livePin(b), planned(d, "rb-b"));
    ck_assert_msg(vpLedgerCheck(vpManagerLedger(m), &err), "%s", err ? err->message : "");

    /* and so they stay once every event has been handled */
    waitIdle(d);
    ck_assert_int_eq(livePin(a), planned(d, "rb-a"));
    ck_assert_int_eq(livePin(b), planned(d, "rb-b"));
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "rb-a")->state), "applied");
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "rb-b")->state), "applied");
    g_free(w.err);
    virDomainFree(a);
    virDomainFree(b);
}
END_TEST

/* Both domains stop while the move waits on libvirt. */
typedef struct {
    virDomainPtr doms[2];
    guint calls;
} vpStopInWindow;

static void
stopInWindow(gpointer data)
{
    vpStopInWindow *w = data;
    if (w->calls++)
        return;
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(virDomainDestroy(w->doms[i]), 0);
}

/* A move libvirt does not take (its domain stopped meanwhile) is undone in the ledger:
 * the vCPU is recorded where it was, nothing is double-booked, the failure is reported
 * with the reason, and the stopped domains are then released as usual. */
START_TEST(test_failed_move_rolled_back)
{
    virDomainPtr a, b;
    g_autoptr(vpDaemon) d = startSharedPair(&a, &b);
    vpManager *m = vpDaemonManager(d);
    g_autoptr(GError) err = NULL;

    heard = g_ptr_array_new_with_free_func(g_free);
    listenFor = "move-failed";
    vpStopInWindow w = {.doms = {a, b}};
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), stopInWindow, &w);
    feedShared(d, 5);
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), NULL, NULL);

    ck_assert_uint_ge(w.calls, 1);
    ck_assert_uint_eq(heard->len, 1);
    ck_assert_msg(strstr(heard->pdata[0], "not moved from CPU 0 to CPU 1") &&
                      strstr(heard->pdata[0], "putting the old pins back failed too"),
                  "%s", (char *)heard->pdata[0]);
    ck_assert_int_eq(planned(d, "rb-a"), 0);
    ck_assert_int_eq(planned(d, "rb-b"), 0);
    ck_assert_msg(vpLedgerCheck(vpManagerLedger(m), &err), "%s", err ? err->message : "");
    g_autofree char *prom = vpMetricsCollect(&(vpMetricsSources){
        .cfg = vpDaemonConfig(d),
        .mgr = m,
        .balance = vpDaemonBalance(d),
        .cookies = vpDaemonCookies(d),
        .connected = TRUE,
    });
    ck_assert_msg(strstr(prom, "vcpuplace_move_failures_total{reason=\"rebalance\"} 1\n") &&
                      strstr(prom, "vcpuplace_moves_total{reason=\"rebalance\"} 0\n"),
                  "%s", prom);

    waitIdle(d);
    ck_assert_ptr_null(vpManagerRecord(m, "rb-a"));
    ck_assert_ptr_null(vpManagerRecord(m, "rb-b"));
    ck_assert_uint_eq(vpLedgerNDomains(vpManagerLedger(m)), 0);
    g_clear_pointer(&heard, g_ptr_array_unref);
    virDomainFree(a);
    virDomainFree(b);
}
END_TEST

/* A hotspot with nowhere to go is said once, not every interval. */
START_TEST(test_notes_said_once)
{
    writeBalanceConfig("0", "mode=auto\ninterval=3600\n");
    g_autoptr(vpDaemon) d = startDaemon();
    virDomainPtr a = startShare(d, "rb-a");
    virDomainPtr b = startShare(d, "rb-b");
    heard = g_ptr_array_new_with_free_func(g_free);
    listenFor = "note";
    feedShared(d, 30);
    /* one per vCPU left alone */
    ck_assert_uint_eq(heard->len, 2);
    ck_assert_msg(strstr(heard->pdata[0], "stays: no idle target"), "%s", (char *)heard->pdata[0]);
    g_clear_pointer(&heard, g_ptr_array_unref);
    virDomainFree(a);
    virDomainFree(b);
}
END_TEST

/* What clients send is checked; a reload that fails changes nothing. */
START_TEST(test_bad_requests_and_reloads)
{
    writeBalanceConfig("0", NULL);
    g_autoptr(vpDaemon) d = startDaemon();
    virDomainPtr a = startShare(d, "rb-a");
    g_autofree char *sock = g_build_filename(tmpdir, "sock", NULL);
    const char *argv[] = {VP_SOCKCLIENT, sock, NULL};
    g_autofree char *out = NULL;
    ck_assert_int_eq(run(argv,
                         "{\"op\":\"rebalance\",\"dry_run\":\"yes\"}\n"
                         "{\"op\":\"rebalance\",\"dry_run\":[true]}\n"
                         "{\"op\":\"toop\"}\n"
                         "{\"op\":\"top\",\"extra\":1}\n",
                         &out, NULL),
                     0);
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    ck_assert_uint_eq(g_strv_length(lines), 5);
    ck_assert_msg(strstr(lines[0], "\"ok\":false") &&
                      strstr(lines[0], "'dry_run' is not a boolean"),
                  "%s", lines[0]);
    ck_assert_msg(strstr(lines[1], "'dry_run' is not a boolean"), "%s", lines[1]);
    ck_assert_msg(strstr(lines[2], "unknown operation 'toop'") &&
                      strstr(lines[2], "top, rebalance, metrics"),
                  "%s", lines[2]);
    ck_assert_msg(strstr(lines[3], "\"ok\":true"), "%s", lines[3]);

    /* each bad configuration is refused, naming what is wrong; the daemon runs on as before */
    static const struct {
        const char *extra;
        const char *says;
    } bad[] = {
        {"bogus=1\n", "unknown key 'bogus' in [rebalance]"},
        {"mode=sometimes\n", "mode='sometimes' is not one of auto, advise, off"},
        {"interval=0\n", "interval='0' is not a number of seconds in [0.1, 3600]"},
        {"interval=fast\n", "interval='fast'"},
        {"textfile=relative.prom\n", "textfile='relative.prom' is not an absolute file path"},
        {"persistence=0\n", "persistence='0' is not a whole number of intervals in [1, 3600]"},
        {"max_moves=0\n", "max_moves='0' is not a whole number in [1, 1000]"},
        {"min_residency=100\nmemory=10\n", "min_residency='100' must not be above memory='10'"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) err = NULL;
        writeBalanceConfig("0-1", bad[i].extra);
        ck_assert(!vpDaemonReload(d, &err));
        ck_assert_msg(strstr(err->message, bad[i].says), "%s: %s", bad[i].extra, err->message);
    }
    {
        g_autoptr(GError) err = NULL;
        writeBalanceConfig("0-7", NULL);
        ck_assert(!vpDaemonReload(d, &err));
        ck_assert_msg(strstr(err->message, "host_cpus"), "%s", err->message);
    }
    g_autofree char *usable =
        vpCpuListFormat(vpTopologyUsableSet(vpManagerTopology(vpDaemonManager(d))));
    ck_assert_str_eq(usable, "0");
    ck_assert_int_eq(planned(d, "rb-a"), 0);

    /* a good one: CPU 0 taken away; the domain on it stays, reported */
    g_autoptr(GError) err = NULL;
    writeBalanceConfig("1", NULL);
    ck_assert_msg(vpDaemonReload(d, &err), "%s", err ? err->message : "");
    waitIdle(d);
    ck_assert_int_eq(planned(d, "rb-a"), 0);
    ck_assert_int_eq(livePin(a), 0);
    virDomainFree(a);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("balance");
    TCase *tc = tcase_create("integration");
    tcase_add_checked_fixture(tc, setupTmp, teardownTmp);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_separate_overcommitted);
    tcase_add_test(tc, test_auto_moves_once);
    tcase_add_test(tc, test_move_holds_target_against_hook);
    tcase_add_test(tc, test_failed_move_rolled_back);
    tcase_add_test(tc, test_notes_said_once);
    tcase_add_test(tc, test_bad_requests_and_reloads);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    /* Quiet unless VP_VERBOSE is set; the decisions logged are heard either way. */
    g_log_set_writer_func(listeningWriter, NULL, NULL);
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
