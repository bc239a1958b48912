/*
 * Domain bookkeeping for vcpuplaced. Every decision about a domain (place it, adopt what
 * libvirt shows, respect its own pins, release it) is taken here, so that the rules can
 * be read in one place and tested without a libvirt daemon.
 */
#include "daemon/manager.h"
#include "daemon/log.h"
#include "core/place/compact.h"
#include "core/place/grow.h"
#include "core/place/placer.h"
#include "core/balance/rebalance.h"
#include "host/ledgerfile.h"

#include <string.h>

struct _vpManager {
    vpTopology *topo;
    vpLedger *ledger;
    vpPolicy defaults;
    char *state_path;
    GHashTable *records; /* name -> vpDomRecord */
    guint64 serial;      /* the last record's */
    gboolean dirty;
};

static const char *const stateNames[VP_DOM_LAST] = {
    "reserved", "applying", "applied", "pinned", "failed", "unplaced",
};

const char *
vpDomStateName(vpDomState state)
{
    return state < VP_DOM_LAST ? stateNames[state] : "?";
}

static void
recordFree(vpDomRecord *rec)
{
    g_free(rec->name);
    g_free(rec->error);
    if (rec->plan)
        vpPlanFree(rec->plan);
    g_free(rec);
}

static vpDomRecord *
recordSet(vpManager *m, const char *name, vpDomState state, const char *error)
{
    vpDomRecord *rec = g_hash_table_lookup(m->records, name);
    if (!rec) {
        rec = g_new0(vpDomRecord, 1);
        rec->name = g_strdup(name);
        rec->serial = ++m->serial;
        rec->state = state;
        rec->since = g_get_monotonic_time();
        g_hash_table_insert(m->records, rec->name, rec);
    }
    if (rec->state != state)
        rec->since = g_get_monotonic_time();
    rec->state = state;
    g_free(rec->error);
    rec->error = g_strdup(error);
    if (rec->plan && state != VP_DOM_UNPLACED)
        g_clear_pointer(&rec->plan, vpPlanFree);
    return rec;
}

static vpLedger *
loadLedger(const vpTopology *topo, const char *path)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GError) why = NULL;
    vpLedger *ledger = vpLedgerFileLoad(topo, path, &err);
    if (ledger)
        return ledger;
    g_autofree char *aside = vpLedgerFileSetAside(path, &why);
    if (!aside)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "ledger %s is unreadable (%s) and cannot be moved aside (%s); "
                         "starting empty, rebuilding from libvirt",
                         path, err->message, why->message);
    else
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "ledger %s is unreadable (%s); moved to %s, starting empty, "
                         "rebuilding from libvirt",
                         path, err->message, aside);
    return vpLedgerNew(topo);
}

vpManager *
vpManagerNew(vpTopology *topo, const vpPolicy *defaults, const char *state_path, GError **error)
{
    if (!vpLedgerFileMakeDir(state_path, error)) {
        vpTopologyFree(topo);
        return NULL;
    }
    vpManager *m = g_new0(vpManager, 1);
    m->topo = topo;
    vpPolicyCopy(&m->defaults, defaults);
    m->state_path = g_strdup(state_path);
    m->records = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)recordFree);
    guint stale = vpLedgerFileClearTemporaries(state_path);
    if (stale)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE",
                         "ledger %s: removed %u temporary files an interrupted save left",
                         state_path, stale);
    m->ledger = loadLedger(topo, state_path);

    /* Loaded domains are unconfirmed until libvirt is asked: not "reserved", so that the
     * first full sync releases at once those that no longer run. */
    g_autoptr(GPtrArray) names = vpLedgerDomains(m->ledger);
    for (guint i = 0; i < names->len; i++) {
        const char *name = names->pdata[i];
        const vpPlan *plan = vpLedgerLookup(m->ledger, name);
        vpDomRecord *rec =
            recordSet(m, name, plan->how == VP_HOW_PINNED ? VP_DOM_PINNED : VP_DOM_APPLYING,
                      "loaded from the ledger, not yet confirmed by libvirt");
        rec->was_applied = TRUE;
    }
    if (names->len)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE",
                         "ledger %s: %u domains to reconcile with libvirt", state_path, names->len);
    return m;
}

