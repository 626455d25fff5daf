"""The `bulk` workload (issue 20): the paths of a data load and a maintenance window,
timed on PostgreSQL 15 and ferrogres side by side.

Both servers run at once (the same settings). Each server gets a table
`bulk_t(id int, t text, n numeric)` and, one operation after the other, on both
systems in turn (the order alternating from operation to operation, so that a slow
minute of the machine hurts both):

| step | statement |
|---|---|
| copy | `\\copy bulk_t from '<csv>' with (format csv)`: N rows (id 1..N shuffled, a 100-character text, a numeric) from a file written once |
| create_index | `create index bulk_t_id on bulk_t (id)` |
| delete | `delete from bulk_t where id % 2 = 0` (half the rows) |
| vacuum | `vacuum bulk_t` |
| vacuum_again | `vacuum bulk_t` again: nothing changed since, every page is all-visible (the visibility map lets both skip the heap) |
| analyze | `analyze bulk_t` |
| insert_select | `insert into bulk_wide select g, 'aaaaa' from generate_series(1, N) g` into `bulk_wide(c1 int, c2 char(1000))` |

A step is one psql process (`-X -v ON_ERROR_STOP=1 -f`); its time is psql's `\\timing`
(from sending the statement to its answer; psql's start-up and connection excluded).
A `checkpoint` (untimed) precedes each step on both systems so that neither starts
with the other's dirty buffers. With `--bulk-reps R` > 1 the whole sequence runs R
times on fresh tables and the median per step is reported.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

from . import servers

STEPS = [
    ("copy", "COPY {n} rows in (int, text(100), numeric)"),
    ("create_index", "CREATE INDEX (B-tree, int)"),
    ("delete", "DELETE half the rows"),
    ("vacuum", "VACUUM after that"),
    ("vacuum_again", "VACUUM again (all-visible)"),
    ("analyze", "ANALYZE"),
    ("insert_select", "INSERT ... SELECT of {n} char(1000) rows"),
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def write_csv(path: str, n: int, seed: int = 20) -> None:
    """N rows: id (1..N in random order), a 100-character text, a numeric(12,2)."""
    rng = random.Random(seed)
    ids = list(range(1, n + 1))
    rng.shuffle(ids)
    letters = "abcdefghijklmnopqrstuvwxyz"
    pad = "".join(rng.choice(letters) for _ in range(200))
    with open(path, "w") as f:
        for i, k in enumerate(ids):
            off = k % 100
            f.write(f"{k},{pad[off:off + 100]},{(k * 7919) % 1000000 / 100:.2f}\n")
            if i % 1_000_000 == 0 and i:
                f.flush()


def statements(step: str, n: int, csv_path: str) -> str:
    quoted = csv_path.replace("'", "''")
    return {
        "copy": f"\\copy bulk_t from '{quoted}' with (format csv)",
        "create_index": "create index bulk_t_id on bulk_t (id);",
        "delete": "delete from bulk_t where id % 2 = 0;",
        "vacuum": "vacuum bulk_t;",
        "vacuum_again": "vacuum bulk_t;",
        "analyze": "analyze bulk_t;",
        "insert_select": f"insert into bulk_wide select g, 'aaaaa' from generate_series(1, {n}) g;",
    }[step]


TIME_RE = re.compile(r"^Time: ([0-9.]+) ms", re.M)


def run_step(srv, sql: str, workdir: str, timeout: float) -> dict:
    path = os.path.join(workdir, f"step-{srv.system}.sql")
    with open(path, "w") as f:
        f.write("\\timing on\n" + sql + "\n")
    cmd = [servers.client_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1"] + srv.conn_args() + \
          ["-d", "postgres", "-f", path]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, PGCONNECT_TIMEOUT="10"))
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"no answer within {timeout:g} s"}
    wall = time.monotonic() - t0
    if r.returncode != 0:
        return {"status": "error", "error": (r.stderr.strip() or r.stdout.strip())[:400]}
    times = TIME_RE.findall(r.stdout)
    if not times:
        return {"status": "error", "error": f"no timing in psql's output: {r.stdout[:200]}"}
    return {"status": "ok", "time_s": round(float(times[-1]) / 1000, 6), "wall_s": round(wall, 3)}


PREPARE = [
    "drop table if exists bulk_t",
    "drop table if exists bulk_wide",
    "create table bulk_t(id int, t text, n numeric)",
    "create table bulk_wide(c1 int, c2 char(1000))",
    "checkpoint",
]


def estimate(n: int, nsys: int, reps: int) -> list[float]:
    return [5.0] * nsys + [max(1.0, n / 100_000)] * (len(STEPS) * nsys * reps)


def run(runner, w, prog) -> dict:
    """Runs the bulk workload with `runner` (cli.Runner)."""
    from .workloads import workload_settings
    p = runner.p
    n, reps = p.bulk_rows, max(1, getattr(runner.args, "bulk_reps", None) or 1)
    timeout = 3600.0
    settings = workload_settings(w, p)
    systems = runner.systems
    wr = {"name": w.name, "seed": w.seed, "kind": "bulk", "description": w.description,
          "data": f"{n} rows", "settings": settings, "rows": n, "reps": reps, "systems": {}, "points": []}
    workdir = tempfile.mkdtemp(prefix="bulk-", dir=runner.base)
    os.chmod(workdir, 0o755)
    csv_path = os.path.join(workdir, "bulk.csv")
    t0 = time.monotonic()
    write_csv(csv_path, n)
    os.chmod(csv_path, 0o644)
    log(f"bulk: {n} rows written to {csv_path} in {time.monotonic() - t0:.1f} s")
    live: dict = {}
    state: dict = {}
    try:
        for s in systems:
            if s == "ferrogres" and runner.fg_unavailable:
                state[s] = ("cannot-run", runner.fg_unavailable)
            else:
                srv = runner.make_server(s)
                try:
                    srv.start(settings)
                    live[s] = srv
                    state[s] = ("ok", "")
                except servers.ServerError as e:
                    srv.stop()
                    state[s] = ("cannot-run", str(e))
            wr["systems"][s] = {"status": state[s][0], "reason": state[s][1]}
            prog.step(f"bulk {servers.SYSTEM_LABEL[s]}: start: {state[s][0]}")
        k = 0
        for rep in range(reps):
            for s in systems:
                if state[s][0] != "ok":
                    continue
                for sql in PREPARE:
                    ok, out = live[s].psql(sql, timeout=timeout)
                    if not ok:
                        state[s] = ("failed", f"{sql}: {out[:300]}")
                        wr["systems"][s] = {"status": "failed", "reason": state[s][1]}
                        break
            for step, _ in STEPS:
                order = systems if k % 2 == 0 else list(reversed(systems))
                k += 1
                for s in order:
                    if state[s][0] == "ok":
                        live[s].psql("checkpoint", timeout=timeout)
                for s in order:
                    base = {"system": s, "query": step, "x": rep + 1}
                    st, why = state[s]
                    if st != "ok":
                        rec = dict(base, status=st, error=why)
                    else:
                        rec = dict(base, **run_step(live[s], statements(step, n, csv_path), workdir, timeout))
                        if not live[s].alive():
                            state[s] = ("failed", live[s].death())
                    wr["points"].append(rec)
                    msg = f"{rec['time_s']:.2f} s" if rec["status"] == "ok" else f"{rec['status']}: {rec.get('error', '')[:160]}"
                    prog.step(f"bulk {step} rep {rep + 1} {servers.SYSTEM_LABEL[s]}: {msg}",
                              ran=rec["status"] == "ok")
        wr["steps"] = summarize(wr["points"], systems, n)
    finally:
        for srv in live.values():
            srv.stop()
        try:
            os.unlink(csv_path)
        except OSError:
            pass
    wr["fits"] = {}
    return wr


def summarize(points: list[dict], systems: list[str], n: int) -> list[dict]:
    """Per step: each system's median time over the reps (ok runs only), and the ratio
    ferrogres / PostgreSQL."""
    out = []
    for step, label in STEPS:
        row = {"step": step, "label": label.format(n=n), "systems": {}}
        for s in systems:
            ts = [p["time_s"] for p in points if p["query"] == step and p["system"] == s and p["status"] == "ok"]
            bad = [p for p in points if p["query"] == step and p["system"] == s and p["status"] != "ok"]
            row["systems"][s] = ({"status": "ok", "time_s": statistics.median(ts)} if ts and not bad else
                                 {"status": bad[0]["status"] if bad else "missing",
                                  "error": bad[0].get("error", "") if bad else ""})
        a, b = row["systems"].get("pg"), row["systems"].get("ferrogres")
        if a and b and a["status"] == "ok" and b["status"] == "ok" and a["time_s"] > 0:
            row["ratio"] = b["time_s"] / a["time_s"]
        out.append(row)
    return out


def text(wr: dict, systems: list[str], label: dict) -> str:
    out = [f"== {wr['name']}  ({wr['seed']})",
           f"   {wr['description']}; {wr['data']}; {wr['reps']} run(s) per step and system"
           f" ({'median' if wr['reps'] > 1 else 'one run'}); seconds, psql's \\timing"]
    head = ["operation"] + [f"{label[s]} s" for s in systems] + (["ratio f/pg"] if len(systems) == 2 else [])
    rows = [head]
    for r in wr.get("steps", []):
        cells = [r["label"]]
        for s in systems:
            x = r["systems"][s]
            cells.append(f"{x['time_s']:.2f}" if x["status"] == "ok" else x["status"])
        if len(systems) == 2:
            cells.append(f"{r['ratio']:.2f}" if r.get("ratio") is not None else "-")
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for j, r in enumerate(rows):
        out.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if j == 0:
            out.append("  ".join("-" * x for x in widths))
    for s in systems:
        st = wr["systems"].get(s, {})
        if st.get("status") not in (None, "ok"):
            out.append(f"  {label[s]}: {st['status']}: {st.get('reason', '')}")
    for r in wr.get("steps", []):
        for s in systems:
            x = r["systems"][s]
            if x["status"] != "ok" and x.get("error"):
                out.append(f"  {r['step']} {label[s]}: {x['error']}")
    return "\n".join(out) + "\n"


def csv_rows(wr: dict) -> list[dict]:
    out = []
    for r in wr.get("steps", []):
        for s, x in r["systems"].items():
            out.append({"workload": wr["name"], "system": s, "query": r["step"], "x": wr["rows"],
                        "status": x["status"], "time_ms": None if x.get("time_s") is None else x["time_s"] * 1000,
                        "error": x.get("error", ""),
                        "ratio_ferrogres_pg": "" if r.get("ratio") is None else f"{r['ratio']:.3f}"})
    return out
