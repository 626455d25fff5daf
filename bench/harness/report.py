"""Tables, fits, JSON/CSV files and plots of a run."""

from __future__ import annotations

import csv
import json
import math
import os
import textwrap
from typing import Optional

from . import fit

LABEL = {"pg": "PostgreSQL", "ferrogres": "ferrogres"}
STATUS_TEXT = {"cannot-run": "cannot run yet", "failed": "FAILED"}


def num(v, digits=1) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float) and not math.isfinite(v):
        return "n/a"
    return f"{v:.{digits}f}"


def big(v) -> str:
    if v is None:
        return "n/a"
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:.3g}"


def _series(wr: dict, system: str, query: Optional[str] = None) -> tuple[list, list]:
    """(N, throughput) of a system's ok points; parallel-scan: N = workers + 1 (the leader works too)."""
    ns, xs = [], []
    for p in wr["points"]:
        if p["system"] != system or p.get("query") != query or p["status"] != "ok":
            continue
        ns.append(p["x"] + 1 if query is not None else p["x"])
        xs.append(p["tps"])
    return ns, xs


def _fit_dict(ns, xs) -> dict:
    r = fit.fit_both(ns, xs)
    return {"usl": r["usl"].to_dict() if r["usl"] else None,
            "amdahl": r["amdahl"].to_dict() if r["amdahl"] else None,
            "errors": r["errors"]}


def compute_fits(wr: dict, systems: list[str]) -> dict:
    if wr["kind"] == "parallel":
        return {q: {s: _fit_dict(*_series(wr, s, q)) for s in systems} for q in wr["queries"]}
    return {s: _fit_dict(*_series(wr, s)) for s in systems}


def _cell(p: Optional[dict], key: str, digits: int) -> str:
    if p is None:
        return "-"
    if p["status"] != "ok":
        return STATUS_TEXT.get(p["status"], p["status"]) if key == "tps" else ""
    if key in ("instr_per_txn", "wal_per_txn"):
        return big(p.get(key))
    return num(p.get(key), digits)


def _ratio(a: Optional[dict], b: Optional[dict]) -> str:
    if not a or not b or a["status"] != "ok" or b["status"] != "ok" or not a.get("tps"):
        return "-"
    return f"{b['tps'] / a['tps']:.2f}"