void
vpManagerFree(vpManager *m)
{
    if (!m)
        return;
    g_hash_table_destroy(m->records);
    vpLedgerFree(m->ledger);
    vpTopologyFree(m->topo);
    vpPolicyClear(&m->defaults);
    g_free(m->state_path);
    g_free(m);
}

const vpTopology *
vpManagerTopology(const vpManager *m)
{
    return m->topo;
}

const vpLedger *
vpManagerLedger(const vpManager *m)
{
    return m->ledger;
}

const vpPolicy *
vpManagerDefaults(const vpManager *m)
{
    return &m->defaults;
}

const vpDomRecord *
vpManagerRecord(const vpManager *m, const char *name)
{
    return g_hash_table_lookup(m->records, name);
}

const vpPlan *
vpManagerPlan(const vpManager *m, const char *name)
{
    const vpPlan *plan = vpLedgerLookup(m->ledger, name);
    if (plan)
        return plan;
    const vpDomRecord *rec = vpManagerRecord(m, name);
    return rec ? rec->plan : NULL;
}

static gint
cmpStr(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GPtrArray *
vpManagerNames(const vpManager *m)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, m->records);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_ptr_array_add(names, g_strdup(key));
    g_ptr_array_sort(names, cmpStr);
    return names;
}

gboolean
vpManagerDirty(const vpManager *m)
{
    return m->dirty;
}

gboolean
vpManagerSave(vpManager *m, GError **error)
{
    if (!vpLedgerFileSave(m->ledger, m->state_path, error))
        return FALSE;
    m->dirty = FALSE;
    return TRUE;
}

GPtrArray *
vpManagerSavePlans(vpManager *m, char **path)
{
    *path = g_strdup(m->state_path);
    m->dirty = FALSE;
    return vpLedgerPlansCopy(m->ledger);
}

void
vpManagerSaveFailed(vpManager *m)
{
    m->dirty = TRUE;
}

gboolean
vpManagerRelease(vpManager *m, const char *name)
{
    gboolean held = vpLedgerRemove(m->ledger, name);
    gboolean known = g_hash_table_remove(m->records, name);
    if (held)
        m->dirty = TRUE;
    return held || known;
}

static gboolean
sameName(const char *name, const vpRequest *req, GError **error)
{
    if (g_strcmp0(req->name, name) == 0)
        return TRUE;
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                "domain name '%s' does not match the XML's <name>%s</name>", name,
                req->name ? req->name : "");
    return FALSE;
}

/* Records plan in the ledger; a plan of the domain's own pins that collides is kept
 * outside it (state unplaced) because the domain runs with those pins regardless. */
static gboolean
record(vpManager *m, const vpPlan *plan, vpDomState state, GError **error)
{
    g_autoptr(GError) err = NULL;
    if (vpLedgerAdd(m->ledger, plan, &err)) {
        m->dirty = TRUE;
        recordSet(m, plan->domain, state, NULL);
        return TRUE;
    }
    if (plan->how != VP_HOW_PINNED) {
        g_propagate_error(error, g_steal_pointer(&err));
        return FALSE;
    }
    g_autofree char *why = g_strdup_printf("its own <cputune> pins collide: %s", err->message);
    vpLogDomain(G_LOG_LEVEL_WARNING, plan->domain, "%s", why);
    vpDomRecord *rec = recordSet(m, plan->domain, VP_DOM_UNPLACED, why);
    rec->plan = vpPlanCopy(plan);
    return TRUE;
}

vpPlan *
vpManagerAdmit(vpManager *m, const char *name, const vpRequest *req, const vpCompactConfig *cfg,
               GError **error)
{
    const vpDomRecord *old = vpManagerRecord(m, name);
    if (old && old->running) {
        g_set_error(error, VP_ERROR, VP_ERROR_REFUSED,
                    "domain '%s' is running (%s) as libvirt last showed it; libvirt prepares "
                    "only a domain that is not running",
                    name, vpDomStateName(old->state));
        return NULL;
    }
    if (!sameName(name, req, error))
        return NULL;
    if (vpManagerRelease(m, name))
        vpLogDomain(G_LOG_LEVEL_INFO, name, "stale record replaced by a new reservation");
    return vpPlaceCompact(m->topo, m->ledger, req, cfg, error);
}

