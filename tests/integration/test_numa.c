/*
 * NUMA and memory end to end on libvirt's test driver: vcpuplaced in-process, domains
 * started with <numatune>, <vcpu cpuset>, <emulatorpin> and guest cells on a host of 8 NUMA
 * nodes with 48 GB each (testnode-256.xml for libvirt, the same machine for hwloc), and
 * what libvirt's live pins say checked against the plan and the domains' own statements.
 * The test driver pins but runs nothing: /proc has no threads to compare (the e2e tier's
 * job).
 */
#include "checkmain.h"
#include "harness.h"

#include "core/model/ledger.h"
#include "daemon/manager.h"
#include "libvirt/pinning.h"

#include <check.h>
#include <libvirt/virterror.h>
#include <string.h>

/* testnode-256.xml: 2 packages x 4 NUMA x 2 L3 x 8 cores x 2 threads; nodes are 0..7 and
 * node N holds CPUs 32N..32N+31. */
#define NUMA_TOPOLOGY "synthetic:pack:2 group:4 [numa(memory=48GB)] l3:2 core:8 pu:2"
#define NUMA_URI "test:///" VP_TOPDIR "/xml/testnode-256.xml"

static char *
numaDomain(const char *name, const char *vcpu, const char *body)
{
    return g_strdup_printf("<domain type='test'><name>%s</name><memory unit='GiB'>4</memory>%s"
                           "<os><type>hvm</type></os>%s</domain>",
                           name, vcpu, body);
}

static int
nodeOfCpu(int cpu)
{
    return cpu / 32;
}

/* What libvirt's live vCPU pins say for vCPU v: its one CPU, or -1. */
static int
livePin(virDomainPtr dom, int ncpus, unsigned v)
{
    int maplen = VIR_CPU_MAPLEN(ncpus);
    g_autofree unsigned char *maps = g_malloc0((gsize)maplen * 64);
    int n = virDomainGetVcpuPinInfo(dom, 64, maps, maplen, 0);
    int found = -1, count = 0;

    ck_assert_msg(n > (int)v, "vcpupin info: %s", virGetLastErrorMessage());
    for (int cpu = 0; cpu < ncpus; cpu++) {
        if (VIR_CPU_USED(VIR_GET_CPUMAP(maps, maplen, v), cpu)) {
            found = cpu;
            count++;
        }
    }
    return count == 1 ? found : -1;
}

static vpDaemon *
start(virDomainPtr *dom, const char *xml)
{
    vpDaemon *d = startDaemon();

    *dom = define(vpDaemonLibvirt(d), xml);
    ck_assert_int_eq(virDomainCreate(*dom), 0);
    waitIdle(d);
    return d;
}

START_TEST(test_strict_nodeset)
{
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autofree char *xml = numaDomain("strict", "<vcpu>4</vcpu>",
                                      "<numatune><memory mode='strict' nodeset='5'/></numatune>"
                                      "<metadata><vcpuplace:policy xmlns:vcpuplace='" POLICY_NS
                                      "' smt='isolate'/></metadata>");
    virDomainPtr dom;
    g_autoptr(vpDaemon) d = start(&dom, xml);
    const vpPlan *plan = vpManagerPlan(vpDaemonManager(d), "strict");

    ck_assert_ptr_nonnull(plan);
    ck_assert_int_eq(plan->how, VP_HOW_PLACED);
    for (unsigned v = 0; v < 4; v++) {
        ck_assert_int_eq(nodeOfCpu(plan->vcpu_pu[v]), 5);
        ck_assert_int_eq(livePin(dom, 256, v), plan->vcpu_pu[v]);
    }
    ck_assert_uint_eq(vpPlanMemoryOn(plan, 5), 4ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(vpManagerLedger(vpDaemonManager(d)), 5, 0), 4ULL << 30);
    virDomainDestroy(dom);
    virDomainFree(dom);
}
END_TEST

