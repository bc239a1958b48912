/*
 * vcpuplace plan: one domain XML placed on a topology, with an optional ledger of what is
 * already held. Offline and side-effect free: the placer's answer, nothing applied.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "core/placer.h"
#include "libvirt/domxml.h"

#include <stdio.h>
#include <string.h>

int
vpCmdPlan(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_autofree char *ledger_path = NULL;
    g_autoptr(GOptionContext) octx = g_option_context_new("DOMAIN.xml|-");
    GOptionEntry entries[] = {
        {"ledger", 'l', 0, G_OPTION_ARG_FILENAME, &ledger_path, "ledger (JSON) of PUs already held",
         "FILE"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(vpRequest) req = NULL;
    g_autoptr(vpPlan) plan = NULL;
    vpPolicy defaults;

    g_option_context_set_summary(
        octx,
        "Place one domain on a topology without applying it (DOMAIN.xml \"-\": standard input).\n"
        "Exit status: 0 placed, 2 refused by policy, 1 bad input.");
    g_option_context_add_main_entries(octx, entries, NULL);
    g_option_context_add_group(octx, vpCliOptionGroup(&opts));
    if (!g_option_context_parse(octx, &argc, &argv, &error)) {
        vpCliError("plan", error);
        return VP_EXIT_ERROR;
    }
    if (argc != 2) {
        fprintf(stderr, "vcpuplace plan: expected one DOMAIN.xml argument\n");
        return VP_EXIT_ERROR;
    }
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
    if (!(plan = vpPlace(topo, ledger, req, &error))) {
        vpCliError("plan", error);
        return g_error_matches(error, VP_ERROR, VP_ERROR_REFUSED) ? VP_EXIT_REFUSED : VP_EXIT_ERROR;
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
