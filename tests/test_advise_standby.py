"""Only one advisor acts on a state file (``advise.lock``): a second one waits as a standby, acts on nothing, and
takes over when the first stops, even by ``kill -9``; ``--once`` refuses while another advisor is active.

In memory with the fake cluster of test_advise_loop.py, then as real processes against fake Slurm tools that
answer with the recorded 22.05 answers and log which process called them (no Slurm needed)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from test_advise_loop import _cluster_with_history, _config
from wattsched.advise.lock import AdvisorLock, lock_path, stand_by
from wattsched.advise.loop import Advisor
from wattsched.advise.store import AdvisorStore

RECORDED = REPO_ROOT / "tests" / "data" / "slurm-22.05"


# ----------------------------------------------------------------------------------------- in memory
def test_a_standby_acts_on_nothing_and_takes_over_when_the_active_advisor_stops(tmp_path: Path) -> None:
    cluster = _cluster_with_history()
    cfg_active = _config(tmp_path, status_file=tmp_path / "active.json")
    cfg_standby = _config(tmp_path, status_file=tmp_path / "standby.json")
    first = AdvisorLock(cfg_active.state)
    assert first.try_acquire()
    store = AdvisorStore(cfg_active.state)
    active = Advisor(cfg_active, cluster, store)
    active.cycle()
    lines: list[str] = []
    polls: list[float] = []

    def sleep(seconds: float) -> bool:
        """The standby's wait: meanwhile the active advisor cycles on, and stops (lock and store let go) after
        three of its polls, as a killed process would."""
        polls.append(seconds)
        status = json.loads((tmp_path / "standby.json").read_text())
        assert status["role"] == "standby" and status["holder_pid"] == os.getpid()
        assert status["state"] == str(cfg_standby.state)
        active.cycle()
        if len(polls) == 3:
            store.close()
            first.release()
        return False

    second = AdvisorLock(cfg_standby.state)
    assert not second.try_acquire() and second.holder() == os.getpid()
    assert stand_by(second, sleep, status_file=cfg_standby.status_file, mode=cfg_standby.mode, on_line=lines.append)
    assert second.held and len(polls) == 3
    assert lines == [f"standby: {cfg_standby.state} is held by pid {os.getpid()}; taking over when it stops"]
    # the standby observed nothing and recorded nothing: every observation and cycle so far is the active one's
    assert len(cluster.observed_since) == active.cycles == 4
    with AdvisorStore(cfg_standby.state) as taken:
        assert taken.frame("cycles").height == 4
        result = Advisor(cfg_standby, cluster, taken).cycle()
        assert result.ok and taken.frame("cycles").height == 5
    status = json.loads((tmp_path / "standby.json").read_text())
    assert status["role"] == "active" and status["pid"] == os.getpid() and status["cycle"] == 5
    assert lock_path(cfg_standby.state).read_text() == f"{os.getpid()}\n"
    second.release()


def test_a_standby_leaves_the_active_advisors_status_file_alone_and_stops_when_told(tmp_path: Path) -> None:
    """Both given the same status file: it keeps saying what the active advisor does. A stop while on standby
    ends the wait without the lock."""
    cluster = _cluster_with_history()
    cfg = _config(tmp_path, status_file=tmp_path / "status.json")
    with AdvisorLock(cfg.state) as first:
        assert first.try_acquire()
        with AdvisorStore(cfg.state) as store:
            Advisor(cfg, cluster, store).cycle()
        before = (tmp_path / "status.json").read_text()
        second = AdvisorLock(cfg.state)
        stopped = stand_by(second, lambda seconds: True, status_file=cfg.status_file, mode=cfg.mode)
        assert not stopped and not second.held
        assert (tmp_path / "status.json").read_text() == before
        assert json.loads(before)["role"] == "active"


def test_a_lock_file_planted_as_a_symlink_or_a_hard_link_or_in_an_open_folder_is_refused(tmp_path: Path) -> None:
    """Refused, not followed: a lock file someone else controls could hold every advisor on standby (or, swapped
    in a folder without the sticky bit, let two advisors each hold a lock)."""
    from wattsched.core.safe_files import UnsafeFileError

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    state = tmp_path / "advisor.sqlite"
    lock_path(state).symlink_to(victim)
    with pytest.raises(UnsafeFileError, match=r"advisor lock file is a symbolic link: refused"):
        AdvisorLock(state).try_acquire()
    lock_path(state).unlink()
    os.link(victim, lock_path(state))
    with pytest.raises(UnsafeFileError, match=r"advisor lock file has 2 hard links: refused"):
        AdvisorLock(state).try_acquire()
    assert victim.read_text() == "precious\n"
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    with pytest.raises(UnsafeFileError, match=r"no sticky bit .*advisor lock file"):
        AdvisorLock(open_folder / "advisor.sqlite").try_acquire()
    assert list(open_folder.iterdir()) == []


# ----------------------------------------------------------------------------------------- as processes
def _fake_slurm(folder: Path, calls: Path) -> dict[str, str]:
    """scontrol, squeue and sacct answering with the recorded 22.05 answers; each call logged as ``PPID tool
    args`` (the caller's pid: an advisor runs them directly). Changes are accepted and change nothing."""
    folder.mkdir()
    body = f"""#!/bin/sh
echo "$PPID $(basename "$0") $*" >> {calls}
case "$(basename "$0") $1 $2" in
  "scontrol --version"*) cat {RECORDED}/sinfo-version.txt ;;
  "scontrol ping"*) echo "Slurmctld(primary) at vm is UP" ;;
  "scontrol show licenses"*) cat {RECORDED}/scontrol-show-license.txt ;;
  "scontrol show node"*) cat {RECORDED}/scontrol-show-node.txt ;;
  "scontrol show reservation"*) echo "No reservations in the system" ;;
  "squeue --json"*) cat {RECORDED}/squeue.json ;;
  "sacct --json"*) cat {RECORDED}/sacct.json ;;
esac
"""
    for tool in ("scontrol", "squeue", "sacct"):
        path = folder / tool
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return {
        **os.environ,
        "PATH": f"{folder}:{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO_ROOT / "src"),
        "SLURM_CONF": str(folder / "slurm.conf"),
    }


def _callers(calls: Path) -> dict[int, int]:
    """How many Slurm commands each process ran."""
    counts: dict[int, int] = {}
    if calls.exists():
        for line in calls.read_text().splitlines():
            pid = int(line.split()[0])
            counts[pid] = counts.get(pid, 0) + 1
    return counts


def _until(predicate, timeout: float, what: str) -> float:  # type: ignore[no-untyped-def]
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if predicate():
            return time.monotonic() - began
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout:g} s")


