"""Kubernetes kubelet's static CPU manager policy, reimplemented for the benchmark.

The allocator is takeByTopologyNUMAPacked() of pkg/kubelet/cm/cpumanager/cpu_assignment.go,
read at kubernetes/kubernetes commit 04791b4906602ffda5ccf9bc4c84d3329f1d7080 (and checked
against a later copy, k8s.io/utils/cpuset era, whose packed path only adds comments and a
longer error message; the uncore-cache and CPU-sorting options of newer releases are off by
default and not modelled). Written from the algorithm, not translated line by line, but every
ordering rule is kept, because the benchmark compares placements, and ties decide placements:

- newCPUAccumulator: NUMA nodes are the first level when NumSockets >= NumNUMANodes
  ("numaFirst"), sockets otherwise ("socketsFirst").
- sort(): ascending count of free CPUs in the element, then ascending id.
- sortAvailableNUMANodes/Sockets/Cores/CPUs: the nested orders of numaFirst / socketsFirst.
- takeByTopologyNUMAPacked: whole first-level groups, whole second-level groups, whole
  cores, then single CPUs, each only while the request needs at least a whole one.

The static policy's full-pcpus-only option (policy_static.go, Allocate/validateSMTAlignment)
refuses a request that is not a multiple of CPUsPerCore, or that exceeds the CPUs of wholly
free cores, with an SMTAlignmentError. Topology manager policy "none" is assumed (no NUMA
hint restricts the allocatable set). Core IDs are the smallest CPU of each core, as
kubelet's discovery does to make them unique across sockets.
"""


class AllocationError(Exception):
    """takeByTopologyNUMAPacked's error."""


class SMTAlignmentError(Exception):
    """The static policy's refusal under full-pcpus-only."""


class CPUTopology:
    """topology.CPUTopology: per CPU its core, socket and NUMA node."""

    def __init__(self, details, num_numa_nodes=None):
        """details: {cpu: (core_id, socket_id, numa_id)}. num_numa_nodes defaults to the
        number of distinct NUMA ids, as kubelet's discovery counts them."""
        self.details = dict(details)
        self.num_cpus = len(self.details)
        self.num_cores = len({c for c, _, _ in self.details.values()})
        self.num_sockets = len({s for _, s, _ in self.details.values()})
        self.num_numa_nodes = (len({n for _, _, n in self.details.values()})
                               if num_numa_nodes is None else num_numa_nodes)
        self.core_cpus, self.socket_cpus, self.numa_cpus = {}, {}, {}
        for cpu, (core, socket, numa) in self.details.items():
            self.core_cpus.setdefault(core, set()).add(cpu)
            self.socket_cpus.setdefault(socket, set()).add(cpu)
            self.numa_cpus.setdefault(numa, set()).add(cpu)

    def cpus_per_core(self):
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_per_socket(self):
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def core_of(self, cpu):
        return self.details[cpu][0]

    def socket_of(self, cpu):
        return self.details[cpu][1]

    def numa_of(self, cpu):
        return self.details[cpu][2]


class Accumulator:
    """cpuAccumulator: what is still free (details), what was taken, how many are needed."""

    def __init__(self, topo, available, num_cpus):
        self.topo = topo
        self.free = set(available) & set(topo.details)
        self.needed = num_cpus
        self.result = set()
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes

    # CPUDetails queries over the free CPUs
    def _in(self, table, ids):
        out = set()
        for i in ids:
            out |= table.get(i, set())
        return out & self.free

    def cpus_in_numa(self, *ids):
        return self._in(self.topo.numa_cpus, ids)

    def cpus_in_sockets(self, *ids):
        return self._in(self.topo.socket_cpus, ids)

    def cpus_in_cores(self, *ids):
        return self._in(self.topo.core_cpus, ids)

    def _sort(self, ids, free_in):
        return sorted(ids, key=lambda i: (len(free_in(i)), i))

    def _numas(self, cpus):
        return {self.topo.numa_of(c) for c in cpus}

    def _sockets(self, cpus):
        return {self.topo.socket_of(c) for c in cpus}

    def _cores(self, cpus):
        return {self.topo.core_of(c) for c in cpus}

    def sort_available_numa_nodes(self):
        if self.numa_first:
            return self._sort(self._numas(self.free), self.cpus_in_numa)
        out = []
        for socket in self.sort_available_sockets():
            out += self._sort(self._numas(self.cpus_in_sockets(socket)), self.cpus_in_numa)
        return out

    def sort_available_sockets(self):
        if not self.numa_first:
            return self._sort(self._sockets(self.free), self.cpus_in_sockets)
        out = []
        for numa in self.sort_available_numa_nodes():
            out += self._sort(self._sockets(self.cpus_in_numa(numa)), self.cpus_in_sockets)
        return out

    def sort_available_cores(self):
        out = []
        if self.numa_first:
            for socket in self.sort_available_sockets():
                out += self._sort(self._cores(self.cpus_in_sockets(socket)), self.cpus_in_cores)
        else:
            for numa in self.sort_available_numa_nodes():
                out += self._sort(self._cores(self.cpus_in_numa(numa)), self.cpus_in_cores)
        return out

    def sort_available_cpus(self):
        out = []
        for core in self.sort_available_cores():
            out += sorted(self.cpus_in_cores(core))
        return out

    def is_numa_node_free(self, numa):
        return len(self.cpus_in_numa(numa)) == len(self.topo.numa_cpus[numa])

    def is_socket_free(self, socket):
        return len(self.cpus_in_sockets(socket)) == self.topo.cpus_per_socket()

    def is_core_free(self, core):
        return len(self.cpus_in_cores(core)) == self.topo.cpus_per_core()

    def free_numa_nodes(self):
        return [n for n in self.sort_available_numa_nodes() if self.is_numa_node_free(n)]

    def free_sockets(self):
        return [s for s in self.sort_available_sockets() if self.is_socket_free(s)]

    def free_cores(self):
        return [c for c in self.sort_available_cores() if self.is_core_free(c)]

    def free_cpus(self):
        return self.sort_available_cpus()

    def take(self, cpus):
        self.result |= cpus
        self.free -= self.result
        self.needed -= len(cpus)

    def needs(self, n):
        return self.needed >= n

    def is_satisfied(self):
        return self.needed < 1

    def is_failed(self):
        return self.needed > len(self.free)

    def take_full_numa_nodes(self):
        for numa in self.free_numa_nodes():
            cpus = self.topo.numa_cpus[numa]
            if self.needs(len(cpus)):
                self.take(set(cpus))

    def take_full_sockets(self):
        for socket in self.free_sockets():
            cpus = self.topo.socket_cpus[socket]
            if self.needs(len(cpus)):
                self.take(set(cpus))

    def take_full_cores(self):
        for core in self.free_cores():
            cpus = self.topo.core_cpus[core]
            if self.needs(len(cpus)):
                self.take(set(cpus))

    def take_remaining_cpus(self):
        for cpu in self.sort_available_cpus():
            self.take({cpu})
            if self.is_satisfied():
                return


