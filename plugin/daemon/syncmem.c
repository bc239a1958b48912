/*
 * The sync's memory half (syncpriv.h). placement='auto' and a live <numatune> change are the
 * two ways libvirt decides where a running domain's memory is; the vCPUs and the memory must
 * end on the same nodes.
 */
#include "daemon/syncpriv.h"
#include "daemon/log.h"
#include "libvirt/domxml.h"
#include "libvirt/pinning.h"

#include <libvirt/virterror.h>
#include <string.h>

/* The nodes vcpuplace chose for a placement='auto' domain: where its plan holds memory, else
 * where its vCPUs are; NULL when neither is known. */
static hwloc_bitmap_t
chosenNodes(vpManager *mgr, const char *name)
{
    const vpPlan *plan = vpManagerPlan(mgr, name);
    hwloc_bitmap_t nodes;

    if (!plan || plan->how == VP_HOW_PINNED)
        return NULL;
    nodes = hwloc_bitmap_alloc();
    for (unsigned i = 0; i < plan->nmem; i++) {
        if (plan->mem[i].bytes)
            hwloc_bitmap_set(nodes, plan->mem[i].node);
    }
    if (hwloc_bitmap_iszero(nodes)) {
        hwloc_bitmap_free(nodes);
        nodes = vpPlanMemoryNodes(plan, vpManagerTopology(mgr));
    }
    if (nodes && hwloc_bitmap_iszero(nodes))
        g_clear_pointer(&nodes, hwloc_bitmap_free);
    return nodes;
}

/* libvirt's live memory binding, as `virsh numatune DOMAIN` shows it: with placement='auto'
 * the live XML names no nodeset (libvirt 9.0 keeps numad's advice in its private status
 * file), so this is the only place it can be read. FALSE when libvirt names no nodeset. */
static gboolean
liveBinding(vpJob *job, virDomainPtr dom, vpMemMode *mode, hwloc_bitmap_t *nodes)
{
    /* virDomainNumatuneMemMode's values, in order */
    static const vpMemMode modes[] = {VP_MEM_STRICT, VP_MEM_PREFERRED, VP_MEM_INTERLEAVE,
                                      VP_MEM_RESTRICTIVE};
    virTypedParameterPtr params = NULL;
    int nparams = 0, vmode = -1;
    const char *list = NULL;
    gboolean ok = FALSE;

    vpJobEnter(job);
    if (virDomainGetNumaParameters(dom, NULL, &nparams, VIR_DOMAIN_AFFECT_LIVE) == 0 &&
        nparams > 0) {
        params = g_new0(virTypedParameter, nparams);
        ok = virDomainGetNumaParameters(dom, params, &nparams, VIR_DOMAIN_AFFECT_LIVE) == 0;
    }
    ok = vpJobExit(job) && ok;
    ok = ok && virTypedParamsGetInt(params, nparams, VIR_DOMAIN_NUMA_MODE, &vmode) == 1 &&
         vmode >= 0 && vmode < (int)G_N_ELEMENTS(modes) &&
         virTypedParamsGetString(params, nparams, VIR_DOMAIN_NUMA_NODESET, &list) == 1 && list &&
         *list && (*nodes = vpCpuListParse(VIR_DOMAIN_NUMA_NODESET, list, NULL)) != NULL;
    if (ok)
        *mode = modes[vmode];
    if (params)
        virTypedParamsClear(params, nparams);
    g_free(params);
    return ok;
}

/* The live <numatune> nodeset set to want (`virsh numatune --live --nodeset`), so that the
 * memory follows the vCPUs; libvirt 9.0 allows it in restrictive mode only. live is updated
 * on success. */
static gboolean
moveMemory(vpJob *job, virDomainPtr dom, vpRequest *live, hwloc_bitmap_t want)
{
    virTypedParameterPtr params = NULL;
    int nparams = 0, maxparams = 0, rc;
    g_autofree char *list = vpCpuListFormat(want);
    g_autofree char *was = live->nodeset ? vpCpuListFormat(live->nodeset) : g_strdup("all");
    const char *name = vpJobName(job);

    if (virTypedParamsAddString(&params, &nparams, &maxparams, VIR_DOMAIN_NUMA_NODESET, list) < 0)
        return FALSE;
    vpJobEnter(job);
    rc = virDomainSetNumaParameters(dom, params, nparams, VIR_DOMAIN_AFFECT_LIVE);
    virTypedParamsFree(params, nparams);
    if (!vpJobExit(job))
        return FALSE;
    if (rc < 0) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name,
                    "placement='auto': memory stays on nodes %s, not moved to vcpuplace's %s: %s",
                    was, list, virGetLastErrorMessage());
        return FALSE;
    }
    vpLogDomain(G_LOG_LEVEL_INFO, name,
                "placement='auto': live <numatune> nodeset %s -> %s, where its vCPUs are", was,
                list);
    g_clear_pointer(&live->nodeset, hwloc_bitmap_free);
    live->nodeset = hwloc_bitmap_dup(want);
    return TRUE;
}

/* The vCPUs placed again inside the nodes libvirt binds the memory to (req is changed to
 * say so; live may be req); TRUE when the new plan awaits pinning. */
