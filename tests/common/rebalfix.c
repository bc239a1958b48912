/*
 * The rebalancer's test fixtures; see rebalfix.h.
 */
#include "rebalfix.h"

#include <check.h>
#include <string.h>

vpTopology *
vpFixTopology(int packages, int numa, int l3, int cores, int threads)
{
    vpTopology *topo = vpTopologyNew();
    int total = packages * numa * l3 * cores;
    g_autoptr(GError) err = NULL;

    for (int t = 0; t < threads; t++) {
        for (int g = 0; g < total; g++) {
            int l = g / cores, n = l / l3, pkg = n / numa;

            vpTopologyAddPU(topo, t * total + g, pkg, n, l, -1, g, true);
        }
    }
    ck_assert_msg(vpTopologyFinalize(topo, NULL, NULL, &err), "%s", err ? err->message : "");
    return topo;
}

int
vpFixPU(const vpTopology *topo, unsigned os)
{
    int pu = vpTopologyPUByOS(topo, os);

    ck_assert_int_ge(pu, 0);
    return pu;
}

int
vpFixCoreOf(const vpTopology *topo, unsigned os)
{
    return vpTopologyPU(topo, vpFixPU(topo, os))->core;
}

int
vpFixGroupOf(const vpTopology *topo, unsigned os, vpLevel level)
{
    return vpTopologyCore(topo, vpFixCoreOf(topo, os))->group[level];
}

/* The smallest level whose one group holds every vCPU, as the placer records it. */
static void
setLevel(const vpTopology *topo, vpPlan *plan)
{
    for (int l = VP_LEVEL_L3; l < VP_LEVEL_HOST; l++) {
        int idx = vpFixGroupOf(topo, plan->vcpu_pu[0], l);
        bool one = true;

        for (unsigned v = 1; v < plan->nvcpus; v++)
            one &= vpFixGroupOf(topo, plan->vcpu_pu[v], l) == idx;
        if (one) {
            plan->level = l;
            plan->level_index = idx;
            return;
        }
    }
}

vpPlan *
vpFixPlan(const vpTopology *topo, const char *domain, const char *smt, const char *group,
          const int *cpus, unsigned n, const int *reserved, unsigned nres)
{
    vpPlan *plan = vpPlanNew(domain, n);
    g_autoptr(GError) err = NULL;

    ck_assert(vpPolicySetAttr(&plan->policy, "smt", smt, &err));
    if (group) {
        plan->policy.group = g_strdup(group);
    }
    for (unsigned v = 0; v < n; v++) {
        plan->vcpu_pu[v] = cpus[v];
        hwloc_bitmap_set(plan->emulator, cpus[v]);
    }
    for (unsigned r = 0; r < nres; r++) {
        hwloc_bitmap_set(plan->reserved, reserved[r]);
        hwloc_bitmap_set(plan->emulator, reserved[r]);
    }
    setLevel(topo, plan);
    return plan;
}

vpPlan *
vpFixGroupPlan(const vpTopology *topo, const char *domain, const char *smt, const char *group,
               const int *cpus, unsigned n)
{
    vpPlan *plan = vpFixPlan(topo, domain, smt, group, cpus, n, NULL, 0);
    g_autoptr(GError) err = NULL;

    ck_assert_msg(vpPolicySetAttr(&plan->policy, "coresched", "group", &err), "%s",
                  err ? err->message : "");
    return plan;
}

bool
vpFixNotesHave(const GPtrArray *notes, const char *needle)
{
    for (guint i = 0; i < notes->len; i++) {
        if (strstr(g_ptr_array_index(notes, i), needle))
            return true;
    }
    return false;
}

void
vpFixAddPlan(vpLedger *ledger, vpPlan *plan)
{
    g_autoptr(GError) err = NULL;

    ck_assert_msg(vpLedgerAdd(ledger, plan, &err), "%s", err ? err->message : "");
    vpPlanFree(plan);
}

static GHashTable *
snapshot(const vpLedger *ledger)
{
    GHashTable *copy =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)vpPlanFree);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);

    for (guint i = 0; i < names->len; i++) {
        vpPlan *plan = vpPlanCopy(vpLedgerLookup(ledger, g_ptr_array_index(names, i)));

        g_hash_table_insert(copy, plan->domain, plan);
    }
    return copy;
}

static bool
trusted(const vpLedger *ledger, const vpPlan *plan, const char *other)
{
    const vpPlan *o = vpLedgerLookup(ledger, other);

    if (strcmp(other, plan->domain) == 0)
        return true;
    if (plan->policy.group && o->policy.group && strcmp(plan->policy.group, o->policy.group) == 0)
        return true;
    return plan->policy.smt == VP_SMT_SHARE && o->policy.smt == VP_SMT_SHARE;
}

static int
siblingIndex(const vpTopology *topo, unsigned os)
{
    const vpCore *core = vpTopologyCore(topo, vpFixCoreOf(topo, os));
    int pu = vpFixPU(topo, os);

    for (int i = 0; i < core->npus; i++) {
        if (core->pus[i] == pu)
            return i;
    }
    ck_abort();
    return -1;
}

