#!/usr/bin/env python3
"""Throws libvirt's and hwloc's own test corpora at `vcpuplace` and classifies what happens.

    inputs-sweep.py CACHE [--build DIR] [--asan-build DIR] [--topologies DIR] [--out FILE]
                    [--jobs N] [--timeout S] [--limit N]

CACHE is where Debian's libvirt and hwloc source packages are fetched (`apt-get source
--download-only`, which needs a deb-src entry) and their test folders unpacked; nothing
else is written there, and nothing anywhere but CACHE and --out.

Domain corpus: every XML file under libvirt's tests/ whose root element is <domain>
(qemuxml2argvdata, qemuxml2xmloutdata, genericxml2xmlindata, lxc, bhyve, ...) and the live
<domain> of each status file (qemustatusxml2xmldata, written under CACHE), deduplicated
by content, planned with `vcpuplace plan --json` on each topology: the 2x EPYC 7451 and the
256-PU POWER export from --topologies (skipped, saying so, when absent) and a synthetic
4-node one. Each run is classified placed / refused / not-qemu / input-error (by message,
numbers and quoted values folded; input-error-libvirt-too when libvirt's own tests expect
its parser to refuse that file too) / timeout / crash / sanitizer. A placed plan is also
checked against what the file says, read here independently with ElementTree: the vCPU ids
pinned are the online ones (<vcpus enabled='yes'>, else 0..current-1), no vCPU is
outside a strict or restrictive <numatune> nodeset or a <vcpu cpuset>, a vCPU a <vcpupin>
pins to one CPU is planned there, and no guest cell is split over nodes unless the plan
says it degraded.

Topology corpus: hwloc's tests/hwloc/xml/*.xml, and its Linux sysfs snapshots
(tests/hwloc/linux/*.tar.bz2) exported to XML by lstopo under CACHE. `vcpuplace topology --json` on each is
checked against the file (read here): the online PUs, each PU's core siblings, the NUMA
nodes by OS number, CPU-less nodes holding no CPU. Then a 4-vCPU domain with each smt policy
is planned on it, and two such domains replayed with `simulate` must share no core unless
the policy is share or the host lacks the cores.

Prints the counts per class and build, and writes them with every non-placed message and
every check that failed to --out (JSON). A benchmark of inputs, not a test: nothing passes
or fails; the exit status is 0 when the sweep ran.
"""

import argparse
import collections
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

LIBVIRT_DIR = "libvirt-9.0.0"
HWLOC_DIR = "hwloc-2.9.0"
SYNTHETIC = "synthetic:pack:2 numa:2(memory=64GB) l3:2 core:4 pu:2"


def fetch(cache):
    """Fetches and unpacks the two source packages' test folders into cache, once."""
    os.makedirs(cache, exist_ok=True)
    want = {"libvirt": (LIBVIRT_DIR, ["tests"]),
            "hwloc": (HWLOC_DIR, ["tests/hwloc/xml", "tests/hwloc/linux"])}
    for pkg, (top, subs) in want.items():
        if all(os.path.isdir(os.path.join(cache, top, sub)) for sub in subs):
            continue
        tarballs = [f for f in os.listdir(cache) if f.startswith(pkg + "_") and ".orig.tar." in f
                    and not f.endswith(".asc")]
        if not tarballs:
            subprocess.run(["apt-get", "source", "--download-only", pkg], cwd=cache, check=True,
                           stdout=subprocess.DEVNULL)
            tarballs = [f for f in os.listdir(cache) if f.startswith(pkg + "_") and
                        ".orig.tar." in f and not f.endswith(".asc")]
        if not tarballs:
            sys.exit(f"inputs-sweep: no {pkg} source tarball in {cache}")
        subprocess.run(["tar", "xf", tarballs[0], "--wildcards"] +
                       [f"{top}/{sub}/*" for sub in subs], cwd=cache, check=True)


