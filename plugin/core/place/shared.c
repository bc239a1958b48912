/*
 * The shared placer (cpus=shared): which whole cores a shared VM floats over, following the
 * core-scheduling cost benchmark (README "Shared CPUs"): siblings run one cookie at a time,
 * so a cookie (a VM, or a trust group with one cookie) alone on its cores pays no forced
 * idle, and strangers on one core pay least when each keeps to one sibling.
 *
 * Tiers, each tried in one NUMA node first (best fit), then over the host:
 * 1. its cookie group's cores, with as few free cores added as the ratio asks;
 * 2. ceil(V / (t * r)) free whole cores of its own, the vCPUs floating over all of them;
 * 3. no such cores: the c-rule, vCPU k on sibling k mod t of each of the fewest cores that
 *    take it within the ratio, free cores first, then the least loaded of other cookies';
 * 4. where loads have grown uneven, vCPU by vCPU the fewest least loaded CPUs that take
 *    it floating, so that the ratio's room is used per CPU as Nova counts it per node.
 * Strangers thus meet on a core only when no free core is left for the VM. Cores any
 * dedicated domain holds a CPU of are never taken, and the ledger keeps every CPU within
 * the smallest ratio of the shared domains on it.
 */
#include "core/place/placerpriv.h"

#include <math.h>

typedef struct {
    int core;
    int npus;    /* candidate PUs of the core (logical), in pus */
    int pus[8];  /* sibling order */
    double load; /* the most vCPUs any of them carries */
    bool held;   /* some shared domain holds it */
    bool own;    /* held only by the VM's cookie */
} vpShCore;

typedef struct {
    const vpTopology *topo;
    const vpLedger *ledger;
    const vpRequest *req;
    double ratio;
    unsigned nvcpus;
} vpShCtx;

/* Whether logical PU pu may carry this VM: usable, inside its cpuset and hard nodes. */
static bool
puAllowed(const vpShCtx *ctx, hwloc_const_bitmap_t hard, int pu)
{
    const vpPU *p = vpTopologyPU(ctx->topo, pu);
    const vpGroup *node =
        vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, vpTopologyNodeOfPU(ctx->topo, pu));

    return p->usable && (!ctx->req->cpuset || hwloc_bitmap_isset(ctx->req->cpuset, p->os)) &&
           (!hard || hwloc_bitmap_isset(hard, node->os));
}

/* A core as the VM sees it; false when it is no candidate (a dedicated holder, no PU). */
static bool
coreLook(const vpShCtx *ctx, hwloc_const_bitmap_t hard, int core, vpShCore *out)
{
    const vpCore *c = vpTopologyCore(ctx->topo, core);

    *out = (vpShCore){.core = core, .own = true};
    for (int i = 0; i < c->npus; i++) {
        int pu = c->pus[i];

        for (unsigned h = 0; h < vpLedgerNOwners(ctx->ledger, pu); h++) {
            vpOwner o = vpLedgerOwnerAt(ctx->ledger, pu, h);
            const vpPlan *holder = vpLedgerLookup(ctx->ledger, o.domain);

            if (o.kind != VP_OWN_SHARED)
                return false;
            out->held = true;
            out->own &= vpTrustOwnCookie(ctx->req->name, &ctx->req->policy, holder->domain,
                                         &holder->policy);
        }
        if (puAllowed(ctx, hard, pu) && out->npus < (int)G_N_ELEMENTS(out->pus)) {
            out->pus[out->npus++] = pu;
            out->load = MAX(out->load, vpLedgerSharedLoad(ctx->ledger, pu));
        }
    }
    out->own &= out->held;
    return out->npus > 0;
}

