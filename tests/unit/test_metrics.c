/*
 * The Prometheus text writer of vcpuplaced: families grouped with one HELP and TYPE each
 * whatever order samples come in, label values and HELP text escaped, numbers written the
 * way the format reads them, and the textfile replaced whole; the capacity gauges computed
 * again only when the ledger, the defaults or the vCPU counts changed, without the state
 * lock.
 */
#include "daemon/metrics.h"
#include "checkmain.h"
#include "rebalfix.h"

#include <check.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

START_TEST(test_grouping)
{
    g_autoptr(vpMetrics) m = vpMetricsNew();
    g_autofree char *text = NULL;

    vpMetricsDeclare(m, "a_ratio", "gauge", "A ratio");
    vpMetricsDeclare(m, "b_total", "counter", "B count");
    vpMetricsDeclare(m, "a_ratio", "counter", "declared again: ignored");
    vpMetricsAdd(m, "a_ratio", 0.5, "domain", "x", "vcpu", "0", NULL);
    vpMetricsAdd(m, "b_total", 3, "domain", "x", NULL);
    vpMetricsAdd(m, "a_ratio", 0.25, "domain", "y", "vcpu", "1", NULL);
    vpMetricsAdd(m, "b_total", 7, NULL);
    text = vpMetricsText(m);
    ck_assert_str_eq(text, "# HELP a_ratio A ratio\n"
                           "# TYPE a_ratio gauge\n"
                           "a_ratio{domain=\"x\",vcpu=\"0\"} 0.5\n"
                           "a_ratio{domain=\"y\",vcpu=\"1\"} 0.25\n"
                           "# HELP b_total B count\n"
                           "# TYPE b_total counter\n"
                           "b_total{domain=\"x\"} 3\n"
                           "b_total 7\n");
}
END_TEST

START_TEST(test_escaping)
{
    g_autoptr(vpMetrics) m = vpMetricsNew();
    g_autofree char *text = NULL;

    vpMetricsDeclare(m, "x", "gauge", "back\\slash and\nnewline \"quoted\"");
    vpMetricsAdd(m, "x", 1, "domain", "a\"b\\c\nd", NULL);
    text = vpMetricsText(m);
    ck_assert_str_eq(text, "# HELP x back\\\\slash and\\nnewline \"quoted\"\n"
                           "# TYPE x gauge\n"
                           "x{domain=\"a\\\"b\\\\c\\nd\"} 1\n");
}
END_TEST

START_TEST(test_values)
{
    g_autoptr(vpMetrics) m = vpMetricsNew();
    g_autofree char *text = NULL;

    vpMetricsDeclare(m, "v", "gauge", "values");
    vpMetricsAdd(m, "v", 12345678901.0, "k", "big", NULL);
    vpMetricsAdd(m, "v", 1.0 / 3, "k", "third", NULL);
    vpMetricsAdd(m, "v", NAN, "k", "nan", NULL);
    vpMetricsAdd(m, "v", INFINITY, "k", "inf", NULL);
    vpMetricsAdd(m, "v", -INFINITY, "k", "-inf", NULL);
    vpMetricsAdd(m, "v", 1.5e-7, "k", "small", NULL);
    text = vpMetricsText(m);
    ck_assert_msg(strstr(text, "v{k=\"big\"} 12345678901\n"), "%s", text);
    ck_assert_msg(strstr(text, "v{k=\"third\"} 0.333333\n"), "%s", text);
    ck_assert_msg(strstr(text, "v{k=\"nan\"} NaN\n"), "%s", text);
    ck_assert_msg(strstr(text, "v{k=\"inf\"} +Inf\n"), "%s", text);
    ck_assert_msg(strstr(text, "v{k=\"-inf\"} -Inf\n"), "%s", text);
    ck_assert_msg(strstr(text, "v{k=\"small\"} 1.5e-07\n"), "%s", text);
}
END_TEST

