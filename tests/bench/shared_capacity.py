#!/usr/bin/python3
"""Shared-CPU capacity against Nova: VMs placed on the same host and the same seeded trace.

    shared_capacity.py --vcpuplace BIN --topology SOURCE [--ratio R] [--seeds 1,2,3]
                       [--churn N] [--dedicated-pct P] [--out results.json]

The trace (per seed): VMs of Nova-like flavors (1, 2, 4, 8 vCPUs, 2 GiB per vCPU) arrive
until their vCPUs exceed R x the host's usable CPUs by a tenth, then churn (a departure of
a random running VM while the running vCPUs exceed 95% of R x CPUs, an arrival
otherwise). Shared VMs are cpus=shared (Nova hw:cpu_policy=shared) at ratio R, half of
them in one of three tenant groups with one cookie each (coresched=group); P% of the VMs
are dedicated (smt=spread or isolate; Nova hw:cpu_policy=dedicated with
hw:cpu_thread_policy prefer or isolate).

Placers, each its own code on the same events:
- vcpuplace: `vcpuplace simulate --json`;
- nova: Debian's python3-nova, nova.virt.hardware.numa_fit_instance_to_host() with
  NUMATopologyLimits(cpu_allocation_ratio=R, ram_allocation_ratio=1.0), as the
  NUMATopologyFilter and the resource tracker call it (dedicated VMs pinned through the
  same function, baselines/nova_baseline.py's host cells, memory included), shared
  flavors with hw:numa_nodes=1 so that Nova fits them per NUMA node too;
- nova-placement (shown beside): placement's VCPU inventory rule alone, used + asked <=
  R x CPUs (what a flavor without a NUMA topology meets; placement is not in python3-nova,
  so this one line is the formula, not Nova's code).

Per placer: shared and dedicated VMs placed, refused; for vcpuplace, cookies per held core
(distinct cookies among the shared VMs floating on a core, averaged over events and at
the end) and the share of held cores with more than one cookie; beside them the dedicated
VMs vcpuplace places of the same trace without its shared VMs ("alone": as today). Exits 1
when vcpuplace places fewer shared or fewer dedicated VMs than nova on any seed.

--dedicated-cores-pct P splits the host as Nova since Train does (cpu_dedicated_set: P% of
each node's cores; cpu_shared_set: the rest): Nova's cells get pcpuset and cpuset from it,
and every VM of the trace carries <vcpu cpuset> of its set, as Nova writes it.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "baselines"))

import common  # noqa: E402

SIZES = (1, 2, 4, 8)
SIZE_WEIGHTS = (35, 30, 22, 13)
GIB_PER_VCPU = 2
GROUPS = ("t1", "t2", "t3")


def generate(pus, ratio, seed, churn, dedicated_pct, sets=None):
    rng = random.Random(seed)
    cap = ratio * pus
    events, running, n = [], {}, 0

    def arrive():
        nonlocal n
        n += 1
        vcpus = rng.choices(SIZES, SIZE_WEIGHTS)[0]
        vm = {"op": "start", "domain": f"vm{n}", "vcpus": vcpus,
              "memory": f"{GIB_PER_VCPU * vcpus}GiB"}
        if rng.random() * 100 < dedicated_pct:
            vm["smt"] = rng.choice(("spread", "isolate"))
            if sets:
                vm["cpuset"] = sets["dedicated"]
        else:
            if sets:
                vm["cpuset"] = sets["shared"]
            vm["cpus"] = "shared"
            vm["ratio"] = f"{ratio:g}"
            if rng.random() < 0.5:
                vm["group"] = rng.choice(GROUPS)
                vm["coresched"] = "group"
        events.append(vm)
        running[vm["domain"]] = vcpus

    if sets:
        cap = ratio * sets["nshared"]
    while sum(running.values()) <= 1.1 * cap:
        arrive()
    for _ in range(churn):
        if sum(running.values()) > 0.95 * cap and running:
            name = rng.choice(sorted(running))
            del running[name]
            events.append({"op": "stop", "domain": name})
        else:
            arrive()
    return events


def write_trace(events, path):
    with open(path, "w") as f:
        for ev in events:
            f.write(json.dumps(ev) + "\n")


def cookie_of(plan):
    pol = plan["policy"]
    if plan.get("group") and pol["coresched"] != "vm":
        return "group:" + plan["group"]
    return "vm:" + plan["domain"]


def cpu_list(text):
    out = set()
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def vcpuplace_run(binary, source, events, host):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        path = f.name
    write_trace(events, path)
    res = subprocess.run([binary, "simulate", "--json", "--topology", source, path],
                         capture_output=True, text=True, check=False)
    os.unlink(path)
    if res.returncode != 0:
        raise SystemExit(f"vcpuplace simulate: exit {res.returncode}: {res.stderr}")
    doc = json.loads(res.stdout)
    kind = {ev["domain"]: ("shared" if ev.get("cpus") == "shared" else "dedicated")
            for ev in events if ev["op"] == "start"}
    placed = {"shared": 0, "dedicated": 0}
    refused = {"shared": 0, "dedicated": 0}
    size = {ev["domain"]: ev["vcpus"] for ev in events if ev["op"] == "start"}
    vcpus = 0
    held = {}  # domain -> (cookie, cores)
    per_event, mixed_sum = [], []
    for ev in doc["events"]:
        if ev["op"] == "stop":
            held.pop(ev["domain"], None)
        elif ev["outcome"] in ("placed", "degraded"):
            placed[kind[ev["domain"]]] += 1
            vcpus += size[ev["domain"]]
            plan = ev["plan"]
            if plan.get("shared") is not None:
                cores = {host.core_of[c] for c in cpu_list(plan["shared"])}
                held[ev["domain"]] = (cookie_of(plan), cores)
        else:
            refused[kind[ev["domain"]]] += 1
        cookies = {}
        for cookie, cores in held.values():
            for core in cores:
                cookies.setdefault(core, set()).add(cookie)
        if cookies:
            per_event.append(sum(len(c) for c in cookies.values()) / len(cookies))
            mixed_sum.append(sum(len(c) > 1 for c in cookies.values()) / len(cookies))
    end = cookies
    return {
        "placed": placed, "refused": refused, "vcpus_placed": vcpus,
        "cookies_per_core_avg": round(sum(per_event) / max(len(per_event), 1), 3),
        "cookies_per_core_end": round(sum(len(c) for c in end.values()) / max(len(end), 1), 3),
        "cores_with_strangers_avg_pct": round(100 * sum(mixed_sum) / max(len(mixed_sum), 1), 1),
        "cores_with_strangers_end_pct":
            round(100 * sum(len(c) > 1 for c in end.values()) / max(len(end), 1), 1),
    }


class NovaShared:
    """Nova's fit for every VM of the trace: dedicated through nova_baseline's placer, shared
    through the same numa_fit_instance_to_host() with the allocation ratio's limits."""

    def __init__(self, host, ratio, split=None):
        import nova_baseline
        from nova import objects
        from nova.virt import hardware

        self.objects, self.hardware = objects, hardware
        self.inner = nova_baseline.NovaPlacer(host, None)
        self.limits = objects.NUMATopologyLimits(cpu_allocation_ratio=ratio,
                                                 ram_allocation_ratio=1.0)
        # cpu_dedicated_set and cpu_shared_set (Nova since Train): pinned VMs on the first,
        # shared ones floating over the second
        for cell in self.inner.topology.cells if split else ():
            cell.pcpuset = cell.pcpuset & split["dedicated_cpus"]
            cell.cpuset = cell.cpuset & split["shared_cpus"]
            cell.siblings = [s & cell.pcpuset for s in cell.siblings if s & cell.pcpuset]

    def start(self, ev):
        if ev.get("cpus") != "shared":
            return self.inner.start(dict(ev, name=ev["domain"])) is not None
        extra = {"hw:cpu_policy": "shared", "hw:numa_nodes": "1"}
        flavor = self.objects.Flavor(vcpus=ev["vcpus"],
                                     memory_mb=common.memory_bytes(ev["memory"]) >> 20,
                                     extra_specs=extra)
        wanted = self.hardware.numa_get_constraints(flavor, self.inner.image)
        fitted = self.hardware.numa_fit_instance_to_host(self.inner.topology, wanted,
                                                         limits=self.limits)
        if fitted is None:
            return False
        self.inner.topology = self.hardware.numa_usage_from_instance_numa(
            self.inner.topology, fitted)
        self.inner.running[ev["domain"]] = fitted
        return True

    def stop(self, name):
        self.inner.stop(name)


