/*
 * Metrics of a placement run. "Time-averaged" figures are averaged over events (each start
 * or stop is one tick), which is what a churn trace gives us to average over.
 */
#include "core/place/score.h"
#include "core/model/trust.h"

#include <math.h>
#include <string.h>

typedef struct {
    char *name;
    vpPolicy policy; /* smt, trust group and coresched: whom it trusts (model/trust.h) */
    unsigned n;
    int *pus;       /* logical PU per vCPU */
    guint64 memory; /* bytes asked, 0 when the VM asked none */
    guint64 *held;  /* bytes per NUMA group index, as placed (moves leave memory where it is) */
} vpScoreVM;

struct _vpScore {
    const vpTopology *topo;
    GHashTable *vms;    /* name -> vpScoreVM */
    vpScoreVM **owner;  /* per logical PU: the first holder */
    GPtrArray **more;   /* per logical PU: further holders (overcommitted smt=share) */
    guint64 *node_held; /* per NUMA group index: bytes the placed VMs hold there */
    GArray *decision_us;
    unsigned events, starts, placed, refused, admitted_first, frag_refusals;
    bool refused_once;
    unsigned untrusted_with_free_core;   /* placements sharing a core with strangers (not both
                                            smt=share) while a whole free core stays free */
    unsigned untrusted_with_usable_core; /* the same, counting only free cores on a node whose
                                            memory could take the VM's vCPU */
    double untrusted_sum, stranded_sum;
    double span_l3_sum, span_numa_sum, span_policy_sum;
    double spread_sharing_sum; /* spread VMs with two vCPUs on one core, summed over ticks */
    unsigned vcpus_asked, vcpus_placed;
    unsigned moves, pending_moves, max_moves, admissions_moved;
    unsigned pack_vms, pack_aligned;
    unsigned overcommitted; /* vCPUs placed on a PU another VM already held */
};

static void
vmFree(gpointer p)
{
    vpScoreVM *vm = p;

    g_free(vm->name);
    vpPolicyClear(&vm->policy);
    g_free(vm->pus);
    g_free(vm->held);
    g_free(vm);
}

vpScore *
vpScoreNew(const vpTopology *topo)
{
    vpScore *s = g_new0(vpScore, 1);

    s->topo = topo;
    s->vms = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, vmFree);
    s->owner = g_new0(vpScoreVM *, vpTopologyNPUs(topo));
    s->more = g_new0(GPtrArray *, vpTopologyNPUs(topo));
    s->node_held = g_new0(guint64, MAX(vpTopologyNGroups(topo, VP_LEVEL_NUMA), 1));
    s->decision_us = g_array_new(FALSE, FALSE, sizeof(double));
    return s;
}

void
vpScoreFree(vpScore *s)
{
    if (!s)
        return;
    g_hash_table_destroy(s->vms);
    for (int pu = 0; pu < vpTopologyNPUs(s->topo); pu++) {
        if (s->more[pu])
            g_ptr_array_free(s->more[pu], TRUE);
    }
    g_free(s->more);
    g_free(s->owner);
    g_free(s->node_held);
    g_array_free(s->decision_us, TRUE);
    g_free(s);
}

/* A neighbour the VM does not trust, nor is trusted by (model/trust.h). */
static bool
breach(const vpScoreVM *a, const vpScoreVM *b)
{
    return !vpTrustMutual(a->name, &a->policy, b->name, &b->policy);
}

static bool
coreUntrusted(const vpScore *s, int c)
{
    const vpCore *core = vpTopologyCore(s->topo, c);

    for (int i = 0; i < core->npus; i++) {
        for (int j = i + 1; j < core->npus; j++) {
            const vpScoreVM *a = s->owner[core->pus[i]], *b = s->owner[core->pus[j]];

            if (a && b && breach(a, b))
                return true;
        }
    }
    return false;
}

int
vpScoreUntrustedSharedCores(const vpScore *s)
{
    int n = 0;

    for (int c = 0; c < vpTopologyNCores(s->topo); c++)
        n += coreUntrusted(s, c);
    return n;
}

