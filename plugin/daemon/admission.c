/*
 * Admission with room made (admission.h). A job is shared by the socket thread that waits
 * and the main loop that moves, both under the state lock, hence counted references: the
 * waiter may give up (its deadline) before the main loop gets to it, and the daemon may go
 * before either.
 */
#include "daemon/admission.h"
#include "daemon/log.h"
#include "core/balance/rebalance.h"

#include <string.h>

/* Moves kept for `vcpuplace status`. */
#define VP_ADMISSION_RECENT 8

typedef enum {
    JOB_WAITING = 0, /* handed to the main loop, not begun */
    JOB_MOVING,      /* the actuator has it: the ledger holds the moves */
    JOB_DONE,        /* error says how it went */
    JOB_ABANDONED,   /* the waiter gave up first */
} vpMovesState;

typedef struct {
    gint ref;
    vpAdmission *a;
    vpMovesState state;
    char *start;      /* the domain the room is for */
    GPtrArray *moves; /* vpMove */
    GError *error;
    GCond cond;
} vpMovesJob;

typedef struct {
    gint64 when; /* monotonic us */
    char *start;
    vpMove *move;
    gboolean applied;
    char *error;
} vpRecent;

struct _vpAdmission {
    GMutex *lock;
    vpManager *mgr;
    vpActuator *act;
    vpAdmissionHandoffFunc handoff;
    gpointer handoff_data;
    vpCompactConfig cfg;
    guint wait_ms;
    guint64 moves_total;
    guint64 failures_total;
    GQueue recent; /* vpRecent, newest first */
};

static vpMove *
moveCopy(const vpMove *m)
{
    vpMove *c = g_new0(vpMove, 1);
    *c = (vpMove){g_strdup(m->domain), m->vcpu, m->from, m->to, g_strdup(m->reason)};
    return c;
}

static void
recentFree(gpointer data)
{
    vpRecent *r = data;
    g_free(r->start);
    vpMoveFree(r->move);
    g_free(r->error);
    g_free(r);
}

static vpMovesJob *
jobNew(vpAdmission *a, const vpPlan *plan)
{
    vpMovesJob *job = g_new0(vpMovesJob, 1);
    job->ref = 1;
    job->a = a;
    job->start = g_strdup(plan->domain);
    job->moves = g_ptr_array_new_with_free_func((GDestroyNotify)vpMoveFree);
    for (unsigned i = 0; i < plan->nmoves; i++)
        g_ptr_array_add(job->moves, moveCopy(&plan->moves[i]));
    g_cond_init(&job->cond);
    return job;
}

static void
jobUnref(vpMovesJob *job)
{
    if (--job->ref)
        return;
    g_free(job->start);
    g_ptr_array_unref(job->moves);
    g_clear_error(&job->error);
    g_cond_clear(&job->cond);
    g_free(job);
}

/* "vCPU 0 of 'x' from CPU 1 to CPU 0, ..." */
static char *
movesText(GPtrArray *moves)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < moves->len; i++) {
        const vpMove *m = moves->pdata[i];
        g_string_append_printf(s, "%svCPU %u of '%s' from CPU %u to CPU %u", i ? ", " : "", m->vcpu,
                               m->domain, m->from, m->to);
    }
    return g_string_free(s, FALSE);
}

/* error: NULL when libvirt showed the moves. */
static void
remember(vpAdmission *a, const vpMovesJob *job, const char *error)
{
    for (guint i = 0; i < job->moves->len; i++) {
        vpRecent *r = g_new0(vpRecent, 1);
        r->when = g_get_monotonic_time();
        r->start = g_strdup(job->start);
        r->move = moveCopy(job->moves->pdata[i]);
        r->applied = !error;
        r->error = g_strdup(error);
        g_queue_push_head(&a->recent, r);
    }
    while (g_queue_get_length(&a->recent) > VP_ADMISSION_RECENT)
        recentFree(g_queue_pop_tail(&a->recent));
}

/* Main loop, state lock held (let go by the actuator for libvirt). */
void
vpAdmissionJobRun(gpointer data)
{
    vpMovesJob *job = data;
    vpAdmission *a = job->a;
    if (job->state != JOB_WAITING)
        return;
    job->state = JOB_MOVING;
    g_autoptr(GError) err = NULL;
    gboolean ok = vpActuatorMove(a->act, job->moves, &err);
    if (ok) {
        a->moves_total += job->moves->len;
        for (guint i = 0; i < job->moves->len; i++) {
            const vpMove *m = job->moves->pdata[i];
            vpLogDomain(G_LOG_LEVEL_INFO, m->domain,
                        "vCPU %u moved from CPU %u to CPU %u for the start of '%s': %s", m->vcpu,
                        m->from, m->to, job->start, m->reason);
        }
    } else {
        g_autofree char *what = movesText(job->moves);
        a->failures_total++;
        vpLogDomain(G_LOG_LEVEL_WARNING, job->start,
                    "moves to make room for its start not made (%s), rolled back: %s", what,
                    err->message);
    }
    remember(a, job, ok ? NULL : err->message);
    if (job->state == JOB_ABANDONED) {
        vpLogDomain(G_LOG_LEVEL_INFO, job->start,
                    "its admission moves finished after its reserve was answered without them");
    } else {
        job->state = JOB_DONE;
        job->error = g_steal_pointer(&err);
    }
    g_cond_broadcast(&job->cond);
}

/* The handoff's destroy: after a run, or in its stead when the daemon goes. */
void
vpAdmissionJobDrop(gpointer data)
{
    vpMovesJob *job = data;
    if (job->state == JOB_WAITING) {
        job->state = JOB_DONE;
        job->error = g_error_new_literal(VP_ERROR, VP_ERROR_SYSTEM, "vcpuplaced is stopping");
        g_cond_broadcast(&job->cond);
    }
    jobUnref(job);
}