/* The candidate cores of NUMA node g (-1: the host), in core order. */
static GArray *
scopeCores(const vpShCtx *ctx, hwloc_const_bitmap_t hard, int g)
{
    const vpGroup *node = g < 0 ? NULL : vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
    int n = node ? node->ncores : vpTopologyNCores(ctx->topo);
    GArray *cores = g_array_new(FALSE, FALSE, sizeof(vpShCore));

    for (int i = 0; i < n; i++) {
        vpShCore sc;

        if (coreLook(ctx, hard, node ? node->cores[i] : i, &sc))
            g_array_append_val(cores, sc);
    }
    return cores;
}

/* Whether a floating set of `pus` PUs, over the cores picked, stays within the ratio. */
static bool
floatFits(const vpShCtx *ctx, const vpShCore *const *picked, int n)
{
    int pus = 0;

    for (int i = 0; i < n; i++)
        pus += picked[i]->npus;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < picked[i]->npus; k++) {
            if (vpLedgerSharedLoad(ctx->ledger, picked[i]->pus[k]) + (double)ctx->nvcpus / pus >
                ctx->ratio + 1e-9)
                return false;
        }
    }
    return true;
}

/* The most any PU of the picked cores carries once vCPU k goes to sibling (k + shift) mod
 * the core's width, on each of the n cores; +inf past the ratio. */
static double
cruleLoad(const vpShCtx *ctx, const vpShCore *const *picked, int n, unsigned shift)
{
    double most = 0;

    for (int i = 0; i < n; i++) {
        for (int s = 0; s < picked[i]->npus; s++) {
            unsigned mine = 0;
            double load;

            for (unsigned k = 0; k < ctx->nvcpus; k++)
                mine += (int)((k + shift) % (unsigned)picked[i]->npus) == s;
            load = vpLedgerSharedLoad(ctx->ledger, picked[i]->pus[s]) + (double)mine / n;
            if (load > ctx->ratio + 1e-9)
                return INFINITY;
            most = MAX(most, load);
        }
    }
    return most;
}

typedef enum { SH_GROUP, SH_ALONE, SH_CRULE, SH_LEAST } vpShTier;

typedef struct {
    int scope;     /* NUMA group, -1 host */
    GArray *cores; /* the scope's candidates; picked points into it */
    int n;
    const vpShCore **picked;
    bool crule;
    GArray *least;  /* SH_LEAST: per vCPU the number k of PUs it floats over, then those k */
    unsigned shift; /* c-rule: vCPU k on sibling (k + shift) mod the core's width */
    double load;    /* c-rule: the most a PU of the picked cores carries after */
    int left;       /* free cores of the scope it leaves */
} vpShPick;

static void
pickClear(vpShPick *pick)
{
    g_clear_pointer(&pick->picked, g_free);
    if (pick->least)
        g_array_free(pick->least, TRUE);
    pick->least = NULL;
    if (pick->cores)
        g_array_free(pick->cores, TRUE);
    *pick = (vpShPick){0};
}

/* Free cores first (strangers meet only when none is left), then the least loaded. */
static gint
byLoad(gconstpointer a, gconstpointer b)
{
    const vpShCore *x = a, *y = b;

    if (x->held != y->held)
        return x->held ? 1 : -1;
    if (x->load != y->load)
        return x->load < y->load ? -1 : 1;
    return x->core - y->core;
}

typedef struct {
    int pu;
    double load;
} vpShPU;

static gint
byPULoad(gconstpointer a, gconstpointer b)
{
    const vpShPU *x = a, *y = b;

    if (x->load != y->load)
        return x->load < y->load ? -1 : 1;
    return x->pu - y->pu;
}

/* The last tier, where the loads of the scope's CPUs have grown uneven: vCPU by vCPU, the
 * fewest of the least loaded CPUs that take it floating within the ratio (counting the
 * VM's vCPUs placed before it), so that the room left on each CPU is used as Nova's count
 * of vCPUs per node would use it. */