def nova_run(host, events, ratio, split=None):
    placer = NovaShared(host, ratio, split)
    return replay_with(placer, events)


class Placement:
    """Placement's VCPU inventory rule: used + asked <= ratio x CPUs (shared and dedicated
    alike, as in the legacy layout where pinned VMs draw on the same inventory)."""

    def __init__(self, host, ratio, split=None):
        self.cap = ratio * (len(split["shared_cpus"]) if split else len(host.usable))
        self.used, self.running = 0, {}

    def start(self, ev):
        if ev.get("cpus") != "shared":
            return False
        if self.used + ev["vcpus"] > self.cap:
            return False
        self.used += ev["vcpus"]
        self.running[ev["domain"]] = ev["vcpus"]
        return True

    def stop(self, name):
        self.used -= self.running.pop(name, 0)


def replay_with(placer, events):
    placed = {"shared": 0, "dedicated": 0}
    refused = {"shared": 0, "dedicated": 0}
    vcpus = 0
    for ev in events:
        if ev["op"] == "stop":
            placer.stop(ev["domain"])
            continue
        kind = "shared" if ev.get("cpus") == "shared" else "dedicated"
        if placer.start(ev):
            placed[kind] += 1
            vcpus += ev["vcpus"]
        else:
            refused[kind] += 1
    return {"placed": placed, "refused": refused, "vcpus_placed": vcpus}


