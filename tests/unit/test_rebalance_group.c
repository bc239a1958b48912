/*
 * Re-expansion of spread domains that compaction moved beside their trust group (a "group
 * move": onto a free sibling of a core a domain of the same one-cookie group runs on). Over
 * many passes of the daemon's loop (vpFixPass: plan, apply, ledger and policy check,
 * commit), with the real placer making the group move where the situation allows: the
 * domain goes back onto a whole core once one frees, only one of its own node, memory nodes
 * and cpuset, after the pass's hotspots, within its max_moves, and never again after.
 */
#include "core/place/compact.h"
#include "core/balance/rebalance.h"
#include "rebalfix.h"
#include "checkmain.h"

#include <check.h>
#include <string.h>

#define SEC VP_FIX_SEC

/* n one-second intervals: every vCPU in the ledger runs 5% and barely waits, its CPU is 6%
 * busy, every other CPU 1%: nothing is hot, free CPUs are idle; but the vCPUs of domain hot
 * (when not NULL) wait 40% on a CPU 100% busy, wherever they are. */
static void
tick(vpPressure *p, const vpLedger *ledger, int n, const char *hot)
{
    const vpTopology *topo = vpLedgerTopology(ledger);

    for (int k = 0; k < n; k++) {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();
        g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
        g_autofree double *busy = g_new(double, vpTopologyNPUs(topo));

        for (int c = 0; c < vpTopologyNPUs(topo); c++)
            busy[c] = 0.01;
        for (guint i = 0; i < names->len; i++) {
            const vpPlan *plan = vpLedgerLookup(ledger, g_ptr_array_index(names, i));

            bool waits = hot && strcmp(plan->domain, hot) == 0;

            for (unsigned v = 0; v < plan->nvcpus; v++) {
                vpPressureSample s = {
                    .domain = plan->domain,
                    .vcpu = v,
                    .interval_ns = SEC,
                    .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES,
                    .run_ns = (waits ? 0.5 : 0.05) * SEC,
                    .wait_ns = (waits ? 0.4 : 0.01) * SEC,
                    .voluntary = 100,
                };

                vpPressureInputAddVcpu(in, &s);
                busy[plan->vcpu_pu[v]] = waits ? 1.0 : 0.06;
            }
        }
        for (int c = 0; c < vpTopologyNPUs(topo); c++) {
            vpCpuSample cs = {vpTopologyPU(topo, c)->os, SEC,
                              busy[vpTopologyPU(topo, c)->os] * SEC};

            vpPressureInputAddCpu(in, &cs);
        }
        vpPressureUpdate(p, ledger, in);
    }
}

/* Passes from t0 to t1 (s), one interval each (hot: as tick's); the moves of all of them, in
 * order. */
static GPtrArray *
runHot(vpRebalancer *rb, vpPressure *p, vpLedger *ledger, int t0, int t1, GPtrArray *notes,
       const char *hot)
{
    GPtrArray *all = g_ptr_array_new_with_free_func((GDestroyNotify)vpMoveFree);

    for (int t = t0; t <= t1; t++) {
        g_autoptr(GPtrArray) m = NULL;

        tick(p, ledger, 1, hot);
        if (notes)
            g_ptr_array_set_size(notes, 0);
        m = vpFixPass(rb, p, ledger, (gint64)t * SEC, notes);
        while (m->len)
            g_ptr_array_add(all, g_ptr_array_steal_index(m, 0));
    }
    return all;
}

static GPtrArray *
run(vpRebalancer *rb, vpPressure *p, vpLedger *ledger, int t0, int t1, GPtrArray *notes)
{
    return runHot(rb, p, ledger, t0, t1, notes, NULL);
}

/* Every PU of the core of CPU os is held by domain or free (and, with whole, all but os
 * free). */
static void
assertAlone(const vpLedger *ledger, unsigned os, const char *domain)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    const vpCore *core = vpTopologyCore(topo, vpFixCoreOf(topo, os));

    for (int i = 0; i < core->npus; i++) {
        vpOwner o = vpLedgerOwner(ledger, core->pus[i]);

        ck_assert_msg(!o.domain || strcmp(o.domain, domain) == 0, "CPU %u: %s beside %s",
                      vpTopologyPU(topo, core->pus[i])->os, o.domain, domain);
    }
}

/* 5 cores (CPU c and c+5 siblings). a and b of group tg (a group cookie) and c alone hold
 * cores 0-2, h (isolate) cores 3 and 4. An isolate start finds no whole core: compaction
 * moves a or b beside the other (a group move) and the newcomer takes the core it left.
 * Then h stops: two whole idle cores. One group mate goes onto one of them, in one pass, the
 * other stays (it has its core to itself now) and nothing moves again in 200 s. */
