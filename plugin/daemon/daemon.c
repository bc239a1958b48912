/*
 * vcpuplaced wiring. The hook's requests are answered on the socket thread from the
 * manager alone, under the state lock (daemon.h); anything that needs libvirt is handed to
 * the main loop, queued by domain name and run from an idle source, one domain per
 * dispatch, after the reply is out (libvirt may be blocked on the hook that asked). The
 * same queue serves lifecycle events and reconnects: every trigger becomes "sync this
 * domain", and sync decides from libvirt's current truth, so duplicate or late triggers
 * are harmless. Operator commands are answered on the main loop, which owns what they read.
 */
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/balance.h"
#include "daemon/cookies.h"
#include "daemon/hotplug.h"
#include "proto/proto.h"
#include "daemon/server.h"
#include "host/hwtopo.h"
#include "libvirt/connection.h"
#include "libvirt/domxml.h"
#include "libvirt/pinning.h"
#include "libvirt/threads.h"

#include <libvirt/virterror.h>
#include <string.h>

/* A reservation whose domain libvirt does not run yet may still be starting. */
#define VP_RESERVE_GRACE_US (120 * G_USEC_PER_SEC)
/* Failed pinning is retried this often, then reported as failed. */
static const guint retryDelayMs[] = {200, 1000, 3000};
/* Coalesces ledger writes; libvirt's truth covers what a crash in this window loses. */
#define VP_SAVE_DELAY_MS 20
/* A domain the hook reserved is pinned once the hook says "started": pinning takes the
 * domain's job, which libvirt holds while its hook waits for us. A lifecycle event for it
 * only arms this fallback, for a "started" notification that never came. */
#define VP_STARTED_FALLBACK_MS 2000

/* Why a domain is to be synced. */
#define VP_SYNC_HOOK 1u /* the hook's "started" (its reply is out) */
#define VP_SYNC_LATE 2u /* a retry or the fallback: whatever blocked has had its time */

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
    GHashTable *pending;  /* name -> VP_SYNC_* flags */
    GHashTable *attempts; /* name -> failed apply attempts so far */
    GHashTable *timers;   /* name -> armed retry timer */
    gboolean full_sync;
    guint work_id;
    guint save_id;
    GArray *listeners;
    vpBalance *balance;
    vpCookies *cookies;
    vpHotplug *hotplug;
    GPtrArray *handoffs; /* GSource: the socket thread's work waiting for the main loop */
};

static void kick(vpDaemon *d);
static void cancelSync(vpDaemon *d, const char *name);

static void logMsg(GLogLevelFlags level, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void
logMsg(GLogLevelFlags level, const char *fmt, ...)
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
    g_ptr_array_remove_fast(h->d->handoffs, g_main_current_source());
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

/* Socket thread, state lock held: func runs on the main loop, or destroy when the daemon
 * goes first. */
static void
handoff(vpDaemon *d, void (*func)(vpDaemon *d, gpointer data), gpointer data,
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
    g_ptr_array_add(d->handoffs, src);
    g_source_attach(src, NULL);
}

static void
notify(vpDaemon *d, const char *name, virDomainPtr dom, const vpPlan *plan)
{
    for (guint i = 0; i < d->listeners->len; i++) {
        vpListener *l = &g_array_index(d->listeners, vpListener, i);
        l->func(d, name, dom, plan, l->data);
    }
}

static gboolean
saveTimeout(gpointer data)
{
    vpDaemon *d = data;
    d->save_id = 0;
    g_autoptr(GError) err = NULL;
    if (!vpDaemonFlush(d, &err))
        logMsg(G_LOG_LEVEL_WARNING, "cannot save the ledger: %s", err->message);
    return G_SOURCE_REMOVE;
}

static void
scheduleSave(vpDaemon *d)
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

/* Any thread, state lock held. */
static gboolean
releaseRecord(vpDaemon *d, const char *name)
{
    if (!vpManagerRelease(d->mgr, name))
        return FALSE;
    vpLogDomain(G_LOG_LEVEL_INFO, name, "released");
    return TRUE;
}

/* Main loop: what the release of a record means for the rest of the daemon. */
static void
released(vpDaemon *d, const char *name, gboolean known)
{
    if (known)
        notify(d, name, NULL, NULL);
    g_hash_table_remove(d->attempts, name);
    cancelSync(d, name);
}

static void
release(vpDaemon *d, const char *name)
{
    released(d, name, releaseRecord(d, name));
}

/* ---- libvirt work ---------------------------------------------------------------- */

static void
queueSync(vpDaemon *d, const char *name, guint flags)
{
    gpointer old;
    if (g_hash_table_lookup_extended(d->pending, name, NULL, &old))
        flags |= GPOINTER_TO_UINT(old);
    g_hash_table_insert(d->pending, g_strdup(name), GUINT_TO_POINTER(flags));
    kick(d);
}

typedef struct {
    vpDaemon *d;
    char *name;
} vpRetry;

static gboolean
retryTimeout(gpointer data)
{
    vpRetry *r = data;
    g_hash_table_remove(r->d->timers, r->name);
    queueSync(r->d, r->name, VP_SYNC_LATE);
    return G_SOURCE_REMOVE;
}

static void
retryFree(gpointer data)
{
    vpRetry *r = data;
    g_free(r->name);
    g_free(r);
}

/* A later sync of name (one timer per domain at most). */
static void
scheduleSync(vpDaemon *d, const char *name, guint delay_ms)
{
    if (g_hash_table_contains(d->timers, name))
        return;
    vpRetry *r = g_new0(vpRetry, 1);
    r->d = d;
    r->name = g_strdup(name);
    guint id = g_timeout_add_full(G_PRIORITY_DEFAULT, delay_ms, retryTimeout, r, retryFree);
    g_hash_table_insert(d->timers, g_strdup(name), GUINT_TO_POINTER(id));
}

static void
cancelSync(vpDaemon *d, const char *name)
{
    gpointer id;
    if (g_hash_table_lookup_extended(d->timers, name, NULL, &id)) {
        g_source_remove(GPOINTER_TO_UINT(id));
        g_hash_table_remove(d->timers, name);
    }
}

/* Returns TRUE when another attempt was scheduled. */
static gboolean
scheduleRetry(vpDaemon *d, const char *name)
{
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(d->attempts, name));
    if (n >= G_N_ELEMENTS(retryDelayMs))
        return FALSE;
    g_hash_table_insert(d->attempts, g_strdup(name), GUINT_TO_POINTER(n + 1));
    scheduleSync(d, name, retryDelayMs[n]);
    return TRUE;
}

