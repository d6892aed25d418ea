"""Starting, finding and stopping the testbed's processes.

Every daemon is started in the foreground (``-D``, ``-F``) in its own session, its output in a log under the base,
with ``WATTSCHED_TESTBED=<base>`` in its environment. A process belongs to a testbed when that variable says so,
or when it lives in one of the mount namespaces of the testbed's slurmd (slurmstepd and the jobs' own processes:
they do not inherit the variable). A command line naming the base proves nothing (the user's shell may). ``down`` and a
stale ``up`` stop exactly those, never anything found by name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

#: The environment variable that marks a process as one of a testbed's.
MARK = "WATTSCHED_TESTBED"


class TestbedError(RuntimeError):
    """A testbed step failed: one line saying which, and which log to read."""


def tail(path: Path, lines: int = 3) -> str:
    """The last non-empty lines of a log, joined on one line (for an error message)."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in text[-lines:]) or "(empty log)"


def spawn(
    argv: Sequence[str], log: Path, base: Path, env: dict[str, str] | None = None, user: str | None = None
) -> int:
    """Start a daemon in the foreground of its own session, output to ``log``, as ``user`` (default: ours); return
    its pid (the daemon's own: no runuser or shell in between)."""
    environ = {**(env if env is not None else os.environ), MARK: str(base)}
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=environ,
            start_new_session=True, cwd=str(base), user=user, group=user, extra_groups=[] if user else None,
        )  # fmt: skip
    return proc.pid


def alive(pid: int | None) -> bool:
    """Whether ``pid`` runs (a zombie is dead; one that is our child is reaped)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            _reap(pid)
            return False
        return True
    except psutil.NoSuchProcess:
        return False


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def run(
    argv: Sequence[str], env: dict[str, str] | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion, its output captured as text (never raises on a non-zero exit)."""
    return subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=timeout, check=False)


def wait_until(test: Callable[[], bool], timeout: float, what: str, log: Path | None, pid: int | None = None) -> None:
    """Poll ``test`` every 50 ms until true; fail after ``timeout`` s, or at once when ``pid`` died, naming the
    log's last lines."""
    deadline = time.monotonic() + timeout
    while True:
        if test():
            return
        if pid is not None and not alive(pid):
            raise TestbedError(f"{what}: the process exited; {log}: {tail(log) if log else ''}")
        if time.monotonic() > deadline:
            raise TestbedError(f"{what}: not ready after {timeout:.0f} s; {log}: {tail(log) if log else ''}")
        time.sleep(0.05)


def mount_namespace(pid: int) -> str | None:
    """The mount namespace of ``pid`` (``mnt:[inode]``), or None when it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def _marker(pid: int) -> str | None:
    """The testbed base a process was started for (its ``WATTSCHED_TESTBED`` variable), None when it has none."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            for item in fh.read().split(b"\0"):
                if item.startswith(MARK.encode() + b"="):
                    return item.split(b"=", 1)[1].decode(errors="replace")
    except OSError:
        return None
    return None


def owned(pid: int | None, base: Path) -> bool:
    """Whether ``pid`` runs and was started for the testbed under ``base``. A pid saved in testbed.json may have
    been reused by another process since (pid_max is 32,768 here, and a test run spawns tens of thousands): only
    an owned pid is ever signalled."""
    return bool(pid) and alive(pid) and _marker(int(pid or 0)) == str(base)


def processes_of(base: Path, namespaces: set[str]) -> list[psutil.Process]:
    """Every live process of the testbed under ``base`` (see the module docstring for how they are told), never
    this process or its ancestors (the shell that runs ``down`` may name the base in its own command line).

    A process counts when it carries the testbed's marker, or when it lives in one of ``namespaces`` (its slurmd
    mount namespaces: job steps lose the marker). A namespace where a process of *another* testbed lives is never
    one of ours: the kernel reuses the numbers of dead namespaces, so a stale one from testbed.json can name a
    live namespace of another testbed."""
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    procs = []
    for proc in psutil.process_iter(["pid", "status"]):
        if proc.pid in mine or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        procs.append((proc, _marker(proc.pid), mount_namespace(proc.pid)))
    others = {ns for _, mark, ns in procs if mark is not None and mark != str(base) and ns}
    wanted = namespaces - others
    return [proc for proc, mark, ns in procs if mark == str(base) or (ns is not None and ns in wanted)]


def stop(pids: Sequence[int], timeout: float = 10) -> list[int]:
    """SIGTERM ``pids``, SIGKILL those still there after ``timeout`` s; return the pids that survived both."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for pid in left:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(p) for p in left):
        time.sleep(0.05)
    return [p for p in left if alive(p)]


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def require_programs(programs: Sequence[str]) -> None:
    """Fail with one line naming the first missing program and how to install the packages."""
    for program in programs:
        if shutil.which(program) is None and not Path("/usr/sbin", program).exists():
            raise TestbedError(
                f"{program} is not installed: `make testbed-deps` installs Slurm, munge and MariaDB (as root: "
                "apt-get install --no-install-recommends slurmctld slurmd slurm-client munge slurmdbd slurmrestd "
                "slurm-wlm-basic-plugins slurm-wlm-mysql-plugin slurm-wlm-jwt-plugin mariadb-server mariadb-client)"
            )
