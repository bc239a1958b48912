/*
 * The pressure model: smoothing, persistence and hysteresis of hotspots, attribution of
 * vCPUs to the PUs the ledger pins them to, foreign co-running and forced idle per core,
 * the JSON lines format of recorded series (every recorded file parses; bad input is
 * refused naming field and value) and the configuration.
 */
#include "core/balance/pressure.h"
#include "checkmain.h"
#include "topo.h"

#include <check.h>
#include <gio/gio.h>
#include <math.h>
#include <string.h>

/* Two cores of two siblings numbered as on Intel: CPUs 0 and 2 on core 0, 1 and 3 on core 1. */
#define TWO_CORES_SMT2 "synthetic:pack:1 l3:1 core:2 pu:2(indexes=0,2,1,3)"

#define SEC 1000000000LL
#define EPS 1e-9

static void
addMember(vpLedger *ledger, const char *name, const char *group, vpCoresched coresched,
          const int *cpus, unsigned n)
{
    g_autoptr(vpPlan) plan = vpPlanNew(name, n);
    g_autoptr(GError) err = NULL;

    if (group) {
        plan->policy.group = g_strdup(group);
    }
    plan->policy.coresched = coresched;
    for (unsigned v = 0; v < n; v++)
        plan->vcpu_pu[v] = cpus[v];
    ck_assert_msg(vpLedgerAdd(ledger, plan, &err), "%s", err ? err->message : "");
}

static void
addDomain(vpLedger *ledger, const char *name, const char *group, const int *cpus, unsigned n)
{
    addMember(ledger, name, group, VP_CORESCHED_VM, cpus, n);
}

static void
addSample(vpPressureInput *in, const char *domain, int vcpu, double run, double wait,
          guint64 wakeups)
{
    vpPressureSample s = {
        .domain = (char *)domain,
        .vcpu = vcpu,
        .interval_ns = SEC,
        .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES,
        .run_ns = run * SEC,
        .wait_ns = wait * SEC,
        .voluntary = wakeups,
    };

    vpPressureInputAddVcpu(in, &s);
}

static void
addCpu(vpPressureInput *in, unsigned cpu, double busy)
{
    vpCpuSample c = {cpu, SEC, busy * SEC};

    vpPressureInputAddCpu(in, &c);
}

static void
step(vpPressure *p, const vpLedger *ledger, const char *domain, int vcpu, double run, double wait)
{
    g_autoptr(vpPressureInput) in = vpPressureInputNew();

    addSample(in, domain, vcpu, run, wait, 100);
    vpPressureUpdate(p, ledger, in);
}

START_TEST(test_smoothing)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig cfg;
    g_autoptr(vpPressure) p = NULL;
    const vpVcpuPressure *v;
    const int cpus[] = {0};

    vpPressureConfigInit(&cfg);
    cfg.alpha = 0.5;
    p = vpPressureNew(topo, &cfg);
    addDomain(ledger, "a", NULL, cpus, 1);

    step(p, ledger, "a", 0, 0.6, 0.4);
    v = vpPressureVcpu(p, "a", 0);
    ck_assert_ptr_nonnull(v);
    /* the first interval starts the average */
    ck_assert_double_eq_tol(v->wait, 0.4, EPS);
    ck_assert_double_eq_tol(v->run, 0.6, EPS);
    ck_assert_double_eq_tol(v->wakeups, 100, EPS);
    ck_assert_int_eq(v->pu, 0);
    step(p, ledger, "a", 0, 0.6, 0.0);
    v = vpPressureVcpu(p, "a", 0);
    ck_assert_double_eq_tol(v->wait, 0.2, EPS);
    ck_assert_double_eq_tol(v->last_wait, 0.0, EPS);
    ck_assert_uint_eq(v->intervals, 2);
    /* no CPU samples: the PU's busy time is its vCPU's run */
    ck_assert(!vpPressurePU(p, 0)->measured);
    ck_assert_double_eq_tol(vpPressurePU(p, 0)->busy, 0.6, EPS);
    ck_assert_double_eq_tol(vpPressurePU(p, 0)->wait, 0.2, EPS);
    ck_assert_uint_eq(vpPressureIntervals(p), 2);

    /* a sample without switch counts (degraded monitor) leaves the wakeup average alone */
    {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();
        vpPressureSample s = {.domain = "a", .interval_ns = SEC, .have = VP_HAVE_SCHEDSTAT};

        vpPressureInputAddVcpu(in, &s);
        vpPressureUpdate(p, ledger, in);
    }
    v = vpPressureVcpu(p, "a", 0);
    ck_assert_double_eq_tol(v->wakeups, 100, EPS);
    ck_assert_double_eq_tol(v->wait, 0.1, EPS);

    /* a vCPU that stops being reported is forgotten */
    {
        g_autoptr(vpPressureInput) empty = vpPressureInputNew();

        vpPressureUpdate(p, ledger, empty);
    }
    ck_assert_ptr_null(vpPressureVcpu(p, "a", 0));
    ck_assert_ptr_null(vpPressureDomain(p, "a"));
}
END_TEST

