/*
 * The topology model. Builders hand in PUs with opaque ids per level; finalize sorts cores
 * into hierarchy order (package, NUMA node, L3, cluster, first PU) so that walking cores in
 * index order walks the machine the way the placer wants to fill it, and so that output is
 * the same whatever order the builder used.
 */
#include "core/model/topology.h"

#include <stdlib.h>

typedef struct {
    unsigned os;
    int key[VP_LEVEL_LAST]; /* per level id from the builder; [VP_LEVEL_CORE] = core id */
    bool allowed;
} vpRawPU;

typedef struct {
    int key; /* the builder's NUMA key */
    unsigned os;
    guint64 memory;
    unsigned npools;
    vpPagePool *pools;
    hwloc_bitmap_t cpus; /* local CPUs, for a node without CPUs of its own */
    bool has_cpus;       /* some PU's NUMA key is this node's */
} vpRawNode;

struct _vpTopology {
    char *source;
    GArray *raw;   /* vpRawPU, builder input */
    GArray *nodes; /* vpRawNode, builder input */
    hwloc_bitmap_t nodeset;
    guint64 node_reserve;
    hwloc_bitmap_t offline;
    long long bad_os; /* the first CPU number past VP_TOPOLOGY_MAX_CPUS added, or -1 */
    bool final;

    GArray *pus;   /* vpPU */
    GArray *cores; /* vpCore */
    GArray *groups[VP_LEVEL_LAST];
    GArray *memnodes; /* vpGroup, CPU-less NUMA nodes */
    int *pu_by_os;
    unsigned npu_by_os;
    int max_smt;
    hwloc_bitmap_t usable;
    hwloc_bitmap_t housekeeping;
};

vpTopology *
vpTopologyNew(void)
{
    vpTopology *topo = g_new0(vpTopology, 1);

    topo->raw = g_array_new(FALSE, TRUE, sizeof(vpRawPU));
    topo->nodes = g_array_new(FALSE, TRUE, sizeof(vpRawNode));
    topo->nodeset = hwloc_bitmap_alloc();
    topo->node_reserve = VP_DEFAULT_NODE_RESERVE;
    topo->offline = hwloc_bitmap_alloc();
    topo->bad_os = -1;
    topo->pus = g_array_new(FALSE, TRUE, sizeof(vpPU));
    topo->cores = g_array_new(FALSE, TRUE, sizeof(vpCore));
    for (int l = 0; l < VP_LEVEL_LAST; l++)
        topo->groups[l] = g_array_new(FALSE, TRUE, sizeof(vpGroup));
    topo->memnodes = g_array_new(FALSE, TRUE, sizeof(vpGroup));
    topo->usable = hwloc_bitmap_alloc();
    topo->housekeeping = hwloc_bitmap_alloc();
    return topo;
}

void
vpTopologyFree(vpTopology *topo)
{
    if (!topo)
        return;
    for (guint i = 0; i < topo->cores->len; i++)
        g_free(g_array_index(topo->cores, vpCore, i).pus);
    for (int l = 0; l < VP_LEVEL_LAST; l++) {
        for (guint i = 0; i < topo->groups[l]->len; i++) {
            g_free(g_array_index(topo->groups[l], vpGroup, i).cores);
            g_free(g_array_index(topo->groups[l], vpGroup, i).pools);
        }
        g_array_free(topo->groups[l], TRUE);
    }
    for (guint i = 0; i < topo->memnodes->len; i++) {
        g_free(g_array_index(topo->memnodes, vpGroup, i).pools);
        hwloc_bitmap_free(g_array_index(topo->memnodes, vpGroup, i).near);
    }
    g_array_free(topo->memnodes, TRUE);
    for (guint i = 0; i < topo->nodes->len; i++) {
        g_free(g_array_index(topo->nodes, vpRawNode, i).pools);
        hwloc_bitmap_free(g_array_index(topo->nodes, vpRawNode, i).cpus);
    }
    g_array_free(topo->nodes, TRUE);
    hwloc_bitmap_free(topo->nodeset);
    g_array_free(topo->raw, TRUE);
    g_array_free(topo->pus, TRUE);
    g_array_free(topo->cores, TRUE);
    hwloc_bitmap_free(topo->offline);
    hwloc_bitmap_free(topo->usable);
    hwloc_bitmap_free(topo->housekeeping);
    g_free(topo->pu_by_os);
    g_free(topo->source);
    g_free(topo);
}

