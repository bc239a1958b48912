/*
 * Hotplug watcher. libvirt updates its own view of a domain's vCPUs only when its setvcpus
 * job ends, while QEMU's event arrives during that job: the count an event implies is
 * therefore remembered until libvirt's count has caught up, so that a re-read in between
 * does not undo it. Pinning goes through the daemon's usual sync (virDomainPinVcpuFlags
 * waits for libvirt's job, so the pin lands after libvirt's own reset of the new thread).
 */
#include "daemon/hotplug.h"
#include "daemon/log.h"
#include "libvirt/domxml.h"
#include "libvirt/qemuevents.h"

#include <libvirt/virterror.h>
#include <string.h>

struct _vpHotplug {
    GMutex *lock;
    const vpConfig *cfg;
    vpManager *mgr;
    vpCookies *cookies;
    void (*resync)(const char *name, gpointer data);
    gpointer resync_data;
    virConnectPtr conn;
    vpQemuEvents *events;
    char *events_state; /* "listening", or why not */
    guint poll_id;
    guint poll_ms;
    GHashTable *counts;    /* name -> last vCPU count read from libvirt */
    GHashTable *announced; /* name -> vCPU count QEMU's events imply, until libvirt agrees */
};

static bool
wantsResize(vpManager *mgr, const char *name, unsigned nvcpus)
{
    const vpPlan *plan = vpManagerPlan(mgr, name);

    return plan && plan->how != VP_HOW_PINNED &&
           (plan->nvcpus != nvcpus || vpPlanUnplacedTail(plan) < plan->nvcpus) &&
           vpLedgerLookup(vpManagerLedger(mgr), name);
}

/* What the domain asks for (its cells, <numatune>, <vcpu cpuset>): the persistent definition
 * when there is one, as the sync reads it. NULL, logged, when unreadable: new vCPUs then
 * follow the memory the ledger records. */
static vpRequest *
readRequest(vpHotplug *h, virDomainPtr dom, const char *name)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *xml = NULL;

    g_mutex_unlock(h->lock);
    if (virDomainIsPersistent(dom) == 1)
        xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
    if (!xml)
        xml = virDomainGetXMLDesc(dom, 0);
    g_mutex_lock(h->lock);
    if (!xml) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "domain XML not read for its new vCPUs: %s",
                    virGetLastErrorMessage());
        return NULL;
    }
    vpRequest *req = vpDomXMLParse(xml, strlen(xml), vpManagerDefaults(h->mgr), &err);
    if (!req)
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "domain XML not read for its new vCPUs: %s",
                    err->message);
    return req;
}

static void
resize(vpHotplug *h, virDomainPtr dom, unsigned nvcpus, const char *why)
{
    vpManager *mgr = h->mgr;
    const char *name = virDomainGetName(dom);
    g_autoptr(GError) err = NULL;
    g_autoptr(vpRequest) req = NULL;

    if (!wantsResize(mgr, name, nvcpus))
        return;
    req = readRequest(h, dom, name);
    if (!wantsResize(mgr, name, nvcpus))
        return; /* settled while libvirt answered */
    const vpPlan *plan = vpManagerPlan(mgr, name);
    if (plan->nvcpus != nvcpus)
        vpLogDomain(G_LOG_LEVEL_INFO, name, "%u vCPUs now (%s), %u planned", nvcpus, why,
                    plan->nvcpus);
    if (!vpManagerResize(mgr, name, req, nvcpus, &err)) {
        vpLogDomain(G_LOG_LEVEL_WARNING, name, "cannot place its new vCPUs: %s", err->message);
        return;
    }
    if (vpManagerRecord(mgr, name)->state != VP_DOM_APPLYING)
        return; /* unplaced vCPUs that still find no room */
    h->resync(name, h->resync_data);
    vpCookiesKick(h->cookies);
}

static void
onVcpuThread(virDomainPtr dom, const vpVcpuThreadEvent *ev, gpointer data)
{
    vpHotplug *h = data;
    const char *name = virDomainGetName(dom);
    const vpPlan *plan;
    unsigned want;

    if (!vpConfigManages(h->cfg, name))
        return;
    vpLogDomain(G_LOG_LEVEL_INFO, name, "QEMU created vCPU %d (%s), thread %d", ev->vcpu,
                ev->qom_path, (int)ev->thread_id);
    plan = vpManagerPlan(h->mgr, name);
    want = MAX(plan ? plan->nvcpus : 0, (unsigned)ev->vcpu + 1);
    g_hash_table_insert(h->announced, g_strdup(name), GUINT_TO_POINTER(want));
    /* also for domains whose pins are their own: the new thread needs its cookie */
    vpCookiesKick(h->cookies);
    resize(h, dom, want, "QEMU's " VP_QEMU_VCPU_EVENT);
}

/* Re-reads the vCPU count of every running managed domain (libvirt's definition: no job,
 * no monitor command). */
