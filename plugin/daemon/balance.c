/*
 * vcpuplaced's monitor -> pressure -> rebalancer -> libvirt loop. See balance.h.
 *
 * A move is pinned first and recorded after: the plan it leads to is worked out on a copy
 * of the ledger, libvirt is told and read back, and only then does the ledger change. A
 * move libvirt does not take leaves the ledger as it was and the old pins are put back.
 */
#include "daemon/balance.h"
#include "core/balance/rebalance.h"
#include "proto/proto.h"
#include "host/monitor.h"
#include "host/threads.h"

#include <string.h>

/* Thread ids are looked up again this often (in intervals), for vCPU hotplug. */
#define VP_RESCAN_INTERVALS 10

typedef struct {
    char *name;
    vpVcpuThreads *threads; /* NULL until found */
    gboolean rescan;
    gboolean warned;
} vpTracked;

struct _vpBalance {
    const vpConfig *cfg;
    vpManager *mgr;
    vpActuator *act;
    void (*interval_func)(gpointer data);
    gpointer interval_data;
    vpMonitor *mon;
    vpPressure *p;
    vpRebalancer *rb;
    guint timer;
    guint timer_ms;
    vpBalanceMode timer_mode;
    gboolean armed;       /* timer_ms and timer_mode say how the timer is set */
    GHashTable *tracked;  /* name -> vpTracked */
    GHashTable *moves;    /* "domain\037vcpu" -> moves committed (guint64 in a pointer) */
    GHashTable *said;     /* what the last timed pass logged, to log each thing once */
    guint64 intervals;    /* fed since the start */
    guint64 moves_total;  /* committed */
    guint64 failed_total; /* libvirt did not take them */
    guint64 reloads;
    gint64 last_tick_us; /* how long the last tick took */
    gboolean warned_rundir, warned_stat;
};

static void logEvent(const char *domain, const char *event, GLogLevelFlags level, const char *fmt,
                     ...) G_GNUC_PRINTF(4, 5);

/* Structured: VCPUPLACE_EVENT says what kind of decision, VCPUPLACE_DOMAIN for whom. */
static void
logEvent(const char *domain, const char *event, GLogLevelFlags level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    GLogField fields[] = {
        {"GLIB_DOMAIN", G_LOG_DOMAIN, -1},
        {"PRIORITY",
         level & G_LOG_LEVEL_WARNING ? "4"
         : level & G_LOG_LEVEL_DEBUG ? "7"
                                     : "6",
         -1},
        {"VCPUPLACE_EVENT", event, -1},
        {"MESSAGE", msg, -1},
        {"VCPUPLACE_DOMAIN", domain, -1},
    };
    g_log_structured_array(level, fields, G_N_ELEMENTS(fields) - (domain ? 0 : 1));
}

static char *
vcpuKey(const char *domain, unsigned vcpu)
{
    return g_strdup_printf("%s\037%u", domain, vcpu);
}

static guint64
movesOf(const vpBalance *b, const char *domain, unsigned vcpu)
{
    g_autofree char *key = vcpuKey(domain, vcpu);
    return GPOINTER_TO_SIZE(g_hash_table_lookup(b->moves, key));
}

/* ---- which threads are measured ---------------------------------------------------- */

static void
trackedFree(gpointer data)
{
    vpTracked *t = data;
    g_free(t->name);
    vpVcpuThreadsFree(t->threads);
    g_free(t);
}

/* Brings the monitor in line with the threads QEMU has now: a vCPU whose thread changed
 * (hotplug, a restarted QEMU) is watched afresh, one that has no thread any more is not. */
