/*
 * vCPUs added to or removed from running domains (`virsh setvcpus DOMAIN N --live`): the
 * plan is resized (core/place/grow.h), the new vCPU pinned through libvirt and given the
 * domain's cookie. Two ways to notice, both kept: QEMU's VCPU_THREAD_CREATED event through
 * libvirt (libvirt/qemuevents.h; only QEMU with qemu-patches/ sends it), which places the
 * vCPU at once, and re-reading each running domain's vCPU count every vcpu_poll_ms, since
 * libvirt 9.0 emits no event of its own for a vCPU hotplug.
 */
#pragma once

#include "daemon/config.h"
#include "daemon/cookies.h"
#include "daemon/manager.h"

typedef struct _vpHotplug vpHotplug;

/* lock is the state lock (daemon.h), held whenever the main loop runs this module and let
 * go around libvirt calls; cfg, mgr and cookies are borrowed. resync(name) has a resized
 * domain pinned again (the daemon's reconcile queue). */
vpHotplug *vpHotplugNew(GMutex *lock, const vpConfig *cfg, vpManager *mgr, vpCookies *cookies,
                        void (*resync)(const char *name, gpointer data), gpointer resync_data);
/* Stops listening (before the libvirt connection goes). */
void vpHotplugFree(vpHotplug *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpHotplug, vpHotplugFree)

/* After a configuration reload. */
void vpHotplugSetConfig(vpHotplug *h, const vpConfig *cfg);

/* The daemon's libvirt connection is up (conn, borrowed) or gone (NULL). */
void vpHotplugConnected(vpHotplug *h, virConnectPtr conn);

/* {qemu_events: "listening" | why not, poll_ms} for the status reply. */
JsonNode *vpHotplugSummaryJson(const vpHotplug *h);
