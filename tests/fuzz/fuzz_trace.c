/* simulate's JSON-lines trace: one line parsed, and a start placed. */
#include "cli/trace.h"
#include "core/place/placer.h"
#include "fuzz.h"
#include "host/hwtopo.h"

static vpTopology *topo;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *line = g_strndup((const char *)data, size);
    g_autoptr(vpLedger) ledger = NULL;
    vpTraceEvent ev;
    vpPolicy defaults;

    if (!topo)
        topo = vpHwtopoLoad(VP_FUZZ_TOPOLOGY, NULL, NULL, NULL);
    vpPolicyInitDefaults(&defaults);
    if (vpTraceParseLine(line, &defaults, &ev, NULL)) {
        if (ev.op == VP_TRACE_START) {
            g_autoptr(vpPlan) plan = NULL;

            ledger = vpLedgerNew(topo);
            plan = vpPlace(topo, ledger, ev.req, NULL);
        }
        vpTraceEventClear(&ev);
    }
    vpPolicyClear(&defaults);
    return 0;
}
