/*
 * Host topology model: packages > NUMA nodes > L3 groups (> clusters) > cores > PUs.
 *
 * The model is plain data, built either by the hwloc adapter (plugin/host/hwtopo.h) or
 * by tests through vpTopologyAddPU(). Everything below the builder is read-only and makes
 * no system calls. Siblings are whatever the builder said shares a core: they are never
 * derived from CPU numbers. PUs, cores and groups are addressed by dense logical indexes;
 * "os" numbers are the Linux CPU numbers that libvirt and /proc use.
 */
#pragma once

#include "core/model/error.h"

#include <glib.h>
#include <hwloc.h>
#include <stdbool.h>

/* hwloc bitmaps with g_autoptr: g_autoptr(vpBitmap) set = hwloc_bitmap_alloc(); */
typedef struct hwloc_bitmap_s vpBitmap;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpBitmap, hwloc_bitmap_free)

typedef enum {
    VP_LEVEL_CORE = 0,
    VP_LEVEL_CLUSTER,
    VP_LEVEL_L3,
    VP_LEVEL_NUMA,
    VP_LEVEL_PACKAGE,
    VP_LEVEL_HOST,
    VP_LEVEL_LAST
} vpLevel;

typedef struct {
    unsigned os;  /* Linux CPU number */
    int core;     /* index into cores */
    bool allowed; /* in the allowed cpuset (cgroup / affinity) */
    bool usable;  /* allowed, inside the host set, outside housekeeping */
} vpPU;

typedef struct {
    unsigned os; /* hwloc/Linux core id (not unique across packages) */
    int npus;
    int *pus;                 /* indexes into pus, ascending os */
    int group[VP_LEVEL_LAST]; /* index of the enclosing group per level; [VP_LEVEL_CORE] = self */
} vpCore;

/* A huge page pool of one node: pages of size bytes, count of them in the pool. */
typedef struct {
    guint64 size;
    guint64 count;
} vpPagePool;

typedef struct {
    vpLevel level;
    unsigned os; /* os index (Linux NUMA node number, package id, L3 id) */
    int ncores;
    int *cores; /* ascending */
    int npus;   /* usable PUs (see vpPU.usable) */
    /* NUMA nodes only: local memory in bytes (0 = unknown, then never a limit), and the huge
     * page pools by size, ascending. */
    guint64 memory;
    unsigned npools;
    vpPagePool *pools;
    /* The machine has no such object above these cores (CPUs without a NUMA node, as when a
     * node's memory is offline): the model made one up, os means nothing. */
    bool made_up;
    /* CPU-less NUMA nodes only (vpTopologyMemNode): the CPU nodes (Linux numbers) whose CPUs
     * are local to this memory, every CPU node when the machine gives it no locality. */
    hwloc_bitmap_t near;
} vpGroup;

typedef struct _vpTopology vpTopology;

vpTopology *vpTopologyNew(void);
void vpTopologyFree(vpTopology *topo);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpTopology, vpTopologyFree)

/* CPU numbers go from 0 to VP_TOPOLOGY_MAX_CPUS - 1 (Linux's NR_CPUS is at most 8192);
 * vpTopologyFinalize() refuses a topology that names a CPU past that. */
#define VP_TOPOLOGY_MAX_CPUS 16384

/* Builder: each id is a key unique within its level (e.g. hwloc logical index); -1 for a
 * level the machine does not have (the core then gets a group of its own making at that
 * level, one per group of the next level up). core is unique machine-wide. */
void vpTopologyAddPU(vpTopology *topo, unsigned os, int package, int numa, int l3, int cluster,
                     int core, bool allowed);
/* Describes the NUMA node the builder called numa (same key as vpTopologyAddPU): its Linux
 * node number, local memory in bytes (0 when unknown) and huge page pools. Nodes without
 * CPUs (memory-side HBM, CXL, NVDIMM) may be described too: nodesets may name them. Without
 * a description a node's number is its key and its memory unknown. */
void vpTopologySetNode(vpTopology *topo, int numa, unsigned os, guint64 memory,
                       const vpPagePool *pools, unsigned npools);
/* The CPUs local to node numa (hwloc: a NUMA node's cpuset), for a node that has no CPUs of
 * its own; without it such a node is near every CPU node. */
