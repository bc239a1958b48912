/*
 * The properties are checked from first principles (sets and cores), not through the
 * placer's own bookkeeping, so a placer bug cannot hide behind itself.
 */
#include "props.h"

#include <string.h>

static gboolean fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean
fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, VP_ERROR, VP_ERROR_INVALID, msg);
    return FALSE;
}

static bool
trusted(const vpPlan *a, const vpPlan *b)
{
    return a == b || (a->group && b->group && strcmp(a->group, b->group) == 0);
}

/* Overcommitted smt=share plans may time-share PUs held only by vCPUs of share domains
 * that accept degrading too. */
static bool
timeShared(const vpLedger *ledger, const vpPlan *plan, int pu)
{
    if (!plan->overcommit || plan->policy.smt != VP_SMT_SHARE)
        return false;
    for (unsigned i = 0; i < vpLedgerNOwners(ledger, pu); i++) {
        vpOwner o = vpLedgerOwnerAt(ledger, pu, i);

        const vpPlan *holder = vpLedgerLookup(ledger, o.domain);

        if (o.kind != VP_OWN_VCPU || holder->policy.smt != VP_SMT_SHARE ||
            holder->policy.unmet != VP_UNMET_DEGRADE)
            return false;
    }
    return true;
}

static gboolean
checkNoDoubleBooking(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan,
                     GError **error)
{
    g_autoptr(vpBitmap) seen = hwloc_bitmap_alloc();
    g_autoptr(vpBitmap) held = vpPlanHeld(plan);
    int cpu;

    for (unsigned i = 0; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] < 0)
            continue;
        if (hwloc_bitmap_isset(seen, plan->vcpu_pu[i]))
            return fail(error, "CPU %d is given to two vCPUs", plan->vcpu_pu[i]);
        hwloc_bitmap_set(seen, plan->vcpu_pu[i]);
    }
    hwloc_bitmap_foreach_begin(cpu, held)
    {
        int pu = vpTopologyPUByOS(topo, cpu);

        if (pu < 0)
            return fail(error, "CPU %d is not in the topology", cpu);
        if (!vpLedgerPUFree(ledger, pu) && !timeShared(ledger, plan, pu))
            return fail(error, "CPU %d is already held by '%s'", cpu,
                        vpLedgerOwner(ledger, pu).domain);
        if (plan->how == VP_HOW_PLACED && !vpTopologyPU(topo, pu)->usable)
            return fail(error,
                        "CPU %d is not usable (offline, disallowed, outside host_cpus "
                        "or housekeeping)",
                        cpu);
    }
    hwloc_bitmap_foreach_end();
    return TRUE;
}

static bool
wholeFreeCoreLeft(const vpTopology *topo, const vpLedger *ledger, hwloc_const_bitmap_t held)
{
    for (int c = 0; c < vpTopologyNCores(topo); c++) {
        const vpCore *core = vpTopologyCore(topo, c);
        bool whole = true;

        for (int i = 0; i < core->npus && whole; i++) {
            const vpPU *pu = vpTopologyPU(topo, core->pus[i]);

            whole = pu->usable && vpLedgerPUFree(ledger, core->pus[i]) &&
                    !hwloc_bitmap_isset(held, pu->os);
        }
        if (whole)
            return true;
    }
    return false;
}

static gboolean
checkSiblings(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan, GError **error)
{
    g_autoptr(vpBitmap) held = vpPlanHeld(plan);
    int cpu;

    if (plan->policy.smt == VP_SMT_SHARE || plan->how != VP_HOW_PLACED ||
        !wholeFreeCoreLeft(topo, ledger, held))
        return TRUE;
    hwloc_bitmap_foreach_begin(cpu, held)
    {
        const vpCore *core =
            vpTopologyCore(topo, vpTopologyPU(topo, vpTopologyPUByOS(topo, cpu))->core);

        for (int i = 0; i < core->npus; i++) {
            vpOwner o = vpLedgerOwner(ledger, core->pus[i]);
            const vpPlan *other = o.domain ? vpLedgerLookup(ledger, o.domain) : NULL;

            if (other && !trusted(plan, other))
                return fail(error,
                            "CPU %d shares a core with untrusted '%s' while a whole "
                            "free core is left",
                            cpu, other->domain);
        }
    }
    hwloc_bitmap_foreach_end();
    return TRUE;
}

static gboolean
checkPack(const vpTopology *topo, const vpPlan *plan, GError **error)
{
    unsigned t = plan->guest_threads;

    if (plan->policy.smt != VP_SMT_PACK || plan->degraded || plan->how != VP_HOW_PLACED)
        return TRUE;
    if (t == 0 || plan->guest_sockets * plan->guest_cores * t != plan->nvcpus)
        return fail(error, "pack guest topology %u/%u/%u does not hold %u vCPUs",
                    plan->guest_sockets, plan->guest_cores, t, plan->nvcpus);
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        int a = vpTopologyPU(topo, vpTopologyPUByOS(topo, plan->vcpu_pu[i]))->core;
        int b = vpTopologyPU(topo, vpTopologyPUByOS(topo, plan->vcpu_pu[i - i % t]))->core;

        if (a != b)
            return fail(error, "pack: guest thread vCPU %u is not on the host core of vCPU %u", i,
                        i - i % t);
    }
    return TRUE;
}

