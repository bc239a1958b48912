/*
 * vcpuplace plan: one domain XML placed on a topology, with an optional ledger of what is
 * already held. Offline and side-effect free: the placer's answer, with the moves of running
 * vCPUs it would make first (at most --max-moves), nothing applied.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "core/place/compact.h"
#include "core/place/placer.h"
#include "host/ledgerfile.h"
#include "libvirt/domxml.h"

#include <stdio.h>
#include <string.h>

/* A script reading stdout learns why as well as the exit status. */
static void
printRefusal(const vpRequest *req, const GError *error)
{
    g_autoptr(JsonObject) o = json_object_new();
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);

    json_object_set_string_member(o, "domain", req->name);
    json_object_set_boolean_member(o, "refused", TRUE);
    json_object_set_string_member(o, "error", error->message);
    json_node_set_object(node, o);
    vpCliPrintJson(node);
}

int
vpCmdPlan(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_autofree char *ledger_path = NULL;
    gint max_moves = VP_COMPACT_MAX_MOVES;
    g_autoptr(GOptionContext) octx = g_option_context_new("DOMAIN.xml|-");
    GOptionEntry entries[] = {
        {"ledger", 'l', 0, G_OPTION_ARG_FILENAME, &ledger_path, "ledger (JSON) of PUs already held",
         "FILE"},
        {"max-moves", 0, 0, G_OPTION_ARG_INT, &max_moves,
         "moves of running vCPUs the plan may make to find room (0: none)", "N"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(vpRequest) req = NULL;
    g_autoptr(vpPlan) plan = NULL;
    vpPolicy defaults;
    vpCompactConfig compact;

    g_option_context_set_summary(
        octx,
        "Place one domain on a topology without applying it (DOMAIN.xml \"-\": standard input).\n"
        "Exit status: 0 placed, 2 refused by policy, 1 bad input.");
    if (!vpCliParseOptions(octx, entries, &opts, "plan", &argc, &argv))
        return VP_EXIT_ERROR;
    if (!vpCliOneArgument("plan", "DOMAIN.xml", argc))
        return VP_EXIT_ERROR;
    if (!vpCliCheckMaxMoves("plan", max_moves))
        return VP_EXIT_ERROR;
    compact.max_moves = (unsigned)max_moves;
    if (!vpCliLoadDefaults(&opts, &defaults, &error) ||
        !(topo = vpCliLoadTopology(&opts, &error)) ||
        /* "-": standard input, for `virsh dumpxml D | vcpuplace plan -`. */
        !(req = vpDomXMLParseFile(strcmp(argv[1], "-") == 0 ? "/dev/stdin" : argv[1], &defaults,
                                  &error))) {
        vpPolicyClear(&defaults);
        vpCliError("plan", error);
        return VP_EXIT_ERROR;
    }
    vpPolicyClear(&defaults);
    ledger = vpCliLoadLedger(topo, ledger_path, &error);
    if (!ledger) {
        vpCliError("plan", error);
        return VP_EXIT_ERROR;
    }
    if (!(plan = vpPlaceCompact(topo, ledger, req, &compact, &error))) {
        gboolean refused = g_error_matches(error, VP_ERROR, VP_ERROR_REFUSED);

        vpCliError("plan", error);
        if (opts.json && refused)
            printRefusal(req, error);
        return refused ? VP_EXIT_REFUSED : VP_EXIT_ERROR;
    }
    if (opts.json) {
        g_autoptr(JsonNode) node = vpPlanToJson(plan, topo);

        vpCliPrintJson(node);
    } else {
        g_autofree char *text = vpPlanFormat(plan, topo);

        fputs(text, stdout);
    }
    return VP_EXIT_OK;
}