void
vpTopologySetSource(vpTopology *topo, const char *source)
{
    g_free(topo->source);
    topo->source = g_strdup(source);
}

const char *
vpTopologyGetSource(const vpTopology *topo)
{
    return topo->source ? topo->source : "builder";
}

/* A CPU number past the bound (4294967295 once made max_os + 1 wrap to 0) is kept aside
 * for vpTopologyFinalize() to refuse: the builder has no error path of its own. */
static bool
vpTopologyCheckOS(vpTopology *topo, unsigned os)
{
    if (os < VP_TOPOLOGY_MAX_CPUS)
        return true;
    if (topo->bad_os < 0)
        topo->bad_os = os;
    return false;
}

void
vpTopologyAddPU(vpTopology *topo, unsigned os, int package, int numa, int l3, int cluster, int core,
                bool allowed)
{
    vpRawPU raw = {.os = os, .allowed = allowed};

    g_return_if_fail(!topo->final);
    if (!vpTopologyCheckOS(topo, os))
        return;
    raw.key[VP_LEVEL_CORE] = core;
    raw.key[VP_LEVEL_CLUSTER] = cluster;
    raw.key[VP_LEVEL_L3] = l3;
    raw.key[VP_LEVEL_NUMA] = numa;
    raw.key[VP_LEVEL_PACKAGE] = package;
    raw.key[VP_LEVEL_HOST] = 0;
    g_array_append_val(topo->raw, raw);
}

static int
poolCompare(gconstpointer a, gconstpointer b)
{
    const vpPagePool *x = a, *y = b;

    return x->size < y->size ? -1 : x->size > y->size;
}

void
vpTopologySetNode(vpTopology *topo, int numa, unsigned os, guint64 memory, const vpPagePool *pools,
                  unsigned npools)
{
    vpRawNode node = {.key = numa, .os = os, .memory = memory, .npools = npools};

    g_return_if_fail(!topo->final);
    node.pools = g_memdup2(pools, sizeof(*pools) * npools);
    if (npools)
        qsort(node.pools, npools, sizeof(*pools), poolCompare);
    g_array_append_val(topo->nodes, node);
    hwloc_bitmap_set(topo->nodeset, os);
}

void
vpTopologySetNodeCpus(vpTopology *topo, int numa, hwloc_const_bitmap_t cpus)
{
    g_return_if_fail(!topo->final);
    for (guint i = 0; i < topo->nodes->len; i++) {
        vpRawNode *n = &g_array_index(topo->nodes, vpRawNode, i);

        if (n->key != numa)
            continue;
        if (!n->cpus)
            n->cpus = hwloc_bitmap_alloc();
        hwloc_bitmap_copy(n->cpus, cpus);
        return;
    }
}

void
vpTopologyAddOffline(vpTopology *topo, unsigned os)
{
    g_return_if_fail(!topo->final);
    if (vpTopologyCheckOS(topo, os))
        hwloc_bitmap_set(topo->offline, os);
}

/* A missing level borrows the id of the next level up, made distinct by an offset, so the
 * machine still has exactly one group per level above every core. */
static void
fillMissingKeys(GArray *raw)
{
    for (guint i = 0; i < raw->len; i++) {
        vpRawPU *r = &g_array_index(raw, vpRawPU, i);

        for (int l = VP_LEVEL_PACKAGE; l > VP_LEVEL_CORE; l--) {
            if (r->key[l] < 0)
                r->key[l] = (l == VP_LEVEL_PACKAGE) ? 0 : -1 - r->key[l + 1];
        }
    }
}

static int
rawCompare(gconstpointer a, gconstpointer b)
{
    const vpRawPU *x = a, *y = b;
    static const int order[] = {VP_LEVEL_PACKAGE, VP_LEVEL_NUMA, VP_LEVEL_L3, VP_LEVEL_CLUSTER,
                                VP_LEVEL_CORE};

    for (gsize i = 0; i < G_N_ELEMENTS(order); i++) {
        if (x->key[order[i]] != y->key[order[i]])
            return x->key[order[i]] < y->key[order[i]] ? -1 : 1;
    }
    return x->os < y->os ? -1 : x->os > y->os;
}

