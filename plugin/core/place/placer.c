/*
 * The placer, in the manner of select_idle_sibling(): small questions asked at one
 * topology level at a time.
 *
 * 1. Snapshot every core once: how many usable PUs are free, and who holds the others
 *    (nobody, domains that may share the requester's cookie, VMs that said smt=share,
 *    or strangers).
 * 2. Try the policy's tiers from strictest to loosest, e.g. for spread: a free core per
 *    vCPU, then the VM's own siblings, then siblings of its cookie group. Within a tier, walk
 *    locality levels from the smallest groups up (auto: L3, NUMA node, package, host,
 *    ordered by group size since an L3 can be larger than a NUMA node), and among the
 *    groups where the tier fits take the best fit (fewest free PUs left behind) so that big
 *    holes stay whole for big VMs. Sibling avoidance thus outranks locality: a sibling is
 *    shared only when the host has no free core for the vCPU, as DESIGN.md defines spread.
 * 3. Only when no group of any level fits may spread and share use siblings of other trust
 *    groups: that is what "no two untrusted VMs on one core while a free core exists" means.
 * 4. Otherwise refuse, with the figures an operator needs, or, with unmet=degrade, relax
 *    the policy one step (isolate/pack -> spread, forced locality -> auto) and say so.
 *    A share domain that finds no free PU at all may then time-share PUs that hold only
 *    vCPUs of other share domains that also said unmet=degrade, least shared first: the
 *    overcommit operators of shared CPU pools expect, and what the rebalancer later undoes
 *    when room appears.
 *
 * Step 1 lives in snapshot.c (with the memory each node has free for this placement),
 * steps 2 and 3 in corepick.c, the refusal's figures in refusal.c, the emulator threads in
 * emulator.c, and the domain's NUMA statements, cpuset and memory in numafit.c
 * (placerpriv.h is what they share); this file puts them together.
 */
#include "core/place/placerpriv.h"

/* Guest threads per core that line up with the host cores pack took: the largest divisor
 * of the smallest core's size that also divides the vCPU count and whose every block of
 * vCPUs sits on one host core (a pack VM cut over nodes by its memory may hold part of a
 * core on each). */
static void
packTopology(vpPlan *plan, const vpTopology *topo, const vpRequest *req, const vpChoice *choice)
{
    int smallest = vpTopologyMaxSMT(topo);
    int t;

    for (int i = 0; i < choice->pick.n; i++) {
        int core = vpTopologyPU(topo, choice->pick.pus[i])->core;

        smallest = MIN(smallest, vpTopologyCore(topo, core)->npus);
    }
    for (t = smallest; t > 1; t--) {
        bool aligned = smallest % t == 0 && plan->nvcpus % t == 0;

        for (int i = 0; aligned && i < choice->pick.n; i++)
            aligned = vpTopologyPU(topo, choice->pick.pus[i])->core ==
                      vpTopologyPU(topo, choice->pick.pus[i - i % t])->core;
        if (aligned)
            break;
    }
    plan->guest_sockets = 1;
    plan->guest_cores = plan->nvcpus / t;
    plan->guest_threads = t;
    plan->topology_mismatch = req->threads > 0 && req->threads != (unsigned)t;
}

/* A pack VM's vCPUs on cores that other trust groups (share VMs included) hold: pack's last
 * tier (corepick.c) or, relaxed by unmet=degrade, spread's put them there, and the plan says
 * so. The snapshot's relations outlast the holds of the VM's own parts. */
static unsigned
packBesideOthers(const vpCtx *ctx, const vpChoice *choice)
{
    unsigned n = 0;

    for (int i = 0; i < choice->pick.n; i++) {
        vpTrust rel = ctx->rel[vpTopologyPU(ctx->topo, choice->pick.pus[i])->core];

        n += rel == VP_TRUST_SHARE || rel == VP_TRUST_STRANGER;
    }
    return n;
}

/* The domain's own multi-CPU <vcpupin>, <emulatorpin> and <iothreadpin>: kept as they are,
 * their CPUs held for it. Single-CPU vCPU pins are vcpu_pu themselves. */