START_TEST(test_cpuset_constraint)
{
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autofree char *xml = numaDomain("shared", "<vcpu cpuset='40-47'>4</vcpu>", "");
    virDomainPtr dom;
    g_autoptr(vpDaemon) d = start(&dom, xml);
    const vpPlan *plan = vpManagerPlan(vpDaemonManager(d), "shared");

    ck_assert_ptr_nonnull(plan);
    ck_assert_int_eq(plan->how, VP_HOW_PLACED);
    for (unsigned v = 0; v < 4; v++) {
        ck_assert_int_ge(plan->vcpu_pu[v], 40);
        ck_assert_int_le(plan->vcpu_pu[v], 47);
        ck_assert_int_eq(livePin(dom, 256, v), plan->vcpu_pu[v]);
    }
    virDomainDestroy(dom);
    virDomainFree(dom);
}
END_TEST

/* The domain's own emulator pin is kept by libvirt and held: the next domain avoids it. */
START_TEST(test_emulatorpin_kept_and_held)
{
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autofree char *xml =
        numaDomain("emu", "<vcpu>2</vcpu>", "<cputune><emulatorpin cpuset='0-1'/></cputune>");
    g_autofree char *other = numaDomain("next", "<vcpu>2</vcpu>",
                                        "<metadata><vcpuplace:policy xmlns:vcpuplace='" POLICY_NS
                                        "' smt='share'/></metadata>");
    virDomainPtr dom, dom2;
    g_autoptr(vpDaemon) d = start(&dom, xml);
    vpManager *m = vpDaemonManager(d);
    const vpPlan *plan = vpManagerPlan(m, "emu");
    const vpPlan *plan2;
    unsigned char map[32] = {0};
    g_autoptr(GError) err = NULL;

    ck_assert_ptr_nonnull(plan);
    ck_assert_int_eq(virDomainGetEmulatorPinInfo(dom, map, sizeof(map), 0), 1);
    ck_assert_int_eq(map[0], 0x3);
    for (int i = 1; i < 32; i++)
        ck_assert_int_eq(map[i], 0);
    ck_assert_int_eq(hwloc_bitmap_weight(plan->own), 2);
    ck_assert_int_eq(vpLedgerOwner(vpManagerLedger(m), 0).kind, VP_OWN_PINNED);

    dom2 = define(vpDaemonLibvirt(d), other);
    ck_assert_int_eq(virDomainCreate(dom2), 0);
    waitIdle(d);
    plan2 = vpManagerPlan(m, "next");
    ck_assert_ptr_nonnull(plan2);
    for (unsigned v = 0; v < 2; v++)
        ck_assert_int_gt(plan2->vcpu_pu[v], 1);
    ck_assert_msg(vpLedgerCheck(vpManagerLedger(m), &err), "%s", err ? err->message : "");
    virDomainDestroy(dom2);
    virDomainDestroy(dom);
    virDomainFree(dom2);
    virDomainFree(dom);
}
END_TEST

/* Guest cells with memnodes: each cell's vCPUs on its memnode's node, as libvirt shows. */
START_TEST(test_cells_memnode)
{
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autofree char *xml = numaDomain(
        "cells", "<vcpu>4</vcpu>",
        "<cpu><numa><cell id='0' cpus='0-1' memory='2' unit='GiB'/>"
        "<cell id='1' cpus='2-3' memory='2' unit='GiB'/></numa></cpu>"
        "<numatune><memory mode='strict' nodeset='2,6'/><memnode cellid='0' mode='strict' "
        "nodeset='6'/><memnode cellid='1' mode='strict' nodeset='2'/></numatune>");
    virDomainPtr dom;
    g_autoptr(vpDaemon) d = start(&dom, xml);
    const vpPlan *plan = vpManagerPlan(vpDaemonManager(d), "cells");

    ck_assert_ptr_nonnull(plan);
    for (unsigned v = 0; v < 4; v++) {
        ck_assert_int_eq(nodeOfCpu(plan->vcpu_pu[v]), v < 2 ? 6 : 2);
        ck_assert_int_eq(livePin(dom, 256, v), plan->vcpu_pu[v]);
    }
    ck_assert_uint_eq(vpPlanMemoryOn(plan, 6), 2ULL << 30);
    ck_assert_uint_eq(vpPlanMemoryOn(plan, 2), 2ULL << 30);
    virDomainDestroy(dom);
    virDomainFree(dom);
}
END_TEST

/* `virsh setmem --live` and `virsh numatune --live` change only the live XML: the next sync
 * corrects the ledger's memory per node to it, and the vCPUs follow base-page memory to its
 * new node. */
