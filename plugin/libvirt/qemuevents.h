/*
 * VCPU_THREAD_CREATED, the QMP event of qemu-patches/ (a vCPU thread exists: cpu index,
 * QOM path, thread id), received through libvirt's QEMU monitor event API
 * (virConnectDomainQemuMonitorEventRegister, libvirt-qemu). Registering does not taint
 * domains (only monitor commands do) and needs a read-write connection. A stock QEMU never
 * sends the event and libvirt 9.0 emits no event of its own for `setvcpus --live`, so the
 * caller keeps re-reading vCPU counts as well; drivers without the API (the test driver)
 * refuse the registration with VIR_ERR_NO_SUPPORT.
 */
#pragma once

#include <glib.h>
#include <libvirt/libvirt.h>
#include <sys/types.h>

#define VP_QEMU_VCPU_EVENT "VCPU_THREAD_CREATED"

typedef struct {
    int cpu_index;
    char *qom_path;
    pid_t thread_id;
    /* libvirt's vCPU id: libvirt names a hot-plugged vCPU vcpuN, so QOM path
     * /machine/peripheral/vcpuN is vCPU N; otherwise QEMU's cpu index. */
    int vcpu;
} vpVcpuThreadEvent;

/* The event's data as libvirt hands it over (JSON text); errors name the member. */
vpVcpuThreadEvent *vpVcpuThreadEventParse(const char *details, GError **error);
void vpVcpuThreadEventFree(vpVcpuThreadEvent *ev);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpVcpuThreadEvent, vpVcpuThreadEventFree)

/* dom is borrowed. A malformed event is logged and dropped, not delivered. */
typedef void (*vpQemuVcpuFunc)(virDomainPtr dom, const vpVcpuThreadEvent *ev, gpointer data);

typedef struct _vpQemuEvents vpQemuEvents;

/* Listens on conn for the event of every domain; holds a reference to conn. NULL with
 * VP_ERROR_UNSUPPORTED when the driver has no QEMU monitor events. */
vpQemuEvents *vpQemuEventsRegister(virConnectPtr conn, vpQemuVcpuFunc func, gpointer data,
                                   GError **error);
/* Stops listening and drops the reference; works on a connection that has died. */
void vpQemuEventsFree(vpQemuEvents *qe);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vpQemuEvents, vpQemuEventsFree)
