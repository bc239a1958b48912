/*
 * One placement decision on a 2x EPYC 7451 (96 PUs, 16 L3 of 3 cores) filled to about 80%
 * with a mixed, seeded population: the median and p99 cost of vpPlace() for a 16-vCPU VM
 * per smt policy ("results"). Then the same with compaction (vpPlaceCompact(), at most 2
 * moves) against the placer alone on a 2x EPYC 7763 (128 PUs, SMT off in the export)
 * filled to about 90%, for 4- and 16-vCPU VMs ("compaction"): at that occupancy large
 * starts find no room and the search runs; and on the EPYC 7451 at 90%, whose SMT siblings
 * make moves legal ("compaction_smt"). Prints tables and writes JSON (argv[1], default
 * bench-place.json). Not a test: nothing here passes or fails on time.
 */
#include "core/place/compact.h"
#include "core/place/placer.h"
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

/* The shared export, or a synthetic host of the same shape when the folder is absent. */
static vpTopology *
loadHost(const char *file, const char *synthetic, char **source)
{
    const char *dir = g_getenv("VP_SHARED_TOPOLOGIES");
    g_autofree char *path = dir ? g_build_filename(dir, file, NULL) : NULL;
    g_autoptr(GError) error = NULL;
    vpTopology *topo;

    if (path && g_file_test(path, G_FILE_TEST_EXISTS)) {
        *source = g_strdup(file);
        topo = vpHwtopoLoad(path, NULL, NULL, &error);
    } else {
        *source = g_strdup_printf("%s (shared topologies absent)", synthetic);
        topo = vpHwtopoLoad(synthetic, NULL, NULL, &error);
    }
    if (!topo) {
        fprintf(stderr, "bench-place: %s\n", error->message);
        exit(1);
    }
    return topo;
}

/* Fills to pct% of PUs with seeded VMs of 1-8 vCPUs and mixed policies. */
static int
fill(const vpTopology *topo, vpLedger *ledger, int pct)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(7451);
    static const unsigned sizes[] = {1, 2, 2, 4, 4, 8};
    int held = 0, target = vpTopologyNPUs(topo) * pct / 100, tries = 0;

    while (held < target && tries++ < 4000) {
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

/* REPS decisions for one request; the median and p99 in us, and what the last one said. */
static const char *
timeDecisions(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
              const vpCompactConfig *compact, double *median, double *p99, unsigned *moves)
{
    static double t[REPS];
    const char *outcome = "placed";

    for (int i = 0; i < REPS; i++) {
        g_autoptr(GError) error = NULL;
        double t0 = nowUs();
        g_autoptr(vpPlan) plan = compact ? vpPlaceCompact(topo, ledger, req, compact, &error)
                                         : vpPlace(topo, ledger, req, &error);

        t[i] = nowUs() - t0;
        outcome = !plan ? "refused" : plan->degraded ? "degraded" : "placed";
        *moves = plan ? plan->nmoves : 0;
    }
    qsort(t, REPS, sizeof(double), cmpDouble);
    *median = t[REPS / 2];
    *p99 = t[REPS * 99 / 100];
    return outcome;
}

static void
addResult(JsonBuilder *b, const char *smt, unsigned vcpus, const char *mode, double median,
          double p99, const char *outcome, unsigned moves)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "smt");
    json_builder_add_string_value(b, smt);
    if (vcpus) {
        json_builder_set_member_name(b, "vcpus");
        json_builder_add_int_value(b, vcpus);
        json_builder_set_member_name(b, "mode");
        json_builder_add_string_value(b, mode);
        json_builder_set_member_name(b, "moves");
        json_builder_add_int_value(b, moves);
    }
    json_builder_set_member_name(b, "median_us");
    json_builder_add_double_value(b, median);
    json_builder_set_member_name(b, "p99_us");
    json_builder_add_double_value(b, p99);
    json_builder_set_member_name(b, "outcome");
    json_builder_add_string_value(b, outcome);
    json_builder_end_object(b);
}