gboolean
vpCheckPlan(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
            const vpPlan *plan, GError **error)
{
    if (plan->nvcpus != req->vcpus)
        return fail(error, "plan has %u vCPUs, the domain asked for %u", plan->nvcpus, req->vcpus);
    if (plan->how == VP_HOW_PLACED) {
        for (unsigned i = 0; i < plan->nvcpus; i++) {
            if (plan->vcpu_pu[i] < 0)
                return fail(error, "vCPU %u has no CPU", i);
        }
    }
    return checkNoDoubleBooking(topo, ledger, plan, error) &&
           checkSiblings(topo, ledger, plan, error) && checkPack(topo, plan, error);
}

static bool
moveTrusted(const vpPlan *moved, const vpPlan *holder)
{
    return trusted(moved, holder) ||
           (moved->policy.smt == VP_SMT_SHARE && holder->policy.smt == VP_SMT_SHARE);
}

/* Holders after the moves so far, by logical PU. */
static const vpPlan **
holdersOf(const vpTopology *topo, const vpLedger *ledger)
{
    const vpPlan **holder = g_new0(const vpPlan *, vpTopologyNPUs(topo));

    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++) {
        vpOwner o = vpLedgerOwner(ledger, pu);

        holder[pu] = o.domain ? vpLedgerLookup(ledger, o.domain) : NULL;
    }
    return holder;
}

static gboolean
checkMove(const vpTopology *topo, const vpLedger *ledger, const vpMove *m, const vpPlan **holder,
          GHashTable *pins, GError **error)
{
    const vpPlan *d = vpLedgerLookup(ledger, m->domain);
    int from = vpTopologyPUByOS(topo, m->from), to = vpTopologyPUByOS(topo, m->to);
    g_autoptr(vpBitmap) memory = NULL;
    int *pin;
    const vpCore *core;

    if (!d)
        return fail(error, "move of '%s': no such domain in the ledger", m->domain);
    if (d->how != VP_HOW_PLACED || d->policy.rebalance == VP_REBALANCE_OFF)
        return fail(error, "move of '%s': a domain with %s or how=%s may not be moved", m->domain,
                    d->policy.rebalance == VP_REBALANCE_OFF ? "rebalance=off" : "its own pins",
                    vpHowName(d->how));
    if (!(pin = g_hash_table_lookup(pins, d->domain))) {
        pin = g_memdup2(d->vcpu_pu, sizeof(int) * d->nvcpus);
        g_hash_table_insert(pins, d->domain, pin);
    }
    if (m->vcpu >= d->nvcpus || pin[m->vcpu] != (int)m->from || from < 0 || holder[from] != d)
        return fail(error, "move of '%s' vcpu %u: it is not on CPU %u", m->domain, m->vcpu,
                    m->from);
    if (to < 0 || holder[to] || !vpTopologyPU(topo, to)->usable)
        return fail(error, "move of '%s' vcpu %u: CPU %u is not a free usable CPU", m->domain,
                    m->vcpu, m->to);
    core = vpTopologyCore(topo, vpTopologyPU(topo, to)->core);
    memory = vpPlanMemoryNodes(d, topo);
    if (!hwloc_bitmap_isset(memory,
                            vpTopologyGroup(topo, VP_LEVEL_NUMA, core->group[VP_LEVEL_NUMA])->os))
        return fail(error, "move of '%s' vcpu %u: CPU %u is off its memory nodes", m->domain,
                    m->vcpu, m->to);
    for (int i = 0; i < core->npus; i++) {
        const vpPlan *h = holder[core->pus[i]];

        if (h && !moveTrusted(d, h))
            return fail(error, "move of '%s' vcpu %u: CPU %u is a sibling of stranger '%s'",
                        m->domain, m->vcpu, m->to, h->domain);
    }
    holder[from] = NULL;
    holder[to] = d;
    pin[m->vcpu] = (int)m->to;
    return TRUE;
}

gboolean
vpCheckMoves(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan, unsigned max_moves,
             GError **error)
{
    g_autofree const vpPlan **holder = NULL;
    g_autoptr(GHashTable) pins = NULL;

    if (plan->nmoves > max_moves)
        return fail(error, "plan makes %u moves, at most %u allowed", plan->nmoves, max_moves);
    if (!plan->nmoves)
        return TRUE;
    holder = holdersOf(topo, ledger);
    pins = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    for (unsigned i = 0; i < plan->nmoves; i++) {
        if (strcmp(plan->moves[i].domain, plan->domain) == 0)
            return fail(error, "plan of '%s' moves its own vCPUs", plan->domain);
        if (!checkMove(topo, ledger, &plan->moves[i], holder, pins, error))
            return FALSE;
    }
    return TRUE;
}
