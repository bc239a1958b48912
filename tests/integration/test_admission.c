/*
 * Integration tier, admission with room made: vcpuplaced in-process against libvirt's test
 * driver, the real hook binary asking for a start, and moves of a running domain's vCPUs
 * pinned through libvirt before the hook has its answer. The topology is a synthetic SMT
 * one (the test driver reports no siblings): one package, two cores of two threads, CPUs
 * 0-1 on core 0 and 2-3 on core 1 (three cores where a test says so). A group move made
 * here is undone later by the rebalancer's re-expansion, through the same actuator.
 */
#include "harness.h"

#include "core/model/ledger.h"
#include "daemon/actuator.h"
#include "daemon/admission.h"
#include "daemon/balance.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define TOPOLOGY "synthetic:pack:1 core:2 pu:2"
#define SEC 1000000000LL

static void
writeAdmissionConfig(unsigned max_moves)
{
    g_autofree char *extra = g_strdup_printf(
        "domains=ad-*\nhook_timeout_ms=5000\nvcpu_poll_ms=0\n[rebalance]\nmode=off\n"
        "[admission]\nmax_moves=%u\n",
        max_moves);
    writeConfig("test:///default", TOPOLOGY, extra);
}

static int
hook(const char *name, const char *op, const char *subop, const char *xml, char **errout)
{
    const char *argv[] = {VP_HOOK, name, op, subop, "-", NULL};
    return run(argv, xml, NULL, errout);
}

/* A running 2-vCPU smt=spread domain: one vCPU on each core (CPUs 0 and 2). */
static virDomainPtr
startSpread(vpDaemon *d, const char *name, const char *extra)
{
    g_autofree char *policy = g_strdup_printf("smt='spread' emulator='vcpus' %s", extra);
    g_autofree char *xml = domainXML(name, 2, policy, NULL);
    virDomainPtr dom = define(vpDaemonLibvirt(d), xml);
    ck_assert_int_eq(virDomainCreate(dom), 0);
    waitIdle(d);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(vpDaemonManager(d), name)->state), "applied");
    return dom;
}

/* The start that needs a whole core (caller frees). */
static char *
isolateXML(void)
{
    return domainXML("ad-i", 1, "smt='isolate' emulator='vcpus' unmet='refuse'", NULL);
}

static int
planned(vpDaemon *d, const char *name, unsigned vcpu)
{
    const vpPlan *plan = vpManagerPlan(vpDaemonManager(d), name);
    ck_assert_ptr_nonnull(plan);
    ck_assert_uint_lt(vcpu, plan->nvcpus);
    return plan->vcpu_pu[vcpu];
}

/* The CPU libvirt has the vCPU pinned to (-1 when it is not one CPU). */
static int
livePin(virDomainPtr dom, unsigned vcpu)
{
    unsigned char map[4][1] = {{0}};
    ck_assert_int_ge(virDomainGetVcpuPinInfo(dom, 4, &map[0][0], 1, 0), (int)vcpu + 1);
    for (int cpu = 0; cpu < 8; cpu++) {
        if (map[vcpu][0] == (1u << cpu))
            return cpu;
    }
    return -1;
}

static char *
metrics(vpDaemon *d)
{
    return vpDaemonMetricsText(d);
}

static void
checkLedger(vpDaemon *d)
{
    g_autoptr(GError) err = NULL;
    ck_assert_msg(vpLedgerCheck(vpManagerLedger(vpDaemonManager(d)), &err), "%s",
                  err ? err->message : "");
}

/* An isolate start finds both cores held by a spread domain: refused without moves
 * (max_moves=0); after a reload with max_moves=2 one of the spread domain's vCPUs is moved
 * onto the sibling of the core its other vCPU runs on, pinned there in libvirt before the hook is
 * answered, and the isolate domain gets the vacated core. */
