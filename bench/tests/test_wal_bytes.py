"""WAL bytes per transaction: LSN parsing and the table column (bench/harness/cli.py, report.py)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness import cli, report  # noqa: E402


class FakeServer:
    def __init__(self, answers):
        self.answers = list(answers)

    def psql(self, sql, timeout=600, env_extra=None):
        assert sql == "select pg_current_wal_lsn()", sql
        return self.answers.pop(0)


class WalBytes(unittest.TestCase):
    def test_parse_lsn(self):
        self.assertEqual(cli.parse_lsn("16/B374D848"), 0x16_B374_D848)
        self.assertEqual(cli.parse_lsn("0/0\n"), 0)
        self.assertEqual(cli.parse_lsn("FFFFFFFF/FFFFFFFF"), 2**64 - 1)
        for bad in ("", "16", "x/1", "/1", "1/"):
            self.assertIsNone(cli.parse_lsn(bad), bad)

    def test_wal_lsn_reports_why_it_is_missing(self):
        self.assertEqual(cli.wal_lsn(FakeServer([(True, "0/1000")])), (0x1000, ""))
        lsn, why = cli.wal_lsn(FakeServer([(False, 'ERROR:  function pg_current_wal_lsn() does not exist\nLINE 1')]))
        self.assertIsNone(lsn)
        self.assertIn("does not exist", why)
        self.assertNotIn("LINE 1", why)

    def test_table_has_a_wal_column_per_system(self):
        pt = dict(status="ok", tps=100.0, lat_mean_ms=1.0, lat_p99_ms=2.0, instr_per_txn=None, x=1)
        wr = {"kind": "pgbench", "fits": {"pg": {}, "ferrogres": {}},
              "points": [dict(pt, system="pg", wal_per_txn=1234.0), dict(pt, system="ferrogres", wal_per_txn=None)]}
        text = report.workload_table(wr, ["pg", "ferrogres"])
        head, _, row = text.splitlines()[:3]
        self.assertEqual(head.count("WAL B/txn"), 2, head)
        self.assertIn("1.2k", row)
        self.assertIn("n/a", row)
        self.assertIn("wal_per_txn", report.CSV_FIELDS)
        self.assertEqual(report.CSV_FIELDS[-1], "ratio_ferrogres_pg")


if __name__ == "__main__":
    unittest.main()
