#!/usr/bin/env python3
"""Issue 16's benchmark, the host side: the configurations' pins from vcpuplace's own
placer, and the report from what the guest printed.

    coresched_cost.py plan --vcpuplace BIN --topology SRC --tenants 4,2,1,1 --work DIR
        Writes DIR/plan.json: per configuration the guest-costload CONFIG word and how the
        placer met each tenant (moves, refusals). Each tenant is a domain XML placed by
        `vcpuplace plan` in turn against a ledger of the ones before, the moves a plan lists
        applied to that ledger as the daemon's ledger would record them.
    coresched_cost.py report --plan plan.json --log MODE=CONSOLE... --out JSON
                             --chart PNG --section MD --command CMD
        Parses the guest's figure lines, writes the JSON, a chart (gnuplot, as report.py
        draws) and the report section (markdown).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from xml.sax.saxutils import quoteattr

NAMES = "ABCDEFGH"
NS = "http://vcpuplace.org/xmlns/policy/1.0"
GUEST_CPUS = 8
FI_AXIS_MAX = 150  # %: a run can force idle many times its run time (plain TCG)

# name -> (smt policy per tenant or None for no pins, cookie labels or None, CPUs, what)
def configurations(ntenants):
    per_vm = [NAMES[t] for t in range(ntenants)]
    group = per_vm[:-2] + ["g", "g"]
    return [
        ("a", None, None, "all", "no cookies, threads floating (baseline)"),
        ("b", None, per_vm, "all", "a cookie per tenant, threads floating (libvirt "
         "sched_core=vcpus today)"),
        ("c", "spread", per_vm, "all", "a cookie per tenant, pinned by vcpuplace, smt=spread"),
        ("c-pack", "pack", per_vm, "all", "a cookie per tenant, pinned by vcpuplace, smt=pack "
         "(a tenant the placer refuses floats)"),
        ("d", None, None, "smtoff", "SMT off: one thread per core online, no cookies, "
         "floating"),
        ("e", "spread", group, "all", "the last two tenants one trust group (coresched=group, "
         "one cookie), pinned by vcpuplace, smt=spread"),
    ]


def domain_xml(name, vcpus, smt, group):
    attrs = f"smt={quoteattr(smt)}"
    if group:
        attrs += f" group={quoteattr(group)} coresched='group'"
    return f"""<domain type='qemu'>
  <name>{name}</name>
  <metadata>
    <vcpuplace:policy xmlns:vcpuplace='{NS}' {attrs}/>
  </metadata>
  <memory unit='MiB'>64</memory>
  <vcpu placement='static'>{vcpus}</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
