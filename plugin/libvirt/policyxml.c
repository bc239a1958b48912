/*
 * The vcpuplace policy element (read from the domain's metadata or alone, as `virsh
 * metadata` hands it back, and written for virDomainSetMetadata), and the record of what
 * vcpuplaced pinned, by which `restore begin` and `migrate begin` tell its pins from the
 * domain's own.
 */
#include "libvirt/domxmlpriv.h"

#include <string.h>

bool
vpDomXMLIsPolicy(const xmlNode *node)
{
    return node->type == XML_ELEMENT_NODE && node->ns && node->ns->href &&
           strcmp((const char *)node->ns->href, VP_XML_NS) == 0 &&
           strcmp((const char *)node->name, VP_XML_ELEMENT) == 0;
}

/* The policy says everything in its attributes: a child element, or text other than the
 * white space of an indented document, is a near miss (`<policy>isolate</policy>`). */
static gboolean
policyEmpty(xmlNodePtr node, GError **error)
{
    for (xmlNodePtr child = node->children; child; child = child->next) {
        if (child->type == XML_ELEMENT_NODE) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "policy element: unexpected child element <%s>", child->name);
            return FALSE;
        }
        if (child->type != XML_TEXT_NODE && child->type != XML_CDATA_SECTION_NODE)
            continue;
        const char *text = child->content ? (const char *)child->content : "";
        if (text[strspn(text, " \t\r\n")]) {
            g_autofree char *shown = vpDomXMLShow(text);
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "policy element: unexpected text '%s' (the policy is in its "
                        "attributes)",
                        shown);
            return FALSE;
        }
    }
    return TRUE;
}

/* Applies the policy element's attributes over *policy; unknown attributes, attributes in
 * a namespace, child elements and text are errors (a typo must not pass for a default). */
gboolean
vpDomXMLApplyPolicy(xmlNodePtr node, vpPolicy *policy, GError **error)
{
    g_autoptr(GError) local = NULL;
    vpPolicy parsed = {0};
    xmlAttrPtr attr;

    if (!policyEmpty(node, error))
        return FALSE;
    vpPolicyCopy(&parsed, policy);
    for (attr = node->properties; attr; attr = attr->next) {
        xmlChar *raw = xmlNodeListGetString(node->doc, attr->children, 1);
        g_autofree char *value = g_strdup(raw ? (const char *)raw : "");

        xmlFree(raw);
        if (attr->ns) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "policy element: attribute %s:%s must not have a namespace",
                        attr->ns->prefix ? (const char *)attr->ns->prefix : "", attr->name);
            vpPolicyClear(&parsed);
            return FALSE;
        }
        if (!vpPolicySetAttr(&parsed, (const char *)attr->name, value, &local)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "policy element: %s", local->message);
            vpPolicyClear(&parsed);
            return FALSE;
        }
    }
    vpPolicyClear(policy);
    *policy = parsed;
    return TRUE;
}

/* virDomainGetMetadata (and so `virsh metadata`) hands the element back with its
 * namespace stripped; the caller asked for it by our URI, so no namespace means ours. */
gboolean
vpDomXMLParsePolicy(const char *xml, gsize len, vpPolicy *policy, GError **error)
{
    g_autoptr(xmlDoc) doc = vpDomXMLRead("policy XML", xml, len, error);
    xmlNodePtr root;

    if (!doc)
        return FALSE;
    root = xmlDocGetRootElement(doc);
    if (!vpDomXMLIsPolicy(root) && !vpDomXMLIs(root, VP_XML_ELEMENT)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "policy XML: the root element is <%s> in namespace '%s', not <%s> in '%s' "
                    "(or in none)",
                    root->name, root->ns && root->ns->href ? (const char *)root->ns->href : "",
                    VP_XML_ELEMENT, VP_XML_NS);
        return FALSE;
    }
    return vpDomXMLApplyPolicy(root, policy, error);
}

