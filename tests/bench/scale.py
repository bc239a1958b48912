#!/usr/bin/env python3
"""How a decision's cost grows with the host (issue 27): synthetic hosts of 256 to 8,192 CPUs.

    scale.py [--quick] [--cpus 256,1024,...] [--out FILE.json] [--keep DIR] [--no-callgrind]

Each host is `synthetic:pack:P numa:2(memory=320GB) l3:4 core:16 pu:2` (256 CPUs a package,
128 a NUMA node). gen_trace.py's mixed arrivals fill it to 50% and to 90% of its CPUs
through `vcpuplace simulate` (at most 2 moves a start, as the daemon); the ledger it saves is
the state every probe meets. The probes are the first starts of another seed of the same
generator, each decided on that state and not kept (scale-probe): its time is the fastest of
three, its instructions are callgrind's count inside the placer alone (the harness, the
trace parser and the ledger's file are outside the collected part). Then a ledger read of
that state, a save's two halves (the copy of the plans vcpuplaced makes under its state lock,
their JSON text made after it) and `capacity` (1,2,4,8 vCPUs x each smt policy) of the empty
host.

The growth exponent is log2 of the ratio of the median decision's instructions (and times)
between the two largest hosts measured, and the slope of a least-squares fit of log(cost)
against log(CPUs) over all of them.

Prints a table; writes JSON only to --out. --keep DIR keeps each fill and probe trace (with
its topology in NAME.topology), so that `vcpuplace simulate` can replay them before and
after a change. Not a test: nothing passes or fails on time. --quick: 256 and 1,024 CPUs,
20 probes (about 2 minutes on a loaded 2-CPU machine); the full run takes tens of minutes,
most of it callgrind on the largest hosts.
Environment: VP_BUILD (default ./build).
"""

import argparse
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_trace  # noqa: E402  (the project's generator, beside this file)

FILLS = (50, 90)
MOVES = (0, 2)
FILL_SEED = 7451
PROBE_SEED = 27
SMT = 2


def topology(cpus):
    return f"synthetic:pack:{cpus // 256} numa:2(memory=320GB) l3:4 core:16 pu:2"


def write_jsonl(path, events):
    with open(path, "w", encoding="utf-8") as f:
        for ev in events:
            f.write(json.dumps(ev) + "\n")


def traces(cpus, pct, probes):
    """The fill up to pct% of the CPUs in vCPUs, and probes starts of another seed."""
    events, _ = gen_trace.generate(cpus, SMT, FILL_SEED, 0)
    fill, load = [], 0
    for ev in events:
        if load + ev["vcpus"] > cpus * pct // 100:
            break
        fill.append(ev)
        load += ev["vcpus"]
    more, _ = gen_trace.generate(cpus, SMT, PROBE_SEED, 0)
    starts = [dict(ev, name=f"probe{i:03d}") for i, ev in enumerate(more[:probes])]
    return fill, starts


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def callgrind(bench, args, work):
    """Instructions of the ledger read and of each probe's decision (callgrind dumps)."""
    prefix = os.path.join(work, "cg")
    for old in glob.glob(prefix + "*"):
        os.remove(old)
    run(["valgrind", "--tool=callgrind", "--collect-atstart=no",
         f"--callgrind-out-file={prefix}", bench] + args)
    counts = []
    for path in sorted(glob.glob(prefix + ".*"), key=lambda p: int(p.rsplit(".", 1)[1])):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    counts.append(int(line.split()[1]))
                    break
    return counts[0], counts[1:]


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def measure(build, cpus, pct, probes, use_callgrind, keep, work):
    topo = topology(cpus)
    fill, starts = traces(cpus, pct, probes)
    name = f"{cpus}-{pct}"
    base = os.path.join(keep or work, name)
    write_jsonl(base + "-fill.jsonl", fill)
    write_jsonl(base + "-probes.jsonl", starts)
    with open(base + ".topology", "w", encoding="utf-8") as f:
        f.write(topo + "\n")
    ledger = os.path.join(work, name + "-ledger.json")
    run([os.path.join(build, "plugin/cli/vcpuplace"), "simulate", "--quiet", "--topology", topo,
         "--max-moves", "2", "--save-ledger", ledger, base + "-fill.jsonl"])
    bench = os.path.join(build, "tests/bench/scale-probe")
    row = {"cpus": cpus, "fill_pct": pct, "topology": topo}
    for moves in MOVES:
        args = [topo, ledger, base + "-probes.jsonl", str(moves), "3", "0"]
        got = json.loads(run([bench] + args))
        us = [p["us"] for p in got["probes"]]
        key = f"moves{moves}"
        row["domains"] = got["domains"]
        row["ledger_read_ms"] = got["ledger_read_ms"]
        row["save_copy_ms"] = got.get("save_copy_ms")
        row["save_text_ms"] = got.get("save_text_ms")
        row[key] = {"median_us": statistics.median(us), "p99_us": percentile(us, 0.99),
                    "placed": sum(p["outcome"] != "refused" for p in got["probes"]),
                    "moves": sum(p["moves"] for p in got["probes"])}
        if use_callgrind:
            read_ir, irs = callgrind(bench, args[:4] + ["1", "0"], work)
            row["ledger_read_ir"] = read_ir
            row[key]["median_ir"] = statistics.median(irs)
            row[key]["p99_ir"] = percentile(irs, 0.99)
    return row


