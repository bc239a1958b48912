/*
 * Integration tier: shared, overcommitted VMs ([policy] cpus=shared, ratio) on libvirt's
 * test driver with the real hook: domains without metadata start as shared VMs, more
 * vCPUs than CPUs, each vCPU pinned by libvirt to the set its plan names; an isolate VM
 * keeps its core; the start past the ratio is refused by the hook with the figures.
 */
#include "checkmain.h"
#include "harness.h"

#include "core/model/ledger.h"
#include "daemon/daemon.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define TOPOLOGY "synthetic:pack:2 core:4 pu:2"

/* The CPUs libvirt lets vCPU v of dom run on. */
static hwloc_bitmap_t
livePins(virDomainPtr dom, unsigned nvcpus, unsigned v)
{
    g_autofree unsigned char *maps = g_new0(unsigned char, (gsize)nvcpus * 2);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();

    ck_assert_int_eq(virDomainGetVcpuPinInfo(dom, (int)nvcpus, maps, 2, 0), (int)nvcpus);
    for (int cpu = 0; cpu < 16; cpu++) {
        if (maps[v * 2 + cpu / 8] & (1 << (cpu % 8)))
            hwloc_bitmap_set(set, cpu);
    }
    return set;
}

START_TEST(test_shared_overcommit)
{
    writeConfig("test:///default", TOPOLOGY, "[policy]\ncpus=shared\nratio=2\n");
    g_autoptr(vpDaemon) d = startDaemon();
    virConnectPtr conn = vpDaemonLibvirt(d);
    vpManager *m = vpDaemonManager(d);
    const vpLedger *ledger = vpManagerLedger(m);
    unsigned vcpus = 0;

    /* "test" (2 vCPUs, no metadata) ran before: adopted as a shared VM */
    ck_assert_int_eq(vpManagerPlan(m, "test")->policy.cpus, VP_CPUS_SHARED);
    vcpus += 2;

    g_autofree char *iso = domainXML("iso", 1, "cpus='dedicated' smt='isolate'", NULL);
    virDomainPtr isodom = define(conn, iso);
    ck_assert_int_eq(virDomainCreate(isodom), 0);
    waitIdle(d);
    int isocpu = vpManagerPlan(m, "iso")->vcpu_pu[0];
    ck_assert_int_ge(isocpu, 0);

    /* shared VMs of 2 vCPUs until the ratio refuses one: more vCPUs than CPUs by then */
    g_autofree char *why = NULL;
    for (int i = 0;; i++) {
        g_autofree char *name = g_strdup_printf("s%d", i);
        g_autofree char *xml = domainXML(name, 2, NULL, NULL);
        const char *prepare[] = {VP_HOOK, name, "prepare", "begin", "-", NULL};

        ck_assert_int_lt(i, 64);
        if (run(prepare, xml, NULL, &why) != 0)
            break;
        g_clear_pointer(&why, g_free);
        virDomainPtr dom = define(conn, xml);
        ck_assert_int_eq(virDomainCreate(dom), 0);
        waitIdle(d);
        const vpPlan *plan = vpManagerPlan(m, name);
        ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, name)->state), "applied");
        ck_assert_int_eq(plan->policy.cpus, VP_CPUS_SHARED);
        ck_assert(!hwloc_bitmap_isset(plan->shared, isocpu));
        for (unsigned v = 0; v < 2; v++) {
            g_autoptr(vpBitmap) live = livePins(dom, 2, v);
            g_autofree char *got = vpCpuListFormat(live);
            g_autofree char *want = vpCpuListFormat(plan->vcpu_set[v]);

            ck_assert_msg(hwloc_bitmap_isequal(live, plan->vcpu_set[v]), "%s vCPU %u: %s, plan %s",
                          name, v, got, want);
        }
        vcpus += 2;
        virDomainFree(dom);
    }
    ck_assert(vpLedgerCheck(ledger, NULL));
    /* 2 vCPUs per CPU on all but the isolate VM's core */
    ck_assert_uint_eq(vcpus, 2 * (vpTopologyNPUs(vpManagerTopology(m)) - 2));
    ck_assert_msg(why && strstr(why, "2 shared vCPUs at ratio 2 find no room"), "%s", why);
    virDomainFree(isodom);
}
END_TEST

Suite *
vpTestSuite(void)
{
    g_log_set_writer_func(quietWriter, NULL, NULL);
    Suite *s = suite_create("shared");
    TCase *tc = tcase_create("shared");

    tcase_add_checked_fixture(tc, setupTmp, teardownTmp);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_shared_overcommit);
    suite_add_tcase(s, tc);
    return s;
}