const vpPlan *
vpManagerHold(vpManager *m, const vpPlan *plan, GError **error)
{
    /* The moves are history once made: the ledger holds what each domain runs on. */
    g_autoptr(vpPlan) held = vpPlanCopy(plan);
    for (unsigned i = 0; i < held->nmoves; i++) {
        g_free(held->moves[i].domain);
        g_free(held->moves[i].reason);
    }
    g_clear_pointer(&held->moves, g_free);
    held->nmoves = 0;
    if (!record(m, held, held->how == VP_HOW_PINNED ? VP_DOM_PINNED : VP_DOM_RESERVED, error))
        return NULL;
    vpDomRecord *rec = g_hash_table_lookup(m->records, held->domain);
    rec->awaiting = TRUE;
    return vpManagerPlan(m, held->domain);
}

const vpPlan *
vpManagerReserve(vpManager *m, const char *name, const vpRequest *req, GError **error)
{
    vpCompactConfig none = {.max_moves = 0};
    g_autoptr(vpPlan) plan = vpManagerAdmit(m, name, req, &none, error);
    return plan ? vpManagerHold(m, plan, error) : NULL;
}

GPtrArray *
vpManagerExpire(vpManager *m, gint64 ttl_us)
{
    gint64 now = g_get_monotonic_time();
    g_autoptr(GPtrArray) names = vpManagerNames(m);
    GPtrArray *expired = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < names->len; i++) {
        const vpDomRecord *rec = vpManagerRecord(m, names->pdata[i]);
        if (rec->awaiting && now - rec->since >= ttl_us)
            g_ptr_array_add(expired, g_strdup(names->pdata[i]));
    }
    for (guint i = 0; i < expired->len; i++) {
        vpLogDomain(G_LOG_LEVEL_INFO, expired->pdata[i],
                    "reservation expired: no start within %" G_GINT64_FORMAT " s",
                    ttl_us / G_USEC_PER_SEC);
        vpManagerRelease(m, expired->pdata[i]);
    }
    return expired;
}

vpPlan *
vpManagerDryRun(vpManager *m, const vpRequest *req, GError **error)
{
    if (!req->name || !vpLedgerLookup(m->ledger, req->name))
        return vpPlace(m->topo, m->ledger, req, error);
    /* The domain's own current holding must not stand in its way. */
    g_autoptr(vpLedger) without = vpLedgerCopy(m->ledger, m->topo, error);
    if (!without)
        return NULL;
    vpLedgerRemove(without, req->name);
    return vpPlace(m->topo, without, req, error);
}

static gboolean
samePins(const vpPlan *a, const vpPlan *b)
{
    if (a->nvcpus != b->nvcpus)
        return FALSE;
    for (unsigned i = 0; i < a->nvcpus; i++) {
        g_autoptr(vpBitmap) pa = vpPlanVcpuCpus(a, i);
        g_autoptr(vpBitmap) pb = vpPlanVcpuCpus(b, i);
        if (!pa != !pb || (pa && !hwloc_bitmap_isequal(pa, pb)))
            return FALSE;
    }
    if (!a->emulator || !b->emulator)
        return a->emulator == b->emulator;
    return hwloc_bitmap_isequal(a->emulator, b->emulator);
}

/* Live pins that are all single CPUs were chosen by someone: keep them when they fit. */
static gboolean
adopt(vpManager *m, const char *name, const vpRequest *req, const vpLivePins *live, const char *why)
{
    g_autoptr(vpPlan) plan = vpLivePinsToPlan(live, name, &req->policy);
    g_autoptr(GError) err = NULL;
    gboolean ok = vpLedgerLookup(m->ledger, name) ? vpLedgerReplace(m->ledger, plan, &err)
                                                  : vpLedgerAdd(m->ledger, plan, &err);
    if (!ok) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "live pins cannot be adopted (%s): %s", why,
                    err->message);
        return FALSE;
    }
    m->dirty = TRUE;
    recordSet(m, name, VP_DOM_APPLIED, NULL)->was_applied = TRUE;
    vpLogDomain(G_LOG_LEVEL_INFO, name, "adopted libvirt's live pins (%s)", why);
    return TRUE;
}

