/*
 * vcpuplaced.conf as the daemon uses it; plugin/conf reads and checks the file (its syntax
 * and the table of keys are in conf/conf.h and conf/conf.c). Four groups:
 *
 *   [daemon]
 *   uri=qemu:///system            libvirt connection
 *   topology=host                 host | synthetic:STRING | fsroot:DIR | hwloc XML path
 *   host_cpus=0-63                CPUs vcpuplace may hand out (default: all)
 *   housekeeping_cpus=0-1         CPUs kept for the host and emulator threads (default: none)
 *   socket=/run/vcpuplace/vcpuplaced.sock
 *   state=/var/lib/vcpuplace/ledger.json
 *   hook_failure=open             open: a start goes on when the daemon is unreachable;
 *                                 closed: it is refused
 *   hook_timeout_ms=500           the hook's bound on connect + reply
 *   domains=web-*;db-*            glob patterns of the domains to manage (default: all);
 *                                 others are neither placed nor pinned nor recorded
 *   qemu_conf=/etc/libvirt/qemu.conf  libvirt's QEMU driver configuration, where its
 *                                 sched_core is read (a missing file: libvirt's default)
 *   vcpu_poll_ms=2000             how often vCPU counts of running domains are re-read to
 *                                 notice hotplug that no QEMU event announced (0: never)
 *   qemu_run_dir=/run/libvirt/qemu  where libvirt's QEMU driver keeps its pidfiles, by which
 *                                 vCPU threads are found (default: that directory for
 *                                 qemu:///system, none for other URIs: no thread known)
 *   node_memory_reserve_mib=512   memory of each NUMA node kept for the host: a domain is
 *                                 placed on a node only where the rest holds its memory
 *   capacity_vcpus=1,2,4,8        the vCPU counts of the capacity gauges' shapes (and of
 *                                 `vcpuplace capacity` without --vcpus)
 *   capacity_flavors=F:vcpus=4,memory=8GiB,smt=isolate; ...   the cloud's flavors, whose
 *                                 capacity the gauges count by flavor
 *   mode=report                   report: say what would be placed, pin and refuse nothing;
 *                                 enforce: place, pin and refuse
 *   adopt_running=no              whether enforce places domains found running that the
 *                                 hook did not admit (they are reported otherwise)
 *   hook=on                       off: the hook lets every start go on untouched
 *   [policy]
 *   smt=spread ...                defaults for what a domain's metadata leaves out
 *   [rebalance]
 *   mode=auto                     auto: move waiting vCPUs; advise: only log what would
 *                                 move (`vcpuplace rebalance` still acts); off: no sampling
 *   interval=1                    seconds between samples of the vCPU threads (0.1..3600)
 *   textfile=PATH.prom            Prometheus metrics rewritten each interval (node_exporter's
 *                                 textfile collector); default none
 *   persistence=5 hot_wait=0.1 ...  the pressure model's keys (core/balance/pressure.h)
 *   max_moves=2 min_residency=60 ...  the rebalancer's keys (core/balance/rebalance.h)
 *   [admission]
 *   max_moves=2                   running vCPUs one start may move to make room for it
 *                                 (core/place/compact.h); 0: never move, refuse or degrade
 *
 * Unknown groups and keys are errors naming them: a typo must not silently change policy.
 * Built-in defaults are the table's.
 */
#pragma once

#include "conf/conf.h"
#include "core/place/compact.h"
#include "core/model/policy.h"
#include "core/balance/pressure.h"
#include "core/balance/rebalance.h"
#include "core/model/topology.h"

typedef enum { VP_HOOK_FAIL_OPEN = 0, VP_HOOK_FAIL_CLOSED } vpHookFailure;
typedef enum { VP_BALANCE_AUTO = 0, VP_BALANCE_ADVISE, VP_BALANCE_OFF } vpBalanceMode;
/* The order of [daemon] mode's choices in plugin/conf. */
typedef enum { VP_MODE_REPORT = 0, VP_MODE_ENFORCE } vpDaemonMode;

typedef struct {
    char *path; /* the file read, or NULL for built-in defaults */
    char *uri;
    char *topology;              /* NULL: the running host */
    hwloc_bitmap_t host_cpus;    /* NULL: all */
    hwloc_bitmap_t housekeeping; /* NULL: none */
    char *socket;
    char *state;
    vpHookFailure hook_failure;
    int hook_timeout_ms;
    char **domains; /* NULL: every domain */
    char *qemu_conf;
    guint vcpu_poll_ms;   /* 0: off */
    guint64 node_reserve; /* bytes of each node's memory kept for the host */
    char *qemu_run_dir;   /* NULL: from the URI */
    char *capacity_vcpus; /* the capacity gauges' vCPU counts, "1,2,4,8" */
    /* the cloud's flavors (core/place/flavor.h), checked at load; NULL: none */
    char *capacity_flavors;
    vpDaemonMode mode;
    gboolean adopt_running; /* enforce: place running domains the hook did not admit */
    gboolean hook;          /* the hook asks the daemon at all */
    vpPolicy defaults;
    /* [rebalance] */
    vpBalanceMode balance_mode;
    guint interval_ms;
    char *metrics_textfile; /* NULL: none */
    vpPressureConfig pressure;
    vpRebalanceConfig rebalance;
    vpCompactConfig admission; /* [admission] */
} vpConfig;

/* Built-in defaults only. */
vpConfig *vpConfigNew(void);
/* path NULL: the default path, where a missing file means built-in defaults; an explicit
 * path must exist. */
vpConfig *vpConfigLoad(const char *path, GError **error);
/* The host topology the configuration names (topology, host_cpus, housekeeping_cpus), with
 * its node memory reserve. */
vpTopology *vpConfigLoadTopology(const vpConfig *cfg, GError **error);
void vpConfigFree(vpConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpConfig, vpConfigFree)

/* Whether the configuration has vcpuplaced manage the domain called name (in report mode:
 * report on it). */
gboolean vpConfigManages(const vpConfig *cfg, const char *name);
/* The QEMU driver's pidfile directory (qemu_run_dir, else the URI's); NULL: unknown. */
const char *vpConfigQemuRunDir(const vpConfig *cfg);

const char *vpDaemonModeName(vpDaemonMode mode);
const char *vpHookFailureName(vpHookFailure mode);
/* "open" / "closed"; -1 otherwise. */
int vpHookFailureFromName(const char *name);
const char *vpBalanceModeName(vpBalanceMode mode);
/* "auto" / "advise" / "off"; -1 otherwise. */
int vpBalanceModeFromName(const char *name);
