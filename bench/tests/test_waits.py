"""Wait-event folded stacks of a pgbench point (bench/harness/waits.py), against a
real PostgreSQL 15 and the ferrogres binary (FERROGRES_BIN, else target/release or
target/debug): a missing server is a failure, not a skip."""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness import servers, waits  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ferrogres_binary() -> str:
    for p in (os.environ.get("FERROGRES_BIN"), os.path.join(REPO, "target/release/ferrogres"),
              os.path.join(REPO, "target/debug/ferrogres")):
        if p and os.access(p, os.X_OK):
            return p
    raise AssertionError("no ferrogres binary: cargo build -p ferrogres (or set FERROGRES_BIN)")


def base_dir(prefix: str) -> str:
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)  # the postgres account must reach its own dirs inside (as bench/run)
    return d


class Waits(unittest.TestCase):
    def sample(self, srv: servers.Server) -> tuple[dict, list[str]]:
        out = tempfile.mkdtemp(prefix="waits-")
        srv.start({"max_connections": "40"})
        try:
            pgb = [servers.client_tool("pgbench")] + srv.conn_args()
            r = subprocess.run(pgb + ["-i", "-q", "-s", "1", "postgres"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            s = waits.Sampler(srv, out, "t")
            s.start()
            r = subprocess.run(pgb + ["-n", "-c", "8", "-j", "2", "-T", "3", "postgres"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            rec = s.stop()
        finally:
            srv.stop()
        with open(os.path.join(out, rec["folded"])) as f:
            lines = f.read().splitlines()
        return rec, lines

    def check(self, rec: dict, lines: list[str]) -> None:
        self.assertNotIn("error", rec)
        self.assertGreater(rec["samples"], 0, rec)
        total = 0
        for line in lines:
            stack, _, n = line.rpartition(" ")
            frames = stack.split(";")
            self.assertEqual(len(frames), 4, line)
            self.assertEqual(frames[0], "client backend", line)
            int(frames[3])  # the query id
            total += int(n)
        self.assertEqual(total, rec["samples"])
        # The flame graph: inferno-flamegraph is required (a missing tool fails).
        self.assertIn("svg", rec, rec.get("svg_error"))
        # A tpcb-like run at 8 clients waits on row locks in both systems.
        self.assertTrue(any(";Lock;" in line for line in lines), lines)

    def test_postgres_15_sampled_from_pg_stat_activity(self):
        self.check(*self.sample(servers.PgServer(base_dir("waits-pg-"), 60)))

    def test_ferrogres_builtin_profile(self):
        srv = servers.FerrogresServer(base_dir("waits-fg-"), 60, ferrogres_binary())
        self.check(*self.sample(srv))


if __name__ == "__main__":
    unittest.main()