/* State lock let go. Without the record a restore or an incoming migration keeps these
 * pins as the domain's own: worth a line, not a failure. */
static void
recordApplied(virDomainPtr dom, const vpPlan *plan, unsigned flags)
{
    g_autoptr(GError) err = NULL;
    if (!vpVirAppliedRecord(dom, plan, flags, &err))
        g_log_structured(
            G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "VCPUPLACE_DOMAIN", virDomainGetName(dom), "MESSAGE",
            "%s; a restore or an incoming migration will keep these pins as its own", err->message);
}

static void
applyPlan(vpDaemon *d, virDomainPtr dom, const char *name)
{
    unsigned flags = vpVirConnLiveFlags(d->vc);
    const vpDomRecord *rec = vpManagerRecord(d->mgr, name);
    const vpPlan *recorded = vpManagerPlan(d->mgr, name);
    if (!rec || !recorded)
        return;
    guint64 serial = rec->serial;
    g_autoptr(vpPlan) plan = vpPlanCopy(recorded);
    g_autoptr(GError) err = NULL;
    g_autofree char *problem = NULL;
    vpDaemonUnlock(d);
    if (!vpVirPinsApply(dom, plan, flags, &err)) {
        problem = g_strdup(err->message);
    } else {
        g_autoptr(vpLivePins) live = vpVirPinsRead(dom, flags, &err);
        problem = live ? vpLivePinsDiff(live, plan) : g_strdup(err->message);
    }
    if (!problem)
        recordApplied(dom, plan, flags);
    vpDaemonLock(d);
    rec = vpManagerRecord(d->mgr, name);
    if (!rec || rec->serial != serial)
        return; /* the hook released it meanwhile; its next start is synced anew */
    if (problem && !vpVirConnCheck(d->vc) && scheduleRetry(d, name)) {
        vpLogDomain(G_LOG_LEVEL_INFO, name, "pinning not done yet (%s); retrying", problem);
        return;
    }
    if (problem && vpVirConnGet(d->vc) == NULL)
        return; /* the reconnect's full sync takes over */
    vpManagerApplied(d->mgr, name, problem);
    g_hash_table_remove(d->attempts, name);
    cancelSync(d, name);
    if (!problem)
        notify(d, name, dom, plan);
}

/* The XML that says what the domain asks for: the persistent definition when there is one,
 * since live pins applied by vcpuplace show up as <cputune> in the live XML. */
static char *
requestXML(virDomainPtr dom, GError **error)
{
    if (virDomainIsPersistent(dom) == 1) {
        char *xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
        if (xml)
            return xml;
    }
    return vpVirDomainXML(dom, error);
}

