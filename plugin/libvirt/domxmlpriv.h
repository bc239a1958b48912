/*
 * The domain XML reader's own interface between its files (domxml.h is the public one):
 * xmlread.c reads a document and checks values, domxml.c builds the request from the
 * domain's elements, domxmlnuma.c its memory and NUMA elements, policyxml.c the policy
 * element and the applied-pins record.
 */
#pragma once

#include "core/model/topology.h"
#include "libvirt/domxml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#define VP_DOMXML_MAX_VCPUS 4096
/* libvirt's VIR_DOMAIN_CPUMASK_LEN: a cpuset naming a higher CPU is refused there too. */
#define VP_DOMXML_MAX_CPU 16383
#define VP_DOMXML_MAX_NAME 1024
/* Values quoted in messages are cut here: the document may be megabytes of one attribute. */
#define VP_DOMXML_MAX_SHOWN 64

G_DEFINE_AUTOPTR_CLEANUP_FUNC(xmlDoc, xmlFreeDoc)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(xmlParserCtxt, xmlFreeParserCtxt)

/* xmlread.c: reading a document as hostile input, and the checked accessors every part
 * of the reader uses (values quoted in messages through vpDomXMLShow()). */
char *vpDomXMLShow(const char *value);
xmlDocPtr vpDomXMLRead(const char *what, const char *xml, gsize len, GError **error);
bool vpDomXMLIs(const xmlNode *node, const char *name);
gboolean vpDomXMLChild(xmlNodePtr parent, const char *name, xmlNodePtr *out, GError **error);
char *vpDomXMLAttr(xmlNodePtr node, const char *name);
char *vpDomXMLText(xmlNodePtr node);
gboolean vpDomXMLNumber(const char *text, unsigned min, unsigned max, unsigned *out);
gboolean vpDomXMLAttrNumber(xmlNodePtr node, const char *attr, unsigned min, unsigned max,
                            unsigned *out, GError **error);
gboolean vpDomXMLTextNumber(xmlNodePtr node, unsigned min, unsigned max, unsigned *out,
                            GError **error);
hwloc_bitmap_t vpDomXMLSet(const char *where, const char *attr, const char *noun, const char *text,
                           GError **error);
hwloc_bitmap_t vpDomXMLCpuset(const char *where, const char *text, GError **error);

/* domxmlnuma.c: memory, huge pages, <numatune> and guest NUMA cells into the request. */
gboolean vpDomXMLParseMemory(xmlNodePtr root, vpRequest *req, GError **error);
gboolean vpDomXMLParseHugepages(xmlNodePtr root, vpRequest *req, GError **error);
gboolean vpDomXMLParseNumatune(xmlNodePtr root, vpRequest *req, GError **error);
gboolean vpDomXMLParseCells(xmlNodePtr root, vpRequest *req, GError **error);

/* policyxml.c: the vcpuplace policy element. */
bool vpDomXMLIsPolicy(const xmlNode *node);
gboolean vpDomXMLApplyPolicy(xmlNodePtr node, vpPolicy *policy, GError **error);
