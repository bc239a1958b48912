/*
 * Domain XML -> vpRequest.
 *
 * The XML comes from the hook's stdin, from libvirt, or from a file an operator names, and
 * is treated as hostile. A domain document never needs a DTD, so any DOCTYPE is refused
 * as soon as the parser meets it, before an internal subset could declare an entity, and
 * the parser runs without entity substitution, DTD loading or network access. Only the
 * elements placement needs are read; each is checked the way libvirt checks it, so a
 * document libvirt would refuse is refused here with the element, attribute and value.
 */
#include "libvirt/domxml.h"

#include "core/topology.h"

#include <errno.h>
#include <fcntl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <string.h>
#include <unistd.h>

#define VP_DOMXML_MAX_VCPUS 4096
/* libvirt's VIR_DOMAIN_CPUMASK_LEN: a cpuset naming a higher CPU is refused there too. */
#define VP_DOMXML_MAX_CPU 16383
#define VP_DOMXML_MAX_NAME 1024
/* Values quoted in messages are cut here: the document may be megabytes of one attribute. */
#define VP_DOMXML_MAX_SHOWN 64

G_DEFINE_AUTOPTR_CLEANUP_FUNC(xmlDoc, xmlFreeDoc)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(xmlParserCtxt, xmlFreeParserCtxt)

/* A value fit for an error message: cut short, control characters replaced. */
static char *
vpDomXMLShow(const char *value)
{
    GString *s = g_string_new(NULL);
    const char *p;

    for (p = value; *p && s->len < VP_DOMXML_MAX_SHOWN; p++)
        g_string_append_c(s, g_ascii_iscntrl(*p) ? '?' : *p);
    if (*p)
        g_string_append(s, "...");
    return g_string_free(s, FALSE);
}

typedef struct {
    bool doctype;
} vpDomXMLState;

/* SAX hooks for everything a DTD can bring: each stops the parse on the spot. */
static void
vpDomXMLRefuse(void *ctx)
{
    xmlParserCtxtPtr ctxt = ctx;
    vpDomXMLState *state = ctxt->_private;

    state->doctype = true;
    xmlStopParser(ctxt);
}

static void
vpDomXMLOnSubset(void *ctx, const xmlChar *name, const xmlChar *external_id,
                 const xmlChar *system_id)
{
    vpDomXMLRefuse(ctx);
}

static void
vpDomXMLOnEntityDecl(void *ctx, const xmlChar *name, int type, const xmlChar *public_id,
                     const xmlChar *system_id, xmlChar *content)
{
    vpDomXMLRefuse(ctx);
}

static xmlParserInputPtr
vpDomXMLOnResolveEntity(void *ctx, const xmlChar *public_id, const xmlChar *system_id)
{
    vpDomXMLRefuse(ctx);
    return NULL;
}

/* Where the construct opened at xml[i] ends (after close), or len when it does not. */
static gsize
vpDomXMLSkipTo(const char *xml, gsize len, gsize i, const char *close, guint *line)
{
    gsize n = strlen(close);
    for (; i + n <= len; i++) {
        if (xml[i] == '\n')
            (*line)++;
        else if (memcmp(xml + i, close, n) == 0)
            return i + n;
    }
    return len;
}

typedef struct {
    const char *what;
    guint line, nodes, attrs, refs;
} vpDomXMLCount;

/* Counts one more of something bounded by max; FALSE with the error past it. */
static gboolean
vpDomXMLCountOne(vpDomXMLCount *c, guint *count, int max, const char *things, GError **error)
{
    if (++*count <= (guint)max)
        return TRUE;
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: line %u: more than %d %s", c->what, c->line,
                max, things);
    return FALSE;
}

#define VP_DOMXML_REFS "character and entity references"

/* The inside of a start tag from xml[*i] (after its '<') to its '>': attributes are the
 * '=' outside quoted values. */
