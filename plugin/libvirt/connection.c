/*
 * libvirt connection with reconnect. libvirt invokes the close callback from its event
 * dispatch, where closing the connection is not allowed; teardown therefore runs from an
 * idle source, which then arms the reconnect timer.
 */
#include "libvirt/connection.h"
#include "core/model/topology.h"

#include <libvirt-glib/libvirt-glib.h>
#include <libvirt/virterror.h>
#include <stdarg.h>
#include <string.h>

#define VP_RECONNECT_MIN_MS 250
#define VP_RECONNECT_MAX_MS 4000
/* Keepalive: a libvirtd that stops answering for ~15 s is treated as gone. */
#define VP_KEEPALIVE_INTERVAL 5
#define VP_KEEPALIVE_COUNT 3

struct _vpVirConn {
    char *uri;
    vpVirConnCallbacks cb;
    gpointer data;
    virConnectPtr conn;
    int lifecycle_id;
    int tunable_id;
    gboolean is_test;
    guint retry_id;
    guint drop_id;
    guint backoff_ms;
    char *drop_reason;
    gboolean failed_logged;
    GMutex *lock; /* the caller's, NULL: none */
};

static void
silentError(void *data, virErrorPtr err)
{
}

void
vpVirSilence(void)
{
    virSetErrorFunc(NULL, silentError);
}

void
vpVirInit(void)
{
    static gsize done = 0;
    if (g_once_init_enter(&done)) {
        gvir_event_register();
        vpVirSilence();
        g_once_init_leave(&done, 1);
    }
}

void
vpVirSetError(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    virErrorPtr err = virGetLastError();
    g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "%s: %s", what,
                err && err->message ? err->message : "unknown libvirt error");
}

static void scheduleRetry(vpVirConn *vc);

static int
onLifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
    vpVirConn *vc = opaque;
    if (vc->cb.lifecycle)
        vc->cb.lifecycle(vc, dom, event, detail, vc->data);
    return 0;
}

static int
onTunable(virConnectPtr conn, virDomainPtr dom, virTypedParameterPtr params, int nparams,
          void *opaque)
{
    vpVirConn *vc = opaque;
    for (int i = 0; i < nparams; i++) {
        if (g_str_has_prefix(params[i].field, "cputune.vcpupin") ||
            g_str_has_prefix(params[i].field, "cputune.emulatorpin")) {
            vc->cb.pins_changed(vc, dom, params, nparams, vc->data);
            break;
        }
    }
    return 0;
}

static void
teardown(vpVirConn *vc)
{
    if (!vc->conn)
        return;
    if (vc->lifecycle_id >= 0)
        virConnectDomainEventDeregisterAny(vc->conn, vc->lifecycle_id);
    vc->lifecycle_id = -1;
    if (vc->tunable_id >= 0)
        virConnectDomainEventDeregisterAny(vc->conn, vc->tunable_id);
    vc->tunable_id = -1;
    virConnectUnregisterCloseCallback(vc->conn, NULL);
    virConnectClose(vc->conn);
    vc->conn = NULL;
}

static gboolean
dropIdle(gpointer data)
{
    vpVirConn *vc = data;
    vc->drop_id = 0;
    teardown(vc);
    g_autofree char *reason = g_steal_pointer(&vc->drop_reason);
    g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                     "libvirt connection %s lost (%s); reconnecting", vc->uri,
                     reason ? reason : "unknown");
    vc->backoff_ms = VP_RECONNECT_MIN_MS;
    vc->failed_logged = FALSE;
    if (vc->cb.disconnected)
        vc->cb.disconnected(vc, reason ? reason : "unknown", vc->data);
    scheduleRetry(vc);
    return G_SOURCE_REMOVE;
}

static void
drop(vpVirConn *vc, const char *reason)
{
    if (vc->drop_id)
        return;
    g_free(vc->drop_reason);
    vc->drop_reason = g_strdup(reason);
    vc->drop_id = g_idle_add(dropIdle, vc);
}

static void
onClose(virConnectPtr conn, int reason, void *opaque)
{
    static const char *const names[] = {"error", "end of file", "keepalive timeout",
                                        "client closed"};
    drop(opaque, reason >= 0 && reason < (int)G_N_ELEMENTS(names) ? names[reason] : "closed");
}