static void
placerAlone(JsonBuilder *b)
{
    g_autofree char *source = NULL;
    g_autoptr(vpTopology) topo = loadHost("AMD-17h-Zen-2xEpyc-7451.xml",
                                          "synthetic:pack:2 numa:4 l3:2 core:3 pu:2", &source);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    int held = fill(topo, ledger, 80);

    printf("topology %s, %d of %d PUs held (%.0f%%), %d repetitions per policy\n", source, held,
           vpTopologyNPUs(topo), 100.0 * held / vpTopologyNPUs(topo), REPS);
    printf("%-8s %10s %10s %s\n", "smt", "median_us", "p99_us", "outcome");
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
        double median, p99;
        unsigned moves;
        const char *outcome;

        req->policy.smt = smt;
        req->policy.unmet = VP_UNMET_DEGRADE;
        outcome = timeDecisions(topo, ledger, req, NULL, &median, &p99, &moves);
        printf("%-8s %10.2f %10.2f %s\n", vpSmtName(smt), median, p99, outcome);
        addResult(b, vpSmtName(smt), 0, NULL, median, p99, outcome, 0);
    }
    json_builder_end_array(b);
}

static void
withCompaction(JsonBuilder *b, const char *key, const char *file, const char *synthetic)
{
    static const unsigned sizes[] = {4, 16};
    g_autofree char *source = NULL;
    g_autoptr(vpTopology) topo = loadHost(file, synthetic, &source);
    g_autoptr(vpLedger) ledger = vpLedgerNew(topo);
    int held = fill(topo, ledger, 90);
    vpCompactConfig cfg;

    vpCompactConfigInit(&cfg);
    printf("\ntopology %s, %d of %d PUs held (%.0f%%), compaction at most %u moves\n", source, held,
           vpTopologyNPUs(topo), 100.0 * held / vpTopologyNPUs(topo), cfg.max_moves);
    printf("%-8s %5s %-10s %10s %10s %5s %s\n", "smt", "vcpus", "mode", "median_us", "p99_us",
           "moves", "outcome");
    json_builder_set_member_name(b, key);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "topology");
    json_builder_add_string_value(b, source);
    json_builder_set_member_name(b, "occupancy_pct");
    json_builder_add_double_value(b, 100.0 * held / vpTopologyNPUs(topo));
    json_builder_set_member_name(b, "max_moves");
    json_builder_add_int_value(b, cfg.max_moves);
    json_builder_set_member_name(b, "results");
    json_builder_begin_array(b);
    for (gsize k = 0; k < G_N_ELEMENTS(sizes); k++) {
        for (int smt = 0; smt < VP_SMT_LAST; smt++) {
            for (int mode = 0; mode < 2; mode++) {
                g_autoptr(vpRequest) req = vpRequestNew("bench", sizes[k]);
                const char *name = mode ? "compaction" : "alone";
                double median, p99;
                unsigned moves;
                const char *outcome;

                req->policy.smt = smt;
                outcome =
                    timeDecisions(topo, ledger, req, mode ? &cfg : NULL, &median, &p99, &moves);
                printf("%-8s %5u %-10s %10.2f %10.2f %5u %s\n", vpSmtName(smt), sizes[k], name,
                       median, p99, moves, outcome);
                addResult(b, vpSmtName(smt), sizes[k], name, median, p99, outcome, moves);
            }
        }
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
}

int
main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : "bench-place.json";
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;

    json_builder_begin_object(b);
    placerAlone(b);
    withCompaction(b, "compaction", "AMD-19h-Zen3-2xEpyc-7763.xml",
                   "synthetic:pack:2 numa:1 l3:8 core:8 pu:1");
    /* the 7763 export has no SMT, so no move is legal there: the SMT host shows the cost of
     * a search that moves */
    withCompaction(b, "compaction_smt", "AMD-17h-Zen-2xEpyc-7451.xml",
                   "synthetic:pack:2 numa:4 l3:2 core:3 pu:2");
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
