"""Tests of the Amdahl / USL fitting (bench/harness/fit.py)."""

import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness import fit as F  # noqa: E402

NS = [1, 2, 4, 8, 16, 32, 64, 128]


def usl(ns, lam, a, b, noise=0.0, seed=1):
    rng = random.Random(seed)
    return [F.model_x(n, lam, a, b) * (1.0 + rng.gauss(0.0, noise)) for n in ns]


class ExactRecovery(unittest.TestCase):
    def test_usl_exact(self):
        for lam, a, b in [(1000, 0.05, 0.001), (4300, 0.02, 0.0002), (250, 0.3, 0.01), (12000, 0.0, 0.0005)]:
            with self.subTest(lam=lam, a=a, b=b):
                f = F.fit(NS, usl(NS, lam, a, b), "usl")
                self.assertAlmostEqual(f.lam / lam, 1.0, delta=1e-3)
                self.assertAlmostEqual(f.alpha, a, delta=1e-3)
                self.assertAlmostEqual(f.beta / b, 1.0, delta=1e-2)
                self.assertGreater(f.r2, 0.9999)
                self.assertAlmostEqual(f.peak_n, math.sqrt((1 - a) / b), delta=0.02 * math.sqrt((1 - a) / b))

    def test_amdahl_exact(self):
        lam, a = 5000.0, 0.043  # the 9.4 serial fraction of seed 004
        xs = usl(NS, lam, a, 0.0)
        am = F.fit(NS, xs, "amdahl")
        self.assertAlmostEqual(am.alpha, a, delta=1e-4)
        self.assertEqual(am.beta, 0.0)
        self.assertIsNone(am.peak_n)
        u = F.fit(NS, xs, "usl")  # USL on Amdahl data: beta ~ 0
        self.assertLess(u.beta, 1e-6)
        self.assertAlmostEqual(u.alpha, a, delta=1e-3)

    def test_linear_scaling(self):
        f = F.fit(NS, [100.0 * n for n in NS], "usl")
        self.assertLess(f.alpha, 1e-4)
        self.assertLess(f.beta, 1e-7)
        self.assertAlmostEqual(f.lam, 100.0, delta=0.01)


class NoisyRecovery(unittest.TestCase):
    def test_usl_with_2pct_noise(self):
        lam, a, b = 1000.0, 0.05, 0.001
        for seed in range(5):
            with self.subTest(seed=seed):
                f = F.fit(NS, usl(NS, lam, a, b, noise=0.02, seed=seed), "usl")
                self.assertAlmostEqual(f.lam / lam, 1.0, delta=0.06)
                self.assertAlmostEqual(f.alpha, a, delta=0.02)
                self.assertAlmostEqual(f.beta / b, 1.0, delta=0.3)
                self.assertAlmostEqual(f.peak_n / math.sqrt((1 - a) / b), 1.0, delta=0.2)

    def test_amdahl_with_noise(self):
        lam, a = 2000.0, 0.1
        f = F.fit(NS, usl(NS, lam, a, 0.0, noise=0.02, seed=7), "amdahl")
        self.assertAlmostEqual(f.alpha, a, delta=0.02)
        u = F.fit(NS, usl(NS, lam, a, 0.0, noise=0.02, seed=7), "usl")
        self.assertLess(u.beta, 2e-4)  # no coherency term invented beyond noise

    def test_wrong_model_is_worse(self):
        # Retrograde data: Amdahl cannot bend down, so it must fit worse than USL.
        xs = usl(NS, 1000, 0.02, 0.002)
        self.assertLess(F.fit(NS, xs, "usl").sse, 0.01 * F.fit(NS, xs, "amdahl").sse)


class PeakFormula(unittest.TestCase):
    def test_peak(self):
        self.assertAlmostEqual(F.peak_concurrency(0.0, 0.01), 10.0)
        self.assertAlmostEqual(F.peak_concurrency(0.19, 0.0001), 90.0)
        self.assertIsNone(F.peak_concurrency(0.1, 0.0))
        self.assertIsNone(F.peak_concurrency(1.0, 0.01))
        with self.assertRaises(ValueError):
            F.peak_concurrency(-0.1, 0.01)

    def test_peak_is_the_maximum(self):
        a, b = 0.03, 0.0007
        n_star = F.peak_concurrency(a, b)
        best = max((F.model_x(n / 10, 1.0, a, b), n / 10) for n in range(10, 2000))[1]
        self.assertAlmostEqual(best, n_star, delta=0.1)


class Degenerate(unittest.TestCase):
    def test_one_point(self):
        with self.assertRaises(F.FitError) as cm:
            F.fit([4], [1000.0], "usl")
        self.assertIn("at least 3", str(cm.exception))
        with self.assertRaises(F.FitError):
            F.fit([4], [1000.0], "amdahl")

    def test_zero_throughput(self):
        with self.assertRaises(F.FitError) as cm:
            F.fit([1, 2, 4, 8], [0, 0, 0, 0], "usl")
        self.assertIn("zero", str(cm.exception))

    def test_same_concurrency(self):
        with self.assertRaises(F.FitError) as cm:
            F.fit([4, 4, 4], [1, 2, 3], "usl")
        self.assertIn("distinct", str(cm.exception))

    def test_missing_values_dropped(self):
        # None (a point that could not run) is left out, the rest is fitted
        xs = usl([1, 2, 4, 8], 100, 0.1, 0.01)
        f = F.fit([1, 2, 4, 8, 16], xs + [None], "usl")
        self.assertEqual(f.n_points, 4)
        with self.assertRaises(F.FitError):
            F.fit([1, 2, 4], [None, None, None], "usl")

    def test_mismatched_lengths(self):
        with self.assertRaises(F.FitError):
            F.fit([1, 2, 4], [1, 2], "usl")

    def test_fit_both_reports_errors(self):
        out = F.fit_both([1], [5.0])
        self.assertIsNone(out["usl"])
        self.assertIsNone(out["amdahl"])
        self.assertIn("usl", out["errors"])
        self.assertIn("amdahl", out["errors"])

    def test_flat_and_decreasing_data(self):
        f = F.fit([1, 2, 4, 8], [100, 100, 100, 100], "usl")
        self.assertTrue(math.isnan(f.r2) or f.r2 <= 1.0)
        self.assertGreater(f.alpha, 0.9)
        f = F.fit([1, 2, 4, 8], [100, 60, 30, 15], "usl")
        self.assertGreaterEqual(f.alpha, 0.0)
        self.assertGreaterEqual(f.beta, 0.0)
        self.assertIsNotNone(f.to_dict())


if __name__ == "__main__":
    unittest.main()