static bool
wholeFreeCore(const vpScore *s, int c)
{
    const vpCore *core = vpTopologyCore(s->topo, c);

    for (int i = 0; i < core->npus; i++) {
        if (!vpTopologyPU(s->topo, core->pus[i])->usable || s->owner[core->pus[i]])
            return false;
    }
    return true;
}

static bool
wholeFreeCoreExists(const vpScore *s)
{
    for (int c = 0; c < vpTopologyNCores(s->topo); c++) {
        if (wholeFreeCore(s, c))
            return true;
    }
    return false;
}

/* Whether NUMA group g has bytes more free: its memory less the host's reserve (as the
 * placer's, vpTopologyNodeReserve()) and what the placed VMs hold; unknown memory is no
 * limit. */
static bool
nodeHolds(const vpScore *s, int g, guint64 bytes)
{
    const vpGroup *node = vpTopologyGroup(s->topo, VP_LEVEL_NUMA, g);
    guint64 cap = node->memory - MIN(node->memory, vpTopologyNodeReserve(s->topo));

    return !node->memory || (s->node_held[g] <= cap && cap - s->node_held[g] >= bytes);
}

/* A whole free core that could take the VM's vCPU beside a stranger instead, counting memory
 * as the placers do (they keep a vCPU on a node with memory for its share): one on a node
 * marked in beside (the VM's memory is there already), or on a node whose free memory holds
 * a vCPU's share (memory / vCPUs, the first node's remainder counted). A VM that asked no
 * memory needs none. */
static bool
usableFreeCoreExists(const vpScore *s, const vpScoreVM *vm, const bool *beside)
{
    guint64 share = vm->n ? vm->memory / vm->n + vm->memory % vm->n : 0;

    for (int c = 0; c < vpTopologyNCores(s->topo); c++) {
        int g = vpTopologyCore(s->topo, c)->group[VP_LEVEL_NUMA];

        if (wholeFreeCore(s, c) && (!vm->memory || beside[g] || nodeHolds(s, g, share)))
            return true;
    }
    return false;
}

static int
freeUsable(const vpScore *s)
{
    int n = 0;

    for (int pu = 0; pu < vpTopologyNPUs(s->topo); pu++)
        n += vpTopologyPU(s->topo, pu)->usable && !s->owner[pu];
    return n;
}

/* Free usable PUs on cores that someone partly holds: what half-used cores strand. */
static int
stranded(const vpScore *s)
{
    int n = 0;

    for (int c = 0; c < vpTopologyNCores(s->topo); c++) {
        const vpCore *core = vpTopologyCore(s->topo, c);
        int held = 0, freepus = 0;

        for (int i = 0; i < core->npus; i++) {
            held += s->owner[core->pus[i]] != NULL;
            freepus += vpTopologyPU(s->topo, core->pus[i])->usable && !s->owner[core->pus[i]];
        }
        if (held)
            n += freepus;
    }
    return n;
}

static bool
sharesOwnCore(const vpScore *s, const vpScoreVM *vm)
{
    for (unsigned i = 0; i < vm->n; i++) {
        for (unsigned j = i + 1; j < vm->n; j++) {
            if (vpTopologyPU(s->topo, vm->pus[i])->core == vpTopologyPU(s->topo, vm->pus[j])->core)
                return true;
        }
    }
    return false;
}

static int
spreadSharing(const vpScore *s)
{
    GHashTableIter it;
    gpointer value;
    int n = 0;

    g_hash_table_iter_init(&it, s->vms);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        const vpScoreVM *vm = value;

        n += vm->policy.smt == VP_SMT_SPREAD && sharesOwnCore(s, vm);
    }
    return n;
}

static void
tick(vpScore *s)
{
    s->events++;
    s->untrusted_sum += vpScoreUntrustedSharedCores(s);
    s->stranded_sum += stranded(s);
    s->spread_sharing_sum += spreadSharing(s);
}

/* What a NUMA node offers a policy on an empty host: whole cores for isolate, PUs of whole
 * cores for pack (siblings held idle count against the node), usable PUs otherwise. */