static void
scan(vpBalance *b, vpTracked *t)
{
    const char *rundir = vpConfigQemuRunDir(b->cfg);
    if (!rundir) {
        if (!b->warned_rundir)
            logEvent(NULL, "monitor", G_LOG_LEVEL_INFO,
                     "libvirt %s: vCPU thread ids cannot be known for its domains; nothing is "
                     "measured, nothing is moved by itself",
                     b->cfg->uri);
        b->warned_rundir = TRUE;
        t->rescan = FALSE;
        return;
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(vpVcpuThreads) now = vpVcpuThreadsFind(rundir, "/proc", t->name, &err);
    if (!now) {
        if (!t->warned)
            logEvent(t->name, "monitor", G_LOG_LEVEL_INFO,
                     "domain %s: vCPU threads not found yet (%s); looking again each interval",
                     t->name, err->message);
        t->warned = TRUE;
        t->rescan = TRUE;
        return;
    }
    const vpVcpuThreads *was = t->threads && t->threads->pid == now->pid ? t->threads : NULL;
    unsigned n = MAX(now->nvcpus, was ? was->nvcpus : 0);
    for (unsigned v = 0; v < n; v++) {
        pid_t tid = v < now->nvcpus ? now->tids[v] : 0;
        pid_t old = was && v < was->nvcpus ? was->tids[v] : 0;
        if (tid == old)
            continue;
        if (!tid) {
            vpMonitorRemove(b->mon, t->name, v);
            continue;
        }
        g_autoptr(GError) aerr = NULL;
        if (!vpMonitorAdd(b->mon, t->name, v, now->pid, tid, &aerr))
            logEvent(t->name, "monitor", G_LOG_LEVEL_WARNING,
                     "domain %s: vCPU %u (thread %d) cannot be measured: %s", t->name, v, tid,
                     aerr->message);
    }
    if (t->threads && !was)
        for (unsigned v = now->nvcpus; v < t->threads->nvcpus; v++)
            vpMonitorRemove(b->mon, t->name, v);
    if (!t->threads || t->warned)
        logEvent(t->name, "monitor", G_LOG_LEVEL_INFO, "domain %s: measuring %u vCPU threads of %d",
                 t->name, now->nvcpus, now->pid);
    vpVcpuThreadsFree(t->threads);
    t->threads = g_steal_pointer(&now);
    t->rescan = FALSE;
    t->warned = FALSE;
}

static void
forgetDomain(vpBalance *b, const char *name)
{
    g_autofree char *prefix = g_strdup_printf("%s\037", name);
    GHashTableIter it;
    gpointer key;
    vpMonitorRemoveDomain(b->mon, name);
    g_hash_table_remove(b->tracked, name);
    vpRebalancerForgetDomain(b->rb, name);
    g_hash_table_iter_init(&it, b->moves);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        if (g_str_has_prefix(key, prefix))
            g_hash_table_iter_remove(&it);
    }
}

void
vpBalanceDomain(vpBalance *b, const char *name, const vpPlan *plan)
{
    if (!plan) {
        forgetDomain(b, name);
        return;
    }
    vpTracked *t = g_hash_table_lookup(b->tracked, name);
    if (!t) {
        t = g_new0(vpTracked, 1);
        t->name = g_strdup(name);
        g_hash_table_insert(b->tracked, t->name, t);
    }
    scan(b, t);
}

/* ---- a pass ------------------------------------------------------------------------- */

/* What makes two notes "the same thing said again": the text without its figures, which
 * change from one interval to the next (a residency counting down, a wait fraction). */
static char *
noteKey(const char *note)
{
    const char *cut = strstr(note, " stays: ");
    if (!cut)
        cut = strstr(note, " waits for");
    GString *key = g_string_new_len(note, cut ? cut - note : (gssize)strlen(note));
    for (const char *c = cut; c && *c; c++) {
        if (!g_ascii_isdigit(*c) && *c != '.')
            g_string_append_c(key, *c);
    }
    return g_string_free(key, FALSE);
}

/* Logs what was not said by the previous timed pass. */
static void
sayOnce(vpBalance *b, GHashTable *said, const char *key, const char *domain, const char *event,
        const char *text)
{
    if (!g_hash_table_contains(b->said, key))
        logEvent(domain, event, G_LOG_LEVEL_INFO, "%s", text);
    g_hash_table_add(said, g_strdup(key));
}

static JsonObject *
moveJson(const vpMove *m)
{
    JsonObject *o = json_object_new();
    json_object_set_string_member(o, "domain", m->domain);
    json_object_set_int_member(o, "vcpu", m->vcpu);
    json_object_set_int_member(o, "from", m->from);
    json_object_set_int_member(o, "to", m->to);
    json_object_set_string_member(o, "reason", m->reason);
    return o;
}

