/*
 * vcpuplaced's life cycle, reload, the state lock and the socket thread's handoffs (the
 * scheme: daemon.h). The reconcile queue is in sync.c, the socket operations in ops.c,
 * pinning in actuator.c.
 */
#include "daemon/appliedkey.h"
#include "daemon/daemonpriv.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "host/hwtopo.h"
#include "host/ledgerfile.h"

#include <string.h>

/* A failed save (a full disk) is retried after 100 ms, doubling up to 30 s. */
#define VP_SAVE_RETRY_MS 100
#define VP_SAVE_RETRY_MAX_MS 30000
/* A reservation whose start never comes is released after this, checked this often. */
#define VP_RESERVE_TTL_US (120 * G_USEC_PER_SEC)
#define VP_EXPIRE_PERIOD_MS 1000
/* Coalesces ledger writes; libvirt's truth covers what a crash in this window loses. */
#define VP_SAVE_DELAY_MS 20

/* A line about the daemon itself; lines about a domain are vpLogDomain()'s. */
static void G_GNUC_PRINTF(2, 3) vpDaemonLog(GLogLevelFlags level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_log_structured(G_LOG_DOMAIN, level, "MESSAGE", "%s", msg);
}

/* The main thread lets the state lock go while it waits in poll. */
static GMutex *pollLock;

static gint
pollUnlocked(GPollFD *fds, guint n, gint timeout)
{
    g_mutex_unlock(pollLock);
    gint r = g_poll(fds, n, timeout);
    g_mutex_lock(pollLock);
    return r;
}

void
vpDaemonUnlock(vpDaemon *d)
{
    g_mutex_unlock(&d->lock);
}

void
vpDaemonLock(vpDaemon *d)
{
    g_mutex_lock(&d->lock);
}

typedef struct {
    vpDaemon *d;
    void (*func)(vpDaemon *d, gpointer data);
    gpointer data;
    GDestroyNotify destroy;
} vpHandoff;

static gboolean
handoffRun(gpointer data)
{
    vpHandoff *h = data;
    g_mutex_lock(&h->d->handoff_lock);
    g_ptr_array_remove_fast(h->d->handoffs, g_main_current_source());
    g_mutex_unlock(&h->d->handoff_lock);
    h->func(h->d, h->data);
    return G_SOURCE_REMOVE;
}

static void
handoffFree(gpointer data)
{
    vpHandoff *h = data;
    if (h->destroy)
        h->destroy(h->data);
    g_free(h);
}

void
vpDaemonHandoff(vpDaemon *d, void (*func)(vpDaemon *d, gpointer data), gpointer data,
                GDestroyNotify destroy)
{
    vpHandoff *h = g_new0(vpHandoff, 1);
    h->d = d;
    h->func = func;
    h->data = data;
    h->destroy = destroy;
    GSource *src = g_idle_source_new();
    g_source_set_priority(src, G_PRIORITY_DEFAULT);
    g_source_set_callback(src, handoffRun, h, handoffFree);
    g_mutex_lock(&d->handoff_lock);
    g_ptr_array_add(d->handoffs, src);
    g_source_attach(src, NULL);
    g_mutex_unlock(&d->handoff_lock);
}

/* Main loop: every listener (and the daemon's own stages) learns what a domain became. */
static void
notifyDomain(const char *name, virDomainPtr dom, const vpPlan *plan, gpointer data)
{
    vpDaemon *d = data;
    vpBalanceDomain(d->balance, name, plan);
    vpCookiesKick(d->cookies);
    for (guint i = 0; i < d->listeners->len; i++) {
        vpListener *l = &g_array_index(d->listeners, vpListener, i);
        l->func(d, name, dom, plan, l->data);
    }
}

/* The JSON of a large ledger (a hundred milliseconds for 4,000 domains), the write and its
 * fsyncs (tens, under a loaded disk hundreds, of milliseconds) are made without the state
 * lock, from a copy of the plans: the hook's reserves and releases wait for that lock,
 * and 200 releases at once lost their answers behind it (bench-hookload.sh). Only this
 * thread writes, so saves stay in order; what changes meanwhile is dirty again and goes
 * into the next save. */
