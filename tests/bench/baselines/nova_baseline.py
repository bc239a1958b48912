"""OpenStack Nova's own placement code as the baseline: Debian's python3-nova, imported with
the system /usr/bin/python3, nothing reimplemented.

Per VM a flavor (hw:cpu_policy=dedicated, hw:cpu_thread_policy=prefer|require|isolate)
goes through nova.virt.hardware.numa_get_constraints() to the instance NUMA topology, and
numa_fit_instance_to_host() (which calls _numa_fit_instance_cell() and
_pack_instance_onto_cores()) fits it onto the host; numa_usage_from_instance_numa() then
records the pinned CPUs in the host cells, and releases them at stop, exactly as the
resource tracker does. Only numa_fit_instance_to_host() is timed.

Host cells: one per NUMA node, with cpuset == pcpuset (the legacy vcpu_pin_set layout,
the only one in which Nova's isolate policy pins a core and holds its siblings; with
cpu_dedicated_set Nova refuses isolate on an SMT host, bug #1889633), siblings per core,
4 KiB pages, and the node's real memory less the 512 MiB per node vcpuplace keeps for the
host (VP_DEFAULT_NODE_RESERVE), so both sides fit memory against the same figures. Where
the export gives a node no memory, memory far beyond what the trace asks, as vcpuplace
then treats memory as no limit. A VM asks the trace's "memory", else 1 GiB.

Flavors: Nova confines a dedicated VM to one NUMA node unless hw:numa_nodes says more, so a
VM larger than a node gets the fewest nodes that hold it with an even split (what an
operator writes into large flavors); a VM that no such split fits keeps one node and is
refused by Nova.
"""

import time

from common import memory_bytes

import nova.conf
from nova import objects
from nova.virt import hardware

objects.register_all()
nova.conf.CONF([], project="nova", default_config_files=[])

UNKNOWN_CELL_MEMORY_MB = 1 << 22
NODE_RESERVE_MB = 512
VM_MEMORY_MB = 1024

# vcpuplace's smt vocabulary to hw:cpu_thread_policy (DESIGN.md's table).
THREAD_POLICY = {"spread": "prefer", "share": "prefer", "pack": "require",
                 "isolate": "isolate"}


class NovaPlacer:
    def __init__(self, host, policy=None):
        """policy: one hw:cpu_thread_policy for every VM, or None to map each VM's smt."""
        self.host = host
        self.policy = policy
        cells = []
        for numa in host.numa_nodes:
            cpus = {c for c in host.usable if host.numa_of[c] == numa}
            cores = sorted({host.core_of[c] for c in cpus})
            siblings = [set(host.cores[core]) & cpus for core in cores]
            node_bytes = host.node_memory.get(numa)
            memory_mb = (max(0, node_bytes // (1 << 20) - NODE_RESERVE_MB) if node_bytes
                         else UNKNOWN_CELL_MEMORY_MB)
            cells.append(objects.NUMACell(
                id=numa, cpuset=set(cpus), pcpuset=set(cpus), memory=memory_mb,
                cpu_usage=0, memory_usage=0, pinned_cpus=set(), siblings=siblings,
                mempages=[objects.NUMAPagesTopology(size_kb=4, total=memory_mb * 256,
                                                    used=0, reserved=0)],
                socket=host.package_of[min(cpus)] if cpus else 0))
        self.topology = objects.NUMATopology(cells=cells)
        self.running = {}
        self.decision_us = None
        self.image = objects.ImageMeta.from_dict({"properties": {}})

    def _numa_nodes(self, vcpus, policy):
        """The fewest host cells that hold vcpus split evenly (isolate counts cores)."""
        def capacity(cell):
            return len(cell.siblings) if policy == "isolate" else len(cell.pcpuset)

        biggest = max(capacity(c) for c in self.topology.cells)
        for k in range(1, len(self.topology.cells) + 1):
            if vcpus % k == 0 and vcpus // k <= biggest:
                return k
        return 1

    def start(self, ev):
        policy = self.policy or THREAD_POLICY[ev.get("smt", "spread")]
        extra = {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": policy}
        nodes = self._numa_nodes(ev["vcpus"], policy)
        if nodes > 1:
            extra["hw:numa_nodes"] = str(nodes)
        asked = memory_bytes(ev.get("memory"))
        memory_mb = asked // (1 << 20) if asked else VM_MEMORY_MB
        flavor = objects.Flavor(vcpus=ev["vcpus"], memory_mb=memory_mb, extra_specs=extra)
        wanted = hardware.numa_get_constraints(flavor, self.image)
        return self._fit(ev["name"], wanted)

    def _fit(self, name, wanted):
        t0 = time.perf_counter_ns()
        fitted = hardware.numa_fit_instance_to_host(self.topology, wanted)
        self.decision_us = (time.perf_counter_ns() - t0) / 1000.0
        if fitted is None:
            return None
        self.topology = hardware.numa_usage_from_instance_numa(self.topology, fitted)
        self.running[name] = fitted
        pinning = {}
        for cell in fitted.cells:
            pinning.update(cell.cpu_pinning)
        cpus = [pinning[v] for v in sorted(pinning)]
        reserved = set()
        for cell in fitted.cells:
            if cell.cpu_thread_policy == "isolate":
                for pcpu in cell.cpu_pinning.values():
                    reserved.update(set(self.host.siblings(pcpu)) - {pcpu})
            if cell.cpuset_reserved:
                reserved.update(cell.cpuset_reserved)
        return cpus, reserved - set(cpus)

    def stop(self, name):
        fitted = self.running.pop(name, None)
        if fitted is not None:
            self.topology = hardware.numa_usage_from_instance_numa(self.topology, fitted,
                                                                   free=True)
