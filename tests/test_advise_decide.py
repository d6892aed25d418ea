"""The decision rules of ``advise.decide`` (its module docstring), one test each, on synthetic records."""

from __future__ import annotations

from typing import Any

import pytest

from wattsched.advise.config import AdvisorConfig, AdvisorConfigError, load_config
from wattsched.advise.decide import budget_for, decide, license_for
from wattsched.advise.learn import Estimate
from wattsched.advise.records import LicenseState, NodePower, Observation, QueuedJob

NOW = 10_000.0


def _cfg(**kw: Any) -> AdvisorConfig:
    base: dict[str, Any] = {"cap": "2000W", "power__idle_watts_per_node": 100, "power__max_watts_per_node": 500}
    return load_config(None, **(base | kw))


def _job(job_id: int, state: str = "PENDING", nodes: int = 2, lic: int | None = None, **kw: Any) -> QueuedJob:
    fields: dict[str, Any] = {
        "user": "u",
        "account": "a",
        "name": "n",
        "partition": "p",
        "submit_time": float(job_id),
        "start_time": NOW - 100 if state == "RUNNING" else None,
        "time_limit": 3600.0,
        "held": False,
        "reason": "None" if state == "RUNNING" else "Priority",
        "node_names": (),
    }
    return QueuedJob(job_id, state, nodes=nodes, license_watts=lic, **(fields | kw))


def _obs(*jobs: QueuedJob, nodes: int = 8, total: int | None = 1200, watts: float | None = 100.0) -> Observation:
    node_list = tuple(NodePower(f"n{i}", "IDLE", watts) for i in range(nodes))
    lic = None if total is None else LicenseState("power", total, 0, remote=True)
    return Observation(NOW, tuple(jobs), (), node_list, lic)


def _est(w: float, has: bool = True) -> Estimate:
    return Estimate(w, has, "history:history:quantile" if has else "default:worst-case")


def _plan(obs: Observation, est: dict[int, Estimate], cfg: AdvisorConfig | None = None, **kw: Any) -> Any:
    args: dict[str, Any] = {"applied": {}, "idle_watts": None, "fresh": True, "now": NOW} | kw
    return decide(obs, est, cfg or _cfg(), **args)


def _licenses(plan: Any) -> dict[int, int]:
    return {a.job_id: a.value for a in plan.actions if a.kind == "set_license"}


def test_rule1_sizing_margin_worst_case_and_budget() -> None:
    cfg = _cfg()
    assert license_for(2, 200.0, cfg, budget=1200, idle_watts=100.0) == (420, None)  # ceil(2 × 200 × 1.05)
    value, note = license_for(2, 450.0, cfg, budget=1200, idle_watts=100.0)
    assert value == 800 and note is not None and "worst case" in note  # 2 × (500 − 100)
    value, note = license_for(4, 390.0, cfg, budget=1200, idle_watts=100.0)
    assert value == 1600 and note is not None and "more than the whole 1,200 W budget" in note  # 4 × 400
    assert license_for(2, float("inf"), _cfg(power__max_watts_per_node=None), budget=1200, idle_watts=100.0)[0] == 1200
    assert license_for(1, 0.0, cfg, budget=1200, idle_watts=100.0)[0] == 1  # never a zero license
    plan = _plan(_obs(_job(1), _job(2, nodes=4)), {1: _est(200.0), 2: _est(390.0)})
    assert _licenses(plan) == {1: 420}  # job 2 is never sized at the budget (it would run alone above the cap)
    hold = [a for a in plan.actions if a.job_id == 2]
    assert [a.kind for a in hold] == ["hold", "set_comment"] and hold[0].value == 1600
    reason = "needs 1,600 W, more than the whole 1,200 W budget under the 2,000 W cap: held until it fits"
    assert hold[1].text == f"wattsched:oversize power: {reason}"


