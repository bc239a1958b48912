/*
 * Loads a vpTopology through hwloc from the live host, an hwloc XML export, or a
 * synthetic description. Source syntax:
 *   NULL or "host"        the running machine
 *   "synthetic:STRING"    hwloc synthetic, e.g. "synthetic:pack:2 l3:2 core:4 pu:2"
 *   anything else          a path to an hwloc XML file
 * host / housekeeping restrict which Linux CPUs may be handed out (NULL: all / none).
 */
#pragma once

#include "core/topology.h"

vpTopology *vpHwtopoLoad(const char *source, hwloc_const_bitmap_t host,
                         hwloc_const_bitmap_t housekeeping, GError **error);
