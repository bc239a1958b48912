/*
 * Applying the rebalancer's moves to a ledger: each moved plan keeps its reserved PUs,
 * emulator and level consistent with where its vCPUs now run.
 */
#include "core/balance/rebalpriv.h"

static hwloc_bitmap_t
vcpuSet(const vpPlan *plan)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();

    for (unsigned v = 0; v < plan->nvcpus; v++) {
        if (plan->vcpu_pu[v] >= 0)
            hwloc_bitmap_set(set, plan->vcpu_pu[v]);
    }
    return set;
}

/* Cores (as a set of core indexes) that hold the plan's vCPUs. */
static hwloc_bitmap_t
coreSet(const vpTopology *topo, const vpPlan *plan)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();

    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[v]) : -1;

        if (pu >= 0)
            hwloc_bitmap_set(set, vpTopologyPU(topo, pu)->core);
    }
    return set;
}

/* isolate and pack hold whole cores: the siblings of a core left behind are released, the
 * siblings of a core moved onto are reserved. A dedicated emulator PU stays put. */
static void
carryReserved(const vpTopology *topo, const vpPlan *old, vpPlan *plan)
{
    hwloc_bitmap_t before = coreSet(topo, old), after = coreSet(topo, plan);
    hwloc_bitmap_t vcpus = vcpuSet(plan);
    bool dedicated = vpRbDedicatedEmulator(old);
    int os, c;

    hwloc_bitmap_foreach_begin(os, old->reserved)
    {
        int pu = vpTopologyPUByOS(topo, os);

        if (pu < 0 || (dedicated && hwloc_bitmap_isset(old->emulator, os)))
            continue;
        if (!hwloc_bitmap_isset(after, vpTopologyPU(topo, pu)->core))
            hwloc_bitmap_clr(plan->reserved, os);
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_foreach_begin(c, after)
    {
        const vpCore *core = vpTopologyCore(topo, c);

        if (hwloc_bitmap_isset(before, c))
            continue;
        for (int i = 0; i < core->npus; i++) {
            unsigned pos = vpTopologyPU(topo, core->pus[i])->os;

            if (!hwloc_bitmap_isset(vcpus, pos))
                hwloc_bitmap_set(plan->reserved, pos);
        }
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_free(before);
    hwloc_bitmap_free(after);
    hwloc_bitmap_free(vcpus);
}

/* An emulator that floated over the vCPU PUs (and reserved siblings) keeps doing so. */
static void
carryEmulator(const vpPlan *old, vpPlan *plan)
{
    hwloc_bitmap_t was = vcpuSet(old), now = vcpuSet(plan);

    hwloc_bitmap_or(was, was, old->reserved);
    hwloc_bitmap_or(now, now, plan->reserved);
    if (!hwloc_bitmap_iszero(old->emulator) && hwloc_bitmap_isequal(old->emulator, was))
        hwloc_bitmap_copy(plan->emulator, now);
    hwloc_bitmap_free(was);
    hwloc_bitmap_free(now);
}

/* The smallest level, from the plan's own upwards, whose one group holds every vCPU. */
static void
widenLevel(const vpTopology *topo, vpPlan *plan)
{
    for (int l = MAX(plan->level, VP_LEVEL_CLUSTER); l < VP_LEVEL_HOST; l++) {
        int idx = -1;
        bool one = true;

        for (unsigned v = 0; v < plan->nvcpus && one; v++) {
            int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[v]) : -1;
            int g;

            if (pu < 0)
                continue;
            g = vpTopologyCore(topo, vpTopologyPU(topo, pu)->core)->group[l];
            one = idx < 0 || g == idx;
            idx = g;
        }
        if (one && idx >= 0) {
            if (l != (int)plan->level || idx != plan->level_index) {
                plan->level = l;
                plan->level_index = idx;
            }
            return;
        }
    }
    plan->level = VP_LEVEL_HOST;
    plan->level_index = -1;
}

/* An overcommitted smt=share plan whose vCPUs no longer time-share any PU (moves took them
 * or their neighbours apart) is no longer degraded for that reason: the flag and the
 * placer's "smt=share overcommitted: ..." part of the reason go, so that status shows what
 * holds now. */
static void
settleOvercommit(vpLedger *ledger)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);

    for (guint i = 0; i < names->len; i++) {
        const vpPlan *cur = vpLedgerLookup(ledger, g_ptr_array_index(names, i));
        g_autoptr(vpPlan) plan = NULL;
        g_auto(GStrv) parts = NULL;
        g_autoptr(GStrvBuilder) kept = NULL;
        g_auto(GStrv) left = NULL;
        bool shared = false;

        if (!cur->overcommit)
            continue;
        for (unsigned v = 0; v < cur->nvcpus && !shared; v++) {
            int pu = cur->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(topo, cur->vcpu_pu[v]) : -1;

            shared = pu >= 0 && vpLedgerNOwners(ledger, pu) > 1;
        }
        if (shared)
            continue;
        plan = vpPlanCopy(cur);
        plan->overcommit = false;
        kept = g_strv_builder_new();
        parts = g_strsplit(plan->degraded_reason ? plan->degraded_reason : "", "; ", -1);
        for (char **p = parts; *p; p++) {
            if (**p && !g_str_has_prefix(*p, "smt=share overcommitted"))
                g_strv_builder_add(kept, *p);
        }
        left = g_strv_builder_end(kept);
        g_free(plan->degraded_reason);
        plan->degraded_reason = left[0] ? g_strjoinv("; ", left) : NULL;
        plan->degraded = plan->degraded_reason != NULL;
        /* the same PUs, one holder each: replacing cannot fail */
        if (!vpLedgerReplace(ledger, plan, NULL))
            g_assert_not_reached();
    }
}