START_TEST(test_group_move_reexpands)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 5, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(vpRequest) req = vpRequestNew("iso", 1);
    g_autoptr(vpPlan) admitted = NULL;
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) err = NULL;
    vpCompactConfig ccfg;
    const int a[] = {0}, b[] = {1}, c[] = {2}, h[] = {3, 4}, hres[] = {8, 9};
    const vpMove *m;
    const char *stayed;

    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "a", "spread", "tg", a, 1));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "b", "spread", "tg", b, 1));
    vpFixAddPlan(ledger, vpFixPlan(topo, "c", "spread", NULL, c, 1, NULL, 0));
    vpFixAddPlan(ledger, vpFixPlan(topo, "h", "isolate", NULL, h, 2, hres, 2));
    req->policy.smt = VP_SMT_ISOLATE;
    vpCompactConfigInit(&ccfg);
    admitted = vpPlaceCompact(topo, ledger, req, &ccfg, &err);
    ck_assert_msg(admitted, "%s", err ? err->message : "");
    ck_assert_uint_eq(admitted->nmoves, 1);
    ck_assert_msg(strstr(admitted->moves[0].reason, "a sibling of a core its trust group runs on"),
                  "%s", admitted->moves[0].reason);
    ck_assert(vpCompactApply(ledger, admitted, &err));
    ck_assert_msg(vpLedgerAdd(ledger, admitted, &err), "%s", err ? err->message : "");

    /* no whole idle core: the squeezed pair stays */
    moves = run(rb, p, ledger, 1, 20, NULL);
    ck_assert_uint_eq(moves->len, 0);
    g_ptr_array_unref(moves);

    vpLedgerRemove(ledger, "h");
    moves = run(rb, p, ledger, 21, 21, notes);
    ck_assert_uint_eq(moves->len, 1);
    m = g_ptr_array_index(moves, 0);
    ck_assert_msg(strcmp(m->domain, "a") == 0 || strcmp(m->domain, "b") == 0, "%s", m->domain);
    ck_assert_msg(m->to == 3 || m->to == 8, "to CPU %u", m->to);
    ck_assert_msg(strstr(m->reason, "smt=spread re-expands") &&
                      strstr(m->reason, "of its trust group 'tg'") &&
                      strstr(m->reason, "an idle whole core"),
                  "%s", m->reason);
    stayed = strcmp(m->domain, "a") == 0 ? "b" : "a";
    assertAlone(ledger, m->to, m->domain);
    assertAlone(ledger, vpLedgerLookup(ledger, stayed)->vcpu_pu[0], stayed);
    assertAlone(ledger, vpLedgerLookup(ledger, "iso")->vcpu_pu[0], "iso");
    ck_assert_uint_eq(vpRebalancerMoves(rb, m->domain, 0), 1);
    g_ptr_array_unref(moves);

    /* core 4 stays whole and idle, nobody is squeezed any more: nothing moves */
    moves = run(rb, p, ledger, 22, 221, notes);
    ck_assert_uint_eq(moves->len, 0);
    ck_assert_uint_eq(vpRebalancerMoves(rb, stayed, 0), 0);
    ck_assert(vpLedgerCheck(ledger, &err));
}
END_TEST

/* Replaces domain's plan by a grouped one on cpus, with memory on the given nodes (-1 ends)
 * and a cpuset (NULL: none). */
static void
regroup(vpLedger *ledger, const char *domain, const int *cpus, unsigned n, const int *nodes,
        const char *cpuset)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    vpPlan *plan = vpFixGroupPlan(topo, domain, "spread", "tg", cpus, n);
    g_autoptr(GError) err = NULL;

    for (int i = 0; nodes && nodes[i] >= 0; i++)
        vpPlanAddMemory(plan, nodes[i], 1ULL << 30);
    if (cpuset) {
        plan->cpuset = vpCpuListParse("cpuset", cpuset, &err);
        ck_assert_msg(plan->cpuset, "%s", err ? err->message : "");
    }
    vpLedgerRemove(ledger, domain);
    vpFixAddPlan(ledger, plan);
}

/* Two nodes of 2 cores (node 0: CPUs 0, 1, 4, 5; node 1: 2, 3, 6, 7). The ledger a group
 * move leaves: b on CPU 4 beside a on CPU 0; i (isolate) holds core 1, x core 2. The one
 * whole idle core, 3, is on node 1: off b's memory (held where its vCPUs are), then, with
 * its memory on both nodes, still off the node the group move kept it on. Once i stops,
 * core 1 of node 0 takes it. */
