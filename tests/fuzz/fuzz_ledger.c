/* The ledger file the daemon reloads after a crash: corrupt files must be refused cleanly. */
#include "core/ledger.h"
#include "fuzz.h"
#include "host/hwtopo.h"

static vpTopology *topo;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(vpLedger) ledger = NULL;

    if (!topo)
        topo = vpHwtopoLoad(VP_FUZZ_TOPOLOGY, NULL, NULL, NULL);
    if (!json_parser_load_from_data(parser, (const char *)data, size, NULL))
        return 0;
    if ((ledger = vpLedgerFromJson(topo, json_parser_get_root(parser), NULL)))
        g_assert(vpLedgerCheck(ledger, NULL));
    return 0;
}
