/*
 * The reconcile queue (sync.h). Each sync is its domain's job (jobs.h): what it reads from
 * libvirt it reads with the state lock let go, and after each read it goes on only if the
 * domain was not released meanwhile.
 */
#include "daemon/sync.h"
#include "daemon/log.h"
#include "daemon/syncpriv.h"
#include "libvirt/domxml.h"
#include "libvirt/pinning.h"

#include <libvirt/virterror.h>
#include <string.h>

/* A reservation whose domain libvirt does not run yet may still be starting. */
#define VP_RESERVE_GRACE_US (120 * G_USEC_PER_SEC)
/* Failed pinning is retried this often, then reported as failed. */
static const guint retryDelayMs[] = {200, 1000, 3000};
/* A domain the hook reserved is pinned once the hook says "started": pinning takes the
 * domain's job, which libvirt holds while its hook waits for us. A lifecycle event for it
 * only arms this fallback, for a "started" notification that never came. */
#define VP_STARTED_FALLBACK_MS 2000

struct _vpSync {
    GMutex *lock; /* the state lock */
    const vpConfig *cfg;
    vpManager *mgr;
    vpVirConn *vc;
    vpActuator *act;
    vpJobs *jobs;
    vpReport *report;
    vpSyncHooks hooks;
    GHashTable *pending;  /* name -> VP_SYNC_* flags */
    GHashTable *attempts; /* name -> failed apply attempts so far */
    GHashTable *timers;   /* name -> armed retry timer */
    bool full_sync;
    guint work_id;
};

static void cancelSync(vpSync *s, const char *name);
static void kick(vpSync *s);

static void
notify(vpSync *s, const char *name, virDomainPtr dom, const vpPlan *plan)
{
    s->hooks.notify(name, dom, plan, s->hooks.data);
}

vpSync *
vpSyncNew(GMutex *lock, const vpConfig *cfg, vpManager *mgr, vpVirConn *vc, vpActuator *act,
          vpJobs *jobs, vpReport *report, const vpSyncHooks *hooks)
{
    vpSync *s = g_new0(vpSync, 1);
    s->lock = lock;
    s->cfg = cfg;
    s->mgr = mgr;
    s->vc = vc;
    s->act = act;
    s->jobs = jobs;
    s->report = report;
    s->hooks = *hooks;
    s->pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    s->attempts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    s->timers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return s;
}

void
vpSyncSetConfig(vpSync *s, const vpConfig *cfg)
{
    s->cfg = cfg;
}

bool
vpSyncReleaseRecord(vpSync *s, const char *name)
{
    if (!vpManagerRelease(s->mgr, name))
        return false;
    vpLogDomain(G_LOG_LEVEL_INFO, name, "released");
    return true;
}

void
vpSyncReleased(vpSync *s, const char *name, bool known)
{
    if (known)
        notify(s, name, NULL, NULL);
    g_hash_table_remove(s->attempts, name);
    cancelSync(s, name);
}

static void
release(vpSync *s, const char *name)
{
    vpSyncReleased(s, name, vpSyncReleaseRecord(s, name));
}

void
vpSyncQueue(vpSync *s, const char *name, guint flags)
{
    gpointer old;
    if (g_hash_table_lookup_extended(s->pending, name, NULL, &old))
        flags |= GPOINTER_TO_UINT(old);
    g_hash_table_insert(s->pending, g_strdup(name), GUINT_TO_POINTER(flags));
    kick(s);
}

typedef struct {
    vpSync *s;
    char *name;
} vpRetry;

