/*
 * Domain XML -> vpRequest. The only place that parses libvirt domain XML, whether it came
 * from the hook's stdin, virDomainGetXMLDesc or a file. Hostile input is expected: no DTD
 * loading, no entity expansion, no network, bounded size. Errors name the element or
 * attribute and the bad value.
 */
#pragma once

#include "core/request.h"

#define VP_DOMXML_MAX_BYTES (4 * 1024 * 1024)

/* defaults: the daemon's policy defaults, used for attributes the metadata leaves out. */
vpRequest *vpDomXMLParse(const char *xml, gsize len, const vpPolicy *defaults, GError **error);
vpRequest *vpDomXMLParseFile(const char *path, const vpPolicy *defaults, GError **error);
/* The policy element alone: in our namespace, or in none as virDomainGetMetadata and
 * `virsh metadata --uri ...` return it. Attributes it sets override *policy's. */
gboolean vpDomXMLParsePolicy(const char *xml, gsize len, vpPolicy *policy, GError **error);
/* Serializes a policy as the metadata element for virDomainSetMetadata (with uri VP_XML_NS,
 * key VP_XML_PREFIX): <policy .../> in no namespace, as libvirt requires. */
char *vpDomXMLFormatPolicy(const vpPolicy *policy);