static void
logMove(const vpMove *m)
{
    char vcpu[16], from[16], to[16];
    g_snprintf(vcpu, sizeof(vcpu), "%u", m->vcpu);
    g_snprintf(from, sizeof(from), "%u", m->from);
    g_snprintf(to, sizeof(to), "%u", m->to);
    g_autofree char *msg = g_strdup_printf("domain %s: vCPU %u moved from CPU %u to CPU %u: %s",
                                           m->domain, m->vcpu, m->from, m->to, m->reason);
    GLogField fields[] = {
        {"GLIB_DOMAIN", G_LOG_DOMAIN, -1},
        {"PRIORITY", "6", -1},
        {"VCPUPLACE_EVENT", "move", -1},
        {"VCPUPLACE_DOMAIN", m->domain, -1},
        {"VCPUPLACE_VCPU", vcpu, -1},
        {"VCPUPLACE_FROM", from, -1},
        {"VCPUPLACE_TO", to, -1},
        {"VCPUPLACE_REASON", m->reason, -1},
        {"MESSAGE", msg, -1},
    };
    g_log_structured_array(G_LOG_LEVEL_INFO, fields, G_N_ELEMENTS(fields));
}

/* What one pass gathers as it goes. */
typedef struct {
    gboolean timed;
    GHashTable *said; /* what this timed pass logged */
    JsonArray *moves; /* the report's */
    GPtrArray *done;  /* vpMove, committed */
} vpPass;

/* Reports, logs and counts the outcome of one batch. */
static void
batchDone(vpBalance *b, vpPass *ps, GPtrArray *batch, gboolean ok, const GError *err)
{
    for (guint k = 0; k < batch->len; k++) {
        const vpMove *bm = batch->pdata[k];
        JsonObject *o = moveJson(bm);
        json_object_set_boolean_member(o, "applied", ok);
        if (err)
            json_object_set_string_member(o, "error", err->message);
        json_array_add_object_element(ps->moves, o);
        if (ok) {
            logMove(bm);
            g_ptr_array_add(ps->done, (gpointer)bm);
            g_autofree char *key = vcpuKey(bm->domain, bm->vcpu);
            guint64 n = movesOf(b, bm->domain, bm->vcpu);
            g_hash_table_insert(b->moves, g_steal_pointer(&key), GSIZE_TO_POINTER(n + 1));
        } else if (err) {
            logEvent(bm->domain, "move-failed", G_LOG_LEVEL_WARNING,
                     "domain %s: vCPU %u not moved from CPU %u to CPU %u: %s", bm->domain, bm->vcpu,
                     bm->from, bm->to, err->message);
        } else if (ps->timed) {
            g_autofree char *key =
                g_strdup_printf("advise %s %u %u %u", bm->domain, bm->vcpu, bm->from, bm->to);
            g_autofree char *text = g_strdup_printf(
                "domain %s: vCPU %u would move from CPU %u to CPU %u (mode=advise): %s", bm->domain,
                bm->vcpu, bm->from, bm->to, bm->reason);
            sayOnce(b, ps->said, key, bm->domain, "advise", text);
        }
    }
    if (err)
        b->failed_total++;
}

/* Commits what was moved to the rebalancer's memory and the ledger to disk. */
static void
commit(vpBalance *b, GPtrArray *done, gint64 now)
{
    if (!done->len)
        return;
    vpRebalanceCommit(b->rb, b->p, vpManagerTopology(b->mgr), done, now);
    b->moves_total += done->len;
    g_autoptr(GError) err = NULL;
    if (vpManagerDirty(b->mgr) && !vpManagerSave(b->mgr, &err))
        logEvent(NULL, "ledger", G_LOG_LEVEL_WARNING, "cannot save the ledger: %s", err->message);
}

/* One rebalancing pass. act: pin and record the moves (else only say them); timed: the
 * timer's pass, which logs each note and advice once; report, when not NULL, receives the
 * moves and notes. */
