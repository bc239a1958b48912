/*
 * vcpuplaced.conf: a GKeyFile with two groups.
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
 *   [policy]
 *   smt=spread ...                defaults for what a domain's metadata leaves out
 *
 * Unknown groups and keys are errors naming them: a typo must not silently change policy.
 */
#pragma once

#include "core/policy.h"
#include "core/topology.h"

typedef enum { VP_HOOK_FAIL_OPEN = 0, VP_HOOK_FAIL_CLOSED } vpHookFailure;

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
    vpPolicy defaults;
} vpConfig;

#define VP_DEFAULT_URI "qemu:///system"
#define VP_DEFAULT_STATE VP_LOCALSTATEDIR "/lib/vcpuplace/ledger.json"
#define VP_DEFAULT_HOOK_TIMEOUT_MS 500

/* Built-in defaults only. */
vpConfig *vpConfigNew(void);
/* path NULL: the default path, where a missing file means built-in defaults; an explicit
 * path must exist. */
vpConfig *vpConfigLoad(const char *path, GError **error);
void vpConfigFree(vpConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpConfig, vpConfigFree)

/* Whether the configuration has vcpuplaced manage the domain called name. */
gboolean vpConfigManages(const vpConfig *cfg, const char *name);

const char *vpHookFailureName(vpHookFailure mode);
/* "open" / "closed"; -1 otherwise. */
int vpHookFailureFromName(const char *name);
