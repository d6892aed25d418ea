"""Overshoots (``advise.overshoot`` and the loop): measured power above the cap is caught, counted, alerted on and,
with ``on_overshoot``, answered by suspending (or requeueing) the newest jobs, which are resumed when the power
allows; an observation that cannot be trusted acts on nothing; a running job drawing above its license raises its
key's estimate at once. On an in-memory cluster; the live test is in test_advise_cluster.py."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from test_advise_loop import FakeCluster, _queued
from wattsched.advise.config import load_config
from wattsched.advise.loop import Advisor, Metrics
from wattsched.advise.overshoot import Scope, job_draws, respond, resumes
from wattsched.advise.records import NodePower, Observation, QueuedJob
from wattsched.advise.store import AdvisorStore


def _running(job_id: int, user: str, nodes: tuple[str, ...], start: float, lic: int = 400) -> QueuedJob:
    job = _queued(job_id, user, lic=lic, nodes=len(nodes))
    return replace(job, state="RUNNING", start_time=start, node_names=nodes, reason="None")


def _power(cluster: FakeCluster, watts: dict[str, float]) -> None:
    """Set each node's CurrentWatts (the others idle at 100 W); busy nodes are ALLOCATED."""
    cluster.nodes = tuple(
        NodePower(n.name, "ALLOCATED" if n.name in watts else "IDLE", watts.get(n.name, 100.0)) for n in cluster.nodes
    )


def _cfg(tmp_path: Path, **kw: Any) -> Any:
    base: dict[str, Any] = {
        "cap": "1400W",
        "state": tmp_path / "a.sqlite",
        "power__max_watts_per_node": 500,
        "power__idle_watts_per_node": 100,
        "interval": 5,
    }
    return load_config(None, **(base | kw))


def _obs(queue: tuple[QueuedJob, ...], watts: dict[str, float]) -> Observation:
    nodes = tuple(NodePower(f"n{i}", "ALLOCATED" if f"n{i}" in watts else "IDLE", watts.get(f"n{i}", 100.0))
                  for i in range(1, 5))  # fmt: skip
    return Observation(100.0, queue, (), nodes, None)


def test_draws_come_from_exclusive_nodes_only() -> None:
    cfg = load_config(None, cap=1400, power__idle_watts_per_node=100)
    a = _running(1, "alice", ("n1", "n2"), 10.0)
    b = _running(2, "bob", ("n3",), 20.0)
    shared = _running(3, "carol", ("n3",), 30.0)
    assert job_draws(_obs((a, b), {"n1": 400, "n2": 300, "n3": 250}), cfg, 100.0) == {1: 500.0, 2: 150.0}
    assert job_draws(_obs((a, b, shared), {"n1": 400, "n2": 300, "n3": 250}), cfg, 100.0) == {1: 500.0}
    gross = load_config(None, cap=1400, power__definition="gross")
    assert job_draws(_obs((a,), {"n1": 400, "n2": 300}), gross, None) == {1: 700.0}


def test_respond_acts_on_the_newest_jobs_never_on_admins() -> None:
    cfg = load_config(None, cap=1400, on_overshoot="suspend", admin_users=["root", "ops"])
    jobs = (
        _running(1, "alice", ("n1",), 10.0),
        _running(2, "ops", ("n2",), 30.0),
        _running(3, "bob", ("n3",), 20.0),
        _running(4, "carol", ("n4",), 25.0),
    )
    obs = _obs(jobs, {})
    draws = {1: 300.0, 2: 300.0, 3: 300.0, 4: 300.0}
    over = Scope("cluster", 1400.0, 1900.0)
    acts = respond(obs, cfg, scope=over, draws=draws)  # 500 W over: two jobs of 300 W
    assert [(a.kind, a.job_id, a.value) for a in acts] == [("suspend", 4, 300), ("suspend", 3, 300)]
    assert respond(obs, cfg, scope=Scope("cluster", 1400.0, 1400.0), draws=draws) == []  # at the cap: not over
    none = load_config(None, cap=1400)
    assert respond(obs, none, scope=over, draws=draws) == []  # on_overshoot none: caught only
    assert [a.job_id for a in respond(obs, cfg, scope=over, draws=draws, spared=[4])] == [3, 1]
    rack = Scope("rack", 500.0, 700.0, frozenset({"n1", "n2"}))  # a domain: only its nodes' jobs (ops spared)
    assert [a.job_id for a in respond(obs, cfg, scope=rack, draws=draws)] == [1]
    suspended = (replace(jobs[2], state="SUSPENDED"), replace(jobs[3], state="SUSPENDED"))
    back = resumes(_obs(suspended, {}), [Scope("cluster", 1400.0, 900.0)], {3: 300.0, 4: 300.0})
    assert [(a.job_id, a.value) for a in back] == [(3, 300)]  # 900 + 300 fits, + 300 more would not
    assert resumes(_obs(suspended, {}), [Scope("cluster", 1400.0, 1200.0)], {3: 300.0, 4: 300.0}) == []
    tight = [Scope("cluster", 1400.0, 900.0), Scope("rack", 400.0, 300.0, frozenset({"n3"}))]
    assert resumes(_obs(suspended, {}), tight, {3: 300.0, 4: 300.0}) == []  # job 3's domain has no room