static void
holdOwnPins(vpPlan *plan, const vpRequest *req)
{
    for (unsigned i = 0; i < req->max_vcpus; i++) {
        if (req->pins[i] && hwloc_bitmap_weight(req->pins[i]) > 1)
            hwloc_bitmap_or(plan->own, plan->own, req->pins[i]);
    }
    if (req->emulator_pin)
        hwloc_bitmap_or(plan->own, plan->own, req->emulator_pin);
    if (req->iothread_pin)
        hwloc_bitmap_or(plan->own, plan->own, req->iothread_pin);
}

/* A pinned domain's memory is recorded on its single-pinned vCPUs' nodes, in proportion,
 * as first touch puts it; with no single pin its node is not known and nothing is held. */
static void
pinnedMemory(const vpTopology *topo, vpPlan *plan, guint64 memory)
{
    unsigned n = 0, given = 0;

    for (unsigned i = 0; i < plan->nvcpus; i++)
        n += plan->vcpu_pu[i] >= 0;
    for (unsigned i = 0; i < plan->nvcpus && memory; i++) {
        int pu = plan->vcpu_pu[i] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[i]) : -1;
        const vpGroup *node;

        if (pu < 0)
            continue;
        node = vpTopologyGroup(topo, VP_LEVEL_NUMA, vpTopologyNodeOfPU(topo, pu));
        if (!node->made_up)
            vpPlanAddMemory(plan, node->os, memory / n + (given++ == 0 ? memory % n : 0));
    }
}

static vpPlan *
placePinned(const vpTopology *topo, const vpRequest *req)
{
    g_autoptr(vpPlan) plan = vpPlanNew(req->name, vpRequestPlanVcpus(req));

    vpPolicyCopy(&plan->policy, &req->policy);
    plan->how = VP_HOW_PINNED;
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        hwloc_const_bitmap_t pin = req->pins ? req->pins[i] : NULL;

        if (vpRequestOnline(req, i) && pin && hwloc_bitmap_weight(pin) == 1 &&
            vpTopologyPUByOS(topo, hwloc_bitmap_first(pin)) >= 0)
            plan->vcpu_pu[i] = hwloc_bitmap_first(pin);
    }
    if (req->emulator_pin)
        hwloc_bitmap_copy(plan->emulator, req->emulator_pin);
    holdOwnPins(plan, req);
    plan->page_size = req->hugepage_size;
    pinnedMemory(topo, plan, req->memory);
    return g_steal_pointer(&plan);
}

/* One attempt with the given parts: the vCPUs, then the emulator inside the same limits. */
static vpPlan *
placeWith(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req, const vpMove *moves,
          unsigned nmoves, GArray *parts, GError **error)
{
    g_autoptr(vpPlan) plan = vpPlanNew(req->name, vpRequestPlanVcpus(req));
    g_autofree bool *dom_ok = NULL;
    vpCtx ctx;
    vpChoice choice = {0};
    bool ok = false;

    vpPolicyCopy(&plan->policy, &req->policy);
    plan->how = VP_HOW_PLACED;
    plan->page_size = req->hugepage_size;
    vpPlacerCtxInit(&ctx, topo, ledger, req, moves, nmoves);
    vpPlacerPickInit(&choice.pick, req->vcpus);
    choice.level = VP_LEVEL_HOST;
    choice.index = -1;
    if (!vpPlacerPlaceParts(&ctx, plan, parts, &choice, error))
        goto out;

    plan->level = choice.level;
    plan->level_index = choice.level == VP_LEVEL_HOST ? -1 : choice.index;
    for (guint i = 0; i < choice.pick.reserved->len; i++)
        hwloc_bitmap_set(plan->reserved,
                         vpTopologyPU(topo, g_array_index(choice.pick.reserved, int, i))->os);
    if (req->policy.smt == VP_SMT_PACK && !plan->degraded && !req->online)
        packTopology(plan, topo, req, &choice);
    if (req->policy.smt == VP_SMT_PACK)
        plan->beside_others = packBesideOthers(&ctx, &choice);
    /* the emulator too stays inside the cpuset and the hard nodes */
    if (req->cpuset || (vpMemModeHard(req->mem_mode) && req->nodeset)) {
        g_autoptr(vpBitmap) cpu_nodes = vpMemModeHard(req->mem_mode) && req->nodeset
                                            ? vpTopologyCpuNodesOf(topo, req->nodeset)
                                            : NULL;
        vpPart whole = {.hard = cpu_nodes};

        dom_ok = vpPlacerPartMask(&ctx, plan, &whole, 0, NULL, NULL, false);
        vpPlacerCtxSetMask(&ctx, dom_ok);
    }
    if (req->emulator_pin)
        hwloc_bitmap_copy(plan->emulator, req->emulator_pin);
    else if (!vpPlacerPlaceEmulator(&ctx, plan, &choice, error))
        goto out;
    if (req->cpuset && !req->emulator_pin &&
        !hwloc_bitmap_isincluded(plan->emulator, req->cpuset)) {
        hwloc_bitmap_and(plan->emulator, plan->emulator, req->cpuset);
        if (hwloc_bitmap_iszero(plan->emulator)) {
            for (unsigned i = 0; i < plan->nvcpus; i++) {
                if (plan->vcpu_pu[i] >= 0)
                    hwloc_bitmap_set(plan->emulator, plan->vcpu_pu[i]);
            }
        }
    }
    holdOwnPins(plan, req);
    if (req->cpuset)
        plan->cpuset = hwloc_bitmap_dup(req->cpuset);
    ok = true;

out:
    vpPlacerPickClear(&choice.pick);
    vpPlacerCtxClear(&ctx);
    return ok ? g_steal_pointer(&plan) : NULL;
}