def linux_exports(cache):
    """hwloc's Linux sysfs snapshots (tests/hwloc/linux/*.tar.bz2: more real machines) turned
    into XML exports by hwloc's own lstopo, once, under cache."""
    src = os.path.join(cache, HWLOC_DIR, "tests/hwloc/linux")
    dst = os.path.join(cache, "hwloc-linux-xml")
    os.makedirs(dst, exist_ok=True)
    out = []
    for tarball in sorted(f for f in os.listdir(src) if f.endswith(".tar.bz2")):
        name = tarball[:-len(".tar.bz2")]
        xml = os.path.join(dst, name + ".xml")
        if not os.path.exists(xml):
            root = os.path.join(dst, name)
            os.makedirs(root, exist_ok=True)
            subprocess.run(["tar", "xjf", os.path.join(src, tarball), "-C", root], check=True)
            fsroot = os.path.join(root, name)
            env = dict(os.environ, HWLOC_FSROOT=fsroot if os.path.isdir(fsroot) else root,
                       HWLOC_THISSYSTEM="0")
            p = subprocess.run(["lstopo-no-graphics", "--disallowed", "--of", "xml", "-"], env=env,
                               capture_output=True, text=True)
            if p.returncode != 0:
                print(f"inputs-sweep: {name}: lstopo cannot read it: {p.stderr.strip()[:200]}",
                      file=sys.stderr)
                continue
            with open(xml, "w") as f:
                f.write(p.stdout)
        out.append(xml)
    return out


ROOT_RE = re.compile(rb"^\s*(<\?xml[^>]*\?>\s*)?(<!--.*?-->\s*)*<domain[\s>]", re.S)


STATUS_RE = re.compile(rb"^\s*(<\?xml[^>]*\?>\s*)?(<!--.*?-->\s*)*<domstatus[\s>]", re.S)


def domain_files(cache):
    """Every distinct domain XML of libvirt's tests; the live <domain> inside each status
    file (<domstatus>, what libvirtd keeps of a running domain) is written under cache."""
    seen = {}
    base = os.path.join(cache, LIBVIRT_DIR, "tests")
    live = os.path.join(cache, "libvirt-status-domains")
    os.makedirs(live, exist_ok=True)
    for dirpath, _, names in os.walk(base):
        for n in sorted(names):
            if not n.endswith(".xml"):
                continue
            path = os.path.join(dirpath, n)
            with open(path, "rb") as f:
                data = f.read()
            if STATUS_RE.match(data):
                try:
                    dom = ET.fromstring(data).find("domain")
                except ET.ParseError:
                    continue
                if dom is None:
                    continue
                data = ET.tostring(dom)
                path = os.path.join(live, n)
                with open(path, "wb") as f:
                    f.write(data)
            elif not ROOT_RE.match(data):
                continue
            seen.setdefault(hashlib.sha1(data).hexdigest(), path)
    return sorted(seen.values())


def libvirt_rejects(cache):
    """Names of the test files libvirt's own tests expect its parser to refuse."""
    tests = os.path.join(cache, LIBVIRT_DIR, "tests")
    names = set()
    pat = re.compile(r'DO_TEST[A-Z_]*(PARSE_ERROR|FAIL_ACTIVE|FAIL_INACTIVE)[A-Z_]*\(\s*"([^"]+)"')
    for src in ("qemuxml2argvtest.c", "qemuxml2xmltest.c", "genericxml2xmltest.c"):
        with open(os.path.join(tests, src), errors="replace") as f:
            names.update(m.group(2) for m in pat.finditer(f.read()))
    return names


def fold(message, path=None):
    """A message's class: the file name, quoted values and numbers folded."""
    line = message.strip().splitlines()[0] if message.strip() else "(no message)"
    if path:
        line = line.replace(path + ": ", "")
    line = re.sub(r"^vcpuplace \w+: ", "", line)
    line = re.sub(r"domain '[^']*'", "domain 'D'", line)
    line = re.sub(r"'[^']*'", "'V'", line)
    line = re.sub(r">[^<>]*</", ">V</", line)
    line = re.sub(r"\d+", "N", line)
    return line


def run(cmd, timeout):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout", None, ""
    san = re.search(r"(ERROR: (Address|Leak)Sanitizer[^\n]*|runtime error:[^\n]*)", p.stderr)
    if san:
        return "sanitizer", p, san.group(1)
    if p.returncode < 0 or p.returncode > 3:
        return "crash", p, f"exit {p.returncode}"
    return None, p, ""


def ints(text):
    """libvirt's set syntax (N, N-M, ^N) as a Python set; None when it cannot be read."""
    out = set()
    try:
        for item in text.split(","):
            item = item.strip()
            if item.startswith("^"):
                out.discard(int(item[1:]))
            elif "-" in item:
                a, b = item.split("-")
                out.update(range(int(a), int(b) + 1))
            else:
                out.add(int(item))
    except ValueError:
        return None
    return out


