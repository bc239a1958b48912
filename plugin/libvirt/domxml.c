/*
 * Domain XML -> vpRequest: the domain's own elements (name, uuid, <vcpu>, guest topology,
 * <cputune>, iothreads, <vcpus>, type and the policy metadata), with memory and NUMA read
 * by domxmlnuma.c. Only the elements placement needs are read; each is checked the way
 * libvirt checks it, so a document libvirt would refuse is refused here with the element,
 * attribute and value.
 */
#include "libvirt/domxmlpriv.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* What libvirt lets a domain be called, and what our ledger and messages can carry. */
static bool
vpDomXMLValidName(const char *name)
{
    const char *p;

    if (!*name || strlen(name) > VP_DOMXML_MAX_NAME)
        return false;
    for (p = name; *p; p++) {
        if (*p == '/' || g_ascii_iscntrl(*p))
            return false;
    }
    return true;
}

static gboolean
vpDomXMLParseName(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr node;
    g_autofree char *name = NULL;
    g_autofree char *shown = NULL;

    if (!vpDomXMLChild(root, "name", &node, error))
        return FALSE;
    if (!node) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain XML: <name> is missing");
        return FALSE;
    }
    name = vpDomXMLText(node);
    shown = vpDomXMLShow(name);
    if (!vpDomXMLValidName(name)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <name>%s</name> is not a domain name (1..%d bytes, no '/', no "
                    "control characters)",
                    shown, VP_DOMXML_MAX_NAME);
        return FALSE;
    }
    g_free(req->name);
    req->name = g_steal_pointer(&name);
    return TRUE;
}

/* libvirt accepts 32 hex digits with '-' anywhere between them; keep the canonical form. */
static gboolean
vpDomXMLParseUUID(xmlNodePtr root, vpRequest *req, GError **error)
{
    g_autoptr(GString) hex = g_string_new(NULL);
    g_autofree char *text = NULL;
    xmlNodePtr node;
    const char *p;

    if (!vpDomXMLChild(root, "uuid", &node, error))
        return FALSE;
    if (!node)
        return TRUE;
    text = vpDomXMLText(node);
    for (p = text; *p && hex->len <= 32; p++) {
        if (g_ascii_isxdigit(*p))
            g_string_append_c(hex, g_ascii_tolower(*p));
        else if (*p != '-' || hex->len == 0)
            break;
    }
    if (*p || hex->len != 32 || p[-1] == '-') {
        g_autofree char *shown = vpDomXMLShow(text);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <uuid>%s</uuid> is not a UUID (32 hex digits)", shown);
        return FALSE;
    }
    req->uuid = g_strdup_printf("%.8s-%.4s-%.4s-%.4s-%.12s", hex->str, hex->str + 8, hex->str + 12,
                                hex->str + 16, hex->str + 20);
    return TRUE;
}

/* <vcpu placement= cpuset= current=>N</vcpu>; *cpuset gets the set to place inside, if any. */
static gboolean
vpDomXMLParseVcpu(xmlNodePtr root, unsigned *max, unsigned *current, hwloc_bitmap_t *cpuset,
                  bool *placement_auto, GError **error)
{
    g_autofree char *placement = NULL;
    g_autofree char *mask = NULL;
    xmlNodePtr node;

    *max = *current = 1;
    *placement_auto = false;
    if (!vpDomXMLChild(root, "vcpu", &node, error))
        return FALSE;
    if (!node)
        return TRUE;
    if (!vpDomXMLTextNumber(node, 1, VP_DOMXML_MAX_VCPUS, max, error))
        return FALSE;
    *current = *max;
    if (!vpDomXMLAttrNumber(node, "current", 1, *max, current, error))
        return FALSE;
    placement = vpDomXMLAttr(node, "placement");
    if (placement && strcmp(placement, "static") != 0 && strcmp(placement, "auto") != 0) {
        g_autofree char *shown = vpDomXMLShow(placement);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <vcpu placement='%s'> is not one of static, auto", shown);
        return FALSE;
    }
    *placement_auto = g_strcmp0(placement, "auto") == 0;
    /* libvirt does not read cpuset beside placement='auto' (numad's advice replaces it),
     * so neither may we: it would confine the domain to CPUs libvirt no longer names. */
    mask = *placement_auto ? NULL : vpDomXMLAttr(node, "cpuset");
    if (mask && !(*cpuset = vpDomXMLCpuset("<vcpu>", mask, error)))
        return FALSE;
    return TRUE;
}