/* Cores keep hierarchy order but, within one group path, go by their first PU's number so
 * that "core 0" is the core of CPU 0 wherever the builder's ids came from. */
static int
rawCompareByCoreFirstOS(gconstpointer a, gconstpointer b, gpointer data)
{
    const vpRawPU *x = a, *y = b;
    GHashTable *first = data;
    static const int order[] = {VP_LEVEL_PACKAGE, VP_LEVEL_NUMA, VP_LEVEL_L3, VP_LEVEL_CLUSTER};
    unsigned fx, fy;

    for (gsize i = 0; i < G_N_ELEMENTS(order); i++) {
        if (x->key[order[i]] != y->key[order[i]])
            return x->key[order[i]] < y->key[order[i]] ? -1 : 1;
    }
    fx = GPOINTER_TO_UINT(g_hash_table_lookup(first, GINT_TO_POINTER(x->key[VP_LEVEL_CORE])));
    fy = GPOINTER_TO_UINT(g_hash_table_lookup(first, GINT_TO_POINTER(y->key[VP_LEVEL_CORE])));
    if (fx != fy)
        return fx < fy ? -1 : 1;
    return x->os < y->os ? -1 : x->os > y->os;
}

/* A node without a description is numbered by its key, and its memory is unknown. */
static void
describeNode(vpTopology *topo, int key, vpGroup *g)
{
    for (guint i = 0; i < topo->nodes->len; i++) {
        vpRawNode *n = &g_array_index(topo->nodes, vpRawNode, i);

        if (n->key != key)
            continue;
        n->has_cpus = true;
        g->os = n->os;
        g->memory = n->memory;
        g->npools = n->npools;
        g->pools = g_memdup2(n->pools, sizeof(*n->pools) * n->npools);
        return;
    }
    if (!g->made_up)
        hwloc_bitmap_set(topo->nodeset, g->os);
}

/* Checks the builder's PUs (each CPU once, none also offline) and sorts them core by core,
 * cores in vpCore order; *max_os: the highest CPU number. */
static bool
orderRawPUs(vpTopology *topo, unsigned *max_os, GError **error)
{
    g_autoptr(GHashTable) first = g_hash_table_new(NULL, NULL);
    g_autoptr(GHashTable) seen_os = g_hash_table_new(NULL, NULL);

    *max_os = 0;
    g_array_sort(topo->raw, rawCompare);
    for (guint i = 0; i < topo->raw->len; i++) {
        vpRawPU *r = &g_array_index(topo->raw, vpRawPU, i);
        gpointer k = GINT_TO_POINTER(r->key[VP_LEVEL_CORE]);
        gpointer f;

        if (g_hash_table_contains(seen_os, GUINT_TO_POINTER(r->os))) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "CPU %u appears twice in the topology",
                        r->os);
            return false;
        }
        g_hash_table_add(seen_os, GUINT_TO_POINTER(r->os));
        if (hwloc_bitmap_isset(topo->offline, r->os)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "CPU %u is both online and offline",
                        r->os);
            return false;
        }
        if (!g_hash_table_lookup_extended(first, k, NULL, &f) || r->os < GPOINTER_TO_UINT(f))
            g_hash_table_insert(first, k, GUINT_TO_POINTER(r->os));
        *max_os = MAX(*max_os, r->os);
    }
    g_array_sort_with_data(topo->raw, rawCompareByCoreFirstOS, first);
    return true;
}

/* A new core for PU r, its groups at every level above the core found in group_idx
 * ((level << 32 | id) -> group index) or made there. */
static vpCore *
addCore(vpTopology *topo, GHashTable *group_idx, const vpRawPU *r)
{
    vpCore c = {.os = (unsigned)r->key[VP_LEVEL_CORE]};

    c.group[VP_LEVEL_CORE] = topo->cores->len;
    for (int l = VP_LEVEL_CLUSTER; l < VP_LEVEL_LAST; l++) {
        gint64 key = ((gint64)l << 32) | (guint32)r->key[l];
        gpointer idx;

        if (!g_hash_table_lookup_extended(group_idx, &key, NULL, &idx)) {
            vpGroup g = {.level = l, .os = (unsigned)MAX(r->key[l], 0), .made_up = r->key[l] < 0};

            if (l == VP_LEVEL_NUMA)
                describeNode(topo, r->key[l], &g);

            idx = GINT_TO_POINTER(topo->groups[l]->len);
            g_hash_table_insert(group_idx, g_memdup2(&key, sizeof(key)), idx);
            g_array_append_val(topo->groups[l], g);
        }
        c.group[l] = GPOINTER_TO_INT(idx);
    }
    g_array_append_val(topo->cores, c);
    return &g_array_index(topo->cores, vpCore, topo->cores->len - 1);
}

