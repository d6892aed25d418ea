"""Starting, finding and stopping the testbed's processes.

Every daemon is started in the foreground (``-D``, ``-F``) in its own session, its output in a log under the base,
with ``WATTSCHED_TESTBED=<base>`` in its environment. A process belongs to a testbed when that variable says so,
or when it lives in one of the mount namespaces of the testbed's slurmd (slurmstepd and the jobs' own processes:
they do not inherit the variable), or when it is one of the testbed's daemons by the configuration it runs with
(:func:`configured_daemon`): a slurmctld restarted by hand from a shell has no marker, but its ``-f`` names the
testbed's slurm.conf. A command line merely naming the base proves nothing (the user's shell, an editor, ``tail``
may): only a daemon's executable with the testbed's own configuration counts. ``down`` and a stale ``up`` stop
exactly those, never anything found by name alone, and never this process or its ancestors.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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


#: The testbed's daemons by executable name (``mysqld``: MariaDB's daemon under its older name).
SLURM_DAEMONS = ("slurmctld", "slurmd", "slurmrestd")
DAEMONS = (*SLURM_DAEMONS, "slurmdbd", "munged", "mariadbd", "mysqld")
#: The power daemon's module (``python -m wattsched.testbed.power BASE``).
POWER_MODULE = "wattsched.testbed.power"
#: Where a Slurm daemon reads slurm.conf without ``-f`` or ``SLURM_CONF`` (Debian's packages).
DEFAULT_SLURM_CONF = "/etc/slurm/slurm.conf"


@dataclass(frozen=True)
class ProcessRecord:
    """What :func:`configured_daemon` looks at in a process: read from /proc by :func:`strays_of`, or made up by a
    test."""

    pid: int
    exe: str  # the executable's path ("" when unreadable)
    argv: tuple[str, ...]
    environ: Mapping[str, str] = field(default_factory=dict)
    cwd: str = "/"  # relative paths in argv are the process's own, from its working folder


def _option(argv: Sequence[str], short: str | None, long: str | None) -> str | None:
    """The value of an option given as ``-f X``, ``-fX``, ``-Dif X`` (single-letter flags before it), ``--long=X``
    or ``--long X``; the last one given wins, as with getopt."""
    value = None
    for i, arg in enumerate(argv[1:], start=1):
        following = argv[i + 1] if i + 1 < len(argv) else None
        if long and arg == long:
            value = following
        elif long and arg.startswith(long + "="):
            value = arg[len(long) + 1 :]
        elif short and arg.startswith("-") and not arg.startswith("--") and short[1] in arg[1:]:
            at = arg.index(short[1], 1)
            if at == 1 or arg[1:at].isalpha():  # first, or only single-letter flags before it: the option
                value = arg[at + 1 :] or following
    return value


def _program(exe: str) -> str:
    """The program an executable's path is: its name, without `` (deleted)`` (replaced by an upgrade) and without
    Debian's ``-wlm`` (``/usr/sbin/slurmctld`` is an alternatives link to ``slurmctld-wlm``; the kernel reports
    the file the link points to)."""
    name = Path(exe.removesuffix(" (deleted)")).name
    return re.sub(r"-wlm(-emulator)?$", "", name)


def configured_daemon(record: ProcessRecord, base: Path) -> str | None:
    """The daemon ``record`` is when it is one of the daemons of the testbed under ``base`` by the configuration
    it runs with, else None: a Slurm daemon whose slurm.conf (``-f``, else ``SLURM_CONF``, else the system's) is
    the testbed's; slurmdbd whose slurmdbd.conf (beside ``SLURM_CONF``'s file) is; munged whose socket or key is
    the testbed's; MariaDB whose datadir or socket is; the power daemon given this base. The executable decides
    what a process is (never a word in its arguments), its own options and environment what it serves."""
    base = Path(os.path.normpath(base))
    name = _program(record.exe)
    argv = record.argv

    def same(value: str | None, target: Path) -> bool:
        return bool(value) and Path(os.path.normpath(Path(record.cwd) / str(value))) == target

    if name in SLURM_DAEMONS:
        used = _option(argv, "-f", None) or record.environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF
        return name if same(used, base / "slurm.conf") else None
    if name == "slurmdbd":
        conf = record.environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF
        return name if same(str(Path(conf).parent / "slurmdbd.conf"), base / "slurmdbd.conf") else None
    if name == "munged":
        munge = base / "munge"
        socket, key = _option(argv, "-S", "--socket"), _option(argv, None, "--key-file")
        return name if same(socket, munge / "munge.socket") or same(key, munge / "munge.key") else None
    if name in ("mariadbd", "mysqld"):
        datadir, socket = _option(argv, "-h", "--datadir"), _option(argv, None, "--socket")
        return "mariadbd" if same(datadir, base / "db") or same(socket, base / "db" / "mysql.sock") else None
    if name.startswith("python") and POWER_MODULE in argv:
        at = argv.index(POWER_MODULE)
        given = argv[at + 1] if at + 1 < len(argv) else None
        return "power" if argv[at - 1] == "-m" and same(given, base) else None
    return None


def _record(proc: psutil.Process) -> ProcessRecord | None:
    """The process as :func:`configured_daemon` reads it; None when it is gone. An unreadable environment (another
    user's process when not root) reads as empty: the command line still counts."""
    try:
        with proc.oneshot():
            try:
                exe = proc.exe()
            except psutil.AccessDenied:
                exe = ""
            argv = tuple(proc.cmdline())
            exe = exe or (argv[0] if argv else "")
            name = _program(exe)
            if name not in DAEMONS and not (name.startswith("python") and POWER_MODULE in argv):
                return ProcessRecord(proc.pid, exe, argv)  # not a daemon: its environment does not matter
            try:
                environ, cwd = proc.environ(), proc.cwd()
            except psutil.AccessDenied:
                environ, cwd = {}, "/"
            return ProcessRecord(proc.pid, exe, argv, environ, cwd)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None


def strays_of(base: Path) -> list[tuple[psutil.Process, str]]:
    """The live processes that are daemons of the testbed under ``base`` by their configuration
    (:func:`configured_daemon`), with the daemon each is; never this process or its ancestors."""
    base = Path(base)
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for proc in psutil.process_iter():
        if proc.pid in mine:
            continue
        record = _record(proc)
        name = configured_daemon(record, base) if record is not None else None
        if name is not None:
            found.append((proc, name))
    return found


def command_of(proc: psutil.Process) -> str:
    """A process's command line on one line (at most 300 characters), for a message."""
    try:
        text = " ".join(proc.cmdline()) or proc.name()
    except psutil.Error:
        return "(gone)"
    return text if len(text) <= 300 else text[:297] + "..."


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