static gboolean
vpDomXMLParseTopology(xmlNodePtr root, vpRequest *req, GError **error)
{
    static const char *const required[] = {"sockets", "cores", "threads"};
    xmlNodePtr cpu, topo;
    guint64 product;
    size_t i;

    if (!vpDomXMLChild(root, "cpu", &cpu, error))
        return FALSE;
    if (!cpu)
        return TRUE;
    if (!vpDomXMLChild(cpu, "topology", &topo, error))
        return FALSE;
    if (!topo)
        return TRUE;
    for (i = 0; i < G_N_ELEMENTS(required); i++) {
        if (!xmlHasProp(topo, (const xmlChar *)required[i])) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <topology> lacks the %s attribute", required[i]);
            return FALSE;
        }
    }
    req->dies = req->clusters = 1;
    if (!vpDomXMLAttrNumber(topo, "sockets", 1, VP_DOMXML_MAX_VCPUS, &req->sockets, error) ||
        !vpDomXMLAttrNumber(topo, "dies", 1, VP_DOMXML_MAX_VCPUS, &req->dies, error) ||
        !vpDomXMLAttrNumber(topo, "clusters", 1, VP_DOMXML_MAX_VCPUS, &req->clusters, error) ||
        !vpDomXMLAttrNumber(topo, "cores", 1, VP_DOMXML_MAX_VCPUS, &req->cores, error) ||
        !vpDomXMLAttrNumber(topo, "threads", 1, VP_DOMXML_MAX_VCPUS, &req->threads, error))
        return FALSE;
    product = (guint64)req->sockets * req->dies * req->clusters * req->cores * req->threads;
    if (product != req->max_vcpus) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <topology> sockets=%u dies=%u clusters=%u cores=%u threads=%u "
                    "gives %" G_GUINT64_FORMAT " vCPUs, but <vcpu> is %u",
                    req->sockets, req->dies, req->clusters, req->cores, req->threads, product,
                    req->max_vcpus);
        return FALSE;
    }
    return TRUE;
}

/* <vcpusched vcpus='0-1' scheduler='fifo' priority='1'>: fifo and rr vCPUs are real-time,
 * and an emulator sharing their CPU would starve behind them. */
static gboolean
vpDomXMLParseVcpusched(xmlNodePtr node, vpRequest *req, GError **error)
{
    static const char *const scheds[] = {"batch", "idle", "fifo", "rr", "other"};
    g_autofree char *sched = vpDomXMLAttr(node, "scheduler");
    g_autofree char *ids = vpDomXMLAttr(node, "vcpus");
    g_autoptr(vpBitmap) set = NULL;
    bool known = false;

    for (gsize i = 0; i < G_N_ELEMENTS(scheds); i++)
        known |= g_strcmp0(sched, scheds[i]) == 0;
    if (!known) {
        g_autofree char *shown = vpDomXMLShow(sched ? sched : "");

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <vcpusched scheduler='%s'> is not one of batch, idle, fifo, rr, "
                    "other",
                    shown);
        return FALSE;
    }
    if (!ids) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <vcpusched> lacks the vcpus attribute");
        return FALSE;
    }
    if (!(set = vpDomXMLSet("<vcpusched>", "vcpus", "vCPU", ids, error)))
        return FALSE;
    if (hwloc_bitmap_last(set) >= (int)req->max_vcpus) {
        g_autofree char *shown = vpDomXMLShow(ids);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <vcpusched vcpus='%s'> names vCPUs beyond <vcpu> %u", shown,
                    req->max_vcpus);
        return FALSE;
    }
    if (strcmp(sched, "fifo") != 0 && strcmp(sched, "rr") != 0)
        return TRUE;
    if (!req->realtime)
        req->realtime = hwloc_bitmap_alloc();
    hwloc_bitmap_or(req->realtime, req->realtime, set);
    return TRUE;
}

/* <iothreadpin iothread='1' cpuset='2-3'>: the domain's own; their CPUs are held. */
static gboolean
vpDomXMLParseIOThreadPin(xmlNodePtr node, vpRequest *req, GError **error)
{
    g_autofree char *mask = vpDomXMLAttr(node, "cpuset");
    g_autoptr(vpBitmap) set = NULL;
    unsigned id = 0;

    if (!xmlHasProp(node, (const xmlChar *)"iothread")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <iothreadpin> lacks the iothread attribute");
        return FALSE;
    }
    if (!vpDomXMLAttrNumber(node, "iothread", 1, G_MAXUINT32, &id, error))
        return FALSE;
    if (!mask) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <iothreadpin iothread='%u'> lacks the cpuset attribute", id);
        return FALSE;
    }
    {
        g_autofree char *where = g_strdup_printf("<iothreadpin iothread='%u'>", id);

        if (!(set = vpDomXMLCpuset(where, mask, error)))
            return FALSE;
    }
    if (!req->iothread_pin)
        req->iothread_pin = hwloc_bitmap_alloc();
    hwloc_bitmap_or(req->iothread_pin, req->iothread_pin, set);
    return TRUE;
}

