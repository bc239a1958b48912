/*
 * Resizing a running domain's plan. New vCPUs are placed by vpPlace() itself, asked for
 * just the new vCPUs against a private copy of the ledger in which:
 * - the domain's own entry is the domain itself to the request (model/trust.h), so the
 *   placer sees the domain's own cores as its cookie group's: their siblings come before
 *   strangers';
 * - for the first attempt, every free PU outside the domain's locality group is held by a
 *   stand-in, so the new vCPUs stay beside the others while there is room there without a
 *   stranger's sibling; only then is the whole host asked.
 * The placer's rules thus stay in one place.
 */
#include "core/place/grow.h"
#include "core/place/placer.h"

#include <string.h>

/* A name that no libvirt domain can have ('/' is refused). */
#define OUTSIDE_DOMAIN "/outside"

/* "vCPU 2" or "vCPUs 2-3", for messages. */
static char *
vcpuRange(unsigned first, unsigned last)
{
    if (first == last)
        return g_strdup_printf("vCPU %u", first);
    return g_strdup_printf("vCPUs %u-%u", first, last);
}

static int
coreOf(const vpTopology *topo, int os)
{
    int pu = vpTopologyPUByOS(topo, os);

    return pu < 0 ? -1 : vpTopologyPU(topo, pu)->core;
}

static bool
coreHoldsVcpu(const vpTopology *topo, const vpPlan *plan, int core)
{
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] >= 0 && coreOf(topo, plan->vcpu_pu[i]) == core)
            return true;
    }
    return false;
}

/* The dedicated emulator PU sits in reserved (ledger.c); it stays whatever vCPUs do. */
static bool
isDedicatedEmulator(const vpPlan *plan, int os)
{
    return !hwloc_bitmap_iszero(plan->emulator) &&
           hwloc_bitmap_isincluded(plan->emulator, plan->reserved) &&
           hwloc_bitmap_isset(plan->emulator, os);
}

static void
setVcpuCount(vpPlan *plan, unsigned n)
{
    plan->vcpu_pu = g_renew(int, plan->vcpu_pu, MAX(n, 1));
    for (unsigned i = plan->nvcpus; i < n; i++)
        plan->vcpu_pu[i] = -1;
    plan->nvcpus = n;
}

/* Reserved siblings are held for the vCPUs on their core: none left there, none held. */
static void
dropOrphanReserved(const vpTopology *topo, vpPlan *plan)
{
    g_autoptr(vpBitmap) keep = hwloc_bitmap_alloc();
    int os;

    hwloc_bitmap_foreach_begin(os, plan->reserved)
    {
        if (isDedicatedEmulator(plan, os) || coreHoldsVcpu(topo, plan, coreOf(topo, os)))
            hwloc_bitmap_set(keep, os);
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_copy(plan->reserved, keep);
}

static void
shrink(const vpTopology *topo, vpPlan *plan, unsigned n)
{
    g_autoptr(GArray) freed = g_array_new(FALSE, FALSE, sizeof(int));

    for (unsigned i = n; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] >= 0)
            g_array_append_val(freed, plan->vcpu_pu[i]);
    }
    setVcpuCount(plan, n);
    plan->beside_others = MIN(plan->beside_others, n);
    /* pack owns whole cores: a sibling its vCPU left stays held, idle, like the placer's */
    if (plan->policy.smt == VP_SMT_PACK) {
        for (guint i = 0; i < freed->len; i++) {
            int os = g_array_index(freed, int, i);

            if (coreHoldsVcpu(topo, plan, coreOf(topo, os)))
                hwloc_bitmap_set(plan->reserved, os);
        }
    }
    dropOrphanReserved(topo, plan);
}

/* pack: the idle siblings it holds beside its vCPUs are where its next vCPUs go. */
static unsigned
fillOwnReserved(const vpTopology *topo, vpPlan *plan, unsigned from)
{
    g_autoptr(vpBitmap) candidates = hwloc_bitmap_alloc();
    unsigned next = from;
    int os;

    hwloc_bitmap_foreach_begin(os, plan->reserved)
    {
        if (!isDedicatedEmulator(plan, os) && coreHoldsVcpu(topo, plan, coreOf(topo, os)))
            hwloc_bitmap_set(candidates, os);
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_foreach_begin(os, candidates)
    {
        if (next >= plan->nvcpus)
            break;
        plan->vcpu_pu[next++] = os;
        hwloc_bitmap_clr(plan->reserved, os);
    }
    hwloc_bitmap_foreach_end();
    return next;
}

/* The private ledger: everyone as recorded, the domain itself as the resize has it so far
 * (its new vCPUs placed by the runs before, the others not yet). */
static vpLedger *
workLedger(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan, GError **error)
{
    g_autoptr(vpLedger) work = vpLedgerNew(topo);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);

    for (guint i = 0; i < names->len; i++) {
        if (strcmp(names->pdata[i], plan->domain) == 0)
            continue;
        if (!vpLedgerAdd(work, vpLedgerLookup(ledger, names->pdata[i]), error))
            return NULL;
    }
    if (!vpLedgerAdd(work, plan, error))
        return NULL;
    return g_steal_pointer(&work);
}