def test_the_loop_catches_counts_alerts_suspends_and_resumes(tmp_path: Path) -> None:
    """A user's jobs jump to 3× their history: the cycle sees 1,700 W against a 1,400 W cap, counts it, runs the
    alert, suspends the newest job; the next cycle is back under the cap; the job resumes when the power allows."""
    marker = tmp_path / "alerts.txt"
    script = tmp_path / "alert.sh"
    script.write_text(
        f'#!/bin/sh\necho "$WATTSCHED_OVERSHOOT $WATTSCHED_MEASURED_WATTS $WATTSCHED_CAP_WATTS" >> {marker}\n'
    )
    script.chmod(0o755)
    cluster = FakeCluster(total=1000)
    a = _running(1, "alice", ("n1",), 4000.0, lic=105)
    b = _running(2, "alice", ("n2",), 4500.0, lic=105)
    cluster.queue = {1: a, 2: b}
    _power(cluster, {"n1": 900.0, "n2": 800.0})  # 900 + 800 − 2 × 100 idle + 4 × 100 idle = 1,900 W
    cfg = _cfg(tmp_path, on_overshoot="suspend", alert_command=[str(script)])
    metrics = Metrics()
    with AdvisorStore(cfg.state) as store:
        advisor = Advisor(cfg, cluster, store, clock=lambda: cluster.now)
        first = advisor.cycle()
        metrics.update(first)
        assert first.over_cap and first.measured_watts == 1900.0 and first.over_cap_watts == 500.0
        suspended = [(a.job_id, a.value) for a in cluster.applied if a.kind == "suspend"]
        assert suspended == [(2, 700), (1, 800)][: len(suspended)] and suspended[0] == (2, 700)
        assert 'wattsched_over_cap{scope="cluster"} 1.0' in metrics.text()
        # the suspended job draws idle power now: 900 + 100 + 2 × 100 = 1,200 W; 700 W more would not fit
        _power(cluster, {"n1": 900.0})
        cluster.now += 5
        second = advisor.cycle()
        metrics.update(second)
        assert not second.over_cap and second.suspended == 1
        assert all(a.kind != "resume" for a in cluster.applied)
        assert 0 < second.over_cap_seconds_total <= 5  # half the interval before it was seen, half after
        text = metrics.text()
        assert 'wattsched_over_cap{scope="cluster"} 0.0' in text and "wattsched_over_cap_seconds_total" in text
        # alice's first job ends: 1,100 − 600 … the power allows the suspended job back
        del cluster.queue[1]
        _power(cluster, {})
        cluster.now += 5
        advisor.cycle()
        assert [a.job_id for a in cluster.applied if a.kind == "resume"] == [2]
        overshoots = store.frame("overshoots")
        assert overshoots.height == 1 and overshoots["end"][0] is not None and overshoots["peak"][0] == 1900.0
        audit = store.frame("audit")
        assert set(audit["kind"].to_list()) >= {"suspend", "resume"}
    deadline = time.time() + 10
    while (not marker.exists() or len(marker.read_text().splitlines()) < 2) and time.time() < deadline:
        time.sleep(0.05)
    assert marker.read_text().split("\n")[:2] == ["start 1900 1400", "end 1200 1400"]


def test_shadow_mode_reports_what_it_would_suspend(tmp_path: Path) -> None:
    cluster = FakeCluster(total=1000)
    cluster.queue = {2: _running(2, "alice", ("n2",), 4500.0, lic=105)}
    _power(cluster, {"n2": 1500.0})
    cfg = _cfg(tmp_path, on_overshoot="suspend", mode="shadow")
    with AdvisorStore(cfg.state) as store:
        result = Advisor(cfg, cluster, store, clock=lambda: cluster.now).cycle()
        assert result.over_cap and cluster.applied == []
        rows = [r for r in result.actions if r["kind"] == "suspend"]
        assert rows and not rows[0]["applied"]
        assert store.suspended_jobs() == {}  # nothing was suspended: nothing to resume


def test_an_untrusted_observation_acts_on_nothing_and_is_numbered(tmp_path: Path) -> None:
    cluster = FakeCluster(total=1000)
    cluster.queue = {1: _queued(1, "alice", lic=400)}
    cfg = _cfg(tmp_path)
    with AdvisorStore(cfg.state) as store:
        advisor = Advisor(cfg, cluster, store, clock=lambda: cluster.now)
        assert advisor.cycle().ok
        count = len(cluster.applied)
        cluster.nodes = tuple(replace(n, current_watts=0.0) for n in cluster.nodes)  # after a controller restart
        cluster.now += 5
        bad = advisor.cycle()
        assert not bad.ok and "every node reads 0 W" in (bad.error or "") and bad.cycle == 2
        assert len(cluster.applied) == count
        cluster.nodes = tuple(replace(n, current_watts=100.0 if i else None) for i, n in enumerate(cluster.nodes))
        cluster.now += 5
        lost = advisor.cycle()
        assert not lost.ok and "read none now" in (lost.error or "") and lost.cycle == 3
        cycles = store.frame("cycles")
        assert cycles["fresh"].to_list() == [1, 0, 0]


