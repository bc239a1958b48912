/*
 * hwloc -> vpTopology. hwloc knows the machine (siblings, caches, NUMA, clusters, offline
 * and disallowed CPUs); this file only maps its tree onto the model's levels. Offline CPUs
 * have no PU object in hwloc, only a bit in the complete cpuset, so they are recorded as
 * offline CPUs without a core.
 */
#include "host/hwtopo.h"
#include "host/hwtopoxml.h"

#include <errno.h>
#include <string.h>

static int
ancestorIndex(hwloc_obj_t pu, hwloc_obj_type_t type)
{
    hwloc_obj_t obj = hwloc_get_ancestor_obj_by_type(NULL, type, pu);

    return obj ? (int)obj->logical_index : -1;
}

static int
clusterIndex(hwloc_obj_t pu)
{
    for (hwloc_obj_t obj = pu->parent; obj; obj = obj->parent) {
        if (obj->type == HWLOC_OBJ_GROUP && obj->subtype && strcmp(obj->subtype, "Cluster") == 0)
            return (int)obj->logical_index;
    }
    return -1;
}

/* The NUMA node a PU belongs to is the smallest one whose cpuset holds it: memory-side
 * nodes (HBM, NVDIMM, CXL) often cover a whole package beside the DRAM node. */
static int
numaIndex(hwloc_topology_t hw, hwloc_obj_t pu)
{
    hwloc_obj_t node = NULL, best = NULL;

    while ((node = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, node))) {
        if (!node->cpuset || !hwloc_bitmap_isset(node->cpuset, pu->os_index))
            continue;
        if (!best || hwloc_bitmap_weight(node->cpuset) < hwloc_bitmap_weight(best->cpuset))
            best = node;
    }
    return best ? (int)best->logical_index : -1;
}

static int
coreIndex(hwloc_topology_t hw, hwloc_obj_t pu)
{
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_CORE, pu);

    /* A PU without a core object is a core of its own; keep its id apart from real cores. */
    return core ? (int)core->logical_index : (int)(0x40000000u + pu->logical_index);
}

/* hwloc's Linux backend lists the base pages first; anything up to 64 KiB is a base page
 * size (4 KiB x86, 64 KiB POWER and some arm64), not a huge page pool. */
#define VP_BASE_PAGE_MAX (64 * 1024)

/* memory_known FALSE: hwloc's synthetic backend gives every node a made-up size unless the
 * description says (memory=64GB); that size is no fact about any machine. */
static void
describeNodes(hwloc_topology_t hw, vpTopology *topo, gboolean memory_known)
{
    hwloc_obj_t node = NULL;

    while ((node = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, node))) {
        const struct hwloc_numanode_attr_s *a = &node->attr->numanode;
        g_autofree vpPagePool *pools = g_new0(vpPagePool, a->page_types_len + 1);
        unsigned npools = 0;

        for (unsigned i = 0; i < a->page_types_len; i++) {
            if (a->page_types[i].size <= VP_BASE_PAGE_MAX)
                continue;
            pools[npools].size = a->page_types[i].size;
            pools[npools++].count = a->page_types[i].count;
        }
        vpTopologySetNode(topo, (int)node->logical_index, node->os_index,
                          memory_known ? a->local_memory : 0, pools, npools);
        /* A node without PUs of its own still has a cpuset in hwloc: the CPUs of the object
         * it hangs from (a KNL SNC's MCDRAM: that cluster; a CXL expander: its package; a
         * machine-wide tier: every CPU). Every export carries it, while distance matrices
         * are often missing or made up, so locality is read from it. */
        if (node->cpuset)
            vpTopologySetNodeCpus(topo, (int)node->logical_index, node->cpuset);
    }
}

/* hwloc says only EINVAL for a synthetic description it rejects; name the first level
 * that is not TYPE:COUNT with a type hwloc knows (attributes in parentheses aside). NULL
 * when every level looks right and hwloc objects to something else. */
