/*
 * An hwloc XML export checked before hwloc reads it. hwloc takes an os_index of 4294967295
 * (a NUMA node then named so, a PU's cpuset of 2^32 bits: 539 MB before anything says no),
 * reads local_memory="-1" as 18446744073709551615 bytes, and drops without a word a PU
 * outside its parent's cpuset or past the bits it keeps. The export's text is scanned for
 * those values first, and the PUs it lists are counted, so that vpHwtopoLoad() can tell
 * when hwloc kept fewer.
 */
#pragma once

#include <glib.h>

/* Longest export read (the largest real machine's is a few MiB). */
#define VP_HWTOPO_XML_MAX (64 * 1024 * 1024)

/* path's text, a regular file of at most VP_HWTOPO_XML_MAX bytes, NUL-terminated (g_free);
 * NULL with an error naming path otherwise. */
char *vpHwtopoXMLRead(const char *path, gsize *len, GError **error);

/* Checks each <object>'s os_index (PU and NUMANode: below VP_TOPOLOGY_MAX_CPUS) and
 * local_memory (digits, at most 2^56 bytes), naming the first that is not; *pus: the PU
 * objects listed. */
gboolean vpHwtopoXMLCheck(const char *text, const char *path, guint *pus, GError **error);
