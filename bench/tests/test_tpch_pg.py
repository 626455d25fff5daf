"""The tpch workload against a real PostgreSQL 15 on tiny data (scale factor 0.01).

The data comes from the real tpchgen-cli (installed by .ci/run, or by the harness into
bench/.cache); PostgreSQL 15 or tpchgen-cli missing is a FAILURE, not a skip. The
"ferrogres" side is the stand-in (fixtures/pg_as_ferrogres.sh: the real PostgreSQL
under ferrogres's flags), so both sides must give equal answers; ferrogres itself is
measured by `bench/run quick --only tpch`, not here.
"""

import csv
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from harness import procs, servers, tpch  # noqa: E402
from test_smoke_pg import FIX, require_pg, run_bench, server_pids_gone  # noqa: E402


def require_tpchgen(test) -> str:
    try:
        return tpch.tpchgen_binary(install=False)
    except tpch.ToolError as e:
        test.fail(f"{e}: install it with `cargo install --locked tpchgen-cli@{tpch.TPCHGEN_VERSION}` "
                  f"(.ci/run does), or run bench/run once with --only tpch (installs into bench/.cache)")


class TpchData(unittest.TestCase):
    def test_generated_once_and_reused(self):
        exe = require_tpchgen(self)
        ddir, _ = tpch.generate(0.01, exe)
        for t in tpch.TABLES:
            self.assertGreater(os.path.getsize(tpch.table_file(ddir, t)), 0, t)
        again, made = tpch.generate(0.01, exe)
        self.assertEqual((again, made), (ddir, False))
        with open(tpch.table_file(ddir, "nation")) as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[0], ["n_nationkey", "n_name", "n_regionkey", "n_comment"])
        self.assertEqual(len(rows), 1 + 25)
        self.assertEqual(rows[1][:3], ["0", "ALGERIA", "0"])