START_TEST(test_squeeze_admits)
{
    g_autofree char *ixml = isolateXML();
    writeAdmissionConfig(0);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    virDomainPtr s = startSpread(d, "ad-s", "");
    ck_assert_int_eq(planned(d, "ad-s", 0), 0);
    ck_assert_int_eq(planned(d, "ad-s", 1), 2);

    g_autofree char *err = NULL;
    ck_assert_int_eq(hook("ad-i", "prepare", "begin", ixml, &err), 1);
    ck_assert_msg(strstr(err, "refusing to start ad-i"), "%s", err);
    ck_assert_ptr_null(vpManagerRecord(m, "ad-i"));
    ck_assert_int_eq(planned(d, "ad-s", 1), 2);

    writeAdmissionConfig(2);
    g_autoptr(GError) gerr = NULL;
    ck_assert_msg(vpDaemonReload(d, &gerr), "%s", gerr ? gerr->message : "");
    g_clear_pointer(&err, g_free);
    ck_assert_int_eq(hook("ad-i", "prepare", "begin", ixml, &err), 0);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "ad-i")->state), "reserved");
    /* moved before the reply, the first core vacated (the search takes cores in order):
     * the ledger and libvirt already agree */
    ck_assert_int_eq(planned(d, "ad-s", 0), 3);
    ck_assert_int_eq(planned(d, "ad-s", 1), 2);
    ck_assert_int_eq(livePin(s, 0), 3);
    ck_assert_int_eq(livePin(s, 1), 2);
    ck_assert_int_eq(planned(d, "ad-i", 0), 0);
    ck_assert(hwloc_bitmap_isset(vpManagerPlan(m, "ad-i")->reserved, 1));
    ck_assert_uint_eq(vpManagerPlan(m, "ad-i")->nmoves, 0);
    checkLedger(d);

    /* the start pins the isolate domain on the core made free */
    virDomainPtr i = define(vpDaemonLibvirt(d), ixml);
    ck_assert_int_eq(virDomainCreate(i), 0);
    waitIdle(d);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "ad-i")->state), "applied");
    ck_assert_int_eq(livePin(i, 0), 0);
    ck_assert_int_eq(livePin(s, 0), 3);
    checkLedger(d);

    g_autofree char *prom = metrics(d);
    ck_assert_msg(strstr(prom, "vcpuplace_moves_total{reason=\"admission\"} 1\n") &&
                      strstr(prom, "vcpuplace_move_failures_total{reason=\"admission\"} 0\n"),
                  "%s", prom);
    g_autoptr(JsonNode) st = vpAdmissionStatusJson(vpDaemonAdmission(d));
    JsonObject *o = json_node_get_object(st);
    JsonArray *recent = json_object_get_array_member(o, "recent");
    ck_assert_uint_eq(json_array_get_length(recent), 1);
    JsonObject *mv = json_array_get_object_element(recent, 0);
    ck_assert_str_eq(json_object_get_string_member(mv, "start"), "ad-i");
    ck_assert_str_eq(json_object_get_string_member(mv, "domain"), "ad-s");
    ck_assert_int_eq(json_object_get_int_member(mv, "vcpu"), 0);
    ck_assert_int_eq(json_object_get_int_member(mv, "from"), 0);
    ck_assert_int_eq(json_object_get_int_member(mv, "to"), 3);
    ck_assert(json_object_get_boolean_member(mv, "applied"));
    ck_assert_msg(strstr(json_object_get_string_member(mv, "reason"), "makes room for domain "
                                                                      "'ad-i'"),
                  "%s", json_object_get_string_member(mv, "reason"));

    /* and `vcpuplace status` shows it */
    g_autofree char *out = NULL;
    const char *argv[] = {VP_CLI, "status", "--config", confpath, NULL};
    ck_assert_int_eq(run(argv, NULL, &out, NULL), 0);
    ck_assert_msg(strstr(out, "admission moves: 1 made, 0 ") &&
                      strstr(out, "for ad-i: ad-s vCPU 0 CPU 0 -> 3 moved"),
                  "%s", out);
    virDomainFree(s);
    virDomainFree(i);
}
END_TEST

/* No whole core is left and no move is allowed: a 1-vCPU pack domain takes pack's last tier,
 * the free sibling of one of ad-s's cores, and `vcpuplace status` says that it shares a core
 * with another trust group. */
START_TEST(test_pack_beside_others_shown)
{
    writeAdmissionConfig(0);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    virDomainPtr s = startSpread(d, "ad-s", "");
    g_autofree char *pxml =
        domainXML("ad-p", 1, "smt='pack' emulator='vcpus' unmet='refuse'", NULL);
    virDomainPtr p = define(vpDaemonLibvirt(d), pxml);

    ck_assert_int_eq(virDomainCreate(p), 0);
    waitIdle(d);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "ad-p")->state), "applied");
    ck_assert(planned(d, "ad-p", 0) == 1 || planned(d, "ad-p", 0) == 3);
    ck_assert_uint_eq(vpManagerPlan(m, "ad-p")->beside_others, 1);
    ck_assert(!vpManagerPlan(m, "ad-p")->degraded);
    ck_assert_int_eq(livePin(p, 0), planned(d, "ad-p", 0));
    checkLedger(d);

    g_autofree char *out = NULL;
    const char *argv[] = {VP_CLI, "status", "--config", confpath, NULL};
    ck_assert_int_eq(run(argv, NULL, &out, NULL), 0);
    ck_assert_msg(strstr(out, "beside other cookies: 1 vCPU share a core with another cookie"),
                  "%s", out);
    virDomainFree(s);
    virDomainFree(p);
}
END_TEST

