"""The advisor's SQLite state: dedup of repeated sacct answers, the cursor in the same transaction, and a real
``kill -9`` of a writing process followed by a restart that loses and double-counts nothing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wattsched.advise.records import Action, FinishedJob
from wattsched.advise.store import SCHEMA_VERSION, AdvisorStore, StoreError, job_watts

SRC = Path(__file__).resolve().parents[1] / "src"


def _job(i: int, *, energy: float | None = 1.2e6, start: float | None = None) -> FinishedJob:
    s = 1000.0 + i if start is None else start
    return FinishedJob(i, "COMPLETED", f"u{i % 3}", "acct", "sim", 2, s - 10, s, s + 600, energy, None)


def test_record_dedups_and_advances_cursor(tmp_path: Path) -> None:
    with AdvisorStore(tmp_path / "s.sqlite") as store:
        assert store.cursor() is None
        assert store.record_finished([_job(1), _job(2)], idle_watts=100.0) == 2
        assert store.record_finished([_job(2), _job(3)], idle_watts=100.0) == 1  # sacct repeats job 2
        assert store.cursor() == 1603.0
        assert store.record_finished([_job(1)], idle_watts=100.0) == 0
        assert store.cursor() == 1603.0  # an older repeat never moves the cursor back
        frame = store.history_frame()
        assert frame["job_id"].to_list() == [1, 2, 3]
        assert frame["watts_gross"][0] == pytest.approx(1.2e6 / 600 / 2)
        assert frame["watts_net"][0] == pytest.approx(1000.0 - 100.0)


def test_unusable_jobs_are_kept_but_flagged(tmp_path: Path) -> None:
    with AdvisorStore(tmp_path / "s.sqlite") as store:
        zero = FinishedJob(7, "FAILED", "u", "a", "n", 1, 0.0, 50.0, 50.0, 10.0, None)
        store.record_finished([_job(1, energy=None), zero, _job(2)], idle_watts=None)
        frame = store.history_frame()
        flags = dict(zip(frame["job_id"].to_list(), frame["usable"].to_list(), strict=True))
        assert flags == {1: False, 2: True, 7: False}
        assert job_watts(zero, None) == (None, None)
        # idle measured later: the net power of jobs recorded before follows it
        assert frame.filter(job_id=2)["watts_net"][0] is None
        store.set_idle_watts(50.0)
        assert store.idle_watts() == 50.0
        assert store.history_frame().filter(job_id=2)["watts_net"][0] == pytest.approx(1000.0 - 50.0)


def test_applied_audit_cycles(tmp_path: Path) -> None:
    with AdvisorStore(tmp_path / "s.sqlite") as store:
        store.set_applied(5, 900, 10.0)
        store.set_applied(6, 300, 10.0)
        store.set_applied(5, 800, 20.0)
        assert store.applied_licenses() == {5: 800, 6: 300}
        store.forget([6])
        assert store.applied_licenses() == {5: 800}
        cycle = store.record_cycle(
            20.0, mode="licenses", cap=1500.0, budget=1100, predicted_running=700.0, measured_power=1050.0,
            n_pending=3, n_running=2, delayed=[4], predicted_power=1100.0,
        )  # fmt: skip
        actions = [Action("set_license", 5, 800, "lower", prediction_watts=760.0, previous=900)]
        store.audit(actions, cycle=cycle, mode="licenses", applied=True, t=20.0)
        store.audit(actions, cycle=cycle, mode="licenses", applied=False, error="scontrol failed", t=20.0)
        audit = store.frame("audit")
        assert audit["applied"].to_list() == [1, 0] and audit["error"].to_list() == [None, "scontrol failed"]
        assert audit["previous"].to_list() == [900, 900] and audit["cycle"].to_list() == [cycle, cycle]
        cycles = store.frame("cycles")
        assert cycles["budget"].to_list() == [1100] and cycles["delayed"].to_list() == ["[4]"]


def test_wal_mode_and_version(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    AdvisorStore(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer than this wattsched"):
        AdvisorStore(path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="not a usable advisor state file"):
        AdvisorStore(junk)


_WRITER = textwrap.dedent(
    """
    import sys
    from wattsched.advise.records import FinishedJob
    from wattsched.advise.store import AdvisorStore

    store = AdvisorStore(sys.argv[1])
    batch = 200
    for b in range(10_000):
        # each answer repeats the previous batch (sacct's overlap) and brings a new one
        ids = range(max(b - 1, 0) * batch, (b + 1) * batch)
        jobs = [FinishedJob(i, "COMPLETED", "u", "a", "n", 1, i, i + 1.0, i + 2.0, 100.0, None) for i in ids]
        store.record_finished(jobs, idle_watts=10.0)
        print(b, flush=True)
    """
)


def test_kill_9_mid_write_loses_and_double_counts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    for _ in range(5):  # a few committed answers, then kill it while it writes the next one
        assert proc.stdout.readline()
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    with AdvisorStore(path) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        frame = store.history_frame()
        n = frame.height
        assert n > 0 and n % 200 == 0  # whole answers only: the one cut short left no trace
        assert frame["job_id"].to_list() == list(range(n))
        assert store.cursor() == float(n - 1) + 2.0  # the cursor moved with exactly those jobs
        # the restarted advisor asks again from the cursor: the repeats are dropped, the rest recorded once
        again = [
            FinishedJob(i, "COMPLETED", "u", "a", "n", 1, i, i + 1.0, i + 2.0, 100.0, None) for i in range(n + 300)
        ]
        assert store.record_finished(again, idle_watts=10.0) == 300
        assert store.history_frame().height == n + 300