</domain>
"""


def topology_cores(vcpuplace, topology):
    """{cpu: core} of the topology as vcpuplace reads it."""
    res = subprocess.run([vcpuplace, "topology", "-t", topology, "--json"], capture_output=True,
                         text=True, check=True)
    return {p["cpu"]: p["core"] for p in json.loads(res.stdout)["cpus"]}


def place_in_turn(vcpuplace, topology, core_of, tenants, smt, labels, work):
    """Each tenant through `vcpuplace plan` against the ledger of those before it.
    Returns (CPUs per tenant, None when refused; notes)."""
    ledger_path = os.path.join(work, "ledger.json")
    ledger = {"format": 1, "domains": []}
    notes = []
    for t, vcpus in enumerate(tenants):
        name = f"tenant-{NAMES[t]}"
        group = labels[t] if labels and labels.count(labels[t]) > 1 else None
        path = os.path.join(work, f"{name}.xml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(domain_xml(name, vcpus, smt, group))
        with open(ledger_path, "w", encoding="utf-8") as f:
            json.dump(ledger, f)
        res = subprocess.run([vcpuplace, "plan", "-t", topology, "-l", ledger_path, "--json",
                              path], capture_output=True, text=True, check=False)
        if res.returncode == 2:
            why = json.loads(res.stdout).get("error", "") if res.stdout.strip() else ""
            notes.append(f"{NAMES[t]} refused: {why or res.stderr.strip()}")
            continue
        if res.returncode != 0:
            sys.exit(f"coresched_cost.py: vcpuplace plan {path}: {res.stderr.strip()}")
        plan = json.loads(res.stdout)
        for m in plan.pop("moves", None) or []:
            held = next(d for d in ledger["domains"] if d["domain"] == m["domain"])
            vcpu = next(v for v in held["vcpus"] if v["vcpu"] == m["vcpu"])
            if vcpu["cpu"] != m["from"]:
                sys.exit(f"coresched_cost.py: move {m} does not start where the ledger has it")
            vcpu["cpu"] = m["to"]
            vcpu["core"] = core_of[m["to"]]
            notes.append(f"{m['domain'].removeprefix('tenant-')} vCPU {m['vcpu']} moved "
                         f"{m['from']}->{m['to']} to make room for {NAMES[t]}")
        ledger["domains"].append(plan)
    # The final CPUs, after every move the later starts made.
    final = {d["domain"]: [v["cpu"] for v in sorted(d["vcpus"], key=lambda v: v["vcpu"])]
             for d in ledger["domains"]}
    pins = [final.get(f"tenant-{NAMES[t]}") for t in range(len(tenants))]
    return pins, notes


def cmd_plan(args):
    tenants = [int(n) for n in args.tenants.split(",")]
    os.makedirs(args.work, exist_ok=True)
    core_of = topology_cores(args.vcpuplace, args.topology)
    cores = {}
    for cpu, core in sorted(core_of.items()):
        cores.setdefault(core, []).append(cpu)
    # The sibling sets as the guest kernel writes them (thread_siblings_list, consecutive).
    siblings = "/".join(f"{c[0]}-{c[-1]}" if len(c) > 1 else str(c[0]) for c in cores.values())
    out = {"tenants": tenants, "topology": args.topology, "siblings": siblings, "configs": []}
    for name, smt, labels, cpus, what in configurations(len(tenants)):
        entry = {"name": name, "what": what, "smt": smt, "cookies": labels, "cpus": cpus}
        pins = None
        if smt:
            work = os.path.join(args.work, name)
            os.makedirs(work, exist_ok=True)
            pins, entry["placer"] = place_in_turn(args.vcpuplace, args.topology, core_of,
                                                  tenants, smt, labels, work)
        entry["pins"] = pins
        cookie_word = ",".join(labels) if labels else "-"
        pin_word = "/".join(",".join(map(str, p)) if p else "f" for p in pins) if pins else "-"
        entry["word"] = f"{name}:{cookie_word}:{pin_word}:{cpus}"
        out["configs"].append(entry)
    with open(os.path.join(args.work, "plan.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    for c in out["configs"]:
        print(c["word"])


FIG = re.compile(r"VPGUEST figure costload\.tenant (.*)")


def parse_log(path):
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = FIG.search(line.replace("\r", ""))
            if not m:
                continue
            row = dict(kv.split("=", 1) for kv in m.group(1).split())
            for k in row:
                if k != "config":
                    row[k] = float(row[k])
            rows.append(row)
    return rows


def per_run(rows):
    """{config: {run: [tenant rows]}}"""
    out = {}
    for r in rows:
        out.setdefault(r["config"], {}).setdefault(int(r["run"]), []).append(r)
    return out


def run_figures(tenant_rows):
    span = tenant_rows[0]["span_ms"]
    run = sum(r["run_ms"] for r in tenant_rows)
    fi = sum(r["forceidle_ms"] for r in tenant_rows)
    work = sum(r["work"] for r in tenant_rows)
    per_vcpu = [r["run_ms"] / (r["vcpus"] * span) for r in tenant_rows]
    return {
        "span_ms": span,
        "online": tenant_rows[0]["online"],
        "cpu_share": run / (GUEST_CPUS * span),
        "forceidle_of_run": fi / run if run else 0.0,
        "forceidle_of_capacity": fi / (GUEST_CPUS * span),
        "run_delay_per_vcpu": sum(r["wait_ms"] for r in tenant_rows) /
        (sum(r["vcpus"] for r in tenant_rows) * span),
        "work_per_s": work / (span / 1000),
        "work_per_cpu_s": work / (run / 1000) if run else 0.0,
        "tenant_cpu_per_vcpu_min": min(per_vcpu),
        "tenant_cpu_per_vcpu_max": max(per_vcpu),
        "tenants": [{"tenant": NAMES[int(r["tenant"])], "vcpus": int(r["vcpus"]),
                     "work_per_s": r["work"] / (span / 1000),
                     "work_per_cpu_s": r["work"] / (r["run_ms"] / 1000) if r["run_ms"] else 0,
                     "cpu_per_vcpu": r["run_ms"] / (r["vcpus"] * span),
                     "forceidle_of_run": r["forceidle_ms"] / r["run_ms"] if r["run_ms"] else 0,
                     "run_delay_per_vcpu": r["wait_ms"] / (r["vcpus"] * span)}
                    for r in sorted(tenant_rows, key=lambda r: r["tenant"])],
    }


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def recovery(a, b, c, higher_better=True):
    """Share of (a)->(b)'s loss that (c) wins back; None when (b) lost nothing."""
    loss = (a - b) if higher_better else (b - a)
    if loss <= 0:
        return None
    return ((c - b) if higher_better else (b - c)) / loss