/* Takes ad-s's second vCPU away, once, as the actuator lets the lock go to pin it: libvirt
 * then refuses a pin of that vCPU, while the domain keeps running (a domain destroyed here
 * would be released by its event, and the start would find room without moves). The
 * hotplug watcher is off ([daemon] vcpu_poll_ms=0), so the daemon does not see it. */
static void
unplugInWindow(gpointer data)
{
    virDomainPtr *dom = data;
    if (!*dom)
        return;
    ck_assert_int_eq(virDomainSetVcpusFlags(*dom, 1, VIR_DOMAIN_AFFECT_LIVE), 0);
    *dom = NULL;
}

/* libvirt refuses to pin the moved domain: the move is rolled back, the start decided
 * without moves and refused, the failed move named in the hook's error, the ledger as it
 * was. */
START_TEST(test_failed_move_refuses)
{
    g_autofree char *ixml = isolateXML();
    writeAdmissionConfig(2);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    virDomainPtr s = startSpread(d, "ad-s", "");
    virDomainPtr victim = s;

    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), unplugInWindow, &victim);
    g_autofree char *err = NULL;
    int status = hook("ad-i", "prepare", "begin", ixml, &err);
    vpActuatorSetUnlockedFunc(vpDaemonActuator(d), NULL, NULL);

    ck_assert_ptr_null(victim);
    ck_assert_msg(status == 1 && strstr(err, "refusing to start ad-i") &&
                      strstr(err, "the moves to make room (vCPU 0 of 'ad-s' from CPU 0 to CPU "
                                  "3) failed and were rolled back") &&
                      strstr(err, "requested vcpu '1' is not present"),
                  "status %d: %s", status, err);
    ck_assert_ptr_null(vpManagerRecord(m, "ad-i"));
    ck_assert_int_eq(planned(d, "ad-s", 0), 0);
    ck_assert_int_eq(planned(d, "ad-s", 1), 2);
    ck_assert_int_eq(livePin(s, 0), 0);
    checkLedger(d);
    g_autofree char *prom = metrics(d);
    ck_assert_msg(strstr(prom, "vcpuplace_moves_total{reason=\"admission\"} 0\n") &&
                      strstr(prom, "vcpuplace_move_failures_total{reason=\"admission\"} 1\n"),
                  "%s", prom);
    g_autoptr(JsonNode) st = vpAdmissionStatusJson(vpDaemonAdmission(d));
    JsonArray *recent = json_object_get_array_member(json_node_get_object(st), "recent");
    ck_assert_uint_eq(json_array_get_length(recent), 1);
    ck_assert(!json_object_get_boolean_member(json_array_get_object_element(recent, 0), "applied"));
    virDomainFree(s);
}
END_TEST

/* A domain with rebalance=off is never moved to make room: the start stays refused and
 * says why moving did not help. */
START_TEST(test_rebalance_off_not_moved)
{
    g_autofree char *ixml = isolateXML();
    writeAdmissionConfig(2);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    virDomainPtr s = startSpread(d, "ad-s", "rebalance='off'");

    g_autofree char *err = NULL;
    ck_assert_int_eq(hook("ad-i", "prepare", "begin", ixml, &err), 1);
    ck_assert_msg(strstr(err, "refusing to start ad-i") && strstr(err, "do not make room"), "%s",
                  err);
    ck_assert_ptr_null(vpManagerRecord(m, "ad-i"));
    ck_assert_int_eq(planned(d, "ad-s", 1), 2);
    ck_assert_int_eq(livePin(s, 1), 2);
    g_autofree char *prom = metrics(d);
    ck_assert_msg(strstr(prom, "vcpuplace_moves_total{reason=\"admission\"} 0\n"), "%s", prom);
    virDomainFree(s);
}
END_TEST

/* A reservation not started yet is moved in the ledger only: libvirt has nothing to pin,
 * and its start applies the plan the ledger then holds. */