static gboolean
saveTimeout(gpointer data)
{
    vpDaemon *d = data;
    d->save_id = 0;
    if (!vpManagerDirty(d->mgr))
        return G_SOURCE_REMOVE;
    g_autofree char *path = NULL;
    g_autoptr(GPtrArray) plans = vpManagerSavePlans(d->mgr, &path);
    const vpTopology *topo = vpManagerTopology(d->mgr); /* replaced on this thread only */
    g_autoptr(GError) err = NULL;
    vpDaemonUnlock(d);
    g_autofree char *text = vpLedgerPlansToText(topo, plans);
    gboolean saved = vpLedgerFileWrite(text, path, &err);
    vpDaemonLock(d);
    if (saved) {
        if (d->save_failures)
            vpDaemonLog(G_LOG_LEVEL_INFO, "ledger saved after %u failed attempts",
                        d->save_failures);
        d->save_failures = 0;
        vpDaemonScheduleSave(d);
        return G_SOURCE_REMOVE;
    }
    vpManagerSaveFailed(d->mgr);
    guint delay = MIN(VP_SAVE_RETRY_MS << MIN(d->save_failures, 9), VP_SAVE_RETRY_MAX_MS);
    d->save_failures++;
    vpDaemonLog(G_LOG_LEVEL_WARNING, "cannot save the ledger (attempt %u, next in %u ms): %s",
                d->save_failures, delay, err->message);
    d->save_id = g_timeout_add(delay, saveTimeout, d);
    return G_SOURCE_REMOVE;
}

void
vpDaemonScheduleSave(vpDaemon *d)
{
    if (!d->save_id && vpManagerDirty(d->mgr))
        d->save_id = g_timeout_add(VP_SAVE_DELAY_MS, saveTimeout, d);
}

gboolean
vpDaemonFlush(vpDaemon *d, GError **error)
{
    if (!vpManagerDirty(d->mgr))
        return TRUE;
    return vpManagerSave(d->mgr, error);
}

/* Main loop: a reservation whose start never came holds its CPUs only until it expires,
 * not until the next full sync (which may never come while libvirt stays connected). */
static gboolean
expireTimeout(gpointer data)
{
    vpDaemon *d = data;
    g_autoptr(GPtrArray) gone = vpManagerExpire(d->mgr, d->reserve_ttl_us);
    for (guint i = 0; i < gone->len; i++)
        vpSyncReleased(d->sync, gone->pdata[i], true);
    if (gone->len)
        vpDaemonScheduleSave(d);
    return G_SOURCE_CONTINUE;
}

void
vpDaemonSetReserveTTL(vpDaemon *d, gint64 ttl_us)
{
    d->reserve_ttl_us = ttl_us;
}

/* ---- life cycle ---------------------------------------------------------------------- */

static void
resync(const char *name, gpointer data)
{
    vpDaemonResync(data, name);
}

void
vpDaemonResync(vpDaemon *d, const char *name)
{
    vpSyncQueue(d->sync, name, VP_SYNC_LATE);
}

static void
scheduleSave(gpointer data)
{
    vpDaemonScheduleSave(data);
}

/* libvirt's connection: the queue and the hotplug watcher follow it. */
static void
onConnected(vpVirConn *vc, gpointer data)
{
    vpDaemon *d = data;
    vpSyncAll(d->sync);
    vpHotplugConnected(d->hotplug, vpVirConnGet(vc));
}

static void
onDisconnected(vpVirConn *vc, const char *reason, gpointer data)
{
    vpDaemon *d = data;
    vpSyncDisconnected(d->sync);
    vpHotplugConnected(d->hotplug, NULL);
}

static void
onLifecycle(vpVirConn *vc, virDomainPtr dom, int event, int detail, gpointer data)
{
    vpDaemon *d = data;
    vpSyncLifecycle(d->sync, dom, event);
}

static void
onPinsChanged(vpVirConn *vc, virDomainPtr dom, virTypedParameterPtr params, int nparams,
              gpointer data)
{
    vpDaemon *d = data;
    vpSyncPinsChanged(d->sync, dom, params, nparams);
}

static const vpVirConnCallbacks connCallbacks = {
    .connected = onConnected,
    .disconnected = onDisconnected,
    .lifecycle = onLifecycle,
    .pins_changed = onPinsChanged,
};

/* The reserve waits for its moves at most this share of the hook's own bound, so that the
 * hook still has its answer when the moves do not come. */
static guint
admissionWaitMs(const vpConfig *cfg)
{
    return (guint)cfg->hook_timeout_ms / 2;
}

static void
admissionRun(vpDaemon *d, gpointer job)
{
    vpAdmissionJobRun(job);
}

static void
admissionHandoff(gpointer job, gpointer data)
{
    vpDaemonHandoff(data, admissionRun, job, vpAdmissionJobDrop);
}

static vpMetricsSources
metricsSources(vpDaemon *d)
{
    return (vpMetricsSources){
        .cfg = d->cfg,
        .mgr = d->mgr,
        .balance = d->balance,
        .cookies = d->cookies,
        .connected = vpDaemonConnected(d),
        .save_failures = d->save_failures,
        .refusals = d->refusals,
        .capacity = d->capacity,
        .lock = &d->lock,
        .admission_moves = vpAdmissionMoves(d->admission),
        .admission_failures = vpAdmissionFailures(d->admission),
        .config_error = d->config_error != NULL,
        .reported = vpReportCount(d->report),
    };
}

