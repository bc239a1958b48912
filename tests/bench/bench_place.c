/*
 * One placement decision on a 2x EPYC 7451 (96 PUs, 16 L3 of 3 cores) filled to about 80%
 * with a mixed, seeded population: the median and p99 cost of vpPlace() for a 16-vCPU VM
 * per smt policy. Prints a table and writes JSON (argv[1], default bench-place.json).
 * Not a test: nothing here passes or fails on time.
 */
#include "core/placer.h"
#include "host/hwtopo.h"

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define REPS 5000

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
loadEpyc(const char **source)
{
    const char *dir = g_getenv("VP_SHARED_TOPOLOGIES");
    g_autofree char *path = dir ? g_build_filename(dir, "AMD-17h-Zen-2xEpyc-7451.xml", NULL) : NULL;
    g_autoptr(GError) error = NULL;
    vpTopology *topo;

    if (path && g_file_test(path, G_FILE_TEST_EXISTS)) {
        *source = "AMD-17h-Zen-2xEpyc-7451.xml";
        topo = vpHwtopoLoad(path, NULL, NULL, &error);
    } else {
        /* same shape: 2 packages x 4 NUMA x 2 L3 x 3 cores x 2 PUs */
        *source = "synthetic:pack:2 numa:4 l3:2 core:3 pu:2 (shared topologies absent)";
        topo = vpHwtopoLoad("synthetic:pack:2 numa:4 l3:2 core:3 pu:2", NULL, NULL, &error);
    }
    if (!topo) {
        fprintf(stderr, "bench-place: %s\n", error->message);
        exit(1);
    }
    return topo;
}

/* Fills to ~80% of PUs with seeded VMs of 1-8 vCPUs and mixed policies. */
static int
fill(const vpTopology *topo, vpLedger *ledger)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(7451);
    static const unsigned sizes[] = {1, 2, 2, 4, 4, 8};
    int held = 0, target = vpTopologyNPUs(topo) * 8 / 10, tries = 0;

    while (held < target && tries++ < 1000) {
        g_autofree char *name = g_strdup_printf("fill%d", tries);
        g_autoptr(vpRequest) req =
            vpRequestNew(name, sizes[g_rand_int_range(rand, 0, G_N_ELEMENTS(sizes))]);
        g_autoptr(vpPlan) plan = NULL;

        req->policy.smt = g_rand_int_range(rand, 0, VP_SMT_LAST);
        if ((plan = vpPlace(topo, ledger, req, NULL)) && vpLedgerAdd(ledger, plan, NULL)) {
            g_autoptr(vpBitmap) h = vpPlanHeld(plan);

            held += hwloc_bitmap_weight(h);
        }
    }
    return held;
}

int
main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : "bench-place.json";
    const char *source;
    g_autoptr(vpTopology) topo = loadEpyc(&source);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    int held = fill(topo, ledger);
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    static double t[REPS];

    printf("topology %s, %d of %d PUs held (%.0f%%), %d repetitions per policy\n", source, held,
           vpTopologyNPUs(topo), 100.0 * held / vpTopologyNPUs(topo), REPS);
    printf("%-8s %10s %10s %s\n", "smt", "median_us", "p99_us", "outcome");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "topology");
    json_builder_add_string_value(b, source);
    json_builder_set_member_name(b, "occupancy_pct");
    json_builder_add_double_value(b, 100.0 * held / vpTopologyNPUs(topo));
    json_builder_set_member_name(b, "vcpus");
    json_builder_add_int_value(b, 16);
    json_builder_set_member_name(b, "results");
    json_builder_begin_array(b);
    for (int smt = 0; smt < VP_SMT_LAST; smt++) {
        g_autoptr(vpRequest) req = vpRequestNew("bench", 16);
        const char *outcome = "placed";

        req->policy.smt = smt;
        req->policy.unmet = VP_UNMET_DEGRADE;
        for (int i = 0; i < REPS; i++) {
            g_autoptr(GError) error = NULL;
            double t0 = nowUs();
            g_autoptr(vpPlan) plan = vpPlace(topo, ledger, req, &error);

            t[i] = nowUs() - t0;
            if (!plan)
                outcome = "refused";
            else if (plan->degraded)
                outcome = "degraded";
        }
        qsort(t, REPS, sizeof(double), cmpDouble);
        printf("%-8s %10.2f %10.2f %s\n", vpSmtName(smt), t[REPS / 2], t[REPS * 99 / 100], outcome);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "smt");
        json_builder_add_string_value(b, vpSmtName(smt));
        json_builder_set_member_name(b, "median_us");
        json_builder_add_double_value(b, t[REPS / 2]);
        json_builder_set_member_name(b, "p99_us");
        json_builder_add_double_value(b, t[REPS * 99 / 100]);
        json_builder_set_member_name(b, "outcome");
        json_builder_add_string_value(b, outcome);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    root = json_builder_get_root(b);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    if (!json_generator_to_file(gen, out, NULL)) {
        fprintf(stderr, "bench-place: cannot write %s\n", out);
        return 1;
    }
    printf("wrote %s\n", out);
    return 0;
}
