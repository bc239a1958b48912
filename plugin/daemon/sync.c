/*
 * The reconcile queue: the hook's "started", lifecycle events, a reconnect, a reload and a
 * retry all become "sync this domain" (or "sync everything"), queued by domain name and
 * run from an idle source on the main loop, one domain per dispatch. A sync decides from
 * libvirt's current truth (the domain's request and live pins, vpManagerSync), so that
 * duplicate or late triggers are harmless, and applies what it decides through the
 * actuator.
 */
#include "daemon/internal.h"
#include "daemon/log.h"
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

static void cancelSync(vpDaemon *d, const char *name);

gboolean
vpSyncReleaseRecord(vpDaemon *d, const char *name)
{
    if (!vpManagerRelease(d->mgr, name))
        return FALSE;
    vpLogDomain(G_LOG_LEVEL_INFO, name, "released");
    return TRUE;
}

void
vpSyncReleased(vpDaemon *d, const char *name, gboolean known)
{
    if (known)
        vpDaemonNotify(d, name, NULL, NULL);
    g_hash_table_remove(d->attempts, name);
    cancelSync(d, name);
}

static void
release(vpDaemon *d, const char *name)
{
    vpSyncReleased(d, name, vpSyncReleaseRecord(d, name));
}

void
vpSyncQueue(vpDaemon *d, const char *name, guint flags)
{
    gpointer old;
    if (g_hash_table_lookup_extended(d->pending, name, NULL, &old))
        flags |= GPOINTER_TO_UINT(old);
    g_hash_table_insert(d->pending, g_strdup(name), GUINT_TO_POINTER(flags));
    vpSyncKick(d);
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
    vpSyncQueue(r->d, r->name, VP_SYNC_LATE);
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

static void
applyPlan(vpDaemon *d, virDomainPtr dom, const char *name)
{
    const vpDomRecord *rec = vpManagerRecord(d->mgr, name);
    const vpPlan *recorded = vpManagerPlan(d->mgr, name);
    if (!rec || !recorded)
        return;
    guint64 serial = rec->serial;
    g_autoptr(vpPlan) plan = vpPlanCopy(recorded);
    g_autofree char *problem = vpActuatorPin(d->act, dom, plan);
    rec = vpManagerRecord(d->mgr, name);
    if (!rec || rec->serial != serial)
        return; /* the hook released it meanwhile; its next start is synced anew */
    if (problem && vpVirConnGet(d->vc) && scheduleRetry(d, name)) {
        vpLogDomain(G_LOG_LEVEL_INFO, name, "pinning not done yet (%s); retrying", problem);
        return;
    }
    if (problem && vpVirConnGet(d->vc) == NULL)
        return; /* the reconnect's full sync takes over */
    vpManagerApplied(d->mgr, name, problem);
    g_hash_table_remove(d->attempts, name);
    cancelSync(d, name);
    if (!problem)
        vpDaemonNotify(d, name, dom, plan);
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

/* The nodes vcpuplace chose for a placement='auto' domain: where its plan holds memory, else
 * where its vCPUs are; NULL when neither is known. */
static hwloc_bitmap_t
chosenNodes(vpDaemon *d, const char *name)
{
    const vpPlan *plan = vpManagerPlan(d->mgr, name);
    hwloc_bitmap_t nodes;

    if (!plan || plan->how == VP_HOW_PINNED)
        return NULL;
    nodes = hwloc_bitmap_alloc();
    for (unsigned i = 0; i < plan->nmem; i++) {
        if (plan->mem[i].bytes)
            hwloc_bitmap_set(nodes, plan->mem[i].node);
    }
    if (hwloc_bitmap_iszero(nodes)) {
        hwloc_bitmap_free(nodes);
        nodes = vpPlanMemoryNodes(plan, vpManagerTopology(d->mgr));
    }
    if (nodes && hwloc_bitmap_iszero(nodes))
        g_clear_pointer(&nodes, hwloc_bitmap_free);
    return nodes;
}

/* libvirt's live memory binding, as `virsh numatune DOMAIN` shows it: with placement='auto'
 * the live XML names no nodeset (libvirt 9.0 keeps numad's advice in its private status
 * file), so this is the only place it can be read. FALSE when libvirt names no nodeset. */
static gboolean
liveBinding(vpDaemon *d, virDomainPtr dom, vpMemMode *mode, hwloc_bitmap_t *nodes)
{
    /* virDomainNumatuneMemMode's values, in order */
    static const vpMemMode modes[] = {VP_MEM_STRICT, VP_MEM_PREFERRED, VP_MEM_INTERLEAVE,
                                      VP_MEM_RESTRICTIVE};
    virTypedParameterPtr params = NULL;
    int nparams = 0, vmode = -1;
    const char *list = NULL;
    gboolean ok = FALSE;

    vpDaemonUnlock(d);
    if (virDomainGetNumaParameters(dom, NULL, &nparams, VIR_DOMAIN_AFFECT_LIVE) == 0 &&
        nparams > 0) {
        params = g_new0(virTypedParameter, nparams);
        ok = virDomainGetNumaParameters(dom, params, &nparams, VIR_DOMAIN_AFFECT_LIVE) == 0;
    }
    vpDaemonLock(d);
    ok = ok && virTypedParamsGetInt(params, nparams, VIR_DOMAIN_NUMA_MODE, &vmode) == 1 &&
         vmode >= 0 && vmode < (int)G_N_ELEMENTS(modes) &&
         virTypedParamsGetString(params, nparams, VIR_DOMAIN_NUMA_NODESET, &list) == 1 && list &&
         *list && (*nodes = vpCpuListParse(VIR_DOMAIN_NUMA_NODESET, list, NULL)) != NULL;
    if (ok)
        *mode = modes[vmode];
    if (params)
        virTypedParamsClear(params, nparams);
    g_free(params);
    return ok;
}

/* The live <numatune> nodeset set to want (`virsh numatune --live --nodeset`), so that the
 * memory follows the vCPUs; libvirt 9.0 allows it in restrictive mode only. live is updated
 * on success. */
static gboolean
moveMemory(vpDaemon *d, virDomainPtr dom, const char *name, vpRequest *live, hwloc_bitmap_t want)
{
    virTypedParameterPtr params = NULL;
    int nparams = 0, maxparams = 0, rc;
    g_autofree char *list = vpCpuListFormat(want);
    g_autofree char *was = live->nodeset ? vpCpuListFormat(live->nodeset) : g_strdup("all");

    if (virTypedParamsAddString(&params, &nparams, &maxparams, VIR_DOMAIN_NUMA_NODESET, list) < 0)
        return FALSE;
    vpDaemonUnlock(d);
    rc = virDomainSetNumaParameters(dom, params, nparams, VIR_DOMAIN_AFFECT_LIVE);
    vpDaemonLock(d);
    virTypedParamsFree(params, nparams);
    if (rc < 0) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name,
                    "placement='auto': memory stays on nodes %s, not moved to vcpuplace's %s: %s",
                    was, list, virGetLastErrorMessage());
        return FALSE;
    }
    vpLogDomain(G_LOG_LEVEL_INFO, name,
                "placement='auto': live <numatune> nodeset %s -> %s, where its vCPUs are", was,
                list);
    g_clear_pointer(&live->nodeset, hwloc_bitmap_free);
    live->nodeset = hwloc_bitmap_dup(want);
    return TRUE;
}