def capacity(build, cpus):
    bench = os.path.join(build, "tests/bench/scale-probe")
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as empty:
        got = json.loads(run([bench, topology(cpus), "-", empty.name, "0", "1", "1"]))
    return got["capacity_ms"]


def exponents(rows, key, metric):
    pts = [(r["cpus"], r[key][metric]) for r in rows if r[key].get(metric)]
    if len(pts) < 2:
        return None, None
    (c0, v0), (c1, v1) = pts[-2], pts[-1]
    last = math.log(v1 / v0) / math.log(c1 / c0)
    xs = [math.log(c) for c, _ in pts]
    ys = [math.log(v) for _, v in pts]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    fit = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return last, fit


def fmt_us(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} us"


def table(rows, caps):
    out = ["| CPUs | fill | held | median / p99, no moves | median / p99, moves | "
           "median instructions, no moves / moves | ledger read | save: copy / text |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m0, m2 = r["moves0"], r["moves2"]
        ir = (f"{m0['median_ir'] / 1e6:.2f}M / {m2['median_ir'] / 1e6:.2f}M"
              if "median_ir" in m0 else "-")
        save = (f"{r['save_copy_ms']:.1f} / {r['save_text_ms']:.1f} ms"
                if r.get("save_copy_ms") is not None else "-")
        out.append(f"| {r['cpus']:,} | {r['fill_pct']}% | {r['domains']} | "
                   f"{fmt_us(m0['median_us'])} / {fmt_us(m0['p99_us'])} | "
                   f"{fmt_us(m2['median_us'])} / {fmt_us(m2['p99_us'])} | {ir} | "
                   f"{r['ledger_read_ms']:.1f} ms | {save} |")
    out.append("")
    out.append("| CPUs | capacity, empty host |")
    out.append("|---|---|")
    for cpus, ms in caps.items():
        out.append(f"| {cpus:,} | {ms:.0f} ms |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="256 and 1,024 CPUs, 20 probes")
    ap.add_argument("--cpus", help="comma-separated host sizes, multiples of 256")
    ap.add_argument("--probes", type=int, help="probe starts per state (default 50, quick 20)")
    ap.add_argument("--capacity-max", type=int, default=4096,
                    help="largest host whose capacity is computed")
    ap.add_argument("--no-callgrind", action="store_true", help="times only")
    ap.add_argument("--out", help="write the figures here as JSON")
    ap.add_argument("--keep", help="keep the traces in this folder")
    args = ap.parse_args()
    sizes = ([256, 1024] if args.quick else [256, 512, 1024, 2048, 4096, 8192])
    if args.cpus:
        sizes = [int(c) for c in args.cpus.split(",")]
    if any(c % 256 for c in sizes):
        ap.error("--cpus: each size must be a multiple of 256")
    probes = args.probes or (20 if args.quick else 50)
    build = os.environ.get("VP_BUILD", "build")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    rows, caps = [], {}
    with tempfile.TemporaryDirectory() as work:
        for cpus in sizes:
            for pct in FILLS:
                rows.append(measure(build, cpus, pct, probes, not args.no_callgrind,
                                    args.keep, work))
                print(f"scale.py: {cpus} CPUs at {pct}% measured", file=sys.stderr)
            if cpus <= args.capacity_max:
                caps[cpus] = capacity(build, cpus)
    growth = {}
    for pct in FILLS:
        sub = [r for r in rows if r["fill_pct"] == pct]
        for moves in MOVES:
            for metric in ("median_ir", "median_us"):
                last, fit = exponents(sub, f"moves{moves}", metric)
                if last is not None:
                    growth[f"{pct}%/moves{moves}/{metric}"] = {"last_pair": last, "fit": fit}
    print(table(rows, caps))
    print("\ngrowth exponent (last pair of sizes; least-squares fit over all):")
    for k, v in growth.items():
        print(f"  {k}: {v['last_pair']:.2f}; {v['fit']:.2f}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"probes": probes, "rows": rows, "capacity_ms": caps, "growth": growth},
                      f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
