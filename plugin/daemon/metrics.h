/*
 * Prometheus text exposition (format 0.0.4) for vcpuplaced: each family declared once with
 * HELP and TYPE, its samples grouped under it whatever order they are added in, label
 * values escaped. vcpuplaced serves the text over its socket (op metrics) and writes it for
 * node_exporter's textfile collector.
 */
#pragma once

#include "daemon/server.h"

#include "daemon/balance.h"
#include "daemon/cookies.h"
#include "daemon/config.h"
#include "daemon/manager.h"
#include "core/place/capacity.h"

#include <glib.h>

typedef struct _vpMetrics vpMetrics;

vpMetrics *vpMetricsNew(void);
void vpMetricsFree(vpMetrics *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpMetrics, vpMetricsFree)

/* type: "gauge" or "counter"; name and help are the caller's constants. Declaring a family
 * again changes nothing. */
void vpMetricsDeclare(vpMetrics *m, const char *name, const char *type, const char *help);
/* One sample of a declared family; the labels are name, value pairs ending with NULL. */
void vpMetricsAdd(vpMetrics *m, const char *name, double value, ...) G_GNUC_NULL_TERMINATED;
/* The exposition, families in the order declared (caller frees). */
char *vpMetricsText(const vpMetrics *m);
/* Replaces path with text atomically (a temporary file beside it, renamed), mode 0644:
 * node_exporter never reads half a file. */
gboolean vpMetricsWriteFile(const char *path, const char *text, GError **error);

/* What vcpuplaced's exposition is made of; all borrowed. */
/* Why the hook's reserve was answered no: vcpuplace_refusals_total{reason}. */
typedef enum {
    VP_REFUSAL_POLICY,  /* the placer: the policy cannot be met on this host now */
    VP_REFUSAL_INVALID, /* the domain XML or its policy metadata is wrong */
    VP_REFUSAL_FAILURE, /* anything else (the refusal of a failing daemon) */
    VP_REFUSAL_LAST,
} vpRefusal;

const char *vpRefusalName(vpRefusal r);

/* The capacity gauges' last figures, kept while the ledger and defaults stay the same:
 * repeated placement is too dear for every interval on a large host. */
typedef struct _vpCapacityCache vpCapacityCache;

vpCapacityCache *vpCapacityCacheNew(void);
void vpCapacityCacheFree(vpCapacityCache *cache);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpCapacityCache, vpCapacityCacheFree)
/* The figures for topo, ledger (on topo), defaults and shapes ("1,2,4,8", [daemon]
 * capacity_vcpus), then each flavor of flavors (capacity_flavors; NULL: none), computed again
 * only when the ledger's generation, the defaults or the shapes differ from the last
 * computation's. NULL with error when they cannot be computed
 * (the cache keeps what it had). lock (may be NULL), held by the caller, is let go while the
 * placements run (vpCapacityJobRun()): a large host's capacity takes seconds, and every
 * reserve of the hook waits for the state lock; the figures are then those of the ledger as
 * it was when asked. */
const vpCapacity *vpCapacityCacheGet(vpCapacityCache *cache, const vpTopology *topo,
                                     const vpLedger *ledger, const vpPolicy *defaults,
                                     const char *shapes, const char *flavors, GMutex *lock,
                                     GError **error);

/* vpCapacityCacheGet() in its three steps, decided under the lock, run outside it,
 * committed under it. Begin copies what the computation needs (the ledger, the defaults,
 * the counts); NULL without error when the cache's figures are current, NULL with error
 * when the shapes are wrong. Run touches the job alone. Finish takes the job and keeps its
 * figures, as those of the ledger's generation when it began. */
typedef struct _vpCapacityJob vpCapacityJob;
vpCapacityJob *vpCapacityCacheBegin(const vpCapacityCache *cache, const vpTopology *topo,
                                    const vpLedger *ledger, const vpPolicy *defaults,
                                    const char *shapes, const char *flavors, GError **error);
gboolean vpCapacityJobRun(vpCapacityJob *job, GError **error);
const vpCapacity *vpCapacityCacheFinish(vpCapacityCache *cache, vpCapacityJob *job);
void vpCapacityJobFree(vpCapacityJob *job);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpCapacityJob, vpCapacityJobFree)
/* How many times vpCapacityCacheGet() computed the figures. */
guint64 vpCapacityCacheComputations(const vpCapacityCache *cache);

typedef struct {
    const vpConfig *cfg;
    const vpManager *mgr;
    const vpBalance *balance;
    const vpCookies *cookies;
    gboolean connected;         /* libvirt */
    guint save_failures;        /* consecutive failed ledger saves */
    guint64 admission_moves;    /* made for starts (daemon/admission.h) */
    guint64 admission_failures; /* admissions whose moves libvirt refused */
    vpServerStats socket;
    const guint *refusals;     /* VP_REFUSAL_LAST counters, or NULL: none counted */
    vpCapacityCache *capacity; /* NULL: computed afresh */
    GMutex *lock;              /* the state lock the collector holds, or NULL */
    gboolean config_error;     /* the last reload failed: the last good configuration runs */
    guint reported;            /* domains reported, not placed (daemon/report.h) */
} vpMetricsSources;

/* vcpuplaced's families: per vCPU, per domain, per CPU and the daemon's totals (caller
 * frees). */
char *vpMetricsCollect(const vpMetricsSources *src);
/* Writes vpMetricsCollect() to [rebalance] textfile when one is set; a failure is logged
 * once until a write works again (*warned keeps that). */
void vpMetricsExport(const vpMetricsSources *src, gboolean *warned);
