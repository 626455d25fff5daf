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


# valgrind's gdbserver and vgdb (which callgrind_control drives) name their FIFOs and
# shared-memory file after LOGNAME/USER and HOST/HOSTNAME of their own environments;
# a server started as another user with a different environment is then not found
# ("error opening /tmp/vgdb-pipe-shared-mem-vgdb-PID-by-???-on-???").  With
# `match_env` both sides get the same fixed names.  ferrogres needs it: it is one
# process, so its counters must really be zeroed and dumped.  PostgreSQL does not
# get it: its counts come from the backends' files written at exit, and with the
# names matched vgdb waits without end on its auxiliary processes asleep in a
# system call (vgdb cannot wake them on these machines), so there the reset stays
# best effort, as before.
_VGDB_ENV = {"LOGNAME": "bench", "USER": "bench", "HOST": "bench", "HOSTNAME": "bench"}


def wrapper(outdir: str, match_env: bool = False) -> list[str]:
    """The command prefix that runs a server under callgrind."""
    prefix = ["env", *(f"{k}={v}" for k, v in _VGDB_ENV.items())] if match_env else []
    return [*prefix, "valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-instr=no", "--dump-line=no",
            f"--callgrind-out-file={os.path.join(outdir, 'cg.%p')}", "--log-file=" + os.path.join(outdir, "vg.%p.log")]


def _control(flag: str, pids: list[int], outdir: str, match_env: bool = False) -> str:
    """Runs callgrind_control FLAG on each pid; returns the errors ('' if none)."""
    errs = []
    for pid in pids:
        try:
            r = subprocess.run(["callgrind_control", flag, str(pid)], capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, **_VGDB_ENV) if match_env else None)
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

    def __init__(self, outdir: str, pids: list[int], match_env: bool = False):
        self.outdir = outdir
        self.match_env = match_env
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
        self.error = _control("--zero", self.pids, self.outdir, self.match_env)
        self.before = self._files()

    def stop(self, still_running: list[int], settle: float = 30.0) -> tuple[Optional[int], str]:
        """Dump the live processes, wait for the files to stop changing, sum the new ones."""
        err = _control("--dump", still_running, self.outdir, self.match_env)
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