static gboolean
placeInside(vpManager *mgr, const char *name, vpRequest *req, const vpRequest *live,
            hwloc_const_bitmap_t was)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *bound = vpCpuListFormat(live->nodeset);
    g_autofree char *from = vpCpuListFormat(was);
    const char *mode = vpMemModeName(live->mem_mode);
    const char *what = req->placement_auto ? "placement='auto': " : "";
    hwloc_bitmap_t nodes = hwloc_bitmap_dup(live->nodeset);

    req->mem_mode = live->mem_mode == VP_MEM_PREFERRED ? VP_MEM_STRICT : live->mem_mode;
    g_clear_pointer(&req->nodeset, hwloc_bitmap_free);
    req->nodeset = nodes;
    /* numad may advise several nodes for a large domain: then it spans them */
    if (req->placement_auto)
        req->placement_auto = hwloc_bitmap_weight(nodes) == 1;
    if (!vpManagerReplace(mgr, name, req, &err)) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name,
                    "%svCPUs stay on nodes %s, away from their memory on nodes %s (%s, "
                    "libvirt's): %s",
                    what, from, bound, mode, err->message);
        return FALSE;
    }
    vpLogDomain(G_LOG_LEVEL_INFO, name,
                "%slibvirt binds its memory to nodes %s (%s); vCPUs placed again there, off "
                "nodes %s",
                what, bound, mode, from);
    return TRUE;
}

/*
 * placement='auto' leaves the memory's nodes to libvirt: numad's advice, asked for after the
 * last hook before the start (`prepare begin`, where vcpuplace chose its node) and bound
 * with mode strict unless the domain says otherwise. vCPUs and memory must end on the same
 * nodes. In restrictive mode the live nodeset follows vcpuplace's choice (cpuset.mems moves
 * base pages); in strict mode, libvirt's default, libvirt refuses that, so the vCPUs follow
 * the memory instead. live gains libvirt's binding, so that the ledger's memory follows it.
 * TRUE when the domain was placed anew and needs pinning.
 */
static gboolean
followAuto(vpManager *mgr, vpJob *job, virDomainPtr dom, vpRequest *live, vpRequest *req)
{
    const char *name = vpJobName(job);
    const vpPlan *plan = vpManagerPlan(mgr, name);
    g_autoptr(vpBitmap) want = chosenNodes(mgr, name);
    g_autoptr(vpBitmap) vcpus = NULL;
    g_autoptr(vpBitmap) bound = NULL;
    vpMemMode mode = VP_MEM_NONE;

    if (!want)
        return FALSE;
    vcpus = vpPlanMemoryNodes(plan, vpManagerTopology(mgr));
    if (liveBinding(job, dom, &mode, &bound)) {
        g_clear_pointer(&live->nodeset, hwloc_bitmap_free);
        live->nodeset = hwloc_bitmap_dup(bound);
        live->mem_mode = mode;
    }
    if (bound && hwloc_bitmap_isincluded(vcpus, bound)) {
        g_autofree char *list = vpCpuListFormat(bound);
        vpLogDomain(G_LOG_LEVEL_INFO, name,
                    "placement='auto': libvirt binds its memory to nodes %s (%s), where its "
                    "vCPUs are",
                    list, vpMemModeName(mode));
        return FALSE;
    }
    if (!vpJobCurrent(job) ||
        ((!bound || mode == VP_MEM_RESTRICTIVE) && moveMemory(job, dom, live, want)))
        return FALSE;
    return bound && vpJobCurrent(job) && placeInside(mgr, name, req, live, vcpus);
}

/* Whether the plan holds memory in huge pages, which stay where they are when the nodeset
 * changes live. */
static gboolean
holdsHugePages(const vpPlan *plan)
{
    for (unsigned i = 0; i < plan->nmem; i++) {
        if (plan->mem[i].page_size)
            return TRUE;
    }
    return plan->page_size != 0;
}

/* A live nodeset that binds the memory elsewhere (`virsh numatune --live --nodeset`, which
 * libvirt allows in restrictive mode, the base pages migrating with cpuset.mems): the vCPUs
 * follow it. Huge pages do not move, so the vCPUs of a domain on them stay with them; guest
 * cells keep to their own memnodes. TRUE when placed anew. */
static gboolean
followNodeset(vpManager *mgr, const char *name, const vpRequest *live, vpRequest *req)
{
    g_autoptr(vpBitmap) chosen = chosenNodes(mgr, name);
    g_autoptr(vpBitmap) vcpus = NULL;
    bool hard = live->mem_mode == VP_MEM_STRICT || live->mem_mode == VP_MEM_RESTRICTIVE ||
                live->mem_mode == VP_MEM_INTERLEAVE;

    if (!chosen || !hard || !live->nodeset || live->ncells || req->ncells ||
        holdsHugePages(vpManagerPlan(mgr, name)))
        return FALSE;
    vcpus = vpPlanMemoryNodes(vpManagerPlan(mgr, name), vpManagerTopology(mgr));
    if (hwloc_bitmap_iszero(vcpus) || hwloc_bitmap_isincluded(vcpus, live->nodeset))
        return FALSE;
    return placeInside(mgr, name, req, live, vcpus);
}

bool
vpSyncReconcileMemory(vpManager *mgr, vpJob *job, virDomainPtr dom, vpRequest *live, vpRequest *req)
{
    const char *name = vpJobName(job);
    gboolean replaced = FALSE;
    g_autoptr(vpRequest) read = NULL;
    g_autoptr(GError) err = NULL;

    if (!vpLedgerLookup(vpManagerLedger(mgr), name))
        return FALSE;
    if (!live) {
        vpJobEnter(job);
        g_autofree char *xml = vpVirDomainXML(dom, &err);
        if (!vpJobExit(job))
            return FALSE;
        if (xml)
            read = vpDomXMLParse(xml, strlen(xml), vpManagerDefaults(mgr), &err);
        if (!read) {
            vpLogDomain(G_LOG_LEVEL_WARNING, name, "memory not reconciled: %s", err->message);
            return FALSE;
        }
        live = read;
    }
    if (req->placement_auto)
        replaced = followAuto(mgr, job, dom, live, req);
    else
        replaced = followNodeset(mgr, name, live, req);
    if (!vpJobCurrent(job))
        return FALSE;
    vpManagerReconcileMemory(mgr, name, live);
    return replaced;
}
