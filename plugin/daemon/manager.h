/*
 * The daemon's bookkeeping, without I/O of its own: the topology, the ledger (persisted
 * under the state path by host/ledgerfile.h), and per domain what state it is in. It decides; the
 * daemon carries the decisions out through libvirt and reports back.
 *
 * Truth: the ledger says what vcpuplace reserved; libvirt's live pins say what is applied.
 * vpManagerSync() reconciles one running domain against both.
 */
#pragma once

#include "core/place/compact.h"
#include "core/model/ledger.h"
#include "core/model/livepins.h"
#include "core/model/plan.h"
#include "core/model/policy.h"
#include "core/model/request.h"
#include "core/model/topology.h"

#include <json-glib/json-glib.h>

typedef enum {
    VP_DOM_RESERVED = 0, /* placed before the start (hook), not applied yet */
    VP_DOM_APPLYING,     /* running; the plan is to be applied */
    VP_DOM_APPLIED,      /* running; libvirt's pins show the plan */
    VP_DOM_PINNED,       /* the domain's own <cputune>: recorded, never touched */
    VP_DOM_FAILED,       /* running; applying failed (error says why) */
    VP_DOM_UNPLACED,     /* running but holding nothing: no room or a conflict (error) */
    VP_DOM_LAST
} vpDomState;

typedef struct {
    char *name;
    guint64 serial; /* new for each record: a domain released and reserved again differs */
    vpDomState state;
    gint64 since;         /* monotonic us of the last state change */
    char *error;          /* FAILED / UNPLACED: why */
    gboolean was_applied; /* vcpuplace's plan was live at some point (or may have been) */
    vpPlan *plan;      /* UNPLACED with own pins that collide: what it holds, outside the ledger */
    gboolean running;  /* libvirt has shown it running (a sync), and no release came since */
    gboolean awaiting; /* reserved by the hook, no start seen yet: expires on its own */
} vpDomRecord;

typedef struct _vpManager vpManager;

/* Takes topo. Loads the ledger from state_path; an unreadable one is moved aside (the
 * reason logged) and the daemon starts empty, to be rebuilt from libvirt. */
vpManager *vpManagerNew(vpTopology *topo, const vpPolicy *defaults, const char *state_path,
                        GError **error);
void vpManagerFree(vpManager *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpManager, vpManagerFree)

const vpTopology *vpManagerTopology(const vpManager *m);
const vpLedger *vpManagerLedger(const vpManager *m);
const vpPolicy *vpManagerDefaults(const vpManager *m);
const vpDomRecord *vpManagerRecord(const vpManager *m, const char *name);
const vpPlan *vpManagerPlan(const vpManager *m, const char *name);
/* Names of every recorded domain, sorted, copied: a caller that lets the state lock go
 * (a release on the socket thread frees the record's own name) still holds them. */
GPtrArray *vpManagerNames(const vpManager *m);
/* Changed since the last vpManagerSave(). */
gboolean vpManagerDirty(const vpManager *m);
gboolean vpManagerSave(vpManager *m, GError **error);
/* The ledger's plans now (vpLedgerPlansCopy()) and the path to write them to (both the
 * caller's), for a save turned into text and written without the state lock; counted saved
 * from here, until vpManagerSaveFailed(). */
GPtrArray *vpManagerSavePlans(vpManager *m, char **path);
void vpManagerSaveFailed(vpManager *m);

/* Requests come from the domain XML, parsed once by libvirt/domxml.h with
 * vpManagerDefaults(); a request whose name is not the domain's is VP_ERROR_INVALID. */

/* Hook, prepare begin: places the domain and holds its PUs. A domain already recorded is
 * replaced, unless libvirt has shown it running: libvirt does not prepare a running
 * domain, so that request is not libvirt's and re-placing would double-book its CPUs
 * (VP_ERROR_REFUSED; a sync of it settles a stale record). Refusal: VP_ERROR_REFUSED. */
const vpPlan *vpManagerReserve(vpManager *m, const char *name, const vpRequest *req,
                               GError **error);
/* The same in two halves, for moves that make room (core/place/compact.h, at most
 * cfg->max_moves): vpManagerAdmit() checks the request as above, forgets a stale record,
 * and returns where the domain would go with the moves to make first (plan->moves);
 * nothing is recorded. Once the ledger holds the moves (daemon/actuator.h), or when there
 * are none, vpManagerHold() records the plan (without its moves) as vpManagerReserve()
 * does; it fails, recording nothing, when the ledger no longer has room for it. */
