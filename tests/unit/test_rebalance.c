/*
 * The rebalancer where a situation changes between passes (a neighbour's trust group, a
 * vCPU chased by its own load), the application of moves, the configuration, and no move
 * ever breaking a domain's policy on random ledgers. Situations that are one set of
 * counter intervals are golden data: tests/golden/rebalance.
 */
#include "core/balance/rebalance.h"
#include "rebalfix.h"
#include "checkmain.h"

#include <check.h>
#include <string.h>

#define SEC VP_FIX_SEC

/* --- hand-made situations --- */

typedef struct {
    const char *domain;
    int vcpu;
    double run, wait, wakeups;
} Load;

/* Feeds n identical intervals; busy[os] < 0 leaves a CPU unmeasured. */
static void
feed(vpPressure *p, const vpLedger *ledger, const Load *loads, int nloads, const double *busy,
     int ncpus, int n)
{
    for (int k = 0; k < n; k++) {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();

        for (int i = 0; i < nloads; i++) {
            vpPressureSample s = {
                .domain = (char *)loads[i].domain,
                .vcpu = loads[i].vcpu,
                .interval_ns = SEC,
                .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES,
                .run_ns = loads[i].run * SEC,
                .wait_ns = loads[i].wait * SEC,
                .voluntary = loads[i].wakeups,
            };

            vpPressureInputAddVcpu(in, &s);
        }
        for (int c = 0; busy && c < ncpus; c++) {
            vpCpuSample cs = {c, SEC, busy[c] * SEC};

            if (busy[c] >= 0)
                vpPressureInputAddCpu(in, &cs);
        }
        vpPressureUpdate(p, ledger, in);
    }
}

/* 32 PUs: busy[] with the vCPU PUs at their run, the hot PU at 1, the rest near idle. */
static void
fillBusy(double *busy, int n, const vpLedger *ledger, const Load *loads, int nloads)
{
    for (int c = 0; c < n; c++)
        busy[c] = 0.01;
    for (int i = 0; i < nloads; i++) {
        const vpPlan *plan = vpLedgerLookup(ledger, loads[i].domain);

        busy[plan->vcpu_pu[loads[i].vcpu]] =
            loads[i].wait > 0.1 ? 1.0 : MIN(1.0, loads[i].run + 0.01);
    }
}

static GPtrArray *
notesNew(void)
{
    return g_ptr_array_new_with_free_func(g_free);
}

static void
printNotes(GPtrArray *notes)
{
    for (guint i = 0; i < notes->len; i++)
        g_print("  note: %s\n", (char *)g_ptr_array_index(notes, i));
}

START_TEST(test_spread_never_next_to_stranger)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 2, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = notesNew();
    const int a[] = {0}, b[] = {1};
    const Load loads[] = {{"a", 0, 0.5, 0.4, 300}, {"b", 0, 0.5, 0.01, 300}};
    double busy[4];

    vpFixAddPlan(ledger, vpFixPlan(topo, "a", "spread", "g1", a, 1, NULL, 0));
    vpFixAddPlan(ledger, vpFixPlan(topo, "b", "spread", "g2", b, 1, NULL, 0));
    fillBusy(busy, 4, ledger, loads, 2);
    feed(p, ledger, loads, 2, busy, 4, 6);
    moves = vpFixPass(rb, p, ledger, 6 * SEC, notes);
    printNotes(notes);
    /* CPU 3 is free and idle but next to b of another trust group; CPU 2 is next to the
     * hot CPU's host load */
    ck_assert_uint_eq(moves->len, 0);
    ck_assert(vpFixNotesHave(notes, "no idle target"));

    /* same trust group at the default coresched=vm: a cookie each, still strangers */
    vpLedgerRemove(ledger, "b");
    vpFixAddPlan(ledger, vpFixPlan(topo, "b", "spread", "g1", b, 1, NULL, 0));
    g_ptr_array_unref(moves);
    moves = vpFixPass(rb, p, ledger, 7 * SEC, NULL);
    ck_assert_uint_eq(moves->len, 0);

    /* same trust group with one cookie (coresched=group on both): allowed */
    vpLedgerRemove(ledger, "a");
    vpLedgerRemove(ledger, "b");
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "a", "spread", "g1", a, 1));
    vpFixAddPlan(ledger, vpFixGroupPlan(topo, "b", "spread", "g1", b, 1));
    g_ptr_array_unref(moves);
    moves = vpFixPass(rb, p, ledger, 8 * SEC, NULL);
    ck_assert_uint_eq(moves->len, 1);
    ck_assert_uint_eq(((vpMove *)g_ptr_array_index(moves, 0))->to, 3);
}
END_TEST

