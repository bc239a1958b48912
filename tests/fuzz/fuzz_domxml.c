/*
 * Domain XML from the hook's stdin or libvirt: parse, and when it parses, place it, so
 * hostile values (huge vCPU counts, odd topologies, pins on CPUs the host lacks) also
 * reach the placer.
 */
#include "core/placer.h"
#include "fuzz.h"
#include "host/hwtopo.h"
#include "libvirt/domxml.h"

static vpTopology *topo;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(vpRequest) req = NULL;
    g_autoptr(vpLedger) ledger = NULL;
    g_autoptr(vpPlan) plan = NULL;
    vpPolicy defaults;

    if (!topo)
        topo = vpHwtopoLoad(VP_FUZZ_TOPOLOGY, NULL, NULL, NULL);
    vpPolicyInitDefaults(&defaults);
    req = vpDomXMLParse((const char *)data, size, &defaults, NULL);
    vpPolicyClear(&defaults);
    if (!req)
        return 0;
    ledger = vpLedgerNew(topo);
    if ((plan = vpPlace(topo, ledger, req, NULL)))
        vpLedgerAdd(ledger, plan, NULL);
    return 0;
}
