/*
 * What one domain asks of the placer: vCPU count and guest topology, the pins it already
 * has, emulator and iothreads, and its policy. Built from domain XML by
 * plugin/libvirt/domxml.h, or directly by tests and `vcpuplace simulate`.
 */
#pragma once

#include "policy.h"
#include <hwloc.h>

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
    bool has_policy; /* the domain carries a vcpuplace policy element */
    vpPolicy policy; /* defaults filled in for absent attributes */
} vpRequest;

vpRequest *vpRequestNew(const char *name, unsigned vcpus);
void vpRequestFree(vpRequest *req);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpRequest, vpRequestFree)

/* Threads per core the guest declares (1 when no topology). */
unsigned vpRequestGuestThreads(const vpRequest *req);
