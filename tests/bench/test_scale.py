#!/usr/bin/env python3
"""scale.py's own parts: the fill stops at its share of the CPUs and the probes are fresh
starts of the same generator; the growth exponent of a known power law is its power."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402


class Traces(unittest.TestCase):
    def test_fill_and_probes(self):
        for pct in scale.FILLS:
            fill, probes = scale.traces(512, pct, 15)
            load = sum(ev["vcpus"] for ev in fill)
            self.assertLessEqual(load, 512 * pct // 100)
            self.assertGreater(load, 512 * pct // 100 - 32)
            self.assertTrue(all(ev["op"] == "start" for ev in fill + probes))
            self.assertEqual(len(probes), 15)
            names = {ev["name"] for ev in fill}
            self.assertFalse(names & {ev["name"] for ev in probes})

    def test_topology_cpus(self):
        self.assertEqual(scale.topology(8192),
                         "synthetic:pack:32 numa:2(memory=320GB) l3:4 core:16 pu:2")


class Growth(unittest.TestCase):
    def test_power_law(self):
        rows = [{"cpus": c, "m": {"median_ir": 5 * c ** 1.5}} for c in (256, 1024, 4096)]
        last, fit = scale.exponents(rows, "m", "median_ir")
        self.assertAlmostEqual(last, 1.5)
        self.assertAlmostEqual(fit, 1.5)

    def test_one_size_has_none(self):
        self.assertEqual(scale.exponents([{"cpus": 256, "m": {"median_ir": 9}}], "m",
                                         "median_ir"), (None, None))


if __name__ == "__main__":
    unittest.main()