static gboolean
retryTimeout(gpointer data)
{
    vpRetry *r = data;
    g_hash_table_remove(r->s->timers, r->name);
    vpSyncQueue(r->s, r->name, VP_SYNC_LATE);
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
scheduleSync(vpSync *s, const char *name, guint delay_ms)
{
    if (g_hash_table_contains(s->timers, name))
        return;
    vpRetry *r = g_new0(vpRetry, 1);
    r->s = s;
    r->name = g_strdup(name);
    guint id = g_timeout_add_full(G_PRIORITY_DEFAULT, delay_ms, retryTimeout, r, retryFree);
    g_hash_table_insert(s->timers, g_strdup(name), GUINT_TO_POINTER(id));
}

static void
cancelSync(vpSync *s, const char *name)
{
    gpointer id;
    if (g_hash_table_lookup_extended(s->timers, name, NULL, &id)) {
        g_source_remove(GPOINTER_TO_UINT(id));
        g_hash_table_remove(s->timers, name);
    }
}

/* Returns TRUE when another attempt was scheduled. */
static gboolean
scheduleRetry(vpSync *s, const char *name)
{
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(s->attempts, name));
    if (n >= G_N_ELEMENTS(retryDelayMs))
        return FALSE;
    g_hash_table_insert(s->attempts, g_strdup(name), GUINT_TO_POINTER(n + 1));
    scheduleSync(s, name, retryDelayMs[n]);
    return TRUE;
}

/* The sync's commit of a pin, made only when the domain is the one the pin was decided
 * for (the job is current): the outcome recorded, retried, or left to the reconnect. */
static void
commitPin(vpSync *s, const char *name, virDomainPtr dom, const vpPlan *plan, const GError *err)
{
    if (err && vpVirConnGet(s->vc) && scheduleRetry(s, name)) {
        vpLogDomain(G_LOG_LEVEL_INFO, name, "pinning not done yet (%s); retrying", err->message);
        return;
    }
    if (err && vpVirConnGet(s->vc) == NULL)
        return; /* the reconnect's full sync takes over */
    vpManagerApplied(s->mgr, name, err ? err->message : NULL);
    g_hash_table_remove(s->attempts, name);
    cancelSync(s, name);
    if (!err)
        notify(s, name, dom, plan);
}

static void
applyPlan(vpSync *s, vpJob *job, virDomainPtr dom)
{
    const char *name = vpJobName(job);
    const vpPlan *recorded = vpManagerPlan(s->mgr, name);
    if (!recorded)
        return;
    g_autoptr(vpPlan) plan = vpPlanCopy(recorded);
    g_autoptr(GError) err = NULL;
    vpActuatorPin(s->act, job, dom, plan, &err);
    if (vpJobCurrent(job))
        commitPin(s, name, dom, plan, err);
}

/* The XML that says what the domain asks for: the persistent definition when there is one,
 * since live pins applied by vcpuplace show up as <cputune> in the live XML. */
static char *
requestXML(virDomainPtr dom, gboolean *live, GError **error)
{
    *live = FALSE;
    if (virDomainIsPersistent(dom) == 1) {
        char *xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
        if (xml)
            return xml;
    }
    *live = TRUE;
    return vpVirDomainXML(dom, error);
}

/* Whether libvirt still runs the job's domain; one that stopped is released here. FALSE:
 * the sync is over. */
static bool
stillActive(vpSync *s, vpJob *job, virDomainPtr dom)
{
    const char *name = vpJobName(job);
    vpJobEnter(job);
    int active = virDomainIsActive(dom);
    int code = active < 0 && virGetLastError() ? virGetLastError()->code : VIR_ERR_OK;
    if (!vpJobExit(job))
        return false;
    if (active < 0) {
        if (code == VIR_ERR_NO_DOMAIN)
            active = 0;
        else if (vpVirConnCheck(s->vc))
            return false;
    }
    if (active == 0) {
        const vpDomRecord *rec = vpManagerRecord(s->mgr, name);
        vpReportForget(s->report, name);
        /* A reservation is the start under way; the hook's release frees a failed one. */
        if (rec && rec->state != VP_DOM_RESERVED)
            release(s, name);
        return false;
    }
    return true;
}

/* What the domain asks for (xml) and runs on (live) recorded: vpManagerSync's decision,
 * and the memory reconciled. */
