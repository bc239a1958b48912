/*
 * The reconcile queue: the hook's "started", lifecycle events, a reconnect, a reload and a
 * retry all become "sync this domain" (or "sync everything"), queued by domain name and
 * run from an idle source on the main loop, one domain per dispatch. A sync decides from
 * libvirt's current truth (the domain's request and live pins, vpManagerSync), so that
 * duplicate or late triggers are harmless, and applies what it decides through the
 * actuator, as the domain's job (daemon/jobs.h).
 *
 * Main loop, state lock held, but vpSyncReleaseRecord() (any thread).
 */
#pragma once

#include "daemon/actuator.h"
#include "daemon/config.h"
#include "daemon/jobs.h"
#include "daemon/manager.h"
#include "daemon/report.h"
#include "libvirt/connection.h"

typedef struct _vpSync vpSync;

/* What the queue tells its owner: what a domain's placement became (plan and dom NULL:
 * released; daemon.h's vpDaemonDomainFunc), and that the ledger may have changed. */
typedef struct {
    void (*notify)(const char *name, virDomainPtr dom, const vpPlan *plan, gpointer data);
    void (*save)(gpointer data);
    gpointer data;
} vpSyncHooks;

/* lock: the state lock; the rest borrowed (cfg until vpSyncSetConfig). In mode=report a
 * domain is reported instead of placed (daemon/report.h). */
vpSync *vpSyncNew(GMutex *lock, const vpConfig *cfg, vpManager *mgr, vpVirConn *vc, vpActuator *act,
                  vpJobs *jobs, vpReport *report, const vpSyncHooks *hooks);
/* Stops every timer the queue armed. */
void vpSyncFree(vpSync *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpSync, vpSyncFree)
void vpSyncSetConfig(vpSync *s, const vpConfig *cfg);

/* Why a domain is to be synced. */
#define VP_SYNC_HOOK 1u /* the hook's "started" (its reply is out) */
#define VP_SYNC_LATE 2u /* a retry or the fallback: whatever blocked has had its time */

void vpSyncQueue(vpSync *s, const char *name, guint flags);
/* Every running domain, once libvirt is there (a reconnect, a reload). */
void vpSyncAll(vpSync *s);
/* libvirt went: nothing runs until it is back (and everything is synced then). */
void vpSyncDisconnected(vpSync *s);
/* libvirt's events (libvirt/connection.h's callbacks). */
void vpSyncLifecycle(vpSync *s, virDomainPtr dom, int event);
void vpSyncPinsChanged(vpSync *s, virDomainPtr dom, virTypedParameterPtr params, int nparams);

/* Any thread, state lock held: forgets a record (logged); FALSE when it was unknown. */
bool vpSyncReleaseRecord(vpSync *s, const char *name);
/* What the release of a record means for the queue and the listeners. */
void vpSyncReleased(vpSync *s, const char *name, bool known);
/* TRUE while a sync is queued, running or armed. */
bool vpSyncBusy(const vpSync *s);
