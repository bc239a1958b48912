/*
 * Live pins against a plan. See livepins.h.
 */
#include "core/model/livepins.h"

vpLivePins *
vpLivePinsNew(unsigned nvcpus)
{
    vpLivePins *pins = g_new0(vpLivePins, 1);
    pins->nvcpus = nvcpus;
    pins->vcpu = g_new0(hwloc_bitmap_t, MAX(nvcpus, 1));
    for (unsigned i = 0; i < nvcpus; i++)
        pins->vcpu[i] = hwloc_bitmap_alloc();
    return pins;
}

void
vpLivePinsFree(vpLivePins *pins)
{
    if (!pins)
        return;
    for (unsigned i = 0; i < pins->nvcpus; i++)
        hwloc_bitmap_free(pins->vcpu[i]);
    g_free(pins->vcpu);
    if (pins->emulator)
        hwloc_bitmap_free(pins->emulator);
    g_free(pins);
}

char *
vpLivePinsDiff(const vpLivePins *pins, const vpPlan *plan)
{
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        g_autoptr(vpBitmap) want = vpPlanVcpuCpus(plan, i);
        if (!want)
            continue;
        if (i >= pins->nvcpus)
            return g_strdup_printf("vCPU %u is planned but libvirt reports only %u vCPU%s", i,
                                   pins->nvcpus, pins->nvcpus == 1 ? "" : "s");
        if (!hwloc_bitmap_isequal(pins->vcpu[i], want)) {
            g_autofree char *live = vpCpuListFormat(pins->vcpu[i]);
            g_autofree char *planned = vpCpuListFormat(want);
            return g_strdup_printf("vCPU %u is pinned to %s, planned %s", i, live, planned);
        }
    }
    if (pins->emulator && plan->emulator && !hwloc_bitmap_iszero(plan->emulator) &&
        !hwloc_bitmap_isequal(pins->emulator, plan->emulator)) {
        g_autofree char *live = vpCpuListFormat(pins->emulator);
        g_autofree char *want = vpCpuListFormat(plan->emulator);
        return g_strdup_printf("emulator is pinned to %s, planned %s", live, want);
    }
    return NULL;
}

bool
vpLivePinsVcpusDiffer(const vpLivePins *pins, const vpPlan *plan)
{
    for (unsigned i = 0; i < plan->nvcpus && i < pins->nvcpus; i++) {
        g_autoptr(vpBitmap) want = vpPlanVcpuCpus(plan, i);

        if (want && !hwloc_bitmap_isequal(pins->vcpu[i], want))
            return true;
    }
    return false;
}

bool
vpLivePinsAllSingle(const vpLivePins *pins)
{
    if (pins->nvcpus == 0)
        return false;
    for (unsigned i = 0; i < pins->nvcpus; i++) {
        if (hwloc_bitmap_weight(pins->vcpu[i]) != 1)
            return false;
    }
    return true;
}

vpPlan *
vpLivePinsToPlan(const vpLivePins *pins, const char *domain, const vpPolicy *policy)
{
    vpPlan *plan = vpPlanNew(domain, pins->nvcpus);
    vpPolicyClear(&plan->policy);
    vpPolicyCopy(&plan->policy, policy);
    plan->how = VP_HOW_ADOPTED;
    for (unsigned i = 0; i < pins->nvcpus; i++)
        plan->vcpu_pu[i] =
            hwloc_bitmap_weight(pins->vcpu[i]) == 1 ? hwloc_bitmap_first(pins->vcpu[i]) : -1;
    if (pins->emulator && plan->emulator)
        hwloc_bitmap_copy(plan->emulator, pins->emulator);
    else if (pins->emulator)
        plan->emulator = hwloc_bitmap_dup(pins->emulator);
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
    return plan;
}
