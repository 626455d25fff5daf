"""Wait events of one pgbench point, as folded stacks and an SVG flame graph.

ferrogres has a built-in sampler (pg_wait_sampling_profile): the profile is
reset before the point and read after it with ferrogres_wait_sampling_folded(),
which gives `backend_type;wait_event_type;wait_event;query_id count` lines
(the client backends' are kept: the auxiliary threads' idle waits would
dwarf them, and PostgreSQL's are not sampled either).
PostgreSQL 15 has no sampler, so a loop here samples its pg_stat_activity
every PERIOD seconds through one psql process (\\watch), and folds the rows the
same way: an active backend without a wait event is `CPU;running`, as
ferrogres folds it. Both are written as `<tag>.waits.folded`, and
`<tag>.waits.svg` when inferno-flamegraph is installed (`cargo install
inferno --locked`; a missing tool is reported, never skipped silently).
"""
import collections
import os
import shutil
import subprocess
import threading
from typing import Optional

from . import servers

PERIOD = 0.01  # seconds between two samples of PostgreSQL's pg_stat_activity (pg_wait_sampling's default)
CLIENTS = 32  # the point (tpcb workloads) whose waits are sampled

# One row per busy client backend (not the sampler's own): the folded stack's frames.
PG_SAMPLE_SQL = ("select backend_type || ';' || coalesce(wait_event_type || ';' || wait_event, 'CPU;running') "
                 "|| ';' || coalesce(query_id, 0) from pg_stat_activity "
                 "where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'")


class Sampler:
    """Start before the point, stop after it: stop() writes the files and returns their summary."""

    def __init__(self, srv: servers.Server, outdir: str, tag: str):
        self.srv, self.outdir, self.tag = srv, outdir, tag
        self.counts: collections.Counter = collections.Counter()
        self.proc: Optional[subprocess.Popen] = None
        self.reader: Optional[threading.Thread] = None
        self.error = ""

    def start(self) -> None:
        if self.srv.system == "ferrogres":
            ok, out = self.srv.psql("select pg_wait_sampling_reset_profile()")
            if not ok:
                self.error = f"pg_wait_sampling_reset_profile: {out[:200]}"
            return
        cmd = [servers.client_tool("psql"), "-X", "-q", "-A", "-t"] + self.srv.conn_args() + ["-d", "postgres"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{PG_SAMPLE_SQL} \\watch {PERIOD}\n")
        self.proc.stdin.flush()

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                line = line.strip()
                if line:
                    self.counts[line] += 1

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()

    def stop(self) -> dict:
        if self.srv.system == "ferrogres":
            ok, out = self.srv.psql("select ferrogres_wait_sampling_folded()")
            if ok:
                for line in out.splitlines():
                    stack, _, n = line.rpartition(" ")
                    # client backends only, as sampled from PostgreSQL's pg_stat_activity
                    if stack.startswith("client backend;") and n.isdigit():
                        self.counts[stack] += int(n)
            else:
                self.error = f"ferrogres_wait_sampling_folded: {out[:200]}"
        elif self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            if self.reader is not None:
                self.reader.join(timeout=10)
        folded = os.path.join(self.outdir, f"{self.tag}.waits.folded")
        with open(folded, "w") as f:
            for stack, n in sorted(self.counts.items(), key=lambda kv: -kv[1]):
                f.write(f"{stack} {n}\n")
        rec = {"folded": os.path.basename(folded), "samples": sum(self.counts.values()),
               "top": [[s, n] for s, n in self.counts.most_common(8)]}
        if self.error:
            rec["error"] = self.error
        tool = shutil.which("inferno-flamegraph")
        if tool is None:
            rec["svg_error"] = "inferno-flamegraph not installed (cargo install inferno --locked)"
        elif self.counts:
            svg = os.path.join(self.outdir, f"{self.tag}.waits.svg")
            with open(folded) as src, open(svg, "w") as dst:
                r = subprocess.run([tool, "--title", f"wait events: {self.tag}", "--countname", "samples"],
                                   stdin=src, stdout=dst, stderr=subprocess.PIPE, text=True)
            if r.returncode == 0:
                rec["svg"] = os.path.basename(svg)
            else:
                rec["svg_error"] = r.stderr.strip()[:200]
        return rec
