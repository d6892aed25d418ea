"""The testbed's daemons, one function each, in the start order of ``../shared/spec/slurm-testbed.md``: munge,
MariaDB, slurmdbd, slurmctld, one slurmd per node (each in its own mount namespace with a ``/sys`` overlay that
holds the node's synthetic ``pm_counters``), the power daemon, slurmrestd."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import sys
from pathlib import Path

from wattsched.testbed.config import ACCOUNT, CLUSTER, TEST_USERS, TestbedOptions, TestbedState
from wattsched.testbed.procs import TestbedError, run, spawn, tail, wait_until

SBIN = "/usr/sbin"


def _chown(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def start_munge(base: Path, env: dict[str, str]) -> int:
    """munged with its own key and socket under ``base/munge``, as the munge user (munged refuses root without
    --force); wait until a credential can be made."""
    d = base / "munge"
    d.mkdir(mode=0o755, exist_ok=True)
    _chown(d, "munge")
    key = d / "munge.key"
    if not key.exists():
        made = run([f"{SBIN}/mungekey", "-c", "-k", str(key)])
        if made.returncode != 0:
            raise TestbedError(f"mungekey -c -k {key} failed: {made.stderr.strip()}")
    _chown(key, "munge")
    key.chmod(0o600)
    sock = d / "munge.socket"
    argv = [f"{SBIN}/munged", "-F", f"--socket={sock}", f"--key-file={key}",
            f"--pid-file={d / 'munged.pid'}", f"--log-file={d / 'munged.log'}", f"--seed-file={d / 'munged.seed'}",
            "--num-threads=2"]  # fmt: skip
    pid = spawn(argv, d / "munged.out", base, env, user="munge")
    wait_until(lambda: run(["munge", "-n", f"--socket={sock}"]).returncode == 0, 10, "munged", d / "munged.log", pid)
    return pid


def start_mariadb(base: Path, port: int, env: dict[str, str]) -> int:
    """A private MariaDB: its datadir owned by mysql, TCP on 127.0.0.1:``port``, a ``slurm`` user for slurmdbd."""
    db = base / "db"
    db.mkdir(mode=0o750, exist_ok=True)
    _chown(db, "mysql")
    err = base / "log" / "mariadb.log"
    if not (db / "mysql").is_dir():
        made = run(
            ["mariadb-install-db", "--user=mysql", f"--datadir={db}", "--auth-root-authentication-method=socket",
             "--skip-test-db", "--skip-name-resolve"], timeout=120,
        )  # fmt: skip
        if made.returncode != 0:
            raise TestbedError(f"mariadb-install-db --datadir={db} failed: {(made.stderr or made.stdout).strip()}")
    sock = db / "mysql.sock"
    argv = ["mariadbd", "--no-defaults", "--user=mysql", f"--datadir={db}", f"--socket={sock}", f"--port={port}",
            "--bind-address=127.0.0.1", f"--pid-file={db / 'mysql.pid'}", f"--log-error={err}",
            "--innodb-buffer-pool-size=64M", "--skip-log-bin", "--skip-name-resolve"]  # fmt: skip
    pid = spawn([shutil.which("mariadbd") or f"{SBIN}/mariadbd", *argv[1:]], base / "log" / "mariadbd.out", base, env)
    sql = (
        "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'testbed'; "
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
    )
    wait_until(
        lambda: run(["mariadb", f"--socket={sock}", "-u", "root", "-e", sql]).returncode == 0, 30, "mariadbd", err, pid
    )
    return pid


def read_energy(counters: Path, node: str) -> int:
    """The energy a node's counter holds now (0 when unreadable)."""
    try:
        return int((counters / node / "cray" / "pm_counters" / "energy").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def write_counters(counters: Path, node: str, watts: int, joules: int) -> None:
    """Write a node's ``pm_counters`` files in place, as fixed-width integers: the file never reads empty (no
    truncation) and never shows a shorter number's leftover digits (slurmd parses the leading integer)."""
    d = counters / node / "cray" / "pm_counters"
    for name, value, unit in (("power", watts, "W"), ("energy", joules, "J")):
        path = d / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, f"{value:>18d} {unit}\n".encode(), 0)
        finally:
            os.close(fd)