static gboolean
vpDomXMLScanTag(vpDomXMLCount *c, const char *xml, gsize len, gsize *i, GError **error)
{
    gsize start = *i;
    guint attrs = 0, at = c->line;
    char quote = 0;
    for (; *i < len && (quote || xml[*i] != '>'); (*i)++) {
        char ch = xml[*i];
        if (ch == '\n')
            c->line++;
        if (ch == '&' && !vpDomXMLCountOne(c, &c->refs, VP_DOMXML_MAX_REFS, VP_DOMXML_REFS, error))
            return FALSE;
        if (quote) {
            if (ch == quote)
                quote = 0;
        } else if (ch == '"' || ch == '\'') {
            quote = ch;
        } else if (ch == '=') {
            if (++attrs > VP_DOMXML_MAX_ATTRS) {
                gsize n = 0;
                while (start + n < *i && !strchr(" \t\r\n/>", xml[start + n]))
                    n++;
                g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                            "%s: line %u: element <%.*s> has more than %d attributes", c->what, at,
                            (int)MIN(n, 40), xml + start, VP_DOMXML_MAX_ATTRS);
                return FALSE;
            }
            if (!vpDomXMLCountOne(c, &c->attrs, VP_DOMXML_MAX_ALL_ATTRS, "attributes in all",
                                  error))
                return FALSE;
        }
    }
    return TRUE;
}

/* Counts nodes, attributes (per element and in all) and character or entity references
 * lexically, and refuses a document past the VP_DOMXML_MAX_* bounds before libxml2 sees
 * it. Malformed markup is left for libxml2 to report. */
static gboolean
vpDomXMLPrescan(const char *what, const char *xml, gsize len, GError **error)
{
    vpDomXMLCount c = {.what = what, .line = 1};
    for (gsize i = 0; i < len;) {
        char ch = xml[i];
        if (ch == '\n')
            c.line++;
        if (ch == '&' && !vpDomXMLCountOne(&c, &c.refs, VP_DOMXML_MAX_REFS, VP_DOMXML_REFS, error))
            return FALSE;
        if (ch != '<') {
            i++;
            continue;
        }
        if (len - i >= 2 && xml[i + 1] == '/') {
            i = vpDomXMLSkipTo(xml, len, i + 2, ">", &c.line);
            continue;
        }
        if (!vpDomXMLCountOne(&c, &c.nodes, VP_DOMXML_MAX_NODES,
                              "elements, comments and other nodes", error))
            return FALSE;
        if (len - i >= 4 && memcmp(xml + i, "<!--", 4) == 0)
            i = vpDomXMLSkipTo(xml, len, i + 4, "-->", &c.line);
        else if (len - i >= 9 && memcmp(xml + i, "<![CDATA[", 9) == 0)
            i = vpDomXMLSkipTo(xml, len, i + 9, "]]>", &c.line);
        else if (len - i >= 2 && xml[i + 1] == '?')
            i = vpDomXMLSkipTo(xml, len, i + 2, "?>", &c.line);
        else if (i++, !vpDomXMLScanTag(&c, xml, len, &i, error))
            return FALSE;
    }
    return TRUE;
}

/* Parses a whole document; what names it in messages ("domain XML", "policy XML"). */
static xmlDocPtr
vpDomXMLRead(const char *what, const char *xml, gsize len, GError **error)
{
    g_autoptr(xmlParserCtxt) ctxt = NULL;
    g_autoptr(xmlDoc) doc = NULL;
    vpDomXMLState state = {false};
    const xmlError *err;

    if (len > VP_DOMXML_MAX_BYTES) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "%s: %" G_GSIZE_FORMAT " bytes is more than the %d accepted", what, len,
                    VP_DOMXML_MAX_BYTES);
        return NULL;
    }
    if (!vpDomXMLPrescan(what, xml, len, error))
        return NULL;
    if (!(ctxt = xmlNewParserCtxt())) {
        g_set_error(error, VP_ERROR, VP_ERROR_SYSTEM, "%s: cannot create an XML parser", what);
        return NULL;
    }
    ctxt->_private = &state;
    ctxt->sax->internalSubset = vpDomXMLOnSubset;
    ctxt->sax->externalSubset = vpDomXMLOnSubset;
    ctxt->sax->entityDecl = vpDomXMLOnEntityDecl;
    ctxt->sax->resolveEntity = vpDomXMLOnResolveEntity;

    /* No XML_PARSE_NOENT, DTDLOAD, DTDATTR or HUGE: libxml2's default limits apply. */
    doc = xmlCtxtReadMemory(ctxt, xml, (int)len, NULL, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_NOCDATA);
    if (state.doctype || (doc && (doc->intSubset || doc->extSubset))) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: DOCTYPE is not accepted", what);
        return NULL;
    }
    if (!doc || !ctxt->wellFormed) {
        g_autofree char *msg = NULL;

        err = xmlCtxtGetLastError(ctxt);
        msg = g_strstrip(g_strdup(err && err->message ? err->message : "not well-formed"));
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: line %d: %s", what, err ? err->line : 0,
                    msg);
        return NULL;
    }
    if (!xmlDocGetRootElement(doc)) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "%s: no root element", what);
        return NULL;
    }
    return g_steal_pointer(&doc);
}

