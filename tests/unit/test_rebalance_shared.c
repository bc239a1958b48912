/*
 * The rebalancer and PUs time-shared by overcommitted smt=share domains (the placer puts
 * them there when nothing else is free and unmet=degrade allows it): every holder of a hot
 * shared PU is a candidate, one of them moves to a PU that has become free and idle, the
 * ledger shows them apart and no longer overcommitted, and a steady load afterwards moves
 * nothing.
 */
#include "core/balance/rebalance.h"
#include "checkmain.h"
#include "topo.h"

#include <check.h>
#include <string.h>

#define SEC 1000000000LL

/* 2 cores, no SMT: this machine's shape. host_cpus limits what is usable. */
/* A one-vCPU smt=share unmet=degrade plan on cpu; overcommit when it time-shares. */
static vpPlan *
sharePlan(const char *domain, int cpu, bool overcommit, const char *rebalance)
{
    vpPlan *plan = vpPlanNew(domain, 1);
    g_autoptr(GError) err = NULL;

    ck_assert(vpPolicySetAttr(&plan->policy, "smt", "share", &err));
    ck_assert(vpPolicySetAttr(&plan->policy, "unmet", "degrade", &err));
    ck_assert(vpPolicySetAttr(&plan->policy, "rebalance", rebalance, &err));
    plan->vcpu_pu[0] = cpu;
    hwloc_bitmap_set(plan->emulator, cpu);
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
    if (overcommit) {
        plan->overcommit = true;
        plan->degraded = true;
        plan->degraded_reason = g_strdup_printf("smt=share overcommitted: CPUs %d are time-shared "
                                                "with other smt=share domains (no free PU left)",
                                                cpu);
    }
    return plan;
}

static void
add(vpLedger *ledger, vpPlan *plan)
{
    g_autoptr(GError) err = NULL;

    ck_assert_msg(vpLedgerAdd(ledger, plan, &err), "%s", err ? err->message : "");
    vpPlanFree(plan);
}

/* One second: each named vCPU runs run and waits wait; CPU busy figures as given. */
static vpPressureInput *
interval(const char *const *domains, const double *run, const double *wait, int n, double busy0,
         double busy1)
{
    vpPressureInput *in = vpPressureInputNew();

    for (int i = 0; i < n; i++) {
        vpPressureSample s = {
            .domain = (char *)domains[i],
            .vcpu = 0,
            .interval_ns = SEC,
            .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES,
            .run_ns = run[i] * SEC,
            .wait_ns = wait[i] * SEC,
            .voluntary = 5,
        };

        vpPressureInputAddVcpu(in, &s);
    }
    vpPressureInputAddCpu(in, &(vpCpuSample){0, SEC, busy0 * SEC});
    vpPressureInputAddCpu(in, &(vpCpuSample){1, SEC, busy1 * SEC});
    return in;
}

static const char *const both[] = {"a", "b"};

/* Both on CPU 0, each getting half of it; CPU 1 idle. */
static void
feedShared(vpPressure *p, const vpLedger *ledger, int intervals)
{
    static const double run[] = {0.5, 0.5}, wait[] = {0.5, 0.5};

    for (int i = 0; i < intervals; i++) {
        g_autoptr(vpPressureInput) in = interval(both, run, wait, 2, 1.0, 0.02);

        vpPressureUpdate(p, ledger, in);
    }
}

static GPtrArray *
plan(const vpRebalancer *rb, const vpPressure *p, const vpLedger *ledger, gint64 now,
     GPtrArray *notes)
{
    return vpRebalancePlan(rb, p, ledger, now, notes);
}

static bool
notesSay(GPtrArray *notes, const char *text)
{
    for (guint i = 0; i < notes->len; i++) {
        if (strstr(g_ptr_array_index(notes, i), text))
            return true;
    }
    return false;
}