void
vpFixCheckMoves(const vpLedger *ledger, GHashTable *before, GPtrArray *moves)
{
    const vpTopology *topo = vpLedgerTopology(ledger);
    g_autoptr(GError) err = NULL;
    GHashTableIter it;
    gpointer key, value;

    ck_assert_msg(vpLedgerCheck(ledger, &err), "%s", err ? err->message : "");
    for (guint i = 0; i < moves->len; i++) {
        const vpMove *m = g_ptr_array_index(moves, i);
        const vpPlan *b = g_hash_table_lookup(before, m->domain);
        const vpPlan *a = vpLedgerLookup(ledger, m->domain);
        const vpCore *core = vpTopologyCore(topo, vpFixCoreOf(topo, m->to));

        ck_assert_ptr_nonnull(b);
        ck_assert_int_ne(b->how, VP_HOW_PINNED);
        ck_assert_int_ne(b->policy.rebalance, VP_REBALANCE_OFF);
        ck_assert_int_eq(b->vcpu_pu[m->vcpu], m->from);
        ck_assert_int_eq(a->vcpu_pu[m->vcpu], m->to);
        ck_assert_int_eq(vpFixGroupOf(topo, m->from, VP_LEVEL_NUMA),
                         vpFixGroupOf(topo, m->to, VP_LEVEL_NUMA));
        if (b->policy.locality == VP_LOCALITY_L3)
            ck_assert_int_eq(vpFixGroupOf(topo, m->from, VP_LEVEL_L3),
                             vpFixGroupOf(topo, m->to, VP_LEVEL_L3));
        ck_assert_msg(strstr(m->reason, "CPU") && strstr(m->reason, "%"),
                      "reason without figures: %s", m->reason);

        for (int k = 0; k < core->npus; k++) {
            vpOwner o = vpLedgerOwner(ledger, core->pus[k]);

            if (!o.domain)
                continue;
            if (b->policy.smt == VP_SMT_ISOLATE || b->policy.smt == VP_SMT_PACK)
                ck_assert_msg(strcmp(o.domain, m->domain) == 0,
                              "%s (smt=%s) moved to CPU %u next to %s", m->domain,
                              vpSmtName(b->policy.smt), m->to, o.domain);
            else
                ck_assert_msg(trusted(ledger, a, o.domain),
                              "%s (smt=%s) moved to CPU %u next to %s", m->domain,
                              vpSmtName(b->policy.smt), m->to, o.domain);
        }
        if (b->policy.smt == VP_SMT_ISOLATE) {
            for (int k = 0; k < core->npus; k++) {
                vpOwner o = vpLedgerOwner(ledger, core->pus[k]);

                ck_assert_str_eq(o.domain, m->domain);
                if (vpTopologyPU(topo, core->pus[k])->os != m->to)
                    ck_assert_int_ne(o.kind, VP_OWN_VCPU);
            }
            core = vpTopologyCore(topo, vpFixCoreOf(topo, m->from));
            for (int k = 0; k < core->npus; k++) {
                vpOwner o = vpLedgerOwner(ledger, core->pus[k]);

                ck_assert_msg(!o.domain || strcmp(o.domain, m->domain) != 0,
                              "%s kept CPU %u of the core it left", m->domain,
                              vpTopologyPU(topo, core->pus[k])->os);
            }
        }
        if (b->policy.smt == VP_SMT_PACK) {
            for (unsigned x = 0; x < b->nvcpus; x++) {
                for (unsigned y = x + 1; y < b->nvcpus; y++) {
                    bool was = vpFixCoreOf(topo, b->vcpu_pu[x]) == vpFixCoreOf(topo, b->vcpu_pu[y]);
                    bool is = vpFixCoreOf(topo, a->vcpu_pu[x]) == vpFixCoreOf(topo, a->vcpu_pu[y]);

                    ck_assert_msg(was == is, "pack %s: vCPUs %u and %u %s a core", m->domain, x, y,
                                  was ? "no longer share" : "now share");
                    if (is)
                        ck_assert_int_eq(
                            siblingIndex(topo, b->vcpu_pu[x]) < siblingIndex(topo, b->vcpu_pu[y]),
                            siblingIndex(topo, a->vcpu_pu[x]) < siblingIndex(topo, a->vcpu_pu[y]));
                }
            }
        }
    }
    /* nothing else changed */
    g_hash_table_iter_init(&it, before);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const vpPlan *b = value, *a = vpLedgerLookup(ledger, key);

        ck_assert_ptr_nonnull(a);
        for (unsigned v = 0; v < b->nvcpus; v++) {
            bool moved = false;

            for (guint i = 0; i < moves->len; i++) {
                const vpMove *m = g_ptr_array_index(moves, i);

                moved |= strcmp(m->domain, b->domain) == 0 && m->vcpu == v;
            }
            if (!moved)
                ck_assert_int_eq(a->vcpu_pu[v], b->vcpu_pu[v]);
        }
    }
}

/* Plan, apply, check, commit: one interval of the daemon's loop. */
GPtrArray *
vpFixPass(vpRebalancer *rb, vpPressure *p, vpLedger *ledger, gint64 now, GPtrArray *notes)
{
    GPtrArray *moves = vpRebalancePlan(rb, p, ledger, now, notes);
    g_autoptr(GError) err = NULL;

    if (moves->len) {
        g_autoptr(GHashTable) before = snapshot(ledger);

        ck_assert_msg(vpRebalanceApply(ledger, moves, &err), "%s", err ? err->message : "");
        vpFixCheckMoves(ledger, before, moves);
        vpRebalanceCommit(rb, p, vpLedgerTopology(ledger), moves, now);
    }
    return moves;
}
