"""Naive pinning: what a hand-written vcpupin script does. vCPU k gets the k-th free CPU in
CPU-number order; no notion of cores, siblings, caches or NUMA nodes."""


class NaivePlacer:
    def __init__(self, host):
        self.free = set(host.usable)
        self.held = {}

    def start(self, ev):
        n = ev["vcpus"]
        if n > len(self.free):
            return None
        cpus = sorted(self.free)[:n]
        self.free.difference_update(cpus)
        self.held[ev["name"]] = cpus
        return cpus, []

    def stop(self, name):
        self.free.update(self.held.pop(name, []))