/* Without a namespace: virDomainSetMetadata puts the element into the URI it is given,
 * and libvirt 9.0 fails ("failed to create a new XML namespace") on an element that
 * already declares one. */
char *
vpDomXMLFormatPolicy(const vpPolicy *policy)
{
    g_autoptr(xmlDoc) doc = xmlNewDoc((const xmlChar *)"1.0");
    xmlNodePtr node = xmlNewDocNode(doc, NULL, (const xmlChar *)VP_XML_ELEMENT, NULL);
    xmlBufferPtr buf = xmlBufferCreate();
    char *ret;

    xmlDocSetRootElement(doc, node);
    xmlSetProp(node, (const xmlChar *)"smt", (const xmlChar *)vpSmtName(policy->smt));
    if (policy->group)
        xmlSetProp(node, (const xmlChar *)"group", (const xmlChar *)policy->group);
    xmlSetProp(node, (const xmlChar *)"coresched",
               (const xmlChar *)vpCoreschedName(policy->coresched));
    xmlSetProp(node, (const xmlChar *)"locality",
               (const xmlChar *)vpLocalityName(policy->locality));
    xmlSetProp(node, (const xmlChar *)"emulator",
               (const xmlChar *)vpEmulatorName(policy->emulator));
    xmlSetProp(node, (const xmlChar *)"rebalance",
               (const xmlChar *)vpRebalanceName(policy->rebalance));
    xmlSetProp(node, (const xmlChar *)"unmet", (const xmlChar *)vpUnmetName(policy->unmet));
    if (policy->cpus == VP_CPUS_SHARED) {
        g_autofree char *ratio = vpRatioFormat(policy->ratio);

        xmlSetProp(node, (const xmlChar *)"cpus", (const xmlChar *)vpCpusName(policy->cpus));
        xmlSetProp(node, (const xmlChar *)"ratio", (const xmlChar *)ratio);
    }
    xmlNodeDump(buf, doc, node, 0, 0);
    ret = g_strdup((const char *)xmlBufferContent(buf));
    xmlBufferFree(buf);
    return ret;
}

/* HMAC-SHA256 of what a record says, for the domain it names: a tenant can write an
 * <applied> element in its own metadata, but not this without the key. */
static char *
appliedSignature(GBytes *key, const char *name, const char *vcpus, const char *emulator)
{
    g_autofree char *said = g_strdup_printf("%s\n%s\n%s", name, vcpus, emulator ? emulator : "");
    gsize klen = 0;
    const guchar *k = g_bytes_get_data(key, &klen);
    return g_compute_hmac_for_string(G_CHECKSUM_SHA256, k, klen, said, -1);
}

/* A comparison whose time does not tell how much of a forged signature is right. */
static gboolean
signatureEqual(const char *a, const char *b)
{
    gsize n = strlen(a);
    guchar diff = n != strlen(b);
    for (gsize i = 0; i < n && i < strlen(b); i++)
        diff |= (guchar)(a[i] ^ b[i]);
    return diff == 0;
}

char *
vpDomXMLFormatApplied(const vpPlan *plan, GBytes *key)
{
    g_autoptr(xmlDoc) doc = xmlNewDoc((const xmlChar *)"1.0");
    xmlNodePtr node = xmlNewDocNode(doc, NULL, (const xmlChar *)"applied", NULL);
    g_autoptr(GString) vcpus = g_string_new(NULL);
    xmlBufferPtr buf = xmlBufferCreate();
    char *ret;

    xmlDocSetRootElement(doc, node);
    for (unsigned i = 0; i < plan->nvcpus; i++) {
        if (i)
            g_string_append_c(vcpus, ',');
        if (plan->vcpu_pu[i] < 0)
            g_string_append_c(vcpus, '-');
        else
            g_string_append_printf(vcpus, "%d", plan->vcpu_pu[i]);
    }
    xmlSetProp(node, (const xmlChar *)"vcpus", (const xmlChar *)vcpus->str);
    g_autofree char *list = NULL;
    if (plan->emulator && !hwloc_bitmap_iszero(plan->emulator)) {
        list = vpCpuListFormat(plan->emulator);
        xmlSetProp(node, (const xmlChar *)"emulator", (const xmlChar *)list);
    }
    g_autofree char *sig = appliedSignature(key, plan->domain, vcpus->str, list);
    xmlSetProp(node, (const xmlChar *)"sig", (const xmlChar *)sig);
    xmlNodeDump(buf, doc, node, 0, 0);
    ret = g_strdup((const char *)xmlBufferContent(buf));
    xmlBufferFree(buf);
    return ret;
}