/* The vCPUs placed again inside the nodes libvirt binds the memory to (req is changed to
 * say so; live may be req); TRUE when the new plan awaits pinning. */
static gboolean
placeInside(vpDaemon *d, const char *name, vpRequest *req, const vpRequest *live,
            hwloc_const_bitmap_t was)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *bound = vpCpuListFormat(live->nodeset);
    g_autofree char *from = vpCpuListFormat(was);
    const char *mode = vpMemModeName(live->mem_mode);
    const char *what = req->placement_auto ? "placement='auto': " : "";
    hwloc_bitmap_t nodes = hwloc_bitmap_dup(live->nodeset);

    req->mem_mode = live->mem_mode == VP_MEM_PREFERRED ? VP_MEM_STRICT : live->mem_mode;
    g_clear_pointer(&req->nodeset, hwloc_bitmap_free);
    req->nodeset = nodes;
    /* numad may advise several nodes for a large domain: then it spans them */
    if (req->placement_auto)
        req->placement_auto = hwloc_bitmap_weight(nodes) == 1;
    if (!vpManagerReplace(d->mgr, name, req, &err)) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name,
                    "%svCPUs stay on nodes %s, away from their memory on nodes %s (%s, "
                    "libvirt's): %s",
                    what, from, bound, mode, err->message);
        return FALSE;
    }
    vpLogDomain(G_LOG_LEVEL_INFO, name,
                "%slibvirt binds its memory to nodes %s (%s); vCPUs placed again there, off "
                "nodes %s",
                what, bound, mode, from);
    return TRUE;
}

/*
 * placement='auto' leaves the memory's nodes to libvirt: numad's advice, asked for after the
 * last hook before the start (`prepare begin`, where vcpuplace chose its node) and bound
 * with mode strict unless the domain says otherwise. vCPUs and memory must end on the same
 * nodes. In restrictive mode the live nodeset follows vcpuplace's choice (cpuset.mems moves
 * base pages); in strict mode, libvirt's default, libvirt refuses that, so the vCPUs follow
 * the memory instead. live gains libvirt's binding, so that the ledger's memory follows it.
 * TRUE when the domain was placed anew and needs pinning.
 */
