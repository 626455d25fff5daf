"""The two servers under test: PostgreSQL 15 and ferrogres, started the same way.

Both run as the `postgres` account when the harness is root, listen on a unix
socket in a private temp dir and a free port, and get the same `-c` settings.
Readiness = `pg_isready` answers "accepting connections" AND `psql -c 'select 1'`
returns 1.  A server that exits, or is not ready within its timeout, is reported
with the reason (last lines of its log) instead of failing the run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Optional

from . import procs

PG_BINDIR = os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin")
SYSTEM_LABEL = {"pg": "PostgreSQL", "ferrogres": "ferrogres"}


class ServerError(RuntimeError):
    """The server could not be started or made ready; str() is the reason."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_tool(name: str) -> str:
    p = os.path.join(PG_BINDIR, name)
    if os.access(p, os.X_OK):
        return p
    w = shutil.which(name)
    if w:
        return w
    raise ServerError(f"{name} not found (looked in {PG_BINDIR} and PATH)")


def tail(path: str, n: int = 8) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [l.rstrip() for l in f.readlines() if l.strip()]
        important = [l for l in lines if re.match(r"^(\S+ )*(FATAL|PANIC|ERROR|error)[: ]", l)]
        return " | ".join((important or lines)[-n:])
    except OSError:
        return ""


