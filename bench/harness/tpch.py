"""The `tpch` workload: TPC-H's 22 queries on PostgreSQL 15 and ferrogres, side by side.

Data comes from `tpchgen-cli` (a Rust TPC-H generator from crates.io, installed once
with `cargo install` into the harness's cache dir), generated once per scale factor
into that cache and reused. Each server gets the schema (bench/tpch/schema.sql), the
data through COPY (psql's `\\copy`, streamed from the CSV files), the keys
(bench/tpch/pk.sql, fk.sql), ANALYZE, a CHECKPOINT and one `count(*)` per table (so
that neither system's first query pays for hint bits or a cold cache alone).

Each query (bench/tpch/queries/qNN.sql) runs through psql (`\\timing on`: the time from
sending the query to its last row, connection set-up excluded), on both systems one
after the other, the order alternating from run to run. The client enforces the
timeout: past it the query is cancelled (PostgreSQL: pg_cancel_backend on its backend;
ferrogres: psql's CancelRequest, sent on SIGINT); a query still running `CANCEL_GRACE_S`
after the cancel has ignored it: psql is killed and the server restarted (PostgreSQL:
pg_terminate_backend first), so that the next query does not share the machine with a
runaway one. The two systems' answers (psql --csv files) are compared row by row after
sorting, numbers as numbers, with a relative tolerance on the columns that are averages
or quotients (`TOLERANT_COLUMNS`).
"""

from __future__ import annotations

import csv
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal, InvalidOperation
from typing import Optional

from . import procs, servers

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPCH_DIR = os.path.join(BENCH_DIR, "tpch")
QUERY_DIR = os.path.join(TPCH_DIR, "queries")

# tpchgen-cli is pinned: the same version generates the same data at a given scale.
TPCHGEN_VERSION = "4.0.0"
# Load order: referenced tables first (only matters for reading the log; keys come later).
TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]
# Rows per scale factor (region and nation are fixed), TPC-H clause 4.2.5.
ROWS_PER_SF = {"part": 200_000, "supplier": 10_000, "partsupp": 800_000, "customer": 150_000,
               "orders": 1_500_000, "lineitem": 6_000_000}
MAX_SCALE = 80  # integer keys: o_orderkey reaches 24,000,000 x SF
KEY_CHOICES = ("pk,fk", "pk", "none")
CANCEL_GRACE_S = 10.0
NULL_TEXT = "<NULL>"  # psql's \pset null in the answer files: no TPC-H value looks like it

# Output columns (0-based) that are averages or quotients: compared with REL_TOL, since
# their last digits depend on how each system rounds a division. Every other number
# must be equal as a decimal (so 0.05 equals 0.050, 1995 equals 1995.0).
TOLERANT_COLUMNS = {
    1: {6, 7, 8},   # avg_qty, avg_price, avg_disc
    8: {1},         # mkt_share = sum(...) / sum(volume)
    14: {0},        # promo_revenue = 100.00 * sum(...) / sum(...)
    17: {0},        # avg_yearly = sum(l_extendedprice) / 7.0
}
REL_TOL = 1e-9


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ files
def query_numbers() -> list[int]:
    return list(range(1, 23))


def query_path(n: int) -> str:
    return os.path.join(QUERY_DIR, f"q{n:02d}.sql")


def query_text(n: int) -> str:
    """The query's statement without its trailing semicolon (comments kept)."""
    with open(query_path(n)) as f:
        text = f.read().strip()
    return text[:-1].rstrip() if text.endswith(";") else text


def sql_statements(path: str) -> list[str]:
    """The statements of a DDL file: `--` comment lines dropped, split at `;` ending a line."""
    out, cur = [], []
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("--"):
                continue
            cur.append(line.rstrip())
            if s.endswith(";"):
                out.append("\n".join(cur).rstrip(";").strip())
                cur = []
    if cur:
        out.append("\n".join(cur).strip())
    return out