START_TEST(test_textfile)
{
    g_autofree char *dir = g_dir_make_tmp("vp-metrics-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "vcpuplace.prom", NULL);
    g_autofree char *back = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(GDir) d = NULL;
    struct stat st;

    ck_assert(vpMetricsWriteFile(path, "old 1\n", &err));
    ck_assert_msg(vpMetricsWriteFile(path, "new 2\n", &err), "%s", err ? err->message : "");
    ck_assert(g_file_get_contents(path, &back, NULL, NULL));
    ck_assert_str_eq(back, "new 2\n");
    ck_assert_int_eq(g_stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    /* nothing left beside it */
    d = g_dir_open(dir, 0, NULL);
    ck_assert_str_eq(g_dir_read_name(d), "vcpuplace.prom");
    ck_assert_ptr_null(g_dir_read_name(d));
    ck_assert_int_eq(g_unlink(path), 0);
    ck_assert_int_eq(g_rmdir(dir), 0);

    ck_assert(!vpMetricsWriteFile("/nonexistent-dir/x.prom", "x 1\n", &err));
}
END_TEST

static vpPlan *
onCpu(const char *name, int cpu)
{
    vpPlan *plan = vpPlanNew(name, 1);

    plan->vcpu_pu[0] = cpu;
    return plan;
}

/* How many 1-vCPU smt=isolate VMs the figures say fit on the host. */
static unsigned
isolateOnes(const vpCapacity *cap)
{
    for (guint i = 0; i < cap->nshapes; i++) {
        if (cap->shapes[i].vcpus == 1 && cap->shapes[i].smt == VP_SMT_ISOLATE)
            return cap->shapes[i].host;
    }
    ck_abort_msg("no 1-vCPU isolate shape");
    return 0;
}

/* The capacity gauges are computed again exactly when what they follow changed: the ledger
 * (each kind of change), the defaults, the vCPU counts; a collection that finds them all as
 * they were takes the figures it has, and a change that was refused changes nothing. */
START_TEST(test_capacity_cache)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 4, 2); /* CPU n's sibling: n + 4 */
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpLedger) copy = NULL;
    g_autoptr(vpCapacityCache) cache = vpCapacityCacheNew();
    g_autoptr(vpPlan) a = onCpu("a", 0), a_moved = onCpu("a", 1), b_on_a = onCpu("b", 1);
    g_autoptr(GError) err = NULL;
    vpPolicy defaults;
    const vpCapacity *cap;

    vpPolicyInitDefaults(&defaults);
#define GET(shapes) vpCapacityCacheGet(cache, topo, ledger, &defaults, shapes, NULL, NULL, &err)
    cap = GET("1,2");
    ck_assert_msg(cap, "%s", err ? err->message : "");
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 1);
    ck_assert_uint_eq(isolateOnes(cap), 4);
    ck_assert_ptr_eq(GET("1,2"), cap);
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 1);

    ck_assert(vpLedgerAdd(ledger, a, NULL));
    ck_assert_uint_eq(isolateOnes(GET("1,2")), 3);
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 2);
    GET("1,2");
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 2);

    ck_assert(vpLedgerReplace(ledger, a_moved, NULL));
    ck_assert_uint_eq(isolateOnes(GET("1,2")), 3);
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 3);
    ck_assert(!vpLedgerAdd(ledger, b_on_a, NULL));
    ck_assert(!vpLedgerRemove(ledger, "nobody"));
    GET("1,2");
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 3);
    ck_assert(vpLedgerRemove(ledger, "a"));
    ck_assert_uint_eq(isolateOnes(GET("1,2")), 4);
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 4);

    cap = GET("1,2,4");
    ck_assert_uint_eq(cap->nshapes, 3 * VP_SMT_LAST);
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 5);
    g_free(defaults.group);
    defaults.group = g_strdup("tenant");
    GET("1,2,4");
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 6);
    defaults.locality = VP_LOCALITY_NUMA;
    GET("1,2,4");
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 7);
    cap = GET("1,2,4");
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 7);

    /* Figures that cannot be computed leave the last ones in the cache. */
    ck_assert_ptr_null(GET("0"));
    ck_assert(g_error_matches(err, VP_ERROR, VP_ERROR_INVALID));
    g_clear_error(&err);
    ck_assert_ptr_eq(GET("1,2,4"), cap);
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 7);

    /* A ledger made anew (a reload's copy) is another ledger, even when it holds the same. */
    copy = vpLedgerCopy(ledger, topo, NULL);
    ck_assert_ptr_nonnull(
        vpCapacityCacheGet(cache, topo, copy, &defaults, "1,2,4", NULL, NULL, &err));
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 8);
#undef GET
    vpPolicyClear(&defaults);
}
END_TEST

