/*
 * Loads a vpTopology through hwloc from the live host, an hwloc XML export, or a
 * synthetic description. Source syntax:
 *   NULL or "host"        the running machine
 *   "synthetic:STRING"    hwloc synthetic, e.g. "synthetic:pack:2 l3:2 core:4 pu:2"
 *   anything else          a path to an hwloc XML file
 * host / housekeeping restrict which Linux CPUs may be handed out (NULL: all / none).
 */
#pragma once

#include "core/model/topology.h"

vpTopology *vpHwtopoLoad(const char *source, hwloc_const_bitmap_t host,
                         hwloc_const_bitmap_t housekeeping, GError **error);

/* hwloc's own topology of source, loaded as vpHwtopoLoad() loads it, for handing to hwloc's
 * tools (the picture lstopo draws). NULL with error when it cannot be loaded; the caller
 * destroys it with hwloc_topology_destroy(). */
hwloc_topology_t vpHwtopoOpen(const char *source, GError **error);
