"""The reconcile loop (``advise.loop``) on an in-memory cluster: idempotence, no action on errors, back-off,
restart safety, shadow mode, status file and metrics. The real cluster tests are in test_advise_cluster.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from wattsched.advise.config import AdvisorConfig, load_config
from wattsched.advise.loop import MAX_BACKOFF, Advisor, Metrics
from wattsched.advise.records import (
    Action,
    FinishedJob,
    LicenseState,
    NodePower,
    Observation,
    QueuedJob,
    SlurmAnswerError,
    SlurmUnavailable,
)
from wattsched.advise.store import AdvisorStore


def _queued(job_id: int, user: str, *, lic: int | None = None, nodes: int = 1) -> QueuedJob:
    return QueuedJob(
        job_id=job_id,
        state="PENDING",
        user=user,
        account="acct",
        name="job",
        partition="batch",
        nodes=nodes,
        submit_time=1000.0 + job_id,
        start_time=None,
        time_limit=3600.0,
        license_watts=lic,
        held=False,
        reason="Licenses",
    )


def _finished(job_id: int, user: str, watts_per_node: float, *, end: float, nodes: int = 1) -> FinishedJob:
    return FinishedJob(
        job_id=job_id,
        state="COMPLETED",
        user=user,
        account="acct",
        name="job",
        nodes=nodes,
        submit_time=end - 200,
        start_time=end - 100,
        end_time=end,
        energy_joules=watts_per_node * nodes * 100,
        license_watts=None,
    )


class FakeCluster:
    """A cluster in memory that applies licenses like slurmctld would, and can fail on demand."""

    def __init__(self, nodes: int = 4, idle: float = 100.0, total: int = 2000) -> None:
        self.queue: dict[int, QueuedJob] = {}
        self.finished: list[FinishedJob] = []
        self.nodes = tuple(NodePower(f"n{i}", "IDLE", idle) for i in range(1, nodes + 1))
        self.license = LicenseState("power", total, 0, remote=False)
        self.fail: Exception | None = None
        self.applied: list[Action] = []
        self.now = 5000.0
        self.observed_since: list[float | None] = []

    def probe(self) -> str:
        return "22.05.8"

    def observe(self, since: float | None) -> Observation:
        self.observed_since.append(since)
        if self.fail is not None:
            raise self.fail
        done = tuple(j for j in self.finished if since is None or j.end_time >= since)
        return Observation(self.now, tuple(self.queue.values()), done, self.nodes, self.license, "22.05.8")

    def apply(self, action: Action) -> None:
        if self.fail is not None:
            raise self.fail
        self.applied.append(action)
        if action.kind == "set_license" and action.job_id is not None:
            self.queue[action.job_id] = replace(self.queue[action.job_id], license_watts=action.value)
        elif action.kind == "set_budget" and action.value is not None:
            self.license = replace(self.license, total=action.value)
        elif action.kind == "set_comment" and action.job_id is not None:
            self.queue[action.job_id] = replace(self.queue[action.job_id], admin_comment=action.text or "")
        elif action.kind in ("hold", "release") and action.job_id is not None:
            held = action.kind == "hold"
            reason = "JobHeldAdmin" if held else "Licenses"
            self.queue[action.job_id] = replace(self.queue[action.job_id], held=held, reason=reason)
        elif action.kind in ("suspend", "resume") and action.job_id is not None:
            state = "SUSPENDED" if action.kind == "suspend" else "RUNNING"
            self.queue[action.job_id] = replace(self.queue[action.job_id], state=state)
        elif action.kind == "requeue" and action.job_id is not None:
            job = self.queue[action.job_id]
            self.queue[action.job_id] = replace(job, state="PENDING", start_time=None, node_names=())


def _config(tmp_path: Path, **kw: Any) -> AdvisorConfig:
    base: dict[str, Any] = {
        "cap": "1400W",
        "state": tmp_path / "advisor.sqlite",
        "power__max_watts_per_node": 500,
        "interval": 5,
    }
    return load_config(None, **(base | kw))


def _cluster_with_history() -> FakeCluster:
    cluster = FakeCluster()
    for k in range(3):
        cluster.finished.append(_finished(10 + k, "alice", 400.0, end=4000.0 + k))
        cluster.finished.append(_finished(20 + k, "bob", 200.0, end=4100.0 + k))
    cluster.queue = {1: _queued(1, "alice", lic=400), 2: _queued(2, "bob", lic=400), 3: _queued(3, "carol")}
    return cluster


def test_a_cycle_sizes_licenses_and_the_next_cycle_changes_nothing(tmp_path: Path) -> None:
    cluster = _cluster_with_history()
    cfg = _config(tmp_path)
    with AdvisorStore(cfg.state) as store:
        advisor = Advisor(cfg, cluster, store)
        first = advisor.cycle()
        assert first.ok and first.error is None and first.new_history == 6
        licenses = {a.job_id: a.value for a in cluster.applied if a.kind == "set_license"}
        # net of the 100 W idle: alice ≈ 300 W, bob ≈ 100 W per node (plus the quantile's and margin's share)
        assert licenses[1] is not None and 300 <= licenses[1] <= 400
        assert licenses[2] is not None and 100 <= licenses[2] <= 150
        assert licenses[3] == 400  # no history: the worst case, 500 − 100
        assert [a.value for a in cluster.applied if a.kind == "set_budget"] == [1000]  # 1400 − 4 × 100
        count = len(cluster.applied)
        second = advisor.cycle()
        assert second.ok and second.actions == [] and len(cluster.applied) == count
        assert second.new_history == 0  # sacct repeats the jobs at the cursor: none counted twice
        audit = store.frame("audit")
        assert audit.filter(audit["applied"] == 1).height == count


def test_no_action_when_slurm_does_not_answer_and_the_loop_backs_off(tmp_path: Path) -> None:
    cluster = _cluster_with_history()
    cluster.fail = SlurmUnavailable("squeue --json: timed out after 10 s")
    cfg = _config(tmp_path)
    waits: list[float] = []

    def sleep(seconds: float) -> bool:
        waits.append(seconds)
        return len(waits) >= 9

    with AdvisorStore(cfg.state) as store:
        result = Advisor(cfg, cluster, store).run(sleep)
        assert result.error is not None and "timed out" in result.error
        assert cluster.applied == []
        assert waits[0] == pytest.approx(10, abs=0.5) and waits[1] == pytest.approx(20, abs=0.5)
        assert max(waits) <= MAX_BACKOFF and waits[-1] == pytest.approx(MAX_BACKOFF, abs=0.5)
        errors = store.frame("audit")["error"].to_list()
        assert len(errors) == 9 and all("timed out" in e for e in errors)
        cluster.fail = None
        waits.clear()
        Advisor(cfg, cluster, store).run(lambda s: waits.append(s) or True)
        assert waits == [pytest.approx(5, abs=0.5)]  # back to the interval once Slurm answers
        assert cluster.applied


def test_an_untrusted_answer_leads_to_no_action(tmp_path: Path) -> None:
    cluster = _cluster_with_history()
    cluster.fail = SlurmAnswerError("squeue --json", "job 7", "licenses", "'power:x' is not a count")
    cfg = _config(tmp_path)
    with AdvisorStore(cfg.state) as store:
        result = Advisor(cfg, cluster, store).cycle()
    assert not result.ok and result.actions == [] and cluster.applied == []
    assert result.error == "squeue --json: job 7, field licenses: 'power:x' is not a count"


def test_a_restarted_advisor_resumes_from_the_store(tmp_path: Path) -> None:
    cluster = _cluster_with_history()
    cfg = _config(tmp_path)
    with AdvisorStore(cfg.state) as store:
        Advisor(cfg, cluster, store).cycle()
        cursor = store.cursor()
    assert cursor == 4102.0
    applied = len(cluster.applied)
    cluster.finished.append(_finished(30, "carol", 150.0, end=4200.0))
    with AdvisorStore(cfg.state) as store:  # a new process: everything it knows comes from the store
        result = Advisor(cfg, cluster, store).cycle()
        assert cluster.observed_since[-1] == cursor
        assert result.new_history == 1 and store.history_frame().height == 7
        carol = [a for a in cluster.applied[applied:] if a.job_id == 3]
        assert carol and carol[0].value is not None and carol[0].value < 400  # learned: lowered from the worst case


def test_shadow_mode_changes_nothing_and_writes_every_action(tmp_path: Path) -> None:
    cluster = _cluster_with_history()
    cfg = _config(tmp_path, mode="shadow", status_file=tmp_path / "status.json")
    log = tmp_path / "actions.jsonl"
    with AdvisorStore(cfg.state) as store:
        result = Advisor(cfg, cluster, store, actions_log=log).cycle()
    assert cluster.applied == [] and result.actions
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == len(result.actions) and all(not r["applied"] and r["mode"] == "shadow" for r in rows)
    assert {r["job_id"] for r in rows if r["kind"] == "set_license"} == {1, 2, 3}
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["mode"] == "shadow" and status["cap_watts"] == 1400 and status["pending"] == 3


def test_metrics_expose_the_last_cycle(tmp_path: Path) -> None:
    cluster = _cluster_with_history()
    cfg = _config(tmp_path)
    metrics = Metrics()
    with AdvisorStore(cfg.state) as store:
        Advisor(cfg, cluster, store, on_cycle=metrics.update).cycle()
    text = metrics.text()
    assert "wattsched_advisor_cap_watts 1400.0" in text
    assert "wattsched_advisor_measured_watts 400.0" in text
    assert "wattsched_advisor_pending_jobs 3.0" in text


def test_a_node_just_released_does_not_set_the_idle_power(tmp_path: Path) -> None:
    """A node its job has just left still reports the job's power: it counts only once seen idle 3 cycles."""
    cluster = _cluster_with_history()
    cfg = _config(tmp_path)
    with AdvisorStore(cfg.state) as store:
        advisor = Advisor(cfg, cluster, store)
        assert advisor.cycle().budget == 1000  # 1400 − 4 × 100, measured on the idle cluster
        idle_n1 = cluster.nodes[0]
        busy = tuple(replace(n, state="ALLOCATED", current_watts=450.0) for n in cluster.nodes[1:])
        job = replace(_queued(7, "alice", lic=1050, nodes=3), state="RUNNING", start_time=4000.0)
        cluster.queue[7] = replace(job, node_names=tuple(n.name for n in busy))  # what the busy nodes run
        cluster.nodes = (replace(idle_n1, state="ALLOCATED", current_watts=350.0), *busy)
        assert advisor.cycle().budget == 1000  # every node busy: the stored idle power
        cluster.nodes = (replace(idle_n1, current_watts=350.0), *busy)  # n1 released, still at its job's 350 W
        for _ in range(2):
            assert advisor.cycle().budget == 1000 and store.idle_watts() == 100.0
        cluster.nodes = (replace(idle_n1, current_watts=110.0), *busy)
        assert advisor.cycle().budget == 1400 - 4 * 110  # settled: three looks in a row