static gboolean
pollTick(gpointer data)
{
    vpHotplug *h = data;
    virConnectPtr conn = h->conn;
    vpManager *mgr = h->mgr;
    virDomainPtr *doms = NULL;
    int n;

    if (h->cfg->vcpu_poll_ms != h->poll_ms) {
        /* a reload changed the period */
        h->poll_ms = h->cfg->vcpu_poll_ms;
        h->poll_id = h->poll_ms ? g_timeout_add(h->poll_ms, pollTick, h) : 0;
        return G_SOURCE_REMOVE;
    }
    if (!conn)
        return G_SOURCE_CONTINUE;
    g_mutex_unlock(h->lock);
    n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
    g_mutex_lock(h->lock);
    for (int i = 0; i < n; i++) {
        const char *name = virDomainGetName(doms[i]);
        const vpDomRecord *rec = vpManagerRecord(mgr, name);
        int count = 0;

        if (rec && rec->state != VP_DOM_RESERVED) {
            g_mutex_unlock(h->lock);
            count = virDomainGetVcpusFlags(doms[i], 0);
            g_mutex_lock(h->lock);
        }
        if (count > 0 && vpManagerRecord(mgr, name)) {
            guint was = GPOINTER_TO_UINT(g_hash_table_lookup(h->counts, name));
            guint announced = GPOINTER_TO_UINT(g_hash_table_lookup(h->announced, name));

            if (announced && (guint)count >= announced)
                g_hash_table_remove(h->announced, name);
            g_hash_table_insert(h->counts, g_strdup(name), GUINT_TO_POINTER(count));
            if ((guint)count != was && was)
                vpCookiesKick(h->cookies);
            resize(h, doms[i], MAX((guint)count, announced), "re-read from libvirt");
        }
        virDomainFree(doms[i]);
    }
    g_free(doms);
    /* forget domains that stopped */
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, h->counts);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        if (!vpManagerRecord(mgr, key))
            g_hash_table_iter_remove(&it);
    }
    return G_SOURCE_CONTINUE;
}

void
vpHotplugConnected(vpHotplug *h, virConnectPtr conn)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *was = g_steal_pointer(&h->events_state);
    guint poll_ms = h->cfg->vcpu_poll_ms;

    g_clear_pointer(&h->events, vpQemuEventsFree);
    h->conn = conn;
    if (h->poll_id)
        g_source_remove(h->poll_id);
    h->poll_id = 0;
    h->poll_ms = poll_ms;
    if (!conn) {
        h->events_state = g_steal_pointer(&was);
        return;
    }
    h->events = vpQemuEventsRegister(conn, onVcpuThread, h, &err);
    h->events_state = g_strdup(h->events ? "listening" : err->message);
    if (poll_ms)
        h->poll_id = g_timeout_add(poll_ms, pollTick, h);
    if (g_strcmp0(was, h->events_state) == 0)
        return;
    g_autofree char *poll = poll_ms ? g_strdup_printf("re-read every %u ms", poll_ms)
                                    : g_strdup("not re-read (vcpu_poll_ms=0)");
    if (h->events)
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE",
                         "hot-plugged vCPUs: placed when QEMU announces them (%s, QEMU with "
                         "qemu-patches/); vCPU counts %s for other QEMUs",
                         VP_QEMU_VCPU_EVENT, poll);
    else
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_INFO, "MESSAGE",
                         "hot-plugged vCPUs: no QEMU events here (%s); vCPU counts %s",
                         err->message, poll);
}

vpHotplug *
vpHotplugNew(GMutex *lock, const vpConfig *cfg, vpManager *mgr, vpCookies *cookies,
             void (*resync)(const char *name, gpointer data), gpointer resync_data)
{
    vpHotplug *h = g_new0(vpHotplug, 1);
    h->lock = lock;
    h->cfg = cfg;
    h->mgr = mgr;
    h->cookies = cookies;
    h->resync = resync;
    h->resync_data = resync_data;
    h->counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    h->announced = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return h;
}

void
vpHotplugSetConfig(vpHotplug *h, const vpConfig *cfg)
{
    h->cfg = cfg;
}

void
vpHotplugFree(vpHotplug *h)
{
    if (!h)
        return;
    vpQemuEventsFree(h->events);
    if (h->poll_id)
        g_source_remove(h->poll_id);
    g_hash_table_destroy(h->counts);
    g_hash_table_destroy(h->announced);
    g_free(h->events_state);
    g_free(h);
}

/* json_node_init_object() takes a reference of its own: ours goes. */
static JsonNode *
nodeTaking(JsonObject *o)
{
    JsonNode *node = json_node_init_object(json_node_alloc(), o);
    json_object_unref(o);
    return node;
}

JsonNode *
vpHotplugSummaryJson(const vpHotplug *h)
{
    JsonObject *o = json_object_new();
    if (h->events_state)
        json_object_set_string_member(o, "qemu_events", h->events_state);
    else
        json_object_set_null_member(o, "qemu_events");
    json_object_set_int_member(o, "poll_ms", h->poll_ms);
    return nodeTaking(o);
}
