/*
 * The actuator (actuator.h). Reserve, then pin: the ledger changes under the state lock
 * before libvirt is told, because the lock is let go for libvirt and the hook answers
 * starts from the ledger alone; pinning first and recording after let a start take a CPU
 * a moving vCPU was already running on.
 */
#include "daemon/actuator.h"
#include "daemon/log.h"
#include "core/balance/rebalance.h"
#include "libvirt/pinning.h"

#include <string.h>

struct _vpActuator {
    GMutex *lock;
    vpManager *mgr;
    vpVirConn *vc;
    vpJobs *jobs;
    GBytes *key; /* signs the applied-pins records */
    void (*resync)(const char *name, gpointer data);
    gpointer resync_data;
    void (*unlocked)(gpointer data);
    gpointer unlocked_data;
};

vpActuator *
vpActuatorNew(GMutex *lock, vpManager *mgr, vpVirConn *vc, vpJobs *jobs, GBytes *key)
{
    vpActuator *a = g_new0(vpActuator, 1);
    a->key = key;
    a->lock = lock;
    a->jobs = jobs;
    a->mgr = mgr;
    a->vc = vc;
    return a;
}

void
vpActuatorFree(vpActuator *a)
{
    g_free(a);
}

void
vpActuatorSetResyncFunc(vpActuator *a, void (*func)(const char *name, gpointer data), gpointer data)
{
    a->resync = func;
    a->resync_data = data;
}

void
vpActuatorSetUnlockedFunc(vpActuator *a, void (*func)(gpointer data), gpointer data)
{
    a->unlocked = func;
    a->unlocked_data = data;
}

gboolean
vpActuatorConnected(const vpActuator *a)
{
    return vpVirConnGet(a->vc) != NULL;
}

static void
unlock(vpActuator *a)
{
    g_mutex_unlock(a->lock);
    if (a->unlocked)
        a->unlocked(a->unlocked_data);
}

static void
relock(vpActuator *a)
{
    g_mutex_lock(a->lock);
}

/* State lock let go. Without the record a restore or an incoming migration keeps these
 * pins as the domain's own: worth a line, not a failure. */
static void
recordApplied(virDomainPtr dom, const vpPlan *plan, GBytes *key, unsigned flags)
{
    g_autoptr(GError) err = NULL;
    if (!vpVirAppliedRecord(dom, plan, key, flags, &err))
        vpLogDomain(G_LOG_LEVEL_WARNING, virDomainGetName(dom),
                    "%s; a restore or an incoming migration will keep these pins as its own",
                    err->message);
}

/* State lock let go: apply, read back, compare, record. TRUE when libvirt shows plan. */
static bool
pinUnlocked(virDomainPtr dom, const vpPlan *plan, GBytes *key, unsigned flags, GError **error)
{
    if (!vpVirPinsApply(dom, plan, flags, error))
        return false;
    g_autoptr(vpLivePins) live = vpVirPinsRead(dom, flags, error);
    if (!live)
        return false;
    g_autofree char *diff = vpLivePinsDiff(live, plan);
    if (diff) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "domain %s: libvirt shows %s",
                    virDomainGetName(dom), diff);
        return false;
    }
    recordApplied(dom, plan, key, flags);
    return true;
}

bool
vpActuatorPin(vpActuator *a, vpJob *job, virDomainPtr dom, const vpPlan *want, GError **error)
{
    g_autoptr(vpPlan) plan = vpPlanCopy(want);
    unsigned flags = vpVirConnLiveFlags(a->vc);
    vpJobEnter(job);
    if (a->unlocked)
        a->unlocked(a->unlocked_data);
    bool pinned = pinUnlocked(dom, plan, a->key, flags, error);
    vpJobExit(job);
    if (!pinned)
        vpVirConnCheck(a->vc);
    return pinned;
}

/* One domain of a move: its plans before and after, and the record they belong to. */
typedef struct {
    char *name;
    guint64 serial;
    vpPlan *old;
    vpPlan *new;
    vpJob *job;           /* the movers' (not the bystanders') */
    virDomainPtr dom;     /* NULL until looked up */
    gboolean touched;     /* libvirt was asked to pin it */
    gboolean ledger_only; /* reserved, not started: its start pins the ledger's plan */
} vpMoved;

static void
movedFree(gpointer data)
{
    vpMoved *m = data;
    g_free(m->name);
    vpPlanFree(m->old);
    if (m->new)
        vpPlanFree(m->new);
    if (m->dom)
        virDomainFree(m->dom);
    vpJobEnd(m->job);
    g_free(m);
}

/* The domains moves touch, in the order of their first move, with their current plans,
 * each held as a job ("move"): refused when another job holds one of them. */
static GPtrArray *
collectMoved(vpActuator *a, GPtrArray *moves, GError **error)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(movedFree);
    for (guint i = 0; i < moves->len; i++) {
        const vpMove *mv = moves->pdata[i];
        gboolean seen = FALSE;
        for (guint k = 0; k < out->len && !seen; k++)
            seen = strcmp(((vpMoved *)out->pdata[k])->name, mv->domain) == 0;
        if (seen)
            continue;
        const vpDomRecord *rec = vpManagerRecord(a->mgr, mv->domain);
        const vpPlan *plan = vpLedgerLookup(vpManagerLedger(a->mgr), mv->domain);
        if (!rec || !plan) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "move of vCPU %u: domain '%s' is not in the ledger", mv->vcpu, mv->domain);
            return NULL;
        }
        vpMoved *m = g_new0(vpMoved, 1);
        m->name = g_strdup(mv->domain);
        m->serial = rec->serial;
        m->old = vpPlanCopy(plan);
        m->ledger_only = rec->state == VP_DOM_RESERVED && !rec->running;
        g_ptr_array_add(out, m);
        m->job = vpJobBegin(a->jobs, mv->domain, "move", 0, error);
        if (!m->job)
            return NULL;
    }
    return g_steal_pointer(&out);
}