typedef struct {
    GArray *vcpus;           /* int: the CPU of each vCPU, -1 when unpinned */
    hwloc_bitmap_t emulator; /* NULL when the emulator was not pinned */
} vpApplied;

static void
vpAppliedClear(vpApplied *a)
{
    g_clear_pointer(&a->vcpus, g_array_unref);
    g_clear_pointer(&a->emulator, hwloc_bitmap_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vpApplied, vpAppliedClear)

static xmlNodePtr
vpDomXMLFindApplied(xmlNodePtr root)
{
    for (xmlNodePtr meta = root->children; meta; meta = meta->next) {
        if (!vpDomXMLIs(meta, "metadata"))
            continue;
        for (xmlNodePtr node = meta->children; node; node = node->next) {
            if (node->type == XML_ELEMENT_NODE && node->ns && node->ns->href &&
                strcmp((const char *)node->ns->href, VP_APPLIED_NS) == 0 &&
                strcmp((const char *)node->name, "applied") == 0)
                return node;
        }
    }
    return NULL;
}

static gboolean
vpDomXMLParseApplied(xmlNodePtr node, vpApplied *a, GError **error)
{
    g_autofree char *vcpus = vpDomXMLAttr(node, "vcpus");
    g_autofree char *emulator = vpDomXMLAttr(node, "emulator");
    g_auto(GStrv) items = NULL;

    if (!vcpus || !*vcpus || strlen(vcpus) > 8 * VP_DOMXML_MAX_VCPUS) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: vcpuplace's <applied> record has no usable vcpus attribute");
        return FALSE;
    }
    items = g_strsplit(vcpus, ",", VP_DOMXML_MAX_VCPUS + 1);
    a->vcpus = g_array_new(FALSE, FALSE, sizeof(int));
    for (guint i = 0; items[i]; i++) {
        unsigned cpu;
        int v = -1;

        if (i == VP_DOMXML_MAX_VCPUS ||
            (strcmp(items[i], "-") != 0 && !vpDomXMLNumber(items[i], 0, VP_DOMXML_MAX_CPU, &cpu))) {
            g_autofree char *shown = vpDomXMLShow(items[i]);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: vcpuplace's <applied vcpus=...> item %u '%s' is neither a "
                        "CPU of 0..%d nor '-'",
                        i, shown, VP_DOMXML_MAX_CPU);
            return FALSE;
        }
        if (strcmp(items[i], "-") != 0)
            v = (int)cpu;
        g_array_append_val(a->vcpus, v);
    }
    if (emulator &&
        !(a->emulator = vpDomXMLCpuset("vcpuplace's <applied emulator=...>", emulator, error)))
        return FALSE;
    return TRUE;
}

/* Whether record is one vcpuplaced wrote for the domain named in root. */
static gboolean
vpDomXMLAppliedSigned(xmlNodePtr root, xmlNodePtr record, GBytes *key)
{
    g_autofree char *vcpus = vpDomXMLAttr(record, "vcpus");
    g_autofree char *emulator = vpDomXMLAttr(record, "emulator");
    g_autofree char *sig = vpDomXMLAttr(record, "sig");
    g_autofree char *name = NULL;
    xmlNodePtr node;

    for (node = root->children; node && !vpDomXMLIs(node, "name"); node = node->next)
        ;
    if (node) {
        xmlChar *text = xmlNodeGetContent(node);
        name = g_strdup((const char *)text);
        xmlFree(text);
    }
    if (!sig || !name || !vcpus)
        return FALSE;
    g_autofree char *want = appliedSignature(key, name, vcpus, emulator);
    return signatureEqual(sig, want);
}

