"""Server instructions per transaction with valgrind's callgrind, where `perf stat`
has no hardware counter (virtual machines without a PMU print "<not supported>").

What is measured, apart (one extra pass per workload, after its timed points, so
the tps figures are never taken under valgrind):

* **connection**: the instructions of the one server thread (ferrogres) or process
  (PostgreSQL) that serves pgbench's connection, per transaction, with the
  connection's start-up and end excluded: pgbench runs twice with one client, a
  short run of `t1` and a long one of `t2` transactions, and the figure is
  `(Ir(long) - Ir(short)) / (t2 - t1)`: what one more transaction costs.
* **background**: every other thread (ferrogres: accept loop, background writer,
  WAL writer, checkpointer, autovacuum launcher, ...) or auxiliary process
  (PostgreSQL: checkpointer, background writer, WAL writer, autovacuum launcher,
  logical replication launcher; the postmaster is not reached, below) over the
  window of both runs, per transaction and per second, each thread/process named.

How the counts are cut:

1. The server is stopped cleanly and started again on the same data directory
   under `valgrind --tool=callgrind --trace-children=yes --separate-threads=yes`,
   each process and thread writing its own `cg.<pid>[.<part>]-<thread>` file into a
   private directory.
2. PostgreSQL's children are zeroed at fork: `--zero-before=InitPostmasterChild`
   (the first thing every postmaster child runs) resets the counts each child
   inherits from the postmaster (without it a backend's file starts with the
   postmaster's whole life, start-up included: about 3x the real figure).  A
   backend writes its file when it exits.
3. ferrogres's connection thread dumps its own counts when it leaves
   `ferrogres_server::connection::serve` (`--dump-after=`, current thread only with
   `--separate-threads=yes`); the dump resets that thread's counts, and valgrind
   reuses thread slots, so each connection's file holds that connection alone.
4. Background, ferrogres: after a warm-up run `callgrind_control --zero` resets
   the process's threads, and `callgrind_control --dump` after the two runs writes
   what each did meanwhile (the window).  Background, PostgreSQL: callgrind_control
   (vgdb) must not reach its processes (a vgdb-interrupted postmaster stops
   accepting connections, an interrupted checkpointer exits with code 1 and the
   postmaster goes into crash recovery), so the server is stopped after the runs
   and each auxiliary process's own count over its life (start, warm-up, both
   runs, shutdown checkpoint) is taken from the file it writes at exit, as the
   inclusive cost of its main function (`PG_AUX_MAINS`, below).  The postmaster
   works per connection (fork), not per transaction, and is not counted.

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
def _as_server_user() -> dict:
    u = procs.server_user()
    if u is None:
        return {}
    return {"user": u.pw_uid, "group": u.pw_gid, "extra_groups": [],
            "env": dict(os.environ, USER=u.pw_name, LOGNAME=u.pw_name)}


# The function each system's connection starts in (PostgreSQL: every postmaster
# child; zeroed there) or ends with (ferrogres: the connection thread's body; dumped
# after it).
PG_CHILD_START = "InitPostmasterChild"
FG_CONNECTION = "ferrogres_server::connection::serve*"


def wrapper(outdir: str, system: str = "pg") -> list[str]:
    """The command prefix that runs a server under callgrind."""
    cut = ([f"--zero-before={PG_CHILD_START}"] if system == "pg" else [f"--dump-after={FG_CONNECTION}"])
    return ["valgrind", "--tool=callgrind", "--trace-children=yes", "--separate-threads=yes",
            "--dump-instr=no", "--dump-line=no", *cut,
            f"--callgrind-out-file={os.path.join(outdir, 'cg.%p')}", "--log-file=" + os.path.join(outdir, "vg.%p.log")]


def _control(flag: str, pids: list[int], as_server: bool = True) -> str:
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
        # a process that exited meanwhile is not an error; vgdb reports a failed
        # command on stderr with exit code 0
        failed = r.returncode != 0 or "syscall failed" in out or "error opening" in out
        if failed and "No active callgrind runs" not in out and procs.pid_alive(pid):
            errs.append(f"callgrind_control {flag} {pid}: {out.strip()[-300:]}")
    return "; ".join(errs)


_HEADER = re.compile(r"(summary|desc: Trigger|pid|thread|part):\s*(.*)")


def read_header(path: str) -> dict:
    """The header fields of a callgrind output file that matter here: summary (Ir),
    trigger, pid, thread; plus `fns`, the set of function names in the file."""
    out: dict = {"fns": set()}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("fn=") or line.startswith("cfn="):
                    name = line.split(")", 1)[-1].strip() if "(" in line.split("=", 1)[1][:1] else line.split("=", 1)[1].strip()
                    if name:
                        out["fns"].add(name)
                    continue
                m = _HEADER.match(line)
                if m:
                    k, v = m.group(1), m.group(2).strip()
                    if k == "summary":
                        out["ir"] = int(v.split()[0])
                    elif k == "desc: Trigger":
                        out["trigger"] = v
                    else:
                        out[k] = v
    except OSError:
        return {}
    return out


def summary_ir(path: str) -> Optional[int]:
    return read_header(path).get("ir")


# ferrogres's background threads, recognized by a function only that thread runs
# (valgrind's thread numbers say nothing; the file has no thread name).
FG_THREAD_MARKERS = [
    ("bgwriter", "bgwriter"),
    ("autovacuum", "autovacuum launcher"),
    ("background_flush", "walwriter"),
    ("checkpoint_needed", "checkpointer"),
    ("accept", "accept loop"),
]


def fg_thread_name(h: dict) -> str:
    fns = h.get("fns", set())
    for marker, name in FG_THREAD_MARKERS:
        if any(marker in f for f in fns):
            return f"{name} (thread {h.get('thread', '?')})"
    return f"thread {h.get('thread', '?')}"


def proc_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return f"pid {pid}"
    # valgrind shows as the tool's command line; PostgreSQL's children retitle
    # themselves ("postgres: walwriter"), which valgrind's process shows too
    m = re.search(r"postgres: (.*)", cmd)
    return (m.group(1).strip() if m else cmd[:60]) + f" (pid {pid})"


# PostgreSQL's auxiliary processes, by their main function. The walwriter, the
# autovacuum launcher and the logical replication launcher are forked from the
# postmaster's SIGCHLD handler (when the startup process ends), where callgrind does
# not honour --zero-before (observed: their files start with the postmaster's whole
# count); so a process's own work is taken as the inclusive cost of its main
# function, which excludes whatever it inherited. The startup process is server
# start-up and is left out.
PG_AUX_MAINS = {
    "CheckpointerMain": "checkpointer",
    "BackgroundWriterMain": "background writer",
    "WalWriterMain": "walwriter",
    "AutoVacLauncherMain": "autovacuum launcher",
    # static in PostgreSQL 15 and inlined into the function that forks it; the
    # postmaster's own file has this call too (the fork), so the postmaster's file
    # is never passed here
    "StartAutoVacLauncher": "autovacuum launcher",
    "ApplyLauncherMain": "logical replication launcher",
}


def inclusive(path: str, names) -> dict[str, int]:
    """Inclusive Ir of calls to each of `names` recorded in a callgrind file (callgrind
    unwinds the still-open calls when it writes the file at exit, so a main function
    that never returns has its whole cost there)."""
    ids: dict[str, str] = {}
    out: dict[str, int] = {}
    cfn, want_cost = None, False
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if want_cost:
                    want_cost = False
                    parts = line.split()
                    if cfn in names and len(parts) >= 2 and parts[-1].isdigit():
                        out[cfn] = out.get(cfn, 0) + int(parts[-1])
                    continue
                if line.startswith(("fn=", "cfn=")):
                    val = line.split("=", 1)[1].strip()
                    m = re.match(r"\((\d+)\)\s*(.*)", val)
                    if m:
                        if m.group(2):
                            ids[m.group(1)] = m.group(2)
                        name = ids.get(m.group(1), "")
                    else:
                        name = val
                    if line.startswith("cfn="):
                        cfn = name
                elif line.startswith("calls="):
                    want_cost = True
    except OSError:
        return {}
    return out


def pg_aux(path: str) -> Optional[tuple[str, int]]:
    """(name, own Ir) of a PostgreSQL auxiliary process's file, or None."""
    inc = inclusive(path, PG_AUX_MAINS)
    if not inc:
        return None
    fn, ir = max(inc.items(), key=lambda kv: kv[1])
    return PG_AUX_MAINS[fn], ir