static char *
badSyntheticToken(const char *description)
{
    g_auto(GStrv) tokens = g_strsplit_set(description, " \t", -1);

    for (char **t = tokens; *t; t++) {
        g_autofree char *level = g_strdup(*t);
        char *colon, *paren, *end;
        hwloc_obj_type_t type;

        if (!*level || *level == '[')
            continue; /* empty, or a memory child such as "[numa]" */
        if ((paren = strchr(level, '(')))
            *paren = '\0';
        if (!(colon = strchr(level, ':'))) {
            if (g_ascii_isdigit(level[0]))
                continue; /* hwloc's bare-count form: "2 2 2" */
            return g_strdup_printf("'%s' is not TYPE:COUNT", *t);
        }
        *colon = '\0';
        if (hwloc_type_sscanf(level, &type, NULL, 0) < 0)
            return g_strdup_printf("'%s': unknown object type '%s'", *t, level);
        if (!g_ascii_isdigit(colon[1]) || (strtoul(colon + 1, &end, 10), *end != '\0'))
            return g_strdup_printf("'%s': count '%s' is not a number", *t, colon + 1);
    }
    return NULL;
}

/* hwloc builds a synthetic level in time quadratic in the objects under one parent
 * (core:2048 under one package: 6 s; core:4096: 40 s; core:8192 did not end in 60 s), and
 * checks no total. Both are bounded before hwloc is asked: at most this many objects per
 * parent, and PUs within the CPU numbers handled. */
#define VP_SYNTHETIC_MAX_ARITY 1024

static char *
syntheticTooLarge(const char *description)
{
    g_auto(GStrv) tokens = g_strsplit_set(description, " \t", -1);
    guint64 pus = 1;

    for (char **t = tokens; *t; t++) {
        const char *count = strchr(*t, ':');
        count = count ? count + 1 : *t;
        if (!**t || **t == '[' || !g_ascii_isdigit(*count))
            continue;
        guint64 n = g_ascii_strtoull(count, NULL, 10);
        if (n > VP_SYNTHETIC_MAX_ARITY)
            return g_strdup_printf("'%s': more than %d objects under one parent (hwloc builds "
                                   "them in quadratic time; load an XML export instead)",
                                   *t, VP_SYNTHETIC_MAX_ARITY);
        pus = MIN(pus * MAX(n, 1), (guint64)VP_TOPOLOGY_MAX_CPUS + 1);
    }
    if (pus > VP_TOPOLOGY_MAX_CPUS)
        return g_strdup_printf("more than %d PUs, past the largest CPU number handled (%d)",
                               VP_TOPOLOGY_MAX_CPUS, VP_TOPOLOGY_MAX_CPUS - 1);
    return NULL;
}

/* An XML export read and checked here (hwtopoxml.h), then handed to hwloc from memory;
 * *listed: the PUs it lists. */
static int
setXML(hwloc_topology_t hw, const char *path, guint *listed, GError **error)
{
    gsize len = 0;
    g_autofree char *text = vpHwtopoXMLRead(path, &len, error);
    if (!text || !vpHwtopoXMLCheck(text, path, listed, error))
        return -2;
    return hwloc_topology_set_xmlbuffer(hw, text, (int)len + 1);
}

static gboolean
loadHwloc(hwloc_topology_t hw, const char *source, guint *listed, GError **error)
{
    int rc = 0;
    g_autofree char *huge = g_str_has_prefix(source, "synthetic:")
                                ? syntheticTooLarge(source + strlen("synthetic:"))
                                : NULL;

    if (huge) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "topology '%s': %s", source, huge);
        return FALSE;
    }

    hwloc_topology_set_flags(hw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(hw, HWLOC_OBJ_GROUP, HWLOC_TYPE_FILTER_KEEP_ALL);

    if (g_str_has_prefix(source, "synthetic:"))
        rc = hwloc_topology_set_synthetic(hw, source + strlen("synthetic:"));
    else if (strcmp(source, "host") != 0)
        rc = setXML(hw, source, listed, error);
    if (rc == -2)
        return FALSE;
    if (rc < 0 || hwloc_topology_load(hw) < 0) {
        int err = errno;
        g_autofree char *bad = g_str_has_prefix(source, "synthetic:")
                                   ? badSyntheticToken(source + strlen("synthetic:"))
                                   : NULL;

        if (bad) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "topology '%s': %s", source, bad);
            return FALSE;
        }
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "topology '%s' cannot be loaded by hwloc: %s", source,
                    err ? g_strerror(err) : "invalid description");
        return FALSE;
    }
    return TRUE;
}

