/*
 * Reading domain and policy XML as hostile input. The XML comes from the hook's stdin, from
 * libvirt, or from a file an operator names. A domain document never needs a DTD, so any
 * DOCTYPE is refused as soon as the parser meets it, before an internal subset could declare
 * an entity, and the parser runs without entity substitution, DTD loading or network
 * access; a pre-scan bounds nodes, attributes and references before libxml2 sees the text.
 * The accessors below check each value the way libvirt does and name it when they refuse.
 */
#include "libvirt/domxmlpriv.h"

#include <string.h>

/* A value fit for an error message: cut short, control characters replaced. */
char *
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
xmlDocPtr
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

bool
vpDomXMLIs(const xmlNode *node, const char *name)
{
    return node->type == XML_ELEMENT_NODE && !node->ns &&
           strcmp((const char *)node->name, name) == 0;
}

/* The one child element called name (no namespace), NULL when absent; twice is an error. */
gboolean
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

char *
vpDomXMLAttr(xmlNodePtr node, const char *name)
{
    xmlChar *v = xmlGetNoNsProp(node, (const xmlChar *)name);
    char *ret = g_strdup((const char *)v);

    xmlFree(v);
    return ret;
}

char *
vpDomXMLText(xmlNodePtr node)
{
    xmlChar *v = xmlNodeGetContent(node);
    char *ret = g_strdup(v ? (const char *)v : "");

    xmlFree(v);
    return g_strstrip(ret);
}

gboolean
vpDomXMLNumber(const char *text, unsigned min, unsigned max, unsigned *out)
{
    guint64 v;

    /* libvirt reads numbers with strtoul: blanks around them and one leading '+' pass
     * there, and g_ascii_string_to_unsigned takes neither. */
    g_autofree char *copy = g_strstrip(g_strdup(text));
    const char *digits = copy[0] == '+' ? copy + 1 : copy;

    if (!g_ascii_isdigit(digits[0]) || !g_ascii_string_to_unsigned(digits, 10, min, max, &v, NULL))
        return FALSE;
    *out = v;
    return TRUE;
}

/* Optional numeric attribute: *out untouched when absent. */
gboolean
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

gboolean
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
hwloc_bitmap_t
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

hwloc_bitmap_t
vpDomXMLCpuset(const char *where, const char *text, GError **error)
{
    return vpDomXMLSet(where, "cpuset", "CPU", text, error);
}
