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

#include <glib.h>
#include <hwloc.h>
#include <stdbool.h>

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
    unsigned os;     /* Linux CPU number */
    int core;        /* index into cores */
    bool online;
    bool allowed;    /* in the process's allowed cpuset (cgroup / affinity) */
    bool usable;     /* online, allowed, inside the host set, outside housekeeping */
} vpPU;

typedef struct {
    unsigned os;       /* hwloc/Linux core id (not unique across packages) */
    int npus;
    int *pus;          /* indexes into pus, ascending os */
    int group[VP_LEVEL_LAST]; /* index of the enclosing group per level; [VP_LEVEL_CORE] = self */
} vpCore;

typedef struct {
    vpLevel level;
    unsigned os;        /* os index (NUMA node number, package id, L3 id) */
    int ncores;
    int *cores;         /* ascending */
    int parent;         /* index in the next level up that has groups, -1 at the top */
} vpGroup;

typedef struct _vpTopology vpTopology;

vpTopology *vpTopologyNew(void);
void vpTopologyFree(vpTopology *topo);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpTopology, vpTopologyFree)

/* Builder: each id is a key unique within its level (e.g. hwloc logical index); -1 for a
 * level the machine does not have (then the core's parent at the next level is used). */
void vpTopologyAddPU(vpTopology *topo, unsigned os, int package, int numa, int l3, int cluster,
                     int core, bool online, bool allowed);
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
/* Usable PUs as a Linux CPU set (caller frees). */
hwloc_bitmap_t vpTopologyUsableSet(const vpTopology *topo);
hwloc_const_bitmap_t vpTopologyHousekeeping(const vpTopology *topo);

/* Parses a Linux CPU list ("0-3,8,10-11"); an error names field and value. */
hwloc_bitmap_t vpCpuListParse(const char *field, const char *list, GError **error);
/* Formats a set as a Linux CPU list (caller frees). */
char *vpCpuListFormat(hwloc_const_bitmap_t set);

const char *vpLevelName(vpLevel level);
/* "l3", "numa", "package", "host"...; -1 when unknown. */
int vpLevelFromName(const char *name);

#define VP_ERROR vpErrorQuark()
GQuark vpErrorQuark(void);
typedef enum {
    VP_ERROR_INVALID,    /* bad input: names the field and the value */
    VP_ERROR_REFUSED,    /* the policy cannot be met on this host now */
    VP_ERROR_SYSTEM,     /* an OS or library call failed */
    VP_ERROR_UNSUPPORTED,
} vpErrorCode;
