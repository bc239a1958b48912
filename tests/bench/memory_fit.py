#!/usr/bin/python3
"""Memory fitting, vcpuplace against Nova, on the same seeded traces.

    memory_fit.py --vcpuplace BIN --work DIR --out results.json [--seed N] [--churn N]
                  [--memory-per-vcpu GiB] SOURCE...

For each topology SOURCE (hwloc XML or synthetic:..., with node memory):
- gen_trace.py writes the mixed trace (every VM asks --memory-per-vcpu GiB per vCPU) and
  the same trace without memory;
- `vcpuplace simulate --json` and the nova-mixed baseline (baselines/run.py, Debian's
  python3-nova, the node's real memory less the same 512 MiB reserve) place both traces;
- refusals: placed and refused with memory and without; the refusals memory adds are the
  difference (after the first refusal that differs the two runs see different hosts, so it
  is a count, not a list of VMs, and may be negative: a refusal for memory can leave room
  that spares later VMs). vcpuplace's reasons name each node's free memory whenever the VM
  asks memory, so they do not tell which refusals memory alone decided;
- per node, the most memory held at once, replayed event by event: vcpuplace's from each
  plan's memory per node, Nova's from each placement's vCPUs per node (a VM's memory in
  proportion, as Nova splits an instance over its cells), against the node's memory less
  the reserve; an event that puts a node beyond it is counted as overcommitted.
- locality, the trade-off of spanning: vcpuplace places the trace three more times, every
  VM asking one locality: "auto" (the trace as written), "node-first" (locality=numa for
  each VM that an empty node holds, in vCPUs and memory; auto for the larger ones) and
  "numa" (every VM). Per run and for Nova: VMs placed, vCPUs admitted, VMs spanning nodes,
  the mean NUMA span beyond policy (the scorer's numa_span_policy_excess_avg; Nova never
  spans: it gives a dedicated instance without hw:numa_nodes one cell) and the mean
  imbalance of spanning VMs (most minus fewest vCPUs on a node they span).

Figures, not a test: it asserts nothing and writes only --out and under --work. Must run
under the system /usr/bin/python3 (the Nova baseline imports python3-nova).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESERVE = 512 << 20  # VP_DEFAULT_NODE_RESERVE, as the Nova baseline uses it


def run(cmd, stdout=None):
    res = subprocess.run(cmd, stdout=stdout or subprocess.PIPE, text=True, check=False)
    if res.returncode != 0:
        sys.exit(f"memory_fit.py: {' '.join(cmd)} exited {res.returncode}")
    return res.stdout


def memory_bytes(text):
    sys.path.insert(0, os.path.join(HERE, "baselines"))
    import common  # noqa: E402
    return common.memory_bytes(text)


def strip_memory(trace, out_path):
    with open(trace, encoding="utf-8") as f, open(out_path, "w", encoding="utf-8") as out:
        for line in f:
            ev = json.loads(line)
            ev.pop("memory", None)
            out.write(json.dumps(ev) + "\n")
    return out_path


class Peaks:
    """Memory held per node, event by event: the most at once and the events beyond capacity."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.held = {n: 0 for n in capacity}
        self.peak = {n: 0 for n in capacity}
        self.by_vm = {}
        self.overcommitted = 0

    def start(self, name, per_node):
        self.by_vm[name] = per_node
        over = False
        for n, b in per_node.items():
            self.held[n] += b
            self.peak[n] = max(self.peak[n], self.held[n])
            over |= self.capacity[n] is not None and self.held[n] > self.capacity[n]
        self.overcommitted += over

    def stop(self, name):
        for n, b in self.by_vm.pop(name, {}).items():
            self.held[n] -= b

    def result(self):
        return {str(n): {"peak": self.peak[n], "capacity": self.capacity[n]}
                for n in sorted(self.capacity)}


def spans(per_node_counts):
    """VMs spanning nodes and their mean imbalance, from each placed VM's vCPUs per node."""
    spanning = [c for c in per_node_counts if len(c) > 1]
    imbalance = [max(c.values()) - min(c.values()) for c in spanning]
    return {"spanning_vms": len(spanning),
            "span_imbalance_avg": round(sum(imbalance) / len(imbalance), 3) if imbalance else 0.0}