static void
syncDomain(vpDaemon *d, virDomainPtr dom, guint why)
{
    const char *name = virDomainGetName(dom);
    vpDaemonUnlock(d);
    int active = virDomainIsActive(dom);
    vpDaemonLock(d);
    if (active < 0) {
        virErrorPtr e = virGetLastError();
        if (e && e->code == VIR_ERR_NO_DOMAIN)
            active = 0;
        else if (vpVirConnCheck(d->vc))
            return;
    }
    if (active == 0) {
        const vpDomRecord *rec = vpManagerRecord(d->mgr, name);
        /* A reservation is the start under way; the hook's release frees a failed one. */
        if (rec && rec->state != VP_DOM_RESERVED)
            release(d, name);
        return;
    }

    unsigned flags = vpVirConnLiveFlags(d->vc);
    g_autoptr(GError) err = NULL;
    vpDaemonUnlock(d);
    g_autofree char *xml = requestXML(dom, &err);
    g_autoptr(vpLivePins) live = xml ? vpVirPinsRead(dom, flags, &err) : NULL;
    vpDaemonLock(d);
    if (!live) {
        if (!vpVirConnCheck(d->vc) && !scheduleRetry(d, name))
            logMsg(G_LOG_LEVEL_WARNING, "domain %s: %s", name, err->message);
        return;
    }
    const vpDomRecord *rec = vpManagerRecord(d->mgr, name);
    gboolean hooked = rec && rec->state == VP_DOM_RESERVED;
    int before = rec ? (int)rec->state : -1;
    vpSyncAction action = vpManagerSync(d->mgr, name, xml, strlen(xml), live, &err);
    if (err)
        logMsg(G_LOG_LEVEL_WARNING, "domain %s: %s", name, err->message);
    if (action != VP_SYNC_APPLY) {
        /* Found live as planned (restart, adoption) or its own pins respected: listeners
         * learn of it as of a domain just pinned. */
        rec = vpManagerRecord(d->mgr, name);
        if (rec && (int)rec->state != before &&
            (rec->state == VP_DOM_APPLIED || rec->state == VP_DOM_PINNED))
            notify(d, name, dom, vpManagerPlan(d->mgr, name));
        return;
    }
    if (hooked && !(why & (VP_SYNC_HOOK | VP_SYNC_LATE))) {
        scheduleSync(d, name, VP_STARTED_FALLBACK_MS);
        return;
    }
    applyPlan(d, dom, name);
}

static void
syncName(vpDaemon *d, virConnectPtr conn, const char *name, guint why)
{
    /* A reservation is a start under way: libvirt keeps the domain locked until its hooks
     * are done, so any call for it now waits on that start, and the socket waits with it,
     * while the start waits on the socket for its hook (twenty starts at once stalled for
     * the hooks' whole timeout). An event only arms the fallback for a lost "started". */
    const vpDomRecord *rec = vpManagerRecord(d->mgr, name);
    if (rec && rec->state == VP_DOM_RESERVED && !(why & (VP_SYNC_HOOK | VP_SYNC_LATE))) {
        scheduleSync(d, name, VP_STARTED_FALLBACK_MS);
        return;
    }
    vpDaemonUnlock(d);
    virDomainPtr dom = virDomainLookupByName(conn, name);
    vpDaemonLock(d);
    if (!dom) {
        virErrorPtr e = virGetLastError();
        rec = vpManagerRecord(d->mgr, name);
        if (e && e->code == VIR_ERR_NO_DOMAIN) {
            if (rec && rec->state != VP_DOM_RESERVED)
                release(d, name);
        } else if (!vpVirConnCheck(d->vc)) {
            logMsg(G_LOG_LEVEL_WARNING, "domain %s: lookup failed: %s", name,
                   e && e->message ? e->message : "unknown error");
        }
        return;
    }
    syncDomain(d, dom, why);
    virDomainFree(dom);
}

static void
fullSync(vpDaemon *d, virConnectPtr conn)
{
    virDomainPtr *doms = NULL;
    vpDaemonUnlock(d);
    int n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
    vpDaemonLock(d);
    if (n < 0) {
        if (!vpVirConnCheck(d->vc)) {
            virErrorPtr e = virGetLastError();
            logMsg(G_LOG_LEVEL_WARNING, "cannot list running domains: %s",
                   e && e->message ? e->message : "unknown error");
            d->full_sync = TRUE;
        }
        return;
    }
    /* Domains the configuration leaves out are not there, as far as vcpuplace goes. */
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (vpConfigManages(d->cfg, virDomainGetName(doms[i])))
            doms[kept++] = doms[i];
        else
            virDomainFree(doms[i]);
    }
    n = kept;
    g_autoptr(GHashTable) running = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int i = 0; i < n; i++)
        g_hash_table_add(running, g_strdup(virDomainGetName(doms[i])));

    /* Release first: what the gone held is free for the domains synced below, whose live
     * pins may have moved onto it while vcpuplace was not looking. */
    g_autoptr(GPtrArray) before = vpManagerNames(d->mgr);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < before->len; i++)
        g_ptr_array_add(names, g_strdup(before->pdata[i]));
    guint released = vpManagerReleaseGone(d->mgr, running, VP_RESERVE_GRACE_US);
    for (guint i = 0; i < names->len && released; i++) {
        if (!vpManagerRecord(d->mgr, names->pdata[i]))
            notify(d, names->pdata[i], NULL, NULL);
    }

    /* Claims before newcomers: first what vcpuplace recorded, then domains whose live pins
     * are all single CPUs (their own <cputune>, or placed before the ledger was lost),
     * then those to be placed now, so that no newcomer takes a CPU someone runs on. */
    g_autofree int *pass = g_new0(int, MAX(n, 1));
    for (int i = 0; i < n; i++) {
        if (vpManagerRecord(d->mgr, virDomainGetName(doms[i])))
            continue;
        unsigned flags = vpVirConnLiveFlags(d->vc);
        vpDaemonUnlock(d);
        g_autoptr(vpLivePins) live = vpVirPinsRead(doms[i], flags, NULL);
        vpDaemonLock(d);
        pass[i] = live && vpLivePinsAllSingle(live) ? 1 : 2;
    }
    for (int p = 0; p < 3; p++) {
        for (int i = 0; i < n; i++) {
            if (pass[i] != p)
                continue;
            g_hash_table_remove(d->pending, virDomainGetName(doms[i]));
            syncDomain(d, doms[i], 0);
        }
    }
    for (int i = 0; i < n; i++)
        virDomainFree(doms[i]);
    g_free(doms);
    logMsg(G_LOG_LEVEL_INFO, "synchronised with libvirt: %d running, %u released, %u recorded", n,
           released, vpLedgerNDomains(vpManagerLedger(d->mgr)));
}

