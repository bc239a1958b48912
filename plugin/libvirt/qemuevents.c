/*
 * QEMU monitor events through libvirt. libvirt passes every QMP event it reads on to
 * callbacks registered here, the event's data as JSON text; only VCPU_THREAD_CREATED is
 * asked for (the filter is exact, not a regex).
 */
#include "libvirt/qemuevents.h"
#include "core/model/error.h"

#include "core/codec/jsonparse.h"

#include <json-glib/json-glib.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>
#include <string.h>

/* QEMU's own bound on vCPUs is far below; anything above is not a vCPU. */
#define VP_MAX_CPU_INDEX 16383
#define VP_HOTPLUG_QOM_PREFIX "/machine/peripheral/vcpu"

struct _vpQemuEvents {
    virConnectPtr conn;
    int id;
    vpQemuVcpuFunc func;
    gpointer data;
};

void
vpVcpuThreadEventFree(vpVcpuThreadEvent *ev)
{
    if (!ev)
        return;
    g_free(ev->qom_path);
    g_free(ev);
}

static gboolean
getInt(JsonObject *o, const char *member, gint64 min, gint64 max, gint64 *out, GError **error)
{
    JsonNode *n = json_object_get_member(o, member);

    if (!n || json_node_get_value_type(n) != G_TYPE_INT64) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: member '%s' is %s, not a number",
                    VP_QEMU_VCPU_EVENT, member, n ? "of another type" : "missing");
        return FALSE;
    }
    *out = json_node_get_int(n);
    if (*out < min || *out > max) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s: member '%s' = %" G_GINT64_FORMAT " is not within %" G_GINT64_FORMAT
                    "..%" G_GINT64_FORMAT,
                    VP_QEMU_VCPU_EVENT, member, *out, min, max);
        return FALSE;
    }
    return TRUE;
}

/* "/machine/peripheral/vcpu12" -> 12; -1 for any other path. */
static int
vcpuOfQomPath(const char *path)
{
    const char *digits;
    guint64 n;

    if (!g_str_has_prefix(path, VP_HOTPLUG_QOM_PREFIX))
        return -1;
    digits = path + strlen(VP_HOTPLUG_QOM_PREFIX);
    if (!g_ascii_isdigit(*digits) ||
        !g_ascii_string_to_unsigned(digits, 10, 0, VP_MAX_CPU_INDEX, &n, NULL))
        return -1;
    return (int)n;
}

vpVcpuThreadEvent *
vpVcpuThreadEventParse(const char *details, GError **error)
{
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpVcpuThreadEvent) ev = g_new0(vpVcpuThreadEvent, 1);
    JsonNode *path;
    JsonObject *o;
    gint64 index, tid;

    if (!details) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: no data", VP_QEMU_VCPU_EVENT);
        return NULL;
    }
    if (!(root = vpJsonParse(details, -1, &err))) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: data is not JSON: %s",
                    VP_QEMU_VCPU_EVENT, err->message);
        return NULL;
    }
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: data is not a JSON object",
                    VP_QEMU_VCPU_EVENT);
        return NULL;
    }
    o = json_node_get_object(root);
    if (!getInt(o, "cpu-index", 0, VP_MAX_CPU_INDEX, &index, error) ||
        !getInt(o, "thread-id", 1, G_MAXINT32, &tid, error))
        return NULL;
    path = json_object_get_member(o, "qom-path");
    if (!path || json_node_get_value_type(path) != G_TYPE_STRING ||
        !g_utf8_validate(json_node_get_string(path), -1, NULL)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: member 'qom-path' is not a string",
                    VP_QEMU_VCPU_EVENT);
        return NULL;
    }
    ev->cpu_index = (int)index;
    ev->thread_id = (pid_t)tid;
    ev->qom_path = g_strdup(json_node_get_string(path));
    ev->vcpu = vcpuOfQomPath(ev->qom_path);
    if (ev->vcpu < 0)
        ev->vcpu = ev->cpu_index;
    return g_steal_pointer(&ev);
}

static void
onEvent(virConnectPtr conn, virDomainPtr dom, const char *event, long long seconds,
        unsigned int micros, const char *details, void *opaque)
{
    vpQemuEvents *qe = opaque;
    g_autoptr(GError) err = NULL;
    g_autoptr(vpVcpuThreadEvent) ev = NULL;

    if (g_strcmp0(event, VP_QEMU_VCPU_EVENT) != 0)
        return;
    ev = vpVcpuThreadEventParse(details, &err);
    if (!ev) {
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "VCPUPLACE_DOMAIN",
                         virDomainGetName(dom), "MESSAGE", "domain %s: ignoring %s",
                         virDomainGetName(dom), err->message);
        return;
    }
    qe->func(dom, ev, qe->data);
}

vpQemuEvents *
vpQemuEventsRegister(virConnectPtr conn, vpQemuVcpuFunc func, gpointer data, GError **error)
{
    vpQemuEvents *qe = g_new0(vpQemuEvents, 1);

    qe->func = func;
    qe->data = data;
    qe->id = virConnectDomainQemuMonitorEventRegister(conn, NULL, VP_QEMU_VCPU_EVENT, onEvent, qe,
                                                      NULL, 0);
    if (qe->id < 0) {
        virErrorPtr e = virGetLastError();

        g_set_error(error, VP_ERROR,
                    e && e->code == VIR_ERR_NO_SUPPORT ? VP_ERROR_UNSUPPORTED : VP_ERROR_SYSTEM,
                    "cannot listen for QEMU's %s events: %s", VP_QEMU_VCPU_EVENT,
                    e && e->message ? e->message : "unknown libvirt error");
        g_free(qe);
        return NULL;
    }
    virConnectRef(conn);
    qe->conn = conn;
    return qe;
}

void
vpQemuEventsFree(vpQemuEvents *qe)
{
    if (!qe)
        return;
    /* On a dead connection the remote call fails, but the callback, and with it libvirt's
     * own reference to conn, is dropped locally first. */
    if (virConnectDomainQemuMonitorEventDeregister(qe->conn, qe->id) < 0)
        virResetLastError();
    virConnectClose(qe->conn);
    g_free(qe);
}
