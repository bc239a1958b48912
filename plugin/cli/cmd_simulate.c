/*
 * vcpuplace simulate: replays a start/stop trace through the real placer and ledger, one
 * event at a time, and scores the outcome. A start may first move running vCPUs to make
 * room (compact.h, at most --max-moves): the moves are shown, applied to the ledger and
 * scored before the new plan is. Decision times are measured around the placement alone
 * (compaction included), so they are the placer's cost, not the parser's.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/trace.h"
#include "core/place/compact.h"
#include "core/place/placer.h"
#include "core/place/score.h"
#include "host/ledgerfile.h"

#include <stdio.h>
#include <time.h>

typedef struct {
    const vpTopology *topo;
    vpLedger *ledger;
    vpScore *score;
    JsonBuilder *events; /* NULL unless --json */
    gboolean quiet;
    vpCompactConfig compact;
    const vpPolicy *defaults; /* what the trace's starts leave out */
} vpSim;

static double
nowUs(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void
report(vpSim *sim, unsigned lineno, const vpTraceEvent *ev, const char *outcome, const vpPlan *plan,
       const char *reason)
{
    if (sim->events) {
        json_builder_begin_object(sim->events);
        json_builder_set_member_name(sim->events, "line");
        json_builder_add_int_value(sim->events, lineno);
        json_builder_set_member_name(sim->events, "op");
        json_builder_add_string_value(sim->events, ev->op == VP_TRACE_START ? "start" : "stop");
        json_builder_set_member_name(sim->events, "domain");
        json_builder_add_string_value(sim->events, ev->name);
        json_builder_set_member_name(sim->events, "outcome");
        json_builder_add_string_value(sim->events, outcome);
        if (plan) {
            json_builder_set_member_name(sim->events, "plan");
            json_builder_add_value(sim->events, vpPlanToJson(plan, sim->topo));
        }
        if (reason) {
            json_builder_set_member_name(sim->events, "reason");
            json_builder_add_string_value(sim->events, reason);
        }
        json_builder_end_object(sim->events);
        return;
    }
    if (sim->quiet)
        return;
    if (ev->op == VP_TRACE_STOP) {
        printf("%6u stop  %-16s %s\n", lineno, ev->name, outcome);
    } else if (plan) {
        g_autoptr(vpBitmap) cpus = hwloc_bitmap_alloc();
        g_autofree char *list = NULL;
        g_autofree char *where =
            plan->level_index >= 0
                ? g_strdup_printf("%s %d", vpLevelName(plan->level), plan->level_index)
                : g_strdup(vpLevelName(plan->level));

        for (unsigned i = 0; i < plan->nvcpus; i++) {
            if (plan->vcpu_pu[i] >= 0)
                hwloc_bitmap_set(cpus, plan->vcpu_pu[i]);
        }
        hwloc_bitmap_or(cpus, cpus, plan->shared);
        list = vpCpuListFormat(cpus);
        for (unsigned i = 0; i < plan->nmoves; i++)
            printf("%6u move  %-16s vcpu %u: cpu %u -> cpu %u (%s)\n", lineno,
                   plan->moves[i].domain, plan->moves[i].vcpu, plan->moves[i].from,
                   plan->moves[i].to, plan->moves[i].reason);
        printf("%6u start %-16s %2u vCPU%-1s smt=%-7s %s: %s cpus %s%s%s\n", lineno, ev->name,
               ev->req->vcpus, vpCliPlural(ev->req->vcpus), vpSmtName(ev->req->policy.smt), outcome,
               where, list, plan->degraded ? "; degraded: " : "",
               plan->degraded ? plan->degraded_reason : "");
    } else {
        printf("%6u start %-16s %2u vCPU%-1s smt=%-7s %s: %s\n", lineno, ev->name, ev->req->vcpus,
               vpCliPlural(ev->req->vcpus), vpSmtName(ev->req->policy.smt), outcome, reason);
    }
}

static gboolean
step(vpSim *sim, unsigned lineno, const vpTraceEvent *ev, GError **error)
{
    g_autoptr(vpPlan) plan = NULL;
    g_autoptr(GError) why = NULL;
    double t0, us;

    if (ev->op == VP_TRACE_STOP) {
        if (!vpLedgerRemove(sim->ledger, ev->name)) {
            report(sim, lineno, ev, "not-running", NULL, NULL);
            return TRUE;
        }
        vpScoreStopped(sim->score, ev->name);
        report(sim, lineno, ev, "stopped", NULL, NULL);
        return TRUE;
    }
    if (vpLedgerLookup(sim->ledger, ev->name)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "'%s' is started twice", ev->name);
        return FALSE;
    }
    t0 = nowUs();
    plan = vpPlaceCompact(sim->topo, sim->ledger, ev->req, &sim->compact, &why);
    us = nowUs() - t0;
    if (!plan) {
        if (!g_error_matches(why, VP_ERROR, VP_ERROR_REFUSED)) {
            g_propagate_error(error, g_steal_pointer(&why));
            return FALSE;
        }
        vpScoreRefused(sim->score, ev->req->vcpus, us);
        report(sim, lineno, ev, "refused", NULL, why->message);
        return TRUE;
    }
    for (unsigned i = 0; i < plan->nmoves; i++) {
        if (!vpScoreMoved(sim->score, plan->moves[i].domain, plan->moves[i].from, plan->moves[i].to,
                          error))
            return FALSE;
    }
    if (plan->vcpu_set) {
        if (!vpLedgerAdd(sim->ledger, plan, error) ||
            !vpScoreSharedPlaced(sim->score, ev->name, &ev->req->policy, ev->req->vcpus, us, error))
            return FALSE;
        report(sim, lineno, ev, "placed", plan, NULL);
        return TRUE;
    }
    if (!vpCompactApply(sim->ledger, plan, error) || !vpLedgerAdd(sim->ledger, plan, error) ||
        !vpScorePlaced(sim->score, ev->name, &ev->req->policy,
                       plan->guest_threads ? plan->guest_threads : vpRequestGuestThreads(ev->req),
                       plan->nvcpus, plan->vcpu_pu, plan->reserved, ev->req->memory, us, error))
        return FALSE;
    report(sim, lineno, ev, plan->degraded ? "degraded" : "placed", plan, NULL);
    return TRUE;
}