static gboolean
workIdle(gpointer data)
{
    vpDaemon *d = data;
    virConnectPtr conn = vpVirConnGet(d->vc);
    if (!conn) {
        /* Everything is re-read on reconnect. */
        d->work_id = 0;
        return G_SOURCE_REMOVE;
    }
    if (d->full_sync) {
        d->full_sync = FALSE;
        fullSync(d, conn);
    } else {
        GHashTableIter it;
        gpointer key, why;
        g_hash_table_iter_init(&it, d->pending);
        if (g_hash_table_iter_next(&it, &key, &why)) {
            g_autofree char *name = g_strdup(key);
            guint flags = GPOINTER_TO_UINT(why);
            g_hash_table_iter_remove(&it);
            syncName(d, conn, name, flags);
        }
    }
    scheduleSave(d);
    if (d->full_sync || g_hash_table_size(d->pending))
        return G_SOURCE_CONTINUE;
    d->work_id = 0;
    return G_SOURCE_REMOVE;
}

static void
kick(vpDaemon *d)
{
    if (!d->work_id && vpVirConnGet(d->vc) && (d->full_sync || g_hash_table_size(d->pending)))
        d->work_id = g_idle_add(workIdle, d);
}

static void
onConnected(vpVirConn *vc, gpointer data)
{
    vpDaemon *d = data;
    d->full_sync = TRUE;
    kick(d);
    vpHotplugConnected(d->hotplug, vpVirConnGet(vc));
}

static void
onDisconnected(vpVirConn *vc, const char *reason, gpointer data)
{
    vpDaemon *d = data;
    if (d->work_id) {
        g_source_remove(d->work_id);
        d->work_id = 0;
    }
    vpHotplugConnected(d->hotplug, NULL);
}

static void
onLifecycle(vpVirConn *vc, virDomainPtr dom, int event, int detail, gpointer data)
{
    vpDaemon *d = data;
    switch (event) {
    case VIR_DOMAIN_EVENT_STARTED:
    case VIR_DOMAIN_EVENT_STOPPED:
        if (vpConfigManages(d->cfg, virDomainGetName(dom)))
            queueSync(d, virDomainGetName(dom), 0);
        break;
    default:
        break;
    }
}

/* Whether every pin the tunable event names is the plan's: vcpuplace's own pinning comes
 * back as this event too, and needs no sync. */
static gboolean
pinsPlanned(const vpPlan *plan, virTypedParameterPtr params, int nparams)
{
    /* VIR_DOMAIN_TUNABLE_CPU_VCPUPIN without its %u */
    static const char vcpupin[] = "cputune.vcpupin";
    for (int i = 0; i < nparams; i++) {
        const char *field = params[i].field;
        gboolean vcpu = g_str_has_prefix(field, vcpupin);
        gboolean emulator = strcmp(field, VIR_DOMAIN_TUNABLE_CPU_EMULATORPIN) == 0;
        if (!vcpu && !emulator)
            continue;
        if (params[i].type != VIR_TYPED_PARAM_STRING)
            return FALSE;
        g_autoptr(vpBitmap) set = vpCpuListParse(field, params[i].value.s, NULL);
        if (!set)
            return FALSE;
        if (emulator) {
            if (!plan->emulator || !hwloc_bitmap_isequal(set, plan->emulator))
                return FALSE;
            continue;
        }
        guint64 v;
        if (!g_ascii_string_to_unsigned(field + strlen(vcpupin), 10, 0, plan->nvcpus - 1, &v,
                                        NULL) ||
            plan->vcpu_pu[v] < 0 || hwloc_bitmap_weight(set) != 1 ||
            !hwloc_bitmap_isset(set, plan->vcpu_pu[v]))
            return FALSE;
    }
    return TRUE;
}

/* virsh vcpupin and friends: a sync reads the live pins and adopts an operator's move onto
 * free CPUs, or puts back one onto a CPU another holds. A start under way is left to its
 * hook. */
static void
onPinsChanged(vpVirConn *vc, virDomainPtr dom, virTypedParameterPtr params, int nparams,
              gpointer data)
{
    vpDaemon *d = data;
    const char *name = virDomainGetName(dom);
    const vpDomRecord *rec = vpManagerRecord(d->mgr, name);
    const vpPlan *plan = vpManagerPlan(d->mgr, name);
    if (rec && rec->state != VP_DOM_RESERVED && rec->state != VP_DOM_PINNED &&
        !(plan && pinsPlanned(plan, params, nparams)))
        queueSync(d, name, VP_SYNC_LATE);
}

/* ---- socket operations ------------------------------------------------------------- */