START_TEST(test_persistence_and_hysteresis)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig cfg;
    g_autoptr(vpPressure) p = NULL;
    const int cpus[] = {0};

    vpPressureConfigInit(&cfg);
    cfg.alpha = 1.0; /* no smoothing: the streak logic alone */
    cfg.persistence = 4;
    p = vpPressureNew(topo, &cfg);
    addDomain(ledger, "a", NULL, cpus, 1);

    for (int i = 1; i <= 3; i++) {
        step(p, ledger, "a", 0, 0.5, 0.3);
        ck_assert_uint_eq(vpPressurePU(p, 0)->hot_streak, i);
        ck_assert(!vpPressurePUHot(p, 0));
    }
    /* in between cool_wait and hot_wait: the count holds, neither grows nor restarts */
    step(p, ledger, "a", 0, 0.5, 0.07);
    ck_assert_uint_eq(vpPressurePU(p, 0)->hot_streak, 3);
    step(p, ledger, "a", 0, 0.5, 0.3);
    ck_assert(vpPressurePUHot(p, 0));
    /* below cool_wait: over */
    step(p, ledger, "a", 0, 0.5, 0.01);
    ck_assert_uint_eq(vpPressurePU(p, 0)->hot_streak, 0);
    ck_assert(!vpPressurePUHot(p, 0));
}
END_TEST

START_TEST(test_burst_echo_does_not_count)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    const int cpus[] = {0};
    unsigned most = 0;

    addDomain(ledger, "a", NULL, cpus, 1);
    for (int i = 0; i < 3; i++)
        step(p, ledger, "a", 0, 0.5, 0.0);
    /* a 2 s burst keeps the average above hot_wait for 4 s; only the 2 s it lasted count */
    step(p, ledger, "a", 0, 0.5, 0.4);
    step(p, ledger, "a", 0, 0.5, 0.4);
    for (int i = 0; i < 6; i++) {
        most = MAX(most, vpPressurePU(p, 0)->hot_streak);
        step(p, ledger, "a", 0, 0.5, 0.0);
    }
    ck_assert_uint_eq(most, 2);
    ck_assert_uint_eq(vpPressurePU(p, 0)->hot_streak, 0);
}
END_TEST

