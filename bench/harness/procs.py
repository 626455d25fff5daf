"""Child processes that must never outlive the harness.

Every long-lived child (servers, pgbench, perf) is started in its own session
(process group) through `spawn`, registered, and killed by `cleanup_all` (called
from `finally`, atexit and the SIGTERM/SIGHUP handlers).  Children also get
PR_SET_PDEATHSIG so that even a SIGKILLed harness takes its servers down.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
import pwd
import resource
import signal
import subprocess
import time
from typing import Optional

_live: list[tuple[subprocess.Popen, int]] = []  # (process, signal that stops it cleanly)

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_PR_SET_PDEATHSIG = 1


def _pdeathsig(sig: int, rlimit_as: Optional[int] = None):
    def f():
        _libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if rlimit_as:
            resource.setrlimit(resource.RLIMIT_AS, (rlimit_as, rlimit_as))
    return f


def running_as_root() -> bool:
    return os.geteuid() == 0


def server_user() -> Optional[pwd.struct_passwd]:
    """The account servers run as: `postgres` when we are root, else ourselves (None)."""
    if not running_as_root():
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root but there is no 'postgres' user to run the servers as "
                           "(install postgresql-15, which creates it)")


def chown_to_server_user(path: str) -> None:
    u = server_user()
    if u is not None:
        os.chown(path, u.pw_uid, u.pw_gid)


def spawn(args: list[str], *, stop_signal: int = signal.SIGTERM, as_server_user: bool = False,
          rlimit_as: Optional[int] = None, **kw) -> subprocess.Popen:
    """Start a child in its own process group, registered for cleanup; `rlimit_as`: its
    address-space limit in bytes (RLIMIT_AS, inherited by its children), so that a server
    that runs away with memory fails its own allocations instead of waking the machine's
    OOM killer."""
    if as_server_user:
        u = server_user()
        if u is not None:
            kw.update(user=u.pw_uid, group=u.pw_gid, extra_groups=[])
            # the account's own names, not root's (valgrind's vgdb, for one, names its
            # FIFOs after LOGNAME/USER and cannot be reached when they are missing)
            env = dict(kw.get("env") or os.environ)
            env.update(USER=u.pw_name, LOGNAME=u.pw_name)
            kw["env"] = env
    p = subprocess.Popen(args, start_new_session=True, preexec_fn=_pdeathsig(stop_signal, rlimit_as), **kw)
    _live.append((p, stop_signal))
    return p


def forget(p: subprocess.Popen) -> None:
    _live[:] = [(q, s) for q, s in _live if q is not p]


def stop(p: subprocess.Popen, sig: Optional[int] = None, timeout: float = 60.0) -> Optional[int]:
    """Send the clean-stop signal, wait, then SIGKILL the whole process group."""
    if sig is None:
        sig = next((s for q, s in _live if q is p), signal.SIGTERM)
    try:
        if p.poll() is None:
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        # whatever is left of the group (backends, workers) goes too
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if p.poll() is None:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        return p.returncode
    finally:
        forget(p)


def cleanup_all() -> None:
    for p, sig in list(reversed(_live)):
        try:
            stop(p, sig, timeout=20.0)
        except Exception:  # cleanup must go on for the others
            pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def process_tree(root: int) -> list[int]:
    """root and all its live descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if rest[0] == "Z":
            continue
        children.setdefault(int(rest[1]), []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def install_signal_handlers() -> None:
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, handler)
    atexit.register(cleanup_all)


def wait_until(pred, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()
