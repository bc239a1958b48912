/* See capacity.h. */
#include "core/place/capacity.h"
#include "core/model/error.h"
#include "core/place/placer.h"

GArray *
vpCapacityParseVcpus(const char *list, GError **error)
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

static bool
fillShape(const vpTopology *topo, const vpLedger *ledger, const vpPolicy *defaults,
          vpCapacityShape *fit, GError **error)
{
    g_autoptr(vpLedger) copy = copyLedger(topo, ledger, error);
    /* Each VM takes at least one PU: the bound only guards against a placer that would
     * overcommit (smt=share never does with unmet=refuse). */
    unsigned limit = (unsigned)vpTopologyNPUs(topo) + 1;

    if (!copy)
        return false;
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
                return false;
            }
            fit->stop = g_strdup(why->message);
            return true;
        }
        if (!vpLedgerAdd(copy, plan, error))
            return false;
        fit->host++;
        int node = planNode(topo, plan);
        if (node < 0)
            fit->spanning++;
        else
            fit->nodes[node]++;
    }
    return true;
}

void
vpCapacityFree(vpCapacity *cap)
{
    if (!cap)
        return;
    for (guint i = 0; i < cap->nshapes; i++) {
        g_free(cap->shapes[i].nodes);
        g_free(cap->shapes[i].stop);
    }
    g_free(cap->shapes);
    g_free(cap);
}

vpCapacity *
vpCapacityCompute(const vpTopology *topo, const vpLedger *ledger, const vpPolicy *defaults,
                  const GArray *counts, GError **error)
{
    g_autoptr(vpCapacity) cap = g_new0(vpCapacity, 1);

    cap->nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    cap->nshapes = counts->len * VP_SMT_LAST;
    cap->shapes = g_new0(vpCapacityShape, cap->nshapes);
    for (guint i = 0; i < counts->len; i++) {
        for (int smt = 0; smt < VP_SMT_LAST; smt++) {
            vpCapacityShape *fit = &cap->shapes[i * VP_SMT_LAST + smt];

            fit->vcpus = g_array_index(counts, unsigned, i);
            fit->smt = (vpSmt)smt;
            if (!fillShape(topo, ledger, defaults, fit, error))
                return NULL;
        }
    }
    return g_steal_pointer(&cap);
}
