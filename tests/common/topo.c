/*
 * Test topologies; see topo.h.
 */
#include "topo.h"

#include "host/hwtopo.h"

#include <check.h>

vpTopology *
vpTestTopology(const char *source, const char *host_cpus)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpBitmap) host = host_cpus ? vpCpuListParse("host", host_cpus, &error) : NULL;
    vpTopology *topo = NULL;

    ck_assert_msg(!host_cpus || host, "%s: %s", host_cpus, error ? error->message : "");
    topo = vpHwtopoLoad(source, host, NULL, &error);
    ck_assert_msg(topo, "%s: %s", source, error ? error->message : "");
    return topo;
}
