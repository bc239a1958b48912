/*
 * Placement policy of one domain, as set in its <metadata> (see xml/vcpuplace.rng) with
 * daemon-wide defaults for what the domain leaves out. Names match the schema exactly.
 */
#pragma once

#include "core/model/error.h"

#include <glib.h>
#include <stdbool.h>

#define VP_XML_NS "http://vcpuplace.org/xmlns/policy/1.0"
#define VP_XML_PREFIX "vcpuplace"
#define VP_XML_ELEMENT "policy"

typedef enum { VP_SMT_SPREAD = 0, VP_SMT_ISOLATE, VP_SMT_PACK, VP_SMT_SHARE, VP_SMT_LAST } vpSmt;
typedef enum {
    VP_CORESCHED_VM = 0,
    VP_CORESCHED_GROUP,
    VP_CORESCHED_OFF,
    VP_CORESCHED_LAST
} vpCoresched;
/* auto picks the smallest level that fits; the others force that level. "numa:N" splits
 * the VM into N equal groups of vCPUs, each on a NUMA node of its own (Nova's
 * hw:numa_nodes), with matching guest NUMA cells: its value is VP_LOCALITY_SPLIT + N, so
 * that the name carries N wherever a locality goes. */
typedef enum {
    VP_LOCALITY_AUTO = 0,
    VP_LOCALITY_L3,
    VP_LOCALITY_NUMA,
    VP_LOCALITY_PACKAGE,
    VP_LOCALITY_HOST,
    VP_LOCALITY_LAST,
    VP_LOCALITY_SPLIT = 100,
} vpLocality;
#define VP_LOCALITY_SPLIT_MAX 64
/* housekeeping: emulator threads on the housekeeping CPUs (libvirt's usual emulatorpin);
 * vcpus: float over the domain's own vCPU PUs; dedicated: one PU of its own. */
typedef enum {
    VP_EMULATOR_HOUSEKEEPING = 0,
    VP_EMULATOR_VCPUS,
    VP_EMULATOR_DEDICATED,
    VP_EMULATOR_LAST
} vpEmulator;
/* dedicated: each vCPU a CPU of its own (the smt policies); shared: the vCPUs float over
 * whole cores the placer chooses, time-shared with other shared VMs up to the ratio
 * (Nova's hw:cpu_policy=shared with cpu_allocation_ratio). */
typedef enum { VP_CPUS_DEDICATED = 0, VP_CPUS_SHARED, VP_CPUS_LAST } vpCpus;
/* Nova's default cpu_allocation_ratio for new hosts; ratios are taken within these bounds. */
#define VP_RATIO_DEFAULT 4.0
#define VP_RATIO_MAX 64.0
typedef enum { VP_REBALANCE_AUTO = 0, VP_REBALANCE_OFF, VP_REBALANCE_LAST } vpRebalance;
/* What happens when the policy cannot be met: refuse the start, or relax and say so. */
typedef enum { VP_UNMET_REFUSE = 0, VP_UNMET_DEGRADE, VP_UNMET_LAST } vpUnmet;
/* Where a domain's trust group comes from when its policy names none: nowhere (off), its
 * Nova project (<nova:owner><nova:project uuid=...>), its KubeVirt namespace (KubeVirt names
 * domains NAMESPACE_NAME), or whichever of the two the domain carries (auto). A host
 * setting ([policy] tenant_groups), never a domain attribute: a domain cannot pick its own
 * neighbours. */
typedef enum {
    VP_TENANCY_OFF = 0,
    VP_TENANCY_NOVA,
    VP_TENANCY_KUBEVIRT,
    VP_TENANCY_AUTO,
    VP_TENANCY_LAST
} vpTenancy;
#define VP_TENANCY_KEY "tenant_groups"

typedef struct {
    vpSmt smt;
    char *group; /* trust group, NULL = the domain alone */
    vpCoresched coresched;
    vpLocality locality;
    vpEmulator emulator;
    vpRebalance rebalance;
    vpUnmet unmet;
    vpCpus cpus;
    double ratio;      /* cpus=shared: vCPUs per CPU at most, on every CPU of its set */
    vpTenancy tenancy; /* host configuration only, see vpTenancy */
} vpPolicy;

void vpPolicyInitDefaults(vpPolicy *policy);
void vpPolicyClear(vpPolicy *policy);
void vpPolicyCopy(vpPolicy *dst, const vpPolicy *src);

const char *vpSmtName(vpSmt v);
const char *vpCoreschedName(vpCoresched v);
const char *vpLocalityName(vpLocality v);
/* N of locality="numa:N", 0 for any other locality. */
unsigned vpLocalitySplit(vpLocality v);
/* vCPUs of guest cell k when nvcpus are split into `cells` cells of whole guest cores of
 * `threads` threads (1 when threads does not divide nvcpus): the first cells one guest core
 * larger where the cores do not divide evenly, as libvirt allows unequal <cell>s; 0 when
 * there are fewer guest cores than cells, or k is no cell. */
unsigned vpLocalityCellVcpus(unsigned nvcpus, unsigned threads, unsigned cells, unsigned k);
const char *vpEmulatorName(vpEmulator v);
const char *vpRebalanceName(vpRebalance v);
const char *vpUnmetName(vpUnmet v);
const char *vpTenancyName(vpTenancy v);
const char *vpCpusName(vpCpus v);
/* The ratio as the schema writes it: "4", "1.5" (caller frees). */
char *vpRatioFormat(double ratio);

/* Each parser sets *out and returns true, or fails with VP_ERROR_INVALID naming
 * field and value: "smt='foo' is not one of isolate, pack, spread, share". */
bool vpPolicySetAttr(vpPolicy *policy, const char *field, const char *value, GError **error);
/* A [policy] key of the host configuration: a domain attribute, or tenant_groups. */
bool vpPolicySetDefault(vpPolicy *policy, const char *key, const char *value, GError **error);
/* A trust group name: 1..64 of [A-Za-z0-9._-]. */
bool vpPolicyValidGroup(const char *group);