char *
vpDaemonMetricsText(vpDaemon *d)
{
    vpMetricsSources src = metricsSources(d);
    vpServerGetStats(d->srv, &src.socket);
    return vpMetricsCollect(&src);
}

static void
exportMetrics(gpointer data)
{
    vpDaemon *d = data;
    vpMetricsSources src = metricsSources(d);
    vpServerGetStats(d->srv, &src.socket);
    vpMetricsExport(&src, &d->metrics_warned);
}

vpDaemon *
vpDaemonNew(vpConfig *cfg, GError **error)
{
    g_autoptr(vpConfig) owned = cfg;
    vpTopology *topo = vpConfigLoadTopology(cfg, error);
    if (!topo) {
        g_prefix_error(error, "topology %s: ", cfg->topology ? cfg->topology : "host");
        return NULL;
    }
    g_autoptr(vpManager) mgr = vpManagerNew(topo, &cfg->defaults, cfg->state, error);
    if (!mgr)
        return NULL;
    g_autoptr(GBytes) key = vpAppliedKeyLoad(cfg->state, error);
    if (!key)
        return NULL;

    if (pollLock) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "a daemon already runs in this process");
        return NULL;
    }
    vpDaemon *d = g_new0(vpDaemon, 1);
    g_mutex_init(&d->lock);
    g_mutex_init(&d->handoff_lock);
    g_mutex_lock(&d->lock);
    pollLock = &d->lock;
    g_main_context_set_poll_func(NULL, pollUnlocked);
    d->handoffs = g_ptr_array_new_with_free_func((GDestroyNotify)g_source_unref);
    d->cfg = g_steal_pointer(&owned);
    d->mgr = g_steal_pointer(&mgr);
    d->applied_key = g_steal_pointer(&key);
    d->jobs = vpJobsNew(&d->lock, d->mgr);
    d->listeners = g_array_new(FALSE, FALSE, sizeof(vpListener));
    d->capacity = vpCapacityCacheNew();
    d->report = vpReportNew();
    d->reserve_ttl_us = VP_RESERVE_TTL_US;
    d->expire_id = g_timeout_add(VP_EXPIRE_PERIOD_MS, expireTimeout, d);
    d->srv = vpServerNew(d->cfg->socket, vpOpsHandle, d, error);
    if (!d->srv) {
        vpDaemonFree(d);
        return NULL;
    }
    vpVirInit();
    d->vc = vpVirConnNew(d->cfg->uri, &connCallbacks, d);
    vpVirConnSetLock(d->vc, &d->lock);
    d->act = vpActuatorNew(&d->lock, d->mgr, d->vc, d->jobs, d->applied_key);
    vpActuatorSetResyncFunc(d->act, resync, d);
    vpSyncHooks hooks = {notifyDomain, scheduleSave, d};
    d->sync = vpSyncNew(&d->lock, d->cfg, d->mgr, d->vc, d->act, d->jobs, d->report, &hooks);
    d->admission = vpAdmissionNew(&d->lock, d->mgr, d->act, admissionHandoff, d);
    vpAdmissionSetConfig(d->admission, &d->cfg->admission, admissionWaitMs(d->cfg));
    d->balance = vpBalanceNew(d->cfg, d->mgr, d->act);
    vpBalanceSetIntervalFunc(d->balance, exportMetrics, d);
    d->cookies = vpCookiesNew(&d->lock, d->cfg, d->mgr, d->vc);
    d->hotplug = vpHotplugNew(&d->lock, d->cfg, d->mgr, d->cookies, resync, d);
    return d;
}

void
vpDaemonStart(vpDaemon *d)
{
    vpVirConnStart(d->vc);
}

void
vpDaemonFree(vpDaemon *d)
{
    if (!d)
        return;
    vpBalanceFree(d->balance);
    vpCapacityCacheFree(d->capacity);
    /* Before the connection: the hotplug watcher deregisters its QEMU events on it. */
    vpHotplugFree(d->hotplug);
    vpCookiesFree(d->cookies);
    /* The server first: its connections may hold after-work pointing at d. Its thread may
     * be waiting for the state lock. */
    g_mutex_unlock(&d->lock);
    vpServerFree(d->srv);
    g_mutex_lock(&d->lock);
    g_mutex_lock(&d->handoff_lock);
    for (guint i = 0; i < d->handoffs->len; i++)
        g_source_destroy(d->handoffs->pdata[i]);
    g_ptr_array_unref(g_steal_pointer(&d->handoffs));
    g_mutex_unlock(&d->handoff_lock);
    vpAdmissionFree(d->admission);
    vpActuatorFree(d->act);
    g_clear_pointer(&d->applied_key, g_bytes_unref);
    vpVirConnFree(d->vc);
    vpSyncFree(d->sync);
    if (d->save_id)
        g_source_remove(d->save_id);
    if (d->expire_id)
        g_source_remove(d->expire_id);
    g_autoptr(GError) err = NULL;
    if (d->mgr && !vpDaemonFlush(d, &err))
        vpDaemonLog(G_LOG_LEVEL_WARNING, "cannot save the ledger: %s", err->message);
    vpManagerFree(d->mgr);
    vpJobsFree(d->jobs);
    g_array_free(d->listeners, TRUE);
    vpConfigFree(d->cfg);
    vpReportFree(d->report);
    g_free(d->config_error);
    g_main_context_set_poll_func(NULL, g_poll);
    pollLock = NULL;
    g_mutex_unlock(&d->lock);
    g_mutex_clear(&d->lock);
    g_mutex_clear(&d->handoff_lock);
    g_free(d);
}