/* Holds every free usable PU outside the domain's locality group, so that the placer
 * looks only inside it. NULL when that changes nothing (the domain's level is the whole
 * host, or nothing outside is free). */
static vpLedger *
confine(const vpTopology *topo, const vpLedger *work, const vpPlan *plan, GError **error)
{
    g_autoptr(GArray) outside = g_array_new(FALSE, FALSE, sizeof(int));
    g_autoptr(vpLedger) confined = NULL;
    g_autoptr(GPtrArray) names = NULL;
    g_autoptr(vpPlan) stand = NULL;

    if (plan->level >= VP_LEVEL_HOST || plan->level_index < 0 ||
        plan->level_index >= vpTopologyNGroups(topo, plan->level))
        return NULL;
    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++) {
        const vpPU *p = vpTopologyPU(topo, pu);

        if (p->usable && vpLedgerPUFree(work, pu) &&
            vpTopologyCore(topo, p->core)->group[plan->level] != plan->level_index)
            g_array_append_val(outside, p->os);
    }
    if (!outside->len)
        return NULL; /* nothing free outside: the whole host is the group's answer */
    stand = vpPlanNew(OUTSIDE_DOMAIN, outside->len);
    for (guint i = 0; i < outside->len; i++)
        stand->vcpu_pu[i] = g_array_index(outside, int, i);
    confined = vpLedgerNew(topo);
    names = vpLedgerDomains(work);
    for (guint i = 0; i < names->len; i++) {
        if (!vpLedgerAdd(confined, vpLedgerLookup(work, names->pdata[i]), error))
            return NULL;
    }
    if (!vpLedgerAdd(confined, stand, error))
        return NULL;
    return g_steal_pointer(&confined);
}

/* Whether the core of a PU already holds anything (recorded before this placement). */
static bool
coreBusy(const vpTopology *topo, const vpLedger *work, int os)
{
    const vpCore *core = vpTopologyCore(topo, coreOf(topo, os));

    for (int i = 0; i < core->npus; i++) {
        if (!vpLedgerPUFree(work, core->pus[i]))
            return true;
    }
    return false;
}

/*
 * Within the locality group, but only as the placer would have chosen on the whole host:
 * spread (and isolate, pack) put a vCPU on a busy core's sibling only when no free core is
 * left anywhere, so a confined pick that shares a core yields to the whole host's answer;
 * share has no sibling preference, and locality is all it asks for.
 */
static vpPlan *
placeConfined(const vpTopology *topo, const vpLedger *work, const vpPlan *plan,
              const vpRequest *req)
{
    g_autoptr(vpLedger) confined = confine(topo, work, plan, NULL);
    g_autoptr(vpPlan) sub = NULL;

    if (!confined)
        return NULL;
    sub = vpPlace(topo, confined, req, NULL);
    if (!sub || sub->degraded)
        return NULL;
    for (unsigned i = 0; req->policy.smt != VP_SMT_SHARE && i < sub->nvcpus; i++) {
        if (coreBusy(topo, work, sub->vcpu_pu[i]))
            return NULL;
    }
    return g_steal_pointer(&sub);
}

static bool
insideLevel(const vpTopology *topo, const vpPlan *plan, int os)
{
    int core = coreOf(topo, os);

    return core >= 0 && vpTopologyCore(topo, core)->group[plan->level] == plan->level_index;
}

/* The smallest level whose one group holds every vCPU's core. */
static void
relevel(const vpTopology *topo, vpPlan *plan)
{
    static const vpLevel levels[] = {VP_LEVEL_L3, VP_LEVEL_NUMA, VP_LEVEL_PACKAGE};

    for (gsize l = 0; l < G_N_ELEMENTS(levels); l++) {
        int group = -2;
        bool one = true;

        for (unsigned i = 0; i < plan->nvcpus && one; i++) {
            int c = plan->vcpu_pu[i] >= 0 ? coreOf(topo, plan->vcpu_pu[i]) : -1;
            int g = c >= 0 ? vpTopologyCore(topo, c)->group[levels[l]] : -1;

            if (c < 0)
                continue;
            one = group == -2 || group == g;
            group = g;
        }
        if (one && group >= 0) {
            plan->level = levels[l];
            plan->level_index = group;
            return;
        }
    }
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
}

