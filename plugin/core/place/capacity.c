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

/* The NUMA group index that holds every vCPU of plan (the CPUs a shared plan floats over),
 * -1 when they span several. */
static int
planNode(const vpTopology *topo, const vpPlan *plan)
{
    int node = -1;
    g_autoptr(vpBitmap) cpus = hwloc_bitmap_alloc();
    unsigned os;

    for (unsigned v = 0; v < plan->nvcpus; v++) {
        if (plan->vcpu_pu[v] >= 0)
            hwloc_bitmap_set(cpus, (unsigned)plan->vcpu_pu[v]);
        else if (plan->vcpu_set && plan->vcpu_set[v])
            hwloc_bitmap_or(cpus, cpus, plan->vcpu_set[v]);
    }
    hwloc_bitmap_foreach_begin(os, cpus)
    {
        int pu = vpTopologyPUByOS(topo, os);
        if (pu < 0)
            continue;
        int n = vpTopologyCore(topo, vpTopologyPU(topo, pu)->core)->group[VP_LEVEL_NUMA];
        if (node >= 0 && n != node)
            return -1;
        node = n;
    }
    hwloc_bitmap_foreach_end();
    return node;
}

/* Each VM takes at least one PU, or 1/ratio of one when shared: the bound only guards
 * against a placer that would overcommit past that. */
static unsigned
fillBound(const vpTopology *topo, const vpFlavor *f)
{
    double per_pu = f->policy.cpus == VP_CPUS_SHARED ? MAX(f->policy.ratio, 1.0) : 1.0;

    return (unsigned)(vpTopologyNPUs(topo) * per_pu) + 1;
}

static bool
fillShape(const vpTopology *topo, const vpLedger *ledger, const vpFlavor *f, vpCapacityShape *fit,
          GError **error)
{
    g_autoptr(vpLedger) copy = copyLedger(topo, ledger, error);
    unsigned limit = fillBound(topo, f);

    if (!copy)
        return false;
    fit->nodes = g_new0(unsigned, MAX(vpTopologyNGroups(topo, VP_LEVEL_NUMA), 1));
    for (unsigned i = 0; i < limit; i++) {
        g_autofree char *name = g_strdup_printf("capacity-%s-%u-%s-%u", f->name ? f->name : "",
                                                f->vcpus, vpSmtName(f->policy.smt), i);
        g_autoptr(vpRequest) req = vpRequestNew(name, f->vcpus);
        g_autoptr(GError) why = NULL;
        g_autoptr(vpPlan) plan = NULL;

        vpPolicyClear(&req->policy);
        vpPolicyCopy(&req->policy, &f->policy);
        req->policy.unmet = VP_UNMET_REFUSE;
        req->memory = f->memory;
        req->hugepage_size = f->page_size;
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
        g_free(cap->shapes[i].flavor);
    }
    g_free(cap->shapes);
    g_free(cap);
}

vpCapacity *
vpCapacityComputeFlavors(const vpTopology *topo, const vpLedger *ledger, const GArray *flavors,
                         GError **error)
{
    g_autoptr(vpCapacity) cap = g_new0(vpCapacity, 1);

    cap->nnodes = vpTopologyNGroups(topo, VP_LEVEL_NUMA);
    cap->nshapes = flavors->len;
    cap->shapes = g_new0(vpCapacityShape, MAX(cap->nshapes, 1));
    for (guint i = 0; i < flavors->len; i++) {
        const vpFlavor *f = &g_array_index(flavors, vpFlavor, i);
        vpCapacityShape *fit = &cap->shapes[i];

        fit->vcpus = f->vcpus;
        fit->smt = f->policy.smt;
        fit->flavor = g_strdup(f->name);
        fit->memory = f->memory;
        fit->page_size = f->page_size;
        fit->cpus = f->policy.cpus;
        fit->ratio = f->policy.ratio;
        if (!fillShape(topo, ledger, f, fit, error))
            return NULL;
    }
    return g_steal_pointer(&cap);
}

void
vpCapacityCountFlavors(GArray *flavors, const GArray *counts, const vpPolicy *defaults)
{
    for (guint i = 0; i < counts->len; i++) {
        for (int smt = 0; smt < VP_SMT_LAST; smt++) {
            vpFlavor f = {.vcpus = g_array_index(counts, unsigned, i)};

            vpPolicyCopy(&f.policy, defaults);
            f.policy.smt = (vpSmt)smt;
            g_array_append_val(flavors, f);
        }
    }
}

vpCapacity *
vpCapacityCompute(const vpTopology *topo, const vpLedger *ledger, const vpPolicy *defaults,
                  const GArray *counts, GError **error)
{
    g_autoptr(GArray) flavors = vpFlavorArrayNew();

    vpCapacityCountFlavors(flavors, counts, defaults);
    return vpCapacityComputeFlavors(topo, ledger, flavors, error);
}