START_TEST(test_idle_and_other_load)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:2 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    const int cpus[] = {0};

    addDomain(ledger, "a", NULL, cpus, 1);
    for (int i = 0; i < 5; i++) {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();

        addSample(in, "a", 0, 0.5, 0.3, 100);
        addCpu(in, 0, 1.0);
        addCpu(in, 1, 0.02);
        addCpu(in, 99, 0.5); /* a CPU the topology lacks: ignored */
        vpPressureUpdate(p, ledger, in);
    }
    ck_assert(vpPressurePU(p, 0)->measured);
    ck_assert_double_eq_tol(vpPressurePU(p, 0)->busy, 1.0, EPS);
    ck_assert_double_eq_tol(vpPressurePU(p, 0)->other, 0.5, EPS);
    ck_assert_uint_eq(vpPressurePU(p, 0)->nvcpus, 1);
    ck_assert(vpPressurePUHot(p, 0));
    ck_assert(vpPressurePUIdle(p, 1));
    ck_assert(!vpPressurePUIdle(p, 0));

    vpPressureForgetPU(p, 1);
    ck_assert(!vpPressurePUIdle(p, 1));
    vpPressureForgetPU(p, 0);
    ck_assert(!vpPressurePUHot(p, 0));
    vpPressureForgetVcpu(p, "a", 0);
    ck_assert_uint_eq(vpPressureVcpu(p, "a", 0)->intervals, 0);
}
END_TEST

/* Two siblings (CPU 0 and CPU 2) run domains a and b at 80% and 50%, their trust groups
 * (NULL: none) at coresched. */
static double
corunOf(const char *group_a, const char *group_b, vpCoresched coresched, bool same_domain,
        double *vcpu_corun)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_CORES_SMT2, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig cfg;
    g_autoptr(vpPressure) p = NULL;
    g_autoptr(vpPressureInput) in = vpPressureInputNew();
    const int a[] = {0}, b[] = {2}, both[] = {0, 2};

    vpPressureConfigInit(&cfg);
    cfg.alpha = 1.0;
    p = vpPressureNew(topo, &cfg);
    if (same_domain) {
        addMember(ledger, "a", group_a, coresched, both, 2);
        addSample(in, "a", 0, 0.8, 0, 0);
        addSample(in, "a", 1, 0.5, 0, 0);
    } else {
        addMember(ledger, "a", group_a, coresched, a, 1);
        addMember(ledger, "b", group_b, coresched, b, 1);
        addSample(in, "a", 0, 0.8, 0, 0);
        addSample(in, "b", 0, 0.5, 0, 0);
    }
    addCpu(in, 0, 0.8);
    addCpu(in, 2, 0.5);
    vpPressureUpdate(p, ledger, in);
    *vcpu_corun = vpPressureVcpu(p, "a", 0)->corun_foreign;
    return vpPressureCore(p, 0)->corun_foreign;
}

START_TEST(test_foreign_corun)
{
    double v;

    ck_assert_double_eq_tol(corunOf(NULL, NULL, VP_CORESCHED_VM, false, &v), 0.4, EPS);
    ck_assert_double_eq_tol(v, 0.4, EPS);
    ck_assert_double_eq_tol(corunOf("g1", "g2", VP_CORESCHED_GROUP, false, &v), 0.4, EPS);
    /* group mates at coresched=vm carry a cookie each: foreign to each other */
    ck_assert_double_eq_tol(corunOf("g1", "g1", VP_CORESCHED_VM, false, &v), 0.4, EPS);
    ck_assert_double_eq_tol(v, 0.4, EPS);
    /* one cookie group, one group without cookies, or one domain: not foreign */
    ck_assert_double_eq_tol(corunOf("g1", "g1", VP_CORESCHED_GROUP, false, &v), 0.0, EPS);
    ck_assert_double_eq_tol(v, 0.0, EPS);
    ck_assert_double_eq_tol(corunOf("g1", "g1", VP_CORESCHED_OFF, false, &v), 0.0, EPS);
    ck_assert_double_eq_tol(corunOf(NULL, NULL, VP_CORESCHED_VM, true, &v), 0.0, EPS);
}
END_TEST