static vpSyncAction
syncPinned(vpManager *m, const char *name, const vpRequest *req, GError **error)
{
    g_autoptr(vpPlan) plan = vpPlace(m->topo, m->ledger, req, error);
    if (!plan)
        return VP_SYNC_NOTHING;
    const vpPlan *old = vpManagerPlan(m, name);
    if (old && old->how == VP_HOW_PINNED && samePins(old, plan)) {
        const vpDomRecord *rec = vpManagerRecord(m, name);
        if (rec->state != VP_DOM_UNPLACED)
            recordSet(m, name, VP_DOM_PINNED, NULL);
        return VP_SYNC_NOTHING;
    }
    vpManagerRelease(m, name);
    /* Placed again now that the old entry is gone, so its own pins do not collide. */
    g_autoptr(vpPlan) again = vpPlace(m->topo, m->ledger, req, error);
    if (again)
        record(m, again, VP_DOM_PINNED, error);
    return VP_SYNC_NOTHING;
}

void
vpManagerUnreadable(vpManager *m, const char *name, const char *why)
{
    recordSet(m, name, VP_DOM_UNPLACED, why);
}

/* What vpManagerSync() records, before it is marked running. */
static vpSyncAction
syncRunning(vpManager *m, const char *name, const vpRequest *req, const vpLivePins *live,
            GError **error)
{
    g_autoptr(GError) err = NULL;
    if (!sameName(name, req, &err)) {
        vpManagerUnreadable(m, name, err->message);
        g_propagate_error(error, g_steal_pointer(&err));
        return VP_SYNC_NOTHING;
    }
    const vpPlan *plan = vpLedgerLookup(m->ledger, name);
    const vpDomRecord *rec = vpManagerRecord(m, name);

    if (plan && plan->how != VP_HOW_PINNED) {
        g_autofree char *diff = vpLivePinsDiff(live, plan);
        if (!diff) {
            recordSet(m, name, VP_DOM_APPLIED, NULL)->was_applied = TRUE;
            return VP_SYNC_NOTHING;
        }
        /* Once applied, single-CPU pins that differ were moved by someone on purpose; before,
         * differences are libvirt's defaults or a partial application. */
        if (rec && rec->was_applied && vpLivePinsVcpusDiffer(live, plan) &&
            vpLivePinsAllSingle(live) && adopt(m, name, req, live, diff))
            return VP_SYNC_NOTHING;
        recordSet(m, name, VP_DOM_APPLYING, diff);
        return VP_SYNC_APPLY;
    }
    if (req->has_pins)
        return syncPinned(m, name, req, error);

    if (rec)
        vpManagerRelease(m, name);
    if (vpLivePinsAllSingle(live) && adopt(m, name, req, live, "not in the ledger"))
        return VP_SYNC_NOTHING;
    g_autoptr(vpPlan) fresh = vpPlace(m->topo, m->ledger, req, &err);
    if (!fresh) {
        /* It runs anyway: vcpuplace was not there to refuse it. */
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "running unplaced: %s", err->message);
        recordSet(m, name, VP_DOM_UNPLACED, err->message);
        g_propagate_error(error, g_steal_pointer(&err));
        return VP_SYNC_NOTHING;
    }
    if (!record(m, fresh, VP_DOM_APPLYING, error))
        return VP_SYNC_NOTHING;
    return VP_SYNC_APPLY;
}

vpSyncAction
vpManagerSync(vpManager *m, const char *name, const vpRequest *req, const vpLivePins *live,
              GError **error)
{
    vpSyncAction action = syncRunning(m, name, req, live, error);
    vpDomRecord *rec = g_hash_table_lookup(m->records, name);
    if (rec) {
        rec->running = TRUE;
        rec->awaiting = FALSE;
    }
    return action;
}

gboolean
vpManagerReconcileMemory(vpManager *m, const char *name, const vpRequest *live)
{
    g_autofree char *what = vpLedgerReconcileMemory(m->ledger, name, live);

    if (!what)
        return FALSE;
    m->dirty = TRUE;
    vpLogDomain(G_LOG_LEVEL_INFO, name, "memory reconciled with libvirt's live XML: %s", what);
    return TRUE;
}

