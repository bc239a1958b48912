/*
 * vcpuplace capacity: how many more VMs of each shape (vCPU count x smt policy) fit on the
 * host now, and on each NUMA node. Fleet schedulers (Nova, KubeVirt) decide which host a VM
 * goes to; this tells them what this host can still take, by the placer's own rules rather
 * than a CPU count: for each shape the placer places one VM after another on a copy of the
 * ledger until it refuses. A VM counts for the NUMA node that holds all its vCPUs, or as
 * spanning when they lie on several nodes.
 *
 * The count is a greedy fill of one shape alone: shapes compete for the same CPUs, so the
 * numbers of two shapes do not add up.
 */
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/live.h"
#include "core/error.h"
#include "core/placer.h"

#include <stdio.h>
#include <stdlib.h>

#define VP_CAPACITY_DEFAULT_VCPUS "1,2,4,8"

typedef struct {
    unsigned vcpus;
    vpSmt smt;
    unsigned host;     /* VMs placed before the first refusal */
    unsigned *nodes;   /* per NUMA group index (vpTopologyGroup(topo, VP_LEVEL_NUMA, i)) */
    unsigned spanning; /* VMs whose vCPUs lie on more than one node */
    char *stop;        /* the placer's refusal that ended the fill */
} vpFit;

static void
vpFitClear(vpFit *fit)
{
    g_free(fit->nodes);
    g_free(fit->stop);
}

/* "1,2,4,8" -> counts, each 1..VP_MAX_VCPUS of a request. */
static GArray *
parseVcpus(const char *list, GError **error)
{
    g_auto(GStrv) items = g_strsplit(list, ",", -1);
    g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(unsigned));

    for (char **s = items; *s; s++) {
        guint64 v;

        if (!g_ascii_string_to_unsigned(g_strstrip(*s), 10, 1, 4096, &v, NULL)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "--vcpus: '%s' is not a vCPU count (1 to 4096)", *s);
            return NULL;
        }
        unsigned u = (unsigned)v;
        g_array_append_val(out, u);
    }
    if (out->len == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "--vcpus: empty list");
        return NULL;
    }
    return g_steal_pointer(&out);
}

/* A ledger of the same plans, to fill without touching the original. */
static vpLedger *
copyLedger(const vpTopology *topo, const vpLedger *ledger, GError **error)
{
    g_autoptr(vpLedger) copy = vpLedgerNew(topo);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);

    for (guint i = 0; i < names->len; i++) {
        if (!vpLedgerAdd(copy, vpLedgerLookup(ledger, names->pdata[i]), error))
            return NULL;
    }
    return g_steal_pointer(&copy);
}

/* The NUMA group index that holds every vCPU of plan, -1 when they span several. */
static int
planNode(const vpTopology *topo, const vpPlan *plan)
{
    int node = -1;

    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int pu = plan->vcpu_pu[v] < 0 ? -1 : vpTopologyPUByOS(topo, (unsigned)plan->vcpu_pu[v]);
        if (pu < 0)
            continue;
        int n = vpTopologyCore(topo, vpTopologyPU(topo, pu)->core)->group[VP_LEVEL_NUMA];
        if (node >= 0 && n != node)
            return -1;
        node = n;
    }
    return node;
}

static gboolean
fillShape(const vpTopology *topo, const vpLedger *ledger, const vpPolicy *defaults, vpFit *fit,
          GError **error)
{
    g_autoptr(vpLedger) copy = copyLedger(topo, ledger, error);
    /* Each VM takes at least one PU: the bound only guards against a placer that would
     * overcommit (smt=share never does with unmet=refuse). */
    unsigned limit = (unsigned)vpTopologyNPUs(topo) + 1;

    if (!copy)
        return FALSE;
    fit->nodes = g_new0(unsigned, MAX(vpTopologyNGroups(topo, VP_LEVEL_NUMA), 1));
    for (unsigned i = 0; i < limit; i++) {
        g_autofree char *name =
            g_strdup_printf("capacity-%u-%s-%u", fit->vcpus, vpSmtName(fit->smt), i);
        g_autoptr(vpRequest) req = vpRequestNew(name, fit->vcpus);
        g_autoptr(GError) why = NULL;
        g_autoptr(vpPlan) plan = NULL;

        vpPolicyClear(&req->policy);
        vpPolicyCopy(&req->policy, defaults);
        req->policy.smt = fit->smt;
        req->policy.unmet = VP_UNMET_REFUSE;
        if (!(plan = vpPlace(topo, copy, req, &why))) {
            if (!g_error_matches(why, VP_ERROR, VP_ERROR_REFUSED)) {
                g_propagate_error(error, g_steal_pointer(&why));
                return FALSE;
            }
            fit->stop = g_strdup(why->message);
            return TRUE;
        }
        if (!vpLedgerAdd(copy, plan, error))
            return FALSE;
        fit->host++;
        int node = planNode(topo, plan);
        if (node < 0)
            fit->spanning++;
        else
            fit->nodes[node]++;
    }
    return TRUE;
}