class Files:
    """The callgrind files of a directory, and which appeared or changed since a mark."""

    def __init__(self, outdir: str):
        self.outdir = outdir

    def snapshot(self) -> dict[str, float]:
        out = {}
        for p in glob.glob(os.path.join(self.outdir, "cg.*")):
            try:
                out[p] = os.stat(p).st_mtime
            except OSError:
                pass
        return out

    def settle(self, settle: float = 30.0) -> dict[str, float]:
        """Waits until the files stop changing (exited processes' and dumps appear
        asynchronously), returns the last snapshot."""
        last, stable_since = None, time.monotonic()
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            now = self.snapshot()
            if now != last:
                last, stable_since = now, time.monotonic()
            elif time.monotonic() - stable_since > 1.5:
                break
            time.sleep(0.3)
        return last or {}

    @staticmethod
    def new_since(before: dict[str, float], now: dict[str, float]) -> list[str]:
        return sorted(p for p, m in now.items() if before.get(p) != m)


def connection_files(system: str, paths: list[str], background_pids: set[int]) -> list[tuple[str, dict]]:
    """Among new files, those of connections: PostgreSQL, a process that is not a
    background one (its file written at exit); ferrogres, a thread's dump at the end
    of `connection::serve`."""
    out = []
    for p in paths:
        h = read_header(p)
        if "ir" not in h:
            continue
        if system == "pg":
            try:
                pid = int(h.get("pid", "0"))
            except ValueError:
                pid = 0
            if pid not in background_pids and "termination" in h.get("trigger", "").lower():
                out.append((p, h))
        elif "--dump-after" in h.get("trigger", ""):
            out.append((p, h))
    return out