void
vpManagerApplied(vpManager *m, const char *name, const char *error)
{
    if (!vpManagerRecord(m, name))
        return;
    if (error)
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "pinning failed: %s", error);
    else
        vpLogDomain(G_LOG_LEVEL_INFO, name, "pinned as planned");
    vpDomRecord *rec = recordSet(m, name, error ? VP_DOM_FAILED : VP_DOM_APPLIED, error);
    rec->was_applied |= !error;
}

guint
vpManagerReleaseGone(vpManager *m, GHashTable *running, gint64 grace_us)
{
    gint64 now = g_get_monotonic_time();
    g_autoptr(GPtrArray) names = vpManagerNames(m);
    guint released = 0;
    for (guint i = 0; i < names->len; i++) {
        const char *name = names->pdata[i];
        const vpDomRecord *rec = vpManagerRecord(m, name);
        if (g_hash_table_contains(running, name))
            continue;
        if (rec->state == VP_DOM_RESERVED && now - rec->since < grace_us)
            continue;
        vpLogDomain(G_LOG_LEVEL_INFO, name, "not running; released");
        vpManagerRelease(m, name);
        released++;
    }
    return released;
}

gboolean
vpManagerMove(vpManager *m, GPtrArray *moves, GError **error)
{
    if (!vpRebalanceApply(m->ledger, moves, error))
        return FALSE;
    m->dirty = TRUE;
    return TRUE;
}

/* Replaces the ledger entries of the domains in back by those plans, all or nothing. */
static gboolean
replaceAll(vpManager *m, GPtrArray *back, GError **error)
{
    g_autoptr(GPtrArray) cur = g_ptr_array_new_with_free_func((GDestroyNotify)vpPlanFree);
    for (guint i = 0; i < back->len; i++) {
        const vpPlan *old = back->pdata[i];
        g_ptr_array_add(cur, vpPlanCopy(vpLedgerLookup(m->ledger, old->domain)));
        vpLedgerRemove(m->ledger, old->domain);
    }
    guint added = 0;
    while (added < back->len && vpLedgerAdd(m->ledger, back->pdata[added], error))
        added++;
    if (added == back->len)
        return TRUE;
    while (added-- > 0)
        vpLedgerRemove(m->ledger, ((vpPlan *)back->pdata[added])->domain);
    /* they held all this together a moment ago */
    for (guint i = 0; i < cur->len; i++) {
        if (!vpLedgerAdd(m->ledger, cur->pdata[i], NULL))
            g_assert_not_reached();
    }
    return FALSE;
}

gboolean
vpManagerMoveBack(vpManager *m, GPtrArray *olds, GArray *serials, GError **error)
{
    g_autoptr(GPtrArray) back = g_ptr_array_new();
    for (guint i = 0; i < olds->len; i++) {
        const vpPlan *old = olds->pdata[i];
        const vpDomRecord *rec = vpManagerRecord(m, old->domain);
        if (rec && rec->serial == g_array_index(serials, guint64, i) &&
            vpLedgerLookup(m->ledger, old->domain))
            g_ptr_array_add(back, (gpointer)old);
    }
    g_autoptr(GError) err = NULL;
    if (!replaceAll(m, back, &err)) {
        for (guint i = 0; i < back->len; i++)
            recordSet(m, ((vpPlan *)back->pdata[i])->domain, VP_DOM_APPLYING, err->message);
        g_propagate_error(error, g_steal_pointer(&err));
        return FALSE;
    }
    m->dirty |= back->len > 0;
    return TRUE;
}

/* The vCPUs hot-plugged when there was no room, placed again now (shrunk away, then grown
 * back with today's ledger); the plan changes only when more of them find a CPU. */
static gboolean
retryUnplaced(vpManager *m, const char *name, const vpPlan *plan, const vpRequest *req,
              GError **error)
{
    unsigned first = vpPlanUnplacedTail(plan), n = plan->nvcpus;
    if (first == n)
        return TRUE;
    g_autoptr(vpPlan) shrunk = vpPlanResize(m->topo, m->ledger, plan, req, first, error);
    g_autoptr(vpPlan) again =
        shrunk ? vpPlanResize(m->topo, m->ledger, shrunk, req, n, error) : NULL;
    if (!again)
        return FALSE;
    if (vpPlanUnplacedTail(again) <= first)
        return TRUE;
    if (!vpLedgerReplace(m->ledger, again, error))
        return FALSE;
    m->dirty = TRUE;
    vpLogDomain(G_LOG_LEVEL_INFO, name, "vCPUs %u-%u, left unpinned for want of room, placed now",
                first, n - 1);
    recordSet(m, name, VP_DOM_APPLYING, NULL);
    return TRUE;
}