/* What the main loop does once the hook has its reply. */
typedef struct {
    vpDaemon *d;
    char *name;         /* NULL: only save */
    gboolean sync;      /* started, reconnect: sync name */
    gboolean reconnect; /* libvirtd is back: try its socket now */
    gboolean released;  /* release: a record was freed */
} vpAfter;

static void
afterMain(vpDaemon *d, gpointer data)
{
    vpAfter *a = data;
    if (a->reconnect)
        vpVirConnPoke(d->vc);
    if (a->name && a->sync)
        queueSync(d, a->name, VP_SYNC_HOOK);
    else if (a->name)
        released(d, a->name, a->released);
    scheduleSave(d);
}

static void
afterFree(gpointer data)
{
    vpAfter *a = data;
    g_free(a->name);
    g_free(a);
}

/* Socket thread, once the reply is out. */
static void
afterRun(gpointer data)
{
    vpAfter *a = data;
    vpAfter *copy = g_memdup2(a, sizeof(*a));
    copy->name = g_strdup(a->name);
    g_mutex_lock(&a->d->lock);
    handoff(a->d, afterMain, copy, afterFree);
    g_mutex_unlock(&a->d->lock);
}

static vpAfter *
setAfter(vpServerAfter *after, vpDaemon *d, const char *name)
{
    vpAfter *a = g_new0(vpAfter, 1);
    a->d = d;
    a->name = g_strdup(name);
    after->func = afterRun;
    after->data = a;
    after->destroy = afterFree;
    return a;
}

static JsonNode *
replyFromError(const GError *err)
{
    gboolean refused =
        err->domain == VP_ERROR && (err->code == VP_ERROR_REFUSED || err->code == VP_ERROR_INVALID);
    return vpProtoReplyError(err->message, refused);
}

/* Domain names come from libvirt's hook arguments and are echoed into logs and JSON only;
 * still, one without printable characters is nobody's domain. */
static const char *
getName(JsonObject *req, GError **error)
{
    const char *name = vpProtoGetString(req, "name", TRUE, error);
    if (!name)
        return NULL;
    if (!*name || strlen(name) > 1024 || !g_utf8_validate(name, -1, NULL)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "member 'name' is not a domain name");
        return NULL;
    }
    return name;
}

/* The configuration leaves this domain out: nothing to do, and the start goes on. */
static JsonNode *
ignored(void)
{
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_boolean_member(o, "ignored", TRUE);
    return reply;
}

/* The name and domain XML of a hook request. FALSE with *error, or with *reply set when
 * the configuration leaves the domain out. */
static gboolean
getDomainXML(vpDaemon *d, JsonObject *req, const char **name, const char **xml, JsonNode **reply,
             GError **error)
{
    *name = getName(req, error);
    *xml = *name ? vpProtoGetString(req, "xml", TRUE, error) : NULL;
    if (!*xml)
        return FALSE;
    if (!vpConfigManages(d->cfg, *name)) {
        *reply = ignored();
        return FALSE;
    }
    if (!vpDomXMLIsQemu(*xml, strlen(*xml))) {
        vpLogDomain(G_LOG_LEVEL_INFO, *name, "not a QEMU domain: left alone");
        *reply = ignored();
        return FALSE;
    }
    return TRUE;
}

static JsonNode *
opReserve(vpDaemon *d, JsonObject *req, vpServerAfter *after, GError **error)
{
    const char *name, *xml;
    JsonNode *reply = NULL;
    if (!getDomainXML(d, req, &name, &xml, &reply, error))
        return reply;
    const vpPlan *plan = vpManagerReserve(d->mgr, name, xml, strlen(xml), error);
    setAfter(after, d, NULL);
    if (!plan) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "start refused: %s", (*error)->message);
        return NULL;
    }
    vpLogDomain(G_LOG_LEVEL_INFO, name, "reserved (%s)%s%s", vpHowName(plan->how),
                plan->degraded ? ", degraded: " : "", plan->degraded ? plan->degraded_reason : "");
    JsonObject *o;
    reply = vpProtoReplyOk(&o);
    json_object_set_member(o, "plan", vpPlanToJson(plan, vpManagerTopology(d->mgr)));
    return reply;
}

/* restore begin, migrate begin: the XML the domain comes with, without the pins vcpuplace
 * applied where it ran before; the reserve that follows places it anew. */
static JsonNode *
opRewrite(vpDaemon *d, JsonObject *req, GError **error)
{
    const char *name, *xml;
    JsonNode *reply = NULL;
    if (!getDomainXML(d, req, &name, &xml, &reply, error))
        return reply;
    g_autofree char *out = vpDomXMLStripApplied(xml, strlen(xml), error);
    if (!out && *error)
        return NULL;
    JsonObject *o;
    reply = vpProtoReplyOk(&o);
    if (out) {
        vpLogDomain(G_LOG_LEVEL_INFO, name,
                    "the pins vcpuplace applied where it ran before are taken out of its XML; "
                    "it is placed anew");
        json_object_set_string_member(o, "xml", out);
    }
    return reply;
}