START_TEST(test_group_reexpand_stays_on_node)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 2, 1, 2, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    const int a[] = {0}, b[] = {4}, i[] = {1}, ires[] = {5}, x[] = {2}, both[] = {0, 1, -1};
    const vpMove *m;
    const char *stayed;

    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "a", "spread", "tg", a, 1));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "b", "spread", "tg", b, 1));
    vpFixAddPlan(ledger, vpFixPlan(topo, "i", "isolate", NULL, i, 1, ires, 1));
    vpFixAddPlan(ledger, vpFixPlan(topo, "x", "spread", NULL, x, 1, NULL, 0));
    moves = run(rb, p, ledger, 1, 20, notes);
    ck_assert_uint_eq(moves->len, 0);
    ck_assert(vpFixNotesHave(notes, "vCPU 0 of 'b' stays beside its trust group: the whole idle "
                                    "cores are off its node or memory nodes"));
    g_ptr_array_unref(moves);

    regroup(ledger, "a", a, 1, both, NULL);
    regroup(ledger, "b", b, 1, both, NULL);
    moves = run(rb, p, ledger, 21, 40, notes);
    ck_assert_uint_eq(moves->len, 0);
    ck_assert(vpFixNotesHave(notes, "vCPU 0 of 'b' stays beside its trust group"));
    g_ptr_array_unref(moves);

    vpLedgerRemove(ledger, "i");
    moves = run(rb, p, ledger, 41, 140, NULL);
    ck_assert_uint_eq(moves->len, 1);
    m = g_ptr_array_index(moves, 0);
    ck_assert_msg(m->to == 1 || m->to == 5, "to CPU %u", m->to);
    ck_assert_msg(strstr(m->reason, "in the same L3"), "%s", m->reason);
    stayed = strcmp(m->domain, "a") == 0 ? "b" : "a";
    assertAlone(ledger, vpLedgerLookup(ledger, stayed)->vcpu_pu[0], stayed);
    assertAlone(ledger, m->to, m->domain);
}
END_TEST

/* 3 cores (CPU c and c+3 siblings): a on CPU 0, b beside it on CPU 3 (a group move's
 * ledger); pk, a pack domain of the same group cookie, on CPU 1 with its sibling 4 left free
 * for the group; core 2 whole and idle but outside a's and b's cpuset 0-1,3-4. Nothing
 * moves: core 1 is pk's (the placer's snapshot keeps it for the pack domain and its group),
 * core 2 is outside the cpusets. Once b's cpuset takes in core 2, b (not a) goes there. */
START_TEST(test_group_reexpand_keeps_cpuset)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 3, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GError) err = NULL;
    const int a[] = {0}, b[] = {3}, pk[] = {1};
    vpPlan *pack = vpFixPlan(topo, "pk", "pack", "tg", pk, 1, NULL, 0);
    const vpMove *m;

    ck_assert(vpPolicySetAttr(&pack->policy, "coresched", "group", &err));
    vpFixAddPlan(ledger, pack);
    regroup(ledger, "a", a, 1, NULL, "0-1,3-4");
    regroup(ledger, "b", b, 1, NULL, "0-1,3-4");
    moves = run(rb, p, ledger, 1, 30, NULL);
    ck_assert_uint_eq(moves->len, 0);
    g_ptr_array_unref(moves);

    regroup(ledger, "b", b, 1, NULL, "0-5");
    moves = run(rb, p, ledger, 31, 130, NULL);
    ck_assert_uint_eq(moves->len, 1);
    m = g_ptr_array_index(moves, 0);
    ck_assert_str_eq(m->domain, "b");
    ck_assert_msg(m->to == 2 || m->to == 5, "to CPU %u", m->to);
    ck_assert_int_eq(vpLedgerLookup(ledger, "a")->vcpu_pu[0], 0);
    ck_assert_int_eq(vpLedgerLookup(ledger, "pk")->vcpu_pu[0], 1);
    ck_assert(vpLedgerPUFree(ledger, vpFixPU(topo, 4)));
}
END_TEST

/* One node, two L3s of 2 cores (L3 0: CPUs 0, 1, 4, 5; L3 1: 2, 3, 6, 7). a's vCPU 0 runs
 * on core 0, its vCPU 1 was moved beside z on core 2: of the whole idle cores 1 and 3 it
 * takes core 1, in the L3 of its own vCPU 0, not core 3 beside where it was. */
START_TEST(test_group_reexpand_goes_home)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 2, 2, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    const int a[] = {0, 6}, z[] = {2};
    const vpMove *m;

    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "a", "spread", "tg", a, 2));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "z", "spread", "tg", z, 1));
    moves = run(rb, p, ledger, 1, 100, NULL);
    ck_assert_uint_eq(moves->len, 1);
    m = g_ptr_array_index(moves, 0);
    ck_assert_str_eq(m->domain, "a");
    ck_assert_uint_eq(m->vcpu, 1);
    ck_assert_msg(m->to == 1 || m->to == 5, "to CPU %u", m->to);
    ck_assert_msg(strstr(m->reason, "shares a core with vCPU 0 of 'z' of its trust group 'tg'"),
                  "%s", m->reason);
}
END_TEST

