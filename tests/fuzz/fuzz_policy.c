/* The metadata element alone, as `virsh metadata --key vcpuplace` returns it. */
#include "fuzz.h"
#include "libvirt/domxml.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vpPolicy policy;

    vpPolicyInitDefaults(&policy);
    if (vpDomXMLParsePolicy((const char *)data, size, &policy, NULL))
        g_free(vpDomXMLFormatPolicy(&policy));
    vpPolicyClear(&policy);
    return 0;
}
