#!/usr/bin/env python3
"""Unit test of coresched_cost.py's parsing and arithmetic (plain python3, standard library):
the guest's figure lines among console noise, the per-run figures, the recovery ratio and
which tenants a placement leaves on cores of their own cookie."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coresched_cost as cc  # noqa: E402

LOG = """\x1b[2JSeaBIOS
VPGUEST begin costload\r
[    3.1] random: crng init done VPGUEST figure costload.tenant config=a run=0 tenant=0 \
vcpus=2 span_ms=1000.0 online=8 work=100 run_ms=1600.0 wait_ms=10.0 forceidle_ms=0.0 slices=5\r
VPGUEST figure costload.tenant config=a run=0 tenant=1 vcpus=2 span_ms=1000.0 online=8 \
work=50 run_ms=2000.0 wait_ms=0.0 forceidle_ms=0.0 slices=3
VPGUEST figure costload.tenant config=b run=0 tenant=0 vcpus=2 span_ms=1000.0 online=8 \
work=80 run_ms=1000.0 wait_ms=500.0 forceidle_ms=250.0 slices=9
VPGUEST figure costload.tenant config=b run=0 tenant=1 vcpus=2 span_ms=1000.0 online=8 \
work=40 run_ms=1000.0 wait_ms=300.0 forceidle_ms=250.0 slices=9
VPGUEST ok costload.setup config b: pins and cookies as asked
"""


class Parse(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp()
        with os.fdopen(fd, "w") as f:
            f.write(LOG)

    def tearDown(self):
        os.unlink(self.path)

    def test_lines_among_noise(self):
        rows = cc.parse_log(self.path)
        self.assertEqual(len(rows), 4)
        self.assertEqual(rows[0]["config"], "a")
        self.assertEqual(rows[0]["work"], 100.0)
        self.assertEqual(rows[1]["slices"], 3.0)

    def test_run_figures(self):
        runs = cc.per_run(cc.parse_log(self.path))
        a = cc.run_figures(runs["a"][0])
        b = cc.run_figures(runs["b"][0])
        # 3600 ms of run time over 8 CPUs x 1 s.
        self.assertAlmostEqual(a["cpu_share"], 0.45)
        self.assertAlmostEqual(b["cpu_share"], 0.25)
        self.assertAlmostEqual(b["forceidle_of_run"], 0.25)
        self.assertAlmostEqual(b["run_delay_per_vcpu"], 0.2)
        self.assertAlmostEqual(a["work_per_s"], 150.0)
        self.assertAlmostEqual(a["tenant_cpu_per_vcpu_min"], 0.8)
        self.assertAlmostEqual(a["tenant_cpu_per_vcpu_max"], 1.0)

    def test_recovery(self):
        self.assertAlmostEqual(cc.recovery(0.8, 0.6, 0.75), 0.75)
        self.assertAlmostEqual(cc.recovery(0.0, 0.2, 0.05, higher_better=False), 0.75)
        self.assertIsNone(cc.recovery(0.6, 0.6, 0.7))

    def test_whole_core_tenants(self):
        plan = {"siblings": "0-1/2-3/4-5/6-7", "configs": [
            {"name": "c", "cookies": ["A", "B", "C", "D"],
             "pins": [[3, 2, 7, 6], [0, 1], [4], [5]]},
            {"name": "e", "cookies": ["A", "B", "g", "g"],
             "pins": [[3, 2, 7, 6], [0, 1], [4], [5]]},
            {"name": "b", "cookies": ["A", "B", "C", "D"], "pins": None}]}
        self.assertEqual(cc.whole_core_tenants(plan, "c"), ["A", "B"])
        self.assertEqual(cc.whole_core_tenants(plan, "e"), ["A", "B", "C", "D"])
        self.assertIsNone(cc.whole_core_tenants(plan, "b"))
        self.assertEqual(cc.shared_cores(plan, "e"), [("4-5", ["C", "D"])])


if __name__ == "__main__":
    unittest.main()
