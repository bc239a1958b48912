/*
 * vcpuplace provider-config: the host as Nova's Placement should see it, written as a Nova
 * provider config (schema 1.0, read from [compute] provider_config_location when
 * nova-compute starts). Placement counts allocations against a static total, so the file
 * states what vcpuplace can hand out at all, not what is free now: whole cores (every
 * sibling usable) as CUSTOM_VCPUPLACE_CORE for isolate and pack flavors, and traits for
 * the policies this host honours, the one a domain without vcpuplace metadata gets here (a
 * Nova flavor cannot write that metadata, so the host's [policy] smt decides for it), and
 * its threads per core, so that a pack flavor's core count lands only on hosts of the SMT
 * width it was sized for. What is free now is `capacity`'s to say.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/live.h"
#include "core/model/policy.h"

#include <stdio.h>

#define VP_PROVIDER_CORE_CLASS "CUSTOM_VCPUPLACE_CORE"

static int
wholeCores(const vpTopology *topo)
{
    int n = 0;

    for (int c = 0; c < vpTopologyNCores(topo); c++) {
        int usable = vpTopologyCoreUsable(topo, c);
        if (usable > 0 && usable == vpTopologyCore(topo, c)->npus)
            n++;
    }
    return n;
}

/* Placement refuses an inventory of total 0, so a host without a whole core offers none
 * and claims no policy that needs one. */
static void
printYaml(const vpTopology *topo, vpSmt fallback)
{
    int cores = wholeCores(topo);
    int threads = vpTopologyMaxSMT(topo);

    printf("# vcpuplace provider-config: for nova-compute's [compute] provider_config_location\n"
           "# %d whole core%s of %d thread%s each usable by vcpuplace\n",
           cores, vpCliPlural(cores), threads, vpCliPlural(threads));
    printf("meta:\n  schema_version: '1.0'\nproviders:\n"
           "  - identification:\n      uuid: $COMPUTE_NODE\n");
    if (cores > 0)
        printf("    inventories:\n      additional:\n        - " VP_PROVIDER_CORE_CLASS ":\n"
               "            total: %d\n            reserved: 0\n            min_unit: 1\n"
               "            max_unit: %d\n            step_size: 1\n"
               "            allocation_ratio: 1.0\n",
               cores, cores);
    printf("    traits:\n      additional:\n        - CUSTOM_VCPUPLACE\n");
    for (int smt = 0; smt < VP_SMT_LAST; smt++) {
        g_autofree char *up = g_ascii_strup(vpSmtName((vpSmt)smt), -1);

        if (cores == 0 && (smt == VP_SMT_ISOLATE || smt == VP_SMT_PACK))
            continue;
        printf("        - CUSTOM_VCPUPLACE_SMT_%s\n", up);
        if (smt == (int)fallback)
            printf("        - CUSTOM_VCPUPLACE_DEFAULT_SMT_%s\n", up);
    }
    printf("        - CUSTOM_VCPUPLACE_THREADS_%d\n", threads);
}

int
vpCmdProviderConfig(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_auto(vpCliHeldOptions) held = {0};
    g_autoptr(GOptionContext) octx = g_option_context_new(NULL);
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(GError) error = NULL;
    vpPolicy defaults;
    int rc;

    g_option_context_set_summary(octx, "A Nova provider config (schema 1.0) for this host: whole "
                                       "cores as " VP_PROVIDER_CORE_CLASS ",\nand traits for "
                                       "the smt policies honoured and the threads per core.");
    if (!vpCliParseHeldOptions(octx, NULL, &opts, &held, "provider-config", &argc, &argv))
        return VP_EXIT_ERROR;
    /* Placement subtracts its own allocations from the total: a ledger would count them twice. */
    if (held.ledger) {
        fprintf(stderr, "vcpuplace provider-config: --ledger: the provider config states totals, "
                        "Placement counts what is held\n");
        return VP_EXIT_ERROR;
    }
    if (!vpCliLoadDefaults(&opts, &defaults, &error)) {
        vpCliError("provider-config", error);
        return VP_EXIT_ERROR;
    }
    if ((rc = vpCliLoadHeld("provider-config", &opts, &held, &topo, &ledger)) == VP_EXIT_OK)
        printYaml(topo, defaults.smt);
    vpPolicyClear(&defaults);
    return rc;
}
