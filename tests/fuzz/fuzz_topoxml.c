/* An hwloc XML export's pre-check, then hwloc and the model on what it lets through,
 * through the same loader as `--topology FILE.xml` and the daemon's topology=. */
#include "fuzz.h"
#include "host/hwtopo.h"
#include "host/hwtopoxml.h"

#include <unistd.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *text = g_strndup((const char *)data, size);
    guint pus = 0;
    if (!vpHwtopoXMLCheck(text, "fuzz", &pus, NULL))
        return 0;
    char path[] = "/tmp/vp-fuzz-topoxml-XXXXXX";
    int fd = mkstemp(path);
    g_assert(fd >= 0);
    g_assert(write(fd, data, size) == (ssize_t)size);
    close(fd);
    g_autoptr(vpTopology) topo = vpHwtopoLoad(path, NULL, NULL, NULL);
    unlink(path);
    return 0;
}