static gboolean
followAuto(vpDaemon *d, virDomainPtr dom, const char *name, vpRequest *live, vpRequest *req)
{
    const vpPlan *plan = vpManagerPlan(d->mgr, name);
    g_autoptr(vpBitmap) want = chosenNodes(d, name);
    g_autoptr(vpBitmap) vcpus = NULL;
    g_autoptr(vpBitmap) bound = NULL;
    vpMemMode mode = VP_MEM_NONE;

    if (!want)
        return FALSE;
    vcpus = vpPlanMemoryNodes(plan, vpManagerTopology(d->mgr));
    if (liveBinding(d, dom, &mode, &bound)) {
        g_clear_pointer(&live->nodeset, hwloc_bitmap_free);
        live->nodeset = hwloc_bitmap_dup(bound);
        live->mem_mode = mode;
    }
    if (bound && hwloc_bitmap_isincluded(vcpus, bound)) {
        g_autofree char *list = vpCpuListFormat(bound);
        vpLogDomain(G_LOG_LEVEL_INFO, name,
                    "placement='auto': libvirt binds its memory to nodes %s (%s), where its "
                    "vCPUs are",
                    list, vpMemModeName(mode));
        return FALSE;
    }
    if ((!bound || mode == VP_MEM_RESTRICTIVE) && moveMemory(d, dom, name, live, want))
        return FALSE;
    return bound && placeInside(d, name, req, live, vcpus);
}

/* Whether the plan holds memory in huge pages, which stay where they are when the nodeset
 * changes live. */
static gboolean
holdsHugePages(const vpPlan *plan)
{
    for (unsigned i = 0; i < plan->nmem; i++) {
        if (plan->mem[i].page_size)
            return TRUE;
    }
    return plan->page_size != 0;
}

/* A live nodeset that binds the memory elsewhere (`virsh numatune --live --nodeset`, which
 * libvirt allows in restrictive mode, the base pages migrating with cpuset.mems): the vCPUs
 * follow it. Huge pages do not move, so the vCPUs of a domain on them stay with them; guest
 * cells keep to their own memnodes. TRUE when placed anew. */
static gboolean
followNodeset(vpDaemon *d, const char *name, const vpRequest *live, vpRequest *req)
{
    g_autoptr(vpBitmap) chosen = chosenNodes(d, name);
    g_autoptr(vpBitmap) vcpus = NULL;
    bool hard = live->mem_mode == VP_MEM_STRICT || live->mem_mode == VP_MEM_RESTRICTIVE ||
                live->mem_mode == VP_MEM_INTERLEAVE;

    if (!chosen || !hard || !live->nodeset || live->ncells || req->ncells ||
        holdsHugePages(vpManagerPlan(d->mgr, name)))
        return FALSE;
    vcpus = vpPlanMemoryNodes(vpManagerPlan(d->mgr, name), vpManagerTopology(d->mgr));
    if (hwloc_bitmap_iszero(vcpus) || hwloc_bitmap_isincluded(vcpus, live->nodeset))
        return FALSE;
    return placeInside(d, name, req, live, vcpus);
}

/* The ledger's memory of the domain against the memory it runs with now: `virsh setmem` and
 * `virsh numatune --live` change only the live XML, and send no event of their own, so every
 * sync looks. live is the request from the live XML when the sync already read it; req the
 * domain's request (its placement). TRUE when the domain was placed anew (its vCPUs
 * following libvirt's nodeset: placement='auto', or a live nodeset change) and needs
 * pinning. */
