/*
 * The properties are checked from first principles (sets and cores), not through the
 * placer's own bookkeeping, so a placer bug cannot hide behind itself.
 */
#include "props.h"

#include <math.h>
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
    return a == b ||
           (a->policy.group && b->policy.group && strcmp(a->policy.group, b->policy.group) == 0);
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

/* A pack or isolate domain (placed, not relaxed) keeps its cores: isolate to itself, pack to
 * itself and its one-cookie trust group. */
static bool
keepsCores(const vpPlan *p)
{
    return (p->policy.smt == VP_SMT_PACK || p->policy.smt == VP_SMT_ISOLATE) && !p->degraded &&
           p->how == VP_HOW_PLACED;
}

static bool
oneCookie(const vpPlan *a, const vpPlan *b)
{
    return a->policy.group && b->policy.group && strcmp(a->policy.group, b->policy.group) == 0 &&
           a->policy.coresched == b->policy.coresched && a->policy.coresched != VP_CORESCHED_VM;
}

/* No vCPU of plan on a core with a vCPU of another domain where either keeps its cores
 * (keepsCores) from the other, whatever the host has free. A pack plan that says it took
 * cores of other trust groups (beside_others, pack's last tier) sits beside domains that keep
 * no cores by its own placement, on at most that many vCPUs; a core some domain keeps never
 * takes it. */
static gboolean
checkKeptCores(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan, GError **error)
{
    unsigned beside = 0;

    if (plan->how != VP_HOW_PLACED)
        return TRUE;
    for (unsigned v = 0; v < plan->nvcpus; v++) {
        int pu = plan->vcpu_pu[v] >= 0 ? vpTopologyPUByOS(topo, plan->vcpu_pu[v]) : -1;
        const vpCore *core = pu >= 0 ? vpTopologyCore(topo, vpTopologyPU(topo, pu)->core) : NULL;
        bool excused = false;

        for (int i = 0; core && i < core->npus; i++) {
            vpOwner o = vpLedgerOwner(ledger, core->pus[i]);
            const vpPlan *other = o.domain ? vpLedgerLookup(ledger, o.domain) : NULL;

            if (!other || o.kind != VP_OWN_VCPU || strcmp(other->domain, plan->domain) == 0 ||
                !(keepsCores(plan) || keepsCores(other)))
                continue;
            if (!keepsCores(other) && plan->policy.smt == VP_SMT_PACK && plan->beside_others > 0 &&
                !oneCookie(plan, other)) {
                excused = true;
                continue;
            }
            if ((keepsCores(plan) && plan->policy.smt == VP_SMT_ISOLATE) ||
                (keepsCores(other) && other->policy.smt == VP_SMT_ISOLATE) ||
                !oneCookie(plan, other))
                return fail(error, "CPU %d shares a core with '%s' (smt=%s), not of one cookie",
                            plan->vcpu_pu[v], other->domain, vpSmtName(other->policy.smt));
        }
        beside += excused;
    }
    if (beside > plan->beside_others)
        return fail(error, "%u vCPUs share a core with other trust groups, the plan says %u",
                    beside, plan->beside_others);
    return TRUE;
}

static int
nodeOf(const vpTopology *topo, int cpu)
{
    const vpCore *core =
        vpTopologyCore(topo, vpTopologyPU(topo, vpTopologyPUByOS(topo, cpu))->core);
    const vpGroup *g = vpTopologyGroup(topo, VP_LEVEL_NUMA, core->group[VP_LEVEL_NUMA]);

    return g->made_up ? -1 : (int)g->os;
}

static bool
hardMode(vpMemMode mode)
{
    return mode == VP_MEM_STRICT || mode == VP_MEM_RESTRICTIVE || mode == VP_MEM_INTERLEAVE;
}

/* The hard node limit of vCPU i: its cell's <memnode>, else the domain's <numatune>. */
static hwloc_const_bitmap_t
hardNodes(const vpRequest *req, unsigned i)
{
    for (unsigned c = 0; c < req->ncells; c++) {
        const vpCell *cell = &req->cells[c];

        if (hwloc_bitmap_isset(cell->vcpus, i) && cell->mode != VP_MEM_NONE)
            return hardMode(cell->mode) ? cell->nodeset : NULL;
    }
    return hardMode(req->mem_mode) ? req->nodeset : NULL;
}

/* The CPU nodes vCPU i may run on under its hard nodes: those named, and those near the
 * CPU-less nodes named (whose memory the vCPUs then use); NULL: any. */
