"""Server instructions per transaction with valgrind's callgrind, where `perf stat`
has no hardware counter (virtual machines without a PMU print "<not supported>").

Method (one extra pass per workload, after its timed points, so the tps figures
are never taken under valgrind):

1. The server is stopped cleanly and started again on the same data directory
   under `valgrind --tool=callgrind --trace-children=yes`, each process writing
   its own `cg.<pid>[.<n>]` file into a private directory.
2. After a short warm-up run (caches, plans, connections' first statements),
   `callgrind_control --zero` resets the counters of every server process (for
   PostgreSQL the postmaster and its auxiliary processes; for ferrogres the one
   process, all threads).
3. pgbench runs a fixed number of transactions per client.  PostgreSQL's backends
   are forked by the postmaster after the reset, inherit its (near-zero) counts
   and write their totals when they exit; the processes still alive are asked for
   a dump with `callgrind_control --dump`.
4. The sum of the "summary:" instruction counts (Ir) of every file written after
   the reset, divided by the transactions pgbench completed, is the figure.

Ir under callgrind is the count of guest instructions executed: deterministic up
to scheduling and timing effects (spin loops, polling), so it is stable on a
noisy machine, like `perf stat -e instructions`.  Both systems are measured the
same way and in the same run; the throughput under valgrind is meaningless and
is not reported.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import time
from typing import Optional

from . import procs


def probe() -> tuple[bool, str]:
    for tool in ("valgrind", "callgrind_control"):
        if not shutil.which(tool):
            return False, f"{tool} not installed (apt-get install valgrind)"
    return True, ""


# valgrind's gdbserver and vgdb (which callgrind_control drives) talk through FIFOs
# in /tmp named after LOGNAME/USER (and HOST) and created by whichever side comes
# first, readable by their owner only.  callgrind_control therefore runs as the
# servers' account with the servers' names (procs.spawn gives them USER/LOGNAME);
# run as root it either finds nothing ("error opening ...-by-???-on-???") or waits
# forever on a FIFO the server cannot open, leaving the server stopped by ptrace.
# Used for ferrogres, one process whose counters must really be zeroed and dumped.
# PostgreSQL's counts come from its backends' files, written at exit; reaching its
# postmaster that way made new connections fail (a vgdb-interrupted accept loop),
# so for it the control stays as before: best effort, an unreachable reset is only
# a note (the postmaster's counts before the reset are then inherited by the
# backends it forks, which inflates PostgreSQL's figure a little).
def _as_server_user() -> dict:
    u = procs.server_user()
    if u is None:
        return {}
    return {"user": u.pw_uid, "group": u.pw_gid, "extra_groups": [],
            "env": dict(os.environ, USER=u.pw_name, LOGNAME=u.pw_name)}


def wrapper(outdir: str) -> list[str]:
    """The command prefix that runs a server under callgrind."""
    return ["valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-instr=no", "--dump-line=no",
            f"--callgrind-out-file={os.path.join(outdir, 'cg.%p')}", "--log-file=" + os.path.join(outdir, "vg.%p.log")]


def _control(flag: str, pids: list[int], outdir: str, as_server: bool = False) -> str:
    """Runs callgrind_control FLAG on each pid; returns the errors ('' if none)."""
    errs = []
    for pid in pids:
        try:
            r = subprocess.run(["callgrind_control", flag, str(pid)], capture_output=True, text=True, timeout=120,
                               **(_as_server_user() if as_server else {}))
        except subprocess.TimeoutExpired:
            errs.append(f"callgrind_control {flag} {pid}: timed out")
            continue
        out = r.stdout + r.stderr
        # a process that exited meanwhile (a backend ending) is not an error; vgdb
        # reports a failed command on stderr with exit code 0
        failed = r.returncode != 0 or "syscall failed" in out or "error opening" in out
        if failed and "No active callgrind runs" not in out and procs.pid_alive(pid):
            errs.append(f"callgrind_control {flag} {pid}: {out.strip()[-300:]}")
    return "; ".join(errs)


def summary_ir(path: str) -> Optional[int]:
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"summary:\s+(\d+)", line)
                if m:
                    return int(m.group(1))
    except OSError:
        return None
    return None


class Window:
    """Counts the instructions a server's processes execute between start() and stop()."""

    def __init__(self, outdir: str, pids: list[int], as_server: bool = False):
        self.outdir = outdir
        self.as_server = as_server
        self.pids = pids
        self.before: dict[str, float] = {}
        self.error = ""

    def _files(self) -> dict[str, float]:
        out = {}
        for p in glob.glob(os.path.join(self.outdir, "cg.*")):
            try:
                out[p] = os.stat(p).st_mtime
            except OSError:
                pass
        return out

    def start(self) -> None:
        self.error = _control("--zero", self.pids, self.outdir, self.as_server)
        self.before = self._files()

    def stop(self, still_running: list[int], settle: float = 30.0) -> tuple[Optional[int], str]:
        """Dump the live processes, wait for the files to stop changing, sum the new ones."""
        err = _control("--dump", still_running, self.outdir, self.as_server)
        if err:
            self.error = "; ".join(x for x in (self.error, err) if x)
        # exited backends' files and the dumps appear asynchronously: wait until stable
        last, stable_since = None, time.monotonic()
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            now = self._files()
            if now != last:
                last, stable_since = now, time.monotonic()
            elif time.monotonic() - stable_since > 1.5:
                break
            time.sleep(0.3)
        total, n = 0, 0
        for p, mtime in (last or {}).items():
            if p in self.before and self.before[p] == mtime:
                continue  # written before the window (the warm-up's backends)
            ir = summary_ir(p)
            if ir is not None:
                total += ir
                n += 1
        if n == 0:
            return None, self.error or "callgrind wrote no counts"
        return total, self.error
