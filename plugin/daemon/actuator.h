/*
 * The actuator: the one place where vcpuplaced changes what a running domain runs on.
 * It pins through libvirt (libvirt/pinning.h, so that `virsh vcpupin` shows the truth),
 * reads the pins back and compares them with the plan, records the applied pins in the
 * domain's live metadata, and keeps the ledger in step. Placement, the reconcile's
 * put-back of an operator's `virsh vcpupin`, hotplug (through the reconcile) and the
 * rebalancer all go through it, and the moves that make room for a start (daemon/admission.h).
 *
 * Called on the main loop with the state lock held (daemon.h); it lets the lock go for
 * every libvirt call and takes it back before it returns, so nothing the caller read from
 * the manager before may be used after.
 */
#pragma once

#include "daemon/jobs.h"
#include "daemon/manager.h"
#include "libvirt/connection.h"

typedef struct _vpActuator vpActuator;

/* lock: the state lock, held by the caller; mgr, vc, jobs and key (appliedkey.h) are
 * borrowed. */
vpActuator *vpActuatorNew(GMutex *lock, vpManager *mgr, vpVirConn *vc, vpJobs *jobs, GBytes *key);
void vpActuatorFree(vpActuator *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpActuator, vpActuatorFree)

/* TRUE while libvirt is connected, so that pins can be applied at all. */
gboolean vpActuatorConnected(const vpActuator *a);

/* Pins dom as plan says (plan is copied first), reads libvirt's pins back and, when they
 * show the plan, records it in the domain's live metadata; the state lock is let go
 * meanwhile as job's (daemon/jobs.h: the caller commits only if vpJobCurrent(job)). The
 * ledger is the caller's: this is the placement path, whose plan the ledger already holds.
 * TRUE when libvirt shows the plan; FALSE with error saying what went wrong, after which
 * the connection is checked (vpVirConnCheck). */
bool vpActuatorPin(vpActuator *a, vpJob *job, virDomainPtr dom, const vpPlan *plan, GError **error);

/* Moves vCPUs of running domains: moves is an ordered array of vpMove (core/balance/rebalance.h:
 * domain, vcpu, from and to as Linux CPU numbers), one or several domains, applied as one.
 *
 *  1. The ledger takes every move first (vpManagerMove: all or nothing, the emulator and
 *     reserved siblings following as vpRebalanceApply says), so that while the lock is let
 *     go for libvirt the targets are held and the hook cannot reserve them for a start.
 *     The CPUs the moves leave are free from then on; a start reserved on them is pinned
 *     only after its hook's "started", on the main loop, once this call has returned.
 *  2. Each domain, in the order of its first move, is pinned to its new plan and read back.
 *     A domain reserved by the hook and not started yet has nothing to pin: its start
 *     applies the plan the ledger then holds.
 *  3. When libvirt does not take one of them, the domains already pinned, and the one that
 *     failed, are pinned back to their old plans and the ledger is put back as it was for
 *     every domain the moves changed (vpManagerMoveBack: the movers, and overcommitted
 *     smt=share domains the moves settled). A domain released or reserved anew meanwhile
 *     (by the hook) is left to its new owner. If the ledger cannot take the old plans back
 *     (the hook reserved a CPU they left), the new plans stay recorded and the domains are
 *     marked applying with the reason, so that the reconcile pins them as the ledger says.
 *
 * The moved domains are held as jobs (daemon/jobs.h) from step 1 to the end.
 *
 * Returns TRUE when libvirt shows every move and the ledger holds them; FALSE with error
 * (VP_ERROR_INVALID: the moves do not match the ledger, nothing was touched;
 * VP_ERROR_BUSY: another job holds one of the domains, nothing was touched;
 * VP_ERROR_SYSTEM: libvirt refused, rolled back as above). The ledger is left dirty for
 * the caller to save. */
gboolean vpActuatorMove(vpActuator *a, GPtrArray *moves, GError **error);

/* Where a domain goes whose pins must be applied again as the ledger says (a move the
 * ledger could not undo): the daemon's reconcile queue. */
void vpActuatorSetResyncFunc(vpActuator *a, void (*func)(const char *name, gpointer data),
                             gpointer data);

/* For the integration tier: func runs each time the actuator has let the state lock go
 * and is about to call libvirt, so that a test can put a hook request into that window.
 * NULL removes it. */
void vpActuatorSetUnlockedFunc(vpActuator *a, void (*func)(gpointer data), gpointer data);
