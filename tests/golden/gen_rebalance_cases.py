#!/usr/bin/env python3
"""Writes the hand-made cases of tests/golden/rebalance: for each, intervals.jsonl (a header
with topology and plans, then N identical one-second intervals: vCPU run/wait/wakeups and
every CPU's busy time, a vCPU's CPU at 100% when it waits over 10%, else its run + 1%,
the rest 1%) and case.ini. Run: ./gen_rebalance_cases.py rebalance, then
VP_REGENERATE=1 golden-rebalance, and review expected.json against each case.ini."""
import json, os, sys
SEC = 1000000000
base = sys.argv[1]

def fill_busy(n, plans, loads):
    busy = [0.01] * n
    for (d, v, run, wait, wk) in loads:
        pu = plans[d]["vcpus"][v]
        busy[pu] = 1.0 if wait > 0.1 else min(1.0, run + 0.01)
    return busy

def case(name, topo, plans, loads, n, desc, ini, busy_fix=None, busy_until=None):
    """busy_until: {cpu: t}, CPUs busy 100% (host load) up to interval t."""
    npus = topo[0] * topo[1] * topo[2] * topo[3] * topo[4]
    bymap = {p["domain"]: p for p in plans}
    busy = fill_busy(npus, bymap, loads)
    if busy_fix:
        busy_fix(busy)
    header = {"events": desc, "topology": dict(zip(("packages", "numa", "l3", "cores", "threads"), topo)),
              "plans": plans}

    def line(t):
        b = [1.0 if t <= (busy_until or {}).get(c, 0) else x for c, x in enumerate(busy)]
        return {"vcpus": [{"domain": d, "vcpu": v, "interval_ns": SEC, "run_ns": int(run * SEC),
                           "wait_ns": int(wait * SEC), "voluntary": int(wk), "involuntary": 0}
                          for (d, v, run, wait, wk) in loads],
                "cpus": [{"cpu": c, "interval_ns": SEC, "busy_ns": int(x * SEC)} for c, x in enumerate(b)]}
    d = os.path.join(base, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "intervals.jsonl"), "w") as f:
        f.write(json.dumps(header) + "\n")
        for t in range(1, n + 1):
            f.write(json.dumps(line(t), separators=(",", ":")) + "\n")
    with open(os.path.join(d, "case.ini"), "w") as f:
        f.write(ini)

case("isolate-moves-whole-core", (1, 2, 2, 4, 2),
     [{"domain": "iso", "smt": "isolate", "vcpus": [0, 1], "reserved": [16, 17]},
      {"domain": "other", "smt": "spread", "vcpus": [2]}],
     [("iso", 0, 0.5, 0.4, 300), ("iso", 1, 0.6, 0.01, 300)], 6,
     "iso vCPU 0 waits 40% on CPU 0 for 6 s",
     """# An isolate vCPU moves onto a whole idle core: core 3 (CPUs 3, 19), the first of L3 0.
# Its reserved sibling moves with it (19 reserved, 16 no longer; 17 stays with vCPU 1),
# CPUs 0 and 16 are free, the emulator follows (3 and 19, not 0), the reason says
# smt=isolate.
[case]
notes=true
ledger=true
""")
case("pack-moves-core-together", (1, 2, 2, 4, 2),
     [{"domain": "pk", "smt": "pack", "vcpus": [0, 16, 1, 17]}],
     [("pk", 0, 0.5, 0.01, 300), ("pk", 1, 0.5, 0.45, 300), ("pk", 2, 0.5, 0.01, 300),
      ("pk", 3, 0.5, 0.01, 300)], 6,
     "pk vCPU 1 waits 45% on CPU 16 for 6 s",
     """# pack: vCPUs 0 and 1 (guest core 0) move together from core 0 to core 2, in order
# (vCPUs on 2, 18, 1, 17: two moves), and the plan stays within one L3.
[case]
notes=true
ledger=true
""")
case("spread-sibling-tiers", (1, 1, 1, 4, 2),
     [{"domain": "a", "smt": "spread", "vcpus": [0, 1]},
      {"domain": "b", "smt": "spread", "group": "grp", "vcpus": [2]},
      {"domain": "c", "smt": "spread", "vcpus": [3]}],
     [("a", 0, 0.5, 0.4, 300), ("a", 1, 0.5, 0.01, 300), ("b", 0, 0.5, 0.01, 300),
      ("c", 0, 0.5, 0.01, 300)], 6,
     "every core holds someone; a vCPU 0 waits 40% on CPU 0",
     """# Only siblings are left: CPU 4 is the hot PU's own sibling (host load next door), CPU 5
# sits next to a's own vCPU 1: one move, to CPU 5, "next to its own domain".
[case]
notes=true
""")
def corun_busy(b):
    b[4] = 0.8