static bool
tryLeast(const vpShCtx *ctx, vpShPick *pick)
{
    g_autoptr(GArray) pus = g_array_new(FALSE, FALSE, sizeof(vpShPU));
    g_autofree bool *seen = g_new0(bool, vpTopologyNCores(ctx->topo));
    guint one;

    for (guint i = 0; i < pick->cores->len; i++) {
        const vpShCore *c = &g_array_index(pick->cores, vpShCore, i);

        for (int s = 0; s < c->npus; s++) {
            vpShPU p = {c->pus[s], vpLedgerSharedLoad(ctx->ledger, c->pus[s])};

            g_array_append_val(pus, p);
        }
    }
    pick->picked = g_new0(const vpShCore *, pick->cores->len + 1);
    pick->least = g_array_new(FALSE, FALSE, sizeof(int)); /* per vCPU: its k, then its PUs */
    /* one set for all its vCPUs where one takes it; else a set per vCPU */
    g_array_sort(pus, byPULoad);
    for (one = 1; one <= pus->len; one++) {
        if (g_array_index(pus, vpShPU, one - 1).load + (double)ctx->nvcpus / one <=
            ctx->ratio + 1e-9)
            break;
    }
    for (unsigned v = 0; v < ctx->nvcpus; v++) {
        guint k = one;

        if (one > pus->len)
            g_array_sort(pus, byPULoad);
        for (k = one <= pus->len ? one : 1; one > pus->len && k <= pus->len; k++) {
            if (g_array_index(pus, vpShPU, k - 1).load + 1.0 / k <= ctx->ratio + 1e-9)
                break;
        }
        if (k > pus->len)
            return false;
        g_array_append_val(pick->least, k);
        for (guint i = 0; i < k; i++) {
            vpShPU *p = &g_array_index(pus, vpShPU, i);
            int core = vpTopologyPU(ctx->topo, p->pu)->core;

            p->load += 1.0 / k;
            pick->load = MAX(pick->load, p->load);
            g_array_append_val(pick->least, p->pu);
            for (guint c = 0; !seen[core] && c < pick->cores->len; c++) {
                if (g_array_index(pick->cores, vpShCore, c).core == core)
                    pick->picked[pick->n++] = &g_array_index(pick->cores, vpShCore, c);
            }
            seen[core] = true;
        }
    }
    return true;
}

/* The fewest cores of pick->cores that take the VM in one tier; false when none do. */
static bool
tryTier(const vpShCtx *ctx, vpShTier tier, vpShPick *pick)
{
    GArray *cores = pick->cores;
    int n = 0;
    bool ok = false;

    if (tier == SH_LEAST)
        return tryLeast(ctx, pick);
    pick->picked = g_new0(const vpShCore *, cores->len + 1);
    pick->crule = tier == SH_CRULE;
    if (tier == SH_CRULE)
        g_array_sort(cores, byLoad);
    /* tier 1 starts from every core of the cookie's */
    for (guint i = 0; tier == SH_GROUP && i < cores->len; i++) {
        if (g_array_index(cores, vpShCore, i).own)
            pick->picked[n++] = &g_array_index(cores, vpShCore, i);
    }
    if (tier == SH_GROUP && n == 0)
        return false;
    for (guint i = 0; !ok; i++) {
        const vpShCore *c = i < cores->len ? &g_array_index(cores, vpShCore, i) : NULL;

        for (unsigned s = 0; tier == SH_CRULE && n > 0 && s < (unsigned)vpTopologyMaxSMT(ctx->topo);
             s++) {
            double load = cruleLoad(ctx, pick->picked, n, s);

            if (load < INFINITY && (!ok || load < pick->load)) {
                ok = true;
                pick->shift = s;
                pick->load = load;
            }
        }
        if (tier != SH_CRULE && n > 0)
            ok = floatFits(ctx, pick->picked, n);
        if (ok || !c)
            break;
        if (tier == SH_CRULE || !c->held)
            pick->picked[n++] = c;
    }
    pick->n = n;
    for (guint i = 0; ok && i < cores->len; i++)
        pick->left += !g_array_index(cores, vpShCore, i).held;
    for (int i = 0; ok && i < n; i++)
        pick->left -= !pick->picked[i]->held;
    return ok;
}