static hwloc_bitmap_t
hardCpuNodes(const vpTopology *topo, hwloc_const_bitmap_t hard)
{
    return hard ? vpTopologyCpuNodesOf(topo, hard) : NULL;
}

/* Bytes of node g's memory (less the host reserve) or huge page pool of the given size;
 * 0 when the node's memory is unknown. */
static guint64
nodeCap(const vpTopology *topo, const vpGroup *node, guint64 page)
{
    guint64 cap = 0;

    if (!page)
        cap = node->memory - MIN(node->memory, vpTopologyNodeReserve(topo));
    for (unsigned p = 0; p < node->npools; p++) {
        if (page && node->pools[p].size == page)
            cap = node->pools[p].size * node->pools[p].count;
    }
    return cap;
}

/* Whether node g holds `bytes` more for the plan, after the ledger's and the plan's own
 * holdings there (unknown memory is no limit). */
static bool
nodeHolds(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan, int g, guint64 bytes)
{
    const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);
    guint64 used;

    if (!node->memory)
        return true;
    used = vpLedgerNodeMemory(ledger, node->os, plan->page_size) +
           vpPlanMemoryOnPages(plan, node->os, plan->page_size);
    return used <= nodeCap(topo, node, plan->page_size) &&
           nodeCap(topo, node, plan->page_size) - used >= bytes;
}

/* Whether a domain's memory follows its vCPUs (no guest cells, no interleave, no numad
 * placement): moving a vCPU to another node then moves its share of the memory there. */
static bool
memoryFollows(const vpRequest *req)
{
    return !req->ncells && !req->placement_auto &&
           !(req->mem_mode == VP_MEM_INTERLEAVE && req->nodeset);
}

/* A vCPU's share of such a domain's memory; the first node holds the remainder, counted here
 * for every vCPU. */
static guint64
vcpuShare(const vpRequest *req, const vpPlan *plan)
{
    unsigned n = 0;

    for (unsigned i = 0; i < plan->nvcpus; i++)
        n += plan->vcpu_pu[i] >= 0;
    return n ? req->memory / n + req->memory % n : 0;
}

/* A whole free core (every PU usable, free, not held by the plan) that could take what the
 * plan holds on CPU cpu instead: inside <vcpu cpuset> and the hard nodes (of vCPU vcpu, or
 * the domain's for a PU held without a vCPU), and for a vCPU on its own node, or on one whose
 * free memory holds the vCPU's share when its memory follows it. */
static bool
wholeFreeCoreFor(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
                 const vpPlan *plan, hwloc_const_bitmap_t held, int vcpu, int cpu)
{
    g_autoptr(vpBitmap) hard = hardCpuNodes(topo, vcpu >= 0                 ? hardNodes(req, vcpu)
                                                  : hardMode(req->mem_mode) ? req->nodeset
                                                                            : NULL);
    int own = vpTopologyPU(topo, vpTopologyPUByOS(topo, cpu))->core;
    int own_node = vpTopologyCore(topo, own)->group[VP_LEVEL_NUMA];
    guint64 share = vcpuShare(req, plan);

    for (int c = 0; c < vpTopologyNCores(topo); c++) {
        const vpCore *core = vpTopologyCore(topo, c);
        const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, core->group[VP_LEVEL_NUMA]);
        bool whole = true, inset = !req->cpuset;

        for (int i = 0; i < core->npus && whole; i++) {
            const vpPU *pu = vpTopologyPU(topo, core->pus[i]);

            whole = pu->usable && vpLedgerPUFree(ledger, core->pus[i]) &&
                    !hwloc_bitmap_isset(held, pu->os);
            inset |= req->cpuset && hwloc_bitmap_isset(req->cpuset, pu->os);
        }
        if (!whole || !inset || (hard && (node->made_up || !hwloc_bitmap_isset(hard, node->os))))
            continue;
        if (vcpu < 0 || core->group[VP_LEVEL_NUMA] == own_node)
            return true;
        if (memoryFollows(req) && nodeHolds(topo, ledger, plan, core->group[VP_LEVEL_NUMA], share))
            return true;
    }
    return false;
}

/* Two smt=share domains accept each other as neighbours; anyone else beside a share domain
 * is a stranger to it. */
static bool
shareBoth(const vpPlan *a, const vpPlan *b)
{
    return a->policy.smt == VP_SMT_SHARE && b->policy.smt == VP_SMT_SHARE;
}

/* No placement beside a stranger while a whole free core could hold it, counting memory:
 * every policy takes a stranger's sibling only when no such core is left. */
