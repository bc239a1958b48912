"""Runs one baseline placer over a trace and writes its outcome file for `vcpuplace score`.

    run.py PLACER TOPOLOGY.json TRACE.jsonl OUTCOMES.jsonl

PLACER: naive, kubelet, kubelet-fullpcpus, nova-prefer, nova-require, nova-isolate, or
nova-mixed (each VM's smt mapped to a thread policy). TOPOLOGY.json is the output of
`vcpuplace topology --json`. The nova placers need Debian's python3-nova, imported by the
system /usr/bin/python3. Prints one JSON line: placer, placed, refused.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def make(name, host):
    if name == "naive":
        import naive
        return naive.NaivePlacer(host)
    if name in ("kubelet", "kubelet-fullpcpus"):
        import kubelet
        return kubelet.KubeletPlacer(host, full_pcpus_only=name == "kubelet-fullpcpus")
    if name.startswith("nova-"):
        import nova_baseline
        policy = name[len("nova-"):]
        if policy not in ("prefer", "require", "isolate", "mixed"):
            raise SystemExit(f"run.py: unknown placer '{name}'")
        return nova_baseline.NovaPlacer(host, None if policy == "mixed" else policy)
    raise SystemExit(f"run.py: unknown placer '{name}'")


def main(argv):
    if len(argv) != 5:
        raise SystemExit(__doc__)
    name, topo_path, trace_path, out_path = argv[1:]
    host = common.Host.load(topo_path)
    placer = make(name, host)
    placed, refused = common.replay(placer, common.read_trace(trace_path), out_path)
    print(json.dumps({"placer": name, "placed": placed, "refused": refused}))


if __name__ == "__main__":
    main(sys.argv)
