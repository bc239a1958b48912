/*
 * Domain XML -> vpRequest. The only place that parses libvirt domain XML, whether it came
 * from the hook's stdin, virDomainGetXMLDesc or a file. Hostile input is expected: no DTD
 * loading, no entity expansion, no network, bounded size. Errors name the element or
 * attribute and the bad value.
 */
#pragma once

#include "core/model/plan.h"
#include "core/model/request.h"

#define VP_DOMXML_MAX_BYTES (4 * 1024 * 1024)
/* Within the size, what a document may hold before libxml2 sees it: libxml2 2.9 checks
 * attributes for duplicates in time quadratic in their number per element (47,000 took
 * 2.5 s), and every node, attribute and character reference costs its share, so these
 * bounds keep any accepted input's parse within 50 ms (tests/bench/bench-domxml). A
 * libvirt domain has a few hundred nodes with a handful of attributes each. */
#define VP_DOMXML_MAX_ATTRS 32
#define VP_DOMXML_MAX_ALL_ATTRS 10000
#define VP_DOMXML_MAX_NODES 10000
#define VP_DOMXML_MAX_REFS 20000

/* defaults: the daemon's policy defaults, used for attributes the metadata leaves out. */
vpRequest *vpDomXMLParse(const char *xml, gsize len, const vpPolicy *defaults, GError **error);
vpRequest *vpDomXMLParseFile(const char *path, const vpPolicy *defaults, GError **error);
/* Whether the document is a domain vcpuplace places: <domain type='kvm|qemu'> (or libvirt's
 * test driver). Other drivers' domains are left alone. A document that cannot be read
 * answers TRUE, so that the parser proper reports what is wrong with it. */
gboolean vpDomXMLIsQemu(const char *xml, gsize len);
/* The policy element alone: in our namespace, or in none as virDomainGetMetadata and
 * `virsh metadata --uri ...` return it. Attributes it sets override *policy's. */
gboolean vpDomXMLParsePolicy(const char *xml, gsize len, vpPolicy *policy, GError **error);
/* Serializes a policy as the metadata element for virDomainSetMetadata (with uri VP_XML_NS,
 * key VP_XML_PREFIX): <policy .../> in no namespace, as libvirt requires. */
char *vpDomXMLFormatPolicy(const vpPolicy *policy);

/* What vcpuplaced pinned, recorded in the live XML's <metadata> (uri VP_APPLIED_NS, key
 * VP_APPLIED_KEY): a saved image and a migration stream carry the live XML, whose
 * <cputune> then holds pins that were vcpuplace's, not the domain's own. */
#define VP_APPLIED_NS "http://vcpuplace.org/xmlns/applied/1.0"
#define VP_APPLIED_KEY "vcpuplace-applied"
/* <applied vcpus="2,3,-" emulator="4-5" sig="..."/> ("-": a vCPU left unpinned), in no
 * namespace, for virDomainSetMetadata. sig is an HMAC-SHA256 with key (vcpuplaced's, which
 * only it reads) of the plan's domain name, vcpus and emulator: the tenant writes the
 * domain's metadata too, and a record it forged would strip the domain's own pins. */
char *vpDomXMLFormatApplied(const vpPlan *plan, GBytes *key);
/* For `restore begin` and `migrate begin`: when every pin in the XML's <cputune> is one its
 * applied record names, and key signed that record for this domain's name, the XML
 * without those pins and without the record, so that the domain is placed anew where it
 * starts. NULL without an error when there is nothing to take out, when the pins were
 * changed since vcpuplace applied them, or when the record is not signed with key (they
 * are then the domain's own). */
char *vpDomXMLStripApplied(const char *xml, gsize len, GBytes *key, GError **error);