START_TEST(test_host_load_next_door_and_forceidle)
{
    g_autoptr(vpTopology) topo = vpTestTopology(TWO_CORES_SMT2, NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    vpPressureConfig cfg;
    g_autoptr(vpPressure) p = NULL;
    const int a[] = {0};

    vpPressureConfigInit(&cfg);
    cfg.persistence = 3;
    p = vpPressureNew(topo, &cfg);
    addDomain(ledger, "a", NULL, a, 1);
    for (int i = 0; i < 3; i++) {
        g_autoptr(vpPressureInput) in = vpPressureInputNew();
        vpPressureSample s = {
            .domain = "a",
            .interval_ns = SEC,
            .have = VP_HAVE_SCHEDSTAT | VP_HAVE_FORCEIDLE,
            .run_ns = SEC / 2,
            .forceidle_ns = SEC / 10,
        };

        vpPressureInputAddVcpu(in, &s);
        addCpu(in, 0, 0.5);
        addCpu(in, 2, 0.6); /* a host task on the free sibling */
        vpPressureUpdate(p, ledger, in);
    }
    ck_assert_double_eq_tol(vpPressureCore(p, 0)->corun_foreign, 0.3, EPS);
    ck_assert_double_eq_tol(vpPressureCore(p, 0)->forceidle, 0.1, EPS);
    ck_assert_double_eq_tol(vpPressureVcpu(p, "a", 0)->forceidle, 0.1, EPS);
    ck_assert_double_eq_tol(vpPressureCore(p, 0)->busy, 1.1, EPS);
    ck_assert(vpPressureCoreContended(p, 0));
    ck_assert(!vpPressureCoreContended(p, 1));
}
END_TEST

START_TEST(test_domain_figures)
{
    g_autoptr(vpTopology) topo = vpTestTopology("synthetic:pack:1 l3:1 core:4 pu:1", NULL);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpPressureInput) in = vpPressureInputNew();
    g_autoptr(GPtrArray) all = NULL;
    const vpDomainPressure *d;
    const int cpus[] = {1, 2};

    addDomain(ledger, "b", NULL, cpus, 2);
    addSample(in, "b", 1, 0.5, 0.2, 3000);
    addSample(in, "b", 0, 0.5, 0.0, 1000);
    addSample(in, "a", 0, 0.5, 0.1, 10); /* not in the ledger: scored, on no PU */
    vpPressureUpdate(p, ledger, in);
    d = vpPressureDomain(p, "b");
    ck_assert_uint_eq(d->nvcpus, 2);
    ck_assert_double_eq_tol(d->wakeups, 2000, EPS);
    ck_assert_double_eq_tol(d->wait, 0.1, EPS);
    ck_assert_int_eq(vpPressureVcpu(p, "a", 0)->pu, -1);
    all = vpPressureVcpus(p);
    ck_assert_uint_eq(all->len, 3);
    ck_assert_str_eq(((vpVcpuPressure *)g_ptr_array_index(all, 0))->domain, "a");
    ck_assert_int_eq(((vpVcpuPressure *)g_ptr_array_index(all, 1))->vcpu, 0);
    ck_assert_int_eq(((vpVcpuPressure *)g_ptr_array_index(all, 2))->vcpu, 1);
}
END_TEST

/* --- JSON lines --- */

static vpPressureInput *
parse(const char *text, GError **error)
{
    g_autoptr(JsonNode) node = json_from_string(text, NULL);

    ck_assert_ptr_nonnull(node);
    return vpPressureInputFromJson(node, error);
}

static void
refused(const char *text, const char *needle)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(vpPressureInput) in = parse(text, &err);

    ck_assert_ptr_null(in);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err->message, needle), "'%s' lacks '%s'", err->message, needle);
}