case("corun-moves-to-whole-core", (1, 1, 1, 4, 2),
     [{"domain": "a", "smt": "spread", "vcpus": [0]},
      {"domain": "b", "smt": "spread", "vcpus": [1]},
      {"domain": "c", "smt": "share", "vcpus": [2]}],
     [("a", 0, 0.6, 0.01, 300), ("b", 0, 0.5, 0.01, 300), ("c", 0, 0.5, 0.01, 300)], 6,
     "a vCPU 0 does not wait but a host task runs 80% on CPU 4, its sibling",
     """# A vCPU that does not wait but co-runs with host load on its sibling moves to the whole
# idle core left (core 3, CPU 3): one move, "co-runs with foreign load".
[case]
notes=true
""", corun_busy)
case("corun-share-stays", (1, 1, 1, 4, 2),
     [{"domain": "a", "smt": "share", "vcpus": [0]},
      {"domain": "b", "smt": "spread", "vcpus": [1]},
      {"domain": "c", "smt": "share", "vcpus": [2]},
      {"domain": "d", "smt": "share", "vcpus": [3]}],
     [("a", 0, 0.6, 0.01, 300), ("b", 0, 0.5, 0.01, 300), ("c", 0, 0.5, 0.01, 300),
      ("d", 0, 0.5, 0.01, 300)], 6,
     "as corun-moves-to-whole-core, smt=share and no whole idle core",
     """# share may sit next to share domains, but leaving a stranger for another one gains
# nothing: no move, "no idle target".
[case]
notes=true
""", corun_busy)
for w, name, ini in ((5000, "wake-coupled-stays-in-l3", """# chat fills L3 0 (4 cores) and wakes 5000 times a second per vCPU: wake-coupled, so
# it does not leave L3 0 for the idle core 7 of L3 1: no move, "wake-coupled".
[case]
notes=true
"""), (200, "wake-uncoupled-leaves-l3", """# As wake-coupled-stays-in-l3 with 200 wakeups/s: not coupled, vCPU 0 moves to CPU 7.
[case]
notes=true
""")):
    case(name, (1, 1, 2, 4, 1),
         [{"domain": "chat", "smt": "spread", "vcpus": [0, 1, 2, 3]},
          {"domain": "rest", "smt": "spread", "vcpus": [4, 5, 6]}],
         [("chat", 0, 0.5, 0.4, w), ("chat", 1, 0.5, 0.01, w), ("chat", 2, 0.5, 0.01, w),
          ("chat", 3, 0.5, 0.01, w), ("rest", 0, 0.5, 0.01, 100), ("rest", 1, 0.5, 0.01, 100),
          ("rest", 2, 0.5, 0.01, 100)], 6,
         "chat vCPU 0 waits 40%%, every chat vCPU wakes %d times a second" % w, ini)
