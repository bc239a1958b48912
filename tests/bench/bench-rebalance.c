/*
 * One rebalance pass over 2000 vCPUs: the pressure update of an interval (2000 vCPU
 * samples plus the host CPUs) and vpRebalancePlan() on the state it leaves, median and
 * p99 over many repetitions (target for the pass: under 1 ms).
 *
 * Two hosts. The 2x EPYC 7451 (96 PUs; ../shared/topologies, else the same shape as an
 * hwloc synthetic string, and the output says so) can pin only so many vCPUs: its ledger
 * holds mixed-policy domains on all cores but 6 (left idle as targets), a fifth of their
 * vCPUs hot, and the rest of the 2000 vCPUs belong to domains vcpuplace does not pin
 * (scored, on no PU). A synthetic host of 3072 PUs then pins all 2000. Writes bench-rebalance.json
 * into the results directory (argument, else $VP_BENCH_RESULTS, else the current directory). Not a
 * test: nothing here passes or fails on time.
 */
#include "core/balance/rebalance.h"
#include "host/hwtopo.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NVCPUS 2000
#define SEC 1000000000LL
#define PLAN_REPS 2000
#define UPDATE_REPS 300

typedef struct {
    char *domain;
    int vcpu;
    bool hot;
} Load;

static double
nowUs(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cmpDouble(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static vpTopology *
load(const char *source, const char *fallback, char **used)
{
    g_autoptr(GError) err = NULL;
    vpTopology *topo = NULL;

    if (source && g_file_test(source, G_FILE_TEST_EXISTS)) {
        topo = vpHwtopoLoad(source, NULL, NULL, &err);
        *used = g_path_get_basename(source);
    } else {
        topo = vpHwtopoLoad(fallback, NULL, NULL, &err);
        *used = g_strdup_printf("%s%s", fallback,
                                source ? " (../shared/topologies absent: same shape)" : "");
    }
    if (!topo) {
        fprintf(stderr, "bench-rebalance: %s\n", err->message);
        exit(1);
    }
    return topo;
}

/* Whole cores are taken in order by domains of seeded sizes and policies until the pinned
 * vCPUs reach want or only `spare` whole cores are left idle. Returns vCPUs pinned. */
static int
fill(const vpTopology *topo, vpLedger *ledger, GRand *r, int want, int spare, GArray *loads)
{
    static const vpSmt smts[] = {VP_SMT_SPREAD, VP_SMT_PACK, VP_SMT_SHARE, VP_SMT_ISOLATE};
    int ncores = vpTopologyNCores(topo), core = 0, pinned = 0, d = 0;

    while (pinned < want && ncores - core > spare) {
        vpSmt smt = smts[g_rand_int_range(r, 0, G_N_ELEMENTS(smts))];
        int size = g_rand_int_range(r, 1, 5) * 2;
        g_autofree char *name = g_strdup_printf("vm%d", d++);
        g_autoptr(vpPlan) plan = NULL;
        int v = 0;

        size = MIN(size, want - pinned);
        plan = vpPlanNew(name, size);
        plan->policy.smt = smt;
        while (v < size && ncores - core > spare) {
            const vpCore *c = vpTopologyCore(topo, core++);

            for (int i = 0; i < c->npus; i++) {
                unsigned os = vpTopologyPU(topo, c->pus[i])->os;
                bool take = v < size && (i == 0 || smt == VP_SMT_PACK || smt == VP_SMT_SHARE);

                if (take)
                    plan->vcpu_pu[v++] = os;
                else if (smt == VP_SMT_ISOLATE || smt == VP_SMT_PACK)
                    hwloc_bitmap_set(plan->reserved, os);
            }
        }
        plan->nvcpus = v;
        if (!v || !vpLedgerAdd(ledger, plan, NULL))
            continue;
        for (int i = 0; i < v; i++) {
            Load l = {g_strdup(name), i, g_rand_int_range(r, 0, 5) == 0};

            g_array_append_val(loads, l);
        }
        pinned += v;
    }
    return pinned;
}

/* Domains of 8 vCPUs the ledger does not pin, up to NVCPUS in all. */
static void
floating(vpLedger *ledger, GArray *loads)
{
    for (int d = 0; loads->len < NVCPUS; d++) {
        g_autofree char *name = g_strdup_printf("float%d", d);
        g_autoptr(vpPlan) plan = vpPlanNew(name, 8);

        plan->policy.smt = VP_SMT_SHARE;
        vpLedgerAdd(ledger, plan, NULL);
        for (int i = 0; i < 8 && loads->len < NVCPUS; i++) {
            Load l = {g_strdup(name), i, false};

            g_array_append_val(loads, l);
        }
    }
}

static vpPressureInput *
interval(const vpTopology *topo, const vpLedger *ledger, GArray *loads, GRand *r)
{
    vpPressureInput *in = vpPressureInputNew();
    int npus = vpTopologyNPUs(topo);
    g_autofree double *busy = g_new(double, npus);

    for (int i = 0; i < npus; i++)
        busy[i] = 0.01;
    for (guint i = 0; i < loads->len; i++) {
        const Load *l = &g_array_index(loads, Load, i);
        const vpPlan *plan = vpLedgerLookup(ledger, l->domain);
        double run = g_rand_double_range(r, 0.3, 0.8);
        vpPressureSample s = {
            .domain = l->domain,
            .vcpu = l->vcpu,
            .interval_ns = SEC,
            .have = VP_HAVE_SCHEDSTAT | VP_HAVE_SWITCHES | VP_HAVE_MIGRATIONS,
            .run_ns = run * SEC,
            .wait_ns = (l->hot ? 0.3 : 0.01) * SEC,
            .voluntary = g_rand_int_range(r, 100, 2000),
            .involuntary = l->hot ? 250 : 5,
        };

        vpPressureInputAddVcpu(in, &s);
        if (plan->vcpu_pu[l->vcpu] >= 0)
            busy[vpTopologyPUByOS(topo, plan->vcpu_pu[l->vcpu])] = l->hot ? 1.0 : run;
    }
    for (int i = 0; i < npus; i++) {
        vpCpuSample c = {vpTopologyPU(topo, i)->os, SEC, busy[i] * SEC};

        vpPressureInputAddCpu(in, &c);
    }
    return in;
}

static void
member(JsonBuilder *b, const char *name, double v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_double_value(b, v);
}

static void
run(JsonBuilder *b, const char *label, vpTopology *topo, const char *source, int want_pinned,
    int spare)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(7451);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    g_autoptr(GArray) loads = g_array_new(FALSE, FALSE, sizeof(Load));
    g_autoptr(vpPressure) p = vpPressureNew(topo, NULL);
    g_autoptr(vpRebalancer) rb = vpRebalancerNew(NULL);
    g_autoptr(vpPressureInput) in = NULL;
    g_autoptr(GPtrArray) moves = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    static double tu[UPDATE_REPS], tp[PLAN_REPS];
    int pinned = fill(topo, ledger, r, want_pinned, spare, loads);
    guint hot = 0;
    int held = 0;
    g_autoptr(GPtrArray) names = NULL;
    double t0;

    floating(ledger, loads);
    names = vpLedgerDomains(ledger);
    for (guint i = 0; i < names->len; i++) {
        g_autoptr(vpBitmap) h = vpPlanHeld(vpLedgerLookup(ledger, g_ptr_array_index(names, i)));

        held += hwloc_bitmap_weight(h);
    }
    in = interval(topo, ledger, loads, r);
    for (guint i = 0; i < loads->len; i++)
        hot += g_array_index(loads, Load, i).hot;
    /* past the persistence, so that hotspots are declared */
    for (int i = 0; i < 10; i++)
        vpPressureUpdate(p, ledger, in);
    for (int i = 0; i < UPDATE_REPS; i++) {
        t0 = nowUs();
        vpPressureUpdate(p, ledger, in);
        tu[i] = nowUs() - t0;
    }
    for (int i = 0; i < PLAN_REPS; i++) {
        g_autoptr(GPtrArray) m = NULL;

        t0 = nowUs();
        m = vpRebalancePlan(rb, p, ledger, 100 * SEC, NULL);
        tp[i] = nowUs() - t0;
    }
    moves = vpRebalancePlan(rb, p, ledger, 100 * SEC, notes);
    qsort(tu, UPDATE_REPS, sizeof(double), cmpDouble);
    qsort(tp, PLAN_REPS, sizeof(double), cmpDouble);

    printf("%s: %s, %d PUs (%d held), %u vCPUs (%d pinned, %u hot), %u moves + %u notes per "
           "pass\n",
           label, source, vpTopologyNPUs(topo), held, loads->len, pinned, hot, moves->len,
           notes->len);
    printf("  pressure update: median %.1f us, p99 %.1f us\n", tu[UPDATE_REPS / 2],
           tu[UPDATE_REPS * 99 / 100]);
    printf("  rebalance pass:  median %.1f us, p99 %.1f us (target < 1000 us)\n", tp[PLAN_REPS / 2],
           tp[PLAN_REPS * 99 / 100]);

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "host");
    json_builder_add_string_value(b, label);
    json_builder_set_member_name(b, "topology");
    json_builder_add_string_value(b, source);
    json_builder_set_member_name(b, "pus");
    json_builder_add_int_value(b, vpTopologyNPUs(topo));
    json_builder_set_member_name(b, "pus_held");
    json_builder_add_int_value(b, held);
    json_builder_set_member_name(b, "vcpus");
    json_builder_add_int_value(b, loads->len);
    json_builder_set_member_name(b, "pinned");
    json_builder_add_int_value(b, pinned);
    json_builder_set_member_name(b, "hot");
    json_builder_add_int_value(b, hot);
    json_builder_set_member_name(b, "moves_per_pass");
    json_builder_add_int_value(b, moves->len);
    member(b, "update_median_us", tu[UPDATE_REPS / 2]);
    member(b, "update_p99_us", tu[UPDATE_REPS * 99 / 100]);
    member(b, "pass_median_us", tp[PLAN_REPS / 2]);
    member(b, "pass_p99_us", tp[PLAN_REPS * 99 / 100]);
    member(b, "pass_target_us", 1000);
    json_builder_end_object(b);

    for (guint i = 0; i < loads->len; i++)
        g_free(g_array_index(loads, Load, i).domain);
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1                       ? argv[1]
                      : g_getenv("VP_BENCH_RESULTS") ? g_getenv("VP_BENCH_RESULTS")
                                                     : ".";
    const char *shared = g_getenv("VP_SHARED_TOPOLOGIES");
    g_autofree char *here = g_path_get_dirname(__FILE__);
    g_autofree char *epyc = shared
                                ? g_build_filename(shared, "AMD-17h-Zen-2xEpyc-7451.xml", NULL)
                                : g_build_filename(here, "..", "..", "..", "shared", "topologies",
                                                   "AMD-17h-Zen-2xEpyc-7451.xml", NULL);
    g_autofree char *out = g_build_filename(dir, "bench-rebalance.json", NULL);
    g_autofree char *src_a = NULL, *src_b = NULL;
    g_autoptr(vpTopology) a = load(epyc, "synthetic:pack:2 numa:4 l3:2 core:3 pu:2", &src_a);
    g_autoptr(vpTopology) big = load(NULL, "synthetic:pack:4 numa:4 l3:4 core:24 pu:2", &src_b);
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GError) err = NULL;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "benchmark");
    json_builder_add_string_value(b, "rebalance");
    json_builder_set_member_name(b, "results");
    json_builder_begin_array(b);
    run(b, "epyc-7451", a, src_a, NVCPUS, 6);
    run(b, "synthetic-3072", big, src_b, NVCPUS, 0);
    json_builder_end_array(b);
    json_builder_end_object(b);
    root = json_builder_get_root(b);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    if (!json_generator_to_file(gen, out, &err)) {
        fprintf(stderr, "bench-rebalance: %s: %s\n", out, err->message);
        return 1;
    }
    printf("wrote %s\n", out);
    return 0;
}