def test_rule8_an_oversize_job_is_held_then_released_when_it_fits() -> None:
    marked = (
        "wattsched:default wattsched:oversize power: needs 1,600 W, more than the whole 1,200 W budget under the "
        "2,000 W cap: held until it fits"
    )
    held = _job(2, nodes=4, lic=1600, held=True, reason="JobHeldAdmin", admin_comment=marked)
    plan = _plan(_obs(held), {2: _est(390.0)})
    assert [a.kind for a in plan.actions] == []  # still too large: already held and marked, nothing to do
    plan = _plan(_obs(held), {2: _est(250.0)})  # learned lower: 4 × 250 × 1.05 = 1,050 W fits the 1,200 W budget
    assert [(a.kind, a.value) for a in plan.actions] == [
        ("set_license", 1050),
        ("set_comment", None),
        ("release", 1050),
    ]
    assert plan.actions[1].text == "wattsched:default"
    user_hold = _job(3, nodes=1, held=True, reason="JobHeldUser", admin_comment="wattsched:default")
    assert all(a.kind != "release" for a in _plan(_obs(user_hold), {3: _est(100.0)}).actions)  # never a user's hold


def test_why_a_job_waits_is_written_once_in_its_admin_comment() -> None:
    waiting = _job(1, nodes=2, lic=420, reason="Licenses", admin_comment="wattsched:default")
    obs = Observation(NOW, (waiting,), (), _obs().nodes, LicenseState("power", 1200, 1000, remote=True))
    plan = _plan(obs, {1: _est(200.0)})
    (comment,) = [a for a in plan.actions if a.kind == "set_comment"]
    assert comment.text == "wattsched:default power: needs 420 W, 200 W free under the 2,000 W cap"
    again = _job(1, nodes=2, lic=420, reason="Licenses", admin_comment=comment.text or "")
    obs2 = Observation(NOW, (again,), (), _obs().nodes, LicenseState("power", 1200, 990, remote=True))
    assert not [a for a in _plan(obs2, {1: _est(200.0)}).actions if a.kind == "set_comment"]  # 210 W: within 10 %
    started = _job(1, nodes=2, lic=420, reason="Priority", admin_comment=comment.text or "")
    (cleared,) = [a for a in _plan(_obs(started), {1: _est(200.0)}).actions if a.kind == "set_comment"]
    assert cleared.text == "wattsched:default"


def test_rule2_budget_net_gross_and_set_budget() -> None:
    obs = _obs(total=1000)
    assert budget_for(2000.0, obs, _cfg(), 100.0) == 1200  # 2000 − 8 × 100
    assert budget_for(2000.0, obs, _cfg(power__definition="gross"), 100.0) == 2000
    plan = _plan(obs, {})
    assert plan.budget == 1200
    [action] = plan.actions
    assert (action.kind, action.value, action.previous) == ("set_budget", 1200, 1000)
    assert _plan(_obs(total=1200), {}).actions == []  # already right: nothing
    # the idle power measured from idle nodes when neither configured nor stored
    measured = _plan(_obs(total=1200, watts=150.0), {}, _cfg(power__idle_watts_per_node=None))
    assert measured.budget == 2000 - 8 * 150
    unknown = _plan(_obs(total=1200, watts=None), {}, _cfg(power__idle_watts_per_node=None))
    assert unknown.budget is None and unknown.actions == [] and "idle power" in unknown.notes[0]


def test_rule2_budget_never_raised_on_stale_data() -> None:
    assert _plan(_obs(total=1000), {}, fresh=False).actions == []
    lowered = _plan(_obs(total=1500), {}, fresh=False).actions
    assert [(a.kind, a.value) for a in lowered] == [("set_budget", 1200)]


def test_rule3_running_jobs_never_touched() -> None:
    plan = _plan(_obs(_job(1, "RUNNING", lic=900), _job(2, lic=900)), {1: _est(100.0), 2: _est(100.0)})
    assert _licenses(plan) == {2: 210}
    assert plan.predicted_running == pytest.approx(200.0)  # 2 nodes × 100 W
    assert plan.predicted_power == pytest.approx(200.0 + 800.0)  # net: plus every node's idle


