#!/usr/bin/env python3
"""Seeded VM arrival/departure traces in the `vcpuplace simulate` format.

    gen_trace.py --topology-json TOPO.json --seed N [--churn EVENTS] [--smt POLICY] OUT.jsonl

Sizes 1, 2, 4, 8, 16, 32 vCPUs, small ones most frequent (weights below); smt spread,
pack, isolate and share mixed; two in five VMs alone, the others in one of six trust groups
(tenants). Pack VMs declare the guest threads that line up with the host's cores. The VMs of
tenants t1..t3 ask for one cookie per group (coresched=group: they may share cores); those
of t4..t6 keep the default, a cookie per VM, so they trust no one but themselves. Which
tenant asks which is fixed, so the trace's events are those of a trace without coresched.

Two phases. Fill: VMs arrive until their vCPUs exceed the host's PUs by a tenth, so that
every placer meets its first refusal. Churn: EVENTS events, each a departure of a random
running VM when the running vCPUs exceed 95% of the PUs and an arrival otherwise, so that
the host stays nearly full and holes left by departures must be reused. Load counts vCPUs,
not what a policy makes a VM hold (isolate holds its siblings idle): the trace must not
depend on any placer, and a policy that holds more PUs simply meets more refusals.
"Running" is the generator's view (a VM some placer refused still departs later; its stop
is a no-op there): every placer gets the very same events.

--smt POLICY writes the same trace with every VM asking POLICY (and, for pack, declaring
the threads pack lines up): the per-policy columns of the benchmark.

Every VM asks MEMORY_PER_VCPU GiB per vCPU (--memory-per-vcpu; 0 leaves memory out), as
flavors scale RAM with vCPUs: derived from the size, it draws nothing from the generator,
so a seed gives the same VMs with or without memory.
"""

import argparse
import json
import random

SIZES = (1, 2, 4, 8, 16, 32)
SIZE_WEIGHTS = (30, 26, 20, 13, 7, 4)
SMT = ("spread", "pack", "isolate", "share")
SMT_WEIGHTS = (40, 25, 15, 20)
GROUPS = tuple(f"t{i}" for i in range(1, 7))
GROUP_COOKIE = GROUPS[:3]
ALONE_SHARE = 0.4
MEMORY_PER_VCPU = 2
FILL_FACTOR = 1.1
CHURN_TARGET = 0.95


def guest_threads(vcpus, host_smt):
    """The largest thread count per guest core that divides vcpus and fits a host core."""
    for t in range(host_smt, 1, -1):
        if vcpus % t == 0:
            return t
    return 1


def with_policy(vm, smt, host_smt):
    out = {k: v for k, v in vm.items() if k != "threads"}
    out["smt"] = smt
    if smt == "pack":
        t = guest_threads(vm["vcpus"], host_smt)
        if t > 1:
            out["threads"] = t
    return out


def generate(pus, host_smt, seed, churn, memory_per_vcpu=MEMORY_PER_VCPU):
    rng = random.Random(seed)
    sizes = [s for s in SIZES if s <= pus]
    weights = SIZE_WEIGHTS[:len(sizes)]
    running, events = [], []
    load = 0
    serial = 0

    def arrive():
        nonlocal load, serial
        serial += 1
        vm = {"op": "start", "name": f"vm{serial:05d}",
              "vcpus": rng.choices(sizes, weights)[0]}
        vm = with_policy(vm, rng.choices(SMT, SMT_WEIGHTS)[0], host_smt)
        if rng.random() >= ALONE_SHARE:
            vm["group"] = rng.choice(GROUPS)
            if vm["group"] in GROUP_COOKIE:
                vm["coresched"] = "group"
        if memory_per_vcpu:
            vm["memory"] = f"{memory_per_vcpu * vm['vcpus']}GiB"
        running.append(vm)
        events.append(vm)
        load += vm["vcpus"]

    def depart():
        nonlocal load
        vm = running.pop(rng.randrange(len(running)))
        events.append({"op": "stop", "name": vm["name"]})
        load -= vm["vcpus"]

    while load <= pus * FILL_FACTOR:
        arrive()
    fill = len(events)
    for _ in range(churn):
        if running and load > pus * CHURN_TARGET:
            depart()
        else:
            arrive()
    return events, fill


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology-json", required=True,
                    help="output of `vcpuplace topology --json`")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--churn", type=int, default=3000, help="events after the fill")
    ap.add_argument("--smt", choices=SMT, help="every VM asks this policy")
    ap.add_argument("--memory-per-vcpu", type=int, default=MEMORY_PER_VCPU,
                    help="GiB of memory per vCPU each VM asks (0: no memory)")
    ap.add_argument("out")
    args = ap.parse_args()
    with open(args.topology_json, encoding="utf-8") as f:
        topo = json.load(f)
    pus = sum(1 for pu in topo["cpus"] if pu["usable"])
    host_smt = max(1, topo["smt"])
    events, fill = generate(pus, host_smt, args.seed, args.churn, args.memory_per_vcpu)
    with open(args.out, "w", encoding="utf-8") as out:
        for ev in events:
            if args.smt and ev["op"] == "start":
                ev = with_policy(ev, args.smt, host_smt)
            out.write(json.dumps(ev) + "\n")
    print(json.dumps({"events": len(events), "fill_events": fill, "seed": args.seed,
                      "pus": pus, "smt": args.smt or "mixed"}))


if __name__ == "__main__":
    main()