def test_a_job_drawing_above_its_license_raises_its_key_at_once(tmp_path: Path) -> None:
    cluster = FakeCluster(total=1000)
    for k in range(3):  # alice's history: 150 W above idle per node
        from test_advise_loop import _finished

        cluster.finished.append(_finished(10 + k, "alice", 250.0, end=4000.0 + k))
    cluster.queue = {1: _running(1, "alice", ("n1",), 4900.0, lic=160), 2: _queued(2, "alice", lic=160)}
    _power(cluster, {"n1": 450.0})  # it draws 350 W above idle: more than its 160 W license
    cfg = _cfg(tmp_path, learning__fall_jobs=1)
    notes: list[str] = []
    with AdvisorStore(cfg.state) as store:
        result = Advisor(cfg, cluster, store, clock=lambda: cluster.now, on_note=notes.append).cycle()
        assert result.over_license == [{"job_id": 1, "draws": 350, "license": 160}]
        assert any("above its 160 W license" in n for n in notes)
        raised = [a.value for a in cluster.applied if a.kind == "set_license" and a.job_id == 2]
        assert raised and raised[0] >= 350  # sized at what the key draws now, not its 150 W history
        assert store.running_frame()["job_id"].to_list() == [1]
        assert store.worst_watts() == 450.0


def test_alert_command_that_cannot_start_is_a_note(tmp_path: Path) -> None:
    cluster = FakeCluster(total=1000)
    cluster.queue = {2: _running(2, "alice", ("n2",), 4500.0)}
    _power(cluster, {"n2": 1500.0})
    notes: list[str] = []
    cfg = _cfg(tmp_path, alert_command=[str(tmp_path / "missing")])
    with AdvisorStore(cfg.state) as store:
        assert Advisor(cfg, cluster, store, on_note=notes.append).cycle().over_cap
    assert any("cannot start" in n for n in notes) and any("over the cap" in n for n in notes)
    assert os.path.exists(cfg.state)


def test_the_shadow_report_names_the_jobs_behind_every_over_cap_cycle(tmp_path: Path) -> None:
    """Issue 28: a shadow report with 5 of 9 cycles over the cap but no job in jobs.csv contradicted itself. Now
    each over-cap cycle names the jobs drawing above their license (and, with on_overshoot, those it would
    suspend)."""
    from wattsched.advise.shadow_report import shadow_report

    cluster = FakeCluster(total=1000)
    cluster.queue = {1: _running(1, "alice", ("n1",), 4000.0, lic=105), 2: _running(2, "bob", ("n2",), 4001.0)}
    cfg = _cfg(tmp_path, mode="shadow", on_overshoot="suspend")
    with AdvisorStore(cfg.state) as store:
        advisor = Advisor(cfg, cluster, store, clock=lambda: cluster.now)
        for watts in (300.0, 1000.0, 1100.0, 300.0):  # alice's job jumps above its 105 W license
            _power(cluster, {"n1": watts, "n2": 300.0})
            advisor.cycle()
            cluster.now += 5
        report = shadow_report(store)
    s = report.summary
    assert s["cycles_measured_over_cap"] == 2 and s["over_cap_explained"] == 2
    assert s["over_license"] == 1 and s["would_suspend"] == 1
    assert set(report.jobs["would"].to_list()) >= {"over_license", "suspend"}


def test_a_domain_over_its_cap_is_caught_and_answered_on_its_own_jobs(tmp_path: Path) -> None:
    """Two domains of two nodes: r1 = n[1-2] capped at 500 W, r2 = n[3-4] at 900 W. r1's job draws 700 W of
    node power (with its other node idle: 800 W measured in r1): r1 is over, the cluster (1,300 W of 1,400) is
    not; only r1's job is suspended, and the status names the domain."""
    cluster = FakeCluster(total=1000)
    cluster.queue = {1: _running(1, "alice", ("n1",), 4000.0), 2: _running(2, "bob", ("n3",), 4100.0)}
    _power(cluster, {"n1": 700.0, "n3": 400.0})
    domains = [{"name": "r1", "nodes": "n[1-2]", "watts": 500}, {"name": "r2", "nodes": "n[3-4]", "watts": 900}]
    cfg = _cfg(tmp_path, mode="gate", on_overshoot="suspend", domains=domains)
    metrics = Metrics()
    with AdvisorStore(cfg.state) as store:
        result = Advisor(cfg, cluster, store, clock=lambda: cluster.now).cycle()
        metrics.update(result)
        assert not result.over_cap and result.domains["r1"]["over_cap"] and not result.domains["r2"]["over_cap"]
        assert result.domains["r1"]["measured_watts"] == 800.0 and result.domains["r1"]["budget"] == 300
        assert [(a.kind, a.job_id) for a in cluster.applied if a.kind == "suspend"] == [("suspend", 1)]
        assert store.frame("overshoots")["scope"].to_list() == ["r1"]
    assert 'wattsched_over_cap{scope="r1"} 1.0' in metrics.text()