/* Whether the VM's memory fits node g's free memory (unknown memory is no limit). */
static bool
memoryFits(const vpShCtx *ctx, int g)
{
    const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
    guint64 used = vpLedgerNodeMemory(ctx->ledger, node->os, ctx->req->hugepage_size);
    guint64 keep = vpTopologyNodeReserve(ctx->topo) + used;

    return node->made_up || node->memory == 0 || ctx->req->hugepage_size ||
           (node->memory > keep && node->memory - keep >= ctx->req->memory);
}

/* Whether a is a better pick than b: fewer cores, then the least load, then the fewest free
 * cores left behind (best fit: big holes stay whole for big VMs). */
static bool
better(const vpShPick *a, const vpShPick *b)
{
    if (a->n != b->n)
        return a->n < b->n;
    if (a->load != b->load)
        return a->load < b->load;
    return a->left < b->left;
}

/* The best pick of a tier over the NUMA nodes (the first node on a tie), else over the
 * host. */
static bool
bestOf(const vpShCtx *ctx, hwloc_const_bitmap_t hard, vpShTier tier, vpShPick *best)
{
    int nnodes = vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA);

    for (int g = 0; g < nnodes; g++) {
        vpShPick pick = {.scope = g};

        if (!memoryFits(ctx, g))
            continue;
        pick.cores = scopeCores(ctx, hard, g);
        if (!tryTier(ctx, tier, &pick) || (best->picked && !better(&pick, best))) {
            pickClear(&pick);
            continue;
        }
        pickClear(best);
        *best = pick;
    }
    if (best->picked || nnodes < 2)
        return best->picked != NULL;
    best->scope = -1;
    best->cores = scopeCores(ctx, hard, -1);
    if (tryTier(ctx, tier, best))
        return true;
    pickClear(best);
    return false;
}

/* Each vCPU's set: all the picked PUs (floating), or sibling (k + shift) mod width of each
 * picked core (the c-rule); the memory on the nodes of the set, by its CPUs there. */
static void
fillPlan(const vpShCtx *ctx, const vpShPick *pick, vpPlan *plan)
{
    g_autofree unsigned *per_node = g_new0(unsigned, vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA));
    unsigned vcpu = 0, total = 0, next = 0;
    guint64 rest = ctx->req->memory;
    int first = -1;

    vpPlanMakeShared(plan);
    for (int i = 0; i < pick->n; i++) {
        const vpCore *core = vpTopologyCore(ctx->topo, pick->picked[i]->core);

        for (int k = 0; k < core->npus; k++)
            hwloc_bitmap_set(plan->shared, vpTopologyPU(ctx->topo, core->pus[k])->os);
        for (int k = 0; k < pick->picked[i]->npus; k++) {
            per_node[vpTopologyNodeOfPU(ctx->topo, pick->picked[i]->pus[k])]++;
            total++;
        }
    }
    for (unsigned v = 0; v < plan->nvcpus; v++) {
        if (!vpRequestOnline(ctx->req, v))
            continue;
        for (int i = 0; i < pick->n; i++) {
            const vpShCore *c = pick->picked[i];

            for (int k = 0; k < c->npus && !pick->least; k++) {
                if (!pick->crule || (int)((vcpu + pick->shift) % (unsigned)c->npus) == k)
                    hwloc_bitmap_set(plan->vcpu_set[v], vpTopologyPU(ctx->topo, c->pus[k])->os);
            }
        }
        if (pick->least) {
            int k = g_array_index(pick->least, int, next);

            for (int i = 1; i <= k; i++)
                hwloc_bitmap_set(
                    plan->vcpu_set[v],
                    vpTopologyPU(ctx->topo, g_array_index(pick->least, int, next + i))->os);
            next += k + 1;
        }
        vcpu++;
    }
    hwloc_bitmap_copy(plan->emulator, plan->shared);
    plan->level = pick->scope < 0 ? VP_LEVEL_HOST : VP_LEVEL_NUMA;
    plan->level_index = pick->scope;
    for (int g = 0; g < vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA) && ctx->req->memory; g++) {
        const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
        guint64 bytes = ctx->req->memory / total * per_node[g];

        if (!per_node[g] || node->made_up)
            continue;
        first = first < 0 ? (int)node->os : first;
        rest -= bytes;
        vpPlanAddMemory(plan, node->os, bytes);
    }
    if (first >= 0 && rest)
        vpPlanAddMemory(plan, (unsigned)first, rest);
}