def analyse(rows):
    runs = per_run(rows)
    figures = {cfg: {run: run_figures(tr) for run, tr in sorted(rr.items())}
               for cfg, rr in runs.items()}
    keys = ("cpu_share", "forceidle_of_run", "forceidle_of_capacity", "run_delay_per_vcpu",
            "work_per_s", "work_per_cpu_s", "tenant_cpu_per_vcpu_min", "tenant_cpu_per_vcpu_max")
    summ = {cfg: {k: summary([f[k] for f in fr.values()]) for k in keys}
            for cfg, fr in figures.items()}
    for cfg, fr in figures.items():
        names = [t["tenant"] for t in next(iter(fr.values()))["tenants"]]
        summ[cfg]["tenants"] = {
            n: {k: statistics.median(f["tenants"][i][k] for f in fr.values())
                for k in ("work_per_s", "work_per_cpu_s", "cpu_per_vcpu", "forceidle_of_run",
                          "run_delay_per_vcpu")}
            for i, n in enumerate(names)}
    headline = {}
    for c in ("c", "c-pack", "e"):
        if not all(x in figures for x in ("a", "b", c)):
            continue
        common = sorted(set(figures["a"]) & set(figures["b"]) & set(figures[c]))
        h = {}
        for key, hb in (("cpu_share", True), ("work_per_s", True), ("work_per_cpu_s", True),
                        ("forceidle_of_run", False)):
            per = [recovery(figures["a"][r][key], figures["b"][r][key], figures[c][r][key], hb)
                   for r in common]
            per = [p for p in per if p is not None]
            med = recovery(summ["a"][key]["median"], summ["b"][key]["median"],
                           summ[c][key]["median"], hb)
            h[key] = {"of_medians": med, "per_run": summary(per) if per else None}
        headline[c] = h
    return figures, summ, headline


def whole_core_tenants(plan, cfg):
    """Tenants of a pinned configuration whose cores hold no thread of another cookie."""
    c = next(x for x in plan["configs"] if x["name"] == cfg)
    if not c["pins"] or not c["cookies"]:
        return None
    core = {}
    for sib in plan["siblings"].split("/"):
        lo, _, hi = sib.partition("-")
        for cpu in range(int(lo), int(hi or lo) + 1):
            core[cpu] = sib
    label_on = {}
    for t, pins in enumerate(c["pins"]):
        for cpu in pins or []:
            label_on.setdefault(core[cpu], set()).add(c["cookies"][t])
    return [NAMES[t] for t, pins in enumerate(c["pins"])
            if pins and all(label_on[core[cpu]] == {c["cookies"][t]} for cpu in pins)]


