"""``up`` and ``down`` of a testbed: the start order, idempotence, stale-state cleanup and a clean stop.

``up`` always starts a fresh cluster (an empty accounting database, no jobs): the testbed is throwaway. On a
running testbed it changes nothing and says so; after a crash (some daemon of testbed.json dead) it stops what is
left and starts again. ``down`` cancels the jobs first (slurmstepd outlives a killed slurmd), then stops the daemons
in reverse start order, then stops every other process of the testbed it finds (procs.py: by its marker, its
mount namespace, or a daemon's configuration, e.g. a slurmctld restarted by hand), and checks again that none
survives: a survivor is reported with its pid and command, never counted as stopped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattsched.testbed import services
from wattsched.testbed.config import (
    CLUSTER,
    STATE_FILE,
    TestbedOptions,
    TestbedState,
    free_ports,
    slurm_conf,
    slurmdbd_conf,
)
from wattsched.testbed.procs import (
    TestbedError,
    command_of,
    mount_namespace,
    owned,
    processes_of,
    require_programs,
    run,
    spawn,
    stop,
    strays_of,
    wait_until,
)

#: Programs ``up`` needs (the Debian packages of ``make testbed-deps``).
PROGRAMS = ("munged", "mungekey", "mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "slurmctld", "slurmd",
            "sacctmgr", "sinfo", "squeue", "scontrol", "scancel", "unshare", "runuser")  # fmt: skip

#: Folders of a base that ``up`` starts afresh (logs are kept and appended to; ``down --purge`` removes all).
FRESH = ("db", "state", "spool", "run", "counters", "overlay-work", "overlay-cgroup", "munge")


@dataclass
class UpResult:
    """What ``up`` did: the state, and whether the testbed was already running (nothing started)."""

    state: TestbedState
    already_running: bool
    cleaned_stale: bool
    users_created: list[str]


def running_state(base: Path) -> TestbedState | None:
    """The state of a testbed whose daemons are all alive, else None."""
    state = TestbedState.load(base)
    if state is None or not state.pids:
        return None
    base = base.resolve()
    return state if all(owned(pid, base) for pid in state.pids.values()) else None


def _check_traversable(base: Path) -> None:
    """Other users (munge, mysql, the test users reading slurm.conf) must reach the base: every parent o+x."""
    for folder in [base, *base.parents]:
        if folder.exists() and not folder.stat().st_mode & stat.S_IXOTH:
            raise TestbedError(
                f"{folder} is not searchable by other users (mode {stat.filemode(folder.stat().st_mode)}): munge, "
                "MariaDB and the test users must reach the testbed folder; choose a --dir under a world-searchable "
                "folder (e.g. /tmp) or `chmod o+x` it"
            )


def _clean_stale(base: Path) -> bool:
    """Stop whatever is left of a crashed testbed under ``base``; return whether anything was."""
    namespaces = set()
    state = TestbedState.load(base)
    if state is not None:
        namespaces = {ns for ns in (state.namespaces) if ns}
    pids = {p.pid for p in processes_of(base, namespaces)} | {p.pid for p, _ in strays_of(base)}
    if pids:
        stop(sorted(pids))
    return bool(pids) or bool(state is not None and state.pids)  # pids are emptied by a clean down


def up(opts: TestbedOptions) -> UpResult:
    """Start the testbed described by ``opts`` (see the module docstring)."""
    t0 = time.monotonic()
    require_programs(PROGRAMS + (("slurmrestd",) if opts.rest else ()))
    if os.geteuid() != 0:
        raise TestbedError("wattsched testbed up needs root (mount namespaces, munge and MariaDB users, useradd)")
    if opts.nodes < 1:
        raise TestbedError(f"--nodes must be at least 1, got {opts.nodes}")
    if not 0 <= opts.idle_watts <= opts.max_watts:
        raise TestbedError(f"--idle-watts {opts.idle_watts} must lie in 0..--max-watts {opts.max_watts}")
    base = opts.base = opts.base.resolve()
    running = running_state(base)
    if running is not None:
        return UpResult(running, already_running=True, cleaned_stale=False, users_created=[])
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    _check_traversable(base)
    cleaned = _clean_stale(base)
    for name in FRESH:
        shutil.rmtree(base / name, ignore_errors=True)
    (base / STATE_FILE).unlink(missing_ok=True)
    for name in ("state", "spool", "run", "log", "counters"):
        (base / name).mkdir(exist_ok=True)
    work = base / "work"  # where the test users' jobs write their output
    work.mkdir(exist_ok=True)
    work.chmod(0o1777)
    users_created = services.ensure_users()

    host = socket.gethostname().split(".")[0]
    names = [f"n{i}" for i in range(1, opts.nodes + 1)]
    port_names = ["mariadb", "slurmdbd", "slurmctld", *names, *(["slurmrestd"] if opts.rest else [])]
    ports = dict(zip(port_names, free_ports(len(port_names)), strict=True))
    jwt_key = services.new_jwt_key(base) if opts.rest else None
    conf = base / "slurm.conf"
    conf.write_text(slurm_conf(opts, ports, host, jwt_key))
    dbd_conf = base / "slurmdbd.conf"
    dbd_conf.write_text(slurmdbd_conf(opts, ports, host, jwt_key))
    dbd_conf.chmod(0o600)  # slurmdbd refuses a config others can read (it holds the DB password)
    state = TestbedState(
        base=str(base), slurm_conf=str(conf), nodes=names, idle_watts=opts.idle_watts, max_watts=opts.max_watts,
        license_name=opts.license_name, license_total=opts.power_total, remote_license=opts.remote_license,
        ports=ports, power_log=str(base / "power.jsonl"), counters=str(base / "counters"), jwt_key=str(jwt_key or "")
        or None, started_at=time.time(),
    )  # fmt: skip
    env = state.env()
    try:
        _start_all(opts, state, env)
    except BaseException:
        state.save(base)
        down(base)
        raise
    state.cold_start_s = round(time.monotonic() - t0, 2)
    state.save(base)
    return UpResult(state, already_running=False, cleaned_stale=cleaned, users_created=users_created)


def _start_all(opts: TestbedOptions, state: TestbedState, env: dict[str, str]) -> None:
    """The start order of the spec; the state is saved after each daemon so that a failure is cleaned up."""
    base = opts.base
    log = base / "log"

    def started(name: str, pid: int) -> None:
        state.pids[name] = pid
        state.save(base)

    started("munged", services.start_munge(base, env))
    started("mariadbd", services.start_mariadb(base, state.ports["mariadb"], env))
    started("slurmdbd", spawn([f"{services.SBIN}/slurmdbd", "-D"], log / "slurmdbd.out", base, env))
    services.setup_accounting(opts, env, state.pids["slurmdbd"])
    ctld = spawn([f"{services.SBIN}/slurmctld", "-D", "-i", "-f", state.slurm_conf], log / "slurmctld.out", base, env)
    started("slurmctld", ctld)
    wait_until(
        lambda: run(["scontrol", "ping"], env=env).stdout.count("UP") > 0, 30, "slurmctld", log / "slurmctld.log", ctld
    )
    namespaces: list[str] = []
    for node in state.nodes:
        pid = services.start_slurmd(opts, state, node, env)
        started(f"slurmd-{node}", pid)
    for node in state.nodes:
        pid = state.pids[f"slurmd-{node}"]

        def unshared(pid: int = pid) -> bool:
            return mount_namespace(pid) != mount_namespace(os.getpid())

        wait_until(unshared, 10, f"slurmd {node} namespace", log / f"slurmd-{node}.out", pid)
        namespaces.append(mount_namespace(pid) or "")
    state.namespaces = namespaces
    started("power", services.start_power_daemon(base, env))
    wait_until(lambda: _all_idle(env, len(state.nodes)), 60, "nodes idle (sinfo)", log / "slurmctld.log")
    if opts.rest:
        started("slurmrestd", services.start_rest(opts, state, env))
        wait_until(lambda: _port_open(state.ports["slurmrestd"]), 15, "slurmrestd", log / "slurmrestd.log")


def restart_slurmctld(base: Path) -> int:
    """Stop slurmctld and start it again on its saved state (jobs survive, as on a real controller restart): what
    a controller restart looks like to the advisor. Returns the new pid, saved in ``testbed.json``."""
    state = TestbedState.load(base.resolve())
    if state is None or not owned(state.pids.get("slurmctld"), base.resolve()):
        raise TestbedError(f"{base}: no running testbed slurmctld to restart")
    env = state.env()
    stop([state.pids["slurmctld"]])
    log = base / "log"
    ctld = spawn([f"{services.SBIN}/slurmctld", "-D", "-i", "-f", state.slurm_conf], log / "slurmctld.out", base, env)
    state.pids["slurmctld"] = ctld
    state.save(base.resolve())
    wait_until(
        lambda: run(["scontrol", "ping"], env=env).stdout.count("UP") > 0, 30, "slurmctld", log / "slurmctld.log", ctld
    )
    return ctld


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _all_idle(env: dict[str, str], count: int) -> bool:
    states = run(["sinfo", "-h", "-N", "-o", "%T"], env=env).stdout.split()
    return len(states) == count and all(s == "idle" for s in states)


@dataclass
class DownResult:
    """What ``down`` did: jobs cancelled, daemons stopped (those of testbed.json by name, then those found by their
    configuration as ``"<daemon> pid <pid>"``, also listed in ``found`` with their command), and the processes of
    the testbed still alive after it all (should be none), each ``{"pid", "command"}``."""

    cancelled: int
    stopped: list[str]
    survivors: list[dict[str, Any]]
    purged: bool
    found: list[dict[str, Any]] = field(default_factory=list)


def down(base: Path, purge: bool = False) -> DownResult:
    """Stop the testbed under ``base`` (see the module docstring); keep the folder unless ``purge``."""
    base = base.resolve()
    state = TestbedState.load(base)
    cancelled = 0
    namespaces: set[str] = set()
    stopped: list[str] = []
    if state is not None:
        namespaces = {ns for ns in state.namespaces if ns}
        namespaces |= {ns for pid in state.pids.values() if owned(pid, base) and (ns := _ns_of_slurmd(pid))}
        if owned(state.pids.get("slurmctld"), base):
            cancelled = _cancel_all(state, namespaces)
        # reverse start order; the slurmd (and what came after them) stop together: one at a time took 5 s for 8
        for group in _stop_groups(list(state.pids)):
            pids = {name: state.pids[name] for name in group if owned(state.pids[name], base)}
            stop(list(pids.values()))
            stopped += list(pids)
    left = processes_of(base, namespaces)
    marked = {p.pid for p in left}
    strays = [(p, name) for p, name in strays_of(base) if p.pid not in marked]  # no marker: e.g. started by hand
    found = [{"pid": p.pid, "daemon": name, "command": command_of(p)} for p, name in strays]
    stop(sorted(marked | {p.pid for p, _ in strays}))
    stopped += [f"{f['daemon']} pid {f['pid']}" for f in found]
    # look again: whatever is still there survived its stop (or started meanwhile), and is reported, not counted
    again = {p.pid: p for p in processes_of(base, namespaces)} | {p.pid: p for p, _ in strays_of(base)}
    survivors = [{"pid": pid, "command": command_of(proc)} for pid, proc in sorted(again.items())]
    if purge and not survivors:
        shutil.rmtree(base, ignore_errors=True)
    elif state is not None:
        state.pids = {}
        state.save(base)
    return DownResult(cancelled, stopped, survivors, purged=purge and not survivors, found=found)


def _stop_groups(names: list[str]) -> list[list[str]]:
    """The daemons of testbed.json (in start order) as groups to stop one after the other: first everything
    started after slurmctld (the slurmd, the power daemon, slurmrestd) at once, then the rest one by one, in
    reverse start order."""
    if "slurmctld" not in names:
        return [[name] for name in reversed(names)]
    cut = names.index("slurmctld") + 1
    return [names[cut:][::-1], *[[name] for name in reversed(names[:cut])]]


def _ns_of_slurmd(pid: int) -> str | None:
    ns = mount_namespace(pid)
    return ns if ns and ns != mount_namespace(os.getpid()) else None


def _cancel_all(state: TestbedState, namespaces: set[str]) -> int:
    """scancel every job, then wait until no slurmstepd of the testbed is left (at most 15 s)."""
    env = state.env()
    jobs = run(["squeue", "-h", "-o", "%i"], env=env).stdout.split()
    if jobs:
        run(["scancel", "--full", *jobs], env=env)

    def steps_gone() -> bool:
        return not any(
            "slurmstepd" in " ".join(p.info.get("cmdline") or []) for p in processes_of(Path(state.base), namespaces)
        )

    with contextlib.suppress(TestbedError):  # the daemons' stop below kills what is left
        wait_until(steps_gone, 15, "job steps to end", None)
    return len(jobs)


__all__ = ["CLUSTER", "DownResult", "UpResult", "down", "running_state", "up"]