def test_rule4_only_differences() -> None:
    plan = _plan(_obs(_job(1, lic=420), _job(2, lic=400)), {1: _est(200.0), 2: _est(200.0)})
    assert _licenses(plan) == {2: 420}


def test_rule5_stale_never_lowers_but_raises() -> None:
    obs = _obs(_job(1, lic=900), _job(2, lic=100), _job(3))
    est = {1: _est(200.0), 2: _est(200.0), 3: _est(200.0)}
    assert _licenses(_plan(obs, est)) == {1: 420, 2: 420, 3: 420}
    stale = _plan(obs, est, fresh=False)
    assert _licenses(stale) == {2: 420, 3: 420}
    assert "stale data: not lowered" in next(r for r in stale.rows if r["job_id"] == 1)["note"]


def test_changed_outside_the_advisor_is_noted() -> None:
    plan = _plan(_obs(_job(1, lic=700)), {1: _est(200.0)}, applied={1: 420})
    assert "changed outside the advisor" in plan.rows[0]["note"] and _licenses(plan) == {1: 420}


def _held(job_id: int, nodes: int = 2, marker: str = "wattsched:gate") -> QueuedJob:
    return _job(job_id, nodes=nodes, held=True, reason="JobHeldAdmin", admin_comment=marker)


def test_rule6_gate_never_releases_an_admins_own_hold() -> None:
    plan = _plan(_obs(_held(2, marker=""), _held(3), total=None), {2: _est(10.0), 3: _est(10.0)}, _cfg(mode="gate"))
    assert [(a.kind, a.job_id) for a in plan.actions] == [("release", 3)]


def test_rule6_gate_releases_in_order_while_it_fits() -> None:
    cfg = _cfg(mode="gate")
    running = _job(1, "RUNNING", nodes=2)
    obs = _obs(running, _held(2), _held(3), _held(4), _held(5, nodes=1), total=None)
    est = {1: _est(200.0), 2: _est(200.0), 3: _est(200.0), 4: _est(200.0), 5: _est(10.0)}
    plan = _plan(obs, est, cfg)
    # budget 1200; running 400; each held job needs 420: job 2 fits (820), job 3 does not (1240): stop
    assert [(a.kind, a.job_id, a.value) for a in plan.actions if a.kind != "set_comment"] == [("release", 2, 420)]
    assert "does not fit" in plan.notes[-1]
    reasons = {a.job_id: a.text for a in plan.actions if a.kind == "set_comment"}
    assert reasons == {
        3: "wattsched:gate power: needs 420 W, 380 W free under the 2,000 W cap",
        4: "wattsched:gate power: needs 420 W; waits behind an earlier job (jobs start in submit order)",
        5: "wattsched:gate power: needs 11 W; waits behind an earlier job (jobs start in submit order)",
    }
    # a released job not yet started counts as committed
    obs2 = _obs(running, _job(2, lic=None), _held(3), total=None)
    assert [a.job_id for a in _plan(obs2, est, cfg).actions if a.kind == "release"] == []
    # fails closed on stale data
    assert _plan(obs, est, cfg, fresh=False).actions == []


def test_rule6_gate_a_job_larger_than_the_budget_does_not_block_the_queue() -> None:
    cfg = _cfg(mode="gate")
    plan = _plan(_obs(_held(2, nodes=4), _held(3), total=None), {2: _est(390.0), 3: _est(200.0)}, cfg)
    assert [(a.kind, a.job_id) for a in plan.actions if a.kind != "set_comment"] == [("release", 3)]  # 2 stays held
    assert {a.job_id: a.text for a in plan.actions if a.kind == "set_comment"}[2] == (
        "wattsched:gate wattsched:oversize power: needs 1,600 W, more than the whole 1,200 W budget under the "
        "2,000 W cap: held until it fits"
    )


def test_rule6_gate_fails_closed_without_idle_power() -> None:
    cfg = _cfg(mode="gate", power__idle_watts_per_node=None)
    obs = _obs(_held(2), total=None, watts=None)
    plan = _plan(obs, {2: _est(10.0)}, cfg)
    assert plan.actions == [] and "fails closed" in plan.notes[-1]
    assert [a.job_id for a in _plan(obs, {2: _est(10.0)}, _cfg(mode="gate")).actions] == [2]


