"""The tpch workload's pieces that need no server: query files, key files, answer
comparison with tolerance, the summary (median, ratio, geometric mean) and the report
(text table and CSV rows). bench/harness/tpch.py, report.py."""

import csv
import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness import cli, report, tpch  # noqa: E402


class QueryFiles(unittest.TestCase):
    def test_22_query_files_one_statement_each(self):
        for n in tpch.query_numbers():
            with open(tpch.query_path(n)) as f:
                text = f.read()
            self.assertTrue(text.startswith(f"-- TPC-H Q{n}:"), n)
            body = tpch.query_text(n)
            self.assertFalse(body.endswith(";"), n)
            self.assertNotIn(";", body, f"Q{n} must be one statement")
            self.assertIn("select", body.lower(), n)
        self.assertEqual(len(tpch.query_numbers()), 22)
        self.assertEqual(sorted(os.listdir(tpch.QUERY_DIR)), [f"q{n:02d}.sql" for n in range(1, 23)])

    def test_validation_parameters_are_in_the_text(self):
        # a few of the spec's validation substitution values, one per query family
        expect = {1: "interval '90' day", 2: "'EUROPE'", 3: "'BUILDING'", 5: "'ASIA'", 7: "'GERMANY'",
                  8: "'ECONOMY ANODIZED STEEL'", 9: "'%green%'", 13: "'%special%requests%'", 16: "'Brand#45'",
                  17: "'MED BOX'", 18: "> 300", 19: "'Brand#34'", 20: "'forest%'", 21: "'SAUDI ARABIA'",
                  22: "'13', '31', '23', '29', '30', '18', '17'"}
        for n, s in expect.items():
            self.assertIn(s, tpch.query_text(n), n)
        for n, lim in {2: 100, 3: 10, 10: 20, 18: 100, 21: 100}.items():
            self.assertTrue(tpch.query_text(n).rstrip().endswith(f"limit {lim}"), n)

    def test_key_statements(self):
        pk = tpch.key_statements("pk")
        self.assertEqual(len(pk), 8)
        self.assertTrue(all(k == "pk" and "primary key" in s for k, s in pk))
        both = tpch.key_statements("pk,fk")
        self.assertEqual([k for k, _ in both], ["pk"] * 8 + ["fk"] * 8)
        self.assertTrue(all("foreign key" in s and "references" in s for k, s in both if k == "fk"))
        self.assertEqual(tpch.key_statements("none"), [])
        with self.assertRaises(ValueError):
            tpch.key_statements("fk")

    def test_schema_has_the_8_tables(self):
        sts = tpch.sql_statements(os.path.join(tpch.TPCH_DIR, "schema.sql"))
        self.assertEqual([s.split()[2] for s in sts], tpch.TABLES)
        text = "\n".join(sts)
        self.assertIn("l_extendedprice numeric(15,2)", text)
        self.assertIn("o_orderdate date", text)
        self.assertIn("c_mktsegment char(10)", text)
        self.assertIn("p_name varchar(55)", text)

    def test_requirements_pin_the_generator(self):
        with open(os.path.join(tpch.BENCH_DIR, "requirements.txt")) as f:
            self.assertIn(f"tpchgen-cli=={tpch.TPCHGEN_VERSION}\n", f.read())

    def test_server_mem_limit(self):
        self.assertEqual(tpch.server_mem_limit(2), 2 * 2**30)
        self.assertIsNone(tpch.server_mem_limit(0))
        with open("/proc/meminfo") as f:
            total_kb = int(f.read().split("MemTotal:")[1].split()[0])
        self.assertEqual(tpch.server_mem_limit(None), total_kb * 1024 // 2)

    def test_parse_queries(self):
        self.assertEqual(tpch.parse_queries(None), list(range(1, 23)))
        self.assertEqual(tpch.parse_queries("1,6,14-17"), [1, 6, 14, 15, 16, 17])
        self.assertEqual(tpch.parse_queries("Q3,q3"), [3])
        for bad in ("0", "23", "20-23"):
            with self.assertRaises(ValueError):
                tpch.parse_queries(bad)

    def test_cli_options(self):
        a = cli.parse_args(["quick", "--only", "tpch"])
        self.assertEqual((a.tpch_timeout, a.tpch_keys, a.tpch_scale, a.tpch_reps), (120.0, "pk,fk", None, None))
        from harness import workloads as W
        self.assertEqual((W.PROFILES["quick"].tpch_scale, W.PROFILES["quick"].tpch_reps), (0.1, 1))
        self.assertEqual((W.PROFILES["full"].tpch_scale, W.PROFILES["full"].tpch_reps), (1, 3))
        self.assertEqual(W.workload_settings(W.REGISTRY["tpch"], W.PROFILES["quick"])
                         ["max_parallel_workers_per_gather"], "0")
        for bad in (["--tpch-keys", "fk"], ["--tpch-queries", "23"], ["--tpch-reps", "0"],
                    ["--tpch-scale", "0"], ["--tpch-timeout", "-1"]):
            with self.assertRaises(SystemExit, msg=bad):
                cli.parse_args(["quick", "--only", "tpch"] + bad)


class Errors(unittest.TestCase):
    def test_sqlstate_from_verbose_psql(self):
        err = ('psql:/x/q01.sql:20: ERROR:  42883: operator does not exist: date - interval\n'
               'LINE 3: ...\nHINT:  No operator matches\nLOCATION:  op_error, parse_oper.c:647\n')
        self.assertEqual(tpch.error_of(err), ("42883", "operator does not exist: date - interval"))
        self.assertEqual(tpch.error_of("ERROR:  57014: canceling statement due to user request\n"),
                         ("57014", "canceling statement due to user request"))
        self.assertEqual(tpch.error_of("psql: error: connection to server failed\n"),
                         ("", "psql: error: connection to server failed"))


class Compare(unittest.TestCase):
    def test_equal_in_any_row_order(self):
        a = [["A", "1"], ["B", "2"], ["A", "1"]]
        b = [["B", "2"], ["A", "1"], ["A", "1"]]
        self.assertEqual(tpch.compare_answers(a, b), (True, ""))

    def test_numbers_compare_as_decimals(self):
        self.assertTrue(tpch.compare_answers([["0.05", "1995"]], [["0.050", "1995.0"]])[0])
        self.assertTrue(tpch.compare_answers([["-0"]], [["0.00"]])[0])

    def test_exact_columns_are_exact(self):
        eq, why = tpch.compare_answers([["x", "3785523.5", "1"]], [["x", "3785523.6", "1"]])
        self.assertFalse(eq)
        self.assertIn("column 2", why)
        self.assertIn("'3785523.5' vs '3785523.6'", why)

    def test_tolerant_columns_within_relative_tolerance(self):
        pg = [["A", "25.5220058532573370", "0.04998529583839761162"]]
        close = [["A", "25.52200585325734", "0.0499852958383976"]]
        far = [["A", "25.5221", "0.0499852958383976"]]
        self.assertTrue(tpch.compare_answers(pg, close, {1, 2})[0])
        self.assertFalse(tpch.compare_answers(pg, close, set())[0])   # not tolerant: exact
        eq, why = tpch.compare_answers(pg, far, {1, 2})
        self.assertFalse(eq)
        self.assertIn("column 2", why)

    def test_tolerant_rows_sort_alike(self):
        # two rows whose tolerant values differ in the last digits still pair up
        a = [["1.00000000001", "x"], ["2", "y"]]
        b = [["2.00000000000001", "y"], ["1.0000000000099", "x"]]
        self.assertTrue(tpch.compare_answers(a, b, {0})[0])

    def test_text_is_exact_padding_included(self):
        self.assertFalse(tpch.compare_answers([["BUILDING  "]], [["BUILDING"]])[0])
        self.assertFalse(tpch.compare_answers([["1"]], [["1 apple"]])[0])

    def test_nulls_and_shapes(self):
        self.assertTrue(tpch.compare_answers([[None, "1"]], [[None, "1.0"]])[0])
        self.assertFalse(tpch.compare_answers([[None]], [["0"]])[0])
        eq, why = tpch.compare_answers([["1"], ["2"]], [["1"]])
        self.assertEqual((eq, why), (False, "2 rows vs 1 rows"))
        eq, why = tpch.compare_answers([["1", "2"]], [["1"]])
        self.assertEqual((eq, why), (False, "2 columns vs 1 columns"))
        self.assertEqual(tpch.compare_answers([], []), (True, ""))

    def test_compare_files_reads_psql_csv(self):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: [os.unlink(os.path.join(d, f)) for f in os.listdir(d)] and os.rmdir(d))
        pa, pb = os.path.join(d, "a.csv"), os.path.join(d, "b.csv")
        with open(pa, "w") as f:
            f.write('l_returnflag,avg_qty\nA,25.5220058532573370\n"N, x",<NULL>\n')
        with open(pb, "w") as f:
            f.write('l_returnflag,avg\n"N, x",<NULL>\nA,25.52200585325734\n')
        r = tpch.compare_files(1, pa, pb)  # Q1: column 2 (index 1) is not an avg of Q1's shape here
        self.assertEqual(r["answer"], "mismatch")
        self.assertIn("column names differ", r["header_note"])
        tpch.TOLERANT_COLUMNS[99] = {1}
        self.addCleanup(tpch.TOLERANT_COLUMNS.pop, 99)
        r = tpch.compare_files(99, pa, pb)
        self.assertEqual((r["answer"], r["rows"]), ("equal", 2))