static bool
hardMode(vpMemMode mode)
{
    return mode == VP_MEM_STRICT || mode == VP_MEM_RESTRICTIVE;
}

static const vpCell *
cellOf(const vpRequest *req, unsigned v)
{
    for (unsigned c = 0; req && c < req->ncells; c++) {
        if (hwloc_bitmap_isset(req->cells[c].vcpus, v))
            return &req->cells[c];
    }
    return NULL;
}

static int
nodeOf(const vpTopology *topo, int os)
{
    int pu = os >= 0 ? vpTopologyPUByOS(topo, os) : -1;
    const vpGroup *node =
        pu >= 0 ? vpTopologyGroup(topo, VP_LEVEL_NUMA, vpTopologyNodeOfPU(topo, pu)) : NULL;

    return node && !node->made_up ? (int)node->os : -1;
}

/* Where hot-plugged vCPU v may go (hard: the strict or restrictive nodeset of its cell or
 * of the domain, empty when none) and where it goes first (near: its cell's node, as the
 * cell's other vCPUs show it, or the nodes the domain's memory is on), OS node numbers. */
static void
vcpuNodes(const vpTopology *topo, const vpPlan *plan, const vpRequest *req, unsigned v,
          unsigned old, hwloc_bitmap_t hard, hwloc_bitmap_t near)
{
    const vpCell *cell = cellOf(req, v);
    vpMemMode mode = req ? req->mem_mode : VP_MEM_NONE;
    hwloc_const_bitmap_t nodeset = req ? req->nodeset : NULL;

    hwloc_bitmap_zero(hard);
    hwloc_bitmap_zero(near);
    if (cell && cell->mode != VP_MEM_NONE) {
        mode = cell->mode;
        nodeset = cell->nodeset;
    }
    /* only the nodes this host has (the placer refuses a nodeset naming others), CPU-less
     * ones included: the placer runs vCPUs bound to those near them */
    if (hardMode(mode) && nodeset)
        hwloc_bitmap_and(hard, nodeset, vpTopologyNodeSet(topo));
    for (unsigned i = 0; cell && i < old; i++) {
        int node = nodeOf(topo, plan->vcpu_pu[i]);

        if (node >= 0 && hwloc_bitmap_isset(cell->vcpus, i))
            hwloc_bitmap_set(near, node);
    }
    for (unsigned i = 0; !cell && i < plan->nmem; i++) {
        if (plan->mem[i].bytes)
            hwloc_bitmap_set(near, plan->mem[i].node);
    }
    if (!hwloc_bitmap_iszero(hard) && !hwloc_bitmap_iszero(near))
        hwloc_bitmap_and(near, near, hard);
    if (hwloc_bitmap_iszero(near))
        hwloc_bitmap_copy(near, hard);
}

/* The request for vCPUs first..last of plan inside nodes (none: anywhere). */
static vpRequest *
subRequest(const vpPlan *plan, const vpRequest *req, unsigned first, unsigned last,
           hwloc_const_bitmap_t nodes)
{
    vpRequest *sub = vpRequestNew(plan->domain, last - first + 1);

    vpPolicyClear(&sub->policy);
    vpPolicyCopy(&sub->policy, &plan->policy);
    /* the emulator's PUs are the plan's business, not the new vCPUs' */
    sub->policy.emulator = VP_EMULATOR_VCPUS;
    if (nodes && !hwloc_bitmap_iszero(nodes)) {
        sub->mem_mode = VP_MEM_STRICT;
        sub->nodeset = hwloc_bitmap_dup(nodes);
    }
    if (req && req->cpuset)
        sub->cpuset = hwloc_bitmap_dup(req->cpuset);
    return sub;
}

/* Places vCPUs first..last inside nodes: beside the others, then anywhere there, the policy
 * relaxed last. NULL with the placer's reason. */
static vpPlan *
placeRun(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan, const vpRequest *req,
         unsigned first, unsigned last, hwloc_const_bitmap_t nodes, GError **error)
{
    g_autoptr(vpRequest) sub = subRequest(plan, req, first, last, nodes);
    g_autoptr(vpLedger) work = workLedger(topo, ledger, plan, error);
    vpPlan *placed;

    if (!work)
        return NULL;
    if ((placed = placeConfined(topo, work, plan, sub)))
        return placed;
    g_autoptr(GError) err = NULL;
    if ((placed = vpPlace(topo, work, sub, &err)) || sub->policy.unmet != VP_UNMET_REFUSE) {
        if (!placed)
            g_propagate_error(error, g_steal_pointer(&err));
        return placed;
    }
    sub->policy.unmet = VP_UNMET_DEGRADE;
    return vpPlace(topo, work, sub, error);
}

/* vCPUs first..last (one cell, or none): near their memory, else anywhere their hard nodes
 * allow (said), else left unpinned (said). A hard nodeset is never left. */