static int
nodeRoom(const vpScore *s, int node, vpSmt smt)
{
    const vpGroup *g = vpTopologyGroup(s->topo, VP_LEVEL_NUMA, node);
    int room = 0;

    for (int i = 0; i < g->ncores; i++) {
        int usable = vpTopologyCoreUsable(s->topo, g->cores[i]);
        bool whole = usable == vpTopologyCore(s->topo, g->cores[i])->npus;

        if (smt == VP_SMT_ISOLATE)
            room += whole;
        else if (smt == VP_SMT_PACK)
            room += whole ? usable : 0;
        else
            room += usable;
    }
    return room;
}

/* NUMA nodes spanned beyond the fewest that the VM's policy could be met on. */
static int
spanPolicyExcess(const vpScore *s, vpSmt smt, const int *pus, unsigned n)
{
    int nnodes = vpTopologyNGroups(s->topo, VP_LEVEL_NUMA);
    g_autofree int *room = g_new0(int, MAX(nnodes, 1));
    g_autofree bool *seen = g_new0(bool, MAX(nnodes, 1));
    int spanned = 0, needed = 0, left = (int)n;

    for (int g = 0; g < nnodes; g++)
        room[g] = nodeRoom(s, g, smt);
    while (left > 0 && needed < nnodes) {
        int best = 0;

        for (int g = 1; g < nnodes; g++)
            best = room[g] > room[best] ? g : best;
        left -= room[best];
        room[best] = 0;
        needed++;
    }
    for (unsigned i = 0; i < n; i++) {
        int g = vpTopologyCore(s->topo, vpTopologyPU(s->topo, pus[i])->core)->group[VP_LEVEL_NUMA];

        spanned += !seen[g];
        seen[g] = true;
    }
    return MAX(spanned - MAX(needed, 1), 0);
}

/* Groups spanned beyond the fewest that could hold n vCPUs at that level. */
static int
spanExcess(const vpScore *s, vpLevel level, const int *pus, unsigned n)
{
    int ngroups = vpTopologyNGroups(s->topo, level);
    g_autofree bool *seen = g_new0(bool, ngroups);
    int spanned = 0, biggest = 1;

    for (int g = 0; g < ngroups; g++)
        biggest = MAX(biggest, vpTopologyGroup(s->topo, level, g)->npus);
    for (unsigned i = 0; i < n; i++) {
        int g = vpTopologyCore(s->topo, vpTopologyPU(s->topo, pus[i])->core)->group[level];

        if (!seen[g]) {
            seen[g] = true;
            spanned++;
        }
    }
    return spanned - (int)((n + biggest - 1) / biggest);
}

/* Guest core k holds vCPUs [k*t, (k+1)*t): aligned when each such run sits on one host core. */
static bool
packAligned(const vpScore *s, const int *pus, unsigned n, unsigned t)
{
    if (t < 2 || n % t)
        return false;
    for (unsigned i = 0; i < n; i++) {
        if (vpTopologyPU(s->topo, pus[i])->core != vpTopologyPU(s->topo, pus[i - i % t])->core)
            return false;
    }
    return true;
}

/* The PUs a placement holds: its vCPUs' (into pus, -1 where the topology lacks the CPU),
 * then the reserved ones. */
static GArray *
heldPUs(const vpScore *s, unsigned n, const int *vcpu_cpu, hwloc_const_bitmap_t reserved, int *pus)
{
    GArray *held = g_array_new(FALSE, FALSE, sizeof(int));
    int cpu;

    for (unsigned i = 0; i < n; i++) {
        pus[i] = vpTopologyPUByOS(s->topo, vcpu_cpu[i]);
        g_array_append_val(held, pus[i]);
    }
    if (reserved) {
        hwloc_bitmap_foreach_begin(cpu, reserved)
        {
            int pu = vpTopologyPUByOS(s->topo, cpu);

            g_array_append_val(held, pu);
        }
        hwloc_bitmap_foreach_end();
    }
    return held;
}

/* Each held PU exists, is held once, and is free or time-shared: the first n (the vCPUs')
 * may join another smt=share VM's vCPU when this VM is smt=share too. */