case("cap-per-pass", (1, 1, 1, 8, 1),
     [{"domain": "v", "smt": "spread", "vcpus": [0, 1, 2]}],
     [("v", 0, 0.5, 0.3, 300), ("v", 1, 0.5, 0.5, 300), ("v", 2, 0.5, 0.4, 300)], 6,
     "three vCPUs of v wait 30%, 50% and 40%",
     """# max_moves 2: the most delayed first, vCPU 1 then vCPU 2 in the first pass that moves;
# "vCPU 0 of 'v' waits for a later pass: 2 moves per pass"; it moves in the next pass.
[case]
notes=true
[rebalance]
max_moves=2
""")
case("off-and-pinned-never-move", (1, 1, 1, 8, 1),
     [{"domain": "off", "smt": "spread", "vcpus": [0], "rebalance": "off"},
      {"domain": "own", "smt": "share", "vcpus": [1], "how": "pinned"}],
     [("off", 0, 0.5, 0.4, 300), ("own", 0, 0.5, 0.4, 300)], 10,
     "off and own both wait 40% for 10 s",
     """# rebalance=off and pins of its own: never moved, and the notes say why.
[case]
notes=true
""")
case("spread-reexpands-when-core-frees", (1, 1, 1, 4, 2),
     [{"domain": "sq", "smt": "spread", "vcpus": [0, 4]},
      {"domain": "b", "smt": "spread", "vcpus": [1]},
      {"domain": "c", "smt": "spread", "vcpus": [2]}],
     [("sq", 0, 0.05, 0.01, 100), ("sq", 1, 0.05, 0.01, 100), ("b", 0, 0.5, 0.01, 300),
      ("c", 0, 0.5, 0.01, 300)], 24,
     "sq squeezed on core 0 (CPUs 0, 4); host load holds core 3 (CPUs 3, 7) for 4 s, then it idles",
     """# Core 3 is idle from second 5; its smoothed busy figure falls under idle_busy at t=10,
# after the persistence (5 intervals) it is free, and at t=15 sq's later squeezed vCPU
# (1, on CPU 4) moves to CPU 3, "smt=spread re-expands", in the same L3; the emulator
# follows (0,3). Nothing before t=15, nothing after.
[case]
notes=true
ledger=true
""", busy_until={3: 4, 7: 4})
case("spread-reexpand-stays-on-memory-node", (1, 2, 1, 2, 2),
     [{"domain": "sq", "smt": "spread", "vcpus": [0, 4]},
      {"domain": "b", "smt": "spread", "vcpus": [1]},
      {"domain": "c", "smt": "spread", "vcpus": [2]}],
     [("sq", 0, 0.05, 0.01, 100), ("sq", 1, 0.05, 0.01, 100), ("b", 0, 0.5, 0.01, 300),
      ("c", 0, 0.5, 0.01, 300)], 10,
     "sq squeezed on core 0 of node 0 (full); core 3 (CPUs 3, 7) idle on node 1",
     """# Node 0 (cores 0, 1) is full; the only whole idle core is core 3 of node 1, off sq's
# memory: no move, and from t=5 each pass notes "the whole idle cores are off its memory
# nodes".
[case]
notes=true
""")
case("spread-reexpand-no-ping-pong", (1, 1, 1, 4, 2),
     [{"domain": "sa", "smt": "spread", "vcpus": [0, 4]},
      {"domain": "sb", "smt": "spread", "vcpus": [1, 5]},
      {"domain": "c", "smt": "spread", "vcpus": [2]}],
     [("sa", 0, 0.05, 0.01, 100), ("sa", 1, 0.05, 0.01, 100), ("sb", 0, 0.05, 0.01, 100),
      ("sb", 1, 0.05, 0.01, 100), ("c", 0, 0.5, 0.01, 300)], 120,
     "sa and sb squeezed on cores 0 and 1; one whole idle core (3); 120 s",
     """# Two squeezed domains, one whole idle core: at t=5 sa (first by name) moves vCPU 1
# from CPU 4 to CPU 3; sb stays (CPU 7 is next to sa now, not whole), and nothing moves
# again in the remaining 115 intervals: no ping-pong, no stranger on a core.
[case]
ledger=true
""")
case("spread-group-reexpands-when-core-frees", (1, 1, 1, 4, 2),
     [{"domain": "a", "smt": "spread", "group": "tg", "coresched": "group", "vcpus": [0]},
      {"domain": "b", "smt": "spread", "group": "tg", "coresched": "group", "vcpus": [4]},
      {"domain": "c", "smt": "spread", "vcpus": [1]},
      {"domain": "d", "smt": "spread", "vcpus": [2]}],
     [("a", 0, 0.05, 0.01, 100), ("b", 0, 0.05, 0.01, 100), ("c", 0, 0.5, 0.01, 300),
      ("d", 0, 0.5, 0.01, 300)], 24,
     "b moved beside a of its trust group on core 0 (CPUs 0, 4); host load holds core 3 for 4 s",
     """# A group move's ledger: b on CPU 4 beside a (trust group tg, a group cookie) on CPU 0. Core 3 turns idle
# as in spread-reexpands-when-core-frees; at t=15 one of the two, a (first by name), moves
# from CPU 0 to CPU 3, "shares a core with vCPU 0 of 'b' of its trust group 'tg'", in the
# same L3; b then has core 0 to itself and nothing moves after.
[case]
notes=true
ledger=true
""", busy_until={3: 4, 7: 4})
case("group-vm-siblings-corun", (1, 1, 1, 4, 2),
     [{"domain": "a", "smt": "spread", "group": "tg", "vcpus": [0]},
      {"domain": "b", "smt": "spread", "group": "tg", "vcpus": [4]},
      {"domain": "c", "smt": "spread", "vcpus": [1]},
      {"domain": "d", "smt": "spread", "vcpus": [2]}],
     [("a", 0, 0.6, 0.01, 300), ("b", 0, 0.6, 0.01, 300), ("c", 0, 0.5, 0.01, 300),
      ("d", 0, 0.5, 0.01, 300)], 10,
     "a and b of trust group tg at coresched=vm on siblings of core 0 (CPUs 0, 4), both 61% busy; core 3 idle",
     """# Group mates at coresched=vm carry a cookie each: strangers to each other
# (plugin/core/model/trust.h), so their co-run on core 0 is foreign load (0.61 x 0.61 over
# hot_corun 0.2), though neither waits. After the persistence (5 intervals) a (first by
# name) moves from CPU 0 to the whole idle core 3, "co-runs with foreign load". The replayed
# intervals keep CPU 0 busy, host load now, so b is hot again at t=10 and stays: no idle
# target is left. (Before issue 26 the pressure model counted group mates as one trust unit
# whatever their coresched: no move.)
[case]
notes=true
ledger=true
""")