def topology(binary, source):
    res = subprocess.run([binary, "topology", "--json", "--topology", source],
                         capture_output=True, text=True, check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(res.stdout)
    host = common.Host.load(f.name)
    os.unlink(f.name)
    return host


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vcpuplace", required=True)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--ratio", type=float, default=4.0)
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--churn", type=int, default=400)
    ap.add_argument("--dedicated-pct", type=float, default=15)
    ap.add_argument("--dedicated-cores-pct", type=float, default=0,
                    help="split the host as Nova's cpu_dedicated_set (this share of each "
                    "node's cores) and cpu_shared_set; 0: no split")
    ap.add_argument("--out")
    args = ap.parse_args()

    host = topology(args.vcpuplace, args.topology)
    split = sets = None
    if args.dedicated_cores_pct:
        dedicated = set()
        for numa in host.numa_nodes:
            cores = sorted({host.core_of[c] for c in host.usable if host.numa_of[c] == numa})
            for core in cores[:round(len(cores) * args.dedicated_cores_pct / 100)]:
                dedicated.update(set(host.cores[core]) & set(host.usable))
        split = {"dedicated_cpus": dedicated, "shared_cpus": set(host.usable) - dedicated}
        sets = {"dedicated": ",".join(map(str, sorted(dedicated))),
                "shared": ",".join(map(str, sorted(split["shared_cpus"]))),
                "nshared": len(split["shared_cpus"])}
    rows, ok = [], True
    for seed in (int(s) for s in args.seeds.split(",")):
        events = generate(len(host.usable), args.ratio, seed, args.churn, args.dedicated_pct,
                          sets)
        vp = vcpuplace_run(args.vcpuplace, args.topology, events, host)
        nova = nova_run(host, events, args.ratio, split)
        placement = replay_with(Placement(host, args.ratio, split), events)
        alone = [ev for ev in events if ev["op"] == "stop" or ev.get("cpus") != "shared"]
        today = vcpuplace_run(args.vcpuplace, args.topology, alone, host)
        row = {"seed": seed, "starts": sum(ev["op"] == "start" for ev in events),
               "vcpuplace": vp, "nova": nova, "nova_placement": placement,
               "vcpuplace_dedicated_alone": today["placed"]["dedicated"]}
        rows.append(row)
        ok &= vp["placed"]["shared"] >= nova["placed"]["shared"]
        ok &= vp["placed"]["dedicated"] >= nova["placed"]["dedicated"]
        print(f"seed {seed}: starts {row['starts']}; shared placed vcpuplace "
              f"{vp['placed']['shared']} nova {nova['placed']['shared']} placement "
              f"{placement['placed']['shared']}; vCPUs placed vcpuplace {vp['vcpus_placed']} nova "
              f"{nova['vcpus_placed']}; dedicated vcpuplace "
              f"{vp['placed']['dedicated']} (alone {today['placed']['dedicated']}) nova "
              f"{nova['placed']['dedicated']}; cookies/core avg {vp['cookies_per_core_avg']} "
              f"end {vp['cookies_per_core_end']}; cores with strangers avg "
              f"{vp['cores_with_strangers_avg_pct']}% end {vp['cores_with_strangers_end_pct']}%")
    doc = {"format": 1, "topology": args.topology, "ratio": args.ratio,
           "dedicated_cores_pct": args.dedicated_cores_pct,
           "dedicated_pct": args.dedicated_pct, "churn": args.churn, "seeds": rows,
           "vcpuplace_at_least_nova": bool(ok)}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