/* Siblings of one core share every group above it. */
static bool
sameGroups(const vpRawPU *prev, const vpRawPU *r, GError **error)
{
    for (int l = VP_LEVEL_CLUSTER; l < VP_LEVEL_LAST; l++) {
        if (prev->key[l] != r->key[l]) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "CPU %u and CPU %u share a core but not a %s", prev->os, r->os,
                        vpLevelName(l));
            return false;
        }
    }
    return true;
}

static bool
buildCores(vpTopology *topo, GError **error)
{
    g_autoptr(GHashTable) group_idx =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    unsigned max_os;

    if (!orderRawPUs(topo, &max_os, error))
        return false;
    topo->npu_by_os = max_os + 1;
    topo->pu_by_os = g_new(int, topo->npu_by_os);
    for (unsigned i = 0; i < topo->npu_by_os; i++)
        topo->pu_by_os[i] = -1;

    for (guint i = 0; i < topo->raw->len; i++) {
        vpRawPU *r = &g_array_index(topo->raw, vpRawPU, i);
        vpPU pu = {.os = r->os, .allowed = r->allowed};
        vpCore *core =
            topo->cores->len ? &g_array_index(topo->cores, vpCore, topo->cores->len - 1) : NULL;
        const vpRawPU *prev = i ? &g_array_index(topo->raw, vpRawPU, i - 1) : NULL;

        if (!prev || prev->key[VP_LEVEL_CORE] != r->key[VP_LEVEL_CORE])
            core = addCore(topo, group_idx, r);
        else if (!sameGroups(prev, r, error))
            return false;
        pu.core = topo->cores->len - 1;
        core->pus = g_renew(int, core->pus, core->npus + 1);
        core->pus[core->npus++] = topo->pus->len;
        topo->pu_by_os[r->os] = topo->pus->len;
        g_array_append_val(topo->pus, pu);
    }
    return true;
}

static void
buildGroups(vpTopology *topo)
{
    for (guint c = 0; c < topo->cores->len; c++) {
        vpCore *core = &g_array_index(topo->cores, vpCore, c);

        for (int l = VP_LEVEL_CLUSTER; l < VP_LEVEL_LAST; l++) {
            vpGroup *g = &g_array_index(topo->groups[l], vpGroup, core->group[l]);

            g->cores = g_renew(int, g->cores, g->ncores + 1);
            g->cores[g->ncores++] = c;
            for (int p = 0; p < core->npus; p++)
                g->npus += g_array_index(topo->pus, vpPU, core->pus[p]).usable;
        }
        topo->max_smt = MAX(topo->max_smt, core->npus);
    }
}

/* The CPU nodes near a CPU-less node: those with a PU among its local CPUs; all of them
 * when it has none (hwloc attaches a machine-wide memory tier to the machine). */
static hwloc_bitmap_t
nearNodes(const vpTopology *topo, hwloc_const_bitmap_t cpus)
{
    hwloc_bitmap_t near = hwloc_bitmap_alloc();

    for (guint i = 0; cpus && i < topo->pus->len; i++) {
        const vpPU *pu = &g_array_index(topo->pus, vpPU, i);
        int g = g_array_index(topo->cores, vpCore, pu->core).group[VP_LEVEL_NUMA];
        const vpGroup *node = &g_array_index(topo->groups[VP_LEVEL_NUMA], vpGroup, g);

        if (!node->made_up && hwloc_bitmap_isset(cpus, pu->os))
            hwloc_bitmap_set(near, node->os);
    }
    if (hwloc_bitmap_iszero(near)) {
        for (guint g = 0; g < topo->groups[VP_LEVEL_NUMA]->len; g++) {
            const vpGroup *node = &g_array_index(topo->groups[VP_LEVEL_NUMA], vpGroup, g);

            if (!node->made_up)
                hwloc_bitmap_set(near, node->os);
        }
    }
    return near;
}