def _status(path: Path) -> dict[str, object]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def test_kill_9_of_the_active_advisor_lets_the_standby_take_over(tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"
    env = _fake_slurm(tmp_path / "bin", calls)
    state = tmp_path / "advisor.sqlite"

    def advise(name: str, *extra: str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "wattsched", "advise", "--state", str(state), "--interval", "1", "--cap",
                "1500W", "--status-file", str(tmp_path / f"{name}.json"), *extra]  # fmt: skip
        err = (tmp_path / f"{name}.err").open("w")
        return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)

    first = advise("first")
    procs = [first]
    try:
        _until(lambda: _status(tmp_path / "first.json").get("role") == "active", 30, "the first advisor's cycle")
        second = advise("second")
        procs.append(second)
        line = f"standby: {state} is held by pid {first.pid}; taking over when it stops"
        _until(lambda: line in (tmp_path / "second.err").read_text(), 30, "the second advisor's standby line")
        assert _status(tmp_path / "second.json") | {"time": 0} == {
            "role": "standby", "pid": second.pid, "holder_pid": first.pid, "state": str(state),
            "mode": "licenses", "time": 0,
        }  # fmt: skip
        # --once beside the active advisor: one line naming its pid, exit 2, no Slurm command
        once = subprocess.run(
            [sys.executable, "-m", "wattsched", "advise", "--state", str(state), "--cap", "1500W", "--once"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert once.returncode == 2 and once.stderr.count("\n") == 1, once.stderr
        assert f"held by the active advisor, pid {first.pid}" in once.stderr and "--once acts only" in once.stderr
        # the first advisor cycles once a second for three seconds; the standby runs no Slurm command meanwhile
        cycles_before = int(_status(tmp_path / "first.json")["cycle"])  # type: ignore[call-overload]
        time.sleep(3)
        assert int(_status(tmp_path / "first.json")["cycle"]) >= cycles_before + 2  # type: ignore[call-overload]
        callers = _callers(calls)
        assert callers.get(first.pid, 0) > 0 and second.pid not in callers and once.returncode == 2
        assert "update" in calls.read_text()  # the active one acts: it sets licenses
        with AdvisorStore(state) as store:
            cycles_of_first = store.frame("cycles").height
        assert second.poll() is None

        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        took = _until(lambda: _callers(calls).get(second.pid, 0) > 0, 10, "the standby's first Slurm command")
        _until(lambda: _status(tmp_path / "second.json").get("role") == "active", 10, "the standby's first cycle")
        assert took < 5, f"the standby took {took:.1f} s to take over"
        with AdvisorStore(state) as store:
            assert store.frame("cycles").height > cycles_of_first  # it carries on in the same store
        assert lock_path(state).read_text() == f"{second.pid}\n"

        # a standby stopped by SIGTERM exits as the active one does: one line, exit 0, nothing done
        third = advise("third")
        procs.append(third)
        _until(lambda: "standby:" in (tmp_path / "third.err").read_text(), 30, "the third advisor's standby line")
        third.send_signal(signal.SIGTERM)
        assert third.wait(timeout=30) == 0
        said = (tmp_path / "third.err").read_text().strip().splitlines()
        assert said[-1].startswith("advisor stopped on standby, 0 cycle(s)") and len(said) == 2, said
        assert third.pid not in _callers(calls)

        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=30) == 0
        assert "advisor stopped after" in (tmp_path / "second.err").read_text()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