gboolean
vpManagerResize(vpManager *m, const char *name, const vpRequest *req, unsigned nvcpus,
                GError **error)
{
    const vpPlan *plan = vpLedgerLookup(m->ledger, name);
    if (!plan || plan->how == VP_HOW_PINNED) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain %s: no placement of vcpuplace's to resize", name);
        return FALSE;
    }
    if (plan->nvcpus == nvcpus)
        return retryUnplaced(m, name, plan, req, error);
    unsigned was = plan->nvcpus;
    g_autoptr(vpPlan) resized = vpPlanResize(m->topo, m->ledger, plan, req, nvcpus, error);
    if (!resized || !vpLedgerReplace(m->ledger, resized, error))
        return FALSE;
    m->dirty = TRUE;
    plan = vpLedgerLookup(m->ledger, name);
    g_autoptr(vpBitmap) set = vpPlanHeld(plan);
    g_autofree char *held = vpCpuListFormat(set);
    vpLogDomain(G_LOG_LEVEL_INFO, name, "vCPUs %u -> %u: now holds CPUs %s%s%s", was, nvcpus, held,
                plan->degraded ? ", degraded: " : "", plan->degraded ? plan->degraded_reason : "");
    recordSet(m, name, VP_DOM_APPLYING, NULL);
    return TRUE;
}

gboolean
vpManagerReplace(vpManager *m, const char *name, const vpRequest *req, GError **error)
{
    g_autoptr(vpLedger) without = vpLedgerCopy(m->ledger, m->topo, error);
    if (!without)
        return FALSE;
    vpLedgerRemove(without, name);
    g_autoptr(vpPlan) plan = vpPlace(m->topo, without, req, error);
    if (!plan || !vpLedgerReplace(m->ledger, plan, error))
        return FALSE;
    m->dirty = TRUE;
    recordSet(m, name, VP_DOM_APPLYING, NULL);
    return TRUE;
}

/* Linux CPUs of the plan that the topology does not hand out; NULL when none. */
static char *
outsideUsable(const vpTopology *topo, const vpPlan *plan)
{
    g_autoptr(vpBitmap) held = hwloc_bitmap_dup(plan->reserved);
    for (unsigned v = 0; v < plan->nvcpus; v++) {
        if (plan->vcpu_pu[v] >= 0)
            hwloc_bitmap_set(held, plan->vcpu_pu[v]);
    }
    hwloc_bitmap_andnot(held, held, vpTopologyUsableSet(topo));
    return hwloc_bitmap_iszero(held) ? NULL : vpCpuListFormat(held);
}

gboolean
vpManagerReload(vpManager *m, vpTopology *topo, const vpPolicy *defaults, GPtrArray **outside,
                GError **error)
{
    g_autoptr(vpTopology) owned = topo;
    g_autoptr(vpLedger) ledger = vpLedgerCopy(m->ledger, topo, error);
    if (!ledger) {
        g_prefix_error(error, "the ledger does not fit the reloaded topology: ");
        return FALSE;
    }
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < names->len; i++) {
        const vpPlan *plan = vpLedgerLookup(ledger, names->pdata[i]);
        g_autofree char *cpus = outsideUsable(topo, plan);
        if (!cpus)
            continue;
        vpLogDomain(G_LOG_LEVEL_WARNING, plan->domain,
                    "holds CPUs %s, no longer usable after the reload: it stays until it stops "
                    "or is moved",
                    cpus);
        g_ptr_array_add(out, g_strdup(plan->domain));
    }
    vpLedgerFree(m->ledger);
    vpTopologyFree(m->topo);
    m->ledger = g_steal_pointer(&ledger);
    m->topo = g_steal_pointer(&owned);
    vpPolicyClear(&m->defaults);
    vpPolicyCopy(&m->defaults, defaults);
    if (outside)
        *outside = out;
    else
        g_ptr_array_unref(out);
    return TRUE;
}
