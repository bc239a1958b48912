/* The ledger file the daemon reloads after a crash: corrupt files must be refused cleanly. */
#include "core/model/ledger.h"
#include "fuzz.h"
#include "host/hwtopo.h"
#include "core/codec/jsonparse.h"

static vpTopology *topo;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(vpLedger) ledger = NULL;

    if (!topo)
        topo = vpHwtopoLoad(VP_FUZZ_TOPOLOGY, NULL, NULL, NULL);
    if (!(root = vpJsonParse((const char *)data, size, NULL)))
        return 0;
    if ((ledger = vpLedgerFromJson(topo, root, NULL)))
        g_assert(vpLedgerCheck(ledger, NULL));
    return 0;
}
