/*
 * vCPUs added to or removed from running domains (`virsh setvcpus DOMAIN N --live`): the
 * plan is resized (core/grow.h), the new vCPU pinned through libvirt and given the
 * domain's cookie. Two ways to notice, both kept: QEMU's VCPU_THREAD_CREATED event through
 * libvirt (libvirt/qemuevents.h; only QEMU with qemu-patches/ sends it), which places the
 * vCPU at once, and re-reading each running domain's vCPU count every vcpu_poll_ms, since
 * libvirt 9.0 emits no event of its own for a vCPU hotplug.
 */
#pragma once

#include "daemon/cookies.h"
#include "daemon/daemon.h"

typedef struct _vpHotplug vpHotplug;

vpHotplug *vpHotplugNew(vpDaemon *d, vpCookies *cookies);
/* Stops listening (before the libvirt connection goes). */
void vpHotplugFree(vpHotplug *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpHotplug, vpHotplugFree)

/* The daemon's libvirt connection is up (conn) or gone (NULL). */
void vpHotplugConnected(vpHotplug *h, virConnectPtr conn);

/* {qemu_events: "listening" | why not, poll_ms} for the status reply. */
JsonNode *vpHotplugSummaryJson(const vpHotplug *h);
