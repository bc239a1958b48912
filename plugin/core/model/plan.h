/*
 * A placement: which PU each vCPU runs on, what the emulator gets, which sibling PUs are
 * held idle, the guest topology that matches (pack), and an honest account of how it was
 * obtained and what was relaxed.
 */
#pragma once

#include "core/model/policy.h"
#include "core/model/topology.h"
#include <json-glib/json-glib.h>
#include <stdbool.h>

typedef enum {
    VP_HOW_PLACED = 0, /* computed by the placer */
    VP_HOW_PINNED,     /* the domain's own <cputune> pins, respected */
    VP_HOW_ADOPTED,    /* read back from libvirt's live pins (restart, reconnect) */
    VP_HOW_LAST
} vpHow;

/* One vCPU of a running domain re-pinned: by the rebalancer, or to make room for a plan.
 * A plan's moves are applied in order, each before the next and all before the plan's own
 * vCPUs are pinned: every move's destination is free and trusted by its domain then. */
typedef struct {
    char *domain;
    unsigned vcpu;
    unsigned from; /* Linux CPU numbers */
    unsigned to;
    char *reason; /* the trigger, the figures behind it and why this target */
} vpMove;
/* Memory a domain holds on one host node in pages of one size. */
typedef struct {
    unsigned node; /* Linux node number */
    guint64 bytes;
    guint64 page_size; /* the huge pages backing it, 0: base pages (the node's memory) */
} vpNodeMemory;

typedef struct {
    char *domain;
    vpPolicy policy; /* effective policy */
    vpHow how;
    unsigned nvcpus;
    int *vcpu_pu;            /* Linux CPU per vCPU, -1 = not pinned by us */
    hwloc_bitmap_t emulator; /* Linux CPUs for the emulator threads */
    hwloc_bitmap_t reserved; /* sibling PUs held idle (isolate), or the dedicated emulator PU */
    vpLevel level;           /* topology level that holds the vCPUs */
    int level_index;         /* group index at that level (-1 for HOST) */
    /* pack: the guest topology lining guest threads up with host siblings */
    unsigned guest_sockets, guest_cores, guest_threads;
    bool topology_mismatch; /* the declared guest topology contradicts the pack layout */
    /* smt=share only: some vCPUs time-share PUs with other smt=share domains' vCPUs, because
     * no free PU was left and unmet=degrade allowed it. The ledger accepts such plans. */
    bool overcommit;
    /* cpus=shared only: the whole cores' CPUs the domain holds (with other shared domains, up
     * to the ratio), and per vCPU the CPUs it floats over, inside shared (vcpu_pu is -1);
     * empty and NULL for every other plan. */
    hwloc_bitmap_t shared;
    hwloc_bitmap_t *vcpu_set;
    /* smt=pack only: vCPUs placed on cores other trust groups held then (pack's last tier,
     * or spread's when relaxed: no whole core was left); 0 for most plans. */
    unsigned beside_others;
    bool degraded;
    char *degraded_reason; /* exactly what was relaxed, NULL when not degraded */
    /* moves of running vCPUs that make room for this plan; none for most plans */
    unsigned nmoves;
    vpMove *moves;
    /* CPUs the domain's own multi-CPU <vcpupin>, <emulatorpin> and <iothreadpin> name: held
     * for it (others avoid them), though its threads float over them. */
    hwloc_bitmap_t own;
    /* The domain's <vcpu cpuset> (Linux CPU numbers): its vCPUs and emulator stay inside,
     * whoever moves them (compaction, the rebalancer); NULL: no such limit. */
    hwloc_bitmap_t cpuset;
    /* Memory by host node and page size, ascending; page_size the domain's default huge
     * pages (0: base pages), which guest cells of their own <page nodeset> differ from. */
    unsigned nmem;
    vpNodeMemory *mem;
    guint64 page_size;
} vpPlan;

vpPlan *vpPlanNew(const char *domain, unsigned nvcpus);
void vpPlanFree(vpPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpPlan, vpPlanFree)
/* A deep copy (the ledger keeps its own). */
vpPlan *vpPlanCopy(const vpPlan *plan);