static bool
vpDomXMLIs(const xmlNode *node, const char *name)
{
    return node->type == XML_ELEMENT_NODE && !node->ns &&
           strcmp((const char *)node->name, name) == 0;
}

/* The one child element called name (no namespace), NULL when absent; twice is an error. */
static gboolean
vpDomXMLChild(xmlNodePtr parent, const char *name, xmlNodePtr *out, GError **error)
{
    xmlNodePtr child;

    *out = NULL;
    for (child = parent->children; child; child = child->next) {
        if (!vpDomXMLIs(child, name))
            continue;
        if (*out) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain XML: <%s> appears twice", name);
            return FALSE;
        }
        *out = child;
    }
    return TRUE;
}

static char *
vpDomXMLAttr(xmlNodePtr node, const char *name)
{
    xmlChar *v = xmlGetNoNsProp(node, (const xmlChar *)name);
    char *ret = g_strdup((const char *)v);

    xmlFree(v);
    return ret;
}

static char *
vpDomXMLText(xmlNodePtr node)
{
    xmlChar *v = xmlNodeGetContent(node);
    char *ret = g_strdup(v ? (const char *)v : "");

    xmlFree(v);
    return g_strstrip(ret);
}

static gboolean
vpDomXMLNumber(const char *text, unsigned min, unsigned max, unsigned *out)
{
    guint64 v;

    /* libvirt allows blanks around numbers; g_ascii_string_to_unsigned does not. */
    g_autofree char *copy = g_strstrip(g_strdup(text));

    if (!g_ascii_string_to_unsigned(copy, 10, min, max, &v, NULL))
        return FALSE;
    *out = v;
    return TRUE;
}

/* Optional numeric attribute: *out untouched when absent. */
static gboolean
vpDomXMLAttrNumber(xmlNodePtr node, const char *attr, unsigned min, unsigned max, unsigned *out,
                   GError **error)
{
    g_autofree char *value = vpDomXMLAttr(node, attr);

    if (!value || vpDomXMLNumber(value, min, max, out))
        return TRUE;
    {
        g_autofree char *shown = vpDomXMLShow(value);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <%s %s='%s'> is not a whole number in %u..%u", node->name, attr,
                    shown, min, max);
    }
    return FALSE;
}

static gboolean
vpDomXMLTextNumber(xmlNodePtr node, unsigned min, unsigned max, unsigned *out, GError **error)
{
    g_autofree char *text = vpDomXMLText(node);
    g_autofree char *shown = NULL;

    if (vpDomXMLNumber(text, min, max, out))
        return TRUE;
    shown = vpDomXMLShow(text);
    g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                "domain XML: <%s>%s</%s> is not a whole number in %u..%u", node->name, shown,
                node->name, min, max);
    return FALSE;
}

static bool
vpDomXMLCpusetNumber(const char **p, unsigned *out)
{
    guint64 v = 0;

    if (!g_ascii_isdigit(**p))
        return false;
    for (; g_ascii_isdigit(**p); (*p)++) {
        v = v * 10 + (**p - '0');
        if (v > VP_DOMXML_MAX_CPU)
            return false;
    }
    *out = v;
    return true;
}

static hwloc_bitmap_t
vpDomXMLBadSet(const char *where, const char *attr, const char *noun, const char *text,
               GError **error)
{
    g_autofree char *shown = vpDomXMLShow(text);

    g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                "domain XML: %s %s='%s' is not a %s set of 0..%d (e.g. 0-7,^3)", where, attr, shown,
                noun, VP_DOMXML_MAX_CPU);
    return NULL;
}

/* libvirt's cpuset syntax: "N", "N-M" and "^N" items, comma separated, applied in order,
 * blanks allowed around items ("0-7,^3" is 0-2,4-7). The result must not be empty. */