def shared_cores(plan, cfg):
    """[(core, tenants)] of the cores that hold threads of more than one tenant."""
    c = next(x for x in plan["configs"] if x["name"] == cfg)
    on = {}
    for sib in plan["siblings"].split("/"):
        lo, _, hi = sib.partition("-")
        for cpu in range(int(lo), int(hi or lo) + 1):
            for t, pins in enumerate(c["pins"] or []):
                if pins and cpu in pins:
                    on.setdefault(sib, set()).add(NAMES[t])
    return [(core, sorted(ts)) for core, ts in on.items() if len(ts) > 1]


def subset_share(figures, cfg, names):
    """Per run: (CPU per vCPU, forced idle of run) of the named tenants together."""
    out = {}
    for run, f in figures[cfg].items():
        ts = [t for t in f["tenants"] if t["tenant"] in names]
        vcpus = sum(t["vcpus"] for t in ts)
        cpu = sum(t["cpu_per_vcpu"] * t["vcpus"] for t in ts)
        fi = sum(t["forceidle_of_run"] * t["cpu_per_vcpu"] * t["vcpus"] for t in ts)
        out[run] = (cpu / vcpus, fi / cpu if cpu else 0.0)
    return out


def goals(plan, modes, lead):
    """The issue's goals against the lead figures, said as met or not and by how much."""
    figures, summ, headline = modes[lead]
    lines = ["### The goals", ""]
    if "c" in summ and "c" in headline:
        fi = summ["c"]["forceidle_of_run"]["median"]
        rec = headline["c"]["forceidle_of_run"]["of_medians"]
        rec_cpu = headline["c"]["cpu_share"]["of_medians"]
        whole = whole_core_tenants(plan, "c")
        lines.append(
            f"- (c) forced idle under 2% of run time: {'met' if fi < 0.02 else 'not met'}, "
            f"{pct(fi)} (median of the runs). Recovers at least 75% of (a)->(b)'s loss in "
            f"forced idle (the lead): {'met' if rec is not None and rec >= 0.75 else 'not met'}"
            f", {pct(rec, 0)}; in CPU share (beside it): "
            + (f"{pct(rec_cpu, 0)}." if rec_cpu is not None else
               "b lost no CPU share against a here, so there is nothing to recover."))
        if whole and set(whole) != set(NAMES[:len(plan["tenants"])]):
            others = [NAMES[t] for t in range(len(plan["tenants"])) if NAMES[t] not in whole]
            a_s, b_s, c_s = (subset_share(figures, x, whole) for x in ("a", "b", "c"))
            med = lambda d, i: statistics.median(v[i] for v in d.values())  # noqa: E731
            rec_w = recovery(med(a_s, 0), med(b_s, 0), med(c_s, 0))
            lines.append(
                f"  Why: the host is full and {' and '.join(others)} are tenants of one vCPU "
                "and different cookies, so the placer can only pair them on one core "
                "(smt=spread puts a stranger beside them last, when nothing else is left; "
                "smt=pack refuses the second). The "
                f"tenants that got whole cores ({', '.join(whole)}): forced idle "
                f"{pct(med(c_s, 1), 2)} in (c) against {pct(med(b_s, 1), 2)} in (b); CPU per "
                f"vCPU {pct(med(a_s, 0))} (a), {pct(med(b_s, 0))} (b), {pct(med(c_s, 0))} (c): "
                f"(c) recovers {pct(rec_w, 0)} of their loss.")
    if "e" in summ:
        e = whole_core_tenants(plan, "e") or []
        fi = summ["e"]["forceidle_of_run"]["median"]
        rec = headline.get("e", {}).get("cpu_share", {}).get("of_medians")
        shared = shared_cores(plan, "e")
        how = ("; ".join(f"tenants {' and '.join(ts)} share core {core}" for core, ts in shared)
               if shared else "no core holds two tenants here, so this tenant set does not "
               "test the goal")
        lines.append(
            f"- (e) a trust group uses siblings without forced idle: "
            f"{'met' if fi < 0.02 and shared else 'not shown' if not shared else 'not met'}: "
            f"forced idle {pct(fi, 2)} of run time ({how}; tenants on cores of one cookie: "
            f"{', '.join(e)}); it recovers {pct(rec, 0)} of (a)->(b)'s loss in CPU share.")
    return lines + [""]