static void
pass(vpBalance *b, gboolean act, gboolean timed, JsonObject *report)
{
    vpManager *mgr = b->mgr;
    gint64 now = g_get_monotonic_time() * 1000;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) moves = vpRebalancePlan(b->rb, b->p, vpManagerLedger(mgr), now, notes);
    g_autoptr(GPtrArray) done = g_ptr_array_new();
    g_autoptr(GHashTable) said = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    vpPass ps = {.timed = timed, .said = said, .moves = json_array_new(), .done = done};

    for (guint i = 0; i < moves->len;) {
        const vpMove *m = g_ptr_array_index(moves, i);
        const vpDomRecord *rec = vpManagerRecord(mgr, m->domain);
        /* A pack core's vCPUs come as one decision: one batch per domain, in order. */
        g_autoptr(GPtrArray) batch = g_ptr_array_new();
        while (i < moves->len && strcmp(((vpMove *)moves->pdata[i])->domain, m->domain) == 0)
            g_ptr_array_add(batch, moves->pdata[i++]);

        if (!rec || rec->state != VP_DOM_APPLIED) {
            g_ptr_array_add(
                notes, g_strdup_printf("CPU %u: vCPU %u of '%s' stays: its placement is %s, not "
                                       "applied",
                                       m->from, m->vcpu, m->domain,
                                       rec ? vpDomStateName(rec->state) : "unknown"));
            continue;
        }
        g_autoptr(GError) err = NULL;
        gboolean ok = act && vpActuatorMove(b->act, batch, &err);
        batchDone(b, &ps, batch, ok, err);
    }
    commit(b, done, now);
    if (timed) {
        for (guint i = 0; i < notes->len; i++) {
            g_autofree char *key = noteKey(notes->pdata[i]);
            sayOnce(b, said, key, NULL, "note", notes->pdata[i]);
        }
        g_hash_table_unref(b->said);
        b->said = g_steal_pointer(&said);
    }
    if (!report) {
        json_array_unref(ps.moves);
        return;
    }
    json_object_set_array_member(report, "moves", ps.moves);
    JsonArray *jnotes = json_array_new();
    for (guint i = 0; i < notes->len; i++)
        json_array_add_string_element(jnotes, notes->pdata[i]);
    json_object_set_array_member(report, "notes", jnotes);
}

/* ---- the interval ------------------------------------------------------------------- */

void
vpBalanceFeed(vpBalance *b, const vpPressureInput *in)
{
    vpPressureUpdate(b->p, vpManagerLedger(b->mgr), in);
    b->intervals++;
    switch (b->cfg->balance_mode) {
    case VP_BALANCE_AUTO:
        /* without libvirt nothing can be pinned; the figures keep being folded in */
        if (vpActuatorConnected(b->act))
            pass(b, TRUE, TRUE, NULL);
        break;
    case VP_BALANCE_ADVISE:
        pass(b, FALSE, TRUE, NULL);
        break;
    case VP_BALANCE_OFF:
        break;
    }
    if (b->interval_func)
        b->interval_func(b->interval_data);
}

static void
tick(vpBalance *b)
{
    GHashTableIter it;
    gpointer value;
    g_hash_table_iter_init(&it, b->tracked);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        vpTracked *t = value;
        if (t->rescan || b->intervals % VP_RESCAN_INTERVALS == 0)
            scan(b, t);
    }
    g_autoptr(GArray) samples = vpMonitorSampleAll(b->mon);
    g_autoptr(GError) err = NULL;
    g_autoptr(GArray) cpus = vpMonitorSampleCpus(b->mon, &err);
    if (!cpus && !b->warned_stat)
        logEvent(NULL, "monitor", G_LOG_LEVEL_WARNING,
                 "host CPU load unknown (said once): %s; idle CPUs cannot be told apart",
                 err->message);
    b->warned_stat |= !cpus;
    for (guint i = 0; i < samples->len; i++) {
        const vpMonitorSample *s = &g_array_index(samples, vpMonitorSample, i);
        vpTracked *t = s->gone ? g_hash_table_lookup(b->tracked, s->domain) : NULL;
        if (t)
            t->rescan = TRUE;
    }
    g_autoptr(vpPressureInput) in = vpMonitorPressureInput(samples, cpus);
    vpBalanceFeed(b, in);
}