def key_statements(keys: str) -> list[tuple[str, str]]:
    """(kind, statement) of `--tpch-keys` (pk,fk | pk | none), primary keys first."""
    if keys not in KEY_CHOICES:
        raise ValueError(f"--tpch-keys must be one of {', '.join(KEY_CHOICES)}, not {keys!r}")
    out = []
    if keys in ("pk", "pk,fk"):
        out += [("pk", s) for s in sql_statements(os.path.join(TPCH_DIR, "pk.sql"))]
    if keys == "pk,fk":
        out += [("fk", s) for s in sql_statements(os.path.join(TPCH_DIR, "fk.sql"))]
    return out


def parse_queries(spec: Optional[str]) -> list[int]:
    """`--tpch-queries 1,6,14-17` -> [1, 6, 14, 15, 16, 17]; None -> all 22."""
    if not spec:
        return query_numbers()
    out = []
    for part in spec.split(","):
        part = part.strip().lower().lstrip("q")
        if not part:
            continue
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi.lstrip("q")) if hi else int(lo)
        for n in range(a, b + 1):
            if not 1 <= n <= 22:
                raise ValueError(f"TPC-H has queries 1 to 22, not {n}")
            if n not in out:
                out.append(n)
    return out


def scale_label(scale: float) -> str:
    return f"{scale:g}"


# ------------------------------------------------------------------ the generator
class ToolError(RuntimeError):
    """tpchgen-cli is missing and cannot be installed, or generation failed."""


def cache_dir() -> str:
    """The harness's cache (gitignored): FERROGRES_BENCH_CACHE or bench/.cache."""
    return os.path.abspath(os.environ.get("FERROGRES_BENCH_CACHE") or os.path.join(BENCH_DIR, ".cache"))


def _version_of(exe: str) -> Optional[str]:
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"(\d+\.\d+\.\d+)", r.stdout + r.stderr)
    return m.group(1) if r.returncode == 0 and m else None