static vpSyncAction
decide(vpSync *s, vpJob *job, virDomainPtr dom, const char *xml, gboolean is_live,
       const vpLivePins *live)
{
    const char *name = vpJobName(job);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = vpDomXMLParse(xml, strlen(xml), vpManagerDefaults(s->mgr), &err);
    if (vpReportInstead(s->report, s->mgr, s->cfg, name, req, err))
        return VP_SYNC_NOTHING;
    vpSyncAction action = VP_SYNC_NOTHING;
    if (req)
        action = vpManagerSync(s->mgr, name, req, live, &err);
    else
        vpManagerUnreadable(s->mgr, name, err->message);
    if (err)
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "%s", err->message);
    if (req && vpSyncReconcileMemory(s->mgr, job, dom, is_live ? req : NULL, req))
        action = VP_SYNC_APPLY;
    return vpJobCurrent(job) ? action : VP_SYNC_NOTHING;
}

/* The sync of one running domain, as its job: read libvirt's truth, decide, pin. */
static void
syncJob(vpSync *s, vpJob *job, virDomainPtr dom, guint why)
{
    const char *name = vpJobName(job);
    if (!stillActive(s, job, dom))
        return;
    unsigned flags = vpVirConnLiveFlags(s->vc);
    g_autoptr(GError) err = NULL;
    gboolean is_live;
    vpJobEnter(job);
    g_autofree char *xml = requestXML(dom, &is_live, &err);
    g_autoptr(vpLivePins) live = xml ? vpVirPinsRead(dom, flags, &err) : NULL;
    if (!vpJobExit(job))
        return;
    if (!live) {
        if (!vpVirConnCheck(s->vc) && !scheduleRetry(s, name))
            vpLogDomain(G_LOG_LEVEL_WARNING, name, "%s", err->message);
        return;
    }
    const vpDomRecord *rec = vpManagerRecord(s->mgr, name);
    bool hooked = rec && rec->state == VP_DOM_RESERVED;
    int before = rec ? (int)rec->state : -1;
    if (decide(s, job, dom, xml, is_live, live) != VP_SYNC_APPLY) {
        /* Found live as planned (restart, adoption) or its own pins respected: listeners
         * learn of it as of a domain just pinned. */
        rec = vpManagerRecord(s->mgr, name);
        if (rec && (int)rec->state != before &&
            (rec->state == VP_DOM_APPLIED || rec->state == VP_DOM_PINNED))
            notify(s, name, dom, vpManagerPlan(s->mgr, name));
        return;
    }
    if (hooked && !(why & (VP_SYNC_HOOK | VP_SYNC_LATE))) {
        scheduleSync(s, name, VP_STARTED_FALLBACK_MS);
        return;
    }
    applyPlan(s, job, dom);
}

/* The sync's job on name, or NULL when another job holds the domain (a reserve waiting for
 * the moves that make room): the sync comes again once that is over. */
static vpJob *
beginSync(vpSync *s, const char *name)
{
    g_autoptr(GError) err = NULL;
    vpJob *job = vpJobBegin(s->jobs, name, "sync", 0, &err);
    if (!job) {
        vpLogDomain(G_LOG_LEVEL_INFO, name, "%s: synced again later", err->message);
        scheduleSync(s, name, VP_STARTED_FALLBACK_MS);
    }
    return job;
}