hwloc_topology_t
vpHwtopoOpen(const char *source, GError **error)
{
    hwloc_topology_t hw;

    if (hwloc_topology_init(&hw) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "hwloc_topology_init: %s", g_strerror(errno));
        return NULL;
    }
    guint listed = 0;
    if (!loadHwloc(hw, source ? source : "host", &listed, error)) {
        hwloc_topology_destroy(hw);
        return NULL;
    }
    return hw;
}

vpTopology *
vpHwtopoLoad(const char *source, hwloc_const_bitmap_t host, hwloc_const_bitmap_t housekeeping,
             GError **error)
{
    g_autoptr(vpTopology) topo = vpTopologyNew();
    hwloc_topology_t hw;
    hwloc_const_bitmap_t allowed, complete, online;
    hwloc_obj_t pu = NULL;
    int os;

    if (!source)
        source = "host";
    if (hwloc_topology_init(&hw) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "hwloc_topology_init: %s", g_strerror(errno));
        return NULL;
    }
    guint listed = 0;
    if (!loadHwloc(hw, source, &listed, error)) {
        hwloc_topology_destroy(hw);
        return NULL;
    }
    int kept = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
    if (kept >= 0 && (guint)kept < listed) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "topology '%s': the export lists %u PUs, hwloc kept %d (a PU outside its "
                    "parent's cpuset, or past the CPUs hwloc handles)",
                    source, listed, kept);
        hwloc_topology_destroy(hw);
        return NULL;
    }
    allowed = hwloc_topology_get_allowed_cpuset(hw);
    complete = hwloc_topology_get_complete_cpuset(hw);
    online = hwloc_topology_get_topology_cpuset(hw);
    /* An XML export can declare any cpuset, an infinite one too: walking that never ends. */
    if (hwloc_bitmap_weight(complete) < 0 || hwloc_bitmap_last(complete) >= VP_TOPOLOGY_MAX_CPUS) {
        g_autofree char *shown = NULL;
        hwloc_bitmap_list_asprintf(&shown, complete);
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "topology '%s': complete_cpuset %.40s reaches past the largest CPU number "
                    "handled (%d)",
                    source, shown ? shown : "?", VP_TOPOLOGY_MAX_CPUS - 1);
        hwloc_topology_destroy(hw);
        return NULL;
    }
    while ((pu = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_PU, pu))) {
        vpTopologyAddPU(topo, pu->os_index, ancestorIndex(pu, HWLOC_OBJ_PACKAGE), numaIndex(hw, pu),
                        ancestorIndex(pu, HWLOC_OBJ_L3CACHE), clusterIndex(pu), coreIndex(hw, pu),
                        hwloc_bitmap_isset(allowed, pu->os_index));
    }
    hwloc_bitmap_foreach_begin(os, complete)
    {
        if (!hwloc_bitmap_isset(online, os))
            vpTopologyAddOffline(topo, os);
    }
    hwloc_bitmap_foreach_end();
    describeNodes(hw, topo,
                  !g_str_has_prefix(source, "synthetic:") || strstr(source, "memory=") != NULL);
    hwloc_topology_destroy(hw);

    vpTopologySetSource(topo, source);
    if (!vpTopologyFinalize(topo, host, housekeeping, error))
        return NULL;
    return g_steal_pointer(&topo);
}