static gboolean
tryConnect(vpVirConn *vc)
{
    if (vc->lock)
        g_mutex_unlock(vc->lock);
    virConnectPtr conn = virConnectOpen(vc->uri);
    if (vc->lock)
        g_mutex_lock(vc->lock);
    if (!conn) {
        virErrorPtr err = virGetLastError();
        /* Log the first failure of a series only: a down libvirtd must not flood the log. */
        if (!vc->failed_logged)
            g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                             "cannot connect to libvirt at %s: %s; retrying", vc->uri,
                             err && err->message ? err->message : "unknown error");
        vc->failed_logged = TRUE;
        return FALSE;
    }
    const char *type = virConnectGetType(conn);
    vc->is_test = type && g_ascii_strcasecmp(type, "test") == 0;
    /* The test driver has no keepalive and reports that as an error; harmless. */
    if (!vc->is_test)
        virConnectSetKeepAlive(conn, VP_KEEPALIVE_INTERVAL, VP_KEEPALIVE_COUNT);
    vc->conn = conn;
    vc->lifecycle_id =
        virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                                         VIR_DOMAIN_EVENT_CALLBACK(onLifecycle), vc, NULL);
    if (vc->lifecycle_id < 0) {
        virErrorPtr err = virGetLastError();
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "cannot register lifecycle events on %s: %s", vc->uri,
                         err && err->message ? err->message : "unknown error");
        teardown(vc);
        return FALSE;
    }
    vc->tunable_id = -1;
    if (vc->cb.pins_changed && (vc->tunable_id = virConnectDomainEventRegisterAny(
                                    conn, NULL, VIR_DOMAIN_EVENT_ID_TUNABLE,
                                    VIR_DOMAIN_EVENT_CALLBACK(onTunable), vc, NULL)) < 0) {
        virErrorPtr err = virGetLastError();
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "cannot register tunable events on %s (%s): pins changed outside "
                         "vcpuplace are seen at the next resynchronisation only",
                         vc->uri, err && err->message ? err->message : "unknown error");
    }
    if (virConnectRegisterCloseCallback(conn, onClose, vc, NULL) < 0 && !vc->is_test)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE",
                         "cannot watch the libvirt connection for closing; relying on "
                         "failed calls to notice");
    vc->backoff_ms = VP_RECONNECT_MIN_MS;
    vc->failed_logged = FALSE;
    g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE", "connected to libvirt at %s (%s)",
                     vc->uri, type ? type : "?");
    if (vc->cb.connected)
        vc->cb.connected(vc, vc->data);
    return TRUE;
}

static gboolean
retryTimeout(gpointer data)
{
    vpVirConn *vc = data;
    vc->retry_id = 0;
    if (!tryConnect(vc))
        scheduleRetry(vc);
    return G_SOURCE_REMOVE;
}

static void
scheduleRetry(vpVirConn *vc)
{
    if (vc->retry_id)
        return;
    vc->retry_id = g_timeout_add(vc->backoff_ms, retryTimeout, vc);
    vc->backoff_ms = MIN(vc->backoff_ms * 2, VP_RECONNECT_MAX_MS);
}

vpVirConn *
vpVirConnNew(const char *uri, const vpVirConnCallbacks *cb, gpointer data)
{
    vpVirConn *vc = g_new0(vpVirConn, 1);
    vc->uri = g_strdup(uri);
    if (cb)
        vc->cb = *cb;
    vc->data = data;
    vc->lifecycle_id = -1;
    vc->tunable_id = -1;
    vc->backoff_ms = VP_RECONNECT_MIN_MS;
    return vc;
}

void
vpVirConnSetLock(vpVirConn *vc, GMutex *lock)
{
    vc->lock = lock;
}

void
vpVirConnStart(vpVirConn *vc)
{
    if (!vc->conn && !tryConnect(vc))
        scheduleRetry(vc);
}

void
vpVirConnFree(vpVirConn *vc)
{
    if (!vc)
        return;
    if (vc->retry_id)
        g_source_remove(vc->retry_id);
    if (vc->drop_id)
        g_source_remove(vc->drop_id);
    teardown(vc);
    g_free(vc->drop_reason);
    g_free(vc->uri);
    g_free(vc);
}

virConnectPtr
vpVirConnGet(vpVirConn *vc)
{
    return vc->drop_id ? NULL : vc->conn;
}

const char *
vpVirConnURI(const vpVirConn *vc)
{
    return vc->uri;
}

unsigned
vpVirConnLiveFlags(const vpVirConn *vc)
{
    return vc->is_test ? 0 : VIR_DOMAIN_AFFECT_LIVE;
}

gboolean
vpVirConnCheck(vpVirConn *vc)
{
    if (!vc->conn || vc->drop_id)
        return TRUE;
    if (virConnectIsAlive(vc->conn) == 1)
        return FALSE;
    drop(vc, "connection is dead");
    return TRUE;
}

void
vpVirConnPoke(vpVirConn *vc)
{
    if (!vc->retry_id)
        return;
    g_source_remove(vc->retry_id);
    vc->retry_id = 0;
    vc->backoff_ms = VP_RECONNECT_MIN_MS;
    scheduleRetry(vc);
}