static JsonNode *
toJson(const vpTopology *topo, const vpFit *fits, guint nfits)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "source");
    json_builder_add_string_value(b, vpTopologyGetSource(topo));
    json_builder_set_member_name(b, "shapes");
    json_builder_begin_array(b);
    for (guint i = 0; i < nfits; i++) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "vcpus");
        json_builder_add_int_value(b, fits[i].vcpus);
        json_builder_set_member_name(b, "smt");
        json_builder_add_string_value(b, vpSmtName(fits[i].smt));
        json_builder_set_member_name(b, "host");
        json_builder_add_int_value(b, fits[i].host);
        json_builder_set_member_name(b, "nodes");
        json_builder_begin_array(b);
        for (int n = 0; n < nnodes; n++) {
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "numa");
            json_builder_add_int_value(b, vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->os);
            json_builder_set_member_name(b, "fit");
            json_builder_add_int_value(b, fits[i].nodes[n]);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_set_member_name(b, "spanning");
        json_builder_add_int_value(b, fits[i].spanning);
        json_builder_set_member_name(b, "stop");
        if (fits[i].stop)
            json_builder_add_string_value(b, fits[i].stop);
        else
            json_builder_add_null_value(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static void
printText(const vpTopology *topo, const vpLedger *ledger, const vpFit *fits, guint nfits)
{
    int nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    unsigned held = vpLedgerNDomains(ledger);

    printf("%s: %d usable CPUs; %u domain%s in the ledger\n", vpTopologyGetSource(topo),
           hwloc_bitmap_weight(vpTopologyUsableSet(topo)), held, held == 1 ? "" : "s");
    printf("%-6s %-8s %5s", "vcpus", "smt", "host");
    for (int n = 0; n < nnodes; n++) {
        g_autofree char *col =
            g_strdup_printf("node%u", vpTopologyGroup(topo, VP_LEVEL_NUMA, n)->os);
        printf(" %6s", col);
    }
    printf(" %8s\n", "spanning");
    for (guint i = 0; i < nfits; i++) {
        printf("%-6u %-8s %5u", fits[i].vcpus, vpSmtName(fits[i].smt), fits[i].host);
        for (int n = 0; n < nnodes; n++)
            printf(" %6u", fits[i].nodes[n]);
        printf(" %8u\n", fits[i].spanning);
    }
}

int
vpCmdCapacity(int argc, char **argv)
{
    g_auto(vpCliOptions) opts = {0};
    g_autofree char *ledger_path = NULL;
    g_autofree char *socket = NULL;
    g_autofree char *vcpus_list = NULL;
    gboolean live = FALSE;
    g_autoptr(GOptionContext) octx = g_option_context_new(NULL);
    GOptionEntry entries[] = {
        {"ledger", 'l', 0, G_OPTION_ARG_FILENAME, &ledger_path,
         "ledger (JSON) of CPUs already held", "FILE"},
        {"live", 0, 0, G_OPTION_ARG_NONE, &live,
         "the running daemon's topology and ledger (socket from --config or --socket)", NULL},
        {"socket", 's', 0, G_OPTION_ARG_FILENAME, &socket, "the daemon's socket (with --live)",
         "PATH"},
        {"vcpus", 0, 0, G_OPTION_ARG_STRING, &vcpus_list,
         "vCPU counts of the shapes (default " VP_CAPACITY_DEFAULT_VCPUS ")", "LIST"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(vpTopology) topo = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(GArray) counts = NULL;
    vpPolicy defaults;

    g_option_context_set_summary(octx, "How many more VMs of each shape (vCPUs x smt policy) fit "
                                       "now, on the host and per NUMA node,\nby repeated "
                                       "placement on a copy of the ledger.");
    g_option_context_add_main_entries(octx, entries, NULL);
    vpCliAddOptions(octx, &opts);
    if (!g_option_context_parse(octx, &argc, &argv, &error)) {
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }
    if (argc != 1) {
        fprintf(stderr, "vcpuplace capacity: unexpected argument '%s'\n", argv[1]);
        return VP_EXIT_ERROR;
    }
    if (live && (ledger_path || opts.topology || opts.host_cpus || opts.housekeeping)) {
        fprintf(stderr,
                "vcpuplace capacity: --live takes the topology, CPU sets and ledger "
                "from the daemon; drop --ledger, --topology, --host-cpus, --housekeeping\n");
        return VP_EXIT_ERROR;
    }
    if (!(counts = parseVcpus(vcpus_list ? vcpus_list : VP_CAPACITY_DEFAULT_VCPUS, &error)) ||
        !vpCliLoadDefaults(&opts, &defaults, &error)) {
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }
    if (live) {
        if (!vpCliLoadLive(&opts, socket, &topo, &ledger, &error)) {
            vpPolicyClear(&defaults);
            return vpLiveFail("capacity", error);
        }
    } else if (!(topo = vpCliLoadTopology(&opts, &error)) ||
               !(ledger = vpCliLoadLedger(topo, ledger_path, &error))) {
        vpPolicyClear(&defaults);
        vpCliError("capacity", error);
        return VP_EXIT_ERROR;
    }

    guint nfits = counts->len * VP_SMT_LAST;
    g_autofree vpFit *fits = g_new0(vpFit, nfits);
    gboolean ok = TRUE;
    for (guint i = 0; i < counts->len && ok; i++) {
        for (int smt = 0; smt < VP_SMT_LAST && ok; smt++) {
            vpFit *fit = &fits[i * VP_SMT_LAST + smt];
            fit->vcpus = g_array_index(counts, unsigned, i);
            fit->smt = (vpSmt)smt;
            ok = fillShape(topo, ledger, &defaults, fit, &error);
        }
    }
    vpPolicyClear(&defaults);
    if (ok) {
        if (opts.json) {
            g_autoptr(JsonNode) node = toJson(topo, fits, nfits);
            vpCliPrintJson(node);
        } else {
            printText(topo, ledger, fits, nfits);
        }
    } else {
        vpCliError("capacity", error);
    }
    for (guint i = 0; i < nfits; i++)
        vpFitClear(&fits[i]);
    return ok ? VP_EXIT_OK : VP_EXIT_ERROR;
}