void vpTopologySetNodeCpus(vpTopology *topo, int numa, hwloc_const_bitmap_t cpus);
/* A CPU the machine has but that is offline: shown, never handed out, not in any core. */
void vpTopologyAddOffline(vpTopology *topo, unsigned os);
/* Restricts handing out to host \ housekeeping (either may be NULL: all / none) and
 * computes the derived tables. Fails when a set names CPUs the machine does not have. */
bool vpTopologyFinalize(vpTopology *topo, hwloc_const_bitmap_t host,
                        hwloc_const_bitmap_t housekeeping, GError **error);

/* A short description of the source ("host", "synthetic:...", "file.xml"). */
void vpTopologySetSource(vpTopology *topo, const char *source);
const char *vpTopologyGetSource(const vpTopology *topo);

int vpTopologyNPUs(const vpTopology *topo);
int vpTopologyNCores(const vpTopology *topo);
int vpTopologyNGroups(const vpTopology *topo, vpLevel level);
const vpPU *vpTopologyPU(const vpTopology *topo, int pu);
const vpCore *vpTopologyCore(const vpTopology *topo, int core);
const vpGroup *vpTopologyGroup(const vpTopology *topo, vpLevel level, int idx);

/* Logical PU index of Linux CPU os, or -1. */
int vpTopologyPUByOS(const vpTopology *topo, unsigned os);
/* Most PUs any core has (1 without SMT, 2, 4, 8). */
int vpTopologyMaxSMT(const vpTopology *topo);
/* Usable PUs as a Linux CPU set. */
hwloc_const_bitmap_t vpTopologyUsableSet(const vpTopology *topo);
hwloc_const_bitmap_t vpTopologyHousekeeping(const vpTopology *topo);
hwloc_const_bitmap_t vpTopologyOffline(const vpTopology *topo);
/* Usable PUs of a core (all of them usable: a "whole" core). */
int vpTopologyCoreUsable(const vpTopology *topo, int core);

/* Index of the NUMA group with Linux node number os, or -1 (also for CPU-less nodes). */
int vpTopologyNodeByOS(const vpTopology *topo, unsigned os);
/* NUMA nodes without CPUs (HBM, CXL memory, memory tiers): level VP_LEVEL_NUMA, no cores,
 * near set. Ascending Linux node number. */
int vpTopologyNMemNodes(const vpTopology *topo);
const vpGroup *vpTopologyMemNode(const vpTopology *topo, int idx);
/* The CPU-less node with Linux node number os, or NULL. */
const vpGroup *vpTopologyMemNodeByOS(const vpTopology *topo, unsigned os);
/* The CPU nodes (Linux numbers) whose CPUs a domain bound to the nodes of nodeset may run
 * on: the CPU nodes nodeset names, and those near the CPU-less nodes it names (caller
 * frees). */
hwloc_bitmap_t vpTopologyCpuNodesOf(const vpTopology *topo, hwloc_const_bitmap_t nodeset);
/* Every Linux node number the machine has, CPU-less nodes included. */
hwloc_const_bitmap_t vpTopologyNodeSet(const vpTopology *topo);
/* Gives memory (bytes) to every node whose memory is unknown: hwloc exports without
 * local_memory, completed by the operator. Allowed after finalize. */
void vpTopologySetUnknownMemory(vpTopology *topo, guint64 memory);
/* Memory kept for the host on every node (bytes), out of what domains may hold there.
 * VP_DEFAULT_NODE_RESERVE until set. */
#define VP_DEFAULT_NODE_RESERVE (512ULL << 20)
void vpTopologySetNodeReserve(vpTopology *topo, guint64 bytes);
guint64 vpTopologyNodeReserve(const vpTopology *topo);
/* NUMA group index of a logical PU. */
int vpTopologyNodeOfPU(const vpTopology *topo, int pu);

/* Parses a Linux CPU list ("0-3,8,10-11"); an error names field and value. */
hwloc_bitmap_t vpCpuListParse(const char *field, const char *list, GError **error);
/* Formats a set as a Linux CPU list (caller frees). */
char *vpCpuListFormat(hwloc_const_bitmap_t set);

const char *vpLevelName(vpLevel level);
/* "l3", "numa", "package", "host"...; -1 when unknown. */
int vpLevelFromName(const char *name);
