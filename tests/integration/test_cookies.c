/*
 * Integration tier: vcpuplaced's cookies and vCPU hotplug, in-process against libvirt's test
 * driver, with the real vcpuplace CLI for the status an operator reads.
 *
 * The test driver runs no QEMU (no threads to cookie) and has no QEMU monitor events (the
 * hotplug watcher must fall back to re-reading vCPU counts), but it does change a running
 * domain's vCPU count with virDomainSetVcpusFlags. Whether this host's kernel can set
 * cookies is asked of the kernel, and the test expects accordingly: on a kernel without
 * SCHED_CORE (this project's build machine) every domain reads "unsupported", with the
 * kernel's answer, logged once however many domains run.
 */
#include "checkmain.h"
#include "harness.h"

#include "daemon/daemon.h"
#include "host/coresched.h"
#include "libvirt/pinning.h"

#include <check.h>
#include <libvirt/virterror.h>
#include <string.h>

/* testnode-256.xml is 2 packages x 4 NUMA x 2 L3 x 8 cores x 2 threads. */
#define BIG_TOPOLOGY "synthetic:pack:2 group:4 [numa] l3:2 core:8 pu:2"
#define KERNEL_SAYS_NO "core scheduling is not available, so no VM gets a cookie"

static guint kernelWarnings;

/* Counts the daemon's one warning about the kernel; other messages stay quiet. */
static GLogWriterOutput
countingWriter(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
    for (gsize i = 0; i < n; i++) {
        if (strcmp(fields[i].key, "MESSAGE") == 0 && fields[i].length < 0 &&
            strstr(fields[i].value, KERNEL_SAYS_NO))
            kernelWarnings++;
    }
    return quietWriter(level, fields, n, data);
}

static void
setup(void)
{
    setupTmp();
    kernelWarnings = 0;
}

/* libvirt's qemu.conf is read from tmpdir, where a test may write one. */
static void
writeCookiesConfig(const char *extra)
{
    g_autofree char *more =
        g_strdup_printf("qemu_conf=%s/qemu.conf\n%s", tmpdir, extra ? extra : "");
    writeConfig("test:///" VP_TOPDIR "/xml/testnode-256.xml", BIG_TOPOLOGY, more);
}

static virDomainPtr
startDomain(vpDaemon *d, const char *name, unsigned current, unsigned max, const char *policy)
{
    g_autofree char *xml = g_strdup_printf(
        "<domain type='test'><name>%s</name><memory>65536</memory>"
        "<vcpu current='%u'>%u</vcpu><os><type>hvm</type></os>"
        "<metadata><vcpuplace:policy xmlns:vcpuplace='" POLICY_NS "' %s/></metadata></domain>",
        name, current, max, policy);
    virDomainPtr dom = define(vpDaemonLibvirt(d), xml);
    ck_assert_msg(virDomainCreate(dom) == 0, "start: %s", virGetLastErrorMessage());
    waitIdle(d);
    return dom;
}

/* ---- the CLI, run while the daemon's loop turns ------------------------------------- */

static char *
cli(const char *arg)
{
    const char *argv[] = {VP_CLI, "status", "--config", confpath, arg, NULL};
    char *out = NULL;
    ck_assert_int_eq(run(argv, NULL, &out, NULL), 0);
    return out;
}

static JsonNode *
statusJson(void)
{
    g_autofree char *out = cli("--json");
    g_autoptr(GError) err = NULL;
    JsonNode *node = json_from_string(out, &err);
    ck_assert_msg(node, "status --json: %s", err ? err->message : out);
    return node;
}

static JsonObject *
domainIn(JsonNode *status, const char *name)
{
    JsonArray *doms = json_object_get_array_member(json_node_get_object(status), "domains");
    for (guint i = 0; i < json_array_get_length(doms); i++) {
        JsonObject *o = json_array_get_object_element(doms, i);
        if (strcmp(json_object_get_string_member(o, "domain"), name) == 0)
            return o;
    }
    ck_abort_msg("domain %s not in the status", name);
    return NULL;
}