def pct(v, digits=1):
    return "-" if v is None else f"{100 * v:.{digits}f}%"


def rng(s, digits=1, scale=100, unit="%"):
    return (f"{scale * s['median']:.{digits}f}{unit} "
            f"({scale * s['min']:.{digits}f}-{scale * s['max']:.{digits}f})")


def chart(modes, plan, png):
    gp = shutil.which("gnuplot")
    if not gp:
        return "gnuplot not found: no chart"
    order = [c["name"] for c in plan["configs"]]
    with tempfile.TemporaryDirectory() as tmp:
        script = [f"set terminal pngcairo size {700 * len(modes)},520 font ',10'",
                  f"set output '{png}'", "set style fill solid 0.8 border -1",
                  "set boxwidth 0.7", "set grid ytics", "set key off",
                  "set yrange [0:*]", "set xtics scale 0",
                  f"set multiplot layout 1,{2 * len(modes)} title 'The cost of core "
                  "scheduling: median of the runs, bars from the lowest to the highest run'"]
        for mode, (_, summ, _) in modes.items():
            dat = os.path.join(tmp, f"{mode}.dat")
            top = max([1.0] + [100 * v["forceidle_of_run"]["max"] for v in summ.values()])
            with open(dat, "w", encoding="utf-8") as f:
                for i, cfg in enumerate(o for o in order if o in summ):
                    s, fi = summ[cfg]["cpu_share"], summ[cfg]["forceidle_of_run"]
                    color = "0xcc3311" if cfg.startswith(("c", "e")) else "0x4477aa"
                    f.write(f'{i} "{cfg}" {color} {100 * s["median"]} {100 * s["min"]} '
                            f'{100 * s["max"]} {100 * fi["median"]} {100 * fi["min"]} '
                            f'{100 * fi["max"]}\n')
            script += [f"set title 'CPU share of 8 guest CPUs, % ({mode})'",
                       f"plot '{dat}' using 1:4:3:xtic(2) with boxes lc rgb variable, "
                       f"'' using 1:4:5:6 with yerrorbars lc rgb 'black' pt 0",
                       # Cut at FI_AXIS_MAX so that the medians stay readable.
                       f"set title 'forced idle, % of run time ({mode}"
                       + (f"; axis cut at {FI_AXIS_MAX}" if top > FI_AXIS_MAX else "") + ")'",
                       f"set yrange [0:{min(top * 1.15, FI_AXIS_MAX)}]",
                       f"plot '{dat}' using 1:7:3:xtic(2) with boxes lc rgb variable, "
                       f"'' using 1:7:8:9 with yerrorbars lc rgb 'black' pt 0",
                       "set yrange [0:*]"]
        script.append("unset multiplot")
        gpfile = os.path.join(tmp, "chart.gp")
        with open(gpfile, "w", encoding="utf-8") as f:
            f.write("\n".join(script) + "\n")
        res = subprocess.run([gp, gpfile], capture_output=True, text=True, check=False)
        if res.returncode != 0:
            return f"gnuplot failed: {res.stderr.strip()}"
    return None