/* 4 cores (CPU c and c+4 siblings): a and b of group tg on core 0 (a group move's ledger),
 * h on CPU 1 waits 40% all along, x holds core 2; core 3 is the one whole idle core. The
 * hotspot goes first and takes it; the pair stays in that pass (core 1 is being left, not
 * whole and idle yet), and re-expands onto core 1 once it has been idle for the
 * persistence. */
START_TEST(test_group_reexpand_after_hotspots)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 4, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    const int a[] = {0}, b[] = {4}, h[] = {1}, x[] = {2};
    int hot_at = -1, back_at = -1;

    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "a", "spread", "tg", a, 1));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "b", "spread", "tg", b, 1));
    vpFixAddPlan(ledger, vpFixPlan(topo, "h", "spread", NULL, h, 1, NULL, 0));
    vpFixAddPlan(ledger, vpFixPlan(topo, "x", "spread", NULL, x, 1, NULL, 0));
    for (int t = 1; t <= 40; t++) {
        g_autoptr(GPtrArray) m = runHot(rb, p, ledger, t, t, NULL, "h");
        const vpMove *mv = m->len ? g_ptr_array_index(m, 0) : NULL;

        ck_assert_uint_le(m->len, 1);
        if (!mv)
            continue;
        if (hot_at < 0) {
            hot_at = t;
            ck_assert_str_eq(mv->domain, "h");
            ck_assert_msg(mv->to == 3 || mv->to == 7, "to CPU %u", mv->to);
        } else {
            ck_assert_msg(back_at < 0, "another move at t=%d: %s", t, mv->reason);
            back_at = t;
            ck_assert_msg(strstr(mv->reason, "re-expands") && (mv->to == 1 || mv->to == 5), "%s",
                          mv->reason);
        }
    }
    ck_assert_int_gt(hot_at, 0);
    ck_assert_int_gt(back_at, hot_at);
}
END_TEST

/* max_moves 1, two squeezed pairs of two groups (a, b on core 0; c, d on core 1), three
 * whole idle cores: one pair re-expands per pass, the other says it waits for a later pass
 * and goes in the next one; then nothing moves for 100 s. */
START_TEST(test_group_reexpand_rate_limited)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 6, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    vpRebalanceConfig rcfg;
    const int a[] = {0}, b[] = {6}, c[] = {1}, d[] = {7}, i[] = {2}, ires[] = {8};
    int first = -1, second = -1;

    vpRebalanceConfigInit(&rcfg);
    rcfg.max_moves = 1;
    rb = vpRebalancerNew(&rcfg);
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "a", "spread", "tg", a, 1));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "b", "spread", "tg", b, 1));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "c", "spread", "tg2", c, 1));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "d", "spread", "tg2", d, 1));
    vpFixAddPlan(ledger, vpFixPlan(topo, "i", "isolate", NULL, i, 1, ires, 1));
    for (int t = 1; t <= 140; t++) {
        g_autoptr(GPtrArray) m = run(rb, p, ledger, t, t, notes);

        ck_assert_uint_le(m->len, 1);
        if (!m->len)
            continue;
        ck_assert_msg(second < 0, "a third move at t=%d", t);
        if (first < 0) {
            first = t;
            ck_assert_str_eq(((vpMove *)g_ptr_array_index(m, 0))->domain, "a");
            ck_assert(vpFixNotesHave(notes, "of 'c' re-expands in a later pass: 1 moves per pass"));
        } else {
            second = t;
            ck_assert_str_eq(((vpMove *)g_ptr_array_index(m, 0))->domain, "c");
        }
    }
    ck_assert_int_gt(first, 0);
    ck_assert_int_eq(second, first + 1);
    assertAlone(ledger, vpLedgerLookup(ledger, "a")->vcpu_pu[0], "a");
    assertAlone(ledger, vpLedgerLookup(ledger, "b")->vcpu_pu[0], "b");
    assertAlone(ledger, vpLedgerLookup(ledger, "c")->vcpu_pu[0], "c");
    assertAlone(ledger, vpLedgerLookup(ledger, "d")->vcpu_pu[0], "d");
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("rebalance_group");
    TCase *cases = tcase_create("cases");

    tcase_set_timeout(cases, 120);
    tcase_add_test(cases, test_group_move_reexpands);
    tcase_add_test(cases, test_group_reexpand_stays_on_node);
    tcase_add_test(cases, test_group_reexpand_keeps_cpuset);
    tcase_add_test(cases, test_group_reexpand_goes_home);
    tcase_add_test(cases, test_group_reexpand_after_hotspots);
    tcase_add_test(cases, test_group_reexpand_rate_limited);
    suite_add_tcase(s, cases);
    return s;
}