static gboolean
checkSiblings(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
              const vpPlan *plan, GError **error)
{
    g_autoptr(vpBitmap) held = vpPlanHeld(plan);
    int cpu;

    if (plan->how != VP_HOW_PLACED)
        return TRUE;
    hwloc_bitmap_foreach_begin(cpu, held)
    {
        const vpCore *core =
            vpTopologyCore(topo, vpTopologyPU(topo, vpTopologyPUByOS(topo, cpu))->core);
        int vcpu = -1;

        for (unsigned i = 0; i < plan->nvcpus; i++) {
            if (plan->vcpu_pu[i] == cpu)
                vcpu = (int)i;
        }
        for (int i = 0; i < core->npus; i++) {
            vpOwner o = vpLedgerOwner(ledger, core->pus[i]);
            const vpPlan *other = o.domain ? vpLedgerLookup(ledger, o.domain) : NULL;

            if (other && !trusted(plan, other) && !shareBoth(plan, other) &&
                wholeFreeCoreFor(topo, ledger, req, plan, held, vcpu, cpu))
                return fail(error,
                            "CPU %d shares a core with untrusted '%s' while a whole free core "
                            "could hold it",
                            cpu, other->domain);
        }
    }
    hwloc_bitmap_foreach_end();
    return TRUE;
}

/* Placed vCPUs stay inside <vcpu cpuset> and on their strict/restrictive/interleave nodes. */
static gboolean
checkConstraints(const vpTopology *topo, const vpRequest *req, const vpPlan *plan, GError **error)
{
    if (plan->how != VP_HOW_PLACED)
        return TRUE;
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        g_autoptr(vpBitmap) nodes = hardCpuNodes(topo, hardNodes(req, i));
        int cpu = plan->vcpu_pu[i];

        if (cpu < 0)
            continue;
        if (req->cpuset && !hwloc_bitmap_isset(req->cpuset, cpu))
            return fail(error, "vCPU %u is on CPU %d, outside <vcpu cpuset>", i, cpu);
        if (nodes && (nodeOf(topo, cpu) < 0 || !hwloc_bitmap_isset(nodes, nodeOf(topo, cpu))))
            return fail(error, "vCPU %u is on node %d, outside its hard nodeset", i,
                        nodeOf(topo, cpu));
    }
    /* the memory itself stays on the nodes named, CPU-less ones included */
    for (unsigned m = 0; !req->ncells && hardMode(req->mem_mode) && req->nodeset && m < plan->nmem;
         m++) {
        if (!hwloc_bitmap_isset(req->nodeset, plan->mem[m].node))
            return fail(error, "memory on node %u, outside the hard nodeset", plan->mem[m].node);
    }
    return TRUE;
}

/* Free usable PUs of whole free cores per node: room any policy could use. */
static int
wholeRoom(const vpTopology *topo, const vpLedger *ledger, int g)
{
    const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);
    int room = 0;

    for (int i = 0; i < node->ncores; i++) {
        const vpCore *core = vpTopologyCore(topo, node->cores[i]);
        bool whole = true;

        for (int k = 0; k < core->npus; k++)
            whole &=
                vpTopologyPU(topo, core->pus[k])->usable && vpLedgerPUFree(ledger, core->pus[k]);
        room += whole;
    }
    return room;
}

/* A guest cell spans host nodes only when relaxed, and only when no allowed node had a free
 * whole core per vCPU of the cell. */
static gboolean
checkCells(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req, const vpPlan *plan,
           GError **error)
{
    if (plan->how != VP_HOW_PLACED)
        return TRUE;
    for (unsigned c = 0; c < req->ncells; c++) {
        g_autoptr(vpBitmap) nodes = hwloc_bitmap_alloc();
        int n = 0, i;

        hwloc_bitmap_foreach_begin(i, req->cells[c].vcpus)
        {
            if ((unsigned)i < plan->nvcpus && plan->vcpu_pu[i] >= 0) {
                hwloc_bitmap_set(nodes, nodeOf(topo, plan->vcpu_pu[i]) + 1);
                n++;
            }
        }
        hwloc_bitmap_foreach_end();
        if (hwloc_bitmap_weight(nodes) <= 1)
            continue;
        if (!plan->degraded)
            return fail(error, "guest cell %u is split across host nodes without saying so",
                        req->cells[c].id);
        for (int g = 0; g < vpTopologyNGroups(topo, VP_LEVEL_NUMA); g++) {
            const vpGroup *node = vpTopologyGroup(topo, VP_LEVEL_NUMA, g);
            g_autoptr(vpBitmap) hard =
                hardCpuNodes(topo, hardNodes(req, hwloc_bitmap_first(req->cells[c].vcpus)));

            if (!node->made_up && (!hard || hwloc_bitmap_isset(hard, node->os)) && !req->cpuset &&
                wholeRoom(topo, ledger, g) >= n &&
                (!node->memory || req->cells[c].memory <= node->memory / 2))
                return fail(error, "guest cell %u is split while node %u had %d whole free cores",
                            req->cells[c].id, node->os, wholeRoom(topo, ledger, g));
        }
    }
    return TRUE;
}