def lead_why(modes, lead):
    """Why the lead figures lead, with the figures that say so from this run."""
    def cv(summ, cfg, key):
        s = summ[cfg][key]
        return (s["max"] - s["min"]) / s["median"] if s["median"] else 0
    facts = []
    for mode, (_, summ, _) in modes.items():
        if "a" not in summ or "b" not in summ:
            continue
        facts.append(
            f"{mode}: a's work/s varies by {100 * cv(summ, 'a', 'work_per_s'):.0f}% across runs "
            f"(CPU share by {100 * cv(summ, 'a', 'cpu_share'):.0f}%); a's CPU share "
            f"{pct(summ['a']['cpu_share']['median'])}; b's work per CPU-second "
            f"{summ['b']['work_per_cpu_s']['median'] / summ['a']['work_per_cpu_s']['median']:.2f}"
            " of a's")
        if "d" in summ:
            ratio_d = summ["d"]["work_per_s"]["median"] / summ["a"]["work_per_s"]["median"]
            facts[-1] += f"; d, with half the CPUs online, {ratio_d:.2f} of a's work/s"
    _, lsumm, _ = modes[lead]
    # d has half the CPUs: its share differs for that reason.
    clean = [c for c, v in lsumm.items()
             if v["forceidle_of_run"]["median"] < 0.005 and c != "d"]
    shares = [lsumm[c]["cpu_share"]["median"] for c in clean]
    noise = (f" Configurations with no forced idle to speak of ({', '.join(clean)}) still "
             f"differ in CPU share by {100 * (max(shares) - min(shares)):.0f} points here, "
             "with nothing between them that core scheduling explains (the same pins, other "
             "cookies, or none): that is how finely CPU share resolves under TCG, so the "
             "report leads with forced idle and puts CPU share beside it."
             if len(shares) > 1 else "")
    return (f"The report leads with the {lead} boot's forced idle over run time, the CPU "
            "share beside it." + noise + " Under plain "
            "(multi-threaded) TCG each guest CPU is a host thread, and the 8 share 2 host CPUs "
            "with the other sessions' work: a guest CPU forced idle halts and hands its host "
            "CPU to the other vCPUs, which then do more per second; a vCPU the host deschedules "
            "stalls the tenant's ring while the guest counts its thread as running. Work per "
            "second and work per CPU-second then measure the host's scheduler as much as the "
            "guest's. With -icount shift=auto,sleep=off one host thread runs the vCPUs in turn "
            "and guest time follows the instructions executed, so no vCPU falls behind another "
            "because of the host's load, and a wakeup costs guest time, not a host scheduling "
            "delay; but the vCPUs then share one instruction stream, so a vCPU that halts "
            "(forced idle, or offline) leaves its instructions to the others and work per "
            "second hides the loss entirely. In both modes the CPU share (the guest kernel's "
            "own account of the run time the tenants got, over 8 CPUs x span) and forced idle "
            "over run time do not "
            "depend on how fast QEMU emulates; work figures do, and are shown beside them. "
            "Seen here: " + "; ".join(facts) + ". TCG also emulates siblings as full CPUs "
            "(no shared execution units), so SMT off (d) loses half the CPUs here, where real "
            "cores lose their SMT gain only (the seeds' -22.8% to 34.5%).")