START_TEST(test_memory_reconciled_at_sync)
{
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autofree char *xml = numaDomain("shrink", "<vcpu>2</vcpu>",
                                      "<numatune><memory mode='strict' nodeset='5'/></numatune>");
    virDomainPtr dom;
    g_autoptr(vpDaemon) d = start(&dom, xml);
    vpManager *m = vpDaemonManager(d);
    virTypedParameterPtr params = NULL;
    int nparams = 0, maxparams = 0;

    ck_assert_uint_eq(vpPlanMemoryOn(vpManagerPlan(m, "shrink"), 5), 4ULL << 30);
    ck_assert_int_eq(virDomainSetMemoryFlags(dom, 1 << 20, VIR_DOMAIN_AFFECT_LIVE), 0);
    vpDaemonResync(d, "shrink");
    waitIdle(d);
    ck_assert_uint_eq(vpPlanMemoryOn(vpManagerPlan(m, "shrink"), 5), 1ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(vpManagerLedger(m), 5, 0), 1ULL << 30);

    ck_assert_int_eq(
        virTypedParamsAddString(&params, &nparams, &maxparams, VIR_DOMAIN_NUMA_NODESET, "3"), 0);
    ck_assert_int_eq(virDomainSetNumaParameters(dom, params, nparams, VIR_DOMAIN_AFFECT_LIVE), 0);
    virTypedParamsFree(params, nparams);
    vpDaemonResync(d, "shrink");
    waitIdle(d);
    ck_assert_uint_eq(vpLedgerNodeMemory(vpManagerLedger(m), 5, 0), 0);
    ck_assert_uint_eq(vpLedgerNodeMemory(vpManagerLedger(m), 3, 0), 1ULL << 30);
    ck_assert_uint_eq(vpManagerPlan(m, "shrink")->nmem, 1);
    for (unsigned v = 0; v < 2; v++) {
        ck_assert_int_eq(nodeOfCpu(vpManagerPlan(m, "shrink")->vcpu_pu[v]), 3);
        ck_assert_int_eq(livePin(dom, 256, v), vpManagerPlan(m, "shrink")->vcpu_pu[v]);
    }
    virDomainDestroy(dom);
    virDomainFree(dom);
}
END_TEST

/* The NUMA_TOPOLOGY machine as an hwloc XML file under tmpdir whose nodes also hold 4096 huge
 * pages of 2 MiB and 8 of 1 GiB each (hwloc's synthetic syntax has no page pools); its
 * path. */
static char *
hugeTopology(void)
{
    hwloc_topology_t hw;
    char *buf = NULL;
    int len = 0;
    g_autoptr(GError) err = NULL;
    g_autoptr(GRegex) node = g_regex_new("(<object type=\"NUMANode\"[^>]*>)", 0, 0, NULL);
    char *path = g_build_filename(tmpdir, "numa-huge.xml", NULL);

    ck_assert_int_eq(hwloc_topology_init(&hw), 0);
    ck_assert_int_eq(hwloc_topology_set_synthetic(hw, &NUMA_TOPOLOGY[strlen("synthetic:")]), 0);
    ck_assert_int_eq(hwloc_topology_load(hw), 0);
    ck_assert_int_eq(hwloc_topology_export_xmlbuffer(hw, &buf, &len, 0), 0);
    g_autofree char *xml = g_regex_replace(node, buf, -1, 0,
                                           "\\1<page_type size=\"4096\" count=\"9621984\"/>"
                                           "<page_type size=\"2097152\" count=\"4096\"/>"
                                           "<page_type size=\"1073741824\" count=\"8\"/>",
                                           0, &err);
    hwloc_free_xmlbuffer(hw, buf);
    hwloc_topology_destroy(hw);
    ck_assert_msg(xml, "%s", err ? err->message : "");
    ck_assert(g_file_set_contents(path, xml, -1, NULL));
    return path;
}

/* Guest cells on 1 GiB and on 2 MiB pages (libvirt backs every cell of a domain with
 * <hugepages> by huge pages), restrictive nodeset changed live (`virsh numatune --live`, what
 * libvirt allows in restrictive mode): the ledger keeps both on the node whose pools they
 * came from, claiming nothing on the new node, and the vCPUs stay with them; the same for a
 * domain on one huge page size.
 * Base pages follow such a change (test_memory_reconciled_at_sync). */