/* One vCPU that keeps waiting wherever it goes (open loop) on CPU 0 of 8 idle cores; CPU 0
 * turns idle once it has left. Returns the times (s) of its moves, checks their targets. */
static GArray *
chase(unsigned return_quiet, unsigned *returns)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 8, 1);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpRebalanceConfig rcfg;
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = NULL;
    g_autoptr(GPtrArray) notes = notesNew();
    const int cpus[] = {0};
    const Load loads[] = {{"v", 0, 0.5, 0.4, 300}};
    GArray *times = g_array_new(FALSE, FALSE, sizeof(int));
    double busy[8];

    vpRebalanceConfigInit(&rcfg);
    rcfg.return_quiet = return_quiet;
    rb = vpRebalancerNew(&rcfg);
    vpFixAddPlan(ledger, vpFixPlan(topo, "v", "spread", NULL, cpus, 1, NULL, 0));
    *returns = 0;
    for (int t = 1; t <= 300; t++) {
        g_autoptr(GPtrArray) m = NULL;

        fillBusy(busy, 8, ledger, loads, 1);
        feed(p, ledger, loads, 1, busy, 8, 1);
        g_ptr_array_set_size(notes, 0);
        m = vpFixPass(rb, p, ledger, t * SEC, notes);
        for (guint k = 0; k < m->len; k++) {
            const vpMove *mv = g_ptr_array_index(m, k);

            g_array_append_val(times, t);
            *returns += mv->to == 0;
        }
        if (!m->len && vpPressurePUHot(p, vpFixPU(topo, vpLedgerLookup(ledger, "v")->vcpu_pu[0])))
            ck_assert(vpFixNotesHave(notes, "moved recently and stays"));
    }
    ck_assert_uint_eq(vpRebalancerMoves(rb, "v", 0), times->len);
    vpRebalancerForgetDomain(rb, "v");
    ck_assert_uint_eq(vpRebalancerMoves(rb, "v", 0), 0);
    return times;
}

START_TEST(test_residency_and_memory)
{
    unsigned returns;
    GArray *t = chase(1000, &returns);

    /* hot after 5 intervals; then 60 s, then 120 s (backoff), then 240 s */
    ck_assert_uint_eq(t->len, 3);
    ck_assert_int_eq(g_array_index(t, int, 0), 5);
    ck_assert_int_eq(g_array_index(t, int, 1), 65);
    ck_assert_int_eq(g_array_index(t, int, 2), 185);
    /* CPU 0 is idle and the lowest whole idle core, yet never taken back: memory */
    ck_assert_uint_eq(returns, 0);
    g_array_free(t, TRUE);

    /* once the PU it left has been idle for return_quiet intervals, it may go back */
    t = chase(30, &returns);
    ck_assert_uint_eq(t->len, 3);
    ck_assert_uint_ge(returns, 1);
    g_array_free(t, TRUE);
}
END_TEST

