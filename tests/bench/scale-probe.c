/*
 * One host state, measured: reads a ledger file (the fill `vcpuplace simulate --save-ledger`
 * left) and times each start of a probe trace as a decision on that state, the ledger left
 * as it was after each, so every probe sees the same host. scale.py drives it over host
 * sizes and fills and turns its figures into a table; it is not meant to be read by hand.
 *
 *   scale-probe TOPOLOGY LEDGER PROBES.jsonl MAX_MOVES REPS CAPACITY(0|1)
 *
 * LEDGER "-" is an empty host. Prints one JSON object: the ledger read and a save's copy of the
 * plans (under the daemon's lock) and their text (after it), fastest of REPS, ms; each
 * probe's fastest of REPS decisions (us) with its outcome and moves, and with CAPACITY the time of
 * one `vcpuplace capacity` computation (ms). Under callgrind (--collect-atstart=no) each probe's
 * first decision is collected alone and dumped, after one dump of the ledger read, so the
 * instructions are the placer's own and not the harness's.
 */
#include "cli/trace.h"
#include "core/place/capacity.h"
#include "core/place/compact.h"
#include "host/hwtopo.h"
#include "host/ledgerfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>

static double
nowUs(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void
die(const char *what, const GError *error)
{
    fprintf(stderr, "scale-probe: %s: %s\n", what, error ? error->message : "failed");
    exit(1);
}

/* Fastest of reps reads of the file; the last read is kept. */
static vpLedger *
readLedger(const vpTopology *topo, const char *path, int reps, double *best_ms)
{
    vpLedger *ledger = NULL;

    *best_ms = G_MAXDOUBLE;
    for (int r = 0; r < reps; r++) {
        g_autoptr(GError) error = NULL;
        double t0;

        g_clear_pointer(&ledger, vpLedgerFree);
        t0 = nowUs();
        CALLGRIND_TOGGLE_COLLECT;
        ledger = strcmp(path, "-") ? vpLedgerFileLoad(topo, path, &error) : vpLedgerNew(topo);
        CALLGRIND_TOGGLE_COLLECT;
        *best_ms = MIN(*best_ms, (nowUs() - t0) / 1e3);
        if (r == 0)
            CALLGRIND_DUMP_STATS_AT("ledger-read");
        if (!ledger)
            die(path, error);
    }
    return ledger;
}

typedef struct {
    const vpTopology *topo;
    const vpLedger *ledger;
    vpCompactConfig compact;
    int reps;
    JsonBuilder *out;
    const vpPolicy *defaults;
} vpProbe;

static gboolean
probeLine(const char *line, unsigned lineno, gpointer data, GError **error)
{
    vpProbe *p = data;
    vpTraceEvent ev;
    double best = G_MAXDOUBLE;
    const char *outcome = "refused";
    unsigned moves = 0;

    (void)lineno;
    if (!vpTraceParseLine(line, p->defaults, &ev, error))
        return FALSE;
    for (int r = 0; r < p->reps && ev.op == VP_TRACE_START; r++) {
        g_autoptr(GError) why = NULL;
        g_autoptr(vpPlan) plan = NULL;
        double t0 = nowUs();

        if (r == 0)
            CALLGRIND_TOGGLE_COLLECT;
        plan = vpPlaceCompact(p->topo, p->ledger, ev.req, &p->compact, &why);
        if (r == 0) {
            CALLGRIND_TOGGLE_COLLECT;
            CALLGRIND_DUMP_STATS_AT("decision");
        }
        best = MIN(best, nowUs() - t0);
        outcome = !plan ? "refused" : plan->degraded ? "degraded" : "placed";
        moves = plan ? plan->nmoves : 0;
    }
    if (ev.op == VP_TRACE_START) {
        json_builder_begin_object(p->out);
        json_builder_set_member_name(p->out, "us");
        json_builder_add_double_value(p->out, best);
        json_builder_set_member_name(p->out, "outcome");
        json_builder_add_string_value(p->out, outcome);
        json_builder_set_member_name(p->out, "moves");
        json_builder_add_int_value(p->out, moves);
        json_builder_end_object(p->out);
    }
    vpTraceEventClear(&ev);
    return TRUE;
}

/* A save's two halves: the copy of the plans made under the state lock, and their text
 * made after it; fastest of reps each, ms. */
static void
saveMs(const vpLedger *ledger, int reps, double *copy_ms, double *text_ms)
{
    *copy_ms = *text_ms = G_MAXDOUBLE;
    for (int r = 0; r < reps; r++) {
        double t0 = nowUs(), t1;
        g_autoptr(GPtrArray) plans = vpLedgerPlansCopy(ledger);
        g_autofree char *text = NULL;

        t1 = nowUs();
        text = vpLedgerPlansToText(vpLedgerTopology(ledger), plans);
        *copy_ms = MIN(*copy_ms, (t1 - t0) / 1e3);
        *text_ms = MIN(*text_ms, (nowUs() - t1) / 1e3);
    }
}

static double
capacityMs(const vpTopology *topo, const vpLedger *ledger)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) counts = vpCapacityParseVcpus(VP_CAPACITY_DEFAULT_VCPUS, &error);
    g_autoptr(vpCapacity) cap = NULL;
    vpPolicy defaults;
    double t0;

    vpPolicyInitDefaults(&defaults);
    t0 = nowUs();
    cap = vpCapacityCompute(topo, ledger, &defaults, counts, &error);
    if (!cap)
        die("capacity", error);
    vpPolicyClear(&defaults);
    return (nowUs() - t0) / 1e3;
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree char *text = NULL;
    g_autoptr(GPtrArray) names = NULL;
    vpPolicy defaults;
    vpProbe probe;
    double read_ms, copy_ms, text_ms;

    if (argc != 7) {
        fprintf(stderr, "usage: scale-probe TOPOLOGY LEDGER PROBES.jsonl MAX_MOVES REPS "
                        "CAPACITY(0|1)\n");
        return 2;
    }
    if (!(topo = vpHwtopoLoad(argv[1], NULL, NULL, &error)))
        die(argv[1], error);
    probe = (vpProbe){topo, NULL, {(unsigned)atoi(argv[4])}, MAX(atoi(argv[5]), 1), b, NULL};
    ledger = readLedger(topo, argv[2], probe.reps, &read_ms);
    probe.ledger = ledger;
    names = vpLedgerDomains(ledger);
    vpPolicyInitDefaults(&defaults);
    probe.defaults = &defaults;
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "domains");
    json_builder_add_int_value(b, names->len);
    json_builder_set_member_name(b, "ledger_read_ms");
    json_builder_add_double_value(b, read_ms);
    saveMs(ledger, probe.reps, &copy_ms, &text_ms);
    json_builder_set_member_name(b, "save_copy_ms");
    json_builder_add_double_value(b, copy_ms);
    json_builder_set_member_name(b, "save_text_ms");
    json_builder_add_double_value(b, text_ms);
    json_builder_set_member_name(b, "probes");
    json_builder_begin_array(b);
    if (!vpTraceEachLine(argv[3], probeLine, &probe, &error))
        die(argv[3], error);
    json_builder_end_array(b);
    if (atoi(argv[6])) {
        json_builder_set_member_name(b, "capacity_ms");
        json_builder_add_double_value(b, capacityMs(topo, ledger));
    }
    json_builder_end_object(b);
    vpPolicyClear(&defaults);
    root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    text = json_generator_to_data(gen, NULL);
    printf("%s\n", text);
    return 0;
}