static gboolean
kernelHasCookies(char **reason)
{
    g_autoptr(GError) err = NULL;
    gboolean ok = vpCoreschedProbe(&err) == VP_CORESCHED_OK;
    *reason = ok ? NULL : g_strdup(err->message);
    return ok;
}

/* ---- cookies --------------------------------------------------------------------------- */

START_TEST(test_cookie_state_reported)
{
    g_autofree char *reason = NULL;
    gboolean supported = kernelHasCookies(&reason);
    g_autoptr(GError) err = NULL;

    /* libvirt's sched_core as read from the file the configuration names */
    g_autofree char *qemuconf = g_build_filename(tmpdir, "qemu.conf", NULL);
    ck_assert(g_file_set_contents(qemuconf, "# libvirt\nsched_core = \"vcpus\"\n", -1, NULL));
    writeCookiesConfig(NULL);
    vpDaemon *d = startDaemon();
    virDomainPtr a = startDomain(d, "vm-a", 2, 2, "group='g' coresched='group'");
    virDomainPtr b = startDomain(d, "vm-b", 1, 1, "coresched='vm'");
    virDomainPtr c = startDomain(d, "vm-c", 1, 1, "coresched='off'");

    g_autoptr(JsonNode) status = statusJson();
    JsonObject *summary = json_object_get_object_member(json_node_get_object(status), "coresched");
    ck_assert_str_eq(json_object_get_string_member(summary, "libvirt_sched_core"), "vcpus");
    ck_assert_str_eq(json_object_get_string_member(summary, "kernel"),
                     supported ? "ok" : "unsupported");

    JsonObject *ca = json_object_get_object_member(domainIn(status, "vm-a"), "coresched");
    JsonObject *cb = json_object_get_object_member(domainIn(status, "vm-b"), "coresched");
    JsonObject *cc = json_object_get_object_member(domainIn(status, "vm-c"), "coresched");
    ck_assert_str_eq(json_object_get_string_member(ca, "set"), "group:g");
    ck_assert_str_eq(json_object_get_string_member(cb, "set"), "vm:vm-b");
    ck_assert(json_object_get_null_member(cc, "set"));
    if (supported) {
        /* no QEMU behind the test driver: nothing to cookie, and it says so */
        ck_assert_str_eq(json_object_get_string_member(ca, "state"), "no-threads");
    } else {
        ck_assert_str_eq(json_object_get_string_member(ca, "state"), "unsupported");
        ck_assert_str_eq(json_object_get_string_member(cc, "state"), "unsupported");
        ck_assert_str_eq(json_object_get_string_member(ca, "reason"), reason);
        ck_assert_msg(strstr(reason, "EINVAL") || strstr(reason, "ENODEV"), "%s", reason);
        /* once, at start, however many domains and passes */
        ck_assert_uint_eq(kernelWarnings, 1);
        g_autofree char *text = cli(NULL);
        ck_assert_msg(strstr(text, "core scheduling: kernel unsupported: "), "%s", text);
        ck_assert_msg(strstr(text, "  cookies: unsupported, coresched=group, set group:g"), "%s",
                      text);
    }
    /* placement went on regardless */
    ck_assert_str_eq(json_object_get_string_member(domainIn(status, "vm-a"), "state"), "applied");
    ck_assert_str_eq(json_object_get_string_member(domainIn(status, "vm-c"), "state"), "applied");

    /* a qemu.conf libvirt would refuse: sched_core unknown, said, and nothing breaks */
    ck_assert(g_file_set_contents(qemuconf, "sched_core = \"everything\"\n", -1, &err));
    virDomainDestroy(c);
    waitIdle(d);
    g_autoptr(JsonNode) after = statusJson();
    summary = json_object_get_object_member(json_node_get_object(after), "coresched");
    ck_assert_str_eq(json_object_get_string_member(summary, "libvirt_sched_core"), "unknown");
    ck_assert_msg(strstr(json_object_get_string_member(summary, "qemu_conf_error"),
                         "sched_core='everything' is not one of"),
                  "%s", json_object_get_string_member(summary, "qemu_conf_error"));

    virDomainFree(a);
    virDomainFree(b);
    virDomainFree(c);
    vpDaemonFree(d);
    ck_assert_uint_eq(kernelWarnings, supported ? 0 : 1);
}
END_TEST

