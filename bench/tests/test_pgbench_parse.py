"""Reading pgbench's summary and per-transaction logs (bench/harness/pgbench.py)."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness import pgbench  # noqa: E402

# pgbench 15's summary, as printed by the real program
SUMMARY_15 = """pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 1
query mode: prepared
number of clients: 4
number of threads: 2
maximum number of tries: 1
duration: 3 s
number of transactions actually processed: 56584
number of failed transactions: 0 (0.000%)
latency average = 0.212 ms
initial connection time = 7.312 ms
tps = 18861.512345 (without initial connection time)
"""


class Summary(unittest.TestCase):
    def test_pg15_summary(self):
        d = pgbench.parse_summary(SUMMARY_15)
        self.assertAlmostEqual(d["tps"], 18861.512345)
        self.assertAlmostEqual(d["lat_mean_ms"], 0.212)
        self.assertEqual(d["txns"], 56584)
        self.assertEqual(d["failed_txns"], 0)

    def test_old_summary_and_garbage(self):
        d = pgbench.parse_summary("tps = 12861.817834 (excluding connections establishing)\n")
        self.assertAlmostEqual(d["tps"], 12861.817834)
        self.assertEqual(pgbench.parse_summary("pgbench: error: connection refused\n"), {})

    def test_error_text_picks_the_error(self):
        err = ("pgbench: error: client 0 script 0 aborted in command 1 query 0: ERROR:  relation \"x\" does not exist\n"
               "pgbench: fatal: Run was aborted; the above results are incomplete.\n")
        t = pgbench.error_text(err)
        self.assertIn("does not exist", t)
        self.assertEqual(pgbench.error_text("", ""), "no output")


class Percentile(unittest.TestCase):
    def test_nearest_rank(self):
        vals = list(range(1, 101))
        self.assertEqual(pgbench.percentile(vals, 99), 99)
        self.assertEqual(pgbench.percentile(vals, 100), 100)
        self.assertEqual(pgbench.percentile(vals, 50), 50)
        self.assertEqual(pgbench.percentile([7], 99), 7)
        self.assertIsNone(pgbench.percentile([], 99))
        self.assertEqual(pgbench.percentile(list(range(1, 1001)), 99), 990)

    def test_logs_of_all_threads(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        prefix = os.path.join(d, "run")
        # client_id transaction_no time script_no time_epoch time_us [schedule_lag]
        with open(prefix + ".123", "w") as f:
            f.write("0 0 250 0 1700000000 1\n0 1 300 0 1700000000 2\n")
        with open(prefix + ".123.1", "w") as f:
            f.write("1 0 1000 0 1700000000 3\n1 1 failed 0 1700000000 4\n")
        with open(os.path.join(d, "other.123"), "w") as f:  # another run's log: not read
            f.write("0 0 99999 0 1700000000 1\n")
        self.assertEqual(sorted(pgbench.read_latencies_us(prefix)), [250, 300, 1000])


if __name__ == "__main__":
    unittest.main()