static int
memNodeCompare(gconstpointer a, gconstpointer b)
{
    const vpGroup *x = a, *y = b;

    return x->os < y->os ? -1 : x->os > y->os;
}

/* Described nodes that no PU named are the CPU-less ones. */
static void
buildMemNodes(vpTopology *topo)
{
    for (guint i = 0; i < topo->nodes->len; i++) {
        const vpRawNode *n = &g_array_index(topo->nodes, vpRawNode, i);
        vpGroup g = {.level = VP_LEVEL_NUMA, .os = n->os, .memory = n->memory};

        if (n->has_cpus || vpTopologyNodeByOS(topo, n->os) >= 0 ||
            vpTopologyMemNodeByOS(topo, n->os))
            continue;
        g.npools = n->npools;
        g.pools = g_memdup2(n->pools, sizeof(*n->pools) * n->npools);
        g.near = nearNodes(topo, n->cpus);
        g_array_append_val(topo->memnodes, g);
    }
    g_array_sort(topo->memnodes, memNodeCompare);
}

static bool
checkSubset(vpTopology *topo, hwloc_const_bitmap_t set, const char *what, GError **error)
{
    g_autofree char *bad = NULL;
    hwloc_bitmap_t missing;
    int os;

    if (!set)
        return true;
    missing = hwloc_bitmap_dup(set);
    hwloc_bitmap_foreach_begin(os, set)
    {
        if ((unsigned)os < topo->npu_by_os && topo->pu_by_os[os] >= 0)
            hwloc_bitmap_clr(missing, os);
        else if (hwloc_bitmap_isset(topo->offline, os))
            hwloc_bitmap_clr(missing, os);
    }
    hwloc_bitmap_foreach_end();
    if (!hwloc_bitmap_iszero(missing)) {
        bad = vpCpuListFormat(missing);
        hwloc_bitmap_free(missing);
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s names CPUs %s that this machine does not have", what, bad);
        return false;
    }
    hwloc_bitmap_free(missing);
    return true;
}

bool
vpTopologyFinalize(vpTopology *topo, hwloc_const_bitmap_t host, hwloc_const_bitmap_t housekeeping,
                   GError **error)
{
    g_return_val_if_fail(!topo->final, false);
    if (topo->bad_os >= 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "topology %s: CPU %lld is past the largest CPU number handled (%d)",
                    vpTopologyGetSource(topo), topo->bad_os, VP_TOPOLOGY_MAX_CPUS - 1);
        return false;
    }
    if (topo->raw->len == 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "topology %s has no CPUs",
                    vpTopologyGetSource(topo));
        return false;
    }
    fillMissingKeys(topo->raw);
    if (!buildCores(topo, error))
        return false;
    if (!checkSubset(topo, host, "host_cpus", error) ||
        !checkSubset(topo, housekeeping, "housekeeping_cpus", error))
        return false;
    if (housekeeping)
        hwloc_bitmap_copy(topo->housekeeping, housekeeping);
    for (guint i = 0; i < topo->pus->len; i++) {
        vpPU *pu = &g_array_index(topo->pus, vpPU, i);

        pu->usable = pu->allowed && (!host || hwloc_bitmap_isset(host, pu->os)) &&
                     !hwloc_bitmap_isset(topo->housekeeping, pu->os);
        if (pu->usable)
            hwloc_bitmap_set(topo->usable, pu->os);
    }
    buildGroups(topo);
    buildMemNodes(topo);
    g_array_set_size(topo->raw, 0);
    topo->final = true;
    return true;
}

int
vpTopologyNPUs(const vpTopology *topo)
{
    return topo->pus->len;
}

int
vpTopologyNCores(const vpTopology *topo)
{
    return topo->cores->len;
}

int
vpTopologyNGroups(const vpTopology *topo, vpLevel level)
{
    if (level == VP_LEVEL_CORE)
        return topo->cores->len;
    return level < VP_LEVEL_LAST ? (int)topo->groups[level]->len : 0;
}

const vpPU *
vpTopologyPU(const vpTopology *topo, int pu)
{
    g_return_val_if_fail(pu >= 0 && (guint)pu < topo->pus->len, NULL);
    return &g_array_index(topo->pus, vpPU, pu);
}

