"""bench/run: side-by-side pgbench runs of PostgreSQL 15 and ferrogres."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Optional

from . import bulk, callgrind, pgbench, perfstat, procs, report, servers, tpch, waits, workloads as W

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(BENCH_DIR)
SYSTEMS = ("pg", "ferrogres")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fmt_secs(s: float) -> str:
    s = int(max(0, s))
    return f"{s // 60}:{s % 60:02d}"


def parse_lsn(text: str) -> Optional[int]:
    """A pg_lsn's text (`16/B374D848`) as a byte position; None if it is not one."""
    hi, sep, lo = text.strip().partition("/")
    try:
        return (int(hi, 16) << 32) | int(lo, 16) if sep and hi and lo else None
    except ValueError:
        return None


def wal_lsn(srv) -> tuple[Optional[int], str]:
    """The server's WAL write position (pg_current_wal_lsn()) and '' or why it is missing."""
    ok, out = srv.psql("select pg_current_wal_lsn()")
    if not ok:
        return None, f"pg_current_wal_lsn(): {out.splitlines()[0][:120] if out else 'failed'}"
    lsn = parse_lsn(out)
    return (lsn, "") if lsn is not None else (None, f"pg_current_wal_lsn() returned {out[:40]!r}")

class Progress:
    """One line per point on stderr: elapsed, and remaining time from the estimates
    scaled by how long the finished items really took."""

    def __init__(self, items: list[float]):
        self.est = items
        self.t0 = time.monotonic()
        self.done = 0
        self.done_est = 0.0

    def step(self, msg: str, ran: bool = True) -> None:
        est = self.est[self.done] if self.done < len(self.est) else 0.0
        self.done += 1
        if ran:  # a skipped item (system that cannot run) took no time: keep it out of the rate
            self.done_est += est
        el = time.monotonic() - self.t0
        ratio = min(4.0, max(0.5, el / self.done_est)) if self.done_est > 0 else 1.0
        left = sum(self.est[self.done:]) * ratio
        log(f"[{self.done:3d}/{len(self.est)}] {fmt_secs(el)} elapsed, ~{fmt_secs(left)} left | {msg}")


def machine() -> dict:
    d = {"nproc": os.cpu_count(), "kernel": os.uname().release, "hostname": os.uname().nodename,
         "python": sys.version.split()[0]}
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"MemTotal:\s+(\d+) kB", f.read())
            d["memory_mb"] = int(m.group(1)) // 1024 if m else None
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.+)", f.read())
            d["cpu_model"] = m.group(1).strip() if m else None
    except OSError:
        pass
    for tool, cmd in (("postgres", [os.path.join(servers.PG_BINDIR, "postgres"), "--version"]),
                      ("pgbench", ["pgbench", "--version"]), ("perf", ["perf", "--version"])):
        try:
            d[f"{tool}_version"] = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            d[f"{tool}_version"] = None
    return d


