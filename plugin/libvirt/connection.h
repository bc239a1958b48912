/*
 * The daemon's libvirt connection: opened on the thread-default GLib main loop (libvirt
 * events through libvirt-glib), watched with keepalive and a close callback, and reopened
 * with a bounded backoff when libvirtd goes away. The owner learns of each (re)connection,
 * when it must resynchronise everything, and of each domain lifecycle event.
 */
#pragma once

#include <glib.h>
#include <libvirt/libvirt.h>

typedef struct _vpVirConn vpVirConn;

typedef struct {
    /* Connected, first time or again: nothing seen before may still be true. */
    void (*connected)(vpVirConn *vc, gpointer data);
    /* The connection is gone; reconnection is already scheduled. */
    void (*disconnected)(vpVirConn *vc, const char *reason, gpointer data);
    /* virConnectDomainEventRegisterAny(VIR_DOMAIN_EVENT_ID_LIFECYCLE). */
    void (*lifecycle)(vpVirConn *vc, virDomainPtr dom, int event, int detail, gpointer data);
    /* VIR_DOMAIN_EVENT_ID_TUNABLE naming a vCPU or emulator pin: someone pinned, vcpuplace
     * itself included. params are the event's ("cputune.vcpupin0" = "3", ...). Optional. */
    void (*pins_changed)(vpVirConn *vc, virDomainPtr dom, virTypedParameterPtr params, int nparams,
                         gpointer data);
} vpVirConnCallbacks;

/* Hooks libvirt's event loop into GLib's and silences libvirt's default error printer
 * (errors are reported by the caller, once). Call before any connection. */
void vpVirInit(void);
/* Only silences libvirt's default error printer (tools without an event loop). */
void vpVirSilence(void);

vpVirConn *vpVirConnNew(const char *uri, const vpVirConnCallbacks *cb, gpointer data);
/* lock: held by the caller around every call into vc, let go while a connection opens. A
 * libvirtd that starts autostarts its guests before it answers, and their hooks wait for
 * the lock's owner (vcpuplaced's reserve): held, the two would wait on each other until
 * the hook's timeout refused every autostarted guest. */
void vpVirConnSetLock(vpVirConn *vc, GMutex *lock);
void vpVirConnFree(vpVirConn *vc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpVirConn, vpVirConnFree)

/* Connects now; on failure retries from the main loop with backoff (250 ms .. 4 s). */
void vpVirConnStart(vpVirConn *vc);
/* The open connection, or NULL while disconnected. */
virConnectPtr vpVirConnGet(vpVirConn *vc);
const char *vpVirConnURI(const vpVirConn *vc);
/* Flags for changes to running domains: VIR_DOMAIN_AFFECT_LIVE, except 0 on the test
 * driver, which accepts no flags there (and whose domains are all "live"). */
unsigned vpVirConnLiveFlags(const vpVirConn *vc);
/* libvirtd says it is (re)starting (the hook's reconnect): retry now, not after the
 * backoff grown while it was away. */
void vpVirConnPoke(vpVirConn *vc);
/* A call failed: when the connection is dead, drop it and reconnect (TRUE). */
gboolean vpVirConnCheck(vpVirConn *vc);

/* Sets error from libvirt's last error: "what: libvirt's message". */
void vpVirSetError(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
