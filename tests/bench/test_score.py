"""`vcpuplace score`: the shared scorer fed from an outcome file, as the benchmark's
baselines use it.

    test_score.py VCPUPLACE

1. data/score-tiny.jsonl, placed by hand on "pack:1 numa:2 l3:1 core:2 pu:2": cores
   C0 {0,1} and C1 {2,3} in NUMA node / L3 0, C2 {4,5} and C3 {6,7} in node / L3 1.
   Event by event (untrusted cores | stranded PUs after the event):
     a  2 spread g1  0,2          placed            0 | C0:1 C1:3     -> 2
     b  1 spread     1            next to a, C2 and C3 whole and free: the one
                                  untrusted share while a free core exists
                                                    1 (C0) | C1:3   -> 1
     c  4 pack g2 t2 4,5,6,7      aligned           1 | 1
     d  2 share      refused      1 free PU < 2: not fragmentation      1 | 1
     stop a                                         0 | C0:0        -> 1
     e  1 isolate    2, rsv 3                       0 | 1
     f  1 isolate    refused      1 free PU >= 1: fragmentation         0 | 1
     stop b, stop c                                 0 | 0, 0 | 0
     g  2 spread g1  0,4          spans both L3 and both nodes: excess 1 each
                                                    0 | C0:1 C2:5   -> 2
     h  2 pack t2    5,6          next to g, but no whole core is free: not counted;
                                  guest pair on C2 and C3: not aligned
                                                    1 (C2) | C0:1 C3:7 -> 2
     stop d          never placed: ignored, no event
   11 events: untrusted 4/11 = 0.364, stranded 12/11 = 1.091; spans 1/6 = 0.167 over 6
   placed; 2 pack VMs, 1 aligned = 50%; 8 decisions 10..80 us: median (index 4) 50,
   p99 (index 7) 80; 3 admitted before the first refusal (d). Policy-aware NUMA span: only
   g spans a node its policy did not need (a node holds 4 PUs for spread): 1/6 = 0.167.
   vCPUs: 12 of 15 asked placed = 80%. No spread VM runs two vCPUs on one core; no moves.
4. Moves and coresched by hand, on the same host: a and b of group g1 with coresched=group
   trust each other (b beside a is no breach), x of g1 at the default coresched=vm does not;
   a move of a's vCPU is counted for the admission it is listed with.
5. Memory, with 2 GiB per node (1.5 GiB less the host reserve): a stranger's sibling taken
   while the only whole free core is on a node without memory for the VM's vCPU counts in
   untrusted_shares_while_free_core but not in untrusted_shares_while_usable_core; with the
   memory there, or for a VM that asked none, in both; a whole free core on the VM's own node
   counts although the VM filled that node (its vCPU could move there without memory).
2. vcpuplace's own placements, rewritten as an outcome file, score as simulate scored them
   (also with node memory, where the placer and the scorer both count memory).
3. Bad outcome lines are refused with the line number and the field.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402

VCPUPLACE = None
TINY = "synthetic:pack:1 numa:2 l3:1 core:2 pu:2"


def vcpuplace(*args):
    return subprocess.run([VCPUPLACE, *args], capture_output=True, text=True, check=False)


class HandMade(unittest.TestCase):
    def test_metrics_by_hand(self):
        res = vcpuplace("score", "--json", "--topology", TINY,
                        os.path.join(HERE, "data", "score-tiny.jsonl"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(json.loads(res.stdout)["metrics"], {
            "starts": 8, "placed": 6, "refused": 2,
            "admitted_before_first_refusal": 3,
            "fragmentation_refusals": 1,
            "untrusted_shares_while_free_core": 1,
            "untrusted_shares_while_usable_core": 1,
            "untrusted_shared_cores_avg": 0.364,
            "stranded_free_pus_avg": 1.091,
            "l3_span_excess_avg": 0.167,
            "numa_span_excess_avg": 0.167,
            "numa_span_policy_excess_avg": 0.167,
            "vcpus_admitted_pct": 80.0,
            "spread_vms_sharing_core_avg": 0.0,
            "moves": 0,
            "admissions_with_moves": 0,
            "moves_max_per_admission": 0,
            "moves_per_start": 0.0,
            "overcommitted_vcpus": 0,
            "pack_vms_with_guest_siblings": 2,
            "pack_aligned_pct": 50.0,
            "decision_us_median": 50.0,
            "decision_us_p99": 80.0,
        })

    def test_text_output(self):
        res = vcpuplace("score", "--topology", TINY,
                        os.path.join(HERE, "data", "score-tiny.jsonl"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stdout, r"(?m)^  fragmentation_refusals +1$")
        self.assertRegex(res.stdout, r"(?m)^  pack_aligned_pct +50$")


class MovesAndCookies(unittest.TestCase):
    EVENTS = (
        '{"op":"start","name":"a","vcpus":2,"smt":"spread","group":"g1","coresched":"group",'
        '"cpus":[0,2],"us":1}',
        # b beside a on C0: same group and one cookie, no breach (a free core exists)
        '{"op":"start","name":"b","vcpus":1,"smt":"spread","group":"g1","coresched":"group",'
        '"cpus":[1],"us":1}',
        # x of g1 but with its own cookie beside a on C1: a breach while C2 and C3 are free
        '{"op":"start","name":"x","vcpus":1,"smt":"spread","group":"g1","cpus":[3],"us":1}',
        '{"op":"stop","name":"x"}',
        # a's vCPU moves from CPU 2 to its sibling 3 before i starts: the scorer counts the
        # move for i's admission (whether a move was legal is the placer's and props' business)
        '{"op":"start","name":"i","vcpus":1,"smt":"isolate","cpus":[4],"reserved":[5],'
        '"moves":[{"name":"a","from":2,"to":3}],"us":1}',
    )

    def test_moves_and_coresched(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "moves.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(self.EVENTS) + "\n")
            res = vcpuplace("score", "--json", "--topology", TINY, path)
            self.assertEqual(res.returncode, 0, res.stderr)
            m = json.loads(res.stdout)["metrics"]
        self.assertEqual(m["untrusted_shares_while_free_core"], 1)
        self.assertEqual(m["moves"], 1)
        self.assertEqual(m["admissions_with_moves"], 1)
        self.assertEqual(m["moves_max_per_admission"], 1)
        self.assertEqual(m["moves_per_start"], 0.25)
        # after the move a runs 3 (C1) alone and 0 on C0: no spread VM shares its own core
        self.assertEqual(m["spread_vms_sharing_core_avg"], 0.0)

    def test_bad_move(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.EVENTS[0] + "\n" + '{"op":"start","name":"i","vcpus":1,'
                        '"smt":"isolate","cpus":[4],"moves":[{"name":"a","from":1,"to":3}],'
                        '"us":1}\n')
            res = vcpuplace("score", "--topology", TINY, path)
            self.assertEqual(res.returncode, 1, res.stdout)
            self.assertIn("move of VM 'a': it runs no vCPU on CPU 1", res.stderr)


class Memory(unittest.TestCase):
    """C0 {0,1}, C1 {2,3} on node 0, C2 {4,5}, C3 {6,7} on node 1; each node holds 1536 MiB."""

    def score(self, *events):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "memory.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(events) + "\n")
            res = vcpuplace("score", "--json", "--topology", TINY, "--node-memory", "2GiB", path)
            self.assertEqual(res.returncode, 0, res.stderr)
            m = json.loads(res.stdout)["metrics"]
        return m["untrusted_shares_while_free_core"], m["untrusted_shares_while_usable_core"]

    @staticmethod
    def start(name, cpus, memory=None):
        rec = {"op": "start", "name": name, "vcpus": len(cpus), "smt": "spread", "cpus": cpus,
               "us": 1}
        if memory:
            rec["memory"] = memory
        return json.dumps(rec)

    def beside_a(self, node1, b_memory):
        """a on C0 and C1, m on C2 holding node1 of node 1's memory, then b beside a on C0:
        C3 on node 1 is the only whole free core."""
        return self.score(self.start("a", [0, 2], "512MiB"), self.start("m", [4], node1),
                          self.start("b", [1], b_memory))

    def test_free_core_on_a_node_without_memory(self):
        self.assertEqual(self.beside_a("1536MiB", "1GiB"), (1, 0))

    def test_free_core_on_a_node_with_memory(self):
        self.assertEqual(self.beside_a("512MiB", "1GiB"), (1, 1))
        # the share needed is exactly what is left: still room
        self.assertEqual(self.beside_a("512MiB", "1024MiB"), (1, 1))
        self.assertEqual(self.beside_a("513MiB", "1GiB"), (1, 0))

    def test_vm_without_memory(self):
        self.assertEqual(self.beside_a("1536MiB", None), (1, 1))

    def test_memory_freed_by_a_stop(self):
        self.assertEqual(self.score(self.start("a", [0, 2], "512MiB"),
                                    self.start("m", [4], "1536MiB"),
                                    '{"op":"stop","name":"m"}', self.start("n", [4]),
                                    self.start("b", [1], "1GiB")), (1, 1))

    def test_free_core_on_the_vms_own_full_node(self):
        # node 1: m fills its memory and x takes C3, so no whole core is free there; b beside a
        # fills node 0's memory, but C1 on node 0 could have taken b's vCPU all the same
        self.assertEqual(self.score(self.start("m", [4], "1536MiB"), self.start("x", [6]),
                                    self.start("a", [0], "1GiB"),
                                    self.start("b", [1], "512MiB")), (1, 1))

    def test_memory_split_with_the_vcpus(self):
        # w holds 768 MiB on each node (one vCPU each); b's 1 GiB vCPU share no longer fits
        # beside it on node 1, where C3 is the only whole free core
        self.assertEqual(self.score(self.start("a", [0], "256MiB"),
                                    self.start("w", [2, 4], "1536MiB"),
                                    self.start("b", [1], "1GiB")), (1, 0))


class SameAsSimulate(unittest.TestCase):
    """The benchmark's premise: a placement scores the same whichever path it comes by."""

    def test_simulate_placements_rescored(self):
        self.rescored([], 3)

    def test_simulate_placements_rescored_with_node_memory(self):
        # seed 4: the trace has strangers beside a VM while a core is free, but only on
        # nodes whose memory is full (share VMs no longer take a stranger's sibling while a
        # whole core is free, so seed 3 has none left to tell the two counts apart)
        scored = self.rescored(["--node-memory", "12GiB"], 4)
        self.assertGreater(scored["untrusted_shares_while_free_core"], 0)
        self.assertLess(scored["untrusted_shares_while_usable_core"],
                        scored["untrusted_shares_while_free_core"])

    def rescored(self, memory, seed):
        topo = "synthetic:pack:2 numa:2 l3:1 core:4 pu:2"
        with tempfile.TemporaryDirectory() as tmp:
            topo_json = os.path.join(tmp, "topo.json")
            trace = os.path.join(tmp, "trace.jsonl")
            outcome = os.path.join(tmp, "outcome.jsonl")
            res = vcpuplace("topology", "--json", "--topology", topo)
            self.assertEqual(res.returncode, 0, res.stderr)
            with open(topo_json, "w", encoding="utf-8") as f:
                f.write(res.stdout)
            subprocess.run([sys.executable, os.path.join(HERE, "gen_trace.py"),
                            "--topology-json", topo_json, "--seed", str(seed), "--churn", "300",
                            trace], check=True, capture_output=True)
            res = vcpuplace("simulate", "--json", "--topology", topo, *memory, trace)
            self.assertEqual(res.returncode, 0, res.stderr)
            sim = json.loads(res.stdout)
            compare.simulate_outcome(sim, trace, outcome)
            res = vcpuplace("score", "--json", "--topology", topo, *memory, outcome)
            self.assertEqual(res.returncode, 0, res.stderr)
            scored = json.loads(res.stdout)["metrics"]
        self.assertGreater(sim["metrics"]["refused"], 0, "the trace never filled the host")
        self.assertGreater(sim["metrics"]["pack_vms_with_guest_siblings"], 0)
        for key, value in sim["metrics"].items():
            if not key.startswith("decision_us"):
                self.assertEqual(scored[key], value, key)
        return scored