static gboolean
onTick(gpointer data)
{
    vpBalance *b = data;
    gint64 t0 = g_get_monotonic_time();
    tick(b);
    b->last_tick_us = g_get_monotonic_time() - t0;
    return G_SOURCE_CONTINUE;
}

static void
armTimer(vpBalance *b)
{
    const vpConfig *cfg = b->cfg;
    if (b->armed && b->timer_ms == cfg->interval_ms && b->timer_mode == cfg->balance_mode)
        return;
    b->armed = TRUE;
    if (b->timer)
        g_source_remove(b->timer);
    b->timer = 0;
    b->timer_ms = cfg->interval_ms;
    b->timer_mode = cfg->balance_mode;
    if (cfg->balance_mode != VP_BALANCE_OFF)
        b->timer = g_timeout_add(cfg->interval_ms, onTick, b);
    logEvent(NULL, "monitor", G_LOG_LEVEL_INFO, "rebalancing: mode=%s, interval %.1f s%s%s",
             vpBalanceModeName(cfg->balance_mode), cfg->interval_ms / 1000.0,
             cfg->metrics_textfile ? ", metrics to " : "",
             cfg->metrics_textfile ? cfg->metrics_textfile : "");
}

/* ---- life cycle ---------------------------------------------------------------------- */

vpBalance *
vpBalanceNew(const vpConfig *cfg, vpManager *mgr, vpActuator *act)
{
    vpBalance *b = g_new0(vpBalance, 1);
    b->cfg = cfg;
    b->mgr = mgr;
    b->act = act;
    b->mon = vpMonitorNew(NULL);
    b->p = vpPressureNew(vpManagerTopology(mgr), &cfg->pressure);
    b->rb = vpRebalancerNew(&cfg->rebalance);
    b->tracked = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, trackedFree);
    b->moves = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    b->said = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    armTimer(b);
    return b;
}

void
vpBalanceFree(vpBalance *b)
{
    if (!b)
        return;
    if (b->timer)
        g_source_remove(b->timer);
    g_hash_table_destroy(b->tracked);
    g_hash_table_destroy(b->moves);
    g_hash_table_destroy(b->said);
    vpRebalancerFree(b->rb);
    vpPressureFree(b->p);
    vpMonitorFree(b->mon);
    g_free(b);
}

void
vpBalanceSetIntervalFunc(vpBalance *b, void (*func)(gpointer data), gpointer data)
{
    b->interval_func = func;
    b->interval_data = data;
}

void
vpBalanceReload(vpBalance *b, const vpConfig *cfg)
{
    b->cfg = cfg;
    vpPressureFree(b->p);
    b->p = vpPressureNew(vpManagerTopology(b->mgr), &cfg->pressure);
    if (memcmp(vpRebalancerGetConfig(b->rb), &cfg->rebalance, sizeof(cfg->rebalance)) != 0) {
        logEvent(NULL, "monitor", G_LOG_LEVEL_INFO,
                 "rebalancer settings changed: its memory of past moves starts again");
        vpRebalancerFree(b->rb);
        b->rb = vpRebalancerNew(&cfg->rebalance);
    }
    b->reloads++;
    armTimer(b);
}

/* ---- socket operations ---------------------------------------------------------------- */