static hwloc_bitmap_t
vpDomXMLSet(const char *where, const char *attr, const char *noun, const char *text, GError **error)
{
    g_autoptr(vpBitmap) set = hwloc_bitmap_alloc();
    const char *p = text;

    while (g_ascii_isspace(*p))
        p++;
    if (!*p)
        goto bad;
    while (*p) {
        bool neg = false;
        unsigned start, end;

        if (*p == '^') {
            neg = true;
            p++;
        }
        if (!vpDomXMLCpusetNumber(&p, &start))
            goto bad;
        while (g_ascii_isspace(*p))
            p++;
        if (*p == '-') {
            if (neg)
                goto bad;
            p++;
            while (g_ascii_isspace(*p))
                p++;
            if (!vpDomXMLCpusetNumber(&p, &end) || end < start)
                goto bad;
            hwloc_bitmap_set_range(set, start, end);
            while (g_ascii_isspace(*p))
                p++;
        } else if (neg) {
            hwloc_bitmap_clr(set, start);
        } else {
            hwloc_bitmap_set(set, start);
        }
        if (*p == ',') {
            p++;
            while (g_ascii_isspace(*p))
                p++;
        } else if (*p) {
            goto bad;
        }
    }
    if (hwloc_bitmap_iszero(set)) {
        g_autofree char *shown = vpDomXMLShow(text);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain XML: %s %s='%s' selects no %s",
                    where, attr, shown, noun);
        return NULL;
    }
    return g_steal_pointer(&set);

bad:
    return vpDomXMLBadSet(where, attr, noun, text, error);
}

static hwloc_bitmap_t
vpDomXMLCpuset(const char *where, const char *text, GError **error)
{
    return vpDomXMLSet(where, "cpuset", "CPU", text, error);
}

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
    mask = vpDomXMLAttr(node, "cpuset");
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

static bool
vpDomXMLIsPolicy(const xmlNode *node)
{
    return node->type == XML_ELEMENT_NODE && node->ns && node->ns->href &&
           strcmp((const char *)node->ns->href, VP_XML_NS) == 0 &&
           strcmp((const char *)node->name, VP_XML_ELEMENT) == 0;
}

/* Applies the policy element's attributes over *policy; unknown attributes, attributes in
 * a namespace and child elements are errors (a typo must not pass for a default). */
static gboolean
vpDomXMLApplyPolicy(xmlNodePtr node, vpPolicy *policy, GError **error)
{
    g_autoptr(GError) local = NULL;
    vpPolicy parsed = {0};
    xmlAttrPtr attr;
    xmlNodePtr child;

    for (child = node->children; child; child = child->next) {
        if (child->type == XML_ELEMENT_NODE) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "policy element: unexpected child element <%s>", child->name);
            return FALSE;
        }
    }
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

/* A memory element or attribute in libvirt's units, KiB when no unit is given. */
static gboolean
vpDomXMLMemory(const char *where, const char *value, const char *unit, guint64 *bytes,
               GError **error)
{
    g_autofree char *field = g_strdup_printf("domain XML: %s", where);
    g_autofree char *shown = vpDomXMLShow(value ? value : "");
    g_autofree char *ushown = unit ? vpDomXMLShow(unit) : NULL;

    if (!vpMemoryScale(field, shown, ushown, "KiB", bytes, error))
        return FALSE;
    return TRUE;
}

static gboolean
vpDomXMLElementMemory(xmlNodePtr node, guint64 *bytes, GError **error)
{
    g_autofree char *text = vpDomXMLText(node);
    g_autofree char *unit = vpDomXMLAttr(node, "unit");
    g_autofree char *where = g_strdup_printf("<%s>", node->name);

    return vpDomXMLMemory(where, text, unit, bytes, error);
}

/* <currentMemory> is what the guest has at start (balloon); <memory> its maximum. */
static gboolean
vpDomXMLParseMemory(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr max, cur;
    guint64 bytes = 0;

    if (!vpDomXMLChild(root, "memory", &max, error) ||
        !vpDomXMLChild(root, "currentMemory", &cur, error))
        return FALSE;
    if (max && !vpDomXMLElementMemory(max, &req->memory, error))
        return FALSE;
    if (cur) {
        if (!vpDomXMLElementMemory(cur, &bytes, error))
            return FALSE;
        if (!max || bytes < req->memory)
            req->memory = bytes;
    }
    return TRUE;
}