static bool
checkHeld(const vpScore *s, const char *name, vpSmt smt, unsigned n, const GArray *held,
          GError **error)
{
    for (guint i = 0; i < held->len; i++) {
        int pu = g_array_index(held, int, i);
        /* time-sharing among smt=share VMs' vCPUs is overcommit, not a double booking */
        bool timeshare = pu >= 0 && s->owner[pu] && smt == VP_SMT_SHARE && i < n &&
                         s->owner[pu]->policy.smt == VP_SMT_SHARE;

        if (pu < 0 || (s->owner[pu] && !timeshare)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "VM '%s' is given a CPU that %s", name,
                        pu < 0 ? "the topology lacks" : "another VM holds");
            return false;
        }
        for (guint j = 0; j < i; j++) {
            if (g_array_index(held, int, j) == pu) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "VM '%s' is given CPU %u twice",
                            name, vpTopologyPU(s->topo, pu)->os);
                return false;
            }
        }
    }
    return true;
}

static vpScoreVM *
vmNew(const char *name, const vpPolicy *policy, unsigned n, const int *pus, guint64 memory)
{
    vpScoreVM *vm = g_new0(vpScoreVM, 1);

    vm->name = g_strdup(name);
    vpPolicyCopy(&vm->policy, policy);
    vm->n = n;
    vm->pus = g_memdup2(pus, sizeof(int) * MAX(n, 1));
    vm->memory = memory;
    return vm;
}

/* Whether a PU held shares a core with a VM that vm does not trust; marks in beside the NUMA
 * group of each such PU, every group for a reserved one (it holds no memory: any node could
 * take it). */
static bool
nextToStranger(const vpScore *s, const vpScoreVM *vm, const GArray *held, bool *beside)
{
    int nnodes = vpTopologyNGroups(s->topo, VP_LEVEL_NUMA);
    bool stranger = false;

    for (guint i = 0; i < held->len; i++) {
        const vpCore *core =
            vpTopologyCore(s->topo, vpTopologyPU(s->topo, g_array_index(held, int, i))->core);
        bool here = false;

        for (int k = 0; k < core->npus; k++) {
            const vpScoreVM *o = s->owner[core->pus[k]];

            here |= o && breach(o, vm);
        }
        for (int g = 0; here && g < nnodes; g++)
            beside[g] |= i >= vm->n || g == core->group[VP_LEVEL_NUMA];
        stranger |= here;
    }
    return stranger;
}

/* The VM's memory held where its vCPUs are, in proportion to its vCPUs per node (as vcpuplace
 * and Nova place memory with the vCPUs), the remainder on the first such node: derived alike
 * for every placer's outcome. */
static void
holdMemory(vpScore *s, vpScoreVM *vm)
{
    int nnodes = vpTopologyNGroups(s->topo, VP_LEVEL_NUMA), first = -1;
    g_autofree unsigned *count = g_new0(unsigned, MAX(nnodes, 1));
    guint64 given = 0;

    vm->held = g_new0(guint64, MAX(nnodes, 1));
    if (!vm->memory || !vm->n)
        return;
    for (unsigned i = 0; i < vm->n; i++)
        count[vpTopologyCore(s->topo, vpTopologyPU(s->topo, vm->pus[i])->core)
                  ->group[VP_LEVEL_NUMA]]++;
    for (int g = 0; g < nnodes; g++) {
        if (!count[g])
            continue;
        if (first < 0)
            first = g;
        vm->held[g] = vm->memory / vm->n * count[g];
        given += vm->held[g];
    }
    vm->held[first] += vm->memory - given;
    for (int g = 0; g < nnodes; g++)
        s->node_held[g] += vm->held[g];
}

static void
hold(vpScore *s, vpScoreVM *vm, const GArray *held)
{
    for (guint i = 0; i < held->len; i++) {
        int pu = g_array_index(held, int, i);

        if (!s->owner[pu]) {
            s->owner[pu] = vm;
            continue;
        }
        if (!s->more[pu])
            s->more[pu] = g_ptr_array_new();
        g_ptr_array_add(s->more[pu], vm);
        s->overcommitted++;
    }
}