def git_info() -> dict:
    def g(*a):
        try:
            r = subprocess.run(["git", "-C", REPO_ROOT] + list(a), capture_output=True, text=True, timeout=10)
            return r.stdout.strip() if r.returncode == 0 else None
        except OSError:
            return None
    st = g("status", "--porcelain")
    return {"commit": g("rev-parse", "HEAD"), "branch": g("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": bool(st) if st is not None else None}


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__)
    ap.add_argument("profile", choices=sorted(W.PROFILES))
    ap.add_argument("--systems", default="pg,ferrogres", help="comma list of pg,ferrogres (default both)")
    ap.add_argument("--only", help="comma list of workloads (default: the profile's); one of "
                                   + ", ".join(W.REGISTRY))
    ap.add_argument("--out", help="results directory (default bench/results/<UTC timestamp>)")
    ap.add_argument("--duration", type=float, help="seconds per pgbench point (overrides the profile)")
    ap.add_argument("--clients", help="comma list of client counts (overrides the profile)")
    ap.add_argument("--scale", type=int, help="pgbench scale of the -in workloads (overrides the profile; "
                    "shared_buffers grows to hold it)")
    ap.add_argument("--ferrogres-bin", help="ferrogres binary (default target/release/ferrogres, built if missing)")
    ap.add_argument("--build", action="store_true", help="run cargo build --release -p ferrogres first")
    ap.add_argument("--ready-timeout", type=float, default=20.0,
                    help="seconds a server gets to accept connections (default 20)")
    ap.add_argument("--perf-event", default="instructions",
                    help="perf event counted on the server per transaction (default instructions)")
    ap.add_argument("--instructions", choices=["auto", "perf", "callgrind", "off"], default="auto",
                    help="how server instructions per transaction are counted: perf stat during the timed "
                         "points; callgrind in an extra pass per workload (server restarted under valgrind, "
                         "fixed transaction count); auto = perf where the CPU counter works, else callgrind "
                         "if valgrind is installed (default auto)")
    ap.add_argument("--cg-transactions", type=int,
                    help="transactions per client in the callgrind pass (default: the profile's)")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--bulk-rows", type=int, help="rows of the bulk workload (default: quick 1M, full 10M)")
    ap.add_argument("--bulk-reps", type=int, help="runs of the bulk workload's steps per system, median reported (default 1)")
    g = ap.add_argument_group("tpch workload")
    g.add_argument("--tpch-scale", type=float, help="TPC-H scale factor (default: smoke 0.01, quick 0.1, full 1)")
    g.add_argument("--tpch-reps", type=int, help="timed runs per query and system, median reported "
                   "(default: quick 1, full 3)")
    g.add_argument("--tpch-timeout", type=float, default=120.0,
                   help="seconds per query run, enforced by the client (default 120)")
    g.add_argument("--tpch-keys", default="pk,fk", choices=list(tpch.KEY_CHOICES),
                   help="keys added after the load (default pk,fk)")
    g.add_argument("--tpch-queries", help="only these queries, e.g. 1,6,14-17 (default all 22)")
    g.add_argument("--no-tpch-explain", action="store_true",
                   help="do not save each query's EXPLAIN (without ANALYZE) in the results dir")
    g.add_argument("--tpch-server-mem", type=float,
                   help="address-space limit (RLIMIT_AS) of each server process in GB, so a runaway query fails "
                        "in its server instead of waking the OOM killer (default half the machine's memory; 0: none)")
    g.add_argument("--tpchgen-cli", help=f"tpchgen-cli binary (default: the cache's, installed with cargo "
                   f"install tpchgen-cli@{tpch.TPCHGEN_VERSION} when missing)")
    a = ap.parse_args(argv)
    a.systems = [s.strip() for s in a.systems.split(",") if s.strip()]
    for s in a.systems:
        if s not in SYSTEMS:
            ap.error(f"unknown system {s!r} (known: {', '.join(SYSTEMS)})")
    if a.only:
        a.only = [s.strip() for s in a.only.split(",") if s.strip()]
        for s in a.only:
            if s not in W.REGISTRY:
                ap.error(f"unknown workload {s!r} (known: {', '.join(W.REGISTRY)})")
    try:
        tpch.parse_queries(a.tpch_queries)
    except ValueError as e:
        ap.error(f"--tpch-queries: {e}")
    if a.tpch_reps is not None and a.tpch_reps < 1:
        ap.error("--tpch-reps must be at least 1")
    if a.tpch_timeout <= 0:
        ap.error("--tpch-timeout must be positive")
    if a.tpch_scale is not None and not 0 < a.tpch_scale <= tpch.MAX_SCALE:
        ap.error(f"--tpch-scale must be in (0, {tpch.MAX_SCALE}] (the schema's integer keys)")
    return a