/* Per node: the shared vCPUs its candidate CPUs carry against what the ratio allows, and
 * the CPUs dedicated domains keep, so that an operator sees where the room went. */
static void
refuse(const vpShCtx *ctx, hwloc_const_bitmap_t hard, GError **error)
{
    g_autoptr(GString) why = g_string_new(NULL);
    g_autofree char *ratio = vpRatioFormat(ctx->ratio);

    for (int g = 0; g < vpTopologyNGroups(ctx->topo, VP_LEVEL_NUMA); g++) {
        const vpGroup *node = vpTopologyGroup(ctx->topo, VP_LEVEL_NUMA, g);
        g_autoptr(GArray) cores = scopeCores(ctx, hard, g);
        double load = 0, most = 0;
        int pus = 0, free_cores = 0;
        char name[16] = "-";

        for (guint i = 0; i < cores->len; i++) {
            const vpShCore *c = &g_array_index(cores, vpShCore, i);

            free_cores += !c->held;
            for (int k = 0; k < c->npus; k++) {
                double l = vpLedgerSharedLoad(ctx->ledger, c->pus[k]);

                load += l;
                most = MAX(most, ctx->ratio - l);
                pus++;
            }
        }
        if (!node->made_up)
            g_snprintf(name, sizeof(name), "%u", node->os);
        g_string_append_printf(why,
                               "%snode %s: %.2f of %g vCPUs on its %d CPUs for shared VMs "
                               "(%d free cores, most room on one CPU %.2f)%s",
                               g ? "; " : "", name, load, ctx->ratio * pus, pus, free_cores,
                               pus ? most : 0, memoryFits(ctx, g) ? "" : ", memory full");
    }
    g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                "domain '%s': %u shared vCPUs at ratio %s find no room: %s", ctx->req->name,
                ctx->nvcpus, ratio, why->str);
}

vpPlan *
vpPlaceShared(const vpTopology *topo, const vpLedger *ledger, const vpRequest *req, GError **error)
{
    g_autoptr(vpPlan) plan = vpPlanNew(req->name, vpRequestPlanVcpus(req));
    g_autoptr(vpBitmap) hard = vpMemModeHard(req->mem_mode) && req->nodeset
                                   ? vpTopologyCpuNodesOf(topo, req->nodeset)
                                   : NULL;
    vpShCtx ctx = {topo, ledger, req, req->policy.ratio, 0};
    static const vpShTier tiers[] = {SH_GROUP, SH_ALONE, SH_CRULE, SH_LEAST};
    vpShPick pick = {0};

    for (unsigned v = 0; v < plan->nvcpus; v++)
        ctx.nvcpus += vpRequestOnline(req, v);
    for (unsigned t = 0; t < G_N_ELEMENTS(tiers) && !pick.picked; t++) {
        if (tiers[t] != SH_GROUP || vpTrustGroupCookie(&req->policy))
            bestOf(&ctx, hard, tiers[t], &pick);
    }
    if (!pick.picked) {
        refuse(&ctx, hard, error);
        return NULL;
    }
    vpPolicyCopy(&plan->policy, &req->policy);
    plan->how = VP_HOW_PLACED;
    plan->page_size = req->hugepage_size;
    fillPlan(&ctx, &pick, plan);
    pickClear(&pick);
    if (req->cpuset)
        plan->cpuset = hwloc_bitmap_dup(req->cpuset);
    return g_steal_pointer(&plan);
}
