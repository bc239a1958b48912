/*
 * What libvirt shows as applied to a running domain (its live pins), as plain sets, and
 * how that compares with a plan: the reconcile's questions (is the plan applied? did
 * someone pin every vCPU to one CPU on purpose?) answered without libvirt. The libvirt
 * adapter (libvirt/pinning.h) fills it in.
 */
#pragma once

#include "core/model/plan.h"

#include <stdbool.h>

typedef struct {
    unsigned nvcpus;         /* vCPUs libvirt reports pins for (the maximum) */
    hwloc_bitmap_t *vcpu;    /* affinity per vCPU, Linux CPU numbers */
    hwloc_bitmap_t emulator; /* NULL when the driver cannot say */
} vpLivePins;

/* nvcpus empty affinity sets, no emulator set. */
vpLivePins *vpLivePinsNew(unsigned nvcpus);
void vpLivePinsFree(vpLivePins *pins);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpLivePins, vpLivePinsFree)

/* NULL when the live pins show the plan; otherwise the first difference, in words
 * (caller frees). vCPUs the plan leaves unplaced, and an emulator the plan or the driver
 * does not say, are not compared. */
char *vpLivePinsDiff(const vpLivePins *pins, const vpPlan *plan);
/* true when some vCPU both know of is not on the one CPU the plan gives it (the
 * emulator aside): a move, as opposed to a partial application or libvirt's defaults. */
bool vpLivePinsVcpusDiffer(const vpLivePins *pins, const vpPlan *plan);
/* true when every vCPU is pinned to exactly one CPU (a deliberate placement); false for
 * a domain without vCPUs. */
bool vpLivePinsAllSingle(const vpLivePins *pins);
/* A plan (how=adopted, level host) holding exactly the live single-CPU pins, vCPUs on
 * wider sets unplaced, and the live emulator set. */
vpPlan *vpLivePinsToPlan(const vpLivePins *pins, const char *domain, const vpPolicy *policy);
