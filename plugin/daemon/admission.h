/*
 * Admission with room made (DESIGN.md "Making room"): the hook's reserve, answered on the
 * socket thread from the manager, may find that a few moves of running vCPUs
 * (core/place/compact.h) let the start be placed, or placed better. Those moves call libvirt,
 * which only the main loop does: the socket thread hands them over and waits, the state
 * lock let go, at most half of the hook's timeout, while the main loop makes them through
 * the actuator (ledger first, pin, read back, roll back). Only then is the new domain
 * recorded, on the CPUs the moves left: the ledger never holds both, and the new domain's
 * vCPUs, pinned at its "started", never land beside a stranger.
 *
 * A move libvirt refuses is rolled back by the actuator and the start is decided without
 * moves, refused or degraded as its policy says, with the failed moves named. So is a
 * start whose moves did not begin in time (the main loop was busy): a move already under
 * way then finishes or rolls back on its own, and its CPUs stay held meanwhile. Without a
 * libvirt connection nothing is moved.
 */
#pragma once

#include "daemon/actuator.h"

#include <json-glib/json-glib.h>

typedef struct _vpAdmission vpAdmission;

/* How a job reaches the main loop: the daemon's handoff (socket thread, state lock held);
 * run(job) there, or drop(job) when the daemon goes first. */
typedef void (*vpAdmissionHandoffFunc)(gpointer job, gpointer data);
void vpAdmissionJobRun(gpointer job);
void vpAdmissionJobDrop(gpointer job);

/* lock: the state lock; mgr and act borrowed. */
vpAdmission *vpAdmissionNew(GMutex *lock, vpManager *mgr, vpActuator *act,
                            vpAdmissionHandoffFunc handoff, gpointer handoff_data);
void vpAdmissionFree(vpAdmission *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpAdmission, vpAdmissionFree)

/* [admission] max_moves, and how long a reserve waits for its moves (ms). */
void vpAdmissionSetConfig(vpAdmission *a, const vpCompactConfig *cfg, guint wait_ms);

/* Socket thread, state lock held (let go while the moves are made): vpManagerReserve()
 * with moves that make room, as above. */
const vpPlan *vpAdmissionReserve(vpAdmission *a, const char *name, const vpRequest *req,
                                 GError **error);

/* Admission moves libvirt showed, and those it refused (rolled back), since the start. */
guint64 vpAdmissionMoves(const vpAdmission *a);
guint64 vpAdmissionFailures(const vpAdmission *a);

/* {moves_total, failures_total, max_moves, recent: [{start, domain, vcpu, from, to,
 * applied, reason, error?, age_s}]}, the last few moves, newest first. */
JsonNode *vpAdmissionStatusJson(const vpAdmission *a);