START_TEST(test_apply_rejects_stale_move)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 4, 1);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(GPtrArray) moves = g_ptr_array_new_with_free_func((GDestroyNotify)vpMoveFree);
    g_autoptr(GError) err = NULL;
    vpMove *m = g_new0(vpMove, 1);
    const int a[] = {0}, b[] = {1};

    vpFixAddPlan(ledger, vpFixPlan(topo, "a", "spread", NULL, a, 1, NULL, 0));
    vpFixAddPlan(ledger, vpFixPlan(topo, "b", "spread", NULL, b, 1, NULL, 0));
    m->domain = g_strdup("a");
    m->vcpu = 0;
    m->from = 2; /* not where it is */
    m->to = 3;
    m->reason = g_strdup("test");
    g_ptr_array_add(moves, m);
    ck_assert(!vpRebalanceApply(ledger, moves, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "does not match the ledger"));
    g_clear_error(&err);

    /* onto a PU someone holds: the ledger refuses and nothing changes */
    m->from = 0;
    m->to = 1;
    ck_assert(!vpRebalanceApply(ledger, moves, &err));
    ck_assert_int_eq(vpLedgerLookup(ledger, "a")->vcpu_pu[0], 0);
    g_clear_error(&err);

    g_free(m->domain);
    m->domain = g_strdup("nobody");
    ck_assert(!vpRebalanceApply(ledger, moves, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "'nobody'"));
}
END_TEST

/* The values vcpuplaced.conf sets (plugin/conf reads the file). */
START_TEST(test_config)
{
    vpRebalanceConfig cfg;
    g_autoptr(GError) err = NULL;

    vpRebalanceConfigInit(&cfg);
    ck_assert(vpRebalanceConfigValidate(&cfg, NULL));
    cfg.max_moves = 0;
    ck_assert(!vpRebalanceConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "max_moves=0"));
    g_clear_error(&err);
    cfg.max_moves = 4;
    cfg.memory_ns = 10 * SEC;
    cfg.min_residency_ns = 20 * SEC;
    ck_assert(!vpRebalanceConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "memory=10s"));
    g_clear_error(&err);
    cfg.memory_ns = 300 * SEC;
    cfg.coupled_wakeups = 0;
    ck_assert(!vpRebalanceConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "coupled_wakeups=0"));
}
END_TEST

/* --- random ledgers: whatever the situation, a move keeps the policy --- */

static bool
coreHeldByOthers(const vpLedger *ledger, const vpTopology *topo, int c, const char *group,
                 bool strict)
{
    const vpCore *core = vpTopologyCore(topo, c);

    for (int i = 0; i < core->npus; i++) {
        vpOwner o = vpLedgerOwner(ledger, core->pus[i]);
        const char *g = o.domain ? vpLedgerLookup(ledger, o.domain)->policy.group : NULL;

        if (o.domain && (strict || !group || !g || strcmp(g, group) != 0))
            return true;
    }
    return false;
}

/* A plausible ledger built without the placer: whole cores for isolate/pack, free PUs on
 * cores without strangers for spread, any free PU for share. */
static void
randomLedger(GRand *r, const vpTopology *topo, vpLedger *ledger)
{
    static const char *smts[] = {"isolate", "pack", "spread", "share"};
    static const char *groups[] = {NULL, "g1", "g2"};
    int ncores = vpTopologyNCores(topo);
    int ndom = g_rand_int_range(r, 2, 9);

    for (int d = 0; d < ndom; d++) {
        g_autofree char *name = g_strdup_printf("vm%d", d);
        const char *smt = smts[g_rand_int_range(r, 0, 4)];
        const char *group = groups[g_rand_int_range(r, 0, 3)];
        unsigned want = g_rand_int_range(r, 1, 5);
        int cpus[16], res[16];
        unsigned n = 0, nres = 0;
        int start = g_rand_int_range(r, 0, ncores);
        vpPlan *plan;

        for (int k = 0; k < ncores && n < want; k++) {
            int c = (start + k) % ncores;
            const vpCore *core = vpTopologyCore(topo, c);
            bool whole = !coreHeldByOthers(ledger, topo, c, NULL, true);

            for (unsigned i = 0; i < n; i++)
                whole &= vpFixCoreOf(topo, cpus[i]) != c;
            if (!strcmp(smt, "isolate") || !strcmp(smt, "pack")) {
                if (!whole)
                    continue;
                for (int i = 0; i < core->npus; i++) {
                    unsigned os = vpTopologyPU(topo, core->pus[i])->os;

                    if ((!strcmp(smt, "pack") || i == 0) && n < want)
                        cpus[n++] = os;
                    else
                        res[nres++] = os;
                }
            } else {
                if (!strcmp(smt, "spread") && coreHeldByOthers(ledger, topo, c, group, false))
                    continue;
                for (int i = 0; i < core->npus && n < want; i++) {
                    unsigned os = vpTopologyPU(topo, core->pus[i])->os;
                    bool used = !vpLedgerPUFree(ledger, core->pus[i]);

                    for (unsigned j = 0; j < n; j++)
                        used |= cpus[j] == (int)os;
                    if (!used) {
                        cpus[n++] = os;
                        if (!strcmp(smt, "spread"))
                            break;
                    }
                }
            }
        }
        if (n == 0)
            continue;
        plan = vpFixPlan(topo, name, smt, group, cpus, n, res, nres);
        /* as the placer would: locality=l3 only for a domain within one L3 */
        if (plan->level == VP_LEVEL_L3 && g_rand_int_range(r, 0, 3) == 0)
            plan->policy.locality = VP_LOCALITY_L3;
        if (g_rand_int_range(r, 0, 10) == 0)
            plan->policy.rebalance = VP_REBALANCE_OFF;
        if (g_rand_int_range(r, 0, 10) == 0)
            plan->how = VP_HOW_PINNED;
        vpFixAddPlan(ledger, plan);
    }
}