START_TEST(test_mixed_pages_after_nodeset_change)
{
    g_autofree char *topo = hugeTopology();
    writeConfig(NUMA_URI, topo, NULL);
    g_autofree char *xml =
        numaDomain("mixed", "<vcpu>2</vcpu>",
                   "<memoryBacking><hugepages><page size='1' unit='GiB' nodeset='0'/>"
                   "<page size='2' unit='MiB'/></hugepages>"
                   "</memoryBacking><cpu><numa><cell id='0' cpus='0' memory='2' unit='GiB'/>"
                   "<cell id='1' cpus='1' memory='2' unit='GiB'/></numa></cpu>"
                   "<numatune><memory mode='restrictive' nodeset='2'/></numatune>");
    g_autofree char *one =
        numaDomain("one", "<vcpu>2</vcpu>",
                   "<memoryBacking><hugepages><page size='2' unit='MiB'/></hugepages>"
                   "</memoryBacking><numatune><memory mode='restrictive' nodeset='3'/></numatune>");
    virDomainPtr dom, dom1;
    g_autoptr(vpDaemon) d = start(&dom, xml);
    vpManager *m = vpDaemonManager(d);
    const vpLedger *ledger = vpManagerLedger(m);
    virTypedParameterPtr params = NULL;
    int nparams = 0, maxparams = 0;

    dom1 = define(vpDaemonLibvirt(d), one);
    ck_assert_int_eq(virDomainCreate(dom1), 0);
    waitIdle(d);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 3, 2ULL << 20), 4ULL << 30);
    ck_assert_ptr_nonnull(vpManagerPlan(m, "mixed"));
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 2, 1ULL << 30), 2ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 2, 2ULL << 20), 2ULL << 30);
    ck_assert_int_eq(
        virTypedParamsAddString(&params, &nparams, &maxparams, VIR_DOMAIN_NUMA_NODESET, "5"), 0);
    ck_assert_int_eq(virDomainSetNumaParameters(dom, params, nparams, VIR_DOMAIN_AFFECT_LIVE), 0);
    ck_assert_int_eq(virDomainSetNumaParameters(dom1, params, nparams, VIR_DOMAIN_AFFECT_LIVE), 0);
    virTypedParamsFree(params, nparams);
    vpDaemonResync(d, "mixed");
    vpDaemonResync(d, "one");
    waitIdle(d);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 3, 2ULL << 20), 4ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 2, 1ULL << 30), 2ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 2, 2ULL << 20), 2ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 5, 1ULL << 30), 0);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 5, 2ULL << 20), 0);
    ck_assert_uint_eq(vpLedgerNodeMemory(ledger, 5, 0), 0);
    for (unsigned v = 0; v < 2; v++) {
        ck_assert_int_eq(nodeOfCpu(vpManagerPlan(m, "mixed")->vcpu_pu[v]), 2);
        ck_assert_int_eq(nodeOfCpu(vpManagerPlan(m, "one")->vcpu_pu[v]), 3);
    }
    virDomainDestroy(dom1);
    virDomainDestroy(dom);
    virDomainFree(dom1);
    virDomainFree(dom);
}
END_TEST

/* placement='auto': vcpuplace chooses the node (node 0's memory is taken, so another) and
 * the domain's live <numatune> nodeset is set to it, so that memory follows the vCPUs. */