const char *vpHowName(vpHow how);
/* Adds bytes to the plan's holding on Linux node `node`, in pages of plan->page_size. */
void vpPlanAddMemory(vpPlan *plan, unsigned node, guint64 bytes);
/* The same in pages of page_size (0: base pages). */
void vpPlanAddPages(vpPlan *plan, unsigned node, guint64 page_size, guint64 bytes);
/* Bytes the plan holds on Linux node `node`, in pages of any size. */
guint64 vpPlanMemoryOn(const vpPlan *plan, unsigned node);
/* Bytes the plan holds on Linux node `node` in pages of page_size (0: base pages). */
guint64 vpPlanMemoryOnPages(const vpPlan *plan, unsigned node, guint64 page_size);
/* PUs (Linux numbers) this plan holds: vCPU PUs, reserved siblings, dedicated emulator, a
 * shared plan's cores (the domain's own pins, plan->own, are held apart: other domains' own pins
 * may name them too). */
hwloc_bitmap_t vpPlanHeld(const vpPlan *plan);
/* Where vCPU i is pinned (caller frees): its CPU, or the CPUs a cpus=shared plan floats it
 * over; for a vCPU the placer could not place (one hot-plugged on a full host) the CPUs of
 * the domain's placed vCPUs, so that it floats over its own domain's CPUs and never onto a
 * stranger's; NULL when it is not pinned (an adopted plan's vCPU that libvirt runs
 * anywhere, or no vCPU placed). */
hwloc_bitmap_t vpPlanVcpuCpus(const vpPlan *plan, unsigned i);
/* The first of the vCPUs at the end of a placed plan that the placer left unplaced (those
 * hot-plugged when there was no room); plan->nvcpus when there are none, and for plans not
 * placed by the placer or placing no vCPU at all. */
unsigned vpPlanUnplacedTail(const vpPlan *plan);

/* Makes plan a shared one: shared and a vcpu_set per vCPU, all empty. */
void vpPlanMakeShared(vpPlan *plan);
/* The share of a CPU that plan's vCPUs put on Linux CPU os: each vCPU counts 1 / the CPUs
 * it floats over on each of them (0 for a CPU outside its sets, and for dedicated plans). */
double vpPlanSharedLoad(const vpPlan *plan, int os);

/* Appends a move (the strings are copied). */
void vpPlanAddMove(vpPlan *plan, const char *domain, unsigned vcpu, unsigned from, unsigned to,
                   const char *reason);
/* The NUMA nodes (OS numbers) a domain's memory may live on, which no move of its vCPUs may
 * leave: today the nodes its pinned vCPUs are on. */
hwloc_bitmap_t vpPlanMemoryNodes(const vpPlan *plan, const vpTopology *topo);

/* The guest NUMA cells that match a locality="numa:N" placement: cell k holds the k-th
 * block of vCPUs (blocks differ by at most one guest core, vpLocalityCellVcpus()) and lives
 * on one host node, for <cpu><numa><cell id cpus> and
 * <numatune><memnode cellid nodeset>. Derived from the placement, never stored, so that a
 * move within a node keeps it true. */
typedef struct {
    unsigned id;
    unsigned node;        /* host NUMA node, OS number */
    hwloc_bitmap_t vcpus; /* vCPU indexes */
} vpGuestCell;

typedef struct {
    unsigned ncells;
    vpGuestCell *cells;
} vpGuestCells;

void vpGuestCellsFree(vpGuestCells *cells);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpGuestCells, vpGuestCellsFree)
/* The cells of a plan whose policy says numa:N and whose vCPUs sit as N consecutive blocks
 * on N distinct nodes; NULL otherwise (another locality, or relaxed by unmet=degrade). */
vpGuestCells *vpPlanGuestCells(const vpPlan *plan, const vpTopology *topo);

/* JSON object in the stable format of golden files and `vcpuplace plan --json`, and back
 * (codec/planwrite.c, codec/planread.c). */
JsonNode *vpPlanToJson(const vpPlan *plan, const vpTopology *topo);
vpPlan *vpPlanFromJson(JsonNode *node, GError **error);
/* Topology coordinates of Linux CPU os as every document gives them: the core, L3 group
 * and package by index, the NUMA node by its Linux number (as nodesets and numactl name
 * it); -1 where unknown. */
void vpPlanLocate(const vpTopology *topo, int os, int *core, int *l3, int *numa, int *package);
/* Marks plan degraded and appends the formatted reason to degraded_reason, "; "-separated,
 * so a plan relaxed for several reasons names them all. The placer and vpPlanResize()
 * relax plans this way. */
void vpPlanDegrade(vpPlan *plan, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* The cpulist form of set, "" for an empty set (vpCpuListFormat's own choice aside); caller
 * frees. */
char *vpPlanFormatSet(hwloc_const_bitmap_t set);
/* Human-readable, one vCPU per line with core / L3 / NUMA. */
char *vpPlanFormat(const vpPlan *plan, const vpTopology *topo);