def test_rule7_shadow_flags_and_would_delay_advance() -> None:
    cfg = _cfg(mode="shadow")
    started_before = _job(1, "RUNNING", nodes=4, start_time=NOW - 500)  # 4 × 250 = 1000 W
    started_now = _job(2, "RUNNING", nodes=2, start_time=NOW - 5)  # + 2 × 250 = 1500 W > 1200: would delay
    blocked = _job(3, nodes=1, lic=900, reason="Licenses")  # needs ceil(1 × 100 × 1.05) = 105 W
    est = {1: _est(250.0), 2: _est(250.0), 3: _est(100.0)}
    plan = _plan(_obs(started_before, started_now, blocked), est, cfg)
    assert plan.apply is False and _licenses(plan) == {3: 105}
    assert plan.delayed == [2]
    assert plan.advanced == []  # 1200 W budget, 1200 W predicted running: even 105 W does not fit
    light = {1: _est(100.0), 2: _est(100.0), 3: _est(100.0)}
    plan = _plan(_obs(started_before, started_now, blocked), light, cfg)
    assert plan.delayed == [] and plan.advanced == [3]
    assert next(r for r in plan.rows if r["job_id"] == 3)["would"] == "advance"


def test_domains_release_a_job_only_where_its_domain_has_room() -> None:
    """Two domains under the 2,000 W cluster cap (8 nodes of 100 W idle): r1 = n[0-3] at 800 W (400 W for jobs),
    r2 = n[4-7] at 1,000 W (600 W). A 2-node job needing 420 W fits only r2 and is released with an ExcNodeList
    that keeps it there; the next one fits nowhere and waits, with its reason."""
    domains = [{"name": "r1", "nodes": "n[0-3]", "watts": 800}, {"name": "r2", "nodes": "n[4-7]", "watts": 1000}]
    cfg = _cfg(mode="gate", domains=domains)
    plan = _plan(_obs(_held(2), _held(3), total=None), {2: _est(200.0), 3: _est(200.0)}, cfg)
    acts = [(a.kind, a.job_id, a.text) for a in plan.actions if a.kind != "set_comment"]
    assert acts == [("set_nodes", 2, "n[0-3]"), ("release", 2, None)]
    assert plan.domain_room == {"r1": 400.0, "r2": 600.0}
    (reason,) = [a.text for a in plan.actions if a.kind == "set_comment" and a.job_id == 3]
    assert reason == "wattsched:gate power: needs 420 W; no domain has room for it (r1 400 W, r2 180 W free)"
    # a running job on r2 counts there: 2 × 150 W on n4, n5 leaves r2 300 W, so job 2 goes to neither
    running = _job(1, "RUNNING", nodes=2, node_names=("n4", "n5"))
    plan = _plan(_obs(running, _held(2), total=None), {1: _est(150.0), 2: _est(200.0)}, cfg)
    assert [a.kind for a in plan.actions if a.kind != "set_comment"] == []
    # a job larger than any domain spans domains that each have room for their share
    big = _held(4, nodes=6)
    plan = _plan(_obs(big, total=None), {4: _est(50.0)}, cfg)  # 6 × 50 × 1.05 = 315 W; 4 nodes at most per domain
    assert [a.kind for a in plan.actions if a.kind != "set_comment"] == ["release"]  # both domains: no exclusion


def test_domains_are_refused_in_licenses_mode_and_must_not_overlap() -> None:
    with pytest.raises(AdvisorConfigError, match="enforced in gate mode"):
        _cfg(domains=[{"name": "r1", "nodes": "n[0-3]", "watts": 800}])
    with pytest.raises(AdvisorConfigError, match="node n3 is in both"):
        _cfg(
            mode="gate",
            domains=[{"name": "a", "nodes": "n[0-3]", "watts": 1}, {"name": "b", "nodes": "n[3-4]", "watts": 1}],
        )