/* The hook's reserves during a scrape: each takes the state lock, as the socket thread does. */
typedef struct {
    GMutex *lock;
    vpLedger *ledger;
    int reserved;
} vpBurst;

static gpointer
reserveBurst(gpointer data)
{
    vpBurst *b = data;

    for (int cpu = 0; cpu < 3; cpu++) {
        g_autofree char *name = g_strdup_printf("burst%d", cpu);
        g_autoptr(vpPlan) plan = onCpu(name, cpu);

        g_mutex_lock(b->lock);
        b->reserved += vpLedgerAdd(b->ledger, plan, NULL);
        g_mutex_unlock(b->lock);
    }
    return NULL;
}

/* A scrape's capacity placements run without the state lock: a burst of reserves made while
 * they run, each taking that lock, is done before the scrape takes the lock back to keep its
 * figures (were the lock held, the burst would never end and this test would hang). The
 * figures are those of the ledger when the scrape asked; the next scrape finds the ledger
 * changed, lets the lock go for its placements and holds it again when it returns. */
START_TEST(test_capacity_off_lock)
{
    g_autoptr(vpTopology) topo = vpFixTopology(1, 1, 1, 4, 2);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpCapacityCache) cache = vpCapacityCacheNew();
    g_autoptr(GError) err = NULL;
    GMutex lock;
    vpBurst burst = {&lock, ledger, 0};
    vpCapacityJob *job;
    GThread *thread;
    vpPolicy defaults;

    vpPolicyInitDefaults(&defaults);
    g_mutex_init(&lock);
    g_mutex_lock(&lock); /* as vcpuplaced's main thread holds it while it collects */
    job = vpCapacityCacheBegin(cache, topo, ledger, &defaults, "1,2", NULL, &err);
    ck_assert_msg(job, "%s", err ? err->message : "");
    g_mutex_unlock(&lock);
    thread = g_thread_new("reserves", reserveBurst, &burst);
    ck_assert_msg(vpCapacityJobRun(job, &err), "%s", err ? err->message : "");
    g_thread_join(thread);
    g_mutex_lock(&lock);
    ck_assert_int_eq(burst.reserved, 3);
    ck_assert_uint_eq(isolateOnes(vpCapacityCacheFinish(cache, job)), 4);

    ck_assert_uint_eq(
        isolateOnes(vpCapacityCacheGet(cache, topo, ledger, &defaults, "1,2", NULL, &lock, &err)),
        1);
    ck_assert_uint_eq(vpCapacityCacheComputations(cache), 2);
    ck_assert_ptr_null(vpCapacityCacheBegin(cache, topo, ledger, &defaults, "1,2", NULL, &err));
    ck_assert_ptr_null(err);
    g_mutex_unlock(&lock); /* fails (aborts) unless the scrape gave it back */
    g_mutex_clear(&lock);
    vpPolicyClear(&defaults);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");

    tcase_add_test(tc, test_grouping);
    tcase_add_test(tc, test_escaping);
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_textfile);
    tcase_add_test(tc, test_capacity_cache);
    tcase_add_test(tc, test_capacity_off_lock);
    suite_add_tcase(s, tc);
    return s;
}