START_TEST(test_placement_auto_memory_follows)
{
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autofree char *filler =
        g_strdup_printf("<domain type='test'><name>filler</name><memory unit='GiB'>40</memory>"
                        "<vcpu>1</vcpu><numatune><memory mode='strict' nodeset='0'/></numatune>"
                        "<os><type>hvm</type></os></domain>");
    g_autofree char *xml =
        g_strdup_printf("<domain type='test'><name>auto</name><memory unit='GiB'>8</memory>"
                        "<vcpu placement='auto'>2</vcpu><numatune><memory mode='strict' "
                        "placement='auto'/></numatune><os><type>hvm</type></os></domain>");
    virDomainPtr dom0, dom;
    g_autoptr(vpDaemon) d = start(&dom0, filler);
    vpManager *m = vpDaemonManager(d);
    virTypedParameterPtr params = NULL;
    int nparams = 0;
    const char *nodeset = NULL;
    const vpPlan *plan;
    int node;

    dom = define(vpDaemonLibvirt(d), xml);
    ck_assert_int_eq(virDomainCreate(dom), 0);
    waitIdle(d);
    plan = vpManagerPlan(m, "auto");
    ck_assert_ptr_nonnull(plan);
    node = nodeOfCpu(plan->vcpu_pu[0]);
    ck_assert_int_ne(node, 0);
    ck_assert_int_eq(nodeOfCpu(plan->vcpu_pu[1]), node);
    ck_assert_int_eq(virDomainGetNumaParameters(dom, NULL, &nparams, VIR_DOMAIN_AFFECT_LIVE), 0);
    params = g_new0(virTypedParameter, nparams);
    ck_assert_int_eq(virDomainGetNumaParameters(dom, params, &nparams, VIR_DOMAIN_AFFECT_LIVE), 0);
    ck_assert_int_eq(virTypedParamsGetString(params, nparams, VIR_DOMAIN_NUMA_NODESET, &nodeset),
                     1);
    g_autofree char *want = g_strdup_printf("%d", node);
    ck_assert_str_eq(nodeset, want);
    virTypedParamsClear(params, nparams);
    g_free(params);
    ck_assert_uint_eq(vpPlanMemoryOn(vpManagerPlan(m, "auto"), node), 8ULL << 30);
    ck_assert_uint_eq(vpManagerPlan(m, "auto")->nmem, 1);
    virDomainDestroy(dom);
    virDomainDestroy(dom0);
    virDomainFree(dom);
    virDomainFree(dom0);
}
END_TEST

/* placement='auto' in strict mode, libvirt's default: libvirt binds the memory to numad's
 * nodeset when the domain starts, after vcpuplace chose its node, and refuses to change it
 * live, so the vCPUs follow the memory. The test driver has no numad and lets the live
 * nodeset change in strict mode: that change stands in for numad's advice (the e2e tier,
 * e2e_daemon_numa_auto, runs the real sequence). */
START_TEST(test_placement_auto_vcpus_follow_libvirt)
{
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autofree char *xml =
        numaDomain("numad", "<vcpu placement='auto'>2</vcpu>",
                   "<numatune><memory mode='strict' placement='auto'/>"
                   "</numatune><metadata><vcpuplace:policy xmlns:vcpuplace='" POLICY_NS
                   "' smt='isolate'/></metadata>");
    virDomainPtr dom;
    g_autoptr(vpDaemon) d = start(&dom, xml);
    vpManager *m = vpDaemonManager(d);
    virTypedParameterPtr params = NULL;
    int nparams = 0, maxparams = 0, chosen;
    const vpPlan *plan = vpManagerPlan(m, "numad");
    const int numad = 6;

    ck_assert_ptr_nonnull(plan);
    chosen = nodeOfCpu(plan->vcpu_pu[0]);
    ck_assert_int_ne(chosen, numad);
    ck_assert_int_eq(
        virTypedParamsAddString(&params, &nparams, &maxparams, VIR_DOMAIN_NUMA_NODESET, "6"), 0);
    ck_assert_int_eq(virDomainSetNumaParameters(dom, params, nparams, VIR_DOMAIN_AFFECT_LIVE), 0);
    virTypedParamsFree(params, nparams);
    vpDaemonResync(d, "numad");
    waitIdle(d);
    plan = vpManagerPlan(m, "numad");
    ck_assert_int_eq(vpManagerRecord(m, "numad")->state, VP_DOM_APPLIED);
    for (unsigned v = 0; v < 2; v++) {
        ck_assert_int_eq(nodeOfCpu(plan->vcpu_pu[v]), numad);
        ck_assert_int_eq(livePin(dom, 256, v), plan->vcpu_pu[v]);
    }
    ck_assert_uint_eq(vpLedgerNodeMemory(vpManagerLedger(m), numad, 0), 4ULL << 30);
    ck_assert_uint_eq(vpLedgerNodeMemory(vpManagerLedger(m), chosen, 0), 0);
    for (int cpu = 32 * chosen; cpu < 32 * chosen + 32; cpu++)
        ck_assert(vpLedgerPUFree(vpManagerLedger(m), cpu));
    virDomainDestroy(dom);
    virDomainFree(dom);
}
END_TEST