/* The figures one admitted start adds. */
static void
countPlaced(vpScore *s, vpSmt smt, unsigned guest_threads, const int *pus, unsigned n,
            bool stranger, bool usable, double us)
{
    s->starts++;
    s->placed++;
    s->vcpus_asked += n;
    s->vcpus_placed += n;
    s->admissions_moved += s->pending_moves > 0;
    s->max_moves = MAX(s->max_moves, s->pending_moves);
    s->pending_moves = 0;
    if (!s->refused_once)
        s->admitted_first++;
    /* A free core left over after the placement is one the placer could have used instead. */
    s->untrusted_with_free_core += stranger && wholeFreeCoreExists(s);
    s->untrusted_with_usable_core += stranger && usable;
    s->span_l3_sum += spanExcess(s, VP_LEVEL_L3, pus, n);
    s->span_numa_sum += spanExcess(s, VP_LEVEL_NUMA, pus, n);
    s->span_policy_sum += spanPolicyExcess(s, smt, pus, n);
    if (smt == VP_SMT_PACK && vpTopologyMaxSMT(s->topo) > 1 && guest_threads > 1) {
        s->pack_vms++;
        s->pack_aligned += packAligned(s, pus, n, guest_threads);
    }
    g_array_append_val(s->decision_us, us);
}

bool
vpScorePlaced(vpScore *s, const char *name, const vpPolicy *policy, unsigned guest_threads,
              unsigned n, const int *vcpu_cpu, hwloc_const_bitmap_t reserved, guint64 memory,
              double us, GError **error)
{
    g_autofree int *pus = g_new(int, MAX(n, 1));
    g_autofree bool *beside = g_new0(bool, MAX(vpTopologyNGroups(s->topo, VP_LEVEL_NUMA), 1));
    g_autoptr(GArray) held = NULL;
    vpScoreVM *vm;
    bool stranger;

    if (g_hash_table_contains(s->vms, name)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "VM '%s' is placed twice", name);
        return false;
    }
    held = heldPUs(s, n, vcpu_cpu, reserved, pus);
    if (!checkHeld(s, name, policy->smt, n, held, error))
        return false;
    vm = vmNew(name, policy, n, pus, memory);
    g_hash_table_insert(s->vms, vm->name, vm);
    stranger = nextToStranger(s, vm, held, beside);
    hold(s, vm, held);
    holdMemory(s, vm);
    countPlaced(s, policy->smt, guest_threads, pus, n, stranger,
                stranger && usableFreeCoreExists(s, vm, beside), us);
    tick(s);
    return true;
}

bool
vpScoreSharedPlaced(vpScore *s, const char *name, const vpPolicy *policy, unsigned n, double us,
                    GError **error)
{
    vpScoreVM *vm;

    if (g_hash_table_contains(s->vms, name)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "VM '%s' is placed twice", name);
        return false;
    }
    vm = vmNew(name, policy, 0, NULL, 0);
    vm->held = g_new0(guint64, MAX(vpTopologyNGroups(s->topo, VP_LEVEL_NUMA), 1));
    g_hash_table_insert(s->vms, vm->name, vm);
    s->starts++;
    s->placed++;
    s->vcpus_asked += n;
    s->vcpus_placed += n;
    if (!s->refused_once)
        s->admitted_first++;
    g_array_append_val(s->decision_us, us);
    tick(s);
    return true;
}

bool
vpScoreMoved(vpScore *s, const char *name, unsigned from, unsigned to, GError **error)
{
    vpScoreVM *vm = g_hash_table_lookup(s->vms, name);
    int pf = vpTopologyPUByOS(s->topo, from), pt = vpTopologyPUByOS(s->topo, to);
    unsigned v;

    for (v = 0; vm && pf >= 0 && v < vm->n && vm->pus[v] != pf; v++)
        ;
    if (!vm || pf < 0 || v == vm->n || s->owner[pf] != vm || (s->more[pf] && s->more[pf]->len)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "move of VM '%s': it runs no vCPU on CPU %u",
                    name, from);
        return false;
    }
    if (pt < 0 || s->owner[pt] || !vpTopologyPU(s->topo, pt)->usable) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "move of VM '%s': CPU %u is not a free usable CPU", name, to);
        return false;
    }
    s->owner[pf] = NULL;
    s->owner[pt] = vm;
    vm->pus[v] = pt;
    s->moves++;
    s->pending_moves++;
    return true;
}