def expected(path):
    """What the file itself says placement must honour, read without vcpuplace."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return {}
    exp = {}
    vcpu = root.find("vcpu")
    if vcpu is not None and (vcpu.text or "").strip().isdigit():
        n = int(vcpu.text.strip())
        cur = vcpu.get("current")
        exp["online"] = set(range(int(cur) if cur and cur.strip().isdigit() else n))
        if vcpu.get("cpuset") and vcpu.get("placement") != "auto":
            exp["cpuset"] = ints(vcpu.get("cpuset"))
    vcpus = root.find("vcpus")
    if vcpus is not None and vcpus.findall("vcpu"):
        exp["online"] = {int(v.get("id")) for v in vcpus.findall("vcpu")
                         if v.get("enabled") == "yes" and (v.get("id") or "").isdigit()}
    pins = {}
    for pin in root.findall("cputune/vcpupin"):
        cpus = ints(pin.get("cpuset") or "")
        if cpus and len(cpus) == 1 and (pin.get("vcpu") or "").isdigit():
            pins[int(pin.get("vcpu"))] = next(iter(cpus))
    exp["pins"] = pins
    exp["cells"] = [c for c in (ints(cell.get("cpus") or "") for cell in
                                root.findall("cpu/numa/cell")) if c]
    mem = root.find("numatune/memory")
    if mem is not None and mem.get("mode", "strict") in ("strict", "restrictive") and \
            mem.get("nodeset") and mem.get("placement") != "auto" and \
            not root.findall("numatune/memnode"):
        exp["nodeset"] = ints(mem.get("nodeset"))
    return exp


def check_plan(plan, exp, path):
    bad = []
    if plan.get("how") not in ("placed", "degraded") or "vcpus" not in plan:
        return bad
    ids = {v["vcpu"] for v in plan["vcpus"] if v["cpu"] is not None}
    if "online" in exp and ids != exp["online"]:
        bad.append(f"vCPU ids planned {sorted(ids)[:8]} are not the online ones "
                   f"{sorted(exp['online'])[:8]}")
    if exp.get("cpuset") is not None:
        out = [v["cpu"] for v in plan["vcpus"] if v["cpu"] is not None and
               v["cpu"] not in exp["cpuset"]]
        if out:
            bad.append(f"CPUs {out[:4]} outside <vcpu cpuset>")
    if exp.get("nodeset") is not None and not plan.get("degraded"):
        out = [v["numa"] for v in plan["vcpus"] if v["numa"] is not None and
               v["numa"] not in exp["nodeset"]]
        if out:
            bad.append(f"nodes {sorted(set(out))} outside the strict nodeset")
    by_id = {v["vcpu"]: v for v in plan["vcpus"]}
    for vcpu, cpu in exp.get("pins", {}).items():
        got = by_id.get(vcpu, {}).get("cpu")
        if vcpu in by_id and got is not None and got != cpu:
            bad.append(f"vCPU {vcpu} pinned by <vcpupin> to {cpu} is planned on {got}")
    if not plan.get("degraded"):
        for cell in exp.get("cells", []):
            nodes = {by_id[i]["numa"] for i in cell if i in by_id and by_id[i]["cpu"] is not None}
            if len(nodes) > 1:
                bad.append(f"guest cell of vCPUs {sorted(cell)[:4]}... split over nodes "
                           f"{sorted(nodes)}")
    return bad


def plan_one(binary, topo, path, timeout):
    kind, p, detail = run([binary, "plan", "--json", "-t", topo, path], timeout)
    if kind:
        return {"class": kind, "message": detail, "checks": []}
    if p.returncode == 0:
        try:
            plan = json.loads(p.stdout)
        except ValueError:
            return {"class": "crash", "message": "plan --json printed no JSON", "checks": []}
        return {"class": "placed", "message": "", "checks": check_plan(plan, expected(path), path)}
    msg = fold(p.stderr, path)
    if p.returncode == 2:
        return {"class": "refused", "message": msg, "checks": []}
    if "vcpuplace places QEMU domains" in msg:
        return {"class": "not-qemu", "message": msg, "checks": []}
    return {"class": "input-error", "message": msg, "checks": []}


def hwloc_expect(path):
    """Online PUs, siblings per core and NUMA node OS numbers (with their cpusets) as the
    export states them."""
    root = ET.parse(path).getroot()
    pus, cores, nodes = set(), [], {}

    def walk(obj, core):
        t = obj.get("type")
        if t == "Core":
            core = set()
            cores.append(core)
        if t == "PU":
            os_index = int(obj.get("os_index"))
            pus.add(os_index)
            if core is not None:
                core.add(os_index)
        if t == "NUMANode":
            nodes[int(obj.get("os_index", "-1"))] = obj.get("cpuset")
        for child in obj.findall("object"):
            walk(child, core)

    for top in root.findall("object"):
        walk(top, None)
    return pus, [c for c in cores if c], nodes


def topo_one(binary, path, timeout, tmp):
    res = {"file": os.path.basename(path), "checks": [], "plans": {}}
    kind, p, detail = run([binary, "topology", "--json", "-t", path], timeout)
    if kind or p.returncode != 0:
        res["class"] = kind or "input-error"
        res["message"] = detail or fold(p.stderr, path)
        return res
    res["class"] = "loaded"
    topo = json.loads(p.stdout)
    try:
        pus, cores, nodes = hwloc_expect(path)
    except (ET.ParseError, ValueError) as e:
        res["checks"].append(f"export not read here: {e}")
        pus, cores, nodes = None, [], {}
    online = {c["cpu"] for c in topo["cpus"]}
    by_core = collections.defaultdict(set)
    for c in topo["cpus"]:
        by_core[c["core"]].add(c["cpu"])
    if pus is not None and online != pus:
        res["checks"].append(f"PUs {sorted(online ^ pus)[:8]} differ from the export's")
    for core in cores:
        got = {frozenset(by_core[c["core"]]) for c in topo["cpus"] if c["cpu"] in core}
        if got != {frozenset(core)}:
            res["checks"].append(f"core {sorted(core)} is read as {[sorted(g) for g in got]}")
            break
    shown = {n["numa"] for n in topo["nodes"]}
    if nodes and shown != set(nodes):
        res["checks"].append(f"nodes {sorted(shown)} are not the export's OS numbers "
                             f"{sorted(nodes)}")
    cpu_nodes = {c["numa"] for c in topo["cpus"]}
    for n in topo["nodes"]:
        if n["numa"] not in cpu_nodes and n["usable_cpus"]:
            res["checks"].append(f"node {n['numa']} holds no CPU but counts "
                                 f"{n['usable_cpus']} usable")
    ncores = len(by_core)
    usable_cores = {c["core"] for c in topo["cpus"] if c["usable"]}
    for smt in ("pack", "isolate", "spread", "share"):
        dom = os.path.join(tmp, f"{res['file']}-{smt}.xml")
        with open(dom, "w") as f:
            f.write("<domain type='kvm'><name>sweep</name><memory unit='MiB'>64</memory>"
                    "<vcpu>4</vcpu><metadata><vcpuplace:policy "
                    "xmlns:vcpuplace='http://vcpuplace.org/xmlns/policy/1.0' "
                    f"smt='{smt}'/></metadata></domain>")
        kind, p, detail = run([binary, "plan", "-t", path, dom], timeout)
        cls = kind or {0: "placed", 2: "refused"}.get(p.returncode, "input-error")
        res["plans"][smt] = {"class": cls,
                             "message": detail or (fold(p.stderr, dom) if cls != "placed" else "")}
        if cls == "refused" and len(usable_cores) >= 8 and "memory" not in p.stderr:
            res["checks"].append(f"smt={smt} refused on an empty host of {len(usable_cores)} "
                                 f"usable cores: {res['plans'][smt]['message']}")
        trace = os.path.join(tmp, f"{res['file']}-{smt}.jsonl")
        with open(trace, "w") as f:
            for name in ("a", "b"):
                f.write(json.dumps({"op": "start", "name": name, "vcpus": 4, "smt": smt}) + "\n")
        kind, p, detail = run([binary, "simulate", "--json", "-t", path, trace], timeout)
        if kind:
            res["plans"][smt + "-two"] = {"class": kind, "message": detail}
            continue
        if p.returncode != 0:
            continue
        cores_of = {}
        for ev in json.loads(p.stdout).get("events", []):
            if ev.get("outcome") == "placed" and ev.get("plan"):
                cores_of[ev["domain"]] = {
                    next((c["core"] for c in topo["cpus"] if c["cpu"] == v["cpu"]), None)
                    for v in ev["plan"]["vcpus"] if v["cpu"] is not None}
        if smt != "share" and len(cores_of) == 2 and ncores >= 16 and \
                cores_of["a"] & cores_of["b"]:
            res["checks"].append(f"smt={smt}: two 4-vCPU domains share cores "
                                 f"{sorted(cores_of['a'] & cores_of['b'])} on an empty host of "
                                 f"{ncores} cores")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache")
    ap.add_argument("--build", default="build")
    ap.add_argument("--asan-build")
    ap.add_argument("--topologies", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                         "..", "shared", "topologies"))
    ap.add_argument("--out")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--limit", type=int, default=0, help="domain files at most (0: all)")
    args = ap.parse_args()

    fetch(args.cache)
    files = domain_files(args.cache)
    rejects = libvirt_rejects(args.cache)
    if args.limit:
        files = files[:args.limit]
    topos = []
    for name in ("AMD-17h-Zen-2xEpyc-7451.xml", "256ppc-8n8s4t.xml"):
        path = os.path.join(args.topologies, name)
        if os.path.exists(path):
            topos.append(path)
        else:
            print(f"inputs-sweep: {path} absent, skipped", file=sys.stderr)
    topos.append(SYNTHETIC)
    hwloc_files = sorted(
        os.path.join(args.cache, HWLOC_DIR, "tests/hwloc/xml", f)
        for f in os.listdir(os.path.join(args.cache, HWLOC_DIR, "tests/hwloc/xml"))
        if f.endswith(".xml")) + linux_exports(args.cache)
    builds = {"plain": args.build}
    if args.asan_build:
        builds["asan"] = args.asan_build

    report = {"format": 1, "domain_files": len(files), "topologies": topos,
              "hwloc_files": len(hwloc_files), "builds": {}}
    for bname, bdir in builds.items():
        binary = os.path.join(bdir, "plugin/cli/vcpuplace")
        out = {"domains": {}, "domain_counts": {}, "messages": {}, "checks": [],
               "topology_counts": {}, "topologies": []}
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for topo in topos:
                key = os.path.basename(topo) if not topo.startswith("synthetic:") else topo
                results = list(pool.map(lambda f: plan_one(binary, topo, f, args.timeout), files))
                for f, r in zip(files, results):
                    if r["class"] == "input-error" and \
                            os.path.basename(f)[:-len(".xml")] in rejects:
                        r["class"] = "input-error-libvirt-too"
                out["domains"][key] = {os.path.relpath(f, args.cache): [r["class"], r["message"]]
                                       for f, r in zip(files, results)}
                counts = collections.Counter(r["class"] for r in results)
                msgs = collections.Counter(f"{r['class']}: {r['message']}" for r in results
                                           if r["class"] not in ("placed",))
                out["domain_counts"][key] = dict(counts)
                out["messages"][key] = dict(msgs.most_common())
                for f, r in zip(files, results):
                    for c in r["checks"]:
                        out["checks"].append({"topology": key, "file": os.path.relpath(
                            f, args.cache), "check": c})
                    if r["class"] in ("timeout", "crash", "sanitizer"):
                        out["checks"].append({"topology": key, "file": os.path.relpath(
                            f, args.cache), "check": f"{r['class']}: {r['message']}"})
            with tempfile.TemporaryDirectory() as tmp:
                out["topologies"] = list(pool.map(
                    lambda f: topo_one(binary, f, args.timeout, tmp), hwloc_files))
        tc = collections.Counter(t["class"] for t in out["topologies"])
        for t in out["topologies"]:
            for smt, pr in t["plans"].items():
                tc[f"plan {smt}: {pr['class']}"] += 1
            tc["files with failed checks"] += bool(t["checks"])
        out["topology_counts"] = dict(sorted(tc.items()))
        report["builds"][bname] = out

        print(f"== build {bname} ({binary}): {len(files)} domain files")
        for key, counts in out["domain_counts"].items():
            print(f"  {key}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
            for m, n in list(out["messages"][key].items())[:25]:
                print(f"      {n:5d}  {m}")
        print(f"  domain checks failed: {len(out['checks'])}")
        for c in out["checks"][:30]:
            print(f"      {c['topology']}: {c['file']}: {c['check']}")
        print(f"  hwloc exports: {len(hwloc_files)}: " +
              ", ".join(f"{k} {v}" for k, v in out["topology_counts"].items()))
        for t in out["topologies"]:
            for c in t["checks"]:
                print(f"      {t['file']}: {c}")
            if t["class"] != "loaded":
                print(f"      {t['file']}: {t['class']}: {t['message']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