def run_rec(status, **kw):
    return dict(status=status, **kw)


class Summary(unittest.TestCase):
    def make(self):
        runs = {
            ("pg", 1): [run_rec("ok", time_ms=100.0), run_rec("ok", time_ms=300.0), run_rec("ok", time_ms=200.0)],
            ("ferrogres", 1): [run_rec("ok", time_ms=800.0), run_rec("ok", time_ms=400.0), run_rec("ok", time_ms=900.0)],
            ("pg", 2): [run_rec("ok", time_ms=10.0)],
            ("ferrogres", 2): [run_rec("ok", time_ms=10.0)],
            ("pg", 17): [run_rec("ok", time_ms=5000.0)],
            ("ferrogres", 17): [run_rec("timeout", error="no answer within 120 s; cancelled by CancelRequest",
                                        cancel="CancelRequest (psql SIGINT) ignored for 10 s: psql killed; "
                                               "server restarted", restarted=True)],
            ("pg", 5): [run_rec("ok", time_ms=50.0)],
            ("ferrogres", 5): [run_rec("error", sqlstate="42883",
                                       error="42883: operator does not exist: date - interval")],
            ("pg", 9): [run_rec("ok", time_ms=70.0)],
            ("ferrogres", 9): [run_rec("error", sqlstate="", restarted=True,
                                       error="server killed by SIGABRT: memory allocation of 512 bytes failed",
                                       server_died="server killed by SIGABRT: memory allocation of 512 bytes failed")],
        }
        answers = {1: {"answer": "equal", "rows": 4}, 2: {"answer": "mismatch", "rows": 1,
                                                           "detail": "1 rows vs 0 rows"}}
        return tpch.summarize([1, 2, 5, 9, 17], runs, answers, ["pg", "ferrogres"])

    def test_median_ratio_geomean_and_status(self):
        s = self.make()
        q = {r["query"]: r for r in s["queries"]}
        self.assertEqual(q["Q1"]["systems"]["pg"]["time_ms"], 200.0)
        self.assertEqual(q["Q1"]["systems"]["ferrogres"]["time_ms"], 800.0)
        self.assertEqual(q["Q1"]["ratio"], 4.0)
        self.assertEqual(q["Q1"]["status"], "ok")
        self.assertEqual(q["Q2"]["status"], "wrong answer: 1 rows vs 0 rows")
        self.assertIsNone(q["Q5"]["ratio"])
        self.assertEqual(q["Q5"]["status"], "ferrogres error 42883: operator does not exist: date - interval")
        self.assertEqual(q["Q17"]["status"], "ferrogres timeout (cancel ignored: server restarted)")
        g = s["geomean"]
        self.assertEqual((g["n"], g["of"], g["queries"]), (2, 5, ["Q1", "Q2"]))
        self.assertAlmostEqual(g["ratio"], math.sqrt(4.0 * 1.0))
        self.assertAlmostEqual(g["pg_ms"], math.sqrt(200.0 * 10.0))
        self.assertEqual(g["wrong_answers_among_them"], ["Q2"])

    def test_a_failed_run_is_the_result(self):
        r = tpch.system_result([run_rec("ok", time_ms=1.0), run_rec("timeout", error="x", cancel="c")])
        self.assertEqual(r["status"], "timeout")
        self.assertEqual(tpch.system_result([])["status"], "not-run")

    def test_geomean(self):
        self.assertAlmostEqual(tpch.geomean([2.0, 8.0]), 4.0)
        self.assertIsNone(tpch.geomean([]))

    def test_report_table_csv_and_json(self):
        s = self.make()
        wr = {"name": "tpch", "seed": "M14", "kind": "tpch", "description": "TPC-H", "data": "scale factor 0.1",
              "reps": 3, "timeout_s": 120.0, "fits": {}, "points": [], "results_dir": "/r/tpch",
              "systems": {"pg": {"status": "ok", "reason": "", "load_s": {"copy lineitem": 3.5}, "notes": []},
                          "ferrogres": {"status": "ok", "reason": "", "load_s": {"copy lineitem": 9.25},
                                        "notes": ["alter table x add foreign key: ERROR: boom"]}}}
        wr.update(s)
        text = report.workload_text(wr, ["pg", "ferrogres"])
        lines = text.splitlines()
        head = next(l for l in lines if l.startswith("query"))
        for col in ("PostgreSQL ms", "ferrogres ms", "ratio f/pg", "answer", "status"):
            self.assertIn(col, head)
        row = {l.split()[0]: l for l in lines if l.startswith("Q")}
        self.assertRegex(row["Q1"], r"^Q1\s+200\.0\s+800\.0\s+4\.00\s+equal\s+ok$")
        self.assertRegex(row["Q2"], r"^Q2\s+10\.0\s+10\.0\s+1\.00\s+WRONG\s+wrong answer: 1 rows vs 0 rows$")
        self.assertRegex(row["Q5"], r"^Q5\s+50\.0\s+error\s+-\s+-\s+ferrogres error 42883: operator")
        self.assertRegex(row["Q17"], r"^Q17\s+5000\.0\s+>120 s\s+-\s+-\s+ferrogres timeout")
        self.assertIn("geometric mean ratio f/pg over the 2 of 5 queries that finished on both: 2.00", text)
        self.assertRegex(row["Q9"], r"^Q9\s+70\.0\s+error\s+-\s+-\s+ferrogres error server killed by SIGABRT")
        self.assertIn("  Q9 ferrogres: server killed by SIGABRT: memory allocation of 512 bytes failed; restarted", text)
        self.assertIn("wrong answers among them: Q2", text)
        self.assertIn("ferrogres load: copy lineitem 9.25 s", text)
        self.assertIn("ferrogres note: alter table x add foreign key: ERROR: boom", text)
        self.assertIn("3 run(s) per query and system (median)", text)

        out = tempfile.mkdtemp()
        results = {"systems": ["pg", "ferrogres"], "workloads": [wr]}
        report.save(results, out)
        with open(os.path.join(out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 10)
        q1 = [r for r in rows if r["query"] == "Q1"]
        self.assertEqual({r["system"]: r["time_ms"] for r in q1}, {"pg": "200.0", "ferrogres": "800.0"})
        self.assertEqual({r["ratio_ferrogres_pg"] for r in q1}, {"4.000"})
        self.assertEqual({r["answer"] for r in q1}, {"equal"})
        q17 = {r["system"]: r for r in rows if r["query"] == "Q17"}
        self.assertEqual((q17["ferrogres"]["status"], q17["ferrogres"]["ratio_ferrogres_pg"]), ("timeout", ""))
        with open(os.path.join(out, "results.json")) as f:
            j = json.load(f)
        self.assertAlmostEqual(j["workloads"][0]["geomean"]["ratio"], 2.0)
        with open(os.path.join(out, "tables.txt")) as f:
            self.assertIn("geometric mean ratio f/pg", f.read())
        made, err = report.plot_all(results, out)  # bars per query, the unfinished ones hatched
        self.assertEqual((sorted(made), err), (["tpch.png", "tpch.svg"], ""))
        self.assertGreater(os.path.getsize(os.path.join(out, "tpch.png")), 10000)
        for n in os.listdir(out):
            os.unlink(os.path.join(out, n))
        os.rmdir(out)

    def test_single_system_table(self):
        s = tpch.summarize([1], {("pg", 1): [run_rec("ok", time_ms=12.5)]}, {}, ["pg"])
        wr = dict(s, name="tpch", seed="M14", kind="tpch", description="d", data="sf", reps=1, timeout_s=60.0,
                  systems={"pg": {"status": "ok", "reason": ""}}, points=[], fits={})
        text = report.workload_text(wr, ["pg"])
        self.assertRegex(text, r"\nQ1\s+12\.5\s+ok\n")
        self.assertNotIn("ratio", text)


if __name__ == "__main__":
    unittest.main()