static JsonNode *
opNotify(vpDaemon *d, JsonObject *req, vpServerAfter *after, gboolean sync, GError **error)
{
    const char *name = getName(req, error);
    if (!name)
        return NULL;
    if (!vpConfigManages(d->cfg, name))
        return ignored();
    vpAfter *a = setAfter(after, d, name);
    if (sync) {
        a->sync = TRUE;
        a->reconnect = strcmp(json_object_get_string_member(req, "op"), "reconnect") == 0;
    } else {
        a->released = releaseRecord(d, name);
    }
    return vpProtoReplyOk(NULL);
}

/* QEMU's pid and each vCPU's thread id, where they can be found (qemu:///system): what
 * /proc/PID/task/TID shows is then one look away. */
static void
addThreads(vpDaemon *d, JsonArray *doms)
{
    const char *rundir = vpConfigQemuRunDir(d->cfg);
    if (!rundir)
        return;
    for (guint i = 0; i < json_array_get_length(doms); i++) {
        JsonObject *dom = json_array_get_object_element(doms, i);
        const char *state = json_object_get_string_member(dom, "state");
        if (!json_object_has_member(dom, "vcpus") || g_strcmp0(state, "reserved") == 0)
            continue;
        g_autoptr(vpVcpuThreads) t =
            vpVcpuThreadsFind(rundir, "/proc", json_object_get_string_member(dom, "name"), NULL);
        if (!t)
            continue;
        json_object_set_int_member(dom, "pid", t->pid);
        JsonArray *vcpus = json_object_get_array_member(dom, "vcpus");
        for (guint v = 0; v < json_array_get_length(vcpus) && v < t->nvcpus; v++) {
            if (t->tids[v])
                json_object_set_int_member(json_array_get_object_element(vcpus, v), "tid",
                                           t->tids[v]);
        }
    }
}

static JsonNode *
opStatus(vpDaemon *d, JsonObject *req, GError **error)
{
    g_autoptr(GError) err = NULL;
    const char *name = vpProtoGetString(req, "name", FALSE, &err);
    if (err) {
        g_propagate_error(error, g_steal_pointer(&err));
        return NULL;
    }
    if (name && !vpManagerRecord(d->mgr, name)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "domain '%s' is not managed by vcpuplaced",
                    name);
        return NULL;
    }
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_string_member(o, "uri", d->cfg->uri);
    json_object_set_boolean_member(o, "connected", vpDaemonConnected(d));
    json_object_set_string_member(o, "topology", vpTopologyGetSource(vpManagerTopology(d->mgr)));
    JsonNode *doms = vpManagerStatusJson(d->mgr, name);
    addThreads(d, json_node_get_array(doms));
    vpCookiesAddStatus(d->cookies, o, json_node_get_array(doms));
    json_object_set_member(o, "hotplug", vpHotplugSummaryJson(d->hotplug));
    json_object_set_member(o, "domains", doms);
    return reply;
}

static JsonNode *
opPlan(vpDaemon *d, JsonObject *req, GError **error)
{
    const char *xml = vpProtoGetString(req, "xml", TRUE, error);
    if (!xml)
        return NULL;
    g_autoptr(vpPlan) plan = vpManagerDryRun(d->mgr, xml, strlen(xml), error);
    if (!plan)
        return NULL;
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_member(o, "plan", vpPlanToJson(plan, vpManagerTopology(d->mgr)));
    return reply;
}

static void
setCpuList(JsonObject *o, const char *member, hwloc_const_bitmap_t set)
{
    if (!set) {
        json_object_set_null_member(o, member);
        return;
    }
    g_autofree char *list = vpCpuListFormat(set);
    json_object_set_string_member(o, member, list);
}

static JsonNode *
opTopology(vpDaemon *d)
{
    const vpTopology *topo = vpManagerTopology(d->mgr);
    const vpLedger *ledger = vpManagerLedger(d->mgr);
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_string_member(o, "source", vpTopologyGetSource(topo));
    setCpuList(o, "host_cpus", d->cfg->host_cpus);
    setCpuList(o, "housekeeping_cpus", d->cfg->housekeeping);
    json_object_set_member(o, "ledger", vpLedgerToJson(ledger));
    JsonArray *owners = json_array_new();
    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++) {
        vpOwner own = vpLedgerOwner(ledger, pu);
        if (!own.domain)
            continue;
        JsonObject *e = json_object_new();
        json_object_set_int_member(e, "cpu", vpTopologyPU(topo, pu)->os);
        json_object_set_string_member(e, "domain", own.domain);
        json_object_set_string_member(e, "kind", vpOwnKindName(own.kind));
        if (own.kind == VP_OWN_VCPU)
            json_object_set_int_member(e, "vcpu", own.vcpu);
        json_array_add_object_element(owners, e);
    }
    json_object_set_array_member(o, "owners", owners);
    return reply;
}

static gboolean
hookOp(const char *op)
{
    return strcmp(op, "reserve") == 0 || strcmp(op, "started") == 0 ||
           strcmp(op, "reconnect") == 0 || strcmp(op, "release") == 0 || strcmp(op, "rewrite") == 0;
}

static gboolean
operatorOp(const char *op)
{
    return strcmp(op, "status") == 0 || strcmp(op, "plan") == 0 || strcmp(op, "topology") == 0 ||
           vpBalanceHandles(op);
}