def with_locality(trace, out_path, which, capacity, node_pus):
    """The trace with every VM asking one locality (see the module's docstring)."""
    with open(trace, encoding="utf-8") as f, open(out_path, "w", encoding="utf-8") as out:
        for line in f:
            ev = json.loads(line)
            if ev["op"] == "start" and which == "numa":
                ev["locality"] = "numa"
            elif ev["op"] == "start" and which == "node-first":
                mem = memory_bytes(ev.get("memory")) or 0
                fits = any(ev["vcpus"] <= node_pus[n] and (cap is None or mem <= cap)
                           for n, cap in capacity.items())
                if fits:
                    ev["locality"] = "numa"
            out.write(json.dumps(ev) + "\n")
    return out_path


def locality_run(vcpuplace, source, trace):
    sim = json.loads(run([vcpuplace, "simulate", "--json", "--topology", source, trace]))
    counts = []
    for ev in sim["events"]:
        if ev["op"] == "start" and ev["outcome"] == "placed":
            per = {}
            for v in ev["plan"]["vcpus"]:
                per[v["numa"]] = per.get(v["numa"], 0) + 1
            counts.append(per)
    m = sim["metrics"]
    return {"placed": m["placed"], "refused": m["refused"],
            "vcpus_admitted_pct": m["vcpus_admitted_pct"],
            "numa_span_policy_excess_avg": m["numa_span_policy_excess_avg"], **spans(counts)}


def nova_locality(out_path, node_of_cpu):
    asked = placed_vcpus = 0
    counts = []
    with open(out_path, encoding="utf-8") as f:
        for ln in f:
            rec = json.loads(ln)
            if rec["op"] == "stop":
                continue
            asked += rec["vcpus"]
            if not rec.get("refused"):
                placed_vcpus += rec["vcpus"]
                per = {}
                for c in rec["cpus"]:
                    per[node_of_cpu[c]] = per.get(node_of_cpu[c], 0) + 1
                counts.append(per)
    return {"placed": len(counts), "vcpus_admitted_pct": round(100.0 * placed_vcpus / asked, 3),
            "numa_span_policy_excess_avg": 0.0 if not spans(counts)["spanning_vms"] else None,
            **spans(counts)}


def simulate(vcpuplace, source, trace, capacity):
    sim = json.loads(run([vcpuplace, "simulate", "--json", "--topology", source, trace]))
    peaks = Peaks(capacity)
    placed = refused = 0
    for ev in sim["events"]:
        if ev["op"] == "start" and ev["outcome"] == "placed":
            placed += 1
            peaks.start(ev["domain"], {m["numa"]: m["bytes"] for m in ev["plan"].get("memory", [])})
        elif ev["op"] == "start" and ev["outcome"] == "refused":
            refused += 1
        elif ev["op"] == "stop":
            peaks.stop(ev["domain"])
    return {"placed": placed, "refused": refused, "nodes": peaks.result(), "overcommitted_events": peaks.overcommitted}


def nova(topo_json, trace, out_path, capacity, node_of_cpu):
    line = run([sys.executable, os.path.join(HERE, "baselines", "run.py"), "nova-mixed",
                topo_json, trace, out_path])
    counts = json.loads(line)
    asked = {}
    with open(trace, encoding="utf-8") as f:
        for ln in f:
            ev = json.loads(ln)
            if ev["op"] == "start":
                asked[ev["name"]] = memory_bytes(ev.get("memory")) or 0
    peaks = Peaks(capacity)
    with open(out_path, encoding="utf-8") as f:
        for ln in f:
            rec = json.loads(ln)
            if rec["op"] == "stop":
                peaks.stop(rec["name"])
            elif not rec.get("refused"):
                cpus = rec["cpus"]
                per = {}
                for c in cpus:
                    per[node_of_cpu[c]] = per.get(node_of_cpu[c], 0) + asked[rec["name"]] // len(cpus)
                peaks.start(rec["name"], per)
    return {"placed": counts["placed"], "refused": counts["refused"],
            "nodes": peaks.result(), "overcommitted_events": peaks.overcommitted}


