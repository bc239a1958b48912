"""What every baseline shares: the host as `vcpuplace topology --json` describes it, the
trace, and the replay loop that writes the outcome file `vcpuplace score` reads.

The topology comes from vcpuplace's own export so that every placer sees exactly the PUs,
cores, NUMA nodes and packages the shared scorer scores against; no baseline parses hwloc.
"""

import json
import time


class Host:
    """The flat PU list of `vcpuplace topology --json`: per Linux CPU its core, L3, NUMA node
    (Linux number) and package (dense indexes), whether it may be handed out, and the
    memory of each node."""

    def __init__(self, doc):
        self.source = doc["source"]
        self.core_of, self.numa_of, self.package_of = {}, {}, {}
        self.cores = {}
        self.usable = []
        for pu in doc["cpus"]:
            cpu = pu["cpu"]
            self.core_of[cpu] = pu["core"]
            self.numa_of[cpu] = pu["numa"]
            self.package_of[cpu] = pu["package"]
            self.cores.setdefault(pu["core"], []).append(cpu)
            if pu["usable"]:
                self.usable.append(cpu)
        for cpus in self.cores.values():
            cpus.sort()
        self.usable.sort()
        self.smt = max(len(c) for c in self.cores.values())
        self.numa_nodes = sorted(set(self.numa_of.values()))
        # bytes per Linux node number; None where the export gives none (no limit)
        self.node_memory = {n["numa"]: n["memory"] for n in doc.get("nodes", [])}

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f))

    def siblings(self, cpu):
        return self.cores[self.core_of[cpu]]


def memory_bytes(text):
    """A trace's "memory" ("4GiB", "512MiB", "8GB"), in bytes; None when absent."""
    if text is None:
        return None
    units = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
             "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
    digits = len(text) - len(text.lstrip("0123456789"))
    return int(text[:digits]) * units[text[digits:]]


def read_trace(path):
    """The JSON-lines trace of `vcpuplace simulate`, as dicts."""
    events = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            ev = json.loads(line)
            if ev.get("op") not in ("start", "stop") or "name" not in ev:
                raise ValueError(f"{path}:{lineno}: not a start or stop event")
            events.append(ev)
    return events


def _start_record(ev):
    rec = {"op": "start", "name": ev["name"], "vcpus": ev["vcpus"],
           "smt": ev.get("smt", "spread")}
    for key in ("group", "coresched", "threads"):
        if key in ev:
            rec[key] = ev[key]
    return rec


def replay(placer, events, out_path):
    """Runs placer over the trace and writes one outcome line per event. The decision time
    is measured around placer.start() alone, as `vcpuplace simulate` measures vpPlace(),
    unless the placer times its own decision (placer.decision_us, set by start()).

    placer.start(ev) returns (cpu per vCPU, reserved CPUs) or None for a refusal;
    placer.stop(name) frees what the VM held (a no-op for a refused VM)."""
    placed = refused = 0
    with open(out_path, "w", encoding="utf-8") as out:
        for ev in events:
            if ev["op"] == "stop":
                placer.stop(ev["name"])
                out.write(json.dumps({"op": "stop", "name": ev["name"]}) + "\n")
                continue
            placer.decision_us = None
            t0 = time.perf_counter_ns()
            got = placer.start(ev)
            us = (time.perf_counter_ns() - t0) / 1000.0
            if placer.decision_us is not None:
                us = placer.decision_us
            rec = _start_record(ev)
            if got is None:
                rec["refused"] = True
                refused += 1
            else:
                cpus, reserved = got
                if len(cpus) != ev["vcpus"]:
                    raise RuntimeError(f"{ev['name']}: {len(cpus)} CPUs for {ev['vcpus']} vCPUs")
                rec["cpus"] = list(cpus)
                rec["reserved"] = sorted(reserved)
                placed += 1
            rec["us"] = round(us, 3)
            out.write(json.dumps(rec) + "\n")
    return placed, refused
