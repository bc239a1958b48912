#!/usr/bin/python3
"""The placement comparison: vcpuplace against naive pinning, Nova and kubelet on the same
seeded traces and topologies, every outcome scored by the one C scorer.

    compare.py --vcpuplace BIN --work DIR --out results.json [--seed N] [--churn N]
               [--variants mixed,...] [--baselines nova-mixed,...] [--before BIN] SOURCE...

For each topology SOURCE (hwloc XML or synthetic:...):
- `vcpuplace topology --json` exports the host every baseline places on;
- gen_trace.py writes the mixed trace and the same trace with every VM asking one policy;
- `vcpuplace simulate --json` places each trace (columns vcpuplace-mixed, -spread, -pack,
  -isolate, -share) and scores it;
- the baselines place the mixed trace and `vcpuplace score` scores their outcomes. Where a
  placer ignores the smt a VM asks for (naive, kubelet, Nova with one thread policy for all),
  its placements are the same for every variant, so its outcome is relabelled with each
  variant's smt and threads and scored again: each variant's table then judges every placer
  by what the VMs of that variant asked. nova-mixed maps each VM's smt (mixed only).
- vcpuplace's own placements of the mixed trace are also written as an outcome file and
  scored by `vcpuplace score`: its metrics must equal simulate's (decision times aside),
  which checks that both paths score alike.
- every outcome's starts carry the "memory" their VM asked in the trace (added here where a
  placer's outcome lacks it), so that the scorer holds the same memory per node for every
  placer and judges a stranger's sibling against the free cores whose node had memory for
  the VM (untrusted_shares_while_usable_core).
- vCPUs running (averaged over events) are counted here from the outcomes, beside the
  scorer's metrics: the scorer counts VMs, and a placer that refuses one 32-vCPU VM may
  then place several small ones.
- the mixed trace is also placed without compaction (vcpuplace-mixed-nomoves, simulate
  --max-moves 0), and with --before BIN by an earlier vcpuplace (vcpuplace-before-mixed),
  given the trace without its memory asks (a vcpuplace from before memory was modelled
  refuses the key, and ignored memory anyway), whose placements are scored by this tree's
  scorer: what the placer fixes and compaction each change, on the same events and the
  same scorer.
- --variants and --baselines limit the run (the other seeds need only the mixed trace and
  nova-mixed).

Must run under the system /usr/bin/python3 (the nova baselines import Debian's python3-nova).
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ("mixed", "spread", "pack", "isolate", "share")
BASELINES = ("naive", "kubelet", "kubelet-fullpcpus", "nova-prefer", "nova-require",
             "nova-isolate")


def run(cmd, stdout=None):
    res = subprocess.run(cmd, stdout=subprocess.PIPE if stdout is None else stdout,
                         stderr=subprocess.PIPE, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr.strip()}")
    return res.stdout


def score(vcpuplace, source, outcomes):
    return json.loads(run([vcpuplace, "score", "--json", "--topology", source,
                           outcomes]))["metrics"]


def relabel(outcome_path, trace_path, out_path):
    """The outcome with each start's smt and threads taken from another variant's trace."""
    asks = {}
    with open(trace_path, encoding="utf-8") as f:
        for line in f:
            ev = json.loads(line)
            if ev["op"] == "start":
                asks[ev["name"]] = ev
    with open(outcome_path, encoding="utf-8") as f, open(out_path, "w", encoding="utf-8") as out:
        for line in f:
            rec = json.loads(line)
            if rec["op"] == "start":
                ask = asks[rec["name"]]
                rec["smt"] = ask["smt"]
                rec.pop("threads", None)
                if "threads" in ask:
                    rec["threads"] = ask["threads"]
            out.write(json.dumps(rec) + "\n")


def plan_cpu(v):
    """A plan's vCPU's CPU: "cpu" (null: none); the --before build writes "pu" (-1: none)."""
    if "cpu" in v:
        return v["cpu"]
    return None if v["pu"] < 0 else v["pu"]


def simulate_outcome(sim, trace_path, out_path):
    """vcpuplace's own placements as an outcome file (no decision times: us = 0)."""
    asks = {}
    with open(trace_path, encoding="utf-8") as f:
        for line in f:
            ev = json.loads(line)
            if ev["op"] == "start":
                asks[ev["name"]] = ev
    with open(out_path, "w", encoding="utf-8") as out:
        for ev in sim["events"]:
            # the --before build's simulate names the domain "name" (before the JSON format 1)
            dom = ev["domain"] if "domain" in ev else ev["name"]
            if ev["op"] == "stop":
                out.write(json.dumps({"op": "stop", "name": dom}) + "\n")
                continue
            ask = asks[dom]
            rec = {"op": "start", "name": dom, "vcpus": ask["vcpus"], "smt": ask["smt"],
                   "us": 0}
            for key in ("group", "coresched", "memory"):
                if key in ask:
                    rec[key] = ask[key]
            plan = ev.get("plan")
            if plan is None:
                rec["refused"] = True
            else:
                threads = plan.get("guest_topology", {}).get("threads") or ask.get("threads")
                if threads:
                    rec["threads"] = threads
                rec["cpus"] = [plan_cpu(v) for v in sorted(plan["vcpus"], key=lambda v: v["vcpu"])]
                rec["reserved"] = cpu_list(plan["reserved"])
                if plan.get("moves"):
                    rec["moves"] = [{"name": m["domain"], "from": m["from"], "to": m["to"]}
                                    for m in plan["moves"]]
            out.write(json.dumps(rec) + "\n")


