#!/usr/bin/env python3
"""Writes the recorded pressure series replayed by test_pressure and golden-rebalance.

Each file is gzipped JSON lines (zcat to read): a header (topology, the plans in the ledger, what happens), then
one line per 1 s interval in the format of vpPressureInputFromJson(): per vCPU thread the
deltas the monitor reads (schedstat run/wait ns, voluntary/involuntary switches,
migrations) and per host CPU the busy time /proc/stat gives (in 10 ms ticks).

The counters come from a small model of one run queue per CPU, fed with workloads that
change over time: a vCPU wants to run a fraction d of the time; host tasks on its CPU
want h. When d + h <= 1 both get what they want and the vCPU waits only for wakeup
latency (a few % of its run time, more when host tasks share the CPU). When d + h > 1
CFS shares the CPU max-min fairly and the vCPU waits for what it wanted but did not get.
Wakeups (voluntary switches) follow the vCPU's interrupt rate; preemptions follow the
overlap with host tasks. Multiplicative noise of a few %, timer jitter of the interval,
tick quantisation of CPU busy time. Deterministic: fixed seeds.

The series are open-loop recordings: they do not react to the rebalancer's moves.

Run from this directory: ./generate.py (rewrites the .jsonl.gz files).
"""

import gzip
import json
import random

NS = 1_000_000_000
TICK = 0.01  # /proc/stat resolution at 1 s intervals (USER_HZ 100)

# 1 package, 2 NUMA nodes, 2 L3 per node, 4 cores per L3, 2 threads per core: 32 PUs.
# Linux numbering as on Intel: CPU = thread * 16 + core.
TOPOLOGY = {"packages": 1, "numa": 2, "l3": 2, "cores": 4, "threads": 2}
NCORES = 16

PLANS = [
    {"domain": "web", "smt": "spread", "group": "tenant-a", "vcpus": [0, 1, 2, 3]},
    {"domain": "db", "smt": "isolate", "vcpus": [4, 5], "reserved": [20, 21]},
    {"domain": "batch", "smt": "pack", "vcpus": [8, 24, 9, 25]},
    {"domain": "small", "smt": "share", "vcpus": [12]},
    {"domain": "legacy", "smt": "spread", "how": "pinned", "vcpus": [14]},
]


def vcpu_list():
    out = []
    for plan in PLANS:
        for i, cpu in enumerate(plan["vcpus"]):
            out.append((plan["domain"], i, cpu))
    return out


class Walk:
    """A bounded random walk: a demand that drifts."""

    def __init__(self, rng, lo, hi, step):
        self.rng, self.lo, self.hi, self.step = rng, lo, hi, step
        self.v = rng.uniform(lo, hi)

    def next(self):
        self.v = min(self.hi, max(self.lo, self.v + self.rng.gauss(0, self.step)))
        return self.v


def share(d, h):
    """Max-min fair split of one CPU between a vCPU wanting d and host tasks wanting h."""
    if d + h <= 1:
        return d, h
    if d <= 0.5:
        return d, 1 - d
    if h <= 0.5:
        return 1 - h, h
    return 0.5, 0.5


