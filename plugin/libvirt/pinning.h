/*
 * Pinning through the libvirt API (so that `virsh vcpupin` shows the truth and libvirt's
 * cgroups stay consistent), and reading back what libvirt has applied.
 */
#pragma once

#include "core/plan.h"
#include <libvirt/libvirt.h>

/* What libvirt reports as applied to a running domain. */
typedef struct {
    unsigned nvcpus;         /* vCPUs libvirt reports pins for (the maximum) */
    hwloc_bitmap_t *vcpu;    /* affinity per vCPU, Linux CPU numbers */
    hwloc_bitmap_t emulator; /* NULL when the driver cannot say */
} vpLivePins;

void vpLivePinsFree(vpLivePins *pins);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpLivePins, vpLivePinsFree)

/* flags: VIR_DOMAIN_AFFECT_LIVE, or 0 (test driver). */
vpLivePins *vpVirPinsRead(virDomainPtr dom, unsigned flags, GError **error);

/* Pins every vCPU the plan places, the emulator and the iothreads (iothreads go with the
 * emulator). flags: VIR_DOMAIN_AFFECT_LIVE, VIR_DOMAIN_AFFECT_CONFIG, or 0 (test driver).
 * A driver that cannot pin the emulator or iothreads is logged, not fatal. */
gboolean vpVirPinsApply(virDomainPtr dom, const vpPlan *plan, unsigned flags, GError **error);
/* Records plan in the running domain's live metadata (domxml.h: VP_APPLIED_NS), so that a
 * restore or an incoming migration can tell vcpuplace's pins from the domain's own.
 * flags as vpVirPinsApply's. */
gboolean vpVirAppliedRecord(virDomainPtr dom, const vpPlan *plan, unsigned flags, GError **error);

/* NULL when the live pins show the plan; otherwise the first difference, in words. */
char *vpLivePinsDiff(const vpLivePins *pins, const vpPlan *plan);
/* TRUE when every vCPU is pinned to exactly one CPU (a deliberate placement). */
gboolean vpLivePinsAllSingle(const vpLivePins *pins);
/* A plan (how=adopted) holding exactly the live single-CPU pins. */
vpPlan *vpLivePinsToPlan(const vpLivePins *pins, const char *domain, const vpPolicy *policy);

/* The domain's live XML (caller frees). */
char *vpVirDomainXML(virDomainPtr dom, GError **error);