/* State lock let go: pins each domain to plan new (or old, back), stopping at the first
 * that libvirt does not take (back: going on, the first failure reported). */
static bool
pinAllUnlocked(virConnectPtr conn, GPtrArray *moved, bool back, GBytes *key, unsigned flags,
               GError **error)
{
    g_autoptr(GError) first = NULL;
    for (guint i = 0; i < moved->len; i++) {
        vpMoved *m = moved->pdata[i];
        if (m->ledger_only || (back && !m->touched))
            continue;
        if (!m->dom)
            m->dom = virDomainLookupByName(conn, m->name);
        g_autoptr(GError) err = NULL;
        if (!m->dom) {
            vpVirSetError(&err, "domain %s", m->name);
        } else {
            m->touched = TRUE;
            if (pinUnlocked(m->dom, back ? m->old : m->new, key, flags, &err))
                continue;
        }
        if (!back) {
            g_propagate_error(error, g_steal_pointer(&err));
            return false;
        }
        if (!first)
            first = g_steal_pointer(&err);
    }
    if (!first)
        return true;
    g_propagate_error(error, g_steal_pointer(&first));
    return false;
}

/* Overcommitted plans of domains the moves do not name: a move may settle them
 * (vpRebalanceApply), and undoing it must put their flag back. */
static GPtrArray *
collectOvercommitted(vpActuator *a, GPtrArray *moved)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(movedFree);
    const vpLedger *ledger = vpManagerLedger(a->mgr);
    g_autoptr(GPtrArray) names = vpLedgerDomains(ledger);
    for (guint i = 0; i < names->len; i++) {
        const vpPlan *plan = vpLedgerLookup(ledger, names->pdata[i]);
        const vpDomRecord *rec = vpManagerRecord(a->mgr, plan->domain);
        gboolean mover = FALSE;
        for (guint k = 0; k < moved->len && !mover; k++)
            mover = strcmp(((vpMoved *)moved->pdata[k])->name, plan->domain) == 0;
        if (mover || !plan->overcommit || !rec)
            continue;
        vpMoved *m = g_new0(vpMoved, 1);
        m->name = g_strdup(plan->domain);
        m->serial = rec->serial;
        m->old = vpPlanCopy(plan);
        g_ptr_array_add(out, m);
    }
    return out;
}

/* The ledger's half of a failed move: the movers and the domains it settled get their old
 * plans back, or, where that cannot be, keep the new ones and are pinned anew. */
static void
rollBackLedger(vpActuator *a, GPtrArray *moved, GPtrArray *bystanders)
{
    g_autoptr(GPtrArray) olds = g_ptr_array_new();
    g_autoptr(GArray) serials = g_array_new(FALSE, FALSE, sizeof(guint64));
    for (guint set = 0; set < 2; set++) {
        GPtrArray *from = set ? bystanders : moved;
        for (guint i = 0; i < from->len; i++) {
            vpMoved *m = from->pdata[i];
            g_ptr_array_add(olds, m->old);
            g_array_append_val(serials, m->serial);
        }
    }
    g_autoptr(GError) err = NULL;
    if (vpManagerMoveBack(a->mgr, olds, serials, &err))
        return;
    for (guint i = 0; i < moved->len; i++) {
        vpMoved *m = moved->pdata[i];
        vpLogDomain(G_LOG_LEVEL_WARNING, m->name,
                    "the move cannot be undone in the ledger (%s): pinning it as the ledger says",
                    err->message);
        if (a->resync)
            a->resync(m->name, a->resync_data);
    }
}

gboolean
vpActuatorMove(vpActuator *a, GPtrArray *moves, GError **error)
{
    virConnectPtr conn = vpVirConnGet(a->vc);
    if (!conn) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "libvirt is not connected");
        return FALSE;
    }
    g_autoptr(GPtrArray) moved = collectMoved(a, moves, error);
    if (!moved)
        return FALSE;
    g_autoptr(GPtrArray) bystanders = collectOvercommitted(a, moved);
    if (!vpManagerMove(a->mgr, moves, error))
        return FALSE;
    for (guint i = 0; i < moved->len; i++) {
        vpMoved *m = moved->pdata[i];
        m->new = vpPlanCopy(vpLedgerLookup(vpManagerLedger(a->mgr), m->name));
    }
    unsigned flags = vpVirConnLiveFlags(a->vc);
    unlock(a);
    g_autoptr(GError) problem = NULL;
    g_autoptr(GError) back = NULL;
    if (!pinAllUnlocked(conn, moved, false, a->key, flags, &problem))
        pinAllUnlocked(conn, moved, true, a->key, flags, &back);
    relock(a);
    if (!problem)
        return TRUE;
    vpVirConnCheck(a->vc);
    rollBackLedger(a, moved, bystanders);
    if (back)
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                    "%s; putting the old pins back failed too: %s", problem->message,
                    back->message);
    else
        g_propagate_error(error, g_steal_pointer(&problem));
    return FALSE;
}