START_TEST(test_json_round_trip)
{
    g_autoptr(vpPressureInput) in = vpPressureInputNew();
    g_autoptr(vpPressureInput) back = NULL;
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(GError) err = NULL;
    vpPressureSample s = {
        .domain = "web",
        .vcpu = 3,
        .interval_ns = SEC,
        .have = VP_HAVE_SCHEDSTAT | VP_HAVE_MIGRATIONS | VP_HAVE_FORCEIDLE,
        .run_ns = 500,
        .wait_ns = 70,
        .migrations = 2,
        .forceidle_ns = 9,
    };
    const vpPressureSample *r;

    vpPressureInputAddVcpu(in, &s);
    addCpu(in, 7, 0.25);
    node = vpPressureInputToJson(in);
    back = vpPressureInputFromJson(node, &err);
    ck_assert_msg(back, "%s", err ? err->message : "");
    ck_assert_uint_eq(back->vcpus->len, 1);
    r = &g_array_index(back->vcpus, vpPressureSample, 0);
    ck_assert_str_eq(r->domain, "web");
    ck_assert_int_eq(r->vcpu, 3);
    ck_assert_uint_eq(r->have, s.have);
    ck_assert_uint_eq(r->run_ns, 500);
    ck_assert_uint_eq(r->wait_ns, 70);
    ck_assert_uint_eq(r->migrations, 2);
    ck_assert_uint_eq(r->forceidle_ns, 9);
    ck_assert_uint_eq(g_array_index(back->cpus, vpCpuSample, 0).cpu, 7);
    ck_assert_uint_eq(g_array_index(back->cpus, vpCpuSample, 0).busy_ns, SEC / 4);
}
END_TEST

START_TEST(test_json_refused)
{
    refused("[]", "not an object");
    refused("{\"vcpus\":[]}", "'cpus' is missing");
    refused("{\"vcpus\":[],\"cpus\":[],\"extra\":1}", "unknown key 'extra' in interval");
    refused("{\"vcpus\":[{\"vcpu\":0,\"interval_ns\":1}],\"cpus\":[]}",
            "vcpus[0].domain is missing");
    refused("{\"vcpus\":[{\"domain\":\"a\",\"vcpu\":-1,\"interval_ns\":1}],\"cpus\":[]}",
            "vcpus[0].vcpu=-1 is outside");
    refused("{\"vcpus\":[{\"domain\":\"a\",\"vcpu\":0,\"interval_ns\":0}],\"cpus\":[]}",
            "vcpus[0].interval_ns=0");
    refused("{\"vcpus\":[{\"domain\":\"a\",\"vcpu\":0,\"interval_ns\":1.5}],\"cpus\":[]}",
            "vcpus[0].interval_ns is not an integer");
    refused("{\"vcpus\":[{\"domain\":\"a\",\"vcpu\":0,\"interval_ns\":100,\"run_ns\":5}],"
            "\"cpus\":[]}",
            "vcpus[0] has run_ns but not wait_ns");
    refused("{\"vcpus\":[{\"domain\":\"a\",\"vcpu\":0,\"interval_ns\":100,\"run_ns\":5,"
            "\"wait_ns\":201}],\"cpus\":[]}",
            "vcpus[0].wait_ns=201 is outside [0, 200]");
    refused("{\"vcpus\":[{\"domain\":\"a\",\"vcpu\":0,\"interval_ns\":100,\"wakeups\":5}],"
            "\"cpus\":[]}",
            "unknown key 'wakeups' in vcpus[0]");
    refused("{\"vcpus\":[],\"cpus\":[{\"cpu\":1,\"interval_ns\":10,\"busy_ns\":30}]}",
            "cpus[0].busy_ns=30 is outside [0, 20]");
    refused("{\"vcpus\":[],\"cpus\":[{\"cpu\":1,\"busy_ns\":3}]}",
            "cpus[0].interval_ns is missing");
}
END_TEST

static char *
dataPath(const char *name)
{
    const char *top = g_getenv("VP_TOPDIR");
    g_autofree char *here = g_path_get_dirname(__FILE__);

    if (top)
        return g_build_filename(top, "tests", "unit", "data", "pressure", name, NULL);
    return g_build_filename(here, "data", "pressure", name, NULL);
}

/* Every recorded series: a header line, then intervals the parser accepts, every vCPU of
 * the header's plans in each. */
