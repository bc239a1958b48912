/*
 * vcpuplace: the operator CLI, virsh-like. Offline commands (plan, simulate, topology
 * without a daemon) work on files; live ones ask vcpuplaced over its socket or write
 * through the libvirt API.
 */
#include "cli/commands.h"

#include <glib.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} vpCommand;

static const vpCommand commands[] = {
    {"plan", vpCmdPlan, "place one domain XML on a topology (offline)"},
    {"simulate", vpCmdSimulate, "replay a JSON-lines start/stop trace (offline)"},
    {"score", vpCmdScore, "score another placer's outcomes like simulate (offline)"},
    {"topology", vpCmdTopology, "draw the host, with owners from a ledger or the daemon"},
    {"status", vpCmdStatus, "placement of managed domains (live)"},
    {"policy", vpCmdPolicy, "set a domain's vcpuplace policy in its metadata"},
    {"pin-config", vpCmdPinConfig, "write the plan into the persistent <cputune>"},
    {"top", vpCmdTop, "per-vCPU run, wait and wakeups as vcpuplaced measures them (live)"},
    {"rebalance", vpCmdRebalance, "move waiting vCPUs now, or --dry-run: say what would (live)"},
    {"metrics", vpCmdMetrics, "vcpuplaced's Prometheus metrics (live)"},
    {"capacity", vpCmdCapacity, "how many more VMs of each shape fit, host and per NUMA node"},
    {"provider-config", vpCmdProviderConfig,
     "a Nova provider config YAML: whole cores and policy traits"},
};

static void
usage(FILE *out)
{
    fprintf(out, "Usage: vcpuplace COMMAND [OPTIONS]\n       vcpuplace --version\n\nCommands:\n");
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(out, "  %-16s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'vcpuplace COMMAND --help' describes each.\n");
}

int
main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    if (argc < 2) {
        usage(stderr);
        return VP_EXIT_ERROR;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return VP_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("vcpuplace %s\n", PROJECT_VERSION);
        return VP_EXIT_OK;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "vcpuplace: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return VP_EXIT_ERROR;
}
