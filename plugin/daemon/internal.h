/*
 * What the daemon's own files share (daemon.c: life cycle, the state lock and handoffs;
 * sync.c: the reconcile queue; ops.c: the socket operations). Nothing outside
 * plugin/daemon/{daemon,sync,ops}.c includes this.
 */
#pragma once

#include "daemon/actuator.h"
#include "daemon/admission.h"
#include "daemon/balance.h"
#include "daemon/cookies.h"
#include "daemon/daemon.h"
#include "daemon/hotplug.h"
#include "daemon/metrics.h"
#include "daemon/report.h"
#include "daemon/server.h"
#include "libvirt/connection.h"

typedef struct {
    vpDaemonDomainFunc func;
    gpointer data;
} vpListener;

struct _vpDaemon {
    GMutex lock; /* the state lock (daemon.h) */
    vpConfig *cfg;
    vpManager *mgr;
    vpServer *srv;
    vpVirConn *vc;
    vpActuator *act;
    GBytes *applied_key; /* signs and checks the applied-pins records (appliedkey.h) */
    vpAdmission *admission;
    GHashTable *pending;  /* name -> VP_SYNC_* flags */
    GHashTable *attempts; /* name -> failed apply attempts so far */
    GHashTable *timers;   /* name -> armed retry timer */
    gboolean full_sync;
    guint work_id;
    guint save_id;
    guint save_failures; /* consecutive; a failed save is retried with backoff */
    guint expire_id;
    gint64 reserve_ttl_us;
    GArray *listeners;
    vpBalance *balance;
    vpCookies *cookies;
    vpHotplug *hotplug;
    GPtrArray *handoffs;     /* GSource: the socket thread's work waiting for the main loop */
    GMutex handoff_lock;     /* guards handoffs; never held with the state lock awaited */
    gboolean metrics_warned; /* the textfile could not be written (said once) */
    guint refusals[VP_REFUSAL_LAST]; /* the hook's reserves answered no, atomic */
    vpCapacityCache *capacity;       /* the capacity gauges, while the ledger stays */
    vpReport *report;                /* domains not placed, and what placing them would do */
    char *config_error; /* the last reload's failure, while the daemon runs on the last good
                         * configuration; NULL once one succeeds */
};

/* Why a domain is to be synced. */
#define VP_SYNC_HOOK 1u /* the hook's "started" (its reply is out) */
#define VP_SYNC_LATE 2u /* a retry or the fallback: whatever blocked has had its time */

/* daemon.c */
void vpDaemonLog(GLogLevelFlags level, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Any thread, with or without the state lock (the socket thread hands off after-work
 * without it, so that it never waits for the main loop): func runs on the main loop, or
 * destroy when the daemon goes first. */
void vpDaemonHandoff(vpDaemon *d, void (*func)(vpDaemon *d, gpointer data), gpointer data,
                     GDestroyNotify destroy);
/* Main loop: every listener (and the daemon's own stages) learns what a domain became. */
void vpDaemonNotify(vpDaemon *d, const char *name, virDomainPtr dom, const vpPlan *plan);
/* Main loop: the ledger is written soon if it changed. */
void vpDaemonScheduleSave(vpDaemon *d);

/* sync.c */
extern const vpVirConnCallbacks vpSyncCallbacks;
void vpSyncQueue(vpDaemon *d, const char *name, guint flags);
/* Starts the queue's idle source when there is work and libvirt is there. */
void vpSyncKick(vpDaemon *d);
/* Any thread, state lock held: forgets a record (logged); FALSE when it was unknown. */
gboolean vpSyncReleaseRecord(vpDaemon *d, const char *name);
/* Main loop: what the release of a record means for the rest of the daemon. */
void vpSyncReleased(vpDaemon *d, const char *name, gboolean known);
/* Stops every timer the queue armed (the daemon goes). */
void vpSyncStop(vpDaemon *d);

/* ops.c */
/* The server's handler (server.h); data is the daemon. */
JsonNode *vpOpsHandle(JsonObject *req, vpServerCall *call, vpServerAfter *after, gpointer data);