/* Memory per node: what the ledger holds plus this plan, within the node's memory less the
 * host reserve (or its huge page pool of each holding's size); nodes of unknown memory are no
 * limit. */
static gboolean
checkMemory(const vpTopology *topo, const vpLedger *ledger, const vpPlan *plan, GError **error)
{
    for (unsigned m = 0; m < plan->nmem; m++) {
        int g = vpTopologyNodeByOS(topo, plan->mem[m].node);
        const vpGroup *node = g >= 0 ? vpTopologyGroup(topo, VP_LEVEL_NUMA, g)
                                     : vpTopologyMemNodeByOS(topo, plan->mem[m].node);
        guint64 cap, used;

        if (!node)
            return fail(error, "memory on node %u, which the host lacks", plan->mem[m].node);
        if (!node->memory)
            continue;
        guint64 page = plan->mem[m].page_size;

        cap = nodeCap(topo, node, page);
        used = vpLedgerNodeMemory(ledger, node->os, page) + plan->mem[m].bytes;
        if (used > cap)
            return fail(error,
                        "node %u holds %" G_GUINT64_FORMAT
                        " bytes, more than its %" G_GUINT64_FORMAT,
                        node->os, used, cap);
    }
    return TRUE;
}

/* The domain's own pins are kept as written: its single-CPU vCPU pins are the plan's, its
 * emulator pin is the plan's emulator, multi-CPU pins are held as its own. */
static gboolean
checkOwnPins(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
             const vpPlan *plan, GError **error)
{
    int cpu;

    for (unsigned i = 0; i < plan->nvcpus && i < req->max_vcpus; i++) {
        hwloc_const_bitmap_t pin = req->pins[i];

        if (!pin || !vpRequestOnline(req, i))
            continue;
        if (hwloc_bitmap_weight(pin) == 1 && vpTopologyPUByOS(topo, hwloc_bitmap_first(pin)) >= 0 &&
            plan->vcpu_pu[i] != hwloc_bitmap_first(pin))
            return fail(error, "vCPU %u is pinned to CPU %d by the domain, the plan says %d", i,
                        hwloc_bitmap_first(pin), plan->vcpu_pu[i]);
        if (hwloc_bitmap_weight(pin) > 1 && !hwloc_bitmap_isincluded(pin, plan->own))
            return fail(error, "vCPU %u's own multi-CPU pin is not held", i);
    }
    if (req->emulator_pin && !hwloc_bitmap_isequal(req->emulator_pin, plan->emulator))
        return fail(error, "the domain's <emulatorpin> was changed");
    if (req->iothread_pin && !hwloc_bitmap_isincluded(req->iothread_pin, plan->own))
        return fail(error, "the domain's <iothreadpin> CPUs are not held");
    /* own pins may overlap only other domains' own pins */
    hwloc_bitmap_foreach_begin(cpu, plan->own)
    {
        int pu = vpTopologyPUByOS(topo, cpu);

        for (unsigned k = 0; pu >= 0 && k < vpLedgerNOwners(ledger, pu); k++) {
            vpOwner o = vpLedgerOwnerAt(ledger, pu, k);

            if (o.kind != VP_OWN_PINNED)
                return fail(error, "own pin CPU %d is held by '%s' for %s", cpu, o.domain,
                            vpOwnKindName(o.kind));
        }
    }
    hwloc_bitmap_foreach_end();
    return TRUE;
}

/* Free whole cores of the host (every PU free, some usable). */
static int
freeCores(const vpTopology *topo, const vpLedger *ledger)
{
    int n = 0;

    for (int c = 0; c < vpTopologyNCores(topo); c++) {
        const vpCore *core = vpTopologyCore(topo, c);
        bool free = vpTopologyCoreUsable(topo, c) > 0;

        for (int k = 0; k < core->npus && free; k++)
            free = vpLedgerPUFree(ledger, core->pus[k]);
        n += free;
    }
    return n;
}

