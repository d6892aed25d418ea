"""``wattsched advise status`` read from the status file: the summary rows, each pending job's reason, a standby,
and one-line errors for a missing or foreign file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_advise_loop import FakeCluster, _queued
from wattsched.advise.config import load_config
from wattsched.advise.loop import Advisor
from wattsched.advise.status import StatusError, read_status
from wattsched.advise.store import AdvisorStore


def test_status_says_why_each_pending_job_waits(tmp_path: Path) -> None:
    cluster = FakeCluster(total=1000)
    cluster.license = cluster.license.__class__("power", 1000, 900, remote=False)
    cluster.queue = {1: _queued(1, "alice", lic=400)}
    status_file = tmp_path / "status.json"
    cfg = load_config(
        None, cap=1400, state=tmp_path / "a.sqlite", status_file=status_file, power__max_watts_per_node=500
    )
    with AdvisorStore(cfg.state) as store:
        Advisor(cfg, cluster, store, clock=lambda: cluster.now).cycle()
    status = read_status(status_file)
    rows = dict(status.summary())
    assert rows["advisor"].startswith("active") and rows["cap"] == "1,400 W" and rows["budget for jobs"] == "1,000 W"
    assert rows["measured power"] == "400 W" and "OVER THE CAP" not in rows
    (job,) = status.jobs()
    assert job["job_id"] == 1 and job["license"] == 400
    assert job["reason"] == "needs 400 W, 100 W free under the 1,400 W cap"


def test_status_of_a_standby_and_bad_files(tmp_path: Path) -> None:
    standby = tmp_path / "standby.json"
    standby.write_text(json.dumps({"role": "standby", "pid": 7, "holder_pid": 5, "state": "/x.sqlite"}))
    assert dict(read_status(standby).summary())["waits for"] == "pid 5 on /x.sqlite"
    with pytest.raises(StatusError, match="no status file"):
        read_status(tmp_path / "missing.json")
    foreign = tmp_path / "foreign.json"
    foreign.write_text("[1, 2]")
    with pytest.raises(StatusError, match="not an advisor status file"):
        read_status(foreign)
    (tmp_path / "deep.json").write_text("[" * 100_000)
    with pytest.raises(StatusError, match="not JSON"):
        read_status(tmp_path / "deep.json")