vpPlan *
vpPlace(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req, GError **error)
{
    return vpPlaceAfter(topo, ledger, req, NULL, 0, error);
}

vpPlan *
vpPlaceAfter(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
             const vpMove *moves, unsigned nmoves, GError **error)
{
    g_autoptr(GArray) parts = NULL;
    g_autofree unsigned *ids = NULL;
    g_autoptr(GError) first = NULL;
    vpPlan *plan;
    int usable = hwloc_bitmap_weight(vpTopologyUsableSet(topo));
    unsigned k = 0, nplan;

    if (req->vcpus == 0 || req->vcpus > req->max_vcpus) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain '%s': vcpus=%u is not within 1..%u",
                    req->name, req->vcpus, req->max_vcpus);
        return NULL;
    }
    if (!vpRequestIsQemu(req)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain '%s' is type='%s': vcpuplace places QEMU domains (type='kvm' or "
                    "'qemu') only",
                    req->name, req->type);
        return NULL;
    }
    if (req->has_pins)
        return placePinned(topo, req);
    if (req->policy.cpus != VP_CPUS_SHARED && (int)req->vcpus > usable) {
        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s': %u vCPUs exceed the %d PUs this host may hand out", req->name,
                    req->vcpus, usable);
        return NULL;
    }
    if (!vpPlacerCheckConstraints(topo, req, error))
        return NULL;
    if (req->policy.cpus == VP_CPUS_SHARED)
        return vpPlaceShared(topo, ledger, req, error);

    nplan = vpRequestPlanVcpus(req);
    ids = g_new(unsigned, nplan);
    for (unsigned i = 0; i < nplan; i++) {
        if (vpRequestOnline(req, i))
            ids[k++] = i;
    }
    parts = vpPlacerCutParts(topo, req, ids, k);
    if ((plan = placeWith(topo, ledger, req, moves, nmoves, parts, &first)) ||
        !g_error_matches(first, VP_ERROR, VP_ERROR_REFUSED) ||
        !vpPlacerSplittable(topo, ledger, req, parts)) {
        if (!plan)
            g_propagate_error(error, g_steal_pointer(&first));
        return plan;
    }
    unsigned most = MIN(k, (unsigned)vpTopologyNGroups(topo, VP_LEVEL_NUMA));

    for (unsigned split = 2; split <= most; split++) {
        g_autoptr(GArray) cut = vpPlacerSplitByMemory(req, ids, k, split);

        if ((plan = placeWith(topo, ledger, req, moves, nmoves, cut, NULL)))
            return plan;
    }
    {
        g_autofree char *share = vpMemoryFormat(req->memory / most);

        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "%s; nor cut over up to %u nodes (%s and its vCPUs on each)", first->message,
                    most, share);
    }
    return NULL;
}