/* One <page size unit nodeset>: its size in bytes, a power of two; *cells its nodeset (guest
 * cell ids), NULL when it has none. */
static gboolean
vpDomXMLParsePage(xmlNodePtr page, guint64 *bytes, hwloc_bitmap_t *cells, GError **error)
{
    g_autofree char *size = vpDomXMLAttr(page, "size");
    g_autofree char *unit = vpDomXMLAttr(page, "unit");
    g_autofree char *nodes = vpDomXMLAttr(page, "nodeset");

    *cells = NULL;
    if (!size) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <page> lacks the size attribute");
        return FALSE;
    }
    if (!vpDomXMLMemory("<page size>", size, unit, bytes, error))
        return FALSE;
    if (*bytes == 0 || (*bytes & (*bytes - 1))) {
        g_autofree char *shown = vpDomXMLShow(size);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <page size='%s'> is not a power of two bytes", shown);
        return FALSE;
    }
    return !nodes || (*cells = vpDomXMLSet("<page>", "nodeset", "guest cell", nodes, error));
}

/* The cells a <page nodeset> names get its size; a domain without guest cells is cell 0.
 * named: the cells earlier <page> elements took. */
static gboolean
vpDomXMLPageCells(xmlNodePtr page, vpRequest *req, hwloc_const_bitmap_t cells, guint64 bytes,
                  hwloc_bitmap_t named, GError **error)
{
    g_autofree char *text = vpDomXMLAttr(page, "nodeset");
    g_autofree char *shown = vpDomXMLShow(text);
    int id;

    hwloc_bitmap_foreach_begin(id, cells)
    {
        vpCell *cell = NULL;

        for (unsigned c = 0; c < req->ncells; c++) {
            if (req->cells[c].id == (unsigned)id)
                cell = &req->cells[c];
        }
        if ((!cell && (req->ncells || id != 0)) || hwloc_bitmap_isset(named, id)) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <page nodeset='%s'> names guest cell %d, %s", shown, id,
                        hwloc_bitmap_isset(named, id) ? "which another <page> names too"
                                                      : "which the domain lacks");
            return FALSE;
        }
        hwloc_bitmap_set(named, id);
        if (cell)
            cell->page_size = bytes;
        else
            req->hugepage_size = bytes;
    }
    hwloc_bitmap_foreach_end();
    return TRUE;
}

/* <memoryBacking><hugepages><page size='1' unit='G' nodeset='0'/></hugepages>: the <page>
 * without nodeset (libvirt's default huge page size, 2 MiB on x86, when there is none) backs
 * the domain; one with a nodeset backs those guest cells, each from its host node's pool of
 * that size. */
static gboolean
vpDomXMLParseHugepages(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr backing, huge, page;
    g_autoptr(vpBitmap) named = hwloc_bitmap_alloc();
    guint64 fallback = 0;

    if (!vpDomXMLChild(root, "memoryBacking", &backing, error))
        return FALSE;
    if (!backing)
        return TRUE;
    if (!vpDomXMLChild(backing, "hugepages", &huge, error))
        return FALSE;
    if (!huge)
        return TRUE;
    for (page = huge->children; page; page = page->next) {
        g_autoptr(vpBitmap) cells = NULL;
        guint64 bytes;

        if (!vpDomXMLIs(page, "page"))
            continue;
        if (!vpDomXMLParsePage(page, &bytes, &cells, error))
            return FALSE;
        if (cells && !vpDomXMLPageCells(page, req, cells, bytes, named, error))
            return FALSE;
        if (!cells && fallback) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <hugepages> has two <page> elements without nodeset");
            return FALSE;
        }
        if (!cells)
            fallback = bytes;
    }
    /* without guest cells a <page nodeset='0'> is the domain's, before the fallback */
    if (!req->hugepage_size)
        req->hugepage_size = fallback ? fallback : 2ULL << 20;
    return TRUE;
}