/* ---- hotplug ----------------------------------------------------------------------------- */

static const vpPlan *
waitPlan(vpDaemon *d, const char *name, unsigned nvcpus)
{
    const vpPlan *plan;
    /* Re-read every 100 ms (vcpu_poll_ms); Check's timeout bounds the wait. */
    while (!(plan = vpManagerPlan(vpDaemonManager(d), name)) || plan->nvcpus != nvcpus ||
           vpManagerRecord(vpDaemonManager(d), name)->state != VP_DOM_APPLIED)
        g_main_context_iteration(NULL, TRUE);
    return plan;
}

static int
coreOfCpu(const vpTopology *topo, int cpu)
{
    return vpTopologyPU(topo, vpTopologyPUByOS(topo, cpu))->core;
}

START_TEST(test_hotplug_without_events)
{
    writeCookiesConfig("vcpu_poll_ms=100\n");
    vpDaemon *d = startDaemon();
    virDomainPtr dom = startDomain(d, "grow", 1, 4, "smt='spread'");
    const vpTopology *topo = vpManagerTopology(vpDaemonManager(d));
    g_autoptr(GError) err = NULL;

    g_autoptr(JsonNode) status = statusJson();
    JsonObject *hp = json_object_get_object_member(json_node_get_object(status), "hotplug");
    ck_assert_msg(strstr(json_object_get_string_member(hp, "qemu_events"), "not supported"), "%s",
                  json_object_get_string_member(hp, "qemu_events"));
    ck_assert_int_eq(json_object_get_int_member(hp, "poll_ms"), 100);

    const vpPlan *plan = waitPlan(d, "grow", 1);
    int first = plan->vcpu_pu[0];

    /* two more vCPUs while it runs: placed under its policy (spread: cores of their own
     * beside the first) and pinned through libvirt */
    ck_assert_msg(virDomainSetVcpusFlags(dom, 3, 0) == 0, "setvcpus: %s", virGetLastErrorMessage());
    plan = waitPlan(d, "grow", 3);
    ck_assert_int_eq(plan->vcpu_pu[0], first);
    for (unsigned i = 1; i < 3; i++) {
        ck_assert_int_ge(plan->vcpu_pu[i], 0);
        for (unsigned j = 0; j < i; j++)
            ck_assert_int_ne(coreOfCpu(topo, plan->vcpu_pu[i]), coreOfCpu(topo, plan->vcpu_pu[j]));
        ck_assert_int_eq(
            vpTopologyCore(topo, coreOfCpu(topo, plan->vcpu_pu[i]))->group[VP_LEVEL_L3],
            vpTopologyCore(topo, coreOfCpu(topo, first))->group[VP_LEVEL_L3]);
    }
    g_autoptr(vpLivePins) live = vpVirPinsRead(dom, 0, &err);
    ck_assert_msg(live, "%s", err ? err->message : "");
    g_autofree char *diff = vpLivePinsDiff(live, plan);
    ck_assert_msg(!diff, "libvirt differs from the plan: %s", diff);
    ck_assert(vpLedgerCheck(vpManagerLedger(vpDaemonManager(d)), &err));
    int freed = plan->vcpu_pu[2];

    /* and one fewer: its CPU is free again */
    ck_assert_msg(virDomainSetVcpusFlags(dom, 2, 0) == 0, "setvcpus: %s", virGetLastErrorMessage());
    plan = waitPlan(d, "grow", 2);
    ck_assert(vpLedgerPUFree(vpManagerLedger(vpDaemonManager(d)), vpTopologyPUByOS(topo, freed)));
    ck_assert_int_eq(plan->vcpu_pu[0], first);
    virDomainFree(dom);
    vpDaemonFree(d);
}
END_TEST