static void
syncName(vpSync *s, virConnectPtr conn, const char *name, guint why)
{
    /* A reservation is a start under way: libvirt keeps the domain locked until its hooks
     * are done, so any call for it now waits on that start, and the socket waits with it,
     * while the start waits on the socket for its hook (twenty starts at once stalled for
     * the hooks' whole timeout). An event only arms the fallback for a lost "started". */
    const vpDomRecord *rec = vpManagerRecord(s->mgr, name);
    if (rec && rec->state == VP_DOM_RESERVED && !(why & (VP_SYNC_HOOK | VP_SYNC_LATE))) {
        scheduleSync(s, name, VP_STARTED_FALLBACK_MS);
        return;
    }
    g_autoptr(vpJob) job = beginSync(s, name);
    if (!job)
        return;
    vpJobEnter(job);
    virDomainPtr dom = virDomainLookupByName(conn, name);
    virErrorPtr e = dom ? NULL : virSaveLastError();
    if (vpJobExit(job) && dom) {
        syncJob(s, job, dom, why);
    } else if (vpJobCurrent(job) && e && e->code == VIR_ERR_NO_DOMAIN) {
        rec = vpManagerRecord(s->mgr, name);
        if (rec && rec->state != VP_DOM_RESERVED)
            release(s, name);
    } else if (vpJobCurrent(job) && !vpVirConnCheck(s->vc)) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "lookup failed: %s",
                    e && e->message ? e->message : "unknown error");
    }
    if (e)
        virFreeError(e);
    if (dom)
        virDomainFree(dom);
}

/* Domains the configuration leaves out are not there, as far as vcpuplace goes: dropped
 * from doms; returns how many remain. */
static int
keepManaged(vpSync *s, virDomainPtr *doms, int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (vpConfigManages(s->cfg, virDomainGetName(doms[i])))
            doms[kept++] = doms[i];
        else
            virDomainFree(doms[i]);
    }
    return kept;
}

/* Release first: what the gone held is free for the domains synced below, whose live
 * pins may have moved onto it while vcpuplace was not looking. */
static guint
releaseGone(vpSync *s, virDomainPtr *doms, int n)
{
    g_autoptr(GHashTable) running = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int i = 0; i < n; i++)
        g_hash_table_add(running, g_strdup(virDomainGetName(doms[i])));
    g_autoptr(GPtrArray) names = vpManagerNames(s->mgr);
    guint released = vpManagerReleaseGone(s->mgr, running, VP_RESERVE_GRACE_US);
    for (guint i = 0; i < names->len && released; i++) {
        if (!vpManagerRecord(s->mgr, names->pdata[i]))
            notify(s, names->pdata[i], NULL, NULL);
    }
    return released;
}

/* Claims before newcomers: first what vcpuplace recorded, then domains whose live pins are
 * all single CPUs (their own <cputune>, or placed before the ledger was lost), then those
 * to be placed now, so that no newcomer takes a CPU someone runs on. */
static void
syncInOrder(vpSync *s, virDomainPtr *doms, int n)
{
    g_autofree int *pass = g_new0(int, MAX(n, 1));
    for (int i = 0; i < n; i++) {
        if (vpManagerRecord(s->mgr, virDomainGetName(doms[i])))
            continue;
        unsigned flags = vpVirConnLiveFlags(s->vc);
        g_mutex_unlock(s->lock); /* a hint for the order only: the sync reads them again */
        g_autoptr(vpLivePins) live = vpVirPinsRead(doms[i], flags, NULL);
        g_mutex_lock(s->lock);
        pass[i] = live && vpLivePinsAllSingle(live) ? 1 : 2;
    }
    for (int p = 0; p < 3; p++) {
        for (int i = 0; i < n; i++) {
            if (pass[i] != p)
                continue;
            g_hash_table_remove(s->pending, virDomainGetName(doms[i]));
            g_autoptr(vpJob) job = beginSync(s, virDomainGetName(doms[i]));
            if (job)
                syncJob(s, job, doms[i], 0);
        }
    }
}

static void
fullSync(vpSync *s, virConnectPtr conn)
{
    virDomainPtr *doms = NULL;
    g_mutex_unlock(s->lock);
    int n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
    g_mutex_lock(s->lock);
    if (n < 0) {
        if (!vpVirConnCheck(s->vc)) {
            virErrorPtr e = virGetLastError();
            g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                             "cannot list running domains: %s",
                             e && e->message ? e->message : "unknown error");
            s->full_sync = true;
        }
        return;
    }
    n = keepManaged(s, doms, n);
    vpReportReset(s->report);
    guint released = releaseGone(s, doms, n);
    syncInOrder(s, doms, n);
    for (int i = 0; i < n; i++)
        virDomainFree(doms[i]);
    g_free(doms);
    g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE",
                     "synchronised with libvirt: %d running, %u released, %u recorded", n, released,
                     vpLedgerNDomains(vpManagerLedger(s->mgr)));
}

