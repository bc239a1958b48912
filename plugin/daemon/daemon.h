/*
 * vcpuplaced's wiring: configuration -> topology and manager, the socket server, the
 * libvirt connection and the work queue that connects them, on the GLib main loop of the
 * thread that creates the daemon; only the socket has a thread of its own. Later stages
 * (core-scheduling cookies, the pressure monitor) attach to the per-domain notifications
 * below rather than to libvirt or the socket directly.
 *
 * The state lock: the socket thread takes it to answer the hook. The main thread holds it
 * whenever it runs, except while it waits: in poll, and in libvirt calls, which it makes
 * between vpDaemonUnlock() and vpDaemonLock(). Across those, the hook may have reserved or
 * released anything: nothing read from the manager before may be used after.
 */
#pragma once

#include "daemon/config.h"
#include "daemon/manager.h"
#include "daemon/metrics.h"

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
/* The daemon's own figures (failed ledger saves, socket refusals) into m, for the
 * metrics the rebalancer writes. */
void vpDaemonAddMetrics(vpDaemon *d, vpMetrics *m);
/* Writes the ledger now if it changed. */
gboolean vpDaemonFlush(vpDaemon *d, GError **error);

void vpDaemonOnDomain(vpDaemon *d, vpDaemonDomainFunc func, gpointer data);
/* Reconciles the domain with libvirt soon (its plan changed: pins are applied again). */
void vpDaemonResync(vpDaemon *d, const char *name);

/* SIGHUP: reads the configuration file again. host_cpus, housekeeping_cpus, domains, the
 * policy defaults and [rebalance] take effect; uri, socket, state and topology need a
 * restart (logged, kept). The ledger is kept: domains on CPUs no longer usable stay there,
 * reported, until they stop or the rebalancer moves them. On error nothing changes. */
gboolean vpDaemonReload(vpDaemon *d, GError **error);
/* Around a libvirt call on the main thread (see the state lock above). */
void vpDaemonUnlock(vpDaemon *d);
void vpDaemonLock(vpDaemon *d);
/* Pins a running domain as plan says, now, through libvirt (the placement path), and
 * checks that libvirt shows it. The ledger is the caller's business. Plan is copied
 * first: the state lock is let go for the calls. */
gboolean vpDaemonPin(vpDaemon *d, const char *name, const vpPlan *plan, GError **error);

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