def tpchgen_binary(given: Optional[str] = None, install: bool = True) -> str:
    """Path of tpchgen-cli TPCHGEN_VERSION: `given`, else the cache's, else one of that
    version on PATH or in Python's scripts directory (bench/requirements.txt installs
    it), else `cargo install --locked` into the cache (minutes, once per cache)."""
    if given:
        if not os.access(given, os.X_OK):
            raise ToolError(f"--tpchgen-cli {given} is not an executable file")
        return os.path.abspath(given)
    root = os.path.join(cache_dir(), f"tpchgen-cli-{TPCHGEN_VERSION}")
    exe = os.path.join(root, "bin", "tpchgen-cli")
    if os.access(exe, os.X_OK):
        return exe
    # bench/requirements.txt installs the crate's prebuilt binary from PyPI: on PATH,
    # or in this Python's scripts directory (pyenv's shims may not list it yet).
    import sysconfig
    for found in (shutil.which("tpchgen-cli"), os.path.join(sysconfig.get_path("scripts"), "tpchgen-cli")):
        if found and os.access(found, os.X_OK) and _version_of(found) == TPCHGEN_VERSION:
            return found
    if not install:
        raise ToolError(f"tpchgen-cli {TPCHGEN_VERSION} not found in {root} or on PATH")
    cargo = shutil.which("cargo")
    if not cargo:
        raise ToolError(f"tpchgen-cli {TPCHGEN_VERSION} not found and cargo is missing to install it "
                        f"(cargo install --locked --root {root} tpchgen-cli@{TPCHGEN_VERSION})")
    os.makedirs(root, exist_ok=True)
    log(f"installing tpchgen-cli {TPCHGEN_VERSION} into {root} (cargo install, once)")
    r = subprocess.run([cargo, "install", "--locked", "--root", root, f"tpchgen-cli@{TPCHGEN_VERSION}"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not os.access(exe, os.X_OK):
        err = [l for l in r.stderr.splitlines() if l.lstrip().startswith("error")][:3]
        raise ToolError(f"cargo install tpchgen-cli@{TPCHGEN_VERSION} failed ({r.returncode}): "
                        + (" | ".join(err) or r.stderr[-400:]))
    return exe


def data_dir(scale: float) -> str:
    return os.path.join(cache_dir(), "tpch", f"sf{scale_label(scale)}")


def table_file(ddir: str, table: str) -> str:
    return os.path.join(ddir, f"{table}.csv")


def generate(scale: float, exe: str) -> tuple[str, bool]:
    """The directory of the CSV files at `scale` (generated when missing); and whether
    this call generated them. Generation goes to a temp dir renamed at the end, so an
    interrupted one leaves nothing that looks complete."""
    if not 0 < scale <= MAX_SCALE:
        raise ToolError(f"--tpch-scale must be in (0, {MAX_SCALE}] (integer keys), not {scale:g}")
    ddir = data_dir(scale)
    marker = os.path.join(ddir, "COMPLETE")
    if os.path.exists(marker) and all(os.path.exists(table_file(ddir, t)) for t in TABLES):
        return ddir, False
    parent = os.path.dirname(ddir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".sf{scale_label(scale)}-", dir=parent)
    try:
        # CSV (comma, fields with commas quoted, a header line), one file per table
        cmd = [exe, "csv", "--scale-factor", scale_label(scale), "--output-dir", tmp, "--quiet"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=24 * 3600)
        if r.returncode != 0:
            raise ToolError(f"{' '.join(cmd)} failed ({r.returncode}): {(r.stderr or r.stdout)[-400:]}")
        missing = [t for t in TABLES if not os.path.exists(table_file(tmp, t))]
        if missing:
            raise ToolError(f"{' '.join(cmd)} made no {', '.join(missing)} file(s) in {tmp}: "
                            f"{sorted(os.listdir(tmp))}")
        for t in TABLES:  # the load skips a header line: check there is one
            with open(table_file(tmp, t)) as f:
                head = f.readline()
            if not head.startswith(FIRST_COLUMN[t] + ","):
                raise ToolError(f"{table_file(tmp, t)} does not start with a header line: {head[:80]!r}")
        with open(os.path.join(tmp, "COMPLETE"), "w") as f:
            f.write(f"tpchgen-cli {TPCHGEN_VERSION}\n{' '.join(cmd[1:])}\n")
        shutil.rmtree(ddir, ignore_errors=True)
        os.rename(tmp, ddir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ddir, True


FIRST_COLUMN = {"region": "r_regionkey", "nation": "n_nationkey", "part": "p_partkey", "supplier": "s_suppkey",
                "partsupp": "ps_partkey", "customer": "c_custkey", "orders": "o_orderkey", "lineitem": "l_orderkey"}


# ------------------------------------------------------------------ running SQL with a timeout
SQLSTATE_RE = re.compile(r"^(?:psql:[^\n]*?: )?(?:ERROR|FATAL|PANIC):\s+([0-9A-Z]{5}):\s*(.*)$", re.M)
TIME_RE = re.compile(r"^Time: ([0-9.]+) ms", re.M)


def error_of(stderr: str) -> tuple[str, str]:
    """(SQLSTATE, message) of the first error psql printed (VERBOSITY verbose), else ('', text)."""
    m = SQLSTATE_RE.search(stderr)
    if m:
        return m.group(1), m.group(2).strip()
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    return "", " | ".join(lines[:3])[:400]


def psql_cmd(srv, *, out_path: str, file_path: str, csv_out: bool) -> list[str]:
    cmd = [servers.client_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"]
    cmd += ["--csv", "-P", f"null={NULL_TEXT}"] if csv_out else ["-A", "-t"]
    return cmd + srv.conn_args() + ["-d", "postgres", "-o", out_path, "-c", "\\timing on", "-f", file_path]


def _backend_sql(srv, fn: str, appname: str) -> str:
    ok, out = srv.psql(f"select count({fn}(pid)) from pg_stat_activity "
                       f"where application_name = '{appname}' and pid <> pg_backend_pid()", timeout=30)
    return out if ok else f"failed: {out[:160]}"


def run_sql(srv, file_path: str, out_path: str, timeout: float, appname: str, *,
            csv_out: bool = True, grace: float = CANCEL_GRACE_S) -> dict:
    """Runs one SQL file through psql with a client-side timeout.

    Returns {"status": ok|timeout|error, "time_ms", "wall_s", "sqlstate", "error",
    "cancel": how a timeout ended, "restarted": True if the server had to be restarted}.
    """
    env = dict(os.environ, PGAPPNAME=appname, PGCONNECT_TIMEOUT="10")
    cmd = psql_cmd(srv, out_path=out_path, file_path=file_path, csv_out=csv_out)
    rec: dict = {"status": "error"}
    t0 = time.monotonic()
    p = procs.spawn(cmd, stop_signal=signal.SIGINT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, env=env)
    timed_out = False
    try:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            out, err = _cancel(srv, p, appname, grace, rec)
    finally:
        if p.poll() is None:  # interrupted (KeyboardInterrupt): psql goes too
            procs.stop(p, signal.SIGKILL, timeout=5)
        procs.forget(p)
    rec["wall_s"] = round(time.monotonic() - t0, 3)
    times = [float(x) for x in TIME_RE.findall(out or "")]
    died = ""
    if p.returncode != 0 and not timed_out and not SQLSTATE_RE.search(err or ""):
        # psql lost its connection without an error message: a dying server closes its
        # sockets just before its parent can see it gone, so give it a moment
        procs.wait_until(lambda: not srv.alive(), 2.0)
    if not srv.alive():  # the query took the server down: say how, and bring it back
        died = srv.death()
        rec["server_died"] = died
        restart(srv, rec, "server restarted after it died")
    if timed_out:
        rec["status"] = "timeout"
        rec["error"] = f"no answer within {timeout:g} s; {rec.get('cancel', '')}"
        return rec
    if p.returncode == 0 and times and not died:
        rec["status"] = "ok"
        rec["time_ms"] = times[-1]
        return rec
    state, msg = error_of(err or "")
    if died:  # how the server ended first: psql only saw the connection go
        msg = died + (f" (psql: {msg})" if msg else "")
    rec["sqlstate"] = state
    rec["error"] = f"{state}: {msg}" if state else (msg or f"psql exit code {p.returncode}")
    return rec


def _cancel(srv, p: subprocess.Popen, appname: str, grace: float, rec: dict) -> tuple[str, str]:
    """Cancels a query past its timeout; kills psql and restarts the server if the cancel
    is ignored. Returns psql's (stdout, stderr)."""
    if srv.system == "pg":
        n = _backend_sql(srv, "pg_cancel_backend", appname)
        how = f"pg_cancel_backend ({n} backend)"
    else:
        try:
            p.send_signal(signal.SIGINT)  # psql sends a CancelRequest on its own connection
        except ProcessLookupError:
            pass
        how = "CancelRequest (psql SIGINT)"
    try:
        out, err = p.communicate(timeout=grace)
        state, _ = error_of(err or "")
        rec["cancel"] = f"cancelled by {how}" + (f" ({state})" if state else "")
        return out, err
    except subprocess.TimeoutExpired:
        pass
    # the cancel was ignored: the query would go on using the machine
    if srv.system == "pg":
        _backend_sql(srv, "pg_terminate_backend", appname)
    procs.stop(p, signal.SIGKILL, timeout=5)
    out, err = p.communicate()
    rec["cancel"] = f"{how} ignored for {grace:g} s: psql killed"
    if srv.alive() and (srv.system != "pg" or not _wait_backend_gone(srv, appname)):
        restart(srv, rec, "server restarted")
    return out, err


def _wait_backend_gone(srv, appname: str) -> bool:
    def gone():
        ok, out = srv.psql(f"select count(*) from pg_stat_activity where application_name = '{appname}'",
                           timeout=10)
        return ok and out.strip() == "0"
    return procs.wait_until(gone, 10.0, step=0.5)


def restart(srv, rec: dict, what: str) -> None:
    """Restarts the server on its data directory; rec['restarted'] = True, or False and
    the error; `what` is added to rec['cancel'], the story of how the run ended."""
    try:
        srv.restart()
        rec["restarted"] = True
    except servers.ServerError as e:
        rec["restarted"] = False
        rec["restart_error"] = str(e)
        what = f"server restart failed: {e}"
    rec["cancel"] = (rec.get("cancel", "") + "; " + what).lstrip("; ")


# ------------------------------------------------------------------ loading
def load(srv, ddir: str, keys: str, timeout: float, workdir: str) -> tuple[str, dict, list[str]]:
    """Schema, COPY, keys, ANALYZE (per table), CHECKPOINT, warm-up on one server.

    Returns (error or '', seconds per step, notes). Schema and COPY failures are fatal;
    a key, ANALYZE or warm-up failure is a note (the queries still run, the table says so).
    """
    steps: dict = {}
    notes: list[str] = []

    def timed(name, sql, limit=None):
        t0 = time.monotonic()
        ok, out = srv.psql(sql, timeout=limit or 24 * 3600)
        steps[name] = round(steps.get(name, 0.0) + time.monotonic() - t0, 2)
        return ok, out

    ok, out = timed("schema", "drop table if exists " + ", ".join(reversed(TABLES)) + " cascade")
    if not ok:
        return f"drop tables: {out[:300]}", steps, notes
    for st in sql_statements(os.path.join(TPCH_DIR, "schema.sql")):
        ok, out = timed("schema", st)
        if not ok:
            return f"{st.splitlines()[0]}: {out[:300]}", steps, notes
    for t in TABLES:
        path = table_file(ddir, t)
        quoted = path.replace("'", "''")
        ok, out = timed(f"copy {t}", f"\\copy {t} from '{quoted}' with (format csv, header)")
        if not ok:
            return f"COPY {t}: {out[:300]}", steps, notes
    for kind, st in key_statements(keys):
        ok, out = timed(kind, st)
        if not ok:
            notes.append(f"{st}: {out.splitlines()[0][:200] if out else 'failed'}")
    # table by table: one that cannot be analyzed leaves the others' statistics in place
    for name, sql in [("analyze", f"analyze {t}") for t in TABLES] + [("checkpoint", "checkpoint")]:
        ok, out = timed(name, sql)
        if not ok:
            notes.append(f"{sql}: {out.splitlines()[0][:200] if out else 'failed'}")
    for t in TABLES:  # hint bits and caches: the same start for both systems
        path = os.path.join(workdir, f"warm-{srv.system}.sql")
        with open(path, "w") as f:
            f.write(f"select count(*) from {t};\n")
        t0 = time.monotonic()
        r = run_sql(srv, path, os.devnull, timeout, f"ferrogres-bench-tpch-warm-{t}")
        steps["warm-up"] = round(steps.get("warm-up", 0.0) + time.monotonic() - t0, 2)
        if r["status"] != "ok":
            notes.append(f"warm-up count(*) of {t}: {r['status']}: {r.get('error', '')[:200]}")
        if not srv.alive():
            return f"server died during warm-up: {servers.tail(srv.logfile, 4)}", steps, notes
    return "", steps, notes


def row_counts(srv) -> dict:
    out = {}
    for t in TABLES:
        ok, v = srv.psql(f"select count(*) from {t}", timeout=3600)
        out[t] = int(v) if ok and v.strip().isdigit() else None
    return out


# ------------------------------------------------------------------ answers
def read_answer(path: str) -> tuple[list[str], list[list[Optional[str]]]]:
    """(header, rows) of a psql --csv file; NULL_TEXT becomes None."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return [], []
    return rows[0], [[None if v == NULL_TEXT else v for v in r] for r in rows[1:]]


def _dec(v: Optional[str]) -> Optional[Decimal]:
    if v is None:
        return None
    try:
        d = Decimal(v.strip())
    except (InvalidOperation, ValueError):
        return None
    return d if d.is_finite() else None


def _sort_key(row: list[Optional[str]], tolerant: set) -> tuple:
    key = []
    for i, v in enumerate(row):
        d = _dec(v)
        if v is None:
            key.append((0, 0, ""))
        elif d is not None:
            # tolerant columns: rounded, so values within the tolerance sort alike
            key.append((1, float(f"{float(d):.6g}") if i in tolerant else d, ""))
        else:
            key.append((2, 0, v))
    return tuple(key)


def values_equal(a: Optional[str], b: Optional[str], tolerant: bool, rel_tol: float = REL_TOL) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if a == b:
        return True
    da, db = _dec(a), _dec(b)
    if da is None or db is None:
        return False
    if da == db:
        return True
    if not tolerant:
        return False
    return abs(da - db) <= Decimal(rel_tol) * max(abs(da), abs(db), Decimal(1))


def compare_answers(a: list[list[Optional[str]]], b: list[list[Optional[str]]], tolerant: set = frozenset(),
                    rel_tol: float = REL_TOL) -> tuple[bool, str]:
    """Compares two results as multisets of rows (both sorted); numbers compare as
    decimals, columns in `tolerant` within rel_tol. Returns (equal, what differs)."""
    if len(a) != len(b):
        return False, f"{len(a)} rows vs {len(b)} rows"
    sa = sorted(a, key=lambda r: _sort_key(r, tolerant))
    sb = sorted(b, key=lambda r: _sort_key(r, tolerant))
    for i, (ra, rb) in enumerate(zip(sa, sb)):
        if len(ra) != len(rb):
            return False, f"{len(ra)} columns vs {len(rb)} columns"
        for j, (x, y) in enumerate(zip(ra, rb)):
            if not values_equal(x, y, j in tolerant, rel_tol):
                return False, (f"sorted row {i + 1} column {j + 1}: {_show(x)} vs {_show(y)} "
                               f"(rows {_show_row(ra)} vs {_show_row(rb)})")
    return True, ""


def _show(v: Optional[str]) -> str:
    return "NULL" if v is None else repr(v)


def _show_row(r: list) -> str:
    s = "|".join("NULL" if v is None else v for v in r)
    return s if len(s) <= 160 else s[:157] + "..."


def compare_files(query: int, pg_path: str, fg_path: str) -> dict:
    """{'answer': 'equal'|'mismatch', 'detail', 'header_note'} of two answer files."""
    ha, ra = read_answer(pg_path)
    hb, rb = read_answer(fg_path)
    eq, detail = compare_answers(ra, rb, TOLERANT_COLUMNS.get(query, set()))
    out = {"answer": "equal" if eq else "mismatch", "rows": len(ra)}
    if detail:
        out["detail"] = detail
    if ha != hb:
        out["header_note"] = f"column names differ: {','.join(ha)} vs {','.join(hb)}"
    return out


# ------------------------------------------------------------------ summary
def median(xs: list[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def geomean(xs: list[float]) -> Optional[float]:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def system_result(runs: list[dict]) -> dict:
    """A system's result for one query from its runs: ok with the median time if every run
    finished, else the first failure."""
    if not runs:
        return {"status": "not-run"}
    bad = next((r for r in runs if r["status"] != "ok"), None)
    if bad is not None:
        out = {"status": bad["status"], "error": bad.get("error", "")}
        for k in ("sqlstate", "cancel", "restarted", "server_died"):
            if k in bad:
                out[k] = bad[k]
        return out
    times = [r["time_ms"] for r in runs]
    return {"status": "ok", "time_ms": median(times), "times_ms": times}


def summarize(queries: list[int], runs: dict, answers: dict, systems: list[str]) -> dict:
    """Per query: each system's result, the ratio ferrogres/PostgreSQL of the median
    times, the answer check and a status; and the geometric mean over the queries that
    finished on both."""
    rows = []
    for q in queries:
        per = {s: system_result(runs.get((s, q), [])) for s in systems}
        row = {"query": f"Q{q}", "n": q, "systems": per, "ratio": None}
        a = answers.get(q)
        if a:
            row.update({k: v for k, v in a.items()})
        pg, fg = per.get("pg"), per.get("ferrogres")
        if pg and fg and pg["status"] == "ok" and fg["status"] == "ok" and pg["time_ms"]:
            row["ratio"] = fg["time_ms"] / pg["time_ms"]
        row["status"] = query_status(row, systems)
        rows.append(row)
    both = [r for r in rows if r["ratio"] is not None]
    g = {"n": len(both), "of": len(queries), "queries": [r["query"] for r in both],
         "ratio": geomean([r["ratio"] for r in both]),
         "wrong_answers_among_them": [r["query"] for r in both if r.get("answer") == "mismatch"]}
    for s in systems:
        g[f"{s}_ms"] = geomean([r["systems"][s]["time_ms"] for r in both]) if both else None
    return {"queries": rows, "geomean": g}


STATUS_WORD = {"timeout": "timeout", "error": "error", "failed": "failed", "cannot-run": "cannot run yet",
               "not-run": "not run"}


def query_status(row: dict, systems: list[str]) -> str:
    parts = []
    for s in systems:
        r = row["systems"][s]
        if r["status"] == "ok":
            continue
        who = servers.SYSTEM_LABEL[s]
        word = STATUS_WORD.get(r["status"], r["status"])
        if r["status"] == "error":
            parts.append(f"{who} error {r.get('error', '')}")
        elif r["status"] == "timeout":
            # how it ended, in short (the whole story is a note under the table)
            cancel = r.get("cancel", "")
            parts.append(f"{who} timeout" + ("" if cancel.startswith("cancelled") else
                                             " (cancel ignored: server restarted)" if r.get("restarted") else
                                             f" ({cancel})"))
        elif r.get("error"):
            parts.append(f"{who} {word}: {r['error']}")
        else:
            parts.append(f"{who} {word}")
    if parts:
        return "; ".join(parts)
    if row.get("answer") == "mismatch":
        return "wrong answer: " + row.get("detail", "")
    return "ok"


# ------------------------------------------------------------------ the workload
def server_mem_limit(gb: Optional[float]) -> Optional[int]:
    """RLIMIT_AS of each server process in bytes: `--tpch-server-mem` GB, default half the
    machine's memory (a query that runs away with memory then fails inside its server,
    which the harness restarts, instead of calling the OOM killer onto the machine);
    0: no limit."""
    if gb is not None:
        return int(gb * 2**30) if gb > 0 else None
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"MemTotal:\s+(\d+) kB", f.read())
        return int(m.group(1)) * 1024 // 2 if m else None
    except OSError:
        return None


def estimate(scale: float, reps: int, timeout: float, nsys: int, nq: int, explain: bool) -> list[float]:
    """Progress estimates (seconds): one set-up per system, then one per query run."""
    setup = 5 + scale * 150
    per = min(timeout, 1 + scale * 30)
    return [setup] * nsys + [per + (1 if explain else 0)] * (nq * reps * nsys)


def run(runner, w, prog) -> dict:
    """Runs the tpch workload with `runner` (cli.Runner): its servers, settings, results dir."""
    from .workloads import workload_settings
    a, p = runner.args, runner.p
    scale, reps = p.tpch_scale, p.tpch_reps
    timeout, keys, explain = a.tpch_timeout, a.tpch_keys, not a.no_tpch_explain
    queries = parse_queries(a.tpch_queries)
    settings = workload_settings(w, p)
    mem_limit = server_mem_limit(a.tpch_server_mem)
    systems = runner.systems
    resdir = os.path.join(runner.outdir, "tpch")
    os.makedirs(os.path.join(resdir, "answers"), exist_ok=True)
    if explain:
        os.makedirs(os.path.join(resdir, "explain"), exist_ok=True)
    wr = {"name": w.name, "seed": w.seed, "kind": "tpch", "description": w.description,
          "data": f"scale factor {scale_label(scale)}, keys {keys}", "settings": settings,
          "scale": scale, "reps": reps, "timeout_s": timeout, "keys": keys, "queries_run": queries,
          "tpchgen_cli": TPCHGEN_VERSION, "server_mem_limit_bytes": mem_limit, "systems": {}, "points": [],
          "results_dir": resdir}
    workdir = tempfile.mkdtemp(prefix="tpch-", dir=runner.base)
    live: dict = {}
    state: dict = {}
    gen_err = ""
    try:
        exe = tpchgen_binary(getattr(a, "tpchgen_cli", None))
        t0 = time.monotonic()
        ddir, made = generate(scale, exe)
        wr["data_dir"] = ddir
        wr["datagen_s"] = round(time.monotonic() - t0, 1) if made else 0.0
        log(f"tpch: data at scale factor {scale_label(scale)} in {ddir} "
            + (f"(generated in {wr['datagen_s']} s)" if made else "(cached)"))
    except (ToolError, OSError, subprocess.TimeoutExpired) as e:
        gen_err = f"TPC-H data generation: {e}"
        ddir = ""
    try:
        for s in systems:
            t0 = time.monotonic()
            info: dict = {}
            if gen_err:
                state[s] = ("failed", gen_err)
            elif s == "ferrogres" and runner.fg_unavailable:
                state[s] = ("cannot-run", runner.fg_unavailable)
            else:
                srv = runner.make_server(s)
                srv.mem_limit = mem_limit
                try:
                    srv.start(settings)
                    live[s] = srv
                    err, steps, notes = load(srv, ddir, keys, timeout, workdir)
                    info.update(load_s=steps, notes=notes)
                    if not err:
                        info["rows"] = row_counts(srv)
                    state[s] = ("failed", f"data setup failed: {err}") if err else ("ok", "")
                except servers.ServerError as e:
                    srv.stop()
                    live.pop(s, None)
                    state[s] = ("cannot-run", str(e))
            wr["systems"][s] = dict(info, status=state[s][0], reason=state[s][1],
                                    setup_s=round(time.monotonic() - t0, 1))
            msg = "ok" if state[s][0] == "ok" else f"{state[s][0]}: {state[s][1][:200]}"
            notes = wr["systems"][s].get("notes")
            prog.step(f"tpch {servers.SYSTEM_LABEL[s]}: start + load (sf {scale_label(scale)}): {msg}"
                      + (f" ({len(notes)} note(s): {notes[0][:120]})" if notes else ""))

        runs: dict = {}
        answer_file: dict = {}
        k = 0
        for q in queries:
            qfile = query_path(q)
            if explain:
                epath = os.path.join(workdir, f"explain-q{q:02d}.sql")
                with open(epath, "w") as f:
                    f.write("explain\n" + query_text(q) + ";\n")
            for rep in range(reps):
                order = systems if k % 2 == 0 else list(reversed(systems))
                k += 1
                for s in order:
                    base = {"system": s, "query": f"Q{q}", "x": q, "rep": rep + 1}
                    st, why = state[s]
                    if st == "ok" and not live[s].alive():  # died between runs: one restart
                        died, tried = live[s].death(), {}
                        restart(live[s], tried, "restarted")
                        if not tried["restarted"]:
                            state[s] = st, why = ("failed", f"{died}; restart failed: {tried['restart_error']}")
                    prev = runs.get((s, q), [])
                    if prev and prev[-1]["status"] != "ok":
                        continue  # a timeout or an error is not repeated
                    if st != "ok":
                        rec = dict(base, status=st, error=why)
                    else:
                        srv = live[s]
                        if explain and rep == 0:
                            r = run_sql(srv, epath, os.path.join(resdir, "explain", f"q{q:02d}.{s}.txt"),
                                        min(timeout, 60.0), f"ferrogres-bench-tpch-explain-q{q}", csv_out=False)
                            base["explain"] = r["status"] if r["status"] != "error" else f"error {r.get('error')}"
                        out = os.path.join(workdir, f"q{q:02d}.{s}.{rep}.csv")
                        rec = dict(base, **run_sql(srv, qfile, out, timeout, f"ferrogres-bench-tpch-q{q}"))
                        if rec["status"] == "ok" and (s, q) not in answer_file:
                            final = os.path.join(resdir, "answers", f"q{q:02d}.{s}.csv")
                            shutil.move(out, final)
                            answer_file[(s, q)] = final
                        elif os.path.exists(out):
                            os.unlink(out)
                        if rec.get("restarted") is False:
                            state[s] = ("failed", f"restart failed: {rec.get('restart_error', '')}")
                    runs.setdefault((s, q), []).append(rec)
                    wr["points"].append(rec)
                    if rec["status"] == "ok":
                        msg = f"{rec['time_ms']:.1f} ms"
                    else:
                        msg = ("cannot run yet" if rec["status"] == "cannot-run"
                               else f"{rec['status']}: {rec.get('error', '')[:160]}")
                    prog.step(f"tpch Q{q} rep {rep + 1} {servers.SYSTEM_LABEL[s]}: {msg}",
                              ran=rec["status"] not in ("cannot-run", "failed"))
        answers = {}
        for q in queries:
            fa, fb = answer_file.get(("pg", q)), answer_file.get(("ferrogres", q))
            if fa and fb:
                answers[q] = compare_files(q, fa, fb)
        wr.update(summarize(queries, runs, answers, systems))
    finally:
        for srv in live.values():
            srv.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    wr["fits"] = {}
    return wr