START_TEST(test_reserved_moved_in_ledger)
{
    g_autofree char *ixml = isolateXML();
    writeAdmissionConfig(2);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    g_autofree char *sxml = domainXML("ad-s", 2, "smt='spread' emulator='vcpus'", NULL);
    virDomainPtr s = define(vpDaemonLibvirt(d), sxml);
    ck_assert_int_eq(hook("ad-s", "prepare", "begin", sxml, NULL), 0);
    ck_assert_int_eq(planned(d, "ad-s", 1), 2);

    ck_assert_int_eq(hook("ad-i", "prepare", "begin", ixml, NULL), 0);
    ck_assert_int_eq(planned(d, "ad-s", 0), 3);
    ck_assert_int_eq(planned(d, "ad-i", 0), 0);
    checkLedger(d);

    ck_assert_int_eq(virDomainCreate(s), 0);
    waitIdle(d);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "ad-s")->state), "applied");
    ck_assert_int_eq(livePin(s, 0), 3);
    ck_assert_int_eq(livePin(s, 1), 2);
    virDomainFree(s);
}
END_TEST

/* A reservation for a domain that never starts, with a <vcpu cpuset> to put it where the
 * test wants (caller frees the XML it reserved with). */
static char *
reserveAt(const char *name, const char *cpuset, const char *policy)
{
    char *xml = g_strdup_printf(
        "<domain type='test'><name>%s</name><memory>65536</memory>"
        "<vcpu cpuset='%s'>1</vcpu><os><type>hvm</type></os><metadata><vcpuplace:policy "
        "xmlns:vcpuplace='" POLICY_NS "' emulator='vcpus' %s/></metadata></domain>",
        name, cpuset, policy);
    g_autofree char *err = NULL;
    ck_assert_msg(hook(name, "prepare", "begin", xml, &err) == 0, "%s: %s", name, err);
    return xml;
}

/* The e2e tier's case (tests/e2e/test-daemon-squeeze.sh) on the test driver: cores numbered
 * as Intel does (core 0: CPUs 0 and 2, core 1: 1 and 3), a share domain on CPU 1, core 0's
 * CPU 2 held by a share reservation that may not move. The isolate start is admitted after
 * the share domain moves to CPU 0, a share-held core of its node; the isolate domain gets
 * core 1, its vCPU and emulator on CPU 1 (its <vcpu cpuset='1'>: on the e2e host CPU 3,
 * the reserved sibling its emulator would float over, does not exist). */
START_TEST(test_share_moved_for_isolate)
{
    g_autofree char *extra =
        g_strdup_printf("domains=ad-*\nhook_timeout_ms=5000\nvcpu_poll_ms=0\n[rebalance]\n"
                        "mode=off\n[admission]\nmax_moves=2\n");
    writeConfig("test:///default", "synthetic:pack:1 core:2 pu:2(indexes=0,2,1,3)", extra);
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);

    g_autofree char *hiso = reserveAt("ad-hold-iso", "0,2", "smt='isolate'");
    g_autofree char *sxml =
        domainXML("ad-share", 1, "smt='share' emulator='vcpus' unmet='refuse'", NULL);
    virDomainPtr s = define(vpDaemonLibvirt(d), sxml);
    ck_assert_int_eq(virDomainCreate(s), 0);
    waitIdle(d);
    ck_assert_int_eq(planned(d, "ad-share", 0), 1);
    ck_assert_int_eq(hook("ad-hold-iso", "release", "end", hiso, NULL), 0);
    /* holds CPU 2, which does not exist on the e2e host this mirrors; never started */
    g_free(reserveAt("ad-hold", "2", "smt='share' rebalance='off'"));
    ck_assert_int_eq(planned(d, "ad-hold", 0), 2);

    g_autofree char *ixml = reserveAt("ad-i", "1", "smt='isolate' unmet='refuse'");
    ck_assert_int_eq(planned(d, "ad-share", 0), 0);
    ck_assert_int_eq(livePin(s, 0), 0);
    ck_assert_int_eq(planned(d, "ad-i", 0), 1);
    ck_assert(hwloc_bitmap_isset(vpManagerPlan(m, "ad-i")->reserved, 3));
    g_autofree char *emu = vpCpuListFormat(vpManagerPlan(m, "ad-i")->emulator);
    ck_assert_str_eq(emu, "1");
    checkLedger(d);

    virDomainPtr i = define(vpDaemonLibvirt(d), ixml);
    ck_assert_int_eq(virDomainCreate(i), 0);
    waitIdle(d);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "ad-i")->state), "applied");
    ck_assert_int_eq(livePin(i, 0), 1);
    ck_assert_int_eq(livePin(s, 0), 0);
    virDomainFree(s);
    virDomainFree(i);
}
END_TEST