static gboolean
vpDomXMLMemMode(xmlNodePtr node, vpMemMode *mode, GError **error)
{
    g_autofree char *value = vpDomXMLAttr(node, "mode");
    int m;

    if (!value) {
        *mode = VP_MEM_STRICT;
        return TRUE;
    }
    if ((m = vpMemModeFromName(value)) < 0) {
        g_autofree char *shown = vpDomXMLShow(value);

        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <%s mode='%s'> is not one of strict, restrictive, preferred, "
                    "interleave",
                    node->name, shown);
        return FALSE;
    }
    *mode = m;
    return TRUE;
}

static gboolean
vpDomXMLParseMemnode(xmlNodePtr node, vpRequest *req, GError **error)
{
    g_autofree char *nodes = vpDomXMLAttr(node, "nodeset");
    unsigned cellid = 0;
    vpCell *cell = NULL;
    g_autofree char *where = NULL;

    if (!xmlHasProp(node, (const xmlChar *)"cellid")) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <memnode> lacks the cellid attribute");
        return FALSE;
    }
    if (!vpDomXMLAttrNumber(node, "cellid", 0, VP_DOMXML_MAX_VCPUS, &cellid, error))
        return FALSE;
    for (unsigned i = 0; i < req->ncells; i++) {
        if (req->cells[i].id == cellid)
            cell = &req->cells[i];
    }
    if (!cell) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <memnode cellid='%u'> names no guest NUMA <cell>", cellid);
        return FALSE;
    }
    if (cell->mode != VP_MEM_NONE) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <memnode cellid='%u'> appears twice", cellid);
        return FALSE;
    }
    if (!vpDomXMLMemMode(node, &cell->mode, error))
        return FALSE;
    if (!nodes) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <memnode cellid='%u'> lacks the nodeset attribute", cellid);
        return FALSE;
    }
    where = g_strdup_printf("<memnode cellid='%u'>", cellid);
    return (cell->nodeset = vpDomXMLSet(where, "nodeset", "node", nodes, error)) != NULL;
}

/* <numatune><memory mode nodeset placement/><memnode .../></numatune> */
static gboolean
vpDomXMLParseNumatune(xmlNodePtr root, vpRequest *req, GError **error)
{
    xmlNodePtr tune, mem, node;

    if (!vpDomXMLChild(root, "numatune", &tune, error))
        return FALSE;
    if (!tune)
        return TRUE;
    if (!vpDomXMLChild(tune, "memory", &mem, error))
        return FALSE;
    if (mem) {
        g_autofree char *nodes = vpDomXMLAttr(mem, "nodeset");
        g_autofree char *placement = vpDomXMLAttr(mem, "placement");

        if (!vpDomXMLMemMode(mem, &req->mem_mode, error))
            return FALSE;
        if (placement && strcmp(placement, "static") != 0 && strcmp(placement, "auto") != 0) {
            g_autofree char *shown = vpDomXMLShow(placement);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <numatune><memory placement='%s'> is not one of static, "
                        "auto",
                        shown);
            return FALSE;
        }
        if (g_strcmp0(placement, "auto") == 0)
            req->placement_auto = true;
        if (nodes &&
            !(req->nodeset = vpDomXMLSet("<numatune><memory>", "nodeset", "node", nodes, error)))
            return FALSE;
        if (!nodes && !req->placement_auto) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: <numatune><memory> has neither nodeset nor "
                        "placement='auto'");
            return FALSE;
        }
    }
    for (node = tune->children; node; node = node->next) {
        if (vpDomXMLIs(node, "memnode") && !vpDomXMLParseMemnode(node, req, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean
vpDomXMLParseCell(xmlNodePtr node, vpRequest *req, hwloc_bitmap_t seen, GError **error)
{
    g_autofree char *cpus = vpDomXMLAttr(node, "cpus");
    g_autofree char *memory = vpDomXMLAttr(node, "memory");
    g_autofree char *unit = vpDomXMLAttr(node, "unit");
    g_autofree char *where = NULL;
    vpCell cell = {0};
    unsigned id = req->ncells;

    if (!vpDomXMLAttrNumber(node, "id", 0, VP_DOMXML_MAX_VCPUS, &id, error))
        return FALSE;
    where = g_strdup_printf("<cell id='%u'>", id);
    for (unsigned i = 0; i < req->ncells; i++) {
        if (req->cells[i].id == id) {
            g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain XML: %s appears twice", where);
            return FALSE;
        }
    }
    if (!memory) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID, "domain XML: %s lacks the memory attribute",
                    where);
        return FALSE;
    }
    if (!vpDomXMLMemory(where, memory, unit, &cell.memory, error))
        return FALSE;
    cell.id = id;
    if (cpus) {
        if (!(cell.vcpus = vpDomXMLSet(where, "cpus", "vCPU", cpus, error)))
            return FALSE;
        if (hwloc_bitmap_last(cell.vcpus) >= (int)req->max_vcpus) {
            g_autofree char *shown = vpDomXMLShow(cpus);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: %s cpus='%s' names vCPUs beyond <vcpu> %u", where, shown,
                        req->max_vcpus);
            hwloc_bitmap_free(cell.vcpus);
            return FALSE;
        }
        if (hwloc_bitmap_intersects(cell.vcpus, seen)) {
            g_autofree char *shown = vpDomXMLShow(cpus);

            g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                        "domain XML: %s cpus='%s' names vCPUs another cell has", where, shown);
            hwloc_bitmap_free(cell.vcpus);
            return FALSE;
        }
        hwloc_bitmap_or(seen, seen, cell.vcpus);
    } else {
        cell.vcpus = hwloc_bitmap_alloc();
    }
    req->cells = g_renew(vpCell, req->cells, req->ncells + 1);
    req->cells[req->ncells++] = cell;
    return TRUE;
}

