/*
 * Capacity: how many more VMs of each shape (a flavor: vCPUs, memory, huge pages and policy,
 * core/place/flavor.h; or a vCPU count x smt policy) fit on the host now,
 * and on each NUMA node, by the placer's own rules rather than a CPU count: for each shape
 * the placer places one VM after another on a copy of the ledger until it refuses. A VM
 * counts for the NUMA node that holds all its vCPUs, or as spanning when they lie on
 * several nodes. `vcpuplace capacity` and vcpuplaced's capacity gauges both use it.
 *
 * The count is a greedy fill of one shape alone: shapes compete for the same CPUs, so the
 * numbers of two shapes do not add up. Memory counts as the placer counts it (node memory
 * less the reserve and the ledger's holdings, huge pages from the node's pool of that size),
 * and a shared flavor (cpus=shared) fills up to its allocation ratio.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/model/policy.h"
#include "core/model/topology.h"
#include "core/place/flavor.h"

#include <glib.h>

#define VP_CAPACITY_DEFAULT_VCPUS "1,2,4,8"

typedef struct {
    unsigned vcpus;
    vpSmt smt;
    char *flavor;      /* the flavor's name; NULL for a shape of vCPU counts */
    guint64 memory;    /* bytes per VM; 0: not counted */
    guint64 page_size; /* bytes of the huge pages backing it; 0: base pages */
    vpCpus cpus;
    double ratio;      /* cpus=shared: the allocation ratio */
    unsigned host;     /* VMs placed before the first refusal */
    unsigned *nodes;   /* per NUMA group index (vpTopologyGroup(topo, VP_LEVEL_NUMA, i)) */
    unsigned spanning; /* VMs whose vCPUs lie on more than one node */
    char *stop;        /* the placer's refusal that ended the fill, NULL at the bound */
} vpCapacityShape;

typedef struct {
    vpCapacityShape *shapes; /* each flavor in order; or each vCPU count x each smt policy */
    guint nshapes;
    int nnodes; /* NUMA groups of the topology, the length of each shape's nodes */
} vpCapacity;

void vpCapacityFree(vpCapacity *cap);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpCapacity, vpCapacityFree)

/* "1,2,4,8" -> counts, each 1..4096; the error names --vcpus, as the CLI and the
 * documentation do. */
GArray *vpCapacityParseVcpus(const char *list, GError **error);

/* Every shape of counts (unsigned) x every smt policy, the policy's other values from
 * defaults and unmet=refuse. The ledger is not changed. */
vpCapacity *vpCapacityCompute(const vpTopology *topo, const vpLedger *ledger,
                              const vpPolicy *defaults, const GArray *counts, GError **error);
/* Appends to flavors (vpFlavor) the shapes vpCapacityCompute() counts: each count (unsigned)
 * x each smt policy, unnamed, the policy's other values from defaults. */
void vpCapacityCountFlavors(GArray *flavors, const GArray *counts, const vpPolicy *defaults);
/* Every flavor (vpFlavor) in order, each with its own policy. The ledger is not changed. */
vpCapacity *vpCapacityComputeFlavors(const vpTopology *topo, const vpLedger *ledger,
                                     const GArray *flavors, GError **error);