def fit_topology(args, source):
    slug = "".join(c if c.isalnum() or c in ".-" else "_" for c in source)[:80]
    work = os.path.join(args.work, slug)
    os.makedirs(work, exist_ok=True)
    topo_json = os.path.join(work, "topology.json")
    with open(topo_json, "w", encoding="utf-8") as f:
        run([args.vcpuplace, "topology", "--json", "--topology", source], stdout=f)
    with open(topo_json, encoding="utf-8") as f:
        topo = json.load(f)
    capacity = {n["numa"]: (n["memory"] - RESERVE if n.get("memory") else None)
                for n in topo["nodes"]}
    node_of_cpu = {pu["cpu"]: pu["numa"] for pu in topo["cpus"]}
    trace = os.path.join(work, "trace.jsonl")
    info = json.loads(run([sys.executable, os.path.join(HERE, "gen_trace.py"), "--topology-json",
                           topo_json, "--seed", str(args.seed), "--churn", str(args.churn),
                           "--memory-per-vcpu", str(args.memory_per_vcpu), trace]))
    bare = strip_memory(trace, os.path.join(work, "trace-nomemory.jsonl"))
    out = {"source": source, "trace": info, "memory_per_vcpu_gib": args.memory_per_vcpu}
    out["vcpuplace"] = simulate(args.vcpuplace, source, trace, capacity)
    out["vcpuplace_without_memory"] = simulate(args.vcpuplace, source, bare, capacity)
    out["nova"] = nova(topo_json, trace, os.path.join(work, "nova.jsonl"), capacity, node_of_cpu)
    out["nova_without_memory"] = nova(topo_json, bare, os.path.join(work, "nova-nomemory.jsonl"),
                                      capacity, node_of_cpu)
    for side in ("vcpuplace", "nova"):
        out[side]["refusals_memory_adds"] = (out[side]["refused"] -
                                             out[f"{side}_without_memory"]["refused"])
    node_pus = {}
    for cpu, node in node_of_cpu.items():
        node_pus[node] = node_pus.get(node, 0) + 1
    out["locality"] = {
        which: locality_run(args.vcpuplace, source,
                            with_locality(trace, os.path.join(work, f"trace-{which}.jsonl"),
                                          which, capacity, node_pus))
        for which in ("auto", "node-first", "numa")}
    out["locality"]["nova"] = nova_locality(os.path.join(work, "nova.jsonl"), node_of_cpu)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vcpuplace", required=True)
    ap.add_argument("--work", required=True, help="scratch folder for traces and outcomes")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--seed", type=int, default=7451)
    ap.add_argument("--churn", type=int, default=3000)
    ap.add_argument("--memory-per-vcpu", type=int, default=2)
    ap.add_argument("sources", nargs="+")
    args = ap.parse_args()
    results = [fit_topology(args, s) for s in args.sources]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"seed": args.seed, "churn": args.churn, "topologies": results}, f, indent=1)
    for r in results:
        v, n = r["vcpuplace"], r["nova"]
        print(f"{r['source']}: {r['trace']['events']} events, {r['memory_per_vcpu_gib']} GiB per vCPU")
        for side, d in (("vcpuplace", v), ("nova", n)):
            peak = ", ".join(f"node {k}: {x['peak'] / 2**30:.1f}/"
                             f"{(x['capacity'] or 0) / 2**30:.1f} GiB"
                             for k, x in d["nodes"].items())
            print(f"  {side:9} placed {d['placed']}, refused {d['refused']} "
                  f"({d['refusals_memory_adds']:+d} with memory), overcommitted events "
                  f"{d['overcommitted_events']}; peak {peak}")
        print("  locality   placed  vCPUs admitted  spanning VMs  span beyond policy  "
              "span imbalance")
        for which, d in r["locality"].items():
            beyond = d["numa_span_policy_excess_avg"]
            print(f"  {which:10} {d['placed']:6}  {d['vcpus_admitted_pct']:13.1f}%  "
                  f"{d['spanning_vms']:12}  {'-' if beyond is None else f'{beyond:.3f}':>18}  "
                  f"{d['span_imbalance_avg']:14.2f}")


if __name__ == "__main__":
    main()