def section(modes, lead, plan, meta, chart_name, chart_note):
    tenants = plan["tenants"]
    described = ", ".join(f"{NAMES[t]} ({n} vCPU{'s' if n > 1 else ''})"
                          for t, n in enumerate(tenants))
    lines = ["## The cost of core scheduling (issue 16)", "",
             f"Tenants {described} "
             f"({sum(tenants)} worker threads) on a guest of {GUEST_CPUS} CPUs "
             f"(`{meta['smp']}`), the guest tier's SCHED_CORE kernel under QEMU TCG. Each "
             "tenant stands for a VM: one thread per vCPU in a ring of pipes (a CPU-bound "
             "chunk, then a token to the next thread: hackbench's wakeups, and a tenant as "
             "slow as its slowest vCPU; tests/guest/costload.c). Configurations alternate, "
             f"{meta['runs']} runs each, {meta['seconds']} s measured per run after "
             "0.3 s of warm-up. The pins of c, c-pack and e are vcpuplace's own: each tenant a "
             "domain XML through `vcpuplace plan` on the guest's topology "
             f"(`{plan['topology']}`, checked against the guest kernel's sibling lists), in "
             "turn, against a ledger of the ones before with the moves the plans list.", ""]
    lines += ["| config | what | pins (tenant: CPUs) |", "|---|---|---|"]
    for c in plan["configs"]:
        pins = "floating" if not c["pins"] else ", ".join(
            f"{NAMES[t]}: {','.join(map(str, p)) if p else 'refused, floats'}"
            for t, p in enumerate(c["pins"]))
        lines.append(f"| {c['name']} | {c['what']} | {pins} |")
    moves = [f"{c['name']}: " + "; ".join(c["placer"]) for c in plan["configs"]
             if c.get("placer")]
    if moves:
        lines += ["", "What the placer did: " + " / ".join(moves) + "."]
    lines += ["", "### Which figure leads, and why", "",
              lead_why(modes, lead), ""]
    for mode, (figures, summ, headline) in modes.items():
        title = "lead" if mode == lead else "distorted, beside it"
        lines += [f"### {mode} ({title})", "",
                  "Median over runs (lowest-highest run). CPU share: the tenants' run time "
                  "over 8 CPUs x span (d too: its 4 CPUs online are the loss). Forced idle: "
                  "core_forceidle_sum over the tenants' run time. Run delay: schedstat's wait "
                  "time per vCPU over the span. Spread: lowest and highest tenant's CPU per "
                  "vCPU. Work/s: chunks per guest second, all tenants; work/CPU-s: per second "
                  "of run time.", "",
                  "| config | CPU share | forced idle / run | run delay / vCPU | spread "
                  "(min-max CPU per vCPU) | work/s | work/CPU-s |",
                  "|---|---|---|---|---|---|---|"]
        for c in plan["configs"]:
            s = summ.get(c["name"])
            if not s:
                lines.append(f"| {c['name']} | not run | | | | | |")
                continue
            lines.append(
                f"| {c['name']} | {rng(s['cpu_share'])} | {rng(s['forceidle_of_run'], 2)} | "
                f"{rng(s['run_delay_per_vcpu'])} | "
                f"{100 * s['tenant_cpu_per_vcpu_min']['median']:.0f}%-"
                f"{100 * s['tenant_cpu_per_vcpu_max']['median']:.0f}% | "
                f"{s['work_per_s']['median']:.0f} ({s['work_per_s']['min']:.0f}-"
                f"{s['work_per_s']['max']:.0f}) | {s['work_per_cpu_s']['median']:.0f} |")
        lines += ["", "Per tenant (medians): CPU per vCPU / forced idle of its run time / "
                  "work per guest second:", "",
                  "| config | " + " | ".join(NAMES[t] for t in range(len(tenants))) + " |",
                  "|---|" + "---|" * len(tenants)]
        for c in plan["configs"]:
            s = summ.get(c["name"])
            if s:
                lines.append(f"| {c['name']} | " + " | ".join(
                    f"{100 * v['cpu_per_vcpu']:.0f}% / {100 * v['forceidle_of_run']:.1f}% / "
                    f"{v['work_per_s']:.0f}" for v in s["tenants"].values()) + " |")
        lines += ["", "How much of (a)->(b)'s loss each placed configuration recovers "
                  "(of the medians; per run, median and range, runs paired by round):", "",
                  "| config | CPU share | forced idle | work/s | work/CPU-s |",
                  "|---|---|---|---|---|"]
        for c, h in headline.items():
            def cell(k):
                v = h[k]
                pr = v["per_run"]
                return (f"{pct(v['of_medians'], 0)}" +
                        (f" (runs: {pct(pr['median'], 0)}, {pct(pr['min'], 0)} to "
                         f"{pct(pr['max'], 0)})" if pr else ""))
            lines.append(f"| {c} | {cell('cpu_share')} | {cell('forceidle_of_run')} | "
                         f"{cell('work_per_s')} | {cell('work_per_cpu_s')} |")
        short = [f"{c} {len(figures[c])} of {meta['runs']}" for c in figures
                 if len(figures[c]) < meta["runs"]]
        if short:
            lines += [f"Runs missing in {mode}: {', '.join(short)}: the boot ended (its time "
                      "limit, or a failed check) before they ran; the figures above are of the "
                      "runs there are.", ""]
        lines.append("")
    lines += goals(plan, modes, lead)
    lines += ["### Caveats", "",
              "- TCG emulates SMT siblings as two full CPUs: no execution units shared, so "
              "what siblings cost each other on real cores, and what SMT off (d) gives back, "
              "is not here; d's loss is that of half the CPUs.",
              "- -icount shift=auto adapts guest time to the host's speed, so the guest runs "
              "slower when the other sessions load the host (load 5 to 7 on 2 CPUs during "
              "these boots) and two invocations differ by more than the runs of one (the "
              "ranges above); runs of 3 s are short, so the per-run ratios spread widely.",
              "- core_forceidle_sum is charged to the task that runs while its sibling is "
              "forced idle, and includes the time the core spends switching between cookies, "
              "so it can exceed the task's run time (the 1-vCPU tenants paired with a "
              "stranger: above 100%), as guest-forceidle's README explains.",
              "- The guest's sampler, init and kernel threads carry no cookie and take a CPU "
              "now and then: that forces idle beside a cookied tenant too (the small forced "
              "idle of pinned whole-core tenants), and stretches a span when cookies leave "
              "them no CPU (spans are measured, not assumed).",
              "- The placer saw the guest's topology as a synthetic hwloc topology of the same "
              "shape; the guest checks its kernel's sibling sets are the planned ones, but "
              "caches and NUMA (none in this guest) are not modelled.",
              "- Tenants are processes in one guest, not VMs: no guest kernels, VM exits or "
              "emulated devices; a worker that waits for its token blocks as a halted vCPU "
              "would, and the ring stands for vCPUs that wait on each other.", ""]
    if chart_name:
        lines += [f"![CPU share and forced idle per configuration]({chart_name})", ""]
    if chart_note:
        lines += [f"Chart: {chart_note}.", ""]
    lines += ["Command: `" + meta["command"] + "`" +
              f" ({meta['wall_s']} s wall here, 2 host CPUs shared with other sessions).", ""]
    return lines


