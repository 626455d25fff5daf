"""Server instructions per transaction with `perf stat`.

Method: just before pgbench starts, `perf stat -e instructions -x, -p PIDS` is
attached to the server's whole current process tree (PostgreSQL: postmaster and
its auxiliary processes; ferrogres: its process, all threads).  perf's counters
are inherited by tasks created after attaching (checked: `perf stat -p` counts
children forked later), so the backends that pgbench's connections fork, and
parallel workers, are counted too.  A child's counts are folded into its
parent's when it exits, so after pgbench ends the harness waits until the
backends are gone before stopping perf with SIGINT.  The total (connection
setup and teardown included, pgbench's own vacuum excluded: runs use -n) is
divided by the transactions pgbench completed.

Where the event is not available (VMs without a PMU print "<not supported>";
perf missing; perf_event_paranoid) the value is None with the reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Optional

from . import procs


def probe(event: str) -> tuple[bool, str]:
    perf = shutil.which("perf")
    if not perf:
        return False, "perf not installed"
    try:
        r = subprocess.run([perf, "stat", "-x,", "-e", event, "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"perf failed: {e}"
    val = _parse(r.stderr, event)
    if r.returncode != 0 or val[0] is None:
        return False, f"perf stat -e {event}: {val[1] or r.stderr.strip()[:200]}"
    return True, ""


def _parse(text: str, event: str) -> tuple[Optional[int], str]:
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) >= 3 and parts[2].startswith(event.split(":")[0]):
            v = parts[0].strip()
            if v.startswith("<"):
                return None, f"event {event} {v}"
            try:
                return int(float(v)), ""
            except ValueError:
                return None, f"unreadable perf value {v!r}"
    return None, "no counter line in perf output"


class Attach:
    def __init__(self, event: str, pids: list[int]):
        self.event = event
        self.pids = pids
        self.proc: Optional[subprocess.Popen] = None
        fd, self.out = tempfile.mkstemp(prefix="perf-", suffix=".txt")
        os.close(fd)
        self.error = ""

    def start(self) -> None:
        if not self.pids:
            self.error = "no server processes to attach to"
            return
        self.proc = procs.spawn(["perf", "stat", "-x,", "-e", self.event, "-o", self.out,
                                 "-p", ",".join(map(str, self.pids))], stop_signal=signal.SIGINT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # Let perf open its counters before load starts.
        if procs.wait_until(lambda: self.proc.poll() is not None or os.path.getsize(self.out) > 0, 0.5):
            pass
        time.sleep(0.2)
        if self.proc.poll() is not None:
            self.error = f"perf exited early: {self.proc.stderr.read().strip()[:200]}"

    def stop(self) -> tuple[Optional[int], str]:
        try:
            if self.proc is None:
                return None, self.error or "perf not started"
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
            procs.stop(self.proc, signal.SIGKILL, timeout=1)
            if self.error:
                return None, self.error
            with open(self.out) as f:
                return _parse(f.read(), self.event)
        finally:
            try:
                os.unlink(self.out)
            except OSError:
                pass
