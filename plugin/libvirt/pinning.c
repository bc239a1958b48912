/*
 * Plan -> virDomainPinVcpuFlags / PinEmulator / PinIOThread, and libvirt's live pins ->
 * core/model/livepins.h.
 * libvirt's cpumaps are byte arrays, one bit per host CPU; hwloc bitmaps hold the same
 * Linux numbers, so conversion is bit by bit.
 */
#include "libvirt/pinning.h"
#include "libvirt/connection.h"
#include "libvirt/domxml.h"

#include <libvirt/virterror.h>

static void
mapFill(hwloc_bitmap_t set, const unsigned char *map, int maplen)
{
    for (int cpu = 0; cpu < maplen * 8; cpu++) {
        if (VIR_CPU_USABLE(map, maplen, 0, cpu))
            hwloc_bitmap_set(set, cpu);
    }
}

static unsigned char *
setToMap(hwloc_const_bitmap_t set, int *maplen)
{
    int last = hwloc_bitmap_last(set);
    *maplen = VIR_CPU_MAPLEN(last < 0 ? 1 : last + 1);
    unsigned char *map = g_malloc0(*maplen);
    int cpu;
    hwloc_bitmap_foreach_begin(cpu, set)
    {
        VIR_USE_CPU(map, cpu);
    }
    hwloc_bitmap_foreach_end();
    return map;
}

/* Width of libvirt's cpumaps: the larger of the two counts libvirt gives, because the
 * test driver fixes virNodeGetCPUMap at 8 CPUs whatever its node file says. */
static int
hostCpus(virDomainPtr dom, GError **error)
{
    virConnectPtr conn = virDomainGetConnect(dom);
    int n = virNodeGetCPUMap(conn, NULL, NULL, 0);
    virNodeInfo info;
    if (virNodeGetInfo(conn, &info) == 0)
        n = MAX(n, (int)VIR_NODEINFO_MAXCPUS(info));
    if (n <= 0)
        vpVirSetError(error, "cannot count host CPUs");
    return n > 0 ? n : -1;
}

static gboolean
isNoSupport(void)
{
    virErrorPtr err = virGetLastError();
    return err && (err->code == VIR_ERR_NO_SUPPORT || err->code == VIR_ERR_ARGUMENT_UNSUPPORTED);
}

vpLivePins *
vpVirPinsRead(virDomainPtr dom, unsigned flags, GError **error)
{
    const char *name = virDomainGetName(dom);
    int ncpus = hostCpus(dom, error);
    if (ncpus < 0)
        return NULL;
    int nvcpus = virDomainGetVcpusFlags(dom, flags | VIR_DOMAIN_VCPU_MAXIMUM);
    if (nvcpus < 0)
        nvcpus = virDomainGetMaxVcpus(dom);
    if (nvcpus < 0) {
        vpVirSetError(error, "domain %s: cannot count vCPUs", name);
        return NULL;
    }
    int maplen = VIR_CPU_MAPLEN(ncpus);
    g_autofree unsigned char *maps = g_malloc0((gsize)maplen * MAX(nvcpus, 1));
    int got = virDomainGetVcpuPinInfo(dom, nvcpus, maps, maplen, flags);
    if (got < 0) {
        vpVirSetError(error, "domain %s: cannot read vCPU pins", name);
        return NULL;
    }

    g_autoptr(vpLivePins) pins = vpLivePinsNew(MIN(got, nvcpus));
    for (unsigned i = 0; i < pins->nvcpus; i++)
        mapFill(pins->vcpu[i], VIR_GET_CPUMAP(maps, maplen, i), maplen);

    g_autofree unsigned char *emap = g_malloc0(maplen);
    if (virDomainGetEmulatorPinInfo(dom, emap, maplen, flags) >= 0) {
        pins->emulator = hwloc_bitmap_alloc();
        mapFill(pins->emulator, emap, maplen);
    } else if (!isNoSupport()) {
        vpVirSetError(error, "domain %s: cannot read the emulator pin", name);
        return NULL;
    }
    return g_steal_pointer(&pins);
}

static gboolean
pinIOThreads(virDomainPtr dom, const unsigned char *map, int maplen, unsigned flags, GError **error)
{
    const char *name = virDomainGetName(dom);
    virDomainIOThreadInfoPtr *info = NULL;
    unsigned infoflags = flags & VIR_DOMAIN_AFFECT_CONFIG ? VIR_DOMAIN_AFFECT_CONFIG : flags;
    int n = virDomainGetIOThreadInfo(dom, &info, infoflags);
    if (n < 0) {
        if (isNoSupport())
            return TRUE;
        vpVirSetError(error, "domain %s: cannot list iothreads", name);
        return FALSE;
    }
    gboolean ok = TRUE;
    for (int i = 0; i < n; i++) {
        if (ok && virDomainPinIOThread(dom, info[i]->iothread_id, (unsigned char *)map, maplen,
                                       flags) < 0) {
            vpVirSetError(error, "domain %s: cannot pin iothread %u", name, info[i]->iothread_id);
            ok = FALSE;
        }
        virDomainIOThreadInfoFree(info[i]);
    }
    g_free(info);
    return ok;
}

gboolean
vpVirPinsApply(virDomainPtr dom, const vpPlan *plan, unsigned flags, GError **error)
{
    const char *name = virDomainGetName(dom);
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        g_autoptr(vpBitmap) set = vpPlanVcpuCpus(plan, i);
        if (!set)
            continue;
        int maplen;
        g_autofree unsigned char *map = setToMap(set, &maplen);
        if (virDomainPinVcpuFlags(dom, i, map, maplen, flags) < 0) {
            g_autofree char *list = vpCpuListFormat(set);
            vpVirSetError(error, "domain %s: cannot pin vCPU %u to CPUs %s", name, i, list);
            return FALSE;
        }
    }
    if (!plan->emulator || hwloc_bitmap_iszero(plan->emulator))
        return TRUE;

    int maplen;
    g_autofree unsigned char *map = setToMap(plan->emulator, &maplen);
    if (virDomainPinEmulator(dom, map, maplen, flags) < 0) {
        if (!isNoSupport()) {
            g_autofree char *list = vpCpuListFormat(plan->emulator);
            vpVirSetError(error, "domain %s: cannot pin the emulator to CPUs %s", name, list);
            return FALSE;
        }
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "VCPUPLACE_DOMAIN", name, "MESSAGE",
                         "domain %s: the driver cannot pin emulator threads", name);
    }
    return pinIOThreads(dom, map, maplen, flags, error);
}

gboolean
vpVirAppliedRecord(virDomainPtr dom, const vpPlan *plan, GBytes *key, unsigned flags,
                   GError **error)
{
    g_autofree char *xml = vpDomXMLFormatApplied(plan, key);

    if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, xml, VP_APPLIED_KEY, VP_APPLIED_NS,
                             flags) < 0) {
        vpVirSetError(error, "domain %s: cannot record the applied pins in its metadata",
                      virDomainGetName(dom));
        return FALSE;
    }
    return TRUE;
}

char *
vpVirDomainXML(virDomainPtr dom, GError **error)
{
    char *xml = virDomainGetXMLDesc(dom, 0);
    if (!xml)
        vpVirSetError(error, "domain %s: cannot read its XML", virDomainGetName(dom));
    return xml;
}
