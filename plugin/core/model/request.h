/*
 * What one domain asks of the placer: vCPU count and guest topology, the pins it already
 * has, emulator and iothreads, and its policy. Built from domain XML by
 * plugin/libvirt/domxml.h, or directly by tests and `vcpuplace simulate`.
 */
#pragma once

#include "core/model/policy.h"
#include <hwloc.h>
#include <stdbool.h>

/* <numatune><memory mode>: how the kernel may place the domain's memory. */
typedef enum {
    VP_MEM_NONE = 0,    /* no <numatune>: memory follows the vCPUs (first touch) */
    VP_MEM_STRICT,      /* only the nodeset: a hard limit */
    VP_MEM_RESTRICTIVE, /* only the nodeset (cgroup cpuset.mems): a hard limit */
    VP_MEM_PREFERRED,   /* the nodeset first: a preference */
    VP_MEM_INTERLEAVE,  /* round robin over the nodeset: vCPUs spread over it */
    VP_MEM_LAST
} vpMemMode;

/* A guest NUMA cell (<cpu><numa><cell>), with its <memnode> when the domain has one. */
typedef struct {
    unsigned id;
    hwloc_bitmap_t vcpus;   /* guest vCPU ids */
    guint64 memory;         /* bytes */
    vpMemMode mode;         /* <memnode mode>, VP_MEM_NONE: the domain's */
    hwloc_bitmap_t nodeset; /* <memnode nodeset>, NULL: the domain's */
    guint64 page_size;      /* bytes of the <page nodeset> naming this cell, 0: the domain's */
} vpCell;

typedef struct {
    char *name;
    char *uuid;         /* may be NULL (simulate) */
    unsigned vcpus;     /* vCPUs online at start (<vcpu current=...>) */
    unsigned max_vcpus; /* <vcpu> (hotpluggable maximum) */
    /* <cpu><topology>, 0 when absent */
    unsigned sockets, dies, clusters, cores, threads;
    /* Existing <cputune><vcpupin>: per vCPU a Linux CPU set or NULL; has_pins when any. */
    hwloc_bitmap_t *pins; /* max_vcpus entries */
    bool has_pins;
    hwloc_bitmap_t emulator_pin; /* <emulatorpin>, NULL when absent */
    unsigned iothreads;
    hwloc_bitmap_t iothread_pin; /* union of <iothreadpin> cpusets, NULL when none */
    hwloc_bitmap_t realtime;     /* vCPU ids with <vcpusched scheduler='fifo|rr'> */
    hwloc_bitmap_t online;       /* vCPU ids online at start (<vcpus>), NULL: 0..vcpus-1 */
    hwloc_bitmap_t cpuset;       /* <vcpu cpuset>: a constraint to place inside, NULL */
    char *type;                  /* <domain type>, NULL when absent */
    bool placement_auto;         /* <vcpu placement='auto'> or <numatune> placement='auto' */
    guint64 memory;              /* bytes (<currentMemory>, else <memory>); 0 unknown */
    guint64 hugepage_size;       /* bytes of the huge pages backing memory (the <page> without
                                  * nodeset, else libvirt's default 2 MiB), 0 none; a cell's own
                                  * <page nodeset> is in its page_size */
    vpMemMode mem_mode;
    hwloc_bitmap_t nodeset; /* <numatune><memory nodeset>, NULL when none */
    unsigned ncells;
    vpCell *cells;
    bool has_policy; /* the domain carries a vcpuplace policy element */
    vpPolicy policy; /* defaults filled in for absent attributes */
} vpRequest;

vpRequest *vpRequestNew(const char *name, unsigned vcpus);
void vpRequestFree(vpRequest *req);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpRequest, vpRequestFree)

/* Threads per core the guest declares (1 when no topology). */
unsigned vpRequestGuestThreads(const vpRequest *req);
/* Whether vCPU id is online at start. */
bool vpRequestOnline(const vpRequest *req, unsigned vcpu);
/* The highest online vCPU id + 1: the entries the plan needs. */
unsigned vpRequestPlanVcpus(const vpRequest *req);
/* The huge page size backing a guest cell's memory (0: base pages). */
guint64 vpRequestCellPage(const vpRequest *req, const vpCell *cell);
/* Whether the domain is one vcpuplace places: QEMU/KVM (libvirt's qemu driver). */
bool vpRequestIsQemu(const vpRequest *req);

const char *vpMemModeName(vpMemMode mode);
/* Whether the nodeset of a mode binds the vCPUs: strict, restrictive and interleave (the
 * placer keeps them, and the emulator, on its nodes). */
bool vpMemModeHard(vpMemMode mode);
/* "strict", "restrictive", "preferred", "interleave"; -1 otherwise. */
int vpMemModeFromName(const char *name);
/* A memory size in libvirt's units (b, bytes, KB, k, KiB, MB, M, MiB, GB, G, GiB, TB, T,
 * TiB, PB, P, PiB, EB, E, EiB; case-insensitive; default_unit when unit is NULL). */
bool vpMemoryScale(const char *field, const char *value, const char *unit, const char *default_unit,
                   guint64 *bytes, GError **error);
/* "64GiB", "512M", "1073741824": a number with an optional unit as above (bytes). */
bool vpMemorySizeParse(const char *field, const char *text, guint64 *bytes, GError **error);
/* "64 GiB" (caller frees). */
char *vpMemoryFormat(guint64 bytes);