/* Socket thread, state lock held. */
static JsonNode *
handleHook(vpDaemon *d, const char *op, JsonObject *req, vpServerAfter *after, GError **error)
{
    if (strcmp(op, "reserve") == 0)
        return opReserve(d, req, after, error);
    if (strcmp(op, "rewrite") == 0)
        return opRewrite(d, req, error);
    return opNotify(d, req, after, strcmp(op, "release") != 0, error);
}

/* Main loop. */
static JsonNode *
handleOperator(vpDaemon *d, const char *op, JsonObject *req, GError **error)
{
    if (strcmp(op, "status") == 0)
        return opStatus(d, req, error);
    if (strcmp(op, "plan") == 0)
        return opPlan(d, req, error);
    if (strcmp(op, "topology") == 0)
        return opTopology(d);
    return vpBalanceOp(d->balance, op, req, error);
}

typedef struct {
    JsonObject *req;
    vpServerCall *call; /* NULL once answered */
} vpOperatorCall;

static void
operatorMain(vpDaemon *d, gpointer data)
{
    vpOperatorCall *oc = data;
    g_autoptr(GError) err = NULL;
    const char *op = json_object_get_string_member(oc->req, "op");
    JsonNode *reply = handleOperator(d, op, oc->req, &err);
    vpServerCallReply(g_steal_pointer(&oc->call), reply ? reply : replyFromError(err), NULL);
}

static void
operatorCallFree(gpointer data)
{
    vpOperatorCall *oc = data;
    if (oc->call)
        vpServerCallReply(oc->call, vpProtoReplyError("vcpuplaced is stopping", FALSE), NULL);
    json_object_unref(oc->req);
    g_free(oc);
}

/* Socket thread. */
static JsonNode *
handle(JsonObject *req, vpServerCall *call, vpServerAfter *after, gpointer data)
{
    vpDaemon *d = data;
    g_autoptr(GError) err = NULL;
    const char *op = vpProtoGetString(req, "op", TRUE, &err);
    if (!op)
        return vpProtoReplyError(err->message, FALSE);
    if (hookOp(op)) {
        g_mutex_lock(&d->lock);
        JsonNode *reply = handleHook(d, op, req, after, &err);
        g_mutex_unlock(&d->lock);
        return reply ? reply : replyFromError(err);
    }
    if (!operatorOp(op)) {
        g_set_error(&err, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                    "unknown operation '%s' (known: reserve, started, release, reconnect, "
                    "rewrite, status, plan, topology, top, rebalance, metrics)",
                    op);
        return replyFromError(err);
    }
    /* Operator commands read what the main loop owns (the rebalancer's figures, the
     * cookies) and may call libvirt: answered there. */
    vpOperatorCall *oc = g_new0(vpOperatorCall, 1);
    oc->req = json_object_ref(req);
    oc->call = call;
    g_mutex_lock(&d->lock);
    handoff(d, operatorMain, oc, operatorCallFree);
    g_mutex_unlock(&d->lock);
    return NULL;
}

/* ---- life cycle ------------------------------------------------------------------------ */

vpDaemon *
vpDaemonNew(vpConfig *cfg, GError **error)
{
    g_autoptr(vpConfig) owned = cfg;
    vpTopology *topo = vpHwtopoLoad(cfg->topology, cfg->host_cpus, cfg->housekeeping, error);
    if (!topo) {
        g_prefix_error(error, "topology %s: ", cfg->topology ? cfg->topology : "host");
        return NULL;
    }
    g_autoptr(vpManager) mgr = vpManagerNew(topo, &cfg->defaults, cfg->state, error);
    if (!mgr)
        return NULL;

    if (pollLock) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "a daemon already runs in this process");
        return NULL;
    }
    vpDaemon *d = g_new0(vpDaemon, 1);
    g_mutex_init(&d->lock);
    g_mutex_lock(&d->lock);
    pollLock = &d->lock;
    g_main_context_set_poll_func(NULL, pollUnlocked);
    d->handoffs = g_ptr_array_new_with_free_func((GDestroyNotify)g_source_unref);
    d->cfg = g_steal_pointer(&owned);
    d->mgr = g_steal_pointer(&mgr);
    d->pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    d->attempts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    d->timers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    d->listeners = g_array_new(FALSE, FALSE, sizeof(vpListener));
    d->srv = vpServerNew(d->cfg->socket, handle, d, error);
    if (!d->srv) {
        vpDaemonFree(d);
        return NULL;
    }
    static const vpVirConnCallbacks cb = {
        .connected = onConnected,
        .disconnected = onDisconnected,
        .lifecycle = onLifecycle,
        .pins_changed = onPinsChanged,
    };
    vpVirInit();
    d->vc = vpVirConnNew(d->cfg->uri, &cb, d);
    d->balance = vpBalanceNew(d);
    d->cookies = vpCookiesNew(d);
    d->hotplug = vpHotplugNew(d, d->cookies);
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
    /* Before the connection: the hotplug watcher deregisters its QEMU events on it. */
    vpHotplugFree(d->hotplug);
    vpCookiesFree(d->cookies);
    /* The server first: its connections may hold after-work pointing at d. Its thread may
     * be waiting for the state lock. */
    g_mutex_unlock(&d->lock);
    vpServerFree(d->srv);
    g_mutex_lock(&d->lock);
    for (guint i = 0; i < d->handoffs->len; i++)
        g_source_destroy(d->handoffs->pdata[i]);
    g_ptr_array_unref(d->handoffs);
    vpVirConnFree(d->vc);
    if (d->work_id)
        g_source_remove(d->work_id);
    if (d->save_id)
        g_source_remove(d->save_id);
    GHashTableIter it;
    gpointer id;
    g_hash_table_iter_init(&it, d->timers);
    while (g_hash_table_iter_next(&it, NULL, &id))
        g_source_remove(GPOINTER_TO_UINT(id));
    g_hash_table_destroy(d->timers);
    g_autoptr(GError) err = NULL;
    if (d->mgr && !vpDaemonFlush(d, &err))
        logMsg(G_LOG_LEVEL_WARNING, "cannot save the ledger: %s", err->message);
    vpManagerFree(d->mgr);
    g_hash_table_destroy(d->pending);
    g_hash_table_destroy(d->attempts);
    g_array_free(d->listeners, TRUE);
    vpConfigFree(d->cfg);
    g_main_context_set_poll_func(NULL, g_poll);
    pollLock = NULL;
    g_mutex_unlock(&d->lock);
    g_mutex_clear(&d->lock);
    g_free(d);
}

