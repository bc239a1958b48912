/*
 * Live pins against a plan: the reconcile's questions answered on plain sets, as libvirt's
 * adapter would fill them in.
 */
#include "core/model/livepins.h"

#include "checkmain.h"

#include <check.h>

/* Live pins from CPU lists, one per vCPU ("" is an empty set), and an emulator list
 * (NULL: the driver cannot say). */
static vpLivePins *
livePins(const char *const *vcpus, unsigned n, const char *emulator)
{
    vpLivePins *pins = vpLivePinsNew(n);
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(hwloc_bitmap_list_sscanf(pins->vcpu[i], vcpus[i]), 0);
    if (emulator) {
        pins->emulator = hwloc_bitmap_alloc();
        ck_assert_int_eq(hwloc_bitmap_list_sscanf(pins->emulator, emulator), 0);
    }
    return pins;
}

static vpPlan *
planOf(const int *cpus, unsigned n, const char *emulator)
{
    vpPlan *plan = vpPlanNew("web", n);
    for (unsigned i = 0; i < n; i++)
        plan->vcpu_pu[i] = cpus[i];
    if (emulator)
        ck_assert_int_eq(hwloc_bitmap_list_sscanf(plan->emulator, emulator), 0);
    return plan;
}

START_TEST(test_diff)
{
    g_autoptr(vpPlan) plan = planOf((const int[]){2, 3, -1}, 3, "0-1");
    g_autoptr(vpLivePins) same = livePins((const char *[]){"2", "3", "2-3"}, 3, "0-1");
    ck_assert_ptr_null(vpLivePinsDiff(same, plan));
    ck_assert(!vpLivePinsVcpusDiffer(same, plan));
    /* a vCPU the placer could not place floats over its domain's CPUs, not everyone's */
    g_autoptr(vpLivePins) loose = livePins((const char *[]){"2", "3", "0-7"}, 3, "0-1");
    g_autofree char *l = vpLivePinsDiff(loose, plan);
    ck_assert_str_eq(l, "vCPU 2 is pinned to 0-7, planned 2-3");
    /* one libvirt ran anywhere when the plan was adopted stays so */
    plan->how = VP_HOW_ADOPTED;
    ck_assert_ptr_null(vpLivePinsDiff(loose, plan));
    plan->how = VP_HOW_PLACED;

    g_autoptr(vpLivePins) wide = livePins((const char *[]){"2", "0-3", "5"}, 3, "0-1");
    g_autofree char *w = vpLivePinsDiff(wide, plan);
    ck_assert_str_eq(w, "vCPU 1 is pinned to 0-3, planned 3");
    ck_assert(vpLivePinsVcpusDiffer(wide, plan));

    g_autoptr(vpLivePins) moved = livePins((const char *[]){"2", "4", "5"}, 3, "0-1");
    g_autofree char *mv = vpLivePinsDiff(moved, plan);
    ck_assert_str_eq(mv, "vCPU 1 is pinned to 4, planned 3");
    ck_assert(vpLivePinsVcpusDiffer(moved, plan));

    g_autoptr(vpLivePins) fewer = livePins((const char *[]){"2"}, 1, "0-1");
    g_autofree char *f = vpLivePinsDiff(fewer, plan);
    ck_assert_str_eq(f, "vCPU 1 is planned but libvirt reports only 1 vCPU");
    /* the vCPUs both know of agree: no move */
    ck_assert(!vpLivePinsVcpusDiffer(fewer, plan));

    g_autoptr(vpLivePins) emu = livePins((const char *[]){"2", "3", "2-3"}, 3, "0-7");
    g_autofree char *e = vpLivePinsDiff(emu, plan);
    ck_assert_str_eq(e, "emulator is pinned to 0-7, planned 0-1");
    ck_assert(!vpLivePinsVcpusDiffer(emu, plan));

    /* a driver that cannot say where the emulator is: not compared */
    g_autoptr(vpLivePins) noemu = livePins((const char *[]){"2", "3", "2-3"}, 3, NULL);
    ck_assert_ptr_null(vpLivePinsDiff(noemu, plan));
}
END_TEST

START_TEST(test_all_single)
{
    g_autoptr(vpLivePins) none = vpLivePinsNew(0);
    ck_assert(!vpLivePinsAllSingle(none));
    g_autoptr(vpLivePins) single = livePins((const char *[]){"5", "1"}, 2, NULL);
    ck_assert(vpLivePinsAllSingle(single));
    g_autoptr(vpLivePins) mixed = livePins((const char *[]){"5", "1-2"}, 2, NULL);
    ck_assert(!vpLivePinsAllSingle(mixed));
    g_autoptr(vpLivePins) empty = livePins((const char *[]){"5", ""}, 2, NULL);
    ck_assert(!vpLivePinsAllSingle(empty));
}
END_TEST

START_TEST(test_to_plan)
{
    g_autoptr(vpLivePins) live = livePins((const char *[]){"5", "0-3", "7"}, 3, "0-1");
    vpPolicy policy;
    vpPolicyInitDefaults(&policy);
    policy.smt = VP_SMT_ISOLATE;
    policy.group = g_strdup("tenant-a");
    g_autoptr(vpPlan) plan = vpLivePinsToPlan(live, "web", &policy);
    vpPolicyClear(&policy);

    ck_assert_str_eq(plan->domain, "web");
    ck_assert_int_eq(plan->how, VP_HOW_ADOPTED);
    ck_assert_uint_eq(plan->nvcpus, 3);
    ck_assert_int_eq(plan->vcpu_pu[0], 5);
    ck_assert_int_eq(plan->vcpu_pu[1], -1);
    ck_assert_int_eq(plan->vcpu_pu[2], 7);
    g_autofree char *emu = vpCpuListFormat(plan->emulator);
    ck_assert_str_eq(emu, "0-1");
    ck_assert_int_eq(plan->policy.smt, VP_SMT_ISOLATE);
    ck_assert_str_eq(plan->policy.group, "tenant-a");
    ck_assert_int_eq(plan->level, VP_LEVEL_HOST);
    ck_assert_int_eq(plan->level_index, -1);
    /* what was adopted is what libvirt shows, as far as placed vCPUs and emulator go */
    ck_assert_ptr_null(vpLivePinsDiff(live, plan));
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("livepins");
    TCase *tc = tcase_create("livepins");
    tcase_add_test(tc, test_diff);
    tcase_add_test(tc, test_all_single);
    tcase_add_test(tc, test_to_plan);
    suite_add_tcase(s, tc);
    return s;
}