static void
growRun(const vpTopology *topo, const vpLedger *ledger, vpPlan *plan, const vpRequest *req,
        unsigned first, unsigned last, hwloc_const_bitmap_t hard, hwloc_const_bitmap_t near)
{
    g_autofree char *which = vcpuRange(first, last);
    g_autofree char *where = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpPlan) sub = placeRun(topo, ledger, plan, req, first, last, near, &err);

    if (!sub && !hwloc_bitmap_isequal(near, hard)) {
        g_autofree char *list = vpCpuListFormat(near);

        g_clear_error(&err);
        sub = placeRun(topo, ledger, plan, req, first, last, hard, &err);
        where = g_strdup_printf("outside node(s) %s where %s memory is", list,
                                cellOf(req, first) ? "its guest cell's" : "the domain's");
    }
    if (!sub) {
        vpPlanDegrade(plan, "%s hot-plugged but left unpinned: %s", which, err->message);
        return;
    }
    for (unsigned i = 0; i < sub->nvcpus; i++)
        plan->vcpu_pu[first + i] = sub->vcpu_pu[i];
    hwloc_bitmap_or(plan->reserved, plan->reserved, sub->reserved);
    plan->overcommit |= sub->overcommit;
    plan->beside_others = MIN(plan->beside_others + sub->beside_others, plan->nvcpus);
    if (where)
        vpPlanDegrade(plan, "%s placed %s: no room there", which, where);
    if (sub->degraded)
        vpPlanDegrade(plan, "%s: %s", which, sub->degraded_reason);
}

static void
grow(const vpTopology *topo, const vpLedger *ledger, vpPlan *plan, const vpRequest *req, unsigned n)
{
    unsigned old = plan->nvcpus;
    unsigned first;
    g_autoptr(vpBitmap) hard = hwloc_bitmap_alloc();
    g_autoptr(vpBitmap) near = hwloc_bitmap_alloc();
    g_autoptr(vpBitmap) hard2 = hwloc_bitmap_alloc();
    g_autoptr(vpBitmap) near2 = hwloc_bitmap_alloc();
    bool outside = false;

    setVcpuCount(plan, n);
    /* pack's idle siblings sit beside its cells' vCPUs: a new vCPU of another cell is not
     * theirs */
    first = plan->policy.smt == VP_SMT_PACK && !(req && req->ncells)
                ? fillOwnReserved(topo, plan, old)
                : old;
    /* runs of new vCPUs that share their nodes, each placed with what the runs before took */
    for (unsigned a = first, b; a < n; a = b) {
        vcpuNodes(topo, plan, req, a, old, hard, near);
        for (b = a + 1; b < n; b++) {
            vcpuNodes(topo, plan, req, b, old, hard2, near2);
            if (!hwloc_bitmap_isequal(hard, hard2) || !hwloc_bitmap_isequal(near, near2))
                break;
        }
        growRun(topo, ledger, plan, req, a, b - 1, hard, near);
    }
    if (plan->level < VP_LEVEL_HOST && plan->level_index >= 0) {
        for (unsigned i = first; i < n; i++)
            outside |= plan->vcpu_pu[i] >= 0 && !insideLevel(topo, plan, plan->vcpu_pu[i]);
        if (outside) {
            g_autofree char *which = vcpuRange(first, n - 1);

            vpPlanDegrade(plan, "%s placed outside the %s of the other vCPUs: no free core there",
                          which, vpLevelName(plan->level));
            relevel(topo, plan);
        }
    }
}

vpPlan *
vpPlanResize(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan,
             const vpRequest *req, unsigned nvcpus, GError **error)
{
    g_autoptr(vpPlan) out = NULL;
    g_autoptr(vpBitmap) held = vpPlanHeld(plan);
    bool floats =
        !hwloc_bitmap_iszero(plan->emulator) && hwloc_bitmap_isequal(plan->emulator, held);

    if (nvcpus == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain '%s': cannot resize to 0 vCPUs",
                    plan->domain);
        return NULL;
    }
    if (plan->how == VP_HOW_PINNED) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain '%s' keeps its own <cputune> pins; vcpuplace does not resize them",
                    plan->domain);
        return NULL;
    }
    out = vpPlanCopy(plan);
    if (nvcpus < plan->nvcpus)
        shrink(topo, out, nvcpus);
    else if (nvcpus > plan->nvcpus)
        grow(topo, ledger, out, req, nvcpus);
    /* an emulator floating over the domain's PUs follows them */
    if (floats) {
        g_autoptr(vpBitmap) now = vpPlanHeld(out);
        hwloc_bitmap_copy(out->emulator, now);
    }
    return g_steal_pointer(&out);
}