static gboolean
replayLine(const char *line, unsigned lineno, gpointer data, GError **error)
{
    vpSim *sim = data;
    vpTraceEvent ev;
    gboolean ok;

    if (!vpTraceParseLine(line, sim->defaults, &ev, error))
        return FALSE;
    ok = step(sim, lineno, &ev, error);
    vpTraceEventClear(&ev);
    return ok;
}

/* Memory the domains still running at the end hold per node, beside what the node has
 * (null: unknown, no limit), in base pages. */
static JsonNode *
nodesJson(const vpTopology *topo, const vpLedger *ledger)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_array(b);
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);

        if (node->made_up)
            continue;
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "numa");
        json_builder_add_int_value(b, node->os);
        json_builder_set_member_name(b, "memory");
        if (node->memory)
            json_builder_add_int_value(b, (gint64)node->memory);
        else
            json_builder_add_null_value(b);
        json_builder_set_member_name(b, "held");
        json_builder_add_int_value(b, (gint64)vpLedgerNodeMemory(ledger, node->os, 0));
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

static void
printNodes(const vpTopology *topo, const vpLedger *ledger)
{
    printf("memory held at the end:\n");
    for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);
        g_autofree char *held = vpMemoryFormat(vpLedgerNodeMemory(ledger, node->os, 0));
        g_autofree char *has = node->memory ? vpMemoryFormat(node->memory) : g_strdup("unknown");

        if (!node->made_up)
            printf("  numa %-3u %s of %s\n", node->os, held, has);
    }
}

/* With --json, the events are written into one document as they happen. */
static JsonBuilder *
eventsBegin(void)
{
    JsonBuilder *events = json_builder_new();

    json_builder_begin_object(events);
    json_builder_set_member_name(events, "events");
    json_builder_begin_array(events);
    return events;
}

/* The final metrics and memory per node: events NULL as text, else closing the document. */
static void
printResult(const vpTopology *topo, const vpLedger *ledger, const vpScore *score,
            JsonBuilder *events)
{
    if (events) {
        g_autoptr(JsonNode) root = NULL;

        json_builder_end_array(events);
        json_builder_set_member_name(events, "metrics");
        json_builder_add_value(events, vpScoreToJson(score));
        json_builder_set_member_name(events, "nodes");
        json_builder_add_value(events, nodesJson(topo, ledger));
        json_builder_end_object(events);
        root = json_builder_get_root(events);
        vpCliPrintJson(root);
    } else {
        g_autoptr(JsonNode) metrics = vpScoreToJson(score);

        vpCliPrintMetrics(metrics);
        printNodes(topo, ledger);
    }
}

int
vpCmdSimulate(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_autofree char *save = NULL;
    gboolean quiet = FALSE;
    gint max_moves = VP_COMPACT_MAX_MOVES;
    g_autoptr(GOptionContext) octx = g_option_context_new("TRACE.jsonl");
    GOptionEntry entries[] = {
        {"save-ledger", 0, 0, G_OPTION_ARG_FILENAME, &save, "write the final ledger here", "FILE"},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "print only the final metrics", NULL},
        {"max-moves", 0, 0, G_OPTION_ARG_INT, &max_moves,
         "moves of running vCPUs one start may make to find room (0: none)", "N"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(vpScore) score = NULL;
    g_autoptr(JsonBuilder) events = NULL;
    vpPolicy defaults;
    vpSim sim;
    gboolean ok;

    g_option_context_set_summary(octx, "Replay a JSON-lines trace of starts and stops through "
                                       "the placer, and score the result.");
    if (!vpCliParseOptions(octx, entries, &opts, "simulate", &argc, &argv))
        return VP_EXIT_ERROR;
    if (!vpCliOneArgument("simulate", "TRACE.jsonl", argc))
        return VP_EXIT_ERROR;
    if (!vpCliCheckMaxMoves("simulate", max_moves))
        return VP_EXIT_ERROR;
    if (!vpCliLoadDefaults(&opts, &defaults, &error) ||
        !(topo = vpCliLoadTopology(&opts, &error))) {
        vpCliError("simulate", error);
        return VP_EXIT_ERROR;
    }
    ledger = vpLedgerNew(topo);
    score = vpScoreNew(topo);
    events = opts.json ? eventsBegin() : NULL;
    sim = (vpSim){topo, ledger, score, events, quiet, {(unsigned)max_moves}, &defaults};
    ok = vpTraceEachLine(argv[1], replayLine, &sim, &error);
    vpPolicyClear(&defaults);
    if (!ok || (save && !vpLedgerFileSave(ledger, save, &error))) {
        vpCliError("simulate", error);
        return VP_EXIT_ERROR;
    }
    printResult(topo, ledger, score, events);
    return VP_EXIT_OK;
}