def take_by_topology_numa_packed(topo, available, num_cpus):
    """takeByTopologyNUMAPacked: a set of num_cpus CPUs out of available, or
    AllocationError."""
    acc = Accumulator(topo, available, num_cpus)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise AllocationError("not enough cpus available to satisfy request")
    steps = ((acc.take_full_numa_nodes, acc.take_full_sockets) if acc.numa_first else
             (acc.take_full_sockets, acc.take_full_numa_nodes))
    for step in steps + (acc.take_full_cores, acc.take_remaining_cpus):
        step()
        if acc.is_satisfied():
            return acc.result
    raise AllocationError("failed to allocate cpus")


class StaticPolicy:
    """The static policy's exclusive allocation for one host: what is free, and Allocate()
    with or without full-pcpus-only."""

    def __init__(self, topo, allocatable, full_pcpus_only=False):
        self.topo = topo
        self.free = set(allocatable)
        self.full_pcpus_only = full_pcpus_only
        self.assigned = {}

    def available_physical_cpus(self):
        """Free CPUs of cores every CPU of which is free (GetAvailablePhysicalCPUs once
        siblings of reserved CPUs are excluded)."""
        out = set()
        for cpus in self.topo.core_cpus.values():
            if cpus <= self.free:
                out |= cpus
        return out

    def allocate(self, name, num_cpus):
        if self.full_pcpus_only:
            per_core = self.topo.cpus_per_core()
            if num_cpus % per_core:
                raise SMTAlignmentError(
                    f"SMT Alignment Error: requested {num_cpus} cpus not multiple cpus per "
                    f"core = {per_core}")
            physical = len(self.available_physical_cpus())
            if num_cpus > physical:
                raise SMTAlignmentError(
                    f"SMT Alignment Error: not enough free physical CPUs: available physical "
                    f"CPUs = {physical}, requested CPUs = {num_cpus}, CPUs per core = "
                    f"{per_core}")
        cpus = take_by_topology_numa_packed(self.topo, self.free, num_cpus)
        self.free -= cpus
        self.assigned[name] = cpus
        return cpus

    def remove(self, name):
        self.free |= self.assigned.pop(name, set())


class KubeletPlacer:
    """The benchmark's adapter: one exclusive-CPU container per VM on a host described by
    common.Host. A cpuset has no vCPU order, so vCPUs take its CPUs core by core with
    siblings adjacent (the order most favourable to guest thread alignment)."""

    def __init__(self, host, full_pcpus_only=False):
        details = {cpu: (min(host.siblings(cpu)), host.package_of[cpu], host.numa_of[cpu])
                   for cpu in host.core_of}
        self.host = host
        self.policy = StaticPolicy(CPUTopology(details), host.usable, full_pcpus_only)

    def start(self, ev):
        try:
            cpus = self.policy.allocate(ev["name"], ev["vcpus"])
        except (AllocationError, SMTAlignmentError):
            return None
        return sorted(cpus, key=lambda c: (self.host.core_of[c], c)), []

    def stop(self, name):
        self.policy.remove(name)