def add_memory(outcome_path, trace_path):
    """Gives each start of an outcome file the "memory" its VM asked in the trace, where the
    placer's outcome left it out (rewritten in place)."""
    asks = {}
    with open(trace_path, encoding="utf-8") as f:
        for line in f:
            ev = json.loads(line)
            if ev["op"] == "start" and "memory" in ev:
                asks[ev["name"]] = ev["memory"]
    with open(outcome_path, encoding="utf-8") as f:
        recs = [json.loads(line) for line in f]
    with open(outcome_path, "w", encoding="utf-8") as out:
        for rec in recs:
            if rec["op"] == "start" and "memory" not in rec and rec["name"] in asks:
                rec["memory"] = asks[rec["name"]]
            out.write(json.dumps(rec) + "\n")


def cpu_list(text):
    out = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def without_memory(trace_path, out_path):
    """The trace without the memory each VM asks: a vcpuplace from before memory was modelled
    refuses the key, and placed as if memory were no limit anyway."""
    with open(trace_path, encoding="utf-8") as f, open(out_path, "w", encoding="utf-8") as out:
        for line in f:
            ev = json.loads(line)
            ev.pop("memory", None)
            out.write(json.dumps(ev) + "\n")
    return out_path


def refused_by_smt(outcome_path):
    """Refused starts per smt policy asked, from an outcome file."""
    out = {}
    with open(outcome_path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["op"] == "start" and rec.get("refused"):
                out[rec["smt"]] = out.get(rec["smt"], 0) + 1
    return out


def decision_by_size(outcome_path):
    """Decision times per vCPU count, from an outcome file."""
    out = {}
    with open(outcome_path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["op"] == "start":
                out.setdefault(rec["vcpus"], []).append(rec["us"])
    return out


def vcpus_running_avg(outcome_path):
    """vCPUs running, averaged over events the way the scorer averages (each placed or
    refused start and each stop of a running VM is one event). The scorer counts VMs; this
    says how much of the host the placements kept busy."""
    sizes, running, total, events = {}, 0, 0, 0
    with open(outcome_path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["op"] == "start":
                if not rec.get("refused"):
                    sizes[rec["name"]] = rec["vcpus"]
                    running += rec["vcpus"]
            elif rec["name"] in sizes:
                running -= sizes.pop(rec["name"])
            else:
                continue
            total += running
            events += 1
    return round(total / events, 3) if events else 0


def shared_vcpu_placements(outcome_path, topo):
    """Placements that put a vCPU on a core where another vCPU (of any VM, itself included)
    runs: what smt=isolate promises never to do, and the scorer does not look at (it
    judges pairs of VMs, not a VM's own siblings)."""
    core_of = {pu["cpu"]: pu["core"] for pu in topo["cpus"]}
    busy, held, count = {}, {}, 0
    with open(outcome_path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["op"] == "stop":
                for cpu in held.pop(rec["name"], []):
                    busy[core_of[cpu]] -= 1
                continue
            if rec.get("refused"):
                continue
            cores = [core_of[c] for c in rec["cpus"]]
            count += any(busy.get(c, 0) for c in cores) or len(set(cores)) < len(cores)
            for c in cores:
                busy[c] = busy.get(c, 0) + 1
            held[rec["name"]] = rec["cpus"]
    return count


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def compare_topology(args, source, pool):
    name = os.path.basename(source) if not source.startswith("synthetic:") else source
    slug = "".join(c if c.isalnum() or c in ".-" else "_" for c in name)
    work = os.path.join(args.work, slug)
    os.makedirs(work, exist_ok=True)
    topo_json = os.path.join(work, "topology.json")
    with open(topo_json, "w", encoding="utf-8") as f:
        run([args.vcpuplace, "topology", "--json", "--topology", source], stdout=f)
    with open(topo_json, encoding="utf-8") as f:
        topo = json.load(f)
    traces, trace_info = {}, None
    for v in args.variants:
        traces[v] = os.path.join(work, f"trace-{v}.jsonl")
        cmd = [sys.executable, os.path.join(HERE, "gen_trace.py"), "--topology-json", topo_json,
               "--seed", str(args.seed), "--churn", str(args.churn), traces[v]]
        if v != "mixed":
            cmd[-1:-1] = ["--smt", v]
        info = json.loads(run(cmd))
        trace_info = trace_info or info

    timings = {}

    def baseline(placer):
        out = os.path.join(work, f"outcome-{placer}.jsonl")
        t0 = time.monotonic()
        run([sys.executable, os.path.join(HERE, "baselines", "run.py"), placer, topo_json,
             traces["mixed"], out])
        timings[placer] = round(time.monotonic() - t0, 2)
        add_memory(out, traces["mixed"])
        return placer, out

    futures = [pool.submit(baseline, p) for p in args.baselines]

    metrics = {v: {} for v in args.variants}
    running = {v: {} for v in args.variants}
    shared = {}
    sims = {}
    refusals = {}
    for label, binary, extra in (("vcpuplace-mixed-nomoves", args.vcpuplace, ["--max-moves", "0"]),
                                 ("vcpuplace-before-mixed", args.before, [])):
        if not binary or "mixed" not in args.variants:
            continue
        trace = traces["mixed"]
        if binary == args.before:
            trace = without_memory(trace, os.path.join(work, "trace-mixed-nomemory.jsonl"))
        sim = json.loads(run([binary, "simulate", "--json", "--topology", source, *extra,
                              trace]))
        own = os.path.join(work, f"outcome-{label}.jsonl")
        simulate_outcome(sim, traces["mixed"], own)
        metrics["mixed"][label] = score(args.vcpuplace, source, own)
        running["mixed"][label] = vcpus_running_avg(own)
        refusals[label] = refused_by_smt(own)
    for v in args.variants:
        sims[v] = json.loads(run([args.vcpuplace, "simulate", "--json", "--topology", source,
                                  traces[v]]))
        metrics[v][f"vcpuplace-{v}"] = sims[v]["metrics"]
        own = os.path.join(work, f"outcome-vcpuplace-{v}.jsonl")
        simulate_outcome(sims[v], traces[v], own)
        running[v][f"vcpuplace-{v}"] = vcpus_running_avg(own)
        if v == "isolate":
            shared[f"vcpuplace-{v}"] = shared_vcpu_placements(own, topo)
        if v == "mixed":
            refusals["vcpuplace-mixed"] = refused_by_smt(own)
    rescored = score(args.vcpuplace, source, os.path.join(work, "outcome-vcpuplace-mixed.jsonl"))
    mismatch = {k: (rescored[k], sims["mixed"]["metrics"][k]) for k in rescored
                if not k.startswith("decision_us") and rescored[k] != sims["mixed"]["metrics"][k]}

    outcomes = dict(f.result() for f in futures)
    sizes = {}
    for placer, out in outcomes.items():
        sizes[placer] = {str(k): median(v) for k, v in sorted(decision_by_size(out).items())}
        shared[placer] = shared_vcpu_placements(out, topo)
        refusals[placer] = refused_by_smt(out)
        if placer == "nova-mixed":
            metrics["mixed"][placer] = score(args.vcpuplace, source, out)
            running["mixed"][placer] = vcpus_running_avg(out)
            continue
        for v in args.variants:
            running[v][placer] = vcpus_running_avg(out)
            labelled = os.path.join(work, f"outcome-{placer}-as-{v}.jsonl")
            relabel(out, traces[v], labelled)
            metrics[v][placer] = score(args.vcpuplace, source, labelled)

    return slug, {
        "source": source,
        "name": name,
        "pus": sum(1 for pu in topo["cpus"] if pu["usable"]),
        "cores": len({pu["core"] for pu in topo["cpus"]}),
        "numa_nodes": len({pu["numa"] for pu in topo["cpus"]}),
        "l3": len({pu["l3"] for pu in topo["cpus"]}),
        "packages": len({pu["package"] for pu in topo["cpus"]}),
        "smt": topo["smt"],
        "trace": trace_info,
        "metrics": metrics,
        "vcpus_running_avg": running,
        "mixed_refused_by_smt": refusals,
        "placements_sharing_a_core": shared,
        "baseline_decision_us_median_by_vcpus": sizes,
        "baseline_wall_s": timings,
        "score_matches_simulate": not mismatch,
        "score_mismatch": mismatch,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vcpuplace", required=True)
    ap.add_argument("--work", required=True, help="scratch folder for traces and outcomes")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--seed", type=int, default=7451)
    ap.add_argument("--churn", type=int, default=3000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated traces to place (mixed must be among them)")
    ap.add_argument("--baselines", default=",".join(BASELINES + ("nova-mixed",)),
                    help="comma-separated baselines to run")
    ap.add_argument("--before", help="an earlier vcpuplace to place the mixed trace too")
    ap.add_argument("sources", nargs="+")
    args = ap.parse_args()
    args.variants = tuple(v for v in args.variants.split(",") if v)
    args.baselines = tuple(b for b in args.baselines.split(",") if b)
    for v in args.variants:
        if v not in VARIANTS:
            ap.error(f"--variants: '{v}' is not one of {', '.join(VARIANTS)}")
    if "mixed" not in args.variants:
        ap.error("--variants must include mixed")
    for b in args.baselines:
        if b not in BASELINES + ("nova-mixed",):
            ap.error(f"--baselines: '{b}' is not one of {', '.join(BASELINES)}, nova-mixed")
    os.makedirs(args.work, exist_ok=True)
    result = {"seed": args.seed, "churn": args.churn, "topologies": {}}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for source in args.sources:
            t0 = time.monotonic()
            slug, res = compare_topology(args, source, pool)
            res["wall_s"] = round(time.monotonic() - t0, 1)
            result["topologies"][slug] = res
            print(f"compare: {slug}: {res['trace']['events']} events, {res['wall_s']} s",
                  flush=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