vpPlan *vpManagerAdmit(vpManager *m, const char *name, const vpRequest *req,
                       const vpCompactConfig *cfg, GError **error);
const vpPlan *vpManagerHold(vpManager *m, const vpPlan *plan, GError **error);
/* Releases reservations whose start has not come within ttl_us (a start that failed
 * before libvirt ran the release hook, or a reserve that was never libvirt's). Returns
 * their names (caller frees). */
GPtrArray *vpManagerExpire(vpManager *m, gint64 ttl_us);
/* Where the domain would go now; nothing is recorded. */
vpPlan *vpManagerDryRun(vpManager *m, const vpRequest *req, GError **error);
/* Frees the domain's PUs and forgets it; FALSE when it was unknown. */
gboolean vpManagerRelease(vpManager *m, const char *name);

typedef enum {
    VP_SYNC_NOTHING = 0, /* libvirt already shows the recorded plan, or nothing to do */
    VP_SYNC_APPLY,       /* apply vpManagerPlan() through libvirt, then vpManagerApplied() */
} vpSyncAction;

/* Reconciles a running domain: what it asks for (req) and libvirt's live pins. Records
 * what it finds (adopting live pins, respecting <cputune>, placing when unknown) and says
 * what the daemon must do. */
vpSyncAction vpManagerSync(vpManager *m, const char *name, const vpRequest *req,
                           const vpLivePins *live, GError **error);
/* The domain's memory per node corrected to libvirt's live XML (live: its request), logged
 * (vpLedgerReconcileMemory()); TRUE when the ledger changed. */
gboolean vpManagerReconcileMemory(vpManager *m, const char *name, const vpRequest *live);
/* A running domain whose XML cannot be read as a request: recorded unplaced, why. */
void vpManagerUnreadable(vpManager *m, const char *name, const char *why);
/* Result of applying: error NULL when libvirt's pins now show the plan. */
void vpManagerApplied(vpManager *m, const char *name, const char *error);
/* Recorded domains that libvirt does not run: released, except reservations younger than
 * grace_us (their start may still be under way). Returns how many were released. */
guint vpManagerReleaseGone(vpManager *m, GHashTable *running, gint64 grace_us);

/* Moves vCPUs in the ledger (vpRebalanceApply: all or nothing), before libvirt is told
 * (daemon/actuator.h). */
gboolean vpManagerMove(vpManager *m, GPtrArray *moves, GError **error);
/* Undoes moves libvirt did not take: olds are the plans, as they were before
 * vpManagerMove(), of every domain it changed (the movers, and those whose overcommit it
 * settled); serials (guint64) their records' then. Domains whose record changed since (the
 * hook released or reserved them anew) are left to their new owner. All or nothing: FALSE
 * with error when the ledger cannot take the old plans back (a CPU they left was reserved
 * since); the moved plans then stay and those domains are marked applying, with that
 * reason. */
gboolean vpManagerMoveBack(vpManager *m, GPtrArray *olds, GArray *serials, GError **error);
/* The domain's vCPU count changed while it runs (hotplug): its plan grows or shrinks
 * (core/place/grow.h), state applying until the daemon has pinned it. The domain's own <cputune>
 * pins are not vcpuplace's to resize: VP_ERROR_INVALID. req: the domain's request, which
 * keeps new vCPUs on its memory's nodes (NULL: unknown, see vpPlanResize()). */
gboolean vpManagerResize(vpManager *m, const char *name, const vpRequest *req, unsigned nvcpus,
                         GError **error);
/* Places a running domain anew from req, as if it held nothing (its old plan is kept when
 * req cannot be met: FALSE, error set); state applying until the daemon has pinned it.
 * placement='auto': libvirt's nodeset, known only once the domain runs, decides. */
gboolean vpManagerReplace(vpManager *m, const char *name, const vpRequest *req, GError **error);
/* Configuration reload: takes topo (the same machine, other usable sets) and the new
 * defaults. The ledger is carried over as it is: domains on CPUs no longer usable stay
 * there (logged; names returned in *outside when not NULL, caller frees) until they stop
 * or are moved. On failure nothing changes and topo is freed. */
gboolean vpManagerReload(vpManager *m, vpTopology *topo, const vpPolicy *defaults,
                         GPtrArray **outside, GError **error);

const char *vpDomStateName(vpDomState state);

/* {name, state, since_s, how, policy, level, degraded, ..., vcpus: [{vcpu, cpu, core, l3,
 * numa, package}], emulator, reserved, error}. */
JsonNode *vpManagerStatusJson(const vpManager *m, const char *name);