class WindowCluster(FakeCluster):
    """A cluster whose backend records the budgets the loop compiles into reservations."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduled: list[list[tuple[float, int]]] = []

    def schedule_budget(self, changes: list[tuple[float, int]]) -> None:
        self.scheduled.append(list(changes))


def test_cap_windows_on_a_local_license_are_compiled_into_reservations_every_cycle(tmp_path: Path) -> None:
    cluster = WindowCluster()
    cluster.finished = _cluster_with_history().finished
    start, end = cluster.now + 3600, cluster.now + 7200  # a 1,000 W window in an hour, 1,400 W around it
    cfg = _config(
        tmp_path,
        cap={"default": "1400W", "windows": [{"start": start, "end": end, "watts": "1000W"}]},
    )
    with AdvisorStore(cfg.state) as store:
        advisor = Advisor(cfg, cluster, store)
        first = advisor.cycle()
        second = advisor.cycle()
    assert cluster.scheduled[0] == [(cluster.now, 1000), (start, 600), (end, 1000)]  # budget = cap − 4 × 100
    assert cluster.scheduled[1] == cluster.scheduled[0]  # reconciled every cycle
    assert not any(a.kind == "set_budget" for a in cluster.applied)  # no constant reservation on top
    logged = [row for row in first.actions if row["kind"] == "set_budget"]
    assert len(logged) == 1 and logged[0]["details"]["changes"][1] == [start, 600]
    assert not [row for row in second.actions if row["kind"] == "set_budget"]  # logged when they change only


def test_predictions_are_recorded_when_they_change_not_every_cycle(tmp_path: Path) -> None:
    cluster = _cluster_with_history()
    cfg = _config(tmp_path)
    with AdvisorStore(cfg.state) as store:
        advisor = Advisor(cfg, cluster, store)
        for _ in range(5):
            advisor.cycle()
        assert store.frame("predictions").height == 3  # three pending jobs, each predicted once
    cluster.finished.append(_finished(40, "carol", 200.0, end=4300.0))
    cluster.now += 60
    with AdvisorStore(cfg.state) as store:  # a new process knows what was recorded
        Advisor(cfg, cluster, store).cycle()
        predictions = store.frame("predictions")
    assert predictions.height == 4 and predictions.filter(predictions["job_id"] == 3).height == 2  # carol learned