START_TEST(test_shared_hotspot_moved_apart)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig pcfg;
    g_autoptr(vpPressure) p = NULL;
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) early = NULL;
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GError) err = NULL;
    const vpMove *m;
    const vpPlan *pa, *pb;

    vpPressureConfigInit(&pcfg);
    p = vpPressureNew(topo, &pcfg);
    add(ledger, sharePlan("a", 0, false, "auto"));
    add(ledger, sharePlan("b", 0, true, "auto"));
    ck_assert_uint_eq(vpLedgerNOwners(ledger, 0), 2);

    /* not yet: the hotspot must last the persistence */
    feedShared(p, ledger, pcfg.persistence - 1);
    early = plan(rb, p, ledger, 100 * SEC, NULL);
    ck_assert_uint_eq(early->len, 0);

    feedShared(p, ledger, 1);
    moves = plan(rb, p, ledger, 101 * SEC, NULL);
    ck_assert_uint_eq(moves->len, 1);
    m = g_ptr_array_index(moves, 0);
    ck_assert_uint_eq(m->from, 0);
    ck_assert_uint_eq(m->to, 1);
    ck_assert_msg(strstr(m->reason, "time-shared by 2 vCPUs"), "reason: %s", m->reason);

    ck_assert_msg(vpRebalanceApply(ledger, moves, &err), "%s", err ? err->message : "");
    ck_assert_msg(vpLedgerCheck(ledger, &err), "%s", err ? err->message : "");
    ck_assert_uint_eq(vpLedgerNOwners(ledger, 0), 1);
    ck_assert_uint_eq(vpLedgerNOwners(ledger, 1), 1);
    pa = vpLedgerLookup(ledger, "a");
    pb = vpLedgerLookup(ledger, "b");
    ck_assert_int_ne(pa->vcpu_pu[0], pb->vcpu_pu[0]);
    /* nobody time-shares any more: neither is overcommitted or degraded for it */
    ck_assert(!pa->overcommit && !pb->overcommit);
    ck_assert(!pb->degraded);
    ck_assert_ptr_null(pb->degraded_reason);
    /* the emulator followed the vCPU it floated with */
    ck_assert(hwloc_bitmap_isset(vpLedgerLookup(ledger, m->domain)->emulator, 1));
    vpRebalanceCommit(rb, p, topo, moves, 101 * SEC);
    ck_assert_uint_eq(vpRebalancerMoves(rb, m->domain, 0), 1);
}
END_TEST

/* After the separation, ten minutes of each vCPU alone on a busy CPU (a little wait from
 * host noise) move nothing: there is no free PU, and neither PU is hot. */
START_TEST(test_separated_steady_no_moves)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig pcfg;
    g_autoptr(vpPressure) p = NULL;
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GError) err = NULL;
    static const double run[] = {0.97, 0.95};
    guint later = 0;

    vpPressureConfigInit(&pcfg);
    p = vpPressureNew(topo, &pcfg);
    add(ledger, sharePlan("a", 0, false, "auto"));
    add(ledger, sharePlan("b", 0, true, "auto"));
    feedShared(p, ledger, pcfg.persistence);
    moves = plan(rb, p, ledger, 10 * SEC, NULL);
    ck_assert_uint_eq(moves->len, 1);
    ck_assert(vpRebalanceApply(ledger, moves, &err));
    vpRebalanceCommit(rb, p, topo, moves, 10 * SEC);

    for (int t = 11; t < 611; t++) {
        /* noise: every seventh second a burst of host load on CPU 0 */
        double wait[] = {t % 7 ? 0.02 : 0.12, t % 7 ? 0.03 : 0.15};
        g_autoptr(vpPressureInput) in = interval(both, run, wait, 2, 1.0, 1.0);
        g_autoptr(GPtrArray) again = NULL;

        vpPressureUpdate(p, ledger, in);
        again = plan(rb, p, ledger, t * SEC, NULL);
        later += again->len;
    }
    ck_assert_uint_eq(later, 0);
}
END_TEST