/* Without libvirt nothing is moved, not even a reservation that needs no pinning: the start
 * is decided by the placer alone. */
START_TEST(test_disconnected_no_moves)
{
    g_autofree char *ixml = isolateXML();
    g_autofree char *extra = g_strdup_printf("domains=ad-*\nhook_timeout_ms=5000\n"
                                             "[rebalance]\nmode=off\n[admission]\nmax_moves=2\n");
    g_autofree char *uri = g_strdup_printf("test:///%s/no-such-node.xml", tmpdir);
    writeConfig(uri, TOPOLOGY, extra);
    g_autoptr(GError) gerr = NULL;
    vpConfig *cfg = vpConfigLoad(confpath, &gerr);
    ck_assert_msg(cfg, "%s", gerr ? gerr->message : "");
    g_autoptr(vpDaemon) d = vpDaemonNew(cfg, &gerr);
    ck_assert_msg(d, "%s", gerr ? gerr->message : "");
    vpDaemonStart(d);
    ck_assert(!vpDaemonConnected(d));
    vpManager *m = vpDaemonManager(d);

    g_autofree char *sxml = domainXML("ad-s", 2, "smt='spread' emulator='vcpus'", NULL);
    ck_assert_int_eq(hook("ad-s", "prepare", "begin", sxml, NULL), 0);
    g_autofree char *err = NULL;
    ck_assert_int_eq(hook("ad-i", "prepare", "begin", ixml, &err), 1);
    ck_assert_msg(strstr(err, "refusing to start ad-i"), "%s", err);
    ck_assert_ptr_null(vpManagerRecord(m, "ad-i"));
    ck_assert_int_eq(planned(d, "ad-s", 0), 0);
    ck_assert_int_eq(planned(d, "ad-s", 1), 2);
    ck_assert_uint_eq(vpAdmissionMoves(vpDaemonAdmission(d)), 0);
}
END_TEST

/* A running 1-vCPU domain with the given policy attributes. */
static virDomainPtr
startOne(vpDaemon *d, const char *name, const char *policy)
{
    g_autofree char *xml = domainXML(name, 1, policy, NULL);
    virDomainPtr dom = define(vpDaemonLibvirt(d), xml);
    ck_assert_int_eq(virDomainCreate(dom), 0);
    waitIdle(d);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(vpDaemonManager(d), name)->state), "applied");
    return dom;
}

/* n intervals of the test driver's vCPUs (which give no samples of their own): each of
 * names runs 5%, every CPU of the 3 cores 1% busy. */
static void
feedQuiet(vpDaemon *d, const char *const *names, int n)
{
    for (int t = 0; t < n; t++) {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();
        for (int k = 0; names[k]; k++) {
            vpPressureSample s = {
                .domain = (char *)names[k],
                .interval_ns = SEC,
                .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES,
                .run_ns = SEC / 20,
                .wait_ns = SEC / 100,
                .voluntary = 10,
            };
            vpPressureInputAddVcpu(in, &s);
        }
        for (unsigned cpu = 0; cpu < 6; cpu++)
            vpPressureInputAddCpu(in, &(vpCpuSample){cpu, SEC, SEC / 100});
        vpBalanceFeed(vpDaemonBalance(d), in);
    }
}

/* A rebalancing pass as `vcpuplace rebalance [--dry-run]` asks for it: its moves. */
static JsonArray *
rebalance(vpDaemon *d, gboolean dry, JsonNode **reply)
{
    g_autoptr(JsonObject) req = json_object_new();
    g_autoptr(GError) err = NULL;
    json_object_set_boolean_member(req, "dry_run", dry);
    *reply = vpBalanceRebalanceJson(vpDaemonBalance(d), req, &err);
    ck_assert_msg(*reply, "%s", err ? err->message : "");
    return json_object_get_array_member(json_node_get_object(*reply), "moves");
}

/* Three cores (CPUs 0-1, 2-3, 4-5). ad-a and ad-b of one trust group with a group cookie
 * and ad-c hold one core each; an isolate start is admitted after a group move (one of the
 * pair onto the free sibling of the other's core). Once ad-c stops, the rebalancer's pass,
 * through the daemon's actuator, moves one of the pair onto the whole core left, pinned in
 * libvirt, the reason naming its group mate, counted as a rebalance move; then nothing. */
