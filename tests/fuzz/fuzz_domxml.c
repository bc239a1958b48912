/*
 * Domain XML from the hook's stdin or libvirt: parse, and when it parses, place it, so
 * hostile values (huge vCPU counts, odd topologies, pins on CPUs the host lacks) also
 * reach the placer. The same bytes go through the restore rewrite (vcpuplace's applied
 * record and the pins it names), whose output must parse as a domain with no pins left
 * of those it took out.
 */
#include "core/place/placer.h"
#include "fuzz.h"
#include "host/hwtopo.h"
#include "libvirt/domxml.h"

#include <string.h>

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
    /* A fixed key: a record signed with it (corpus/domxml/applied-signed.xml) reaches the
     * rewrite, any other is refused as forged. */
    g_autoptr(GBytes) key = g_bytes_new_static("vcpuplace fuzz key, 32 bytes....", 32);
    g_autofree char *rewritten = vpDomXMLStripApplied((const char *)data, size, key, NULL);
    if (rewritten) {
        g_autoptr(vpRequest) again = vpDomXMLParse(rewritten, strlen(rewritten), &defaults, NULL);
        g_autofree char *twice = vpDomXMLStripApplied(rewritten, strlen(rewritten), key, NULL);

        /* The record went with the pins: nothing is left to take out, and what parsed
         * before parses still, without pins. */
        g_assert(!twice);
        g_assert(!req || (again && !again->has_pins && !again->emulator_pin));
    }
    vpPolicyClear(&defaults);
    if (!req)
        return 0;
    ledger = vpLedgerNew(topo);
    if ((plan = vpPlace(topo, ledger, req, NULL)))
        vpLedgerAdd(ledger, plan, NULL);
    return 0;
}