/* The first holder may not move (rebalance=off): the other one does. */
START_TEST(test_other_holder_moves)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig pcfg;
    g_autoptr(vpPressure) p = NULL;
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) moves = NULL;
    const vpMove *m;

    vpPressureConfigInit(&pcfg);
    p = vpPressureNew(topo, &pcfg);
    add(ledger, sharePlan("a", 0, false, "off"));
    add(ledger, sharePlan("b", 0, true, "auto"));
    feedShared(p, ledger, pcfg.persistence);
    moves = plan(rb, p, ledger, 10 * SEC, notes);
    ck_assert_uint_eq(moves->len, 1);
    m = g_ptr_array_index(moves, 0);
    ck_assert_str_eq(m->domain, "b");
    ck_assert(notesSay(notes, "'a' stays: its domain says rebalance=off"));
}
END_TEST

/* CPU 1 outside host_cpus: both stay, and the pass says why. */
START_TEST(test_no_usable_target)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", "0");
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig pcfg;
    g_autoptr(vpPressure) p = NULL;
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) moves = NULL;

    vpPressureConfigInit(&pcfg);
    p = vpPressureNew(topo, &pcfg);
    add(ledger, sharePlan("a", 0, false, "auto"));
    add(ledger, sharePlan("b", 0, true, "auto"));
    feedShared(p, ledger, 2 * pcfg.persistence);
    moves = plan(rb, p, ledger, 10 * SEC, notes);
    ck_assert_uint_eq(moves->len, 0);
    ck_assert(notesSay(notes, "vCPU 0 of 'a' (smt=share) stays: no idle target"));
    ck_assert(notesSay(notes, "vCPU 0 of 'b' (smt=share) stays: no idle target"));
}
END_TEST

/* A move that leaves a PU still shared keeps the overcommit of those who still share it. */
START_TEST(test_still_shared_stays_overcommitted)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig pcfg;
    g_autoptr(vpPressure) p = NULL;
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GError) err = NULL;
    static const char *const three[] = {"a", "b", "c"};
    static const double run[] = {0.33, 0.33, 0.33}, wait[] = {0.66, 0.66, 0.66};
    const vpMove *m;
    unsigned overcommitted = 0;

    vpPressureConfigInit(&pcfg);
    p = vpPressureNew(topo, &pcfg);
    add(ledger, sharePlan("a", 0, false, "auto"));
    add(ledger, sharePlan("b", 0, true, "auto"));
    add(ledger, sharePlan("c", 0, true, "auto"));
    for (unsigned i = 0; i < pcfg.persistence; i++) {
        g_autoptr(vpPressureInput) in = interval(three, run, wait, 3, 1.0, 0.0);

        vpPressureUpdate(p, ledger, in);
    }
    moves = plan(rb, p, ledger, 10 * SEC, NULL);
    ck_assert_uint_eq(moves->len, 1);
    m = g_ptr_array_index(moves, 0);
    ck_assert(vpRebalanceApply(ledger, moves, &err));
    ck_assert(vpLedgerCheck(ledger, &err));
    ck_assert_uint_eq(vpLedgerNOwners(ledger, 0), 2);
    ck_assert(!vpLedgerLookup(ledger, m->domain)->overcommit);
    for (int i = 0; i < 3; i++)
        overcommitted += vpLedgerLookup(ledger, three[i])->overcommit;
    /* of the two left on CPU 0, the overcommitted ones stay so */
    ck_assert_uint_ge(overcommitted, 1);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("rebalance_shared");
    TCase *tc = tcase_create("shared");

    tcase_add_test(tc, test_shared_hotspot_moved_apart);
    tcase_add_test(tc, test_separated_steady_no_moves);
    tcase_add_test(tc, test_other_holder_moves);
    tcase_add_test(tc, test_no_usable_target);
    tcase_add_test(tc, test_still_shared_stays_overcommitted);
    suite_add_tcase(s, tc);
    return s;
}