/* <cpu><numa><cell id cpus memory unit/>...</numa></cpu>: guest NUMA cells. */
static gboolean
vpDomXMLParseCells(xmlNodePtr root, vpRequest *req, GError **error)
{
    g_autoptr(vpBitmap) seen = hwloc_bitmap_alloc();
    xmlNodePtr cpu, numa, node;

    if (!vpDomXMLChild(root, "cpu", &cpu, error))
        return FALSE;
    if (!cpu)
        return TRUE;
    if (!vpDomXMLChild(cpu, "numa", &numa, error))
        return FALSE;
    if (!numa)
        return TRUE;
    for (node = numa->children; node; node = node->next) {
        if (vpDomXMLIs(node, "cell") && !vpDomXMLParseCell(node, req, seen, error))
            return FALSE;
    }
    return TRUE;
}

/* <vcpus><vcpu id='0' enabled='yes' hotpluggable='no' order='1'/>...</vcpus>: which vCPU ids
 * are online at start; their number must be <vcpu current>. */
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
    if ((unsigned)hwloc_bitmap_weight(online) != req->vcpus) {
        g_set_error(error, VP_ERROR, VP_ERROR_INVALID,
                    "domain XML: <vcpus> enables %d vCPUs, but <vcpu current> is %u",
                    hwloc_bitmap_weight(online), req->vcpus);
        return FALSE;
    }
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
        !vpDomXMLParseUUID(root, req, error) || !vpDomXMLParseTopology(root, req, error) ||
        !vpDomXMLParseCputune(root, req, error) || !vpDomXMLParseIOThreads(root, req, error) ||
        !vpDomXMLParseVcpus(root, req, error) || !vpDomXMLParseMemory(root, req, error) ||
        !vpDomXMLParseCells(root, req, error) || !vpDomXMLParseHugepages(root, req, error) ||
        !vpDomXMLParseNumatune(root, req, error) || !vpDomXMLParseMetadata(root, req, error))
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
    xmlNodeDump(buf, doc, node, 0, 0);
    ret = g_strdup((const char *)xmlBufferContent(buf));
    xmlBufferFree(buf);
    return ret;
}

char *
vpDomXMLFormatApplied(const vpPlan *plan)
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
    if (plan->emulator && !hwloc_bitmap_iszero(plan->emulator)) {
        g_autofree char *list = vpCpuListFormat(plan->emulator);

        xmlSetProp(node, (const xmlChar *)"emulator", (const xmlChar *)list);
    }
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
    return cpu >= 0 && hwloc_bitmap_weight(set) == 1 && hwloc_bitmap_isset(set, cpu);
}

static gboolean
vpDomXMLIsPin(const xmlNode *node)
{
    return vpDomXMLIs(node, "vcpupin") || vpDomXMLIs(node, "emulatorpin") ||
           vpDomXMLIs(node, "iothreadpin");
}

char *
vpDomXMLStripApplied(const char *xml, gsize len, GError **error)
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
        !vpDomXMLChild(root, "cputune", &tune, error))
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
