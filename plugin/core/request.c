/*
 * A domain's request. Plain data: the parsers (domain XML, simulate traces) fill it in
 * and validate; this file only owns its memory.
 */
#include "request.h"

vpRequest *
vpRequestNew(const char *name, unsigned vcpus)
{
    vpRequest *req = g_new0(vpRequest, 1);

    req->name = g_strdup(name);
    req->vcpus = vcpus;
    req->max_vcpus = vcpus;
    req->pins = g_new0(hwloc_bitmap_t, vcpus);
    vpPolicyInitDefaults(&req->policy);
    return req;
}

void
vpRequestFree(vpRequest *req)
{
    unsigned i;

    if (!req)
        return;
    for (i = 0; i < req->max_vcpus; i++) {
        if (req->pins[i])
            hwloc_bitmap_free(req->pins[i]);
    }
    g_free(req->pins);
    if (req->emulator_pin)
        hwloc_bitmap_free(req->emulator_pin);
    vpPolicyClear(&req->policy);
    g_free(req->name);
    g_free(req->uuid);
    g_free(req);
}

unsigned
vpRequestGuestThreads(const vpRequest *req)
{
    return req->threads ? req->threads : 1;
}