/* A cpus=shared plan: each online vCPU floats over CPUs of the plan's whole cores, which
 * no dedicated domain holds a CPU of; no CPU past the ratio; and strangers' cores only when
 * no node (nor the host) had the ceil(V / (t * r)) free cores that would keep it alone. */
static gboolean
checkShared(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
            const vpPlan *plan, GError **error)
{
    int t = vpTopologyMaxSMT(topo), cpu, need;
    bool stranger = false;

    for (unsigned i = 0; i < plan->nvcpus; i++) {
        if (plan->vcpu_pu[i] >= 0 ||
            vpRequestOnline(req, i) == hwloc_bitmap_iszero(plan->vcpu_set[i]) ||
            !hwloc_bitmap_isincluded(plan->vcpu_set[i], plan->shared))
            return fail(error, "shared vCPU %u: pinned, or its set is wrong for it", i);
        if (req->cpuset && !hwloc_bitmap_isincluded(plan->vcpu_set[i], req->cpuset))
            return fail(error, "shared vCPU %u floats outside <vcpu cpuset>", i);
    }
    hwloc_bitmap_foreach_begin(cpu, plan->shared)
    {
        int pu = vpTopologyPUByOS(topo, cpu);
        const vpCore *core = vpTopologyCore(topo, vpTopologyPU(topo, pu)->core);
        double load = vpLedgerSharedLoad(ledger, pu) + vpPlanSharedLoad(plan, cpu);

        for (int k = 0; k < core->npus; k++) {
            if (!hwloc_bitmap_isset(plan->shared, vpTopologyPU(topo, core->pus[k])->os))
                return fail(error, "shared CPU %d: its core is not whole in the set", cpu);
        }
        for (unsigned h = 0; h < vpLedgerNOwners(ledger, pu); h++) {
            vpOwner o = vpLedgerOwnerAt(ledger, pu, h);
            const vpPlan *other = vpLedgerLookup(ledger, o.domain);

            if (o.kind != VP_OWN_SHARED)
                return fail(error, "shared CPU %d is held by dedicated '%s'", cpu, o.domain);
            stranger |= !trusted(plan, other) || plan->policy.coresched == VP_CORESCHED_VM;
        }
        if (load > plan->policy.ratio + 1e-9)
            return fail(error, "shared CPU %d carries %.3f vCPUs, past the ratio %g", cpu, load,
                        plan->policy.ratio);
    }
    hwloc_bitmap_foreach_end();
    /* over the host, where memory picks no node, the free cores alone decide */
    need = (int)ceil(req->vcpus / (t * plan->policy.ratio) - 1e-9);
    if (stranger && !req->cpuset && !req->nodeset && freeCores(topo, ledger) >= need)
        return fail(error, "shared: beside a stranger while %d free cores were left", need);
    return TRUE;
}

gboolean
vpCheckPlan(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req,
            const vpPlan *plan, GError **error)
{
    if (plan->vcpu_set)
        return checkShared(topo, ledger, req, plan, error) &&
               checkConstraints(topo, req, plan, error) && checkMemory(topo, ledger, plan, error);
    if (plan->nvcpus != vpRequestPlanVcpus(req))
        return fail(error, "plan has %u vCPUs, the domain needs %u", plan->nvcpus,
                    vpRequestPlanVcpus(req));
    if (plan->how == VP_HOW_PLACED) {
        for (unsigned i = 0; i < plan->nvcpus; i++) {
            if (vpRequestOnline(req, i) != (plan->vcpu_pu[i] >= 0))
                return fail(error, "vCPU %u is %s but %s a CPU", i,
                            vpRequestOnline(req, i) ? "online" : "offline",
                            plan->vcpu_pu[i] >= 0 ? "has" : "has no");
        }
    }
    return checkNoDoubleBooking(topo, ledger, plan, error) &&
           checkSiblings(topo, ledger, req, plan, error) && checkPack(topo, plan, error) &&
           checkKeptCores(topo, ledger, plan, error) && checkConstraints(topo, req, plan, error) &&
           checkCells(topo, ledger, req, plan, error) && checkMemory(topo, ledger, plan, error) &&
           checkOwnPins(topo, ledger, req, plan, error);
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
    if (d->cpuset && !hwloc_bitmap_isset(d->cpuset, m->to))
        return fail(error, "move of '%s' vcpu %u: CPU %u is outside its <vcpu cpuset>", m->domain,
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