/* Whether a <cputune> pin is one the record names; FALSE on anything else. */
static gboolean
vpDomXMLPinApplied(xmlNodePtr pin, const vpApplied *a)
{
    g_autofree char *mask = vpDomXMLAttr(pin, "cpuset");
    g_autoptr(vpBitmap) set = mask ? vpDomXMLCpuset("", mask, NULL) : NULL;
    unsigned vcpu;
    int cpu;

    if (!set)
        return FALSE;
    if (vpDomXMLIs(pin, "emulatorpin") || vpDomXMLIs(pin, "iothreadpin"))
        return a->emulator && hwloc_bitmap_isequal(set, a->emulator);
    if (!vpDomXMLIs(pin, "vcpupin") || !xmlHasProp(pin, (const xmlChar *)"vcpu") ||
        !vpDomXMLAttrNumber(pin, "vcpu", 0, a->vcpus->len - 1, &vcpu, NULL))
        return FALSE;
    cpu = g_array_index(a->vcpus, int, vcpu);
    if (cpu >= 0)
        return hwloc_bitmap_weight(set) == 1 && hwloc_bitmap_isset(set, cpu);
    /* a vCPU vcpuplace could not place floats over its domain's placed vCPUs' CPUs */
    g_autoptr(vpBitmap) own = hwloc_bitmap_alloc();
    for (guint i = 0; i < a->vcpus->len; i++) {
        if (g_array_index(a->vcpus, int, i) >= 0)
            hwloc_bitmap_set(own, g_array_index(a->vcpus, int, i));
    }
    return !hwloc_bitmap_iszero(own) && hwloc_bitmap_isequal(set, own);
}

static gboolean
vpDomXMLIsPin(const xmlNode *node)
{
    return vpDomXMLIs(node, "vcpupin") || vpDomXMLIs(node, "emulatorpin") ||
           vpDomXMLIs(node, "iothreadpin");
}

char *
vpDomXMLStripApplied(const char *xml, gsize len, GBytes *key, GError **error)
{
    g_autoptr(xmlDoc) doc = vpDomXMLRead("domain XML", xml, len, error);
    g_auto(vpApplied) applied = {NULL, NULL};
    xmlNodePtr root, record, tune, node, next;
    xmlBufferPtr buf;
    char *ret;

    if (!doc)
        return NULL;
    root = xmlDocGetRootElement(doc);
    if (!vpDomXMLIs(root, "domain")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain XML: the root element is <%s>",
                    root->name);
        return NULL;
    }
    if (!(record = vpDomXMLFindApplied(root)))
        return NULL;
    if (!vpDomXMLParseApplied(record, &applied, error) ||
        !vpDomXMLChild(root, "cputune", &tune, error) || !vpDomXMLAppliedSigned(root, record, key))
        return NULL;
    for (node = tune ? tune->children : NULL; node; node = node->next) {
        if (vpDomXMLIsPin(node) && !vpDomXMLPinApplied(node, &applied))
            return NULL;
    }
    for (node = tune ? tune->children : NULL; node; node = next) {
        next = node->next;
        if (vpDomXMLIsPin(node)) {
            xmlUnlinkNode(node);
            xmlFreeNode(node);
        }
    }
    if (tune && !xmlFirstElementChild(tune)) {
        xmlUnlinkNode(tune);
        xmlFreeNode(tune);
    }
    xmlUnlinkNode(record);
    xmlFreeNode(record);
    buf = xmlBufferCreate();
    xmlNodeDump(buf, doc, root, 0, 0);
    ret = g_strdup((const char *)xmlBufferContent(buf));
    xmlBufferFree(buf);
    return ret;
}