bool
vpRebalanceApply(vpLedger *ledger, GPtrArray *moves, GError **error)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    g_autoptr(GPtrArray) olds = g_ptr_array_new_with_free_func((GDestroyNotify)vpPlanFree);
    g_autoptr(GPtrArray) news = g_ptr_array_new_with_free_func((GDestroyNotify)vpPlanFree);
    guint done;

    for (guint i = 0; i < moves->len; i++) {
        const vpMove *m = g_ptr_array_index(moves, i);
        vpPlan *plan = NULL;

        for (guint k = 0; k < news->len && !plan; k++) {
            if (strcmp(((vpPlan *)g_ptr_array_index(news, k))->domain, m->domain) == 0)
                plan = g_ptr_array_index(news, k);
        }
        if (!plan) {
            const vpPlan *cur = vpLedgerLookup(ledger, m->domain);

            if (!cur) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "move of vCPU %u: domain '%s' is not in the ledger", m->vcpu,
                            m->domain);
                return false;
            }
            g_ptr_array_add(olds, vpPlanCopy(cur));
            plan = vpPlanCopy(cur);
            g_ptr_array_add(news, plan);
        }
        if (m->vcpu >= plan->nvcpus || plan->vcpu_pu[m->vcpu] != (int)m->from ||
            vpTopologyPUByOS(topo, m->to) < 0) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "move of vCPU %u of '%s' from CPU %u to CPU %u does not match the "
                        "ledger (vCPU %s)",
                        m->vcpu, m->domain, m->from, m->to,
                        m->vcpu < plan->nvcpus ? "is elsewhere or the target is unknown"
                                               : "does not exist");
            return false;
        }
        plan->vcpu_pu[m->vcpu] = m->to;
    }
    for (guint k = 0; k < news->len; k++) {
        const vpPlan *old = g_ptr_array_index(olds, k);
        vpPlan *plan = g_ptr_array_index(news, k);

        if (vpRbWholeCores(old))
            carryReserved(topo, old, plan);
        carryEmulator(old, plan);
        widenLevel(topo, plan);
    }
    for (done = 0; done < news->len; done++) {
        if (!vpLedgerReplace(ledger, g_ptr_array_index(news, done), error))
            break;
    }
    if (done == news->len) {
        settleOvercommit(ledger);
        return true;
    }
    while (done-- > 0)
        vpLedgerReplace(ledger, g_ptr_array_index(olds, done), NULL);
    return false;
}