/* Settings the running daemon is bound to: a reload keeps them and says so. */
static void
keepBound(const char *key, char **now, const char *was)
{
    if (g_strcmp0(*now, was) == 0)
        return;
    vpDaemonLog(G_LOG_LEVEL_WARNING, "reload: [daemon] %s='%s' needs a restart; keeping '%s'", key,
                *now ? *now : "host", was ? was : "host");
    g_free(*now);
    *now = g_strdup(was);
}

static gboolean
reload(vpDaemon *d, GError **error)
{
    g_autoptr(vpConfig) cfg = vpConfigLoad(d->cfg->path, error);
    if (!cfg)
        return FALSE;
    keepBound("uri", &cfg->uri, d->cfg->uri);
    keepBound("socket", &cfg->socket, d->cfg->socket);
    keepBound("state", &cfg->state, d->cfg->state);
    keepBound("topology", &cfg->topology, d->cfg->topology);
    vpTopology *topo = vpConfigLoadTopology(cfg, error);
    if (!topo) {
        g_prefix_error(error, "topology %s: ", cfg->topology ? cfg->topology : "host");
        return FALSE;
    }
    g_autoptr(GPtrArray) outside = NULL;
    if (!vpManagerReload(d->mgr, topo, &cfg->defaults, &outside, error))
        return FALSE;
    vpConfigFree(d->cfg);
    d->cfg = g_steal_pointer(&cfg);
    vpBalanceReload(d->balance, d->cfg);
    vpCookiesSetConfig(d->cookies, d->cfg);
    vpHotplugSetConfig(d->hotplug, d->cfg);
    vpAdmissionSetConfig(d->admission, &d->cfg->admission, admissionWaitMs(d->cfg));
    vpSyncSetConfig(d->sync, d->cfg);
    d->metrics_warned = FALSE;
    g_autofree char *usable = vpCpuListFormat(vpTopologyUsableSet(vpManagerTopology(d->mgr)));
    vpDaemonLog(G_LOG_LEVEL_INFO,
                "configuration %s reloaded: usable CPUs %s; %u domains hold CPUs no longer usable",
                d->cfg->path ? d->cfg->path : "(built-in defaults)", usable, outside->len);
    /* Which domains are managed may have changed, and who was left out may now fit. */
    vpSyncAll(d->sync);
    return TRUE;
}

gboolean
vpDaemonReload(vpDaemon *d, GError **error)
{
    g_clear_pointer(&d->config_error, g_free);
    if (reload(d, error))
        return TRUE;
    d->config_error = g_strdup((*error)->message);
    return FALSE;
}

const char *
vpDaemonConfigError(const vpDaemon *d)
{
    return d->config_error;
}

void
vpDaemonOnDomain(vpDaemon *d, vpDaemonDomainFunc func, gpointer data)
{
    vpListener l = {func, data};
    g_array_append_val(d->listeners, l);
}

const vpConfig *
vpDaemonConfig(const vpDaemon *d)
{
    return d->cfg;
}

vpManager *
vpDaemonManager(vpDaemon *d)
{
    return d->mgr;
}

gboolean
vpDaemonBusy(const vpDaemon *d)
{
    return d->save_id || vpSyncBusy(d->sync) || vpCookiesBusy(d->cookies);
}

gboolean
vpDaemonConnected(const vpDaemon *d)
{
    return vpVirConnGet(d->vc) != NULL;
}

virConnectPtr
vpDaemonLibvirt(const vpDaemon *d)
{
    return vpVirConnGet(d->vc);
}

vpBalance *
vpDaemonBalance(vpDaemon *d)
{
    return d->balance;
}

vpCookies *
vpDaemonCookies(vpDaemon *d)
{
    return d->cookies;
}

vpActuator *
vpDaemonActuator(vpDaemon *d)
{
    return d->act;
}

vpAdmission *
vpDaemonAdmission(vpDaemon *d)
{
    return d->admission;
}