JsonNode *
vpBalanceTopJson(vpBalance *b)
{
    vpManager *mgr = b->mgr;
    const vpTopology *topo = vpManagerTopology(mgr);
    const vpLedger *ledger = vpManagerLedger(mgr);
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_string_member(o, "mode", vpBalanceModeName(b->cfg->balance_mode));
    json_object_set_double_member(o, "interval_s", b->cfg->interval_ms / 1000.0);
    json_object_set_int_member(o, "intervals", b->intervals);
    json_object_set_int_member(o, "persistence", vpPressureGetConfig(b->p)->persistence);
    json_object_set_int_member(o, "moves_total", b->moves_total);

    JsonArray *a = json_array_new();
    g_autoptr(GPtrArray) vcpus = vpPressureVcpus(b->p);
    for (guint i = 0; i < vcpus->len; i++) {
        const vpVcpuPressure *v = vcpus->pdata[i];
        const vpTracked *t = g_hash_table_lookup(b->tracked, v->domain);
        JsonObject *e = json_object_new();
        json_object_set_string_member(e, "domain", v->domain);
        json_object_set_int_member(e, "vcpu", v->vcpu);
        if (v->pu >= 0) {
            json_object_set_int_member(e, "cpu", vpTopologyPU(topo, v->pu)->os);
            json_object_set_int_member(e, "time_shared", vpLedgerNOwners(ledger, v->pu));
        } else {
            json_object_set_null_member(e, "cpu");
            json_object_set_int_member(e, "time_shared", 0);
        }
        if (t && t->threads && (unsigned)v->vcpu < t->threads->nvcpus && t->threads->tids[v->vcpu])
            json_object_set_int_member(e, "tid", t->threads->tids[v->vcpu]);
        else
            json_object_set_null_member(e, "tid");
        json_object_set_double_member(e, "run", v->run);
        json_object_set_double_member(e, "wait", v->wait);
        json_object_set_double_member(e, "last_wait", v->last_wait);
        json_object_set_double_member(e, "wakeups", v->wakeups);
        json_object_set_double_member(e, "corun_foreign", v->corun_foreign);
        json_object_set_double_member(e, "forceidle", v->forceidle);
        json_object_set_int_member(e, "intervals", v->intervals);
        json_object_set_int_member(e, "moves", movesOf(b, v->domain, v->vcpu));
        json_array_add_object_element(a, e);
    }
    json_object_set_array_member(o, "vcpus", a);

    JsonArray *c = json_array_new();
    for (int pu = 0; pu < vpTopologyNPUs(topo); pu++) {
        const vpPUPressure *pp = vpPressurePU(b->p, pu);
        JsonObject *e = json_object_new();
        json_object_set_int_member(e, "cpu", vpTopologyPU(topo, pu)->os);
        json_object_set_boolean_member(e, "usable", vpTopologyPU(topo, pu)->usable);
        json_object_set_double_member(e, "busy", pp->busy);
        json_object_set_double_member(e, "wait", pp->wait);
        json_object_set_double_member(e, "other", pp->other);
        json_object_set_boolean_member(e, "hot", vpPressurePUHot(b->p, pu));
        json_object_set_boolean_member(e, "idle", vpPressurePUIdle(b->p, pu));
        json_object_set_int_member(e, "hot_streak", pp->hot_streak);
        json_object_set_int_member(e, "idle_streak", pp->idle_streak);
        json_array_add_object_element(c, e);
    }
    json_object_set_array_member(o, "cpus", c);
    return reply;
}

JsonNode *
vpBalanceRebalanceJson(vpBalance *b, JsonObject *req, GError **error)
{
    gboolean dry = FALSE;
    JsonNode *n = json_object_get_member(req, "dry_run");
    if (n && (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN)) {
        g_set_error(error, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL,
                    "member 'dry_run' is not a boolean");
        return NULL;
    }
    if (n)
        dry = json_node_get_boolean(n);
    if (!dry && b->cfg->mode == VP_MODE_REPORT) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                    "vcpuplaced is in report mode ([daemon] mode=report): nothing is moved "
                    "(--dry-run shows what would be)");
        return NULL;
    }
    if (!dry && !vpActuatorConnected(b->act)) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM,
                    "libvirt is not connected: nothing can be moved now (--dry-run shows what "
                    "would be)");
        return NULL;
    }
    JsonObject *o;
    JsonNode *reply = vpProtoReplyOk(&o);
    json_object_set_boolean_member(o, "dry_run", dry);
    json_object_set_int_member(o, "intervals", b->intervals);
    pass(b, !dry, FALSE, o);
    return reply;
}

const vpPressure *
vpBalancePressure(const vpBalance *b)
{
    return b->p;
}

guint64
vpBalanceMoves(const vpBalance *b, const char *domain, unsigned vcpu)
{
    return movesOf(b, domain, vcpu);
}

vpBalanceFigures
vpBalanceGetFigures(const vpBalance *b)
{
    return (vpBalanceFigures){
        .intervals = b->intervals,
        .moves_total = b->moves_total,
        .failed_total = b->failed_total,
        .reloads = b->reloads,
        .tick_us = b->last_tick_us,
        .monitored = vpMonitorSize(b->mon),
    };
}
