/*
 * What the daemon's own files share (daemon.c: life cycle, the state lock and handoffs;
 * ops.c: the socket operations). Nothing outside plugin/daemon/{daemon,ops}.c includes
 * this: the reconcile queue (sync.h) and the jobs (jobs.h) are handed what they use.
 */
#pragma once

#include "daemon/actuator.h"
#include "daemon/admission.h"
#include "daemon/balance.h"
#include "daemon/cookies.h"
#include "daemon/daemon.h"
#include "daemon/hotplug.h"
#include "daemon/jobs.h"
#include "daemon/metrics.h"
#include "daemon/report.h"
#include "daemon/server.h"
#include "daemon/sync.h"
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
    vpJobs *jobs;
    vpSync *sync;
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

/* daemon.c */
/* Any thread, with or without the state lock (the socket thread hands off after-work
 * without it, so that it never waits for the main loop): func runs on the main loop, or
 * destroy when the daemon goes first. */
void vpDaemonHandoff(vpDaemon *d, void (*func)(vpDaemon *d, gpointer data), gpointer data,
                     GDestroyNotify destroy);
/* Main loop: the ledger is written soon if it changed. */
void vpDaemonScheduleSave(vpDaemon *d);

/* ops.c */
/* The server's handler (server.h); data is the daemon. */
JsonNode *vpOpsHandle(JsonObject *req, vpServerCall *call, vpServerAfter *after, gpointer data);