static gboolean
vpDomXMLParseCputune(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr tune, node;

    if (!vpDomXMLChild(root, "cputune", &tune, error))
        return FALSE;
    if (!tune)
        return TRUE;
    for (node = tune->children; node; node = node->next) {
        g_autofree char *mask = NULL;
        g_autofree char *where = NULL;
        unsigned vcpu = 0;

        if (vpDomXMLIs(node, "vcpusched")) {
            if (!vpDomXMLParseVcpusched(node, req, error))
                return FALSE;
            continue;
        }
        if (vpDomXMLIs(node, "iothreadpin")) {
            if (!vpDomXMLParseIOThreadPin(node, req, error))
                return FALSE;
            continue;
        }
        if (vpDomXMLIs(node, "vcpupin")) {
            if (!xmlHasProp(node, (const xmlChar *)"vcpu")) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "domain XML: <vcpupin> lacks the vcpu attribute");
                return FALSE;
            }
            if (!vpDomXMLAttrNumber(node, "vcpu", 0, req->max_vcpus - 1, &vcpu, error))
                return FALSE;
            if (req->pins[vcpu]) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "domain XML: <vcpupin vcpu='%u'> appears twice", vcpu);
                return FALSE;
            }
            where = g_strdup_printf("<vcpupin vcpu='%u'>", vcpu);
        } else if (vpDomXMLIs(node, "emulatorpin")) {
            if (req->emulator_pin) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "domain XML: <emulatorpin> appears twice");
                return FALSE;
            }
            where = g_strdup("<emulatorpin>");
        } else {
            continue;
        }
        if (!(mask = vpDomXMLAttr(node, "cpuset"))) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: %s lacks the cpuset attribute", where);
            return FALSE;
        }
        if (vpDomXMLIs(node, "vcpupin")) {
            if (!(req->pins[vcpu] = vpDomXMLCpuset(where, mask, error)))
                return FALSE;
            req->has_pins = true;
        } else if (!(req->emulator_pin = vpDomXMLCpuset(where, mask, error))) {
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
vpDomXMLParseIOThreads(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr node;

    if (!vpDomXMLChild(root, "iothreads", &node, error))
        return FALSE;
    if (!node)
        return TRUE;
    return vpDomXMLTextNumber(node, 0, VP_DOMXML_MAX_VCPUS, &req->iothreads, error);
}

#define VP_NOVA_NS_PREFIX "http://openstack.org/xmlns/libvirt/nova/"
#define VP_KUBEVIRT_NS "http://kubevirt.io"

static xmlNodePtr
vpDomXMLChildNS(xmlNodePtr parent, const char *name, const char *ns_prefix)
{
    for (xmlNodePtr n = parent ? parent->children : NULL; n; n = n->next) {
        if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0 && n->ns &&
            n->ns->href && g_str_has_prefix((const char *)n->ns->href, ns_prefix))
            return n;
    }
    return NULL;
}

/* The cloud's tenant as a trust group (see vpTenancy), NULL when the domain shows none:
 * Nova's project UUID, or the namespace KubeVirt puts before '_' in its domain names
 * ("default" without one, as KubeVirt reads them back). */
static char *
vpDomXMLTenantGroup(xmlNodePtr meta, const char *name, vpTenancy tenancy)
{
    if (tenancy == VP_TENANCY_NOVA || tenancy == VP_TENANCY_AUTO) {
        xmlNodePtr inst = vpDomXMLChildNS(meta, "instance", VP_NOVA_NS_PREFIX);
        xmlNodePtr owner = vpDomXMLChildNS(inst, "owner", VP_NOVA_NS_PREFIX);
        xmlNodePtr project = vpDomXMLChildNS(owner, "project", VP_NOVA_NS_PREFIX);
        g_autofree char *uuid = project ? vpDomXMLAttr(project, "uuid") : NULL;
        if (uuid && vpPolicyValidGroup(uuid))
            return g_steal_pointer(&uuid);
    }
    if ((tenancy == VP_TENANCY_KUBEVIRT || tenancy == VP_TENANCY_AUTO) &&
        vpDomXMLChildNS(meta, "kubevirt", VP_KUBEVIRT_NS)) {
        const char *sep = strchr(name, '_');
        g_autofree char *ns = sep ? g_strndup(name, sep - name) : g_strdup("default");
        if (vpPolicyValidGroup(ns))
            return g_steal_pointer(&ns);
    }
    return NULL;
}