/* Settings the running daemon is bound to: a reload keeps them and says so. */
static void
keepBound(const char *key, char **now, const char *was)
{
    if (g_strcmp0(*now, was) == 0)
        return;
    logMsg(G_LOG_LEVEL_WARNING, "reload: [daemon] %s='%s' needs a restart; keeping '%s'", key,
           *now ? *now : "host", was ? was : "host");
    g_free(*now);
    *now = g_strdup(was);
}

gboolean
vpDaemonReload(vpDaemon *d, GError **error)
{
    g_autoptr(vpConfig) cfg = vpConfigLoad(d->cfg->path, error);
    if (!cfg)
        return FALSE;
    keepBound("uri", &cfg->uri, d->cfg->uri);
    keepBound("socket", &cfg->socket, d->cfg->socket);
    keepBound("state", &cfg->state, d->cfg->state);
    keepBound("topology", &cfg->topology, d->cfg->topology);
    vpTopology *topo = vpHwtopoLoad(cfg->topology, cfg->host_cpus, cfg->housekeeping, error);
    if (!topo) {
        g_prefix_error(error, "topology %s: ", cfg->topology ? cfg->topology : "host");
        return FALSE;
    }
    g_autoptr(GPtrArray) outside = NULL;
    if (!vpManagerReload(d->mgr, topo, &cfg->defaults, &outside, error))
        return FALSE;
    vpConfigFree(d->cfg);
    d->cfg = g_steal_pointer(&cfg);
    vpBalanceReload(d->balance);
    g_autofree char *usable = vpCpuListFormat(vpTopologyUsableSet(vpManagerTopology(d->mgr)));
    logMsg(G_LOG_LEVEL_INFO,
           "configuration %s reloaded: usable CPUs %s; %u domains hold CPUs no longer usable",
           d->cfg->path ? d->cfg->path : "(built-in defaults)", usable, outside->len);
    /* Which domains are managed may have changed, and who was left out may now fit. */
    d->full_sync = TRUE;
    kick(d);
    return TRUE;
}

static gboolean
pinUnlocked(virConnectPtr conn, const char *name, const vpPlan *plan, unsigned flags,
            GError **error)
{
    virDomainPtr dom = virDomainLookupByName(conn, name);
    if (!dom) {
        vpVirSetError(error, "domain %s", name);
        return FALSE;
    }
    gboolean ok = vpVirPinsApply(dom, plan, flags, error);
    if (ok) {
        g_autoptr(vpLivePins) live = vpVirPinsRead(dom, flags, error);
        g_autofree char *diff = live ? vpLivePinsDiff(live, plan) : NULL;
        if (diff)
            g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "domain %s: libvirt shows %s", name,
                        diff);
        ok = live && !diff;
    }
    if (ok)
        recordApplied(dom, plan, flags);
    virDomainFree(dom);
    return ok;
}

gboolean
vpDaemonPin(vpDaemon *d, const char *name, const vpPlan *want, GError **error)
{
    virConnectPtr conn = vpVirConnGet(d->vc);
    if (!conn) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "domain %s: libvirt is not connected", name);
        return FALSE;
    }
    if (!want) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "domain %s: no plan to pin", name);
        return FALSE;
    }
    g_autofree char *domain = g_strdup(name);
    g_autoptr(vpPlan) plan = vpPlanCopy(want);
    name = domain;
    unsigned flags = vpVirConnLiveFlags(d->vc);
    vpDaemonUnlock(d);
    gboolean ok = pinUnlocked(conn, name, plan, flags, error);
    vpDaemonLock(d);
    if (!ok)
        vpVirConnCheck(d->vc);
    return ok;
}

void
vpDaemonResync(vpDaemon *d, const char *name)
{
    queueSync(d, name, VP_SYNC_LATE);
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
    return d->work_id || d->save_id || g_hash_table_size(d->timers) || d->full_sync ||
           vpCookiesBusy(d->cookies) || g_hash_table_size(d->pending);
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