def interval(rng, vcpus, demand, wakes, host):
    """One line: demand/wakes per (domain, vcpu), host load per CPU."""
    line = {"vcpus": [], "cpus": []}
    busy = {cpu: host.get(cpu, 0.0) for cpu in range(2 * NCORES)}
    for dom, idx, cpu in vcpus:
        d = demand[(dom, idx)]
        h = host.get(cpu, 0.0)
        run, hrun = share(d, h)
        latency = run * (0.004 + 0.04 * min(h, 1.0)) * rng.uniform(0.5, 1.5)
        wait = min(1 - run, (d - run) + latency)
        busy[cpu] = run + hrun
        ival = NS + rng.randint(0, 200_000)
        noise = rng.uniform(0.97, 1.03)
        line["vcpus"].append({
            "domain": dom, "vcpu": idx, "interval_ns": ival,
            "run_ns": int(run * noise * ival), "wait_ns": int(wait * noise * ival),
            "voluntary": int(wakes[(dom, idx)] * rng.uniform(0.9, 1.1)),
            "involuntary": int(250 * min(run, hrun) * rng.uniform(0.8, 1.2)) + rng.randint(0, 5),
            "migrations": 0,
        })
    for cpu in range(2 * NCORES):
        b = min(1.0, busy[cpu] + rng.uniform(0, 0.01))
        b = round(b / TICK) * TICK
        line["cpus"].append({"cpu": cpu, "interval_ns": NS, "busy_ns": int(round(b * 100)) * NS // 100})
    return line


def write(name, header, lines):
    # gzip: ten minutes of 21 threads and 32 CPUs is 2 MB of text, 200 kB compressed;
    # mtime 0 keeps regenerated files byte-identical
    with open(name, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
            f.write((json.dumps(header, sort_keys=True) + "\n").encode())
            for line in lines:
                f.write((json.dumps(line, separators=(",", ":")) + "\n").encode())


def base_workload(rng):
    walks, wakes = {}, {}
    for dom, idx, _ in vcpu_list():
        lo, hi = {"web": (0.4, 0.8), "db": (0.6, 0.9), "batch": (0.3, 0.7),
                  "small": (0.1, 0.4), "legacy": (0.2, 0.5)}[dom]
        walks[(dom, idx)] = Walk(rng, lo, hi, 0.03)
        wakes[(dom, idx)] = rng.uniform(250, 700)
    return walks, wakes


def background(rng):
    """kworkers, timers, the daemon itself: a percent or two anywhere."""
    return {cpu: rng.uniform(0, 0.02) for cpu in range(2 * NCORES)}


def hotspot():
    rng = random.Random(5001)
    walks, wakes = base_workload(rng)
    lines = []
    for t in range(120):
        host = background(rng)
        if t >= 30:
            host[2] = 1.0  # a CPU-bound host process lands on web's vCPU 2 and stays
        demand = {k: w.next() for k, w in walks.items()}
        lines.append(interval(rng, vcpu_list(), demand, wakes, host))
    header = {"scenario": "hotspot", "topology": TOPOLOGY, "plans": PLANS, "interval_s": 1,
              "events": "t=30 s: a CPU-bound host task starts on CPU 2 (web vCPU 2) and stays"}
    write("hotspot.jsonl.gz", header, lines)


def balanced():
    rng = random.Random(5002)
    walks, wakes = base_workload(rng)
    for k in walks:
        walks[k].lo, walks[k].hi, walks[k].step = 0.2, 0.9, 0.08
    quiet_until = {cpu: 0 for cpu in range(2 * NCORES)}
    bursts = {}
    lines = []
    for t in range(600):
        host = background(rng)
        for cpu in range(2 * NCORES):
            if cpu in bursts:
                end, load = bursts[cpu]
                if t < end:
                    host[cpu] += load
                    continue
                del bursts[cpu]
                quiet_until[cpu] = t + 3
            if t >= quiet_until[cpu] and rng.random() < 0.04:
                # short host bursts (a backup tick, a log rotation) of one or two seconds
                bursts[cpu] = (t + rng.randint(1, 2), rng.uniform(0.2, 0.6))
                host[cpu] += bursts[cpu][1]
        demand = {k: w.next() for k, w in walks.items()}
        lines.append(interval(rng, vcpu_list(), demand, wakes, host))
    header = {"scenario": "balanced", "topology": TOPOLOGY, "plans": PLANS, "interval_s": 1,
              "events": "busy guests, host bursts of 1-2 s on random CPUs at least 3 s apart, "
                        "no lasting contention"}
    write("balanced.jsonl.gz", header, lines)


def oscillating():
    rng = random.Random(5003)
    walks, wakes = base_workload(rng)
    lines = []
    for t in range(600):
        host = background(rng)
        # a host batch job alternates between two CPUs every 30 s ...
        host[1 if (t // 30) % 2 == 0 else 3] = 1.0
        # ... and another between the two cores of the pack domain every 20 s
        host[8 if (t // 20) % 2 == 0 else 9] = 1.0
        demand = {k: w.next() for k, w in walks.items()}
        lines.append(interval(rng, vcpu_list(), demand, wakes, host))
    header = {"scenario": "oscillating", "topology": TOPOLOGY, "plans": PLANS, "interval_s": 1,
              "events": "host jobs alternate CPU 1 <-> CPU 3 every 30 s and CPU 8 <-> CPU 9 "
                        "every 20 s, for 10 minutes"}
    write("oscillating.jsonl.gz", header, lines)


if __name__ == "__main__":
    hotspot()
    balanced()
    oscillating()