def start_slurmd(opts: TestbedOptions, state: TestbedState, node: str, env: dict[str, str]) -> int:
    """One slurmd for ``node`` in a private mount namespace whose ``/sys`` is an overlay with the node's
    ``cray/pm_counters``. /sys/fs/cgroup is bind-mounted aside first and moved back over the overlay: the overlay
    alone hides the cgroup mounts and slurmd exits."""
    base = opts.base
    upper = Path(state.counters) / node
    work = base / "overlay-work" / node
    aside = base / "overlay-cgroup" / node
    for d in (upper / "cray" / "pm_counters", work, aside, base / "spool" / node):
        d.mkdir(parents=True, exist_ok=True)
    # Quirk: pm_counters reads the energy once when slurmd starts and, if it is 0, reports no power ever after
    # (CurrentWatts=n/s): the counter starts at 1 J.
    write_counters(Path(state.counters), node, opts.idle_watts, 1)
    script = (
        "set -e; "
        f"mount --rbind /sys/fs/cgroup '{aside}'; "
        f"mount -t overlay overlay -o lowerdir=/sys,upperdir='{upper}',workdir='{work}' /sys; "
        f"mount --move '{aside}' /sys/fs/cgroup; "
        f"exec {SBIN}/slurmd -D -N {node} -f '{state.slurm_conf}'"
    )
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", script]
    return spawn(argv, base / "log" / f"slurmd-{node}.out", base, env)


def start_power_daemon(base: Path, env: dict[str, str]) -> int:
    """The synthetic power daemon (wattsched.testbed.power) as a background process of this interpreter."""
    src = str(Path(__file__).resolve().parents[2])  # the wattsched sources, for a PYTHONPATH=src run
    pyenv = {**env, "PYTHONPATH": os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)}
    argv = [sys.executable, "-m", "wattsched.testbed.power", str(base)]
    return spawn(argv, base / "log" / "power.log", base, pyenv)


def ensure_users() -> list[str]:
    """Create the test users when missing (``useradd``, no home folder); return the ones created."""
    created = []
    for user in TEST_USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            made = run(["useradd", "-M", "-s", "/bin/sh", user])
            if made.returncode != 0:
                raise TestbedError(f"useradd {user} failed: {made.stderr.strip()}") from None
            created.append(user)
    return created


def invoking_users() -> list[str]:
    """root, the user behind sudo (if any) and the test users: the ones given a Slurm association."""
    users = ["root", *TEST_USERS]
    sudo = os.environ.get("SUDO_USER")
    if sudo and sudo not in users:
        users.append(sudo)
    return users


def sacctmgr(env: dict[str, str], *args: str, log: Path) -> None:
    """``sacctmgr -i ARGS``; 'Nothing new added' counts as done (idempotent)."""
    done = run(["sacctmgr", "-i", *args], env=env)
    text = (done.stdout + done.stderr).strip()
    if done.returncode != 0 and "nothing new" not in text.lower() and "already exists" not in text.lower():
        raise TestbedError(f"sacctmgr {' '.join(args)} failed: {text or tail(log)}")


def setup_accounting(opts: TestbedOptions, env: dict[str, str], dbd_pid: int) -> None:
    """The cluster, the remote license (``--remote-license``), the account and the users' associations."""
    log = opts.base / "log" / "slurmdbd.log"
    last: list[str] = [""]

    def added() -> bool:
        done = run(["sacctmgr", "-i", "add", "cluster", CLUSTER], env=env)
        last[0] = (done.stdout + done.stderr).strip().replace("\n", " | ")
        return done.returncode == 0

    try:
        wait_until(added, 30, "slurmdbd (sacctmgr add cluster)", log, dbd_pid)
    except TestbedError as exc:
        raise TestbedError(f"{exc}; sacctmgr said: {last[0]}") from None
    if opts.remote_license:
        sacctmgr(env, "add", "resource", "name=power", f"server={CLUSTER}", f"count={opts.power_total}",
                 "type=license", f"cluster={CLUSTER}", "percentallowed=100", log=log)  # fmt: skip
    sacctmgr(env, "add", "account", ACCOUNT, f"cluster={CLUSTER}", "description=testbed", "organization=testbed",
             log=log)  # fmt: skip
    sacctmgr(env, "add", "user", ",".join(invoking_users()), f"account={ACCOUNT}", f"cluster={CLUSTER}", log=log)


def start_rest(opts: TestbedOptions, state: TestbedState, env: dict[str, str]) -> int:
    """slurmrestd with JWT on 127.0.0.1:port (as root: SLURMRESTD_SECURITY=disable_user_check)."""
    port = state.ports["slurmrestd"]
    renv = {**env, "SLURM_JWT": "daemon", "SLURMRESTD_SECURITY": "disable_user_check"}
    argv = [f"{SBIN}/slurmrestd", "-a", "rest_auth/jwt", f"127.0.0.1:{port}"]
    pid = spawn(argv, opts.base / "log" / "slurmrestd.log", opts.base, renv)
    state.rest_url = f"http://127.0.0.1:{port}"
    return pid


def new_jwt_key(base: Path) -> Path:
    """A random HS256 key for auth/jwt, mode 600."""
    key = base / "jwt.key"
    key.write_bytes(secrets.token_bytes(32))
    key.chmod(0o600)
    return key