static gboolean
reconcileMemory(vpDaemon *d, virDomainPtr dom, const char *name, vpRequest *live, vpRequest *req)
{
    gboolean replaced = FALSE;
    g_autoptr(vpRequest) read = NULL;
    g_autoptr(GError) err = NULL;

    if (!vpLedgerLookup(vpManagerLedger(d->mgr), name))
        return FALSE;
    if (!live) {
        vpDaemonUnlock(d);
        g_autofree char *xml = vpVirDomainXML(dom, &err);
        vpDaemonLock(d);
        if (xml)
            read = vpDomXMLParse(xml, strlen(xml), vpManagerDefaults(d->mgr), &err);
        if (!read) {
            vpDaemonLog(G_LOG_LEVEL_WARNING, "domain %s: memory not reconciled: %s", name,
                        err->message);
            return FALSE;
        }
        live = read;
    }
    if (req->placement_auto)
        replaced = followAuto(d, dom, name, live, req);
    else
        replaced = followNodeset(d, name, live, req);
    vpManagerReconcileMemory(d->mgr, name, live);
    return replaced;
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
        vpReportForget(d->report, name);
        /* A reservation is the start under way; the hook's release frees a failed one. */
        if (rec && rec->state != VP_DOM_RESERVED)
            release(d, name);
        return;
    }

    unsigned flags = vpVirConnLiveFlags(d->vc);
    g_autoptr(GError) err = NULL;
    vpDaemonUnlock(d);
    gboolean is_live;
    g_autofree char *xml = requestXML(dom, &is_live, &err);
    g_autoptr(vpLivePins) live = xml ? vpVirPinsRead(dom, flags, &err) : NULL;
    vpDaemonLock(d);
    if (!live) {
        if (!vpVirConnCheck(d->vc) && !scheduleRetry(d, name))
            vpDaemonLog(G_LOG_LEVEL_WARNING, "domain %s: %s", name, err->message);
        return;
    }
    const vpDomRecord *rec = vpManagerRecord(d->mgr, name);
    gboolean hooked = rec && rec->state == VP_DOM_RESERVED;
    int before = rec ? (int)rec->state : -1;
    g_autoptr(vpRequest) req = vpDomXMLParse(xml, strlen(xml), vpManagerDefaults(d->mgr), &err);
    if (vpReportInstead(d->report, d->mgr, d->cfg, name, req, err))
        return;
    vpSyncAction action = VP_SYNC_NOTHING;
    if (req)
        action = vpManagerSync(d->mgr, name, req, live, &err);
    else
        vpManagerUnreadable(d->mgr, name, err->message);
    if (err)
        vpDaemonLog(G_LOG_LEVEL_WARNING, "domain %s: %s", name, err->message);
    if (req && reconcileMemory(d, dom, name, is_live ? req : NULL, req))
        action = VP_SYNC_APPLY;
    if (action != VP_SYNC_APPLY) {
        /* Found live as planned (restart, adoption) or its own pins respected: listeners
         * learn of it as of a domain just pinned. */
        rec = vpManagerRecord(d->mgr, name);
        if (rec && (int)rec->state != before &&
            (rec->state == VP_DOM_APPLIED || rec->state == VP_DOM_PINNED))
            vpDaemonNotify(d, name, dom, vpManagerPlan(d->mgr, name));
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
            vpDaemonLog(G_LOG_LEVEL_WARNING, "domain %s: lookup failed: %s", name,
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
            vpDaemonLog(G_LOG_LEVEL_WARNING, "cannot list running domains: %s",
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
    vpReportReset(d->report);
    g_autoptr(GHashTable) running = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int i = 0; i < n; i++)
        g_hash_table_add(running, g_strdup(virDomainGetName(doms[i])));

    /* Release first: what the gone held is free for the domains synced below, whose live
     * pins may have moved onto it while vcpuplace was not looking. */
    g_autoptr(GPtrArray) names = vpManagerNames(d->mgr);
    guint released = vpManagerReleaseGone(d->mgr, running, VP_RESERVE_GRACE_US);
    for (guint i = 0; i < names->len && released; i++) {
        if (!vpManagerRecord(d->mgr, names->pdata[i]))
            vpDaemonNotify(d, names->pdata[i], NULL, NULL);
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
    vpDaemonLog(G_LOG_LEVEL_INFO, "synchronised with libvirt: %d running, %u released, %u recorded",
                n, released, vpLedgerNDomains(vpManagerLedger(d->mgr)));
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
    vpDaemonScheduleSave(d);
    if (d->full_sync || g_hash_table_size(d->pending))
        return G_SOURCE_CONTINUE;
    d->work_id = 0;
    return G_SOURCE_REMOVE;
}

void
vpSyncKick(vpDaemon *d)
{
    if (!d->work_id && vpVirConnGet(d->vc) && (d->full_sync || g_hash_table_size(d->pending)))
        d->work_id = g_idle_add(workIdle, d);
}

static void
onConnected(vpVirConn *vc, gpointer data)
{
    vpDaemon *d = data;
    d->full_sync = TRUE;
    vpSyncKick(d);
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
            vpSyncQueue(d, virDomainGetName(dom), 0);
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
        vpSyncQueue(d, name, VP_SYNC_LATE);
}

const vpVirConnCallbacks vpSyncCallbacks = {
    .connected = onConnected,
    .disconnected = onDisconnected,
    .lifecycle = onLifecycle,
    .pins_changed = onPinsChanged,
};

void
vpSyncStop(vpDaemon *d)
{
    if (d->work_id)
        g_source_remove(d->work_id);
    d->work_id = 0;
    GHashTableIter it;
    gpointer id;
    g_hash_table_iter_init(&it, d->timers);
    while (g_hash_table_iter_next(&it, NULL, &id))
        g_source_remove(GPOINTER_TO_UINT(id));
    g_hash_table_remove_all(d->timers);
}

void
vpDaemonResync(vpDaemon *d, const char *name)
{
    vpSyncQueue(d, name, VP_SYNC_LATE);
}
