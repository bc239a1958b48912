/*
 * The one way tests describe a host (tests/README.md, "Topologies"): an hwloc synthetic
 * string or an hwloc XML export, loaded as `vcpuplace --topology` loads it. Failures are
 * Check assertions.
 */
#pragma once

#include "core/model/topology.h"

/* source as vpHwtopoLoad() takes it ("synthetic:pack:1 core:4 pu:2", an XML path), the CPUs
 * it may hand out restricted to host_cpus (a CPU list, NULL: all). */
vpTopology *vpTestTopology(const char *source, const char *host_cpus);
