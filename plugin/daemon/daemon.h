/*
 * vcpuplaced, one job per file:
 *
 *   daemon.c    life cycle, reload, the state lock and the socket thread's handoffs
 *   sync.c      the reconcile queue: libvirt events and hook notifications -> sync a domain
 *   jobs.c      one job per domain: decide under the lock, call libvirt outside, commit once
 *   ops.c       the socket operations, one table (dispatch, errors, the protocol reference)
 *   actuator.c  pinning through libvirt, read back, compared, recorded; moves with rollback
 *   admission.c the hook's reserve with moves that make room, made on the main loop
 *   manager.c   the decisions and the bookkeeping (ledger, per-domain state)
 *   balance.c   monitor -> pressure -> rebalancer -> actuator, each interval
 *   cookies.c   core-scheduling cookies for the running domains
 *   hotplug.c   vCPUs added to running domains
 *   metrics.c   the Prometheus exposition and textfile
 *   server.c    the Unix socket and its thread
 *
 * The daemon runs on the GLib main loop of the thread that creates it; only the socket
 * has a thread of its own. balance, cookies and hotplug are handed what they use (the
 * configuration, the manager, the actuator, the state lock), never the daemon.
 *
 * The state lock: the socket thread takes it to answer the hook from the manager alone.
 * The main thread holds it whenever it runs, except while it waits: in poll, in writing the
 * ledger's file, in computing the capacity gauges (on a copy of the ledger), and in libvirt
 * calls. A libvirt call about one domain is made inside that domain's job (jobs.h: the
 * sync, the actuator's pins and moves, the hook's reserve), which lets the lock go around
 * it and says, once it has the lock back, whether the domain changed meanwhile; what the
 * job decided before is committed only if not. Other libvirt calls (cookies, hotplug,
 * listing domains) are made between vpDaemonUnlock() and vpDaemonLock(), and nothing read
 * from the manager before may be used after. What the socket thread cannot do itself
 * (anything that calls libvirt, anything that reads what the main loop owns) it hands off,
 * without waiting for the state lock: an idle source on the main loop, run after the hook's
 * reply is out, and destroyed unrun when the daemon goes first.
 */
#pragma once

#include "daemon/actuator.h"
#include "daemon/admission.h"
#include "daemon/config.h"
#include "daemon/manager.h"

#include <libvirt/libvirt.h>

typedef struct _vpDaemon vpDaemon;
typedef struct _vpBalance vpBalance;
typedef struct _vpCookies vpCookies;

/* What a domain's placement became: live (plan set: pinned by vcpuplace, found pinned as
 * planned after a restart, adopted, or its own <cputune> respected) or released (plan and
 * dom NULL). Called once per change, from the main loop; dom is borrowed. */
typedef void (*vpDaemonDomainFunc)(vpDaemon *d, const char *name, virDomainPtr dom,
                                   const vpPlan *plan, gpointer data);

/* Takes cfg. Loads the topology and the ledger and binds the socket; does not connect.
 * The calling thread becomes the main thread, holding the state lock; one daemon per
 * process at a time. */
vpDaemon *vpDaemonNew(vpConfig *cfg, GError **error);
void vpDaemonFree(vpDaemon *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpDaemon, vpDaemonFree)

/* Connects to libvirt (retrying in the background) and begins serving. */
void vpDaemonStart(vpDaemon *d);
/* How long a reservation waits for its start before it expires (120 s; tests shorten
 * it). */
void vpDaemonSetReserveTTL(vpDaemon *d, gint64 ttl_us);
/* Main loop: the metrics exposition (caller frees). */
char *vpDaemonMetricsText(vpDaemon *d);
/* Writes the ledger now if it changed. */
gboolean vpDaemonFlush(vpDaemon *d, GError **error);

void vpDaemonOnDomain(vpDaemon *d, vpDaemonDomainFunc func, gpointer data);
/* Reconciles the domain with libvirt soon (its plan changed: pins are applied again). */
void vpDaemonResync(vpDaemon *d, const char *name);

/* SIGHUP: reads the configuration file again. host_cpus, housekeeping_cpus, domains, the
 * policy defaults, [rebalance] and [admission] take effect; uri, socket, state and topology need a
 * restart (logged, kept). The ledger is kept: domains on CPUs no longer usable stay there,
 * reported, until they stop or the rebalancer moves them. On error nothing changes: the
 * daemon runs on its last good configuration, and says so (vpDaemonConfigError(), status,
 * a metric) until a reload succeeds. */
gboolean vpDaemonReload(vpDaemon *d, GError **error);
/* Why the last reload failed; NULL when it succeeded, or none was tried. */
const char *vpDaemonConfigError(const vpDaemon *d);
/* Around a libvirt call on the main thread (see the state lock above). */
void vpDaemonUnlock(vpDaemon *d);
void vpDaemonLock(vpDaemon *d);

const vpConfig *vpDaemonConfig(const vpDaemon *d);
vpManager *vpDaemonManager(vpDaemon *d);
/* TRUE while work is queued: a sync, a retry, a pending save (tests wait for FALSE). */
gboolean vpDaemonBusy(const vpDaemon *d);
/* TRUE while a libvirt connection is open. */
gboolean vpDaemonConnected(const vpDaemon *d);
/* The open libvirt connection (NULL while disconnected); borrowed. Later stages use it
 * to read what the daemon placed; the integration tier drives the test driver through
 * it, whose state is private to each connection. */
virConnectPtr vpDaemonLibvirt(const vpDaemon *d);
/* The rebalancing loop (daemon/balance.h); borrowed. */
vpBalance *vpDaemonBalance(vpDaemon *d);
/* The core-scheduling cookies (daemon/cookies.h); borrowed. */
vpCookies *vpDaemonCookies(vpDaemon *d);
/* The actuator (daemon/actuator.h); borrowed. */
vpActuator *vpDaemonActuator(vpDaemon *d);
/* The moves made for starts (daemon/admission.h); borrowed. */
vpAdmission *vpDaemonAdmission(vpDaemon *d);

/* The socket operations, as proto/proto.h lists them: per operation " *   NAME ARGS DOC"
 * and " *              -> REPLY" lines, from the table the daemon dispatches with (caller
 * frees). */
char *vpDaemonProtocolReference(void);