START_TEST(test_random_ledgers_keep_policy)
{
    static const int shapes[][5] = {
        {1, 2, 2, 4, 2}, {2, 1, 2, 3, 2}, {1, 1, 2, 4, 1}, {1, 2, 1, 4, 4}, {1, 1, 1, 3, 2},
    };
    unsigned total = 0;

    for (int seed = 1; seed <= 300; seed++) {
        g_autoptr(GRand) r = g_rand_new_with_seed(seed);
        const int *s = shapes[seed % G_N_ELEMENTS(shapes)];
        g_autoptr(vpTopology) topo = vpFixTopology(s[0], s[1], s[2], s[3], s[4]);
        g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
        g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
        vpRebalanceConfig rcfg;
        g_autoptr(vpRebalancer) rb = NULL;
        g_autoptr(GPtrArray) names = NULL;
        int npus = vpTopologyNPUs(topo);
        g_autofree double *busy = g_new(double, npus);
        g_autoptr(GArray) loads = g_array_new(FALSE, FALSE, sizeof(Load));

        vpRebalanceConfigInit(&rcfg);
        rcfg.max_moves = 100;
        rb = vpRebalancerNew(&rcfg);
        randomLedger(r, topo, ledger);
        names = vpLedgerDomains(ledger);
        for (int c = 0; c < npus; c++)
            busy[c] = g_rand_boolean(r) ? 0.01 : 0.8;
        for (guint i = 0; i < names->len; i++) {
            const vpPlan *plan = vpLedgerLookup(ledger, g_ptr_array_index(names, i));
            double wake = g_rand_boolean(r) ? 3000 : 200;

            for (unsigned v = 0; v < plan->nvcpus; v++) {
                bool victim = g_rand_int_range(r, 0, 3) == 0;
                Load l = {g_intern_string(plan->domain), v, g_rand_double_range(r, 0.2, 0.9),
                          victim ? g_rand_double_range(r, 0.2, 0.6) : 0.01, wake};

                g_array_append_val(loads, l);
                busy[plan->vcpu_pu[v]] = victim ? 1.0 : l.run;
            }
        }
        for (int round = 0; round < 3; round++) {
            g_autoptr(GPtrArray) moves = NULL;

            feed(p, ledger, (Load *)loads->data, loads->len, busy, npus, 6);
            moves = vpFixPass(rb, p, ledger, (round + 1) * 100 * SEC, NULL);
            total += moves->len;
        }
    }
    g_print("random ledgers: %u moves checked\n", total);
    ck_assert_uint_gt(total, 100);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("rebalance");
    TCase *cases = tcase_create("cases");

    tcase_set_timeout(cases, 120);
    tcase_add_test(cases, test_spread_never_next_to_stranger);
    tcase_add_test(cases, test_residency_and_memory);
    tcase_add_test(cases, test_apply_rejects_stale_move);
    tcase_add_test(cases, test_config);
    tcase_add_test(cases, test_random_ledgers_keep_policy);
    suite_add_tcase(s, cases);
    return s;
}
