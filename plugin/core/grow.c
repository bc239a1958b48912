/*
 * Resizing a running domain's plan. New vCPUs are placed by vpPlace() itself, asked for
 * just the new vCPUs against a private copy of the ledger in which:
 * - the domain's own entry carries a trust group shared with the request (its real one
 *   when it shares cookies with its group, else one no domain can have), so the placer sees
 *   the domain's own cores as its group's: their siblings come before strangers';
 * - for the first attempt, every free PU outside the domain's locality group is held by a
 *   stand-in, so the new vCPUs stay beside the others while there is room there without a
 *   stranger's sibling; only then is the whole host asked.
 * The placer's rules thus stay in one place.
 */
#include "core/grow.h"
#include "core/placer.h"

#include <string.h>

/* Names that no libvirt domain and no trust group can have ('/' is refused by both). */
#define OUTSIDE_DOMAIN "/outside"
#define OWN_GROUP "/own"

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

static bool
sharesCookieWithGroup(const vpPolicy *policy)
{
    return policy->group &&
           (policy->coresched == VP_CORESCHED_GROUP || policy->coresched == VP_CORESCHED_OFF);
}

/* The private ledger: everyone as recorded, the domain itself (plan, new vCPUs not placed
 * yet) in the group the request will name. */
static vpLedger *
workLedger(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan,
           const vpPolicy *policy, GError **error)
{
    g_autoptr(vpLedger) work = vpLedgerNew(topo);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
    g_autoptr(vpPlan) self = vpPlanCopy(plan);

    for (guint i = 0; i < names->len; i++) {
        if (strcmp(names->pdata[i], plan->domain) == 0)
            continue;
        if (!vpLedgerAdd(work, vpLedgerLookup(ledger, names->pdata[i]), error))
            return NULL;
    }
    g_free(self->group);
    self->group = g_strdup(policy->group);
    vpPolicyClear(&self->policy);
    vpPolicyCopy(&self->policy, policy);
    if (!vpLedgerAdd(work, self, error))
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

static gboolean
grow(const vpTopology *topo, const vpLedger *ledger, vpPlan *plan, unsigned n, GError **error)
{
    unsigned old = plan->nvcpus;
    unsigned first;
    g_autoptr(vpRequest) req = NULL;
    g_autoptr(vpLedger) work = NULL;
    g_autoptr(vpPlan) sub = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *which = NULL;

    setVcpuCount(plan, n);
    first = plan->policy.smt == VP_SMT_PACK ? fillOwnReserved(topo, plan, old) : old;
    if (first == n)
        return TRUE;
    which = vcpuRange(first, n - 1);

    req = vpRequestNew(plan->domain, n - first);
    vpPolicyClear(&req->policy);
    vpPolicyCopy(&req->policy, &plan->policy);
    if (!sharesCookieWithGroup(&plan->policy)) {
        g_free(req->policy.group);
        req->policy.group = g_strdup(OWN_GROUP);
        req->policy.coresched = VP_CORESCHED_GROUP;
    }
    /* the emulator's PUs are the plan's business below, not the new vCPUs' */
    req->policy.emulator = VP_EMULATOR_VCPUS;
    if (!(work = workLedger(topo, ledger, plan, &req->policy, error)))
        return FALSE;

    sub = placeConfined(topo, work, plan, req);
    if (!sub) {
        sub = vpPlace(topo, work, req, &err);
        if (!sub && req->policy.unmet == VP_UNMET_REFUSE) {
            g_clear_error(&err);
            req->policy.unmet = VP_UNMET_DEGRADE;
            sub = vpPlace(topo, work, req, &err);
        }
        if (!sub) {
            vpPlanDegrade(plan, "%s hot-plugged but left unpinned: %s", which, err->message);
            return TRUE;
        }
    }
    for (unsigned i = 0; i < sub->nvcpus; i++)
        plan->vcpu_pu[first + i] = sub->vcpu_pu[i];
    hwloc_bitmap_or(plan->reserved, plan->reserved, sub->reserved);
    plan->overcommit |= sub->overcommit;
    if (sub->degraded)
        vpPlanDegrade(plan, "%s: %s", which, sub->degraded_reason);
    if (plan->level < VP_LEVEL_HOST && plan->level_index >= 0) {
        bool outside = false;

        for (unsigned i = 0; i < sub->nvcpus; i++)
            outside |= !insideLevel(topo, plan, sub->vcpu_pu[i]);
        if (outside) {
            vpPlanDegrade(plan, "%s placed outside the %s of the other vCPUs: no free core there",
                          which, vpLevelName(plan->level));
            relevel(topo, plan);
        }
    }
    return TRUE;
}

vpPlan *
vpPlanResize(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan, unsigned nvcpus,
             GError **error)
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
    else if (nvcpus > plan->nvcpus && !grow(topo, ledger, out, nvcpus, error))
        return NULL;
    /* an emulator floating over the domain's PUs follows them */
    if (floats) {
        g_autoptr(vpBitmap) now = vpPlanHeld(out);
        hwloc_bitmap_copy(out->emulator, now);
    }
    return g_steal_pointer(&out);
}