class TpchSideBySide(unittest.TestCase):
    def test_all_22_queries_explained_run_and_compared(self):
        require_pg(self)
        require_tpchgen(self)
        res, out, r, took = run_bench(self, ["smoke", "--only", "tpch", "--tpch-scale", "0.01", "--tpch-reps", "1",
                                             "--tpch-timeout", "60", "--no-plots",
                                             "--ferrogres-bin", os.path.join(FIX, "pg_as_ferrogres.sh")],
                                      timeout=240)
        [w] = res["workloads"]
        self.assertEqual(w["kind"], "tpch")
        self.assertEqual((w["scale"], w["reps"], w["keys"]), (0.01, 1, "pk,fk"))
        for s in ("pg", "ferrogres"):
            st = w["systems"][s]
            self.assertEqual(st["status"], "ok", st)
            self.assertEqual(st["notes"], [], st)  # keys, ANALYZE and warm-up all worked
            self.assertEqual(st["rows"]["nation"], 25)
            self.assertEqual(st["rows"]["region"], 5)
            self.assertEqual(st["rows"]["orders"], 15000)
            self.assertGreater(st["rows"]["lineitem"], 50000)
            for step in ("schema", "copy lineitem", "pk", "fk", "analyze"):
                self.assertIn(step, st["load_s"])
        self.assertEqual([q["query"] for q in w["queries"]], [f"Q{n}" for n in range(1, 23)])
        for q in w["queries"]:
            self.assertEqual(q["status"], "ok", q)
            self.assertEqual(q["answer"], "equal", q)
            for s in ("pg", "ferrogres"):
                self.assertEqual(len(q["systems"][s]["times_ms"]), 1, q)
                self.assertGreater(q["systems"][s]["time_ms"], 0, q)
            self.assertIsNotNone(q["ratio"])
        # answers are not empty where TPC-H's validation output has rows at every scale
        for n in (1, 3, 5, 6, 10, 12, 13, 14, 22):
            with open(os.path.join(out, "tpch", "answers", f"q{n:02d}.pg.csv")) as f:
                self.assertGreater(len(f.read().splitlines()), 1, n)
        with open(os.path.join(out, "tpch", "answers", "q01.pg.csv")) as f:
            q1 = list(csv.reader(f))
        self.assertEqual(q1[0][:2], ["l_returnflag", "l_linestatus"])
        self.assertEqual([r[:2] for r in q1[1:]], [["A", "F"], ["N", "F"], ["N", "O"], ["R", "F"]])
        for n in range(1, 23):
            for s in ("pg", "ferrogres"):
                with open(os.path.join(out, "tpch", "explain", f"q{n:02d}.{s}.txt")) as f:
                    plan = f.read()
                self.assertRegex(plan, r"\(cost=[0-9.]+\.\.[0-9.]+ rows=\d+ width=\d+\)", (n, s))
        with open(os.path.join(out, "tpch", "explain", "q01.pg.txt")) as f:
            self.assertNotIn("Gather", f.read())  # max_parallel_workers_per_gather = 0
        # interleaved: Q1 pg first, Q2 ferrogres first, Q3 pg first ...
        order = [(p["query"], p["system"]) for p in w["points"]][:6]
        self.assertEqual(order, [("Q1", "pg"), ("Q1", "ferrogres"), ("Q2", "ferrogres"), ("Q2", "pg"),
                                 ("Q3", "pg"), ("Q3", "ferrogres")])
        g = w["geomean"]
        self.assertEqual((g["n"], g["of"]), (22, 22))
        self.assertGreater(g["ratio"], 0)
        self.assertIn("geometric mean ratio f/pg over the 22 of 22 queries", r.stdout)
        with open(os.path.join(out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 44)
        self.assertTrue(all(row["ratio_ferrogres_pg"] and row["answer"] == "equal" for row in rows))
        server_pids_gone(self, r.stdout)


class TpchTimeout(unittest.TestCase):
    """The client-side timeout: cancel, and the restart when the cancel goes unanswered."""

    def setUp(self):
        require_pg(self)
        self.base = tempfile.mkdtemp(prefix="ferrogres-bench-test-")
        os.chmod(self.base, 0o755)
        self.addCleanup(shutil.rmtree, self.base, ignore_errors=True)
        self.addCleanup(procs.cleanup_all)
        self.sql = os.path.join(self.base, "sleep.sql")
        with open(self.sql, "w") as f:
            f.write("select pg_sleep(60);\n")
        self.bad = os.path.join(self.base, "bad.sql")
        with open(self.bad, "w") as f:
            f.write("select date '1998-12-01' - 'x'::text;\n")
        # rows streamed to a psql that stops reading: the backend blocks on the socket,
        # and goes when psql is killed (pg_sleep would hold a smart shutdown for a minute)
        self.stream = os.path.join(self.base, "stream.sql")
        with open(self.stream, "w") as f:
            f.write("select generate_series(1, 100000000), repeat('x', 100);\n")

    def server(self, system, mem_limit=None):
        if system == "pg":
            srv = servers.PgServer(self.base, ready_timeout=60)
        else:
            srv = servers.FerrogresServer(self.base, ready_timeout=60, binary=os.path.join(FIX, "pg_as_ferrogres.sh"))
        srv.mem_limit = mem_limit
        srv.start({"max_connections": "20", "fsync": "off"})  # no data-dir sync in crash recovery
        self.addCleanup(srv.stop)
        return srv

    def test_cancelled_at_the_timeout(self):
        for system, how in (("pg", "pg_cancel_backend (1 backend)"), ("ferrogres", "CancelRequest (psql SIGINT)")):
            with self.subTest(system=system):
                srv = self.server(system)
                t0 = time.monotonic()
                rec = tpch.run_sql(srv, self.sql, os.devnull, 1.0, "tpch-test-sleep", grace=10)
                self.assertLess(time.monotonic() - t0, 10)
                self.assertEqual(rec["status"], "timeout", rec)
                self.assertEqual(rec["cancel"], f"cancelled by {how} (57014)")
                self.assertNotIn("restarted", rec)
                ok, out = srv.psql("select count(*) from pg_stat_activity where application_name = 'tpch-test-sleep'")
                self.assertEqual((ok, out), (True, "0"))
                # an error: its SQLSTATE and message, the session and server go on
                rec = tpch.run_sql(srv, self.bad, os.devnull, 30, "tpch-test-bad")
                self.assertEqual((rec["status"], rec["sqlstate"]), ("error", "42883"), rec)
                self.assertIn("operator does not exist: date - text", rec["error"])
                self.assertTrue(srv.alive())

    def test_unanswered_cancel_restarts_the_server(self):
        # psql stopped (SIGSTOP) cannot pass the cancel on nor exit: to the harness it is a
        # query that ignores its cancel. psql is killed and the server restarted.
        srv = self.server("ferrogres")
        pid0 = srv.proc.pid
        ok, _ = srv.psql("create table kept(x int); insert into kept values (7)")
        self.assertTrue(ok)
        real_spawn = procs.spawn

        def spawn_stopped(args, **kw):
            p = real_spawn(args, **kw)
            if os.path.basename(args[0]) == "psql" and self.stream in args:  # the query's psql only
                threading.Timer(0.5, os.kill, (p.pid, signal.SIGSTOP)).start()
            return p
        procs.spawn = spawn_stopped
        try:
            rec = tpch.run_sql(srv, self.stream, os.devnull, 1.5, "tpch-test-stuck", grace=1.5)
        finally:
            procs.spawn = real_spawn
        self.assertEqual(rec["status"], "timeout", rec)
        self.assertTrue(rec.get("restarted"), rec)
        self.assertIn("ignored for 1.5 s: psql killed; server restarted", rec["cancel"])
        self.assertNotEqual(srv.proc.pid, pid0)
        self.assertEqual(srv.psql("select x from kept"), (True, "7"))  # same data directory


    def test_server_that_dies_mid_query_is_restarted(self):
        srv = self.server("ferrogres", mem_limit=8 * 2**30)
        with open(f"/proc/{srv.proc.pid}/limits") as f:  # the address-space limit is on the server
            self.assertRegex(f.read(), r"Max address space\s+8589934592\s+8589934592\s+bytes")
        threading.Timer(1.0, os.kill, (srv.proc.pid, signal.SIGKILL)).start()
        rec = tpch.run_sql(srv, self.sql, os.devnull, 30, "tpch-test-killed")
        self.assertEqual(rec["status"], "error", rec)
        self.assertTrue(rec["error"].startswith("server killed by SIGKILL (the OOM killer?)"), rec)
        self.assertTrue(rec["server_died"].startswith("server killed by SIGKILL"), rec)
        self.assertTrue(rec["restarted"], rec)
        self.assertEqual(srv.psql("select 1"), (True, "1"))


if __name__ == "__main__":
    unittest.main()