const vpCore *
vpTopologyCore(const vpTopology *topo, int core)
{
    g_return_val_if_fail(core >= 0 && (guint)core < topo->cores->len, NULL);
    return &g_array_index(topo->cores, vpCore, core);
}

const vpGroup *
vpTopologyGroup(const vpTopology *topo, vpLevel level, int idx)
{
    g_return_val_if_fail(level > VP_LEVEL_CORE && level < VP_LEVEL_LAST, NULL);
    g_return_val_if_fail(idx >= 0 && (guint)idx < topo->groups[level]->len, NULL);
    return &g_array_index(topo->groups[level], vpGroup, idx);
}

int
vpTopologyPUByOS(const vpTopology *topo, unsigned os)
{
    return os < topo->npu_by_os ? topo->pu_by_os[os] : -1;
}

int
vpTopologyMaxSMT(const vpTopology *topo)
{
    return topo->max_smt;
}

hwloc_const_bitmap_t
vpTopologyUsableSet(const vpTopology *topo)
{
    return topo->usable;
}

hwloc_const_bitmap_t
vpTopologyHousekeeping(const vpTopology *topo)
{
    return topo->housekeeping;
}

hwloc_const_bitmap_t
vpTopologyOffline(const vpTopology *topo)
{
    return topo->offline;
}

int
vpTopologyNodeByOS(const vpTopology *topo, unsigned os)
{
    for (guint i = 0; i < topo->groups[VP_LEVEL_NUMA]->len; i++) {
        const vpGroup *g = &g_array_index(topo->groups[VP_LEVEL_NUMA], vpGroup, i);

        if (!g->made_up && g->os == os)
            return i;
    }
    return -1;
}

int
vpTopologyNMemNodes(const vpTopology *topo)
{
    return topo->memnodes->len;
}

const vpGroup *
vpTopologyMemNode(const vpTopology *topo, int idx)
{
    g_return_val_if_fail(idx >= 0 && (guint)idx < topo->memnodes->len, NULL);
    return &g_array_index(topo->memnodes, vpGroup, idx);
}

const vpGroup *
vpTopologyMemNodeByOS(const vpTopology *topo, unsigned os)
{
    for (guint i = 0; i < topo->memnodes->len; i++) {
        const vpGroup *g = &g_array_index(topo->memnodes, vpGroup, i);

        if (g->os == os)
            return g;
    }
    return NULL;
}

hwloc_bitmap_t
vpTopologyCpuNodesOf(const vpTopology *topo, hwloc_const_bitmap_t nodeset)
{
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    int os;

    hwloc_bitmap_foreach_begin(os, nodeset)
    {
        const vpGroup *mem = vpTopologyMemNodeByOS(topo, os);

        if (mem)
            hwloc_bitmap_or(nodes, nodes, mem->near);
        else if (vpTopologyNodeByOS(topo, os) >= 0)
            hwloc_bitmap_set(nodes, os);
    }
    hwloc_bitmap_foreach_end();
    return nodes;
}

hwloc_const_bitmap_t
vpTopologyNodeSet(const vpTopology *topo)
{
    return topo->nodeset;
}

void
vpTopologySetUnknownMemory(vpTopology *topo, guint64 memory)
{
    for (guint i = 0; i < topo->groups[VP_LEVEL_NUMA]->len; i++) {
        vpGroup *g = &g_array_index(topo->groups[VP_LEVEL_NUMA], vpGroup, i);

        if (!g->memory)
            g->memory = memory;
    }
}

void
vpTopologySetNodeReserve(vpTopology *topo, guint64 bytes)
{
    topo->node_reserve = bytes;
}

guint64
vpTopologyNodeReserve(const vpTopology *topo)
{
    return topo->node_reserve;
}

int
vpTopologyNodeOfPU(const vpTopology *topo, int pu)
{
    return vpTopologyCore(topo, vpTopologyPU(topo, pu)->core)->group[VP_LEVEL_NUMA];
}

int
vpTopologyCoreUsable(const vpTopology *topo, int core)
{
    const vpCore *c = vpTopologyCore(topo, core);
    int n = 0;

    for (int i = 0; i < c->npus; i++)
        n += vpTopologyPU(topo, c->pus[i])->usable;
    return n;
}