static gboolean
workIdle(gpointer data)
{
    vpSync *s = data;
    virConnectPtr conn = vpVirConnGet(s->vc);
    if (!conn) {
        /* Everything is re-read on reconnect. */
        s->work_id = 0;
        return G_SOURCE_REMOVE;
    }
    if (s->full_sync) {
        s->full_sync = false;
        fullSync(s, conn);
    } else {
        GHashTableIter it;
        gpointer key, why;
        g_hash_table_iter_init(&it, s->pending);
        if (g_hash_table_iter_next(&it, &key, &why)) {
            g_autofree char *name = g_strdup(key);
            guint flags = GPOINTER_TO_UINT(why);
            g_hash_table_iter_remove(&it);
            syncName(s, conn, name, flags);
        }
    }
    s->hooks.save(s->hooks.data);
    if (s->full_sync || g_hash_table_size(s->pending))
        return G_SOURCE_CONTINUE;
    s->work_id = 0;
    return G_SOURCE_REMOVE;
}

static void
kick(vpSync *s)
{
    if (!s->work_id && vpVirConnGet(s->vc) && (s->full_sync || g_hash_table_size(s->pending)))
        s->work_id = g_idle_add(workIdle, s);
}

void
vpSyncAll(vpSync *s)
{
    s->full_sync = true;
    kick(s);
}

void
vpSyncDisconnected(vpSync *s)
{
    if (s->work_id) {
        g_source_remove(s->work_id);
        s->work_id = 0;
    }
}

void
vpSyncLifecycle(vpSync *s, virDomainPtr dom, int event)
{
    switch (event) {
    case VIR_DOMAIN_EVENT_STARTED:
    case VIR_DOMAIN_EVENT_STOPPED:
        if (vpConfigManages(s->cfg, virDomainGetName(dom)))
            vpSyncQueue(s, virDomainGetName(dom), 0);
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
        g_autoptr(vpBitmap) want = NULL;
        if (!g_ascii_string_to_unsigned(field + strlen(vcpupin), 10, 0, plan->nvcpus - 1, &v,
                                        NULL) ||
            !(want = vpPlanVcpuCpus(plan, v)) || !hwloc_bitmap_isequal(set, want))
            return FALSE;
    }
    return TRUE;
}

/* virsh vcpupin and friends: a sync reads the live pins and adopts an operator's move onto
 * free CPUs, or puts back one onto a CPU another holds. A start under way is left to its
 * hook. */
void
vpSyncPinsChanged(vpSync *s, virDomainPtr dom, virTypedParameterPtr params, int nparams)
{
    const char *name = virDomainGetName(dom);
    const vpDomRecord *rec = vpManagerRecord(s->mgr, name);
    const vpPlan *plan = vpManagerPlan(s->mgr, name);
    if (rec && rec->state != VP_DOM_RESERVED && rec->state != VP_DOM_PINNED &&
        !(plan && pinsPlanned(plan, params, nparams)))
        vpSyncQueue(s, name, VP_SYNC_LATE);
}

bool
vpSyncBusy(const vpSync *s)
{
    return s->work_id || g_hash_table_size(s->timers) || s->full_sync ||
           g_hash_table_size(s->pending);
}

void
vpSyncFree(vpSync *s)
{
    if (!s)
        return;
    if (s->work_id)
        g_source_remove(s->work_id);
    GHashTableIter it;
    gpointer id;
    g_hash_table_iter_init(&it, s->timers);
    while (g_hash_table_iter_next(&it, NULL, &id))
        g_source_remove(GPOINTER_TO_UINT(id));
    g_hash_table_destroy(s->timers);
    g_hash_table_destroy(s->pending);
    g_hash_table_destroy(s->attempts);
    g_free(s);
}