START_TEST(test_group_move_reexpands)
{
    g_autofree char *ixml = isolateXML();
    const char *grp = "smt='spread' group='tg' coresched='group' emulator='vcpus'";
    const char *names[] = {"ad-a", "ad-b", "ad-i", NULL};
    writeConfig("test:///default", "synthetic:pack:1 core:3 pu:2",
                "domains=ad-*\nhook_timeout_ms=5000\nvcpu_poll_ms=0\n[rebalance]\nmode=off\n"
                "[admission]\nmax_moves=2\n");
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);
    virDomainPtr a = startOne(d, "ad-a", grp);
    virDomainPtr b = startOne(d, "ad-b", grp);
    virDomainPtr c = startOne(d, "ad-c", "smt='spread' emulator='vcpus'");
    ck_assert_int_eq(planned(d, "ad-a", 0), 0);
    ck_assert_int_eq(planned(d, "ad-b", 0), 2);
    ck_assert_int_eq(planned(d, "ad-c", 0), 4);

    g_autofree char *err = NULL;
    ck_assert_msg(hook("ad-i", "prepare", "begin", ixml, &err) == 0, "%s", err);
    virDomainPtr i = define(vpDaemonLibvirt(d), ixml);
    ck_assert_int_eq(virDomainCreate(i), 0);
    waitIdle(d);
    ck_assert_uint_eq(vpAdmissionMoves(vpDaemonAdmission(d)), 1);
    int pa = planned(d, "ad-a", 0), pb = planned(d, "ad-b", 0);
    ck_assert_msg(pa / 2 == pb / 2, "ad-a on CPU %d, ad-b on CPU %d: not one core", pa, pb);
    ck_assert_int_eq(planned(d, "ad-i", 0) / 2, pa == 0 ? 1 : 0);
    checkLedger(d);

    ck_assert_int_eq(virDomainDestroy(c), 0);
    waitIdle(d);
    ck_assert_ptr_null(vpManagerPlan(m, "ad-c"));
    feedQuiet(d, names, 6);

    g_autoptr(JsonNode) dry = NULL, done = NULL, after = NULL;
    JsonArray *mv = rebalance(d, TRUE, &dry);
    ck_assert_uint_eq(json_array_get_length(mv), 1);
    JsonObject *o = json_array_get_object_element(mv, 0);
    const char *who = json_object_get_string_member(o, "domain");
    const char *reason = json_object_get_string_member(o, "reason");
    ck_assert_msg(strstr(reason, "smt=spread re-expands") &&
                      strstr(reason, "of its trust group 'tg'; to CPU"),
                  "%s", reason);
    ck_assert_int_eq(json_object_get_int_member(o, "to") / 2, 2);

    mv = rebalance(d, FALSE, &done);
    ck_assert_uint_eq(json_array_get_length(mv), 1);
    o = json_array_get_object_element(mv, 0);
    ck_assert(json_object_get_boolean_member(o, "applied"));
    int to = json_object_get_int_member(o, "to");
    ck_assert_int_eq(planned(d, who, 0), to);
    ck_assert_int_eq(livePin(strcmp(who, "ad-a") == 0 ? a : b, 0), to);
    ck_assert_int_eq(livePin(strcmp(who, "ad-a") == 0 ? b : a, 0),
                     strcmp(who, "ad-a") == 0 ? pb : pa);
    checkLedger(d);
    g_autofree char *prom = metrics(d);
    ck_assert_msg(strstr(prom, "vcpuplace_moves_total{reason=\"rebalance\"} 1\n") &&
                      strstr(prom, "vcpuplace_moves_total{reason=\"admission\"} 1\n"),
                  "%s", prom);

    feedQuiet(d, names, 20);
    ck_assert_uint_eq(json_array_get_length(rebalance(d, TRUE, &after)), 0);
    virDomainFree(a);
    virDomainFree(b);
    virDomainFree(c);
    virDomainFree(i);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("admission");
    TCase *tc = tcase_create("integration");
    tcase_add_checked_fixture(tc, setupTmp, teardownTmp);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_squeeze_admits);
    tcase_add_test(tc, test_pack_beside_others_shown);
    tcase_add_test(tc, test_failed_move_refuses);
    tcase_add_test(tc, test_rebalance_off_not_moved);
    tcase_add_test(tc, test_reserved_moved_in_ledger);
    tcase_add_test(tc, test_share_moved_for_isolate);
    tcase_add_test(tc, test_disconnected_no_moves);
    tcase_add_test(tc, test_group_move_reexpands);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    g_log_set_writer_func(quietWriter, NULL, NULL);
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