class Runner:
    def __init__(self, args, profile: W.Profile, outdir: str):
        self.args = args
        self.p = profile
        self.outdir = outdir
        self.systems = args.systems
        self.ncpu = os.cpu_count() or 1
        self.perf_ok, self.perf_why = perfstat.probe(args.perf_event)
        cg_ok, cg_why = callgrind.probe()
        method = args.instructions
        if method == "auto":
            method = "perf" if self.perf_ok else ("callgrind" if cg_ok else "off")
        if method == "callgrind" and not cg_ok:
            log(f"note: --instructions callgrind unavailable: {cg_why}")
            method = "off"
        if method != "perf":
            self.perf_ok = False
            self.perf_why = self.perf_why or f"--instructions {args.instructions}"
        self.instr_method = method
        self.cg_transactions = args.cg_transactions or profile.cg_transactions
        self.fg_binary: Optional[str] = None
        self.fg_unavailable = ""
        self.results: dict = {}
        self.base = ""

    # ---------------------------------------------------------------- planning
    def plan(self, names: list[str]) -> list[float]:
        est = []
        for n in names:
            w = W.REGISTRY[n]
            if w.kind == "bulk":
                est += bulk.estimate(self.p.bulk_rows, len(self.systems), self.args.bulk_reps or 1)
                continue
            if w.kind == "tpch":
                a = self.args
                est += tpch.estimate(self.p.tpch_scale, self.p.tpch_reps, a.tpch_timeout, len(self.systems),
                                     len(tpch.parse_queries(a.tpch_queries)), not a.no_tpch_explain)
                continue
            for s in self.systems:
                setup = w.setup(self.p)
                est.append(3 + setup.get("pgbench_init", 0) * 0.8 + len(setup.get("sql", [])) * 0.5
                           + (self.p.hash_rows / 20000 if w.name == "hash-update" else 0)
                           + ((self.p.par_test_rows + self.p.par_perf_rows) / 20000 if w.kind == "parallel" else 0))
            npts = len(self.p.clients) if w.kind == "pgbench" else 4 * len(self.p.par_workers)
            per = self.p.duration + 2 if w.kind == "pgbench" else 1 + self.p.par_reps * (self.p.par_perf_rows / 100000)
            est += [per] * (npts * len(self.systems))
        return est

    # ---------------------------------------------------------------- servers
    def make_server(self, system: str) -> servers.Server:
        if system == "pg":
            return servers.PgServer(self.base, ready_timeout=60)
        return servers.FerrogresServer(self.base, ready_timeout=self.args.ready_timeout, binary=self.fg_binary)

    def setup_data(self, srv: servers.Server, w: W.Workload) -> str:
        """Load the workload's data; returns '' or the error."""
        s = w.setup(self.p)
        if "pgbench_init" in s:
            ok, err = pgbench.init(srv, s["pgbench_init"])
            if not ok:
                return err
        for sql in s.get("sql", []):
            ok, out = srv.psql(sql, timeout=3600)
            if not ok:
                return f"{sql.splitlines()[0][:80]}: {out}"
        return ""

    # ---------------------------------------------------------------- points
    def measure(self, srv: servers.Server, w: W.Workload, clients: int, *, workload_args: list[str],
                duration: Optional[float], transactions: Optional[int], tag: str,
                env_extra: Optional[dict] = None) -> dict:
        rec: dict = {"status": "failed", "loadavg_1m": round(os.getloadavg()[0], 2)}
        notes = []
        for sql in w.pre_point_sql:
            ok, out = srv.psql(sql)
            if not ok:
                notes.append(f"{sql}: {out[:200]}")
        lsn0, wal_why = wal_lsn(srv)
        att = None
        baseline = set(srv.pids())
        if self.perf_ok:
            att = perfstat.Attach(self.args.perf_event, sorted(baseline))
            att.start()
        sampler = None
        if w.name.startswith("tpcb") and clients == waits.CLIENTS and duration is not None:
            os.makedirs(self.outdir, exist_ok=True)
            sampler = waits.Sampler(srv, self.outdir, tag)
            sampler.start()
        t0 = time.monotonic()
        res = pgbench.run(srv, workload_args=workload_args, clients=clients, jobs=min(clients, self.ncpu),
                          duration=duration, transactions=transactions, logdir=self.logdir, tag=tag,
                          sampling_rate=self.p.sampling_rate, env_extra=env_extra)
        rec["elapsed_s"] = round(time.monotonic() - t0, 2)
        if sampler is not None:
            rec["waits"] = sampler.stop()
        instr, why = None, self.perf_why
        if att is not None:
            # backends fold their counts into the postmaster's when they exit: wait for them
            procs.wait_until(lambda: set(srv.pids()) <= baseline, 10.0)
            instr, why = att.stop()
        rec.update(tps=res.tps, lat_mean_ms=res.lat_mean_ms, lat_p99_ms=res.lat_p99_ms, txns=res.txns,
                   failed_txns=res.failed_txns, logged_txns=res.logged_txns, command=" ".join(res.command))
        rec["instructions"] = instr
        rec["instr_per_txn"] = (instr / res.txns) if (instr is not None and res.txns) else None
        rec["instr_note"] = "" if instr is not None else why
        lsn1, why1 = wal_lsn(srv) if lsn0 is not None else (None, wal_why)
        rec["wal_bytes"] = (lsn1 - lsn0) if (lsn0 is not None and lsn1 is not None) else None
        rec["wal_per_txn"] = (rec["wal_bytes"] / res.txns) if (rec["wal_bytes"] is not None and res.txns) else None
        rec["wal_note"] = "" if rec["wal_bytes"] is not None else why1
        if notes:
            rec["notes"] = notes
        if res.ok:
            rec["status"] = "ok"
        else:
            rec["error"] = res.error
            if not srv.alive():
                rec["error"] += f"; server died: {servers.tail(srv.logfile, 4)}"
        return rec

    # ---------------------------------------------------------------- workloads
    def run_workload(self, w: W.Workload, prog: Progress) -> dict:
        settings = W.workload_settings(w, self.p)
        wr = {"name": w.name, "seed": w.seed, "kind": w.kind, "description": w.description,
              "data": w.scale_label(self.p), "settings": settings, "systems": {}, "points": []}
        if w.kind == "pgbench":
            wr["duration_s"] = self.p.duration
        else:
            wr["reps"] = self.p.par_reps
            wr["queries"] = dict(W.parallel_queries(self.p))
        scriptdir = tempfile.mkdtemp(prefix="scripts-", dir=self.base)
        wargs = w.pgbench_args(self.p, scriptdir)
        if w.script:
            with open(os.path.join(scriptdir, "up.sql"), "w") as f:
                f.write(w.script(self.p))
        live: dict[str, servers.Server] = {}
        state: dict[str, tuple[str, str]] = {}
        try:
            for s in self.systems:
                t0 = time.monotonic()
                if s == "ferrogres" and self.fg_unavailable:
                    state[s] = ("cannot-run", self.fg_unavailable)
                else:
                    srv = self.make_server(s)
                    try:
                        srv.start(settings)
                        live[s] = srv
                        err = self.setup_data(srv, w)
                        state[s] = ("failed", f"data setup failed: {err}") if err else ("ok", "")
                    except servers.ServerError as e:
                        srv.stop()
                        state[s] = ("cannot-run", str(e))
                wr["systems"][s] = {"status": state[s][0], "reason": state[s][1],
                                    "setup_s": round(time.monotonic() - t0, 1)}
                prog.step(f"{w.name} {servers.SYSTEM_LABEL[s]}: start + data setup: "
                          + (f"{state[s][0]}: {state[s][1][:160]}" if state[s][0] != "ok" else "ok"))

            if w.kind == "pgbench":
                points = [(c, None) for c in self.p.clients]
            else:
                points = [(wk, q) for q, _ in W.parallel_queries(self.p) for wk in self.p.par_workers]
            for i, (x, query) in enumerate(points):
                order = self.systems if i % 2 == 0 else list(reversed(self.systems))
                for s in order:
                    base = {"system": s, "x": x}
                    if query is not None:
                        base["query"] = query
                    st, why = state[s]
                    if st == "ok" and not live[s].alive():
                        state[s] = st, why = ("failed", f"server died: {servers.tail(live[s].logfile, 4)}")
                    if st != "ok":
                        rec = dict(base, status=st, error=why)
                    elif w.kind == "pgbench":
                        rec = dict(base, **self.measure(live[s], w, x, workload_args=wargs,
                                                        duration=self.p.duration, transactions=None,
                                                        tag=f"{w.name}-{s}-{x}"))
                    else:
                        rec = dict(base, **self.parallel_point(live[s], w, query, x, scriptdir))
                    wr["points"].append(rec)
                    what = f"clients={x}" if query is None else f"{query} workers={x}"
                    if rec["status"] == "ok":
                        msg = (f"{rec['tps']:.1f} {'tps' if query is None else 'q/s'}, mean {rec['lat_mean_ms']:.3f} ms, "
                               f"p99 {report.num(rec.get('lat_p99_ms'), 3)} ms")
                    else:
                        msg = ("cannot run yet (see setup line)" if rec["status"] == "cannot-run"
                               else f"{rec['status']}: {rec.get('error', '')[:160]}")
                    prog.step(f"{w.name} {servers.SYSTEM_LABEL[s]} {what}: {msg}", ran=rec["status"] != "cannot-run")
            if self.instr_method == "callgrind" and w.kind == "pgbench":
                wr["instr_callgrind"] = []
                for s in self.systems:
                    if state[s][0] != "ok" or not live[s].alive():
                        continue
                    rec = self.callgrind_point(live[s], w, wargs)
                    wr["instr_callgrind"].append(rec)
                    msg = (f"{rec['instr_per_txn']:.0f} instructions/txn" if rec["status"] == "ok"
                           else f"failed: {rec.get('error', '')[:160]}")
                    prog.step(f"{w.name} {servers.SYSTEM_LABEL[s]} callgrind pass: {msg}")
        finally:
            for srv in live.values():
                srv.stop()
        wr["fits"] = report.compute_fits(wr, self.systems)
        return wr

    def callgrind_point(self, srv: servers.Server, w: W.Workload, wargs: list[str]) -> dict:
        """Server instructions per transaction with the server under callgrind (see
        callgrind.py): the connection's, start-up excluded (a short and a long one-client
        run, their difference), and the background threads/processes' apart."""
        t2 = self.cg_transactions
        t1 = max(10, t2 // 5)
        rec: dict = {"system": srv.system, "x": 1, "status": "failed", "method": "callgrind",
                     "transactions_per_client": t2, "short_transactions": t1}
        cgdir = os.path.join(srv.dir, "callgrind")
        os.makedirs(cgdir, exist_ok=True)
        procs.chown_to_server_user(cgdir)
        try:
            srv.relaunch(callgrind.wrapper(cgdir, srv.system), ready_timeout=300)
        except servers.ServerError as e:
            rec["error"] = f"could not start under valgrind: {e}"
            return rec
        base = set(srv.pids())
        life_started = time.monotonic()
        warm = pgbench.run(srv, workload_args=wargs, clients=1, jobs=1, transactions=max(5, t2 // 10),
                           logdir=self.logdir, tag=f"cg-warm-{srv.system}")
        if not warm.ok:
            rec["error"] = f"warm-up under valgrind: {warm.error}"
            return rec
        procs.wait_until(lambda: set(srv.pids()) <= base, 60.0)  # the warm-up's backends are gone
        files = callgrind.Files(cgdir)
        files.settle(10.0)
        # background: ferrogres, its one process (all threads), zeroed now and dumped
        # after the runs; PostgreSQL, every process but the postmaster, from the files
        # they write at exit (callgrind.py, point 4)
        fg = srv.system == "ferrogres"
        bg_pids = [p for p in srv.pids() if fg or p != srv.root_pid]
        notes = []
        if fg:
            err = callgrind._control("--zero", bg_pids)
            if err:
                notes.append(err)
        started = time.monotonic()
        runs = []
        for n in (t1, t2):
            mark = files.snapshot()
            res = pgbench.run(srv, workload_args=wargs, clients=1, jobs=1, transactions=n,
                              logdir=self.logdir, tag=f"cg-{srv.system}-{n}")
            if not res.ok:
                rec["error"] = res.error
                return rec
            procs.wait_until(lambda: set(srv.pids()) <= base, 60.0)
            conn = callgrind.connection_files(srv.system, files.new_since(mark, files.settle()), set(bg_pids))
            # pgbench opens a setup connection (it looks up the scale) and closes it
            # before its client connects: two per run, the client's file written last
            # (the setup's can be the larger: it fills catalog caches for its queries)
            if len(conn) not in (1, 2):
                rec["error"] = (f"expected pgbench's two connections' callgrind files after pgbench -t {n}, found "
                                f"{len(conn)}: {[os.path.basename(p) for p, _ in conn]}")
                return rec
            conn.sort(key=lambda ph: (os.stat(ph[0]).st_mtime_ns, int(ph[1].get("part", "0") or 0)))
            runs.append({"transactions": res.txns, "instructions": conn[-1][1]["ir"],
                         "file": os.path.basename(conn[-1][0]), "command": " ".join(res.command),
                         "setup_connection_instructions": conn[0][1]["ir"] if len(conn) == 2 else None})
        background = []
        mark = files.snapshot()
        if fg:
            err = callgrind._control("--dump", [p for p in bg_pids if procs.pid_alive(p)])
            if err:
                notes.append(err)
            elapsed = time.monotonic() - started
            for p in files.new_since(mark, files.settle()):
                h = callgrind.read_header(p)
                if "ir" not in h or "--dump-after" in h.get("trigger", "") or "termination" in h.get("trigger", "").lower():
                    continue
                background.append({"name": callgrind.fg_thread_name(h), "instructions": h["ir"]})
            bg_txns = runs[0]["transactions"] + runs[1]["transactions"]
        else:
            procs.stop(srv.proc, srv.stop_signal, timeout=120)
            srv.proc = None
            elapsed = time.monotonic() - life_started
            for p in files.new_since(mark, files.settle()):
                h = callgrind.read_header(p)
                try:
                    pid = int(h.get("pid", "0"))
                except ValueError:
                    continue
                if pid == srv.root_pid or pid not in bg_pids:
                    continue
                aux = callgrind.pg_aux(p)
                if aux is not None:
                    background.append({"name": f"{aux[0]} (pid {pid})", "instructions": aux[1]})
            bg_txns = warm.txns + runs[0]["transactions"] + runs[1]["transactions"]
            notes.append("background over the server's life under valgrind (start, warm-up, both runs, "
                         "shutdown checkpoint): vgdb must not reach PostgreSQL's processes")
        background.sort(key=lambda b: -b["instructions"])
        (a, b) = runs
        txns = a["transactions"] + b["transactions"]
        rec.update(runs=runs, txns=txns, background=background, window_s=round(elapsed, 1),
                   background_txns=bg_txns)
        if b["transactions"] <= a["transactions"]:
            rec["error"] = f"the long run did no more transactions than the short one: {runs}"
            return rec
        rec["status"] = "ok"
        rec["instr_per_txn"] = (b["instructions"] - a["instructions"]) / (b["transactions"] - a["transactions"])
        rec["instr_per_txn_with_startup"] = b["instructions"] / b["transactions"]
        bg_total = sum(x["instructions"] for x in background)
        rec["background_instructions"] = bg_total
        rec["background_per_txn"] = bg_total / bg_txns
        rec["background_per_s"] = bg_total / elapsed if elapsed > 0 else None
        if notes:
            rec["notes"] = notes
        return rec

    def parallel_point(self, srv, w, query: str, workers: int, scriptdir: str) -> dict:
        sql = dict(W.parallel_queries(self.p))[query]
        env = {"PGOPTIONS": f"-c max_parallel_workers_per_gather={workers}"}
        # one EXPLAIN ANALYZE: warms the cache and tells how many workers really ran
        ok, out = srv.psql("explain (analyze, costs off, timing off) " + sql, env_extra=env)
        launched = None
        if ok:
            launched = sum(int(m) for m in re.findall(r"Workers Launched: (\d+)", out))
        path = os.path.join(scriptdir, f"q{abs(hash(query)) % 10**8}.sql")
        with open(path, "w") as f:
            f.write(sql + ";\n")
        rec = self.measure(srv, w, 1, workload_args=["-f", path], duration=None,
                           transactions=self.p.par_reps, tag=f"par-{srv.system}-{workers}", env_extra=env)
        rec["workers_launched"] = launched
        if not ok:
            rec.setdefault("notes", []).append(f"explain analyze: {out[:200]}")
        return rec

    # ---------------------------------------------------------------- main
    def run(self, names: list[str]) -> dict:
        started = dt.datetime.now(dt.timezone.utc)
        self.results = {
            "date": started.isoformat(timespec="seconds"),
            "profile": self.p.name, "profile_settings": dataclasses.asdict(self.p),
            "systems": self.systems, "workloads_requested": names, "git": git_info(),
            "machine": machine(), "perf_event": self.args.perf_event,
            "perf": {"available": self.perf_ok, "reason": self.perf_why},
            "method": {
                "interleaving": "per point: each system in turn, the order alternating from point to point",
                "tps": "pgbench 'tps = ... (without initial connection time)'",
                "latency_mean": "pgbench 'latency average'",
                "latency_p99": f"nearest-rank p99 of pgbench -l per-transaction latencies "
                               f"(--sampling-rate {self.p.sampling_rate})",
                "instructions": ("perf stat -e EVENT -p <server process tree>, inherited by new backends, "
                                 "divided by pgbench's transactions" if self.instr_method == "perf" else
                                 "callgrind pass after the timed points: server restarted under valgrind "
                                 "--tool=callgrind --separate-threads=yes; the connection's Ir per transaction "
                                 "as the difference of a short and a long one-client pgbench -t run (start-up "
                                 "excluded; PostgreSQL's children zeroed at InitPostmasterChild, ferrogres's "
                                 "connection thread dumped after connection::serve); background threads and "
                                 "processes zeroed and dumped around both runs, reported apart"
                                 if self.instr_method == "callgrind" else "not measured"),
                "instructions_method": self.instr_method,
                "ratio": "ferrogres tps / PostgreSQL tps",
            },
            "loadavg_start": os.getloadavg(),
            "workloads": [],
        }
        if "ferrogres" in self.systems:
            try:
                self.fg_binary = servers.ensure_ferrogres_binary(REPO_ROOT, self.args.ferrogres_bin, self.args.build)
                st = os.stat(self.fg_binary)
                self.results["ferrogres_binary"] = {
                    "path": self.fg_binary,
                    "mtime": dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc).isoformat(timespec="seconds")}
            except servers.ServerError as e:
                self.fg_unavailable = str(e)
        if not self.perf_ok:
            log(f"note: server instructions per transaction are n/a: {self.perf_why}")
        prog = Progress(self.plan(names))
        self.base = tempfile.mkdtemp(prefix="ferrogres-bench-")
        os.chmod(self.base, 0o755)  # the postgres account must reach its own dirs inside
        self.logdir = tempfile.mkdtemp(prefix="pgbench-logs-", dir=self.base)
        try:
            for n in names:
                w = W.REGISTRY[n]
                if w.kind == "tpch":
                    wr = tpch.run(self, w, prog)
                elif w.kind == "bulk":
                    wr = bulk.run(self, w, prog)
                else:
                    wr = self.run_workload(w, prog)
                self.results["workloads"].append(wr)
                report.print_workload(wr, self.systems, self.args.perf_event)
                report.save(self.results, self.outdir)  # partial results survive an interrupt
        finally:
            procs.cleanup_all()
            shutil.rmtree(self.base, ignore_errors=True)
        self.results["elapsed_s"] = round(time.monotonic() - prog.t0, 1)
        self.results["loadavg_end"] = os.getloadavg()
        return self.results


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    prof = W.PROFILES[args.profile]
    over = {}
    if args.duration:
        over["duration"] = args.duration
    if args.clients:
        over["clients"] = [int(c) for c in args.clients.split(",")]
    if args.scale:
        over["scale_in"] = args.scale
        # ~15 MB per scale unit must fit in shared_buffers with room to spare
        over["shared_buffers_mb"] = max(prof.shared_buffers_mb, args.scale * 32)
    if args.tpch_scale is not None:
        over["tpch_scale"] = args.tpch_scale
    if args.tpch_reps is not None:
        over["tpch_reps"] = args.tpch_reps
    if args.bulk_rows:
        over["bulk_rows"] = args.bulk_rows
    if over.get("clients") and max(over["clients"]) + 10 > prof.max_connections:
        over["max_connections"] = max(over["clients"]) + 10
    prof = dataclasses.replace(prof, **over)
    names = args.only or prof.workloads
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    outdir = os.path.abspath(args.out or os.path.join(BENCH_DIR, "results", stamp))
    os.makedirs(outdir, exist_ok=True)
    procs.install_signal_handlers()
    what = []
    if any(W.REGISTRY[n].kind not in ("tpch", "bulk") for n in names):
        what.append(f"clients {prof.clients}; {prof.duration:g} s per point")
    if "tpch" in names:
        what.append(f"tpch: scale factor {prof.tpch_scale:g}, {prof.tpch_reps} run(s) per query, "
                    f"timeout {args.tpch_timeout:g} s, keys {args.tpch_keys}")
    if "bulk" in names:
        what.append(f"bulk: {prof.bulk_rows} rows")
    log(f"bench/run {args.profile}: systems {','.join(args.systems)}; workloads {', '.join(names)}; "
        f"{'; '.join(what)}; results in {outdir}")
    r = Runner(args, prof, outdir)
    try:
        results = r.run(names)
    except KeyboardInterrupt:
        log("interrupted: servers stopped; partial results (finished workloads) in " + outdir)
        return 130
    except procs_errors() as e:
        log(f"error: {e}")
        return 1
    report.save(results, outdir)
    if not args.no_plots:
        made, err = report.plot_all(results, outdir)
        results["plots"] = made
        if err:
            results["plots_error"] = err
            log(f"plots not made: {err}")
        report.save(results, outdir)
    log(f"results: {outdir} (results.json, results.csv{', plots' if results.get('plots') else ''}); "
        f"total {fmt_secs(results['elapsed_s'])}")
    return 0


def procs_errors():
    return (RuntimeError, servers.ServerError)
