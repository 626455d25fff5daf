"""Smoke runs of bench/run against a real PostgreSQL 15 (kept short: ~30 s in all on an idle machine).

These start real servers with initdb/postgres (as the `postgres` account when run as
root, as in CI) and drive them with real pgbench.  PostgreSQL 15 missing is a
FAILURE, not a skip: CI installs postgresql-15.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
RUN = os.path.join(BENCH, "run")
PG_BINDIR = os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin")
FIX = os.path.join(HERE, "fixtures")


def require_pg(test):
    missing = [p for p in (os.path.join(PG_BINDIR, "postgres"), os.path.join(PG_BINDIR, "initdb"))
               if not os.access(p, os.X_OK)]
    if not shutil.which("pgbench") and not os.access(os.path.join(PG_BINDIR, "pgbench"), os.X_OK):
        missing.append("pgbench")
    if missing:
        test.fail("PostgreSQL 15 is required for the benchmark smoke test but is missing: "
                  + ", ".join(missing) + " (apt-get install postgresql-15 postgresql-client-15)")


def run_bench(test, args, timeout=90, env=None):
    out = tempfile.mkdtemp(prefix="bench-smoke-")
    test.addCleanup(shutil.rmtree, out, ignore_errors=True)
    t0 = time.monotonic()
    if "--instructions" not in args:
        args = args + ["--instructions", "off"]
    r = subprocess.run([sys.executable, RUN] + args + ["--out", out], capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ, **(env or {})))
    took = time.monotonic() - t0
    test.assertEqual(r.returncode, 0, f"bench/run failed ({r.returncode}):\nSTDOUT:\n{r.stdout}\nSTDERR:\n{r.stderr}")
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    return res, out, r, took


def server_pids_gone(test, out_text):
    # no server of ours may be left: nothing under the harness's temp dirs still runs
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    left = [l for l in ps.splitlines() if "ferrogres-bench-" in l]
    test.assertEqual(left, [], "servers left running:\n" + "\n".join(left))


class SmokePostgres(unittest.TestCase):
    def test_select_only_pg(self):
        require_pg(self)
        res, out, r, took = run_bench(self, ["smoke", "--systems", "pg", "--only", "select-only", "--duration", "2"])
        self.assertLess(took, 60)
        [w] = res["workloads"]
        self.assertEqual(w["name"], "select-only")
        pts = [p for p in w["points"] if p["system"] == "pg"]
        self.assertEqual(sorted(p["x"] for p in pts), [1, 2, 4])
        for p in pts:
            self.assertEqual(p["status"], "ok", p)
            self.assertGreater(p["tps"], 0)
            self.assertGreater(p["lat_mean_ms"], 0)
            self.assertGreater(p["lat_p99_ms"], 0)
            self.assertGreater(p["txns"], 0)
            self.assertGreater(p["logged_txns"], 0)
            # WAL bytes per transaction from pg_current_wal_lsn() before and after
            self.assertIsNotNone(p["wal_bytes"], p)
            self.assertGreaterEqual(p["wal_per_txn"], 0, p)
        self.assertIsNotNone(w["fits"]["pg"]["usl"], w["fits"]["pg"])
        for ext in ("svg", "png"):
            path = os.path.join(out, f"select-only.{ext}")
            self.assertTrue(os.path.getsize(path) > 1000, path)
        with open(os.path.join(out, "results.csv")) as f:
            self.assertEqual(len(f.read().strip().splitlines()), 1 + 3)
        for k in ("nproc", "memory_mb", "cpu_model", "kernel"):
            self.assertIn(k, res["machine"])
        self.assertIn("commit", res["git"])
        self.assertIn("PostgreSQL tps", r.stdout)
        self.assertIn("WAL B/txn", r.stdout)
        server_pids_gone(self, r.stdout)

    def test_callgrind_pass_counts_server_instructions(self):
        require_pg(self)
        for tool in ("valgrind", "callgrind_control"):
            self.assertTrue(shutil.which(tool), f"{tool} not installed (apt-get install valgrind)")
        res, out, r, _ = run_bench(self, ["smoke", "--systems", "pg", "--only", "select-only", "--clients", "1",
                                          "--duration", "1", "--instructions", "callgrind",
                                          "--cg-transactions", "50"], timeout=240)
        [w] = res["workloads"]
        [cg] = w["instr_callgrind"]
        self.assertEqual(cg["status"], "ok", cg)
        # a short run of 10 and a long one of 50 transactions, one connection each
        self.assertEqual([x["transactions"] for x in cg["runs"]], [10, 50], cg)
        self.assertEqual(cg["txns"], 60)
        self.assertGreater(cg["runs"][1]["instructions"], cg["runs"][0]["instructions"], cg)
        # a prepared primary-key lookup costs PostgreSQL tens of thousands of instructions;
        # with the connection's start-up excluded and the postmaster's counts not
        # inherited, well under a million
        self.assertGreater(cg["instr_per_txn"], 20_000, cg)
        self.assertLess(cg["instr_per_txn"], 1_000_000, cg)
        # with start-up the figure is higher (authentication, catalog caches)
        self.assertGreater(cg["instr_per_txn_with_startup"], cg["instr_per_txn"], cg)
        # the auxiliary processes apart, by name
        names = " ".join(b["name"] for b in cg["background"])
        for aux in ("checkpointer", "walwriter"):
            self.assertIn(aux, names, cg)
        self.assertEqual(res["method"]["instructions_method"], "callgrind")
        self.assertIn("server instructions/txn, connection (callgrind", r.stdout)
        self.assertIn("PostgreSQL background:", r.stdout)
        server_pids_gone(self, r.stdout)

    def test_ferrogres_that_cannot_start_is_reported(self):
        require_pg(self)
        for binary, why in (("exits_at_once.sh", "stand-in server that refuses to start"),
                            ("never_ready.sh", "not accepting connections")):
            with self.subTest(binary=binary):
                b = binary if binary.startswith("/") else os.path.join(FIX, binary)
                res, out, r, took = run_bench(self, ["smoke", "--systems", "ferrogres", "--only", "select-only",
                                                     "--clients", "1,2", "--duration", "1", "--ferrogres-bin", b,
                                                     "--ready-timeout", "2"])
                [w] = res["workloads"]
                fg = [p for p in w["points"] if p["system"] == "ferrogres"]
                self.assertEqual(len(fg), 2)  # reported, not dropped
                for p in fg:
                    self.assertEqual(p["status"], "cannot-run")
                    self.assertIn(why, p["error"])
                self.assertEqual(w["systems"]["ferrogres"]["status"], "cannot-run")
                self.assertIn("cannot run yet", r.stdout)
                self.assertTrue(os.path.exists(os.path.join(out, "select-only.png")))  # drawn, marked
                self.assertLess(took, 45)
                server_pids_gone(self, r.stdout)

    def test_ferrogres_answering_is_measured_side_by_side(self):
        # A stand-in that answers (the real PostgreSQL under ferrogres's flags): the day
        # ferrogres answers, this is the path its points take.
        require_pg(self)
        res, out, r, _ = run_bench(self, ["smoke", "--only", "select-only", "--clients", "1,2", "--duration", "1",
                                          "--ferrogres-bin", os.path.join(FIX, "pg_as_ferrogres.sh")])
        [w] = res["workloads"]
        for s in ("pg", "ferrogres"):
            pts = [p for p in w["points"] if p["system"] == s]
            self.assertEqual([p["status"] for p in pts], ["ok", "ok"], pts)
        # interleaved: point 1 runs pg first, point 2 ferrogres first
        self.assertEqual([p["system"] for p in w["points"]], ["pg", "ferrogres", "ferrogres", "pg"])
        self.assertIn("ratio f/pg", r.stdout)
        with open(os.path.join(out, "results.csv")) as f:
            rows = f.read().splitlines()
        self.assertTrue(all(row.split(",")[-1] for row in rows[1:]), rows)  # ratio filled in
        server_pids_gone(self, r.stdout)

    def test_ferrogres_workload_failure_is_reported(self):
        # The stand-in starts and answers, but every transaction is read-only, so
        # pgbench -i fails: the points are "failed" with pgbench's error, not dropped.
        require_pg(self)
        res, out, r, _ = run_bench(self, ["smoke", "--systems", "ferrogres", "--only", "select-only", "--clients",
                                          "1,2", "--duration", "1", "--no-plots",
                                          "--ferrogres-bin", os.path.join(FIX, "pg_as_ferrogres.sh")],
                                   env={"BENCH_STANDIN_EXTRA": "-c default_transaction_read_only=on"})
        [w] = res["workloads"]
        fg = [p for p in w["points"] if p["system"] == "ferrogres"]
        self.assertEqual([p["status"] for p in fg], ["failed", "failed"])
        for p in fg:
            self.assertIn("pgbench -i", p["error"])
            self.assertIn("read-only transaction", p["error"])
        self.assertIn("FAILED", r.stdout)
        server_pids_gone(self, r.stdout)


if __name__ == "__main__":
    unittest.main()