START_TEST(test_recorded_series_parse)
{
    static const char *const files[] = {"hotspot.jsonl.gz", "balanced.jsonl.gz",
                                        "oscillating.jsonl.gz"};

    for (gsize f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autofree char *path = dataPath(files[f]);
        g_autoptr(GFile) file = g_file_new_for_path(path);
        g_autoptr(GError) err = NULL;
        g_autoptr(GFileInputStream) raw = g_file_read(file, NULL, &err);
        g_autoptr(GZlibDecompressor) gz = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
        g_autoptr(GInputStream) conv = NULL;
        g_autoptr(GDataInputStream) in = NULL;
        guint lines = 0, nvcpus = 0;
        char *line;

        ck_assert_msg(raw, "%s: %s", path, err ? err->message : "");
        conv = g_converter_input_stream_new(G_INPUT_STREAM(raw), G_CONVERTER(gz));
        in = g_data_input_stream_new(conv);
        while ((line = g_data_input_stream_read_line(in, NULL, NULL, &err))) {
            g_autoptr(JsonNode) node = json_from_string(line, NULL);

            g_free(line);
            ck_assert_ptr_nonnull(node);
            if (lines++ == 0) {
                JsonArray *plans =
                    json_object_get_array_member(json_node_get_object(node), "plans");

                for (guint i = 0; i < json_array_get_length(plans); i++)
                    nvcpus += json_array_get_length(json_object_get_array_member(
                        json_array_get_object_element(plans, i), "vcpus"));
            } else {
                g_autoptr(vpPressureInput) interval = vpPressureInputFromJson(node, &err);

                ck_assert_msg(interval, "%s line %u: %s", files[f], lines, err->message);
                ck_assert_uint_eq(interval->vcpus->len, nvcpus);
            }
        }
        ck_assert_msg(!err, "%s: %s", path, err ? err->message : "");
        ck_assert_uint_ge(lines, 121);
    }
}
END_TEST

/* The values vcpuplaced.conf sets (plugin/conf reads the file): each field's range, and
 * cool_wait not above hot_wait. */
START_TEST(test_config)
{
    vpPressureConfig cfg;
    g_autoptr(GError) err = NULL;

    vpPressureConfigInit(&cfg);
    ck_assert(vpPressureConfigValidate(&cfg, NULL));
    cfg.alpha = 0.5;
    cfg.hot_wait = 0.2;
    cfg.cool_wait = 0.1;
    cfg.persistence = 8;
    ck_assert(vpPressureConfigValidate(&cfg, NULL));

    cfg.alpha = 0;
    ck_assert(!vpPressureConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "alpha=0 is outside (0, 1]"));
    g_clear_error(&err);
    cfg.alpha = 0.5;
    cfg.cool_wait = 0.3;
    ck_assert(!vpPressureConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "cool_wait=0.3 is above hot_wait=0.2"));
    g_clear_error(&err);
    cfg.cool_wait = 0.1;
    cfg.persistence = 0;
    ck_assert(!vpPressureConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "persistence=0"));
    g_clear_error(&err);
    cfg.persistence = 8;
    cfg.hot_wait = NAN;
    ck_assert(!vpPressureConfigValidate(&cfg, &err));
    ck_assert_ptr_nonnull(strstr(err->message, "hot_wait"));
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("pressure");
    TCase *model = tcase_create("model");
    TCase *json = tcase_create("json");

    tcase_add_test(model, test_smoothing);
    tcase_add_test(model, test_persistence_and_hysteresis);
    tcase_add_test(model, test_burst_echo_does_not_count);
    tcase_add_test(model, test_idle_and_other_load);
    tcase_add_test(model, test_foreign_corun);
    tcase_add_test(model, test_host_load_next_door_and_forceidle);
    tcase_add_test(model, test_domain_figures);
    tcase_add_test(model, test_config);
    suite_add_tcase(s, model);

    tcase_set_timeout(json, 60);
    tcase_add_test(json, test_json_round_trip);
    tcase_add_test(json, test_json_refused);
    tcase_add_test(json, test_recorded_series_parse);
    suite_add_tcase(s, json);
    return s;
}