/* A domain limited to cpuset, started and idle; policy attributes as startDomain's. */
static virDomainPtr
startLimited(vpDaemon *d, const char *name, unsigned current, unsigned max, const char *cpuset)
{
    g_autofree char *xml =
        g_strdup_printf("<domain type='test'><name>%s</name><memory>65536</memory>"
                        "<vcpu current='%u' cpuset='%s'>%u</vcpu><os><type>hvm</type></os>"
                        "<metadata><vcpuplace:policy xmlns:vcpuplace='" POLICY_NS "' smt='spread' "
                        "unmet='degrade'/></metadata></domain>",
                        name, current, cpuset, max);
    virDomainPtr dom = define(vpDaemonLibvirt(d), xml);
    ck_assert_msg(virDomainCreate(dom) == 0, "start: %s", virGetLastErrorMessage());
    waitIdle(d);
    return dom;
}

/* A vCPU hot-plugged where its domain gets no other CPU (its <vcpu cpuset> allows 4 and 6,
 * and a stranger holds 6): left unpinned, it ran on the stranger's CPU, counted nowhere.
 * It floats over its own domain's CPUs instead. */
START_TEST(test_hotplug_unplaced_floats_at_home)
{
    writeCookiesConfig("vcpu_poll_ms=100\n");
    vpDaemon *d = startDaemon();
    virDomainPtr stranger = startLimited(d, "stranger", 1, 1, "6");
    ck_assert_int_eq(waitPlan(d, "stranger", 1)->vcpu_pu[0], 6);
    virDomainPtr dom = startLimited(d, "home", 1, 2, "4,6");
    ck_assert_int_eq(waitPlan(d, "home", 1)->vcpu_pu[0], 4);

    ck_assert_msg(virDomainSetVcpusFlags(dom, 2, 0) == 0, "setvcpus: %s", virGetLastErrorMessage());
    const vpPlan *plan = waitPlan(d, "home", 2);
    ck_assert_int_eq(plan->vcpu_pu[1], -1);
    ck_assert_msg(plan->degraded_reason && strstr(plan->degraded_reason, "left unpinned"), "%s",
                  plan->degraded_reason ? plan->degraded_reason : "not degraded");
    g_autoptr(GError) err = NULL;
    g_autoptr(vpLivePins) live = vpVirPinsRead(dom, 0, &err);
    ck_assert_msg(live, "%s", err ? err->message : "");
    g_autofree char *cpus = vpCpuListFormat(live->vcpu[1]);
    ck_assert_msg(strcmp(cpus, "4") == 0, "vCPU 1 runs on CPUs %s, not only its domain's CPU 4",
                  cpus);

    /* room appears: the floating vCPU is placed there */
    ck_assert_int_eq(virDomainDestroy(stranger), 0);
    while ((plan = waitPlan(d, "home", 2))->vcpu_pu[1] < 0)
        g_main_context_iteration(NULL, TRUE);
    ck_assert_int_eq(plan->vcpu_pu[1], 6);
    g_autoptr(vpLivePins) placed = vpVirPinsRead(dom, 0, &err);
    ck_assert_msg(placed, "%s", err ? err->message : "");
    g_autofree char *diff = vpLivePinsDiff(placed, plan);
    ck_assert_msg(!diff, "%s", diff);
    virDomainFree(stranger);
    virDomainFree(dom);
    vpDaemonFree(d);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("cookies-hotplug");
    TCase *tc = tcase_create("daemon");

    g_log_set_writer_func(countingWriter, NULL, NULL);
    tcase_add_checked_fixture(tc, setup, teardownTmp);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cookie_state_reported);
    tcase_add_test(tc, test_hotplug_without_events);
    tcase_add_test(tc, test_hotplug_unplaced_floats_at_home);
    suite_add_tcase(s, tc);
    return s;
}