class Server:
    system = "?"
    stop_signal = signal.SIGTERM

    def __init__(self, base_dir: str, ready_timeout: float):
        self.base_dir = base_dir
        self.ready_timeout = ready_timeout
        self.proc: Optional[subprocess.Popen] = None
        self.port = 0
        self.sockdir = ""
        self.datadir = ""
        self.logfile = ""
        self.root_pid: Optional[int] = None
        self.settings: dict = {}
        self.mem_limit: Optional[int] = None  # RLIMIT_AS of the server processes, bytes (None: none)

    @property
    def label(self) -> str:
        return SYSTEM_LABEL[self.system]

    # -- connection helpers -------------------------------------------------
    def conn_args(self) -> list[str]:
        return ["-h", self.sockdir, "-p", str(self.port), "-U", "postgres"]

    def psql(self, sql: str, timeout: float = 600, env_extra: Optional[dict] = None) -> tuple[bool, str]:
        """Run SQL with psql (ON_ERROR_STOP); returns (ok, stdout or error text)."""
        env = dict(os.environ, PGCONNECT_TIMEOUT="5", **(env_extra or {}))
        cmd = [client_tool("psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"] + self.conn_args() + \
              ["-d", "postgres", "-c", sql]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return False, f"psql timed out after {timeout:.0f} s"
        if r.returncode != 0:
            return False, (r.stderr.strip() or r.stdout.strip() or f"psql exit code {r.returncode}")
        return True, r.stdout.strip()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def death(self) -> str:
        """How a server that is no longer alive ended: its exit code or signal, and its log's tail."""
        rc = self.proc.poll() if self.proc is not None else None
        if rc is None:
            how = "stopped" if self.proc is None else "running"
        elif rc < 0:
            how = f"killed by {signal.Signals(-rc).name}" + (" (the OOM killer?)" if rc == -signal.SIGKILL else "")
        else:
            how = f"exited with code {rc}"
        return f"server {how}: {tail(self.logfile, 4)}"

    def pids(self) -> list[int]:
        return procs.process_tree(self.root_pid) if self.root_pid and self.alive() else []

    # -- lifecycle ------------------------------------------------------------
    def _dirs(self) -> None:
        self.dir = tempfile.mkdtemp(prefix=f"{self.system}-", dir=self.base_dir)
        procs.chown_to_server_user(self.dir)
        self.sockdir = os.path.join(self.dir, "sock")
        self.datadir = os.path.join(self.dir, "data")
        os.mkdir(self.sockdir, 0o700)
        procs.chown_to_server_user(self.sockdir)
        self.logfile = os.path.join(self.dir, "server.log")
        self.port = free_port()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        isready = client_tool("pg_isready")
        last = "no answer"
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise ServerError(f"server exited with code {rc} before accepting connections: "
                                  f"{tail(self.logfile) or '(no log output)'}")
            r = subprocess.run([isready, "-q", "-t", "1", "-d", "postgres"] + self.conn_args(),
                               capture_output=True, text=True)
            if r.returncode == 0:
                ok, out = self.psql("select 1", timeout=10)
                if ok and out == "1":
                    return
                last = f"pg_isready answers but 'select 1' fails: {out}"
            else:
                last = {1: "rejecting connections", 2: "no response", 3: "no attempt"}.get(r.returncode, str(r.returncode))
            time.sleep(0.2)
        raise ServerError(f"not accepting connections on {self.sockdir}/.s.PGSQL.{self.port} within "
                          f"{self.ready_timeout:.0f} s ({last}); log: {tail(self.logfile) or '(empty)'}")

    def start(self, settings: dict) -> None:
        raise NotImplementedError

    def _launch(self, wrap: list[str]) -> None:
        raise NotImplementedError

    def relaunch(self, wrap: list[str], ready_timeout: Optional[float] = None) -> None:
        """Stops the server cleanly and starts it again on the same data directory,
        its command prefixed by `wrap` (e.g. valgrind)."""
        if self.proc is not None:
            procs.stop(self.proc, self.stop_signal, timeout=120)
            self.proc = None
        if ready_timeout is not None:
            self.ready_timeout = ready_timeout
        self._launch(wrap)

    def restart(self, stop_timeout: float = 10.0) -> None:
        """Stops the server (its clean-stop signal, SIGKILL of the process group after
        `stop_timeout` s) and starts it again on the same data directory: what the tpch
        workload does when a query ignores its cancel."""
        old = self.pids()
        if self.proc is not None:
            procs.stop(self.proc, self.stop_signal, timeout=stop_timeout)
            self.proc = None
        # every process of the old server gone (PostgreSQL refuses to start while an old
        # backend still holds its shared memory)
        procs.wait_until(lambda: not any(procs.pid_alive(p) for p in old), 30.0)
        self._launch([])

    def stop(self) -> None:
        if self.proc is not None:
            procs.stop(self.proc, self.stop_signal, timeout=60)
            self.proc = None
        if getattr(self, "dir", None):
            shutil.rmtree(self.dir, ignore_errors=True)

    def settings_args(self, settings: dict) -> list[str]:
        out = []
        for k, v in settings.items():
            out += ["-c", f"{k}={v}"]
        return out


class PgServer(Server):
    system = "pg"
    stop_signal = signal.SIGINT  # fast shutdown

    def start(self, settings: dict) -> None:
        self._dirs()
        env = dict(os.environ, LC_ALL="C", LANG="C", HOME=self.dir)
        initdb = os.path.join(PG_BINDIR, "initdb")
        postgres = os.path.join(PG_BINDIR, "postgres")
        for b in (initdb, postgres):
            if not os.access(b, os.X_OK):
                raise ServerError(f"{b} not found: install postgresql-15 (or set PG_BINDIR)")
        with open(os.path.join(self.dir, "initdb.log"), "w") as log:
            p = procs.spawn([initdb, "-D", self.datadir, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                             "--locale=C", "--no-sync"], as_server_user=True, stdout=log,
                            stderr=subprocess.STDOUT, cwd=self.dir, env=env)
            try:
                rc = p.wait(timeout=300)
            finally:
                procs.stop(p)
        if rc != 0:
            raise ServerError(f"initdb failed ({rc}): {tail(os.path.join(self.dir, 'initdb.log'))}")
        self.settings = settings
        self._launch([])

    def _launch(self, wrap: list[str]) -> None:
        env = dict(os.environ, LC_ALL="C", LANG="C", HOME=self.dir)
        log = open(self.logfile, "a")
        args = wrap + [os.path.join(PG_BINDIR, "postgres"), "-D", self.datadir, "-p", str(self.port),
                       "-k", self.sockdir, "-c", "listen_addresses=127.0.0.1"] + self.settings_args(self.settings)
        self.proc = procs.spawn(args, stop_signal=self.stop_signal, as_server_user=True, stdout=log,
                                stderr=subprocess.STDOUT, cwd=self.dir, env=env, rlimit_as=self.mem_limit)
        log.close()
        # Popen(user=...) execs postgres (or valgrind, which runs it in the same process) itself:
        # this is the postmaster
        self.root_pid = self.proc.pid
        self._wait_ready()


class FerrogresServer(Server):
    system = "ferrogres"
    stop_signal = signal.SIGTERM

    def __init__(self, base_dir: str, ready_timeout: float, binary: str):
        super().__init__(base_dir, ready_timeout)
        self.binary = binary

    def start(self, settings: dict) -> None:
        self._dirs()
        os.mkdir(self.datadir, 0o700)  # empty: ferrogres initializes it itself
        procs.chown_to_server_user(self.datadir)
        # A private copy, so the postgres account can execute it wherever the tree lives.
        exe = os.path.join(self.dir, "ferrogres")
        shutil.copy2(self.binary, exe)
        procs.chown_to_server_user(exe)
        self.settings = settings
        self._launch([])

    def _launch(self, wrap: list[str]) -> None:
        exe = os.path.join(self.dir, "ferrogres")
        env = dict(os.environ, LC_ALL="C", LANG="C", HOME=self.dir)
        log = open(self.logfile, "a")
        args = wrap + [exe, "-D", self.datadir, "-p", str(self.port), "-k", self.sockdir, "-h", "127.0.0.1"] + \
            self.settings_args(self.settings)
        self.proc = procs.spawn(args, stop_signal=self.stop_signal, as_server_user=True, stdout=log,
                                stderr=subprocess.STDOUT, cwd=self.dir, env=env, rlimit_as=self.mem_limit)
        log.close()
        self.root_pid = self.proc.pid
        try:
            self._wait_ready()
        except ServerError:
            procs.stop(self.proc, self.stop_signal, timeout=10)
            self.proc = None
            raise


def ensure_ferrogres_binary(repo_root: str, given: Optional[str], build: bool) -> str:
    """Path of the ferrogres binary; builds it with cargo when missing (or asked).

    Raises ServerError with the reason when there is none and it cannot be built.
    """
    if given:
        if not os.access(given, os.X_OK):
            raise ServerError(f"--ferrogres-bin {given} is not an executable file")
        return os.path.abspath(given)
    path = os.path.join(repo_root, "target", "release", "ferrogres")
    if build or not os.access(path, os.X_OK):
        cargo = shutil.which("cargo")
        if not cargo:
            raise ServerError(f"{path} missing and cargo not found to build it")
        print(f"building ferrogres: cargo build --release -p ferrogres (in {repo_root})", file=sys.stderr, flush=True)
        r = subprocess.run([cargo, "build", "--release", "-p", "ferrogres"], cwd=repo_root,
                           capture_output=True, text=True)
        if r.returncode != 0:
            err = [l for l in r.stderr.splitlines() if l.startswith("error")][:3]
            raise ServerError("cargo build --release -p ferrogres failed: " + (" | ".join(err) or r.stderr[-500:]))
    if not os.access(path, os.X_OK):
        raise ServerError(f"{path} not found after build")
    return path
