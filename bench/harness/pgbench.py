"""Running pgbench and reading its results.

tps and mean latency come from pgbench's own summary ("tps = ... (without initial
connection time)", "latency average = ... ms").  p99 latency comes from pgbench's
per-transaction log (`-l --log-prefix`, optionally `--sampling-rate`): the third
column of every line is the transaction's latency in microseconds; p99 is the
nearest-rank 99th percentile of those.
"""

from __future__ import annotations

import glob
import math
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Optional

from . import procs
from .servers import client_tool


@dataclass
class PgbenchResult:
    ok: bool
    returncode: Optional[int]
    tps: Optional[float] = None
    lat_mean_ms: Optional[float] = None
    lat_p99_ms: Optional[float] = None
    txns: Optional[int] = None
    failed_txns: Optional[int] = None
    logged_txns: int = 0
    error: str = ""
    command: list = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""


_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.M)
_TPS_OLD = re.compile(r"^tps = ([0-9.]+) \(excluding connections establishing\)", re.M)
_LAT = re.compile(r"^latency average = ([0-9.]+) ms", re.M)
_TXNS = re.compile(r"^number of transactions actually processed: (\d+)", re.M)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)


def parse_summary(out: str) -> dict:
    d = {}
    m = _TPS.search(out) or _TPS_OLD.search(out)
    if m:
        d["tps"] = float(m.group(1))
    m = _LAT.search(out)
    if m:
        d["lat_mean_ms"] = float(m.group(1))
    m = _TXNS.search(out)
    if m:
        d["txns"] = int(m.group(1))
    m = _FAILED.search(out)
    if m:
        d["failed_txns"] = int(m.group(1))
    return d


def percentile(sorted_vals: list, q: float) -> Optional[float]:
    """Nearest-rank percentile (q in 0..100) of an ascending list."""
    if not sorted_vals:
        return None
    k = max(1, math.ceil(q / 100.0 * len(sorted_vals)))
    return sorted_vals[k - 1]


def read_latencies_us(prefix: str) -> list[int]:
    """Latencies (us) from pgbench -l files PREFIX.PID[.THREAD]; skipped/failed lines ignored."""
    vals = []
    for path in glob.glob(glob.escape(prefix) + ".*"):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2].isdigit():
                    vals.append(int(parts[2]))
    return vals


def error_text(stderr: str, stdout: str = "") -> str:
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    keys = ("error", "ERROR", "FATAL", "fatal", "aborted", "could not", "connection")
    picked = [l for l in lines if any(k in l for k in keys)]
    text = " | ".join((picked or lines)[:4])
    if not text:
        text = stdout.strip().splitlines()[-1] if stdout.strip() else "no output"
    return text[:600]


def run(server, *, workload_args: list[str], clients: int, jobs: int, duration: Optional[float] = None,
        transactions: Optional[int] = None, logdir: str, tag: str, sampling_rate: float = 1.0,
        env_extra: Optional[dict] = None, on_started=None) -> PgbenchResult:
    """One pgbench run against `server`. `on_started(proc)` is called right after launch."""
    prefix = os.path.join(logdir, tag)
    cmd = [client_tool("pgbench")] + server.conn_args() + ["-n", "-c", str(clients), "-j", str(jobs)]
    if duration is not None:
        cmd += ["-T", str(int(max(1, round(duration))))]
        timeout = duration + 180
    else:
        cmd += ["-t", str(transactions)]
        timeout = 3600
    cmd += ["-l", f"--log-prefix={prefix}"]
    if sampling_rate < 1.0:
        cmd += [f"--sampling-rate={sampling_rate}"]
    cmd += workload_args + ["postgres"]
    env = dict(os.environ, **(env_extra or {}))
    p = procs.spawn(cmd, stop_signal=signal_int(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, env=env, cwd=logdir)
    try:
        if on_started:
            on_started(p)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            procs.stop(p, timeout=5)
            out, err = p.communicate()
            return PgbenchResult(False, None, error=f"pgbench did not finish within {timeout:.0f} s",
                                 command=cmd, stdout=out, stderr=err)
    finally:
        if p.poll() is None:  # interrupted: take pgbench down too
            procs.stop(p, timeout=5)
        procs.forget(p)
    res = PgbenchResult(ok=False, returncode=p.returncode, command=cmd, stdout=out, stderr=err)
    for k, v in parse_summary(out).items():
        setattr(res, k, v)
    lats = sorted(read_latencies_us(prefix))
    for path in glob.glob(glob.escape(prefix) + ".*"):
        os.unlink(path)
    res.logged_txns = len(lats)
    if lats:
        res.lat_p99_ms = percentile(lats, 99) / 1000.0
    if p.returncode != 0 or res.tps is None:
        res.error = f"pgbench exit code {p.returncode}: {error_text(err, out)}"
    elif not res.txns:
        res.error = "pgbench completed no transaction"
    else:
        res.ok = True
    return res


def signal_int():
    import signal
    return signal.SIGINT


def init(server, scale: int, timeout: float = 3600) -> tuple[bool, str]:
    """pgbench -i -s SCALE (drop, create, generate, vacuum, primary keys)."""
    cmd = [client_tool("pgbench")] + server.conn_args() + ["-i", "-q", "-s", str(scale), "postgres"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"pgbench -i -s {scale} did not finish within {timeout:.0f} s"
    if r.returncode != 0:
        return False, f"pgbench -i -s {scale} failed ({r.returncode}): {error_text(r.stderr, r.stdout)}"
    return True, ""