class BadInput(unittest.TestCase):
    CASES = (
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","cpus":[0],"us":1,"color":"x"}',
         "unknown key 'color' in start event"),
        ('{"op":"start","name":"a","vcpus":2,"smt":"spread","cpus":[0],"us":1}',
         '"cpus" has 1 entries for 2 vCPUs'),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","cpus":[99],"us":1}',
         "the topology lacks"),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","cpus":[0],"us":1}\n'
         '{"op":"start","name":"b","vcpus":1,"smt":"spread","cpus":[0],"us":1}',
         ":2: VM 'b' is given a CPU that another VM holds"),
        ('{"op":"start","name":"a","vcpus":1,"smt":"sometimes","cpus":[0],"us":1}',
         "sometimes"),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","cpus":[0]}',
         '"us" must be a number'),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","cpus":[0],"us":-1}',
         '"us": -1 is not a duration'),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","refused":true,"cpus":[0],"us":1}',
         'a refused start has no "cpus"'),
        ('{"op":"start","name":"a","vcpus":2,"smt":"spread","cpus":[0,2],"reserved":[1,1],'
         '"us":1}', '"reserved" names CPU 1 twice'),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","memory":"lots","cpus":[0],'
         '"us":1}', '"memory"=\'lots\' is not a memory size'),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","memory":4096,"cpus":[0],"us":1}',
         '"memory" must be a string'),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","cpus":["0"],"us":1}',
         '"cpus"[0] must be a CPU number'),
        ('{"op":"start","name":"a","vcpus":0,"smt":"spread","cpus":[],"us":1}',
         '"vcpus": 0 is not within 1..4096'),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","group":"no spaces","cpus":[0],'
         '"us":1}', "\"group\": 'no spaces' is not a valid group"),
        ('{"op":"start","name":"a","vcpus":1,"smt":"spread","cpus":[0],"us":1}\n'
         '{"op":"start","name":"a","vcpus":1,"smt":"spread","cpus":[1],"us":1}',
         "VM 'a' is placed twice"),
        ('{"op":"pause","name":"a"}', "\"op\": 'pause' is not one of start, stop"),
        ('{"op":"stop","name":"a","vcpus":1}', "unknown key 'vcpus' in stop event"),
        ('[1,2]', "an outcome must be a JSON object"),
        ('{"op":"start",', ":1: "),
    )

    def test_each_bad_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.jsonl")
            for text, message in self.CASES:
                with self.subTest(text=text):
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(text + "\n")
                    res = vcpuplace("score", "--topology", TINY, path)
                    self.assertEqual(res.returncode, 1, res.stdout)
                    self.assertIn("vcpuplace score: " + path + ":", res.stderr)
                    self.assertIn(message, res.stderr)

    def test_missing_file_and_arguments(self):
        res = vcpuplace("score", "--topology", TINY, "/nonexistent/outcomes.jsonl")
        self.assertEqual(res.returncode, 1)
        self.assertIn("/nonexistent/outcomes.jsonl", res.stderr)
        res = vcpuplace("score", "--topology", TINY)
        self.assertEqual(res.returncode, 1)
        self.assertIn("expected one OUTCOMES.jsonl argument", res.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: test_score.py VCPUPLACE [unittest arguments]")
    VCPUPLACE = sys.argv.pop(1)
    unittest.main()
