"""The kubelet reimplementation (kubelet.py) against upstream's own test vectors.

Vectors: pkg/kubelet/cm/cpumanager/cpu_assignment_test.go at kubernetes/kubernetes commit
04791b4906602ffda5ccf9bc4c84d3329f1d7080 (TestCPUAccumulatorFreeSockets, ...FreeNUMANodes,
...FreeSocketsAndNUMANodes, ...FreeCores, ...FreeCPUs, ...Take, TestTakeByTopologyNUMAPacked).
Fixture topologies are upstream's (policy_test.go: topoSingleSocketHT, topoDualSocketHT,
topoTripleSocketHT, topoDualSocketMultiNumaPerSocketHT from a dual Xeon Gold 6230's lscpu,
fakeTopoMultiSocketDualSocketPerNumaHT), rebuilt here from their regular layout.

NumNUMANodes is the number of distinct NUMA ids, as in upstream's fixtures and kubelet's
discovery (with it left at 0 the vectors for topoDualSocketMultiNumaPerSocketHT fail, since
NUMA nodes would then wrongly be the first level of a machine whose sockets hold two each).

Plain python3 standard library: run as `python3 test_kubelet.py`.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kubelet  # noqa: E402


def cpus(spec):
    """A Linux CPU list ("0-9,40-49") as a set."""
    out = set()
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def fixtures():
    def topo(n, layout):
        return kubelet.CPUTopology({i: layout(i) for i in range(n)})

    def triple(i):
        core = i // 2
        return (core, {0: 1, 1: 0, 2: 2}[core // 3], 0)

    return {
        "single": topo(8, lambda i: (i % 4, 0, 0)),
        "dual": topo(12, lambda i: (i % 6, i % 2, i % 2)),
        "triple": topo(18, triple),
        "dualMultiNuma": topo(80, lambda i: (i % 40, (i % 40) // 20, (i % 40) // 10)),
        "fakeMultiSocket": topo(80, lambda i: (i % 40, (i % 40) // 10, (i % 40) // 20)),
    }


FREE_SOCKETS = [  # (topology, available, expected sorted)
    ("single", "0-7", [0]),
    ("single", "1-7", []),
    ("dual", "0-11", [0, 1]),
    ("dual", "0-9,11", [1]),
    ("dual", "0,2-9,11", []),
    ("dualMultiNuma", "0-79", [0, 1]),
    ("dualMultiNuma", "1-79", [1]),
    ("dualMultiNuma", "1-78", []),
    ("fakeMultiSocket", "0-79", [0, 1, 2, 3]),
    ("fakeMultiSocket", "0-19,21-79", [0, 1, 3]),
    ("fakeMultiSocket", "0-59,61-78", [0, 1]),
    ("fakeMultiSocket", "1-19,21-38,41-60,61-78", [1]),
    ("fakeMultiSocket", "0-40,42-49,51-68,71-79", []),
]

FREE_NUMA_NODES = [  # order matters
    ("single", "0-7", [0]),
    ("single", "1-7", []),
    ("dual", "0-11", [0, 1]),
    ("dual", "0-9,11", [1]),
    ("dual", "0,2-9,11", []),
    ("dualMultiNuma", "0-79", [0, 1, 2, 3]),
    ("dualMultiNuma", "1-79", [1, 2, 3]),
    ("dualMultiNuma", "1-9,11-79", [2, 3]),
    ("dualMultiNuma", "1-9,11-59,61-79", [3]),
    ("dualMultiNuma", "1-9,11-59,61-78", []),
    ("fakeMultiSocket", "0-79", [0, 1]),
    ("fakeMultiSocket", "0-9,11-79", [1]),
    ("fakeMultiSocket", "0-9,11-59,61-79", []),
]

FREE_SOCKETS_AND_NUMA_NODES = [  # (topology, available, sockets, NUMA nodes), order matters
    ("dualMultiNuma", "0-79", [0, 1], [0, 1, 2, 3]),
    ("dualMultiNuma", "1-79", [1], [1, 2, 3]),
    ("dualMultiNuma", "1-9,11-79", [1], [2, 3]),
    ("dualMultiNuma", "1-59,61-79", [], [1, 3]),
]

FREE_CORES = [
    ("single", "0-7", [0, 1, 2, 3]),
    ("single", "0-2,4-6", [0, 1, 2]),
    ("single", "0-6", [0, 1, 2]),
    ("single", "", []),
    ("single", "0-3", []),
    ("dual", "0-11", [0, 2, 4, 1, 3, 5]),
    ("dual", "1-5,7-11", [2, 4, 1, 3, 5]),
    ("dual", "2-5,8-11", [2, 4, 3, 5]),
]

FREE_CPUS = [
    ("single", "0-7", [0, 4, 1, 5, 2, 6, 3, 7]),
    ("single", "3-7", [4, 5, 6, 3, 7]),
    ("dual", "0-11", [0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("dual", "1-11", [6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("dual", "1-5,7-11", [2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("triple", "0-3,6-13", [12, 13, 0, 1, 2, 3, 6, 7, 8, 9, 10, 11]),
]

TAKE = [  # (topology, available, takes, needed, satisfied, failed)
    ("single", "0-7", [""], 1, False, False),
    ("single", "", [""], 1, False, True),
    ("single", "0-7", ["0"], 1, True, False),
    ("single", "0-7", ["0"], 2, False, False),
    ("single", "0-2", ["0", "1"], 4, False, True),
    ("single", "0-7", ["0", "1", "2", "3", "4", "5", "6", "7"], 8, True, False),
]

NUMA_PACKED = [  # (topology, available, request, error, expected)
    ("single", "0,2,4,6", 5, "not enough cpus available to satisfy request", ""),
    ("single", "0-7", 0, None, ""),
    ("single", "0-7", 1, None, "0"),
    ("single", "1,3,5-7", 1, None, "6"),
    ("single", "0-7", 2, None, "0,4"),
    ("single", "0-7", 8, None, "0-7"),
    ("single", "0-3,6", 2, None, "2,6"),
    ("dual", "1-5,7-11", 1, None, "2"),
    ("dual", "0-11", 6, None, "0,2,4,6,8,10"),
    ("dualMultiNuma", "0-79", 40, None, "0-19,40-59"),
    ("dualMultiNuma", "0-79", 20, None, "0-9,40-49"),
    ("dualMultiNuma", "10-39,50-79", 20, None, "10-19,50-59"),
    ("dualMultiNuma", "0-79", 60, None, "0-29,40-69"),
    ("dualMultiNuma", "1-39,41-79", 60, None, "10-39,50-79"),
    # TestTakeByTopologyNUMAPacked's own additions
    ("dual", "0-11", 8, None, "0,6,2,8,4,10,1,7"),
    ("dualMultiNuma", "0-79", 64, None, "0-29,40-69,30,31,70,71"),
]


class UpstreamVectors(unittest.TestCase):
    def setUp(self):
        self.topo = fixtures()

    def test_free_sockets(self):
        for name, avail, expect in FREE_SOCKETS:
            with self.subTest(topology=name, available=avail):
                acc = kubelet.Accumulator(self.topo[name], cpus(avail), 0)
                self.assertEqual(sorted(acc.free_sockets()), expect)

    def test_free_numa_nodes(self):
        for name, avail, expect in FREE_NUMA_NODES:
            with self.subTest(topology=name, available=avail):
                acc = kubelet.Accumulator(self.topo[name], cpus(avail), 0)
                self.assertEqual(acc.free_numa_nodes(), expect)

    def test_free_sockets_and_numa_nodes(self):
        for name, avail, sockets, numas in FREE_SOCKETS_AND_NUMA_NODES:
            with self.subTest(topology=name, available=avail):
                acc = kubelet.Accumulator(self.topo[name], cpus(avail), 0)
                self.assertEqual(acc.free_numa_nodes(), numas)
                self.assertEqual(acc.free_sockets(), sockets)

    def test_free_cores(self):
        for name, avail, expect in FREE_CORES:
            with self.subTest(topology=name, available=avail):
                acc = kubelet.Accumulator(self.topo[name], cpus(avail), 0)
                self.assertEqual(acc.free_cores(), expect)

    def test_free_cpus(self):
        for name, avail, expect in FREE_CPUS:
            with self.subTest(topology=name, available=avail):
                acc = kubelet.Accumulator(self.topo[name], cpus(avail), 0)
                self.assertEqual(acc.free_cpus(), expect)

    def test_take(self):
        for name, avail, takes, needed, satisfied, failed in TAKE:
            with self.subTest(topology=name, available=avail, takes=takes):
                acc = kubelet.Accumulator(self.topo[name], cpus(avail), needed)
                taken = 0
                for t in takes:
                    acc.take(cpus(t))
                    taken += len(cpus(t))
                self.assertEqual(acc.is_satisfied(), satisfied)
                self.assertEqual(acc.is_failed(), failed)
                for t in takes:
                    self.assertFalse(cpus(t) & acc.free)
                    self.assertLessEqual(cpus(t), acc.result)
                self.assertEqual(acc.needed, needed - taken)

    def test_take_by_topology_numa_packed(self):
        for name, avail, n, error, expect in NUMA_PACKED:
            with self.subTest(topology=name, available=avail, request=n):
                if error:
                    with self.assertRaisesRegex(kubelet.AllocationError, error):
                        kubelet.take_by_topology_numa_packed(self.topo[name], cpus(avail), n)
                else:
                    self.assertEqual(
                        kubelet.take_by_topology_numa_packed(self.topo[name], cpus(avail), n),
                        cpus(expect))


class StaticPolicy(unittest.TestCase):
    """full-pcpus-only as policy_static.go enforces it, on upstream's topoDualSocketHT."""

    def setUp(self):
        self.topo = fixtures()["dual"]

    def test_odd_request_is_an_smt_alignment_error(self):
        policy = kubelet.StaticPolicy(self.topo, cpus("0-11"), full_pcpus_only=True)
        with self.assertRaisesRegex(kubelet.SMTAlignmentError, "not multiple cpus per core = 2"):
            policy.allocate("pod", 3)
        self.assertEqual(policy.free, cpus("0-11"))

    def test_whole_cores_only_even_when_free_cpus_suffice(self):
        policy = kubelet.StaticPolicy(self.topo, cpus("0-11"), full_pcpus_only=False)
        policy.allocate("a", 1)  # cpu 0: core 0 is now half used
        policy.free -= {1, 3, 5, 7, 9, 11}  # socket 1 taken by others
        strict = kubelet.StaticPolicy(self.topo, policy.free, full_pcpus_only=True)
        with self.assertRaisesRegex(kubelet.SMTAlignmentError, "available physical CPUs = 4"):
            strict.allocate("b", 6)
        self.assertEqual(strict.allocate("c", 4), cpus("2,4,8,10"))

    def test_without_the_option_threads_are_split(self):
        policy = kubelet.StaticPolicy(self.topo, cpus("0-11"))
        self.assertEqual(policy.allocate("a", 3), cpus("0,6,2"))
        policy.remove("a")
        self.assertEqual(policy.free, cpus("0-11"))


if __name__ == "__main__":
    unittest.main()