static gboolean
vpDomXMLParseMetadata(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr meta, node, found = NULL;

    if (!vpDomXMLChild(root, "metadata", &meta, error))
        return FALSE;
    if (!meta)
        return TRUE;
    for (node = meta->children; node; node = node->next) {
        const char *href = node->type == XML_ELEMENT_NODE && node->ns && node->ns->href
                               ? (const char *)node->ns->href
                               : NULL;
        /* A typo in our namespace or element name would otherwise leave the domain on the
         * defaults without a word. */
        if (href && strcmp(href, VP_XML_NS) == 0 && !vpDomXMLIsPolicy(node)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: unknown element <%s> in namespace %s (the only one is <%s>)",
                        node->name, VP_XML_NS, VP_XML_ELEMENT);
            return FALSE;
        }
        if (href && strcmp((const char *)node->name, VP_XML_ELEMENT) == 0 &&
            strcmp(href, VP_XML_NS) != 0) {
            g_autofree char *folded = g_ascii_strdown(href, -1);
            if (strstr(folded, "vcpuplace")) {
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "domain XML: <%s> in namespace '%s' is not vcpuplace's policy "
                            "(namespace %s)",
                            node->name, href, VP_XML_NS);
                return FALSE;
            }
        }
        if (!vpDomXMLIsPolicy(node))
            continue;
        if (found) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <metadata> holds two policy elements of %s", VP_XML_NS);
            return FALSE;
        }
        found = node;
    }
    if (found) {
        req->has_policy = true;
        if (!vpDomXMLApplyPolicy(found, &req->policy, error))
            return FALSE;
    }
    if (!req->policy.group && req->policy.tenancy != VP_TENANCY_OFF)
        req->policy.group = vpDomXMLTenantGroup(meta, req->name, req->policy.tenancy);
    return TRUE;
}

/* <vcpus><vcpu id='0' enabled='yes' hotpluggable='no' order='1'/>...</vcpus>: which vCPU ids
 * are online at start. As in libvirt, these states are the master: <vcpu current> is then
 * not read (libvirt writes it back as the number enabled), ids not listed are offline, and
 * a <vcpus> without any <vcpu> leaves current in charge. */
static gboolean
vpDomXMLParseVcpus(xmlNodePtr root, vpRequest *req, GError **error)
{
    g_autoptr(vpBitmap) online = hwloc_bitmap_alloc();
    g_autoptr(vpBitmap) seen = hwloc_bitmap_alloc();
    xmlNodePtr list, node;

    if (!vpDomXMLChild(root, "vcpus", &list, error))
        return FALSE;
    if (!list)
        return TRUE;
    for (node = list->children; node; node = node->next) {
        g_autofree char *enabled = NULL;
        unsigned id = 0;

        if (!vpDomXMLIs(node, "vcpu"))
            continue;
        if (!xmlHasProp(node, (const xmlChar *)"id")) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <vcpus><vcpu> lacks the id attribute");
            return FALSE;
        }
        if (!vpDomXMLAttrNumber(node, "id", 0, req->max_vcpus - 1, &id, error))
            return FALSE;
        if (hwloc_bitmap_isset(seen, id)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <vcpus><vcpu id='%u'> appears twice", id);
            return FALSE;
        }
        hwloc_bitmap_set(seen, id);
        enabled = vpDomXMLAttr(node, "enabled");
        if (!enabled || (strcmp(enabled, "yes") != 0 && strcmp(enabled, "no") != 0)) {
            g_autofree char *shown = vpDomXMLShow(enabled ? enabled : "");

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <vcpus><vcpu id='%u' enabled='%s'> is not yes or no", id,
                        shown);
            return FALSE;
        }
        if (strcmp(enabled, "yes") == 0)
            hwloc_bitmap_set(online, id);
    }
    if (hwloc_bitmap_iszero(seen))
        return TRUE;
    if (hwloc_bitmap_iszero(online)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <vcpus> has no <vcpu enabled='yes'>: a domain needs one vCPU "
                    "online");
        return FALSE;
    }
    req->vcpus = hwloc_bitmap_weight(online);
    req->online = g_steal_pointer(&online);
    return TRUE;
}

/* <domain type='kvm'>: the driver. Kept as written ("" when absent, which no driver
 * accepts); the placer leaves non-QEMU ones alone. */
