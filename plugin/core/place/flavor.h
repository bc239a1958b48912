/*
 * A flavor: the shape of VM a cloud sells (Nova's flavor, a KubeVirt instance type), as
 * capacity counts it: vCPUs, memory, the huge pages backing it and the policy its VMs get.
 * Written on the command line (--flavor) and in vcpuplaced.conf ([daemon] capacity_flavors)
 * as NAME:KEY=VALUE,KEY=VALUE:
 *
 *   m1.iso:vcpus=4,memory=8GiB,smt=isolate,pages=1GiB
 *
 * vcpus (1 to 4096) is required; memory (a size, as --node-memory takes it) is optional,
 * pages (a huge page size) needs memory; every other key is a policy attribute (smt, cpus,
 * ratio, locality, group, coresched, emulator), over the host's [policy] defaults. unmet is
 * always refuse: capacity counts VMs that get what they ask.
 */
#pragma once

#include "core/model/policy.h"

#include <glib.h>
#include <stdbool.h>

#define VP_FLAVOR_NAME_MAX 64

typedef struct {
    char *name; /* NULL for a shape of --vcpus (a vCPU count and an smt policy) */
    unsigned vcpus;
    guint64 memory;    /* bytes; 0: not counted */
    guint64 page_size; /* bytes of the huge pages backing memory; 0: base pages */
    vpPolicy policy;
} vpFlavor;

void vpFlavorClear(vpFlavor *flavor);
/* A GArray of vpFlavor that clears its elements. */
GArray *vpFlavorArrayNew(void);

/* Appends the flavors of list ("SPEC; SPEC", as a configuration list, or one SPEC) to out,
 * each over defaults. what names the source in errors ("--flavor", "capacity_flavors"), as
 * do the flavor's name, the key and the value: "--flavor 'm1': memory='8XB' is not a
 * memory size". A name given twice is an error. */
bool vpFlavorParseList(const char *what, const char *list, const vpPolicy *defaults, GArray *out,
                       GError **error);
