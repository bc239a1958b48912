/*
 * Pinning through the libvirt API (so that `virsh vcpupin` shows the truth and libvirt's
 * cgroups stay consistent), and reading back what libvirt has applied.
 */
#pragma once

#include "core/model/livepins.h"
#include "core/model/plan.h"
#include <libvirt/libvirt.h>

/* What libvirt reports as applied to a running domain. flags: VIR_DOMAIN_AFFECT_LIVE, or
 * 0 (test driver). */
vpLivePins *vpVirPinsRead(virDomainPtr dom, unsigned flags, GError **error);

/* Pins every vCPU the plan places, the emulator and the iothreads (iothreads go with the
 * emulator). flags: VIR_DOMAIN_AFFECT_LIVE, VIR_DOMAIN_AFFECT_CONFIG, or 0 (test driver).
 * A driver that cannot pin the emulator or iothreads is logged, not fatal. */
gboolean vpVirPinsApply(virDomainPtr dom, const vpPlan *plan, unsigned flags, GError **error);
/* Records plan in the running domain's live metadata (domxml.h: VP_APPLIED_NS), so that a
 * restore or an incoming migration can tell vcpuplace's pins from the domain's own.
 * flags as vpVirPinsApply's. */
gboolean vpVirAppliedRecord(virDomainPtr dom, const vpPlan *plan, GBytes *key, unsigned flags,
                            GError **error);

/* The domain's live XML (caller frees). */
char *vpVirDomainXML(virDomainPtr dom, GError **error);