/* Other drivers' domains are left alone: the hook lets them start, nothing is recorded. */
START_TEST(test_non_qemu_left_alone)
{
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autoptr(vpDaemon) d = startDaemon();
    const char *xen = "<domain type='xen'><name>xen1</name><vcpu>2</vcpu></domain>";
    const char *argv[] = {VP_HOOK, "xen1", "prepare", "begin", "-", NULL};
    g_autofree char *err = NULL;

    ck_assert_int_eq(run(argv, xen, NULL, &err), 0);
    waitIdle(d);
    ck_assert_ptr_null(vpManagerRecord(vpDaemonManager(d), "xen1"));
    ck_assert_uint_eq(vpLedgerNDomains(vpManagerLedger(vpDaemonManager(d))), 0);
}
END_TEST

/* Bad NUMA input through the real hook at `prepare begin`, as libvirt runs it: each start is
 * refused (libvirt shows the hook's stderr in virsh's error), the message names the element
 * and the value, and nothing is held. */
START_TEST(test_bad_numa_input_refused)
{
    static const struct {
        const char *memory, *vcpu, *body, *said;
    } cases[] = {
        {"4", "<vcpu>2</vcpu>",
         "<cpu><numa><cell id='0' cpus='0-3' memory='4' unit='GiB'/></numa></cpu>",
         "<cell id='0'> cpus='0-3' names vCPUs beyond <vcpu> 2"},
        {"1024", "<vcpu>2</vcpu>", "", "<memory> 1 TiB is more than this host's 375000000 KiB"},
        {"4", "<vcpu>2</vcpu>", "<numatune><memory mode='strict' nodeset='6,9-10'/></numatune>",
         "<numatune> nodeset names nodes 9-10 this host lacks (it has 0-7)"},
        {"4", "<vcpu cpuset='300-301'>2</vcpu>", "",
         "<vcpu cpuset='300-301'> names no CPU this host may hand out (0-255)"},
    };
    writeConfig(NUMA_URI, NUMA_TOPOLOGY, NULL);
    g_autoptr(vpDaemon) d = startDaemon();

    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *name = g_strdup_printf("bad%u", i);
        g_autofree char *xml = g_strdup_printf(
            "<domain type='kvm'><name>%s</name><memory unit='GiB'>%s</memory>%s<os><type>hvm"
            "</type></os>%s</domain>",
            name, cases[i].memory, cases[i].vcpu, cases[i].body);
        const char *argv[] = {VP_HOOK, name, "prepare", "begin", "-", NULL};
        g_autofree char *err = NULL;

        ck_assert_int_ne(run(argv, xml, NULL, &err), 0);
        ck_assert_msg(err && strstr(err, cases[i].said), "case %u: '%s' not in: %s", i,
                      cases[i].said, err ? err : "");
    }
    waitIdle(d);
    ck_assert_uint_eq(vpLedgerNDomains(vpManagerLedger(vpDaemonManager(d))), 0);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("integration-numa");
    TCase *tc = tcase_create("integration");

    if (!g_getenv("VP_VERBOSE"))
        g_log_set_writer_func(quietWriter, NULL, NULL);
    tcase_add_checked_fixture(tc, setupTmp, teardownTmp);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_strict_nodeset);
    tcase_add_test(tc, test_cpuset_constraint);
    tcase_add_test(tc, test_emulatorpin_kept_and_held);
    tcase_add_test(tc, test_cells_memnode);
    tcase_add_test(tc, test_memory_reconciled_at_sync);
    tcase_add_test(tc, test_mixed_pages_after_nodeset_change);
    tcase_add_test(tc, test_placement_auto_memory_follows);
    tcase_add_test(tc, test_placement_auto_vcpus_follow_libvirt);
    tcase_add_test(tc, test_non_qemu_left_alone);
    tcase_add_test(tc, test_bad_numa_input_refused);
    suite_add_tcase(s, tc);
    return s;
}