vpAdmission *
vpAdmissionNew(GMutex *lock, vpManager *mgr, vpActuator *act, vpAdmissionHandoffFunc handoff,
               gpointer handoff_data)
{
    vpAdmission *a = g_new0(vpAdmission, 1);
    a->lock = lock;
    a->mgr = mgr;
    a->act = act;
    a->handoff = handoff;
    a->handoff_data = handoff_data;
    vpCompactConfigInit(&a->cfg);
    a->wait_ms = 250;
    g_queue_init(&a->recent);
    return a;
}

void
vpAdmissionFree(vpAdmission *a)
{
    if (!a)
        return;
    g_queue_clear_full(&a->recent, recentFree);
    g_free(a);
}

void
vpAdmissionSetConfig(vpAdmission *a, const vpCompactConfig *cfg, guint wait_ms)
{
    a->cfg = *cfg;
    a->wait_ms = MAX(wait_ms, 1);
}

/* Socket thread: the plan's moves made on the main loop, waited for. TRUE when libvirt
 * shows them and the ledger holds them; FALSE with why. */
static gboolean
makeRoom(vpAdmission *a, const vpPlan *plan, GError **why)
{
    vpMovesJob *job = jobNew(a, plan);
    job->ref++; /* the handoff's */
    a->handoff(job, a->handoff_data);
    gint64 end = g_get_monotonic_time() + (gint64)a->wait_ms * 1000;
    while (job->state == JOB_WAITING || job->state == JOB_MOVING) {
        if (!g_cond_wait_until(&job->cond, a->lock, end))
            break;
    }
    gboolean ok = FALSE;
    g_autofree char *what = movesText(job->moves);
    if (job->state != JOB_DONE) {
        g_set_error(why, VP_ERROR, VP_ERROR_SYSTEM,
                    "the moves to make room (%s) were not %s within %u ms", what,
                    job->state == JOB_WAITING ? "begun" : "done", a->wait_ms);
        job->state = JOB_ABANDONED;
    } else if (job->error) {
        g_set_error(why, VP_ERROR, VP_ERROR_SYSTEM,
                    "the moves to make room (%s) failed and were rolled back: %s", what,
                    job->error->message);
    } else {
        ok = TRUE;
    }
    jobUnref(job);
    return ok;
}

/* Decided again without moves, after the moves could not be made: why says so. */
static const vpPlan *
withoutMoves(vpAdmission *a, const char *name, const vpRequest *req, const GError *why,
             GError **error)
{
    vpCompactConfig none = {.max_moves = 0};
    g_autoptr(GError) err = NULL;
    g_autoptr(vpPlan) plan = vpManagerAdmit(a->mgr, name, req, &none, &err);
    if (!plan) {
        g_set_error(error, err->domain, err->code, "%s; %s", err->message, why->message);
        return NULL;
    }
    vpLogDomain(G_LOG_LEVEL_WARNING, name, "placed without moves%s%s (%s)",
                plan->degraded ? ", degraded: " : "", plan->degraded ? plan->degraded_reason : "",
                why->message);
    return vpManagerHold(a->mgr, plan, error);
}

const vpPlan *
vpAdmissionReserve(vpAdmission *a, const char *name, const vpRequest *req, GError **error)
{
    vpCompactConfig cfg = a->cfg;
    if (!vpActuatorConnected(a->act))
        cfg.max_moves = 0;
    g_autoptr(vpPlan) plan = vpManagerAdmit(a->mgr, name, req, &cfg, error);
    if (!plan)
        return NULL;
    if (!plan->nmoves)
        return vpManagerHold(a->mgr, plan, error);
    g_autoptr(GError) why = NULL;
    if (makeRoom(a, plan, &why)) {
        const vpPlan *held = vpManagerHold(a->mgr, plan, &why);
        if (held)
            return held;
        g_prefix_error(&why, "the room made was taken meanwhile: ");
    }
    return withoutMoves(a, name, req, why, error);
}

guint64
vpAdmissionMoves(const vpAdmission *a)
{
    return a->moves_total;
}

guint64
vpAdmissionFailures(const vpAdmission *a)
{
    return a->failures_total;
}

JsonNode *
vpAdmissionStatusJson(const vpAdmission *a)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    gint64 now = g_get_monotonic_time();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "max_moves");
    json_builder_add_int_value(b, a->cfg.max_moves);
    json_builder_set_member_name(b, "moves_total");
    json_builder_add_int_value(b, (gint64)a->moves_total);
    json_builder_set_member_name(b, "failures_total");
    json_builder_add_int_value(b, (gint64)a->failures_total);
    json_builder_set_member_name(b, "recent");
    json_builder_begin_array(b);
    for (GList *l = a->recent.head; l; l = l->next) {
        const vpRecent *r = l->data;
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "start");
        json_builder_add_string_value(b, r->start);
        json_builder_set_member_name(b, "domain");
        json_builder_add_string_value(b, r->move->domain);
        json_builder_set_member_name(b, "vcpu");
        json_builder_add_int_value(b, r->move->vcpu);
        json_builder_set_member_name(b, "from");
        json_builder_add_int_value(b, r->move->from);
        json_builder_set_member_name(b, "to");
        json_builder_add_int_value(b, r->move->to);
        json_builder_set_member_name(b, "applied");
        json_builder_add_boolean_value(b, r->applied);
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, r->move->reason ? r->move->reason : "");
        if (r->error) {
            json_builder_set_member_name(b, "error");
            json_builder_add_string_value(b, r->error);
        }
        json_builder_set_member_name(b, "age_s");
        json_builder_add_double_value(b, (now - r->when) / 1e6);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}
