#!/usr/bin/env python3
"""vcpuplace's invariants against libvirt's and the kernel's truth, for the e2e chaos and
concurrency tests. Prints one line per violation; exit 0 when there is none, 1 otherwise.

  1. No CPU is held by two domains unless every holder consented to time-sharing
     (smt=share and unmet=degrade): neither in vcpuplaced's plans (vCPUs and reserved
     siblings) nor in the kernel's affinity of the vCPU threads pinned to one CPU.
  2. vcpuplaced records no domain that libvirt does not run.
  3. Every running managed domain is either pinned as planned (each vCPU thread's and the
     QEMU main thread's Cpus_allowed_list in /proc equals the plan) or reported unplaced
     or failed with a reason; a degraded plan says why.

Usage: chaos-invariants.py --cli PATH --config FILE --prefix NAME-PREFIX
"""
import argparse
import json
import os
import re
import subprocess
import sys


def cpu_list(text):
    """'0-2,5' -> {0, 1, 2, 5}"""
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def qemu_threads(name):
    """QEMU's pid and {vcpu: tid} from libvirt's pidfile, checked against the command
    line, and the thread names QEMU gives vCPUs (debug-threads=on)."""
    with open(f"/run/libvirt/qemu/{name}.pid") as f:
        pid = int(f.read().strip())
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        args = f.read().split(b"\0")
    want = "guest=" + name.replace(",", ",,") + ","
    if "-name" not in [a.decode(errors="replace") for a in args] or not any(
        a.decode(errors="replace").startswith(want) for a in args
    ):
        raise OSError(f"pid {pid} from the pidfile of {name} is not its QEMU")
    vcpus = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                m = re.match(r"CPU (\d+)/(TCG|KVM)$", f.read().strip())
        except OSError:
            continue
        if m:
            vcpus[int(m.group(1))] = int(tid)
    return pid, vcpus


def allowed(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return cpu_list(line.split(":", 1)[1])
    raise OSError(f"no Cpus_allowed_list for thread {tid}")


def consents(dom):
    p = dom.get("policy") or {}
    return p.get("smt") == "share" and p.get("unmet") == "degrade"


def check_holders(what, holders, doms, out):
    for cpu in sorted(holders):
        names = sorted(holders[cpu])
        if len(names) > 1 and not all(consents(doms.get(n, {})) for n in names):
            out.append(f"{what}: CPU {cpu} held by {', '.join(names)}, not all of them share+degrade")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--prefix", required=True)
    a = ap.parse_args()
    out = []

    st = subprocess.run([a.cli, "status", "--json", "--config", a.config], capture_output=True, text=True)
    if st.returncode:
        print(f"vcpuplace status failed: {st.stderr.strip()}")
        return 1
    status = json.loads(st.stdout)
    if not status.get("connected"):
        out.append("vcpuplaced is not connected to libvirt")
    doms = {d["domain"]: d for d in status.get("domains", [])}
    ls = subprocess.run(["virsh", "-q", "list", "--name"], capture_output=True, text=True)
    if ls.returncode:
        print(f"virsh list failed: {ls.stderr.strip()}")
        return 1
    running = {n for n in ls.stdout.split() if n.startswith(a.prefix)}

    for name in sorted(set(doms) - running):
        out.append(f"{name}: recorded by vcpuplaced ({doms[name]['state']}) but libvirt does not run it")

    planned, pinned = {}, {}
    for name in sorted(running):
        d = doms.get(name)
        if d is None:
            out.append(f"{name}: running, unknown to vcpuplaced")
            continue
        state = d["state"]
        if state in ("unplaced", "failed"):
            if not d.get("error"):
                out.append(f"{name}: {state} without a reason")
            continue
        if state not in ("applied", "pinned"):
            out.append(f"{name}: state {state}, neither pinned as planned nor reported")
            continue
        if d.get("degraded") and not d.get("degraded_reason"):
            out.append(f"{name}: degraded without a reason")
        for v in d.get("vcpus", []):
            if v.get("cpu") is not None:
                planned.setdefault(v["cpu"], set()).add(name)
        for cpu in cpu_list(d.get("reserved") or ""):
            planned.setdefault(cpu, set()).add(name)
        try:
            pid, threads = qemu_threads(name)
            for v in d.get("vcpus", []):
                tid = threads.get(v["vcpu"])
                if tid is None:
                    out.append(f"{name}: vCPU {v['vcpu']} has no thread in QEMU {pid}")
                    continue
                have = allowed(pid, tid)
                if v.get("cpu") is not None and have != {v["cpu"]}:
                    out.append(f"{name}: vCPU {v['vcpu']} (TID {tid}) may run on "
                               f"{sorted(have)}, planned CPU {v['cpu']}")
                if len(have) == 1:
                    pinned.setdefault(next(iter(have)), set()).add(name)
            if d.get("emulator"):
                have = allowed(pid, pid)
                if have != cpu_list(d["emulator"]):
                    out.append(f"{name}: emulator (QEMU {pid}) may run on {sorted(have)}, "
                               f"planned {d['emulator']}")
        except (OSError, ValueError) as e:
            out.append(f"{name}: cannot read its QEMU threads: {e}")

    check_holders("plans", planned, doms, out)
    check_holders("/proc", pinned, doms, out)
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