def cmd_report(args):
    with open(args.plan, encoding="utf-8") as f:
        plan = json.load(f)
    modes = {}
    for spec in args.log:
        mode, path = spec.split("=", 1)
        rows = parse_log(path)
        if not rows:
            sys.exit(f"coresched_cost.py: no figures in {path}")
        modes[mode] = analyse(rows)
    note = chart(modes, plan, args.chart)
    with open(args.meta, encoding="utf-8") as f:
        meta = json.load(f)
    meta["command"] = args.command
    result = {"plan": plan, "meta": meta, "lead": args.lead,
              "modes": {m: {"runs": fig, "summary": s, "recovery": h}
                        for m, (fig, s, h) in modes.items()}}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    lines = section(modes, args.lead, plan, meta, os.path.basename(args.chart) if not note
                    else None, note)
    if args.subsection:
        # Under the main section: one level down, titled as asked.
        lines = [f"### {args.subsection}"] + [
            "#" + line if line.startswith("### ") else line for line in lines[1:]]
    with open(args.section, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--vcpuplace", required=True)
    p.add_argument("--topology", required=True)
    p.add_argument("--tenants", required=True)
    p.add_argument("--work", required=True)
    r = sub.add_parser("report")
    r.add_argument("--plan", required=True)
    r.add_argument("--log", action="append", required=True, help="MODE=CONSOLE_LOG")
    r.add_argument("--lead", required=True)
    r.add_argument("--meta", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--chart", required=True)
    r.add_argument("--section", required=True)
    r.add_argument("--command", required=True)
    r.add_argument("--subsection", help="title of a section under the main one")
    args = ap.parse_args()
    if args.cmd == "plan":
        cmd_plan(args)
    else:
        cmd_report(args)


if __name__ == "__main__":
    main()