def _fmt_rows(rows: list[list[str]]) -> str:
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for j, r in enumerate(rows):
        out.append("  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
        if j == 0:
            out.append("  ".join("-" * x for x in w))
    return "\n".join(out)


def fit_line(f: dict) -> str:
    u, a = f.get("usl"), f.get("amdahl")
    parts = []
    if u:
        peak = f"N*={u['peak_n']:.1f}" if u.get("peak_n") else f"N*=none ({u.get('note')})"
        parts.append(f"USL alpha={u['alpha']:.4f} beta={u['beta']:.2e} {peak} lambda={u['lam']:.4g} R2={num(u['r2'], 3)}")
    if a:
        parts.append(f"Amdahl alpha={a['alpha']:.4f} (serial {100 * a['alpha']:.2f}%) R2={num(a['r2'], 3)}")
    if not parts:
        parts.append("no fit: " + "; ".join(f.get("errors", {}).values()))
    return "; ".join(parts)


def workload_table(wr: dict, systems: list[str], event: str = "instructions") -> str:
    ev = "instr" if event == "instructions" else event
    has_both = len(systems) == 2
    par = wr["kind"] == "parallel"
    head = ["workers" if par else "clients"]
    for s in systems:
        L = LABEL[s]
        if par:
            head += [f"{L} q/s", "mean ms", "p99 ms", "wkrs", f"{ev}/q", "WAL B/q"]
        else:
            head += [f"{L} tps", "mean ms", "p99 ms", f"{ev}/txn", "WAL B/txn"]
    if has_both:
        head.append("ratio f/pg")
    blocks = []
    queries = list(wr["queries"]) if par else [None]
    for q in queries:
        rows = [head]
        xs = []
        for p in wr["points"]:
            if p.get("query") == q and p["x"] not in xs:
                xs.append(p["x"])
        for x in xs:
            row = [str(x)]
            by = {p["system"]: p for p in wr["points"] if p["x"] == x and p.get("query") == q}
            for s in systems:
                p = by.get(s)
                row += [_cell(p, "tps", 1), _cell(p, "lat_mean_ms", 3), _cell(p, "lat_p99_ms", 3)]
                if par:
                    row.append("" if not p or p.get("workers_launched") is None else str(p["workers_launched"]))
                row.append(_cell(p, "instr_per_txn", 0))
                row.append(_cell(p, "wal_per_txn", 0))
            if has_both:
                row.append(_ratio(by.get("pg"), by.get("ferrogres")))
            rows.append(row)
        title = f"-- query {q}" if q else ""
        fits = wr["fits"][q] if par else wr["fits"]
        lines = [title] if title else []
        lines.append(_fmt_rows(rows))
        for s in systems:
            lines.append(f"  {LABEL[s]} fit{' (N = workers + 1, X = queries/s)' if par else ''}: {fit_line(fits[s])}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _tpch_time(r: dict, timeout: float) -> str:
    if r["status"] == "ok":
        return num(r.get("time_ms"), 1)
    if r["status"] == "timeout":
        return f">{timeout:g} s"
    return {"error": "error"}.get(r["status"], STATUS_TEXT.get(r["status"], r["status"]))


def tpch_table(wr: dict, systems: list[str]) -> str:
    """Per query: each system's (median) time in ms, the ratio, the answer check, the status."""
    head = ["query"] + [f"{LABEL[s]} ms" for s in systems]
    if len(systems) == 2:
        head += ["ratio f/pg", "answer"]
    head.append("status")
    rows = [head]
    for q in wr.get("queries", []):
        row = [q["query"]] + [_tpch_time(q["systems"][s], wr["timeout_s"]) for s in systems]
        if len(systems) == 2:
            row += [num(q["ratio"], 2) if q.get("ratio") is not None else "-",
                    {"equal": "equal", "mismatch": "WRONG"}.get(q.get("answer"), "-")]
        st = q["status"]
        row.append(st if len(st) <= 110 else st[:107] + "...")
        rows.append(row)
    return "\n".join(_left_last(rows))


def _left_last(rows: list[list[str]]) -> list[str]:
    """_fmt_rows with the last column (free text) left-aligned and unpadded."""
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    out = []
    for j, r in enumerate(rows):
        cells = [c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(r[:-1])]
        out.append(("  ".join(cells) + "  " + r[-1]).rstrip())
        if j == 0:
            out.append("  ".join("-" * x for x in w) + "  " + "-" * max(len(x[-1]) for x in rows))
    return out


def tpch_geomean_line(wr: dict, systems: list[str]) -> str:
    g = wr.get("geomean") or {}
    if len(systems) != 2:
        return ""
    if not g.get("n"):
        return f"  geometric mean ratio f/pg: n/a (no query finished on both of the {g.get('of', 0)} run)"
    line = (f"  geometric mean ratio f/pg over the {g['n']} of {g['of']} queries that finished on both: "
            f"{g['ratio']:.2f} (geometric mean time: PostgreSQL {g['pg_ms']:.1f} ms, "
            f"ferrogres {g['ferrogres_ms']:.1f} ms)")
    if g.get("wrong_answers_among_them"):
        line += f"; wrong answers among them: {', '.join(g['wrong_answers_among_them'])}"
    return line


def tpch_text(wr: dict, systems: list[str]) -> str:
    out = [f"== {wr['name']}  ({wr['seed']})",
           f"   {wr['description']}; {wr['data']}; {wr['reps']} run(s) per query and system "
           f"({'median' if wr['reps'] > 1 else 'one run'}), timeout {wr['timeout_s']:g} s; times are psql's "
           f"\\timing (send to last row), ms"]
    if wr.get("queries"):
        out.append(tpch_table(wr, systems))
        gl = tpch_geomean_line(wr, systems)
        if gl:
            out.append(gl)
    for s in systems:
        st = wr["systems"].get(s, {})
        if st.get("status") not in (None, "ok"):
            out.append(f"  {LABEL[s]}: {STATUS_TEXT.get(st['status'], st['status'])}: {st['reason']}")
        if st.get("load_s"):
            steps = ", ".join(f"{k} {v:g} s" for k, v in st["load_s"].items())
            out.append(f"  {LABEL[s]} load: {steps}")
        for n in st.get("notes", []):
            out.append(f"  {LABEL[s]} note: {n}")
    for q in wr.get("queries", []):
        if q.get("header_note"):
            out.append(f"  {q['query']}: {q['header_note']}")
        for s in systems:
            r = q["systems"][s]
            if r["status"] == "timeout" and r.get("cancel"):
                out.append(f"  {q['query']} {LABEL[s]} timeout: {r['cancel']}")
            if r.get("server_died"):
                out.append(f"  {q['query']} {LABEL[s]}: {r['server_died']}; "
                           + ("restarted" if r.get("restarted") else "not restarted"))
    if wr.get("results_dir"):
        out.append(f"  answers (psql --csv) and EXPLAIN output per query and system: {wr['results_dir']}")
    return "\n".join(out) + "\n"


def workload_text(wr: dict, systems: list[str], event: str = "instructions") -> str:
    if wr["kind"] == "tpch":
        return tpch_text(wr, systems)
    if wr["kind"] == "bulk":
        from . import bulk
        return bulk.text(wr, systems, LABEL)
    out = []
    add = out.append
    add(f"== {wr['name']}  (seed {wr['seed']})")
    add(f"   {wr['description']}; {wr['data']}"
          + (f"; {wr['duration_s']:g} s per point" if "duration_s" in wr else f"; {wr.get('reps')} executions per point"))
    add(workload_table(wr, systems, event))
    for s in systems:
        st = wr["systems"].get(s, {})
        if st.get("status") not in (None, "ok"):
            add(f"  {LABEL[s]}: {STATUS_TEXT.get(st['status'], st['status'])}: {st['reason']}")
    errs = {}
    for p in wr["points"]:
        if p["status"] == "failed" and p.get("error") and p.get("error") != wr["systems"].get(p["system"], {}).get("reason"):
            errs.setdefault((p["system"], p["error"]), []).append(str(p["x"]))
    for (s, e), xs in errs.items():
        add(f"  {LABEL[s]} failed at {','.join(xs)}: {e}")
    loads = [p["loadavg_1m"] for p in wr["points"] if p.get("loadavg_1m") is not None]
    ncpu = os.cpu_count() or 1
    if loads and max(loads) > ncpu:
        add(f"  warning: machine busy during this workload: 1-min load average up to {max(loads):.1f} "
              f"on {ncpu} CPUs (other processes compete; compare the systems only side by side)")
    cg = wr.get("instr_callgrind")
    if cg is not None:
        add(callgrind_text(cg, systems))
    else:
        notes = sorted({p["instr_note"] for p in wr["points"] if p.get("status") == "ok" and p.get("instr_note")})
        for n in notes:
            add(f"  {event} per transaction n/a: {n}")
    for s in systems:
        wal_notes = sorted({p["wal_note"] for p in wr["points"]
                            if p["system"] == s and p.get("status") == "ok" and p.get("wal_note")})
        for n in wal_notes:
            add(f"  {LABEL[s]} WAL bytes per transaction n/a: {n}")
    return "\n".join(out) + "\n"


def callgrind_text(recs: list[dict], systems: list[str]) -> str:
    """The callgrind pass: each system's connection instructions per transaction
    (start-up excluded), their ratio, and the background threads/processes apart."""
    by = {r["system"]: r for r in recs}
    parts = []
    for s in systems:
        r = by.get(s)
        if r is None:
            parts.append(f"{LABEL[s]} not measured")
        elif r["status"] == "ok":
            parts.append(f"{LABEL[s]} {r['instr_per_txn']:,.0f}")
        else:
            parts.append(f"{LABEL[s]} failed ({r.get('error', '')[:120]})")
    line = "  server instructions/txn, connection (callgrind, 1 client"
    if recs:
        line += f", {recs[0].get('short_transactions', '?')} and {recs[0]['transactions_per_client']} txns, start-up excluded"
    line += "): " + "; ".join(parts)
    a, b = by.get("pg"), by.get("ferrogres")
    if a and b and a["status"] == "ok" and b["status"] == "ok" and a["instr_per_txn"]:
        line += f"; ratio f/pg {b['instr_per_txn'] / a['instr_per_txn']:.2f}"
    out = [line]
    for s in systems:
        r = by.get(s)
        if r is None or r["status"] != "ok":
            continue
        per_s = r.get("background_per_s")
        bg = (f"    {LABEL[s]} background: {r['background_per_txn']:,.0f}/txn"
              + (f", {per_s:,.0f}/s" if per_s is not None else "") + f" over {r['window_s']} s")
        tops = [f"{x['name']} {x['instructions']:,}" for x in r.get("background", []) if x["instructions"]]
        if tops:
            bg += " (" + "; ".join(tops[:8]) + ")"
        out.append(bg)
        for n in r.get("notes", []):
            out.append(f"    {LABEL[s]} note: {n[:200]}")
    return "\n".join(out)


def print_workload(wr: dict, systems: list[str], event: str = "instructions") -> None:
    print("\n" + workload_text(wr, systems, event), flush=True)


CSV_FIELDS = ["workload", "system", "query", "x", "status", "tps", "lat_mean_ms", "lat_p99_ms", "txns",
              "failed_txns", "instructions", "instr_per_txn", "wal_bytes", "wal_per_txn", "workers_launched", "error",
              "time_ms", "answer", "ratio_ferrogres_pg"]


def tpch_csv_rows(wr: dict) -> list[dict]:
    """One row per query and system: the (median) time, status, answer check and the
    ratio ferrogres/PostgreSQL of the times."""
    out = []
    for q in wr.get("queries", []):
        for s, r in q["systems"].items():
            out.append({"workload": wr["name"], "system": s, "query": q["query"], "x": q["n"],
                        "status": r["status"], "time_ms": r.get("time_ms"), "error": r.get("error", ""),
                        "answer": q.get("answer", ""),
                        "ratio_ferrogres_pg": "" if q.get("ratio") is None else f"{q['ratio']:.3f}"})
    return out


def save(results: dict, outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    tmp = os.path.join(outdir, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1, default=str)
    os.replace(tmp, os.path.join(outdir, "results.json"))
    with open(os.path.join(outdir, "results.csv"), "w", newline="") as f:
        wri = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        wri.writeheader()
        for wr in results["workloads"]:
            if wr["kind"] in ("tpch", "bulk"):
                from . import bulk
                for row in (tpch_csv_rows(wr) if wr["kind"] == "tpch" else bulk.csv_rows(wr)):
                    wri.writerow(row)
                continue
            by = {(p["system"], p.get("query"), p["x"]): p for p in wr["points"]}
            for p in wr["points"]:
                row = dict(p, workload=wr["name"])
                a, b = by.get(("pg", p.get("query"), p["x"])), by.get(("ferrogres", p.get("query"), p["x"]))
                r = _ratio(a, b)
                row["ratio_ferrogres_pg"] = "" if r == "-" else r
                wri.writerow(row)
    with open(os.path.join(outdir, "tables.txt"), "w") as f:
        for wr in results["workloads"]:
            f.write(workload_text(wr, results["systems"], results.get("perf_event", "instructions")) + "\n")


# ------------------------------------------------------------------ plots
COLORS = {"pg": "#336791", "ferrogres": "#d2691e"}


def _plot_tpch(plt, wr: dict, systems: list[str]):
    """Bars of each query's time per system (log scale); a query that did not finish is
    drawn hatched at the timeout, labelled with its status."""
    qs = wr.get("queries") or []
    if not qs:
        return None
    fig, ax = plt.subplots(figsize=(max(8.0, 0.55 * len(qs) + 2), 5.5))
    width = 0.8 / len(systems)
    cap = wr["timeout_s"] * 1000.0
    for i, s in enumerate(systems):
        for j, q in enumerate(qs):
            r = q["systems"][s]
            x = j + (i - (len(systems) - 1) / 2) * width
            if r["status"] == "ok":
                ax.bar(x, max(r["time_ms"], 0.01), width, color=COLORS[s])
            else:
                ax.bar(x, cap, width, color="white", edgecolor=COLORS[s], hatch="//")
                ax.text(x, cap, {"timeout": "t/o", "error": "err"}.get(r["status"], "x"), ha="center",
                        va="bottom", fontsize=6, color=COLORS[s])
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=COLORS[s], label=LABEL[s]) for s in systems]
    handles.append(Patch(facecolor="white", edgecolor="gray", hatch="//",
                         label=f"did not finish (drawn at {wr['timeout_s']:g} s)"))
    ax.set_yscale("log")
    ax.set_xticks(range(len(qs)))
    ax.set_xticklabels([q["query"] for q in qs], fontsize=8)
    ax.set_ylabel("query time (ms, log scale)")
    g = wr.get("geomean") or {}
    sub = (f"geometric mean ratio f/pg {g['ratio']:.2f} over {g['n']} of {g['of']} queries"
           if g.get("ratio") else "")
    ax.set_title(f"TPC-H, {wr['data']}\n{sub}", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(handles=handles, fontsize=8)
    return fig


def _fit_label(f: dict, which: str) -> str:
    d = f.get(which)
    if not d:
        return ""
    if which == "usl":
        peak = f"N*={d['peak_n']:.0f}" if d.get("peak_n") else "N*=none"
        return f"USL α={d['alpha']:.3f} β={d['beta']:.1e} {peak}"
    return f"Amdahl α={d['alpha']:.3f}"


def _draw(ax, wr, systems, query=None, as_latency=False):
    import numpy as np
    fits = wr["fits"][query] if query is not None else wr["fits"]
    xmax = 1
    notes = []
    for s in systems:
        ns, xs = _series(wr, s, query)
        st = wr["systems"].get(s, {})
        if not ns:
            reason = st.get("reason") or next((p.get("error", "") for p in wr["points"] if p["system"] == s), "")
            status = STATUS_TEXT.get(st.get("status"), "no data") if st.get("status") != "ok" else "FAILED"
            ax.plot([], [], "x", color=COLORS[s], label=f"{LABEL[s]}: {status}")
            notes.append(textwrap.fill(f"{LABEL[s]}: {status}: {reason[:220]}", 110))
            continue
        xmax = max(xmax, max(ns))
        xplot = [n - 1 for n in ns] if query is not None else ns
        yplot = [1000.0 / x for x in xs] if as_latency else xs
        ax.plot(xplot, yplot, "o", color=COLORS[s], label=f"{LABEL[s]} measured", zorder=3)
        grid = np.linspace(1, max(ns) * 1.15 if query is None else max(ns), 200)
        for which, style in (("usl", "-"), ("amdahl", "--")):
            d = fits[s].get(which)
            if not d:
                continue
            y = np.array([fit.model_x(n, d["lam"], d["alpha"], d["beta"]) for n in grid])
            gx = grid - 1 if query is not None else grid
            ax.plot(gx, 1000.0 / y if as_latency else y, style, color=COLORS[s], alpha=0.8,
                    label=f"{LABEL[s]} {_fit_label(fits[s], which)}")
    if notes:
        ax.text(0.02, 0.02, "\n".join(notes), transform=ax.transAxes, fontsize=7, va="bottom",
                color="#a00000", wrap=True)
    return xmax


def plot_all(results: dict, outdir: str) -> tuple[list[str], str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return [], f"matplotlib not available ({e}); pip install -r bench/requirements.txt"
    made = []
    systems = results["systems"]
    for wr in results["workloads"]:
        if wr["kind"] == "bulk":
            continue  # a table of six numbers per system: no plot
        if wr["kind"] == "tpch":
            fig = _plot_tpch(plt, wr, systems)
            if fig is None:
                continue
        elif wr["kind"] == "parallel":
            qs = list(wr["queries"])
            cols = 2 if len(qs) > 1 else 1
            rows = (len(qs) + cols - 1) // cols
            fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.5 * rows), squeeze=False)
            for ax in axes.flat[len(qs):]:
                ax.set_visible(False)
            wks = sorted({p["x"] for p in wr["points"]})
            for ax, q in zip(axes.flat, qs):
                ax.set_xticks(wks)
                _draw(ax, wr, systems, q, as_latency=True)
                ax.set_title(q, fontsize=10)
                ax.set_xlabel("max_parallel_workers_per_gather")
                ax.set_ylabel("query time (ms)")
                ax.grid(True, alpha=0.3)
                ax.legend(fontsize=6.5)
            fig.suptitle(f"{wr['name']} — {wr['data']}", fontsize=10)
        else:
            fig, ax = plt.subplots(figsize=(8, 5.5))
            xmax = _draw(ax, wr, systems)
            ax.set_xscale("log", base=2)
            ticks = sorted({p["x"] for p in wr["points"]})
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(t) for t in ticks])
            ax.set_xlabel("clients")
            ax.set_ylabel("transactions per second")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{wr['name']} (seed {wr['seed']})\n{wr['data']}", fontsize=10)
            ax.legend(fontsize=8, loc="upper left")
        fig.tight_layout()
        for ext in ("svg", "png"):
            path = os.path.join(outdir, f"{wr['name']}.{ext}")
            fig.savefig(path, dpi=110)
            made.append(os.path.basename(path))
        plt.close(fig)
    return made, ""