static gboolean
vpDomXMLParseType(xmlNodePtr root, vpRequest *req, GError **error)
{
    g_autofree char *type = vpDomXMLAttr(root, "type");

    if (!type) {
        req->type = g_strdup("");
        return TRUE;
    }
    if (!*type || strlen(type) > 32) {
        g_autofree char *shown = vpDomXMLShow(type);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <domain type='%s'> is not a driver name", shown);
        return FALSE;
    }
    req->type = g_steal_pointer(&type);
    return TRUE;
}

static vpRequest *
vpDomXMLBuild(xmlNodePtr root, const vpPolicy *defaults, GError **error)
{
    g_autoptr(vpRequest) req = NULL;
    g_autoptr(vpBitmap) cpuset = NULL;
    unsigned max, current;
    bool placement_auto;

    if (!vpDomXMLIs(root, "domain")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: the root element is <%s%s%s>, not <domain>",
                    root->ns && root->ns->prefix ? (const char *)root->ns->prefix : "",
                    root->ns && root->ns->prefix ? ":" : "", root->name);
        return NULL;
    }
    if (!vpDomXMLParseVcpu(root, &max, &current, &cpuset, &placement_auto, error))
        return NULL;

    /* pins has an entry per possible vCPU, hotpluggable ones included. */
    req = vpRequestNew(NULL, max);
    req->vcpus = current;
    if (defaults)
        vpPolicyCopy(&req->policy, defaults);

    req->placement_auto = placement_auto;
    /* <vcpu cpuset> is where the domain may run (Nova writes cpu_shared_set there), not a
     * pin: the policy is applied inside it. <vcpupin> still pins its vCPU. */
    req->cpuset = g_steal_pointer(&cpuset);
    if (!vpDomXMLParseType(root, req, error) || !vpDomXMLParseName(root, req, error) ||
        !vpDomXMLParseUUID(root, req, error))
        return NULL;
    /* Another driver's domain is left alone, so the rest is not read: the rules below are
     * QEMU's (libvirt's bhyve driver, say, checks the guest topology its own way), and a
     * refusal by them would hide the one thing to say, that vcpuplace does not place it. */
    if (!vpRequestIsQemu(req))
        return g_steal_pointer(&req);
    if (!vpDomXMLParseTopology(root, req, error) || !vpDomXMLParseCputune(root, req, error) ||
        !vpDomXMLParseIOThreads(root, req, error) || !vpDomXMLParseVcpus(root, req, error) ||
        !vpDomXMLParseMemory(root, req, error) || !vpDomXMLParseCells(root, req, error) ||
        !vpDomXMLParseHugepages(root, req, error) || !vpDomXMLParseNumatune(root, req, error) ||
        !vpDomXMLParseMetadata(root, req, error))
        return NULL;
    return g_steal_pointer(&req);
}

gboolean
vpDomXMLIsQemu(const char *xml, gsize len)
{
    g_autoptr(xmlDoc) doc = vpDomXMLRead("domain XML", xml, len, NULL);
    g_autoptr(vpRequest) req = vpRequestNew(NULL, 1);

    if (!doc || !vpDomXMLIs(xmlDocGetRootElement(doc), "domain") ||
        !vpDomXMLParseType(xmlDocGetRootElement(doc), req, NULL))
        return TRUE;
    return vpRequestIsQemu(req);
}

vpRequest *
vpDomXMLParse(const char *xml, gsize len, const vpPolicy *defaults, GError **error)
{
    g_autoptr(xmlDoc) doc = vpDomXMLRead("domain XML", xml, len, error);

    if (!doc)
        return NULL;
    return vpDomXMLBuild(xmlDocGetRootElement(doc), defaults, error);
}

vpRequest *
vpDomXMLParseFile(const char *path, const vpPolicy *defaults, GError **error)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    g_autoptr(GError) local = NULL;
    vpRequest *req;
    guint8 chunk[65536];
    int fd;

    /* Read with a bound rather than g_file_get_contents(): the path may be a pipe or a
     * device that never ends. */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "%s: %s", path, g_strerror(errno));
        return NULL;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;

            close(fd);
            g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "%s: %s", path, g_strerror(err));
            return NULL;
        }
        if (n == 0)
            break;
        g_byte_array_append(buf, chunk, n);
        if (buf->len > VP_DOMXML_MAX_BYTES) {
            close(fd);
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "%s: more than the %d bytes accepted for domain XML", path,
                        VP_DOMXML_MAX_BYTES);
            return NULL;
        }
    }
    close(fd);
    if (!(req = vpDomXMLParse((const char *)buf->data, buf->len, defaults, &local))) {
        g_set_error(error, VP_ERROR, local->code, "%s: %s", path, local->message);
        return NULL;
    }
    return req;
}