void
vpScoreRefused(vpScore *s, unsigned n, double us)
{
    s->starts++;
    s->refused++;
    s->vcpus_asked += n;
    s->pending_moves = 0;
    s->refused_once = true;
    if (freeUsable(s) >= (int)n)
        s->frag_refusals++;
    g_array_append_val(s->decision_us, us);
    tick(s);
}

bool
vpScoreStopped(vpScore *s, const char *name)
{
    vpScoreVM *vm = g_hash_table_lookup(s->vms, name);

    if (!vm)
        return false;
    for (int pu = 0; pu < vpTopologyNPUs(s->topo); pu++) {
        if (s->more[pu])
            g_ptr_array_remove(s->more[pu], vm);
        if (s->owner[pu] != vm)
            continue;
        s->owner[pu] = NULL;
        if (s->more[pu] && s->more[pu]->len)
            s->owner[pu] = g_ptr_array_steal_index(s->more[pu], 0);
    }
    for (int g = 0; g < vpTopologyNGroups(s->topo, VP_LEVEL_NUMA); g++)
        s->node_held[g] -= vm->held[g];
    g_hash_table_remove(s->vms, name);
    tick(s);
    return true;
}

static int
cmpDouble(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double
percentile(GArray *sorted, double p)
{
    if (!sorted->len)
        return 0;
    return g_array_index(sorted, double, (guint)floor(p * (sorted->len - 1) + 0.5));
}

static void
addDouble(JsonBuilder *b, const char *name, double v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_double_value(b, round(v * 1000) / 1000);
}

static void
addInt(JsonBuilder *b, const char *name, gint64 v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_int_value(b, v);
}

JsonNode *
vpScoreToJson(const vpScore *s)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(GArray) sorted = g_array_copy(s->decision_us);
    double ev = s->events ? s->events : 1;

    g_array_sort(sorted, cmpDouble);
    json_builder_begin_object(b);
    addInt(b, "starts", s->starts);
    addInt(b, "placed", s->placed);
    addInt(b, "refused", s->refused);
    addInt(b, "admitted_before_first_refusal", s->admitted_first);
    addInt(b, "fragmentation_refusals", s->frag_refusals);
    addInt(b, "untrusted_shares_while_free_core", s->untrusted_with_free_core);
    addInt(b, "untrusted_shares_while_usable_core", s->untrusted_with_usable_core);
    addDouble(b, "untrusted_shared_cores_avg", s->untrusted_sum / ev);
    addDouble(b, "stranded_free_pus_avg", s->stranded_sum / ev);
    addDouble(b, "l3_span_excess_avg", s->placed ? s->span_l3_sum / s->placed : 0);
    addDouble(b, "numa_span_excess_avg", s->placed ? s->span_numa_sum / s->placed : 0);
    addDouble(b, "numa_span_policy_excess_avg", s->placed ? s->span_policy_sum / s->placed : 0);
    addDouble(b, "vcpus_admitted_pct",
              s->vcpus_asked ? 100.0 * s->vcpus_placed / s->vcpus_asked : 100);
    addDouble(b, "spread_vms_sharing_core_avg", s->spread_sharing_sum / ev);
    addInt(b, "moves", s->moves);
    addInt(b, "admissions_with_moves", s->admissions_moved);
    addInt(b, "moves_max_per_admission", s->max_moves);
    addDouble(b, "moves_per_start", s->starts ? (double)s->moves / s->starts : 0);
    addInt(b, "overcommitted_vcpus", s->overcommitted);
    addInt(b, "pack_vms_with_guest_siblings", s->pack_vms);
    addDouble(b, "pack_aligned_pct", s->pack_vms ? 100.0 * s->pack_aligned / s->pack_vms : 100);
    addDouble(b, "decision_us_median", percentile(sorted, 0.5));
    addDouble(b, "decision_us_p99", percentile(sorted, 0.99));
    json_builder_end_object(b);
    return json_builder_get_root(b);
}
