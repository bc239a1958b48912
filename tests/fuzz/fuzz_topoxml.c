/* An hwloc XML export's read and pre-check, as `--topology FILE.xml` and the daemon's
 * topology= do them before hwloc. Not hwloc itself: hwloc 2.9's XML reader reads out of
 * bounds on mangled object tags (README, "Bounds on outside input"), so an export is
 * operator input, and fuzzing it here would only find hwloc's bugs. */
#include "fuzz.h"
#include "host/hwtopoxml.h"

#include <unistd.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/vp-fuzz-topoxml-XXXXXX";
    int fd = mkstemp(path);
    g_assert(fd >= 0);
    g_assert(size == 0 || write(fd, data, size) == (ssize_t)size);
    close(fd);
    g_autoptr(GError) err = NULL;
    gsize len = 0;
    g_autofree char *text = vpHwtopoXMLRead(path, &len, &err);
    unlink(path);
    /* A NUL byte is refused at the read: the check below sees the whole file. */
    g_assert(text ? len == size && strlen(text) == size : memchr(data, 0, size) != NULL);
    guint pus = 0;
    if (text && !vpHwtopoXMLCheck(text, "fuzz", &pus, &err))
        g_assert(err && err->message && *err->message);
    return 0;
}
