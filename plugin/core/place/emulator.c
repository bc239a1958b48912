/*
 * The emulator threads: housekeeping, the VM's own CPUs, or a dedicated PU that is not a
 * sibling isolate keeps idle; kept off real-time vCPUs.
 */
#include "core/place/placerpriv.h"

/* A free PU of core c that the pick neither runs a vCPU on nor holds idle. */
static int
spareOn(const vpCtx *ctx, int c, const vpPick *pick)
{
    const vpCore *core = vpTopologyCore(ctx->topo, c);

    for (int i = 0; i < core->npus; i++) {
        int pu = core->pus[i];
        bool used = false;

        for (int k = 0; k < pick->n; k++)
            used |= pick->pus[k] == pu;
        for (guint k = 0; k < pick->reserved->len; k++)
            used |= g_array_index(pick->reserved, int, k) == pu;
        if (ctx->pufree[pu] && !used && (!ctx->ok || ctx->ok[pu]))
            return pu;
    }
    return -1;
}

/* Where the dedicated emulator goes: a spare sibling the VM already holds idle (pack's odd
 * leftover), else a free sibling of one of its vCPUs, else a PU of an idle core, fewest free
 * PUs first so that whole cores stay whole. Never the sibling isolate keeps idle: that
 * sibling is what isolate promised. */
static bool
pickEmulatorPU(const vpCtx *ctx, vpPlan *plan, vpChoice *choice)
{
    const vpTopology *topo = ctx->topo;
    int os = -1;
    int best = -1;

    if (ctx->req->policy.smt != VP_SMT_ISOLATE)
        os = hwloc_bitmap_first(plan->reserved);
    for (int c = 0; c < ctx->ncores && os < 0; c++) {
        bool ours = false;
        int pu;

        for (int i = 0; i < choice->pick.n; i++)
            ours |= vpTopologyPU(topo, choice->pick.pus[i])->core == c;
        if (ours && (pu = spareOn(ctx, c, &choice->pick)) >= 0)
            os = vpTopologyPU(topo, pu)->os;
    }
    for (int c = 0; c < ctx->ncores && os < 0; c++) {
        if (coreIdle(ctx, c) && spareOn(ctx, c, &choice->pick) >= 0 &&
            (best < 0 || ctx->nfree[c] < ctx->nfree[best]))
            best = c;
    }
    if (os < 0 && best >= 0)
        os = vpTopologyPU(topo, spareOn(ctx, best, &choice->pick))->os;
    if (os < 0)
        return false;
    hwloc_bitmap_set(plan->reserved, os);
    hwloc_bitmap_only(plan->emulator, os);
    return true;
}

/* Where the policy puts the emulator: the housekeeping CPUs, the vCPUs' own, or one of its own. */
static bool
placeByPolicy(const vpCtx *ctx, vpPlan *plan, vpChoice *choice, GError **error)
{
    hwloc_const_bitmap_t hk = vpTopologyHousekeeping(ctx->topo);

    for (unsigned i = 0; i < plan->nvcpus; i++)
        hwloc_bitmap_set(plan->emulator, plan->vcpu_pu[i]);
    hwloc_bitmap_or(plan->emulator, plan->emulator, plan->reserved);

    switch (ctx->req->policy.emulator) {
    case VP_EMULATOR_HOUSEKEEPING:
        if (!hwloc_bitmap_iszero(hk))
            hwloc_bitmap_copy(plan->emulator, hk);
        return true;
    case VP_EMULATOR_DEDICATED:
        if (pickEmulatorPU(ctx, plan, choice))
            return true;
        if (ctx->req->policy.unmet == VP_UNMET_REFUSE) {
            g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                        "emulator=dedicated needs one more free PU for domain '%s'; none is left",
                        plan->domain);
            return false;
        }
        vpPlanDegrade(plan, "emulator=dedicated relaxed to emulator=vcpus: no free PU left");
        return true;
    default:
        return true;
    }
}

/* A real-time vCPU (<vcpusched> fifo or rr) would starve an emulator thread on its CPU:
 * the emulator keeps to the domain's other CPUs, or gets a free one. */
static bool
offRealtime(const vpCtx *ctx, vpPlan *plan, vpChoice *choice, GError **error)
{
    g_autoptr(vpBitmap) rt = hwloc_bitmap_alloc();

    if (!ctx->req->realtime || ctx->req->emulator_pin)
        return true;
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] >= 0 && hwloc_bitmap_isset(ctx->req->realtime, i))
            hwloc_bitmap_set(rt, plan->vcpu_pu[i]);
    }
    hwloc_bitmap_andnot(plan->emulator, plan->emulator, rt);
    if (!hwloc_bitmap_iszero(plan->emulator))
        return true;
    hwloc_bitmap_andnot(plan->reserved, plan->reserved, rt);
    if (pickEmulatorPU(ctx, plan, choice))
        return true;
    g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                "domain '%s': every vCPU is real-time (<vcpusched> fifo/rr) and no free PU is "
                "left for the emulator",
                plan->domain);
    return false;
}

bool
vpPlacerPlaceEmulator(const vpCtx *ctx, vpPlan *plan, vpChoice *choice, GError **error)
{
    return placeByPolicy(ctx, plan, choice, error) && offRealtime(ctx, plan, choice, error);
}
