"""The shadow report read back from the store after shadow-mode cycles, and the advisor's figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.advise.config import load_config
from wattsched.advise.decide import decide
from wattsched.advise.learn import Estimate
from wattsched.advise.records import LicenseState, NodePower, Observation, QueuedJob
from wattsched.advise.replay import replay
from wattsched.advise.shadow_report import shadow_report, write_shadow_report
from wattsched.advise.store import AdvisorStore


def _job(job_id: int, state: str, nodes: int, start: float | None, lic: int | None, reason: str) -> QueuedJob:
    return QueuedJob(job_id, state, "u", "a", "n", "p", nodes, 0.0, start, 3600.0, lic, False, reason)


def _run_cycles(store: AdvisorStore) -> None:
    """Three shadow cycles on a 4-node cluster (idle 100 W, cap 1000 W: budget 600 W)."""
    cfg = load_config(None, cap=1000, mode="shadow", power__idle_watts_per_node=100, interval=15)
    est = {1: Estimate(150.0, True, "h"), 2: Estimate(150.0, True, "h"), 3: Estimate(50.0, True, "h")}
    queues = [
        (_job(1, "RUNNING", 2, 0.0, 400, "None"), _job(3, "PENDING", 1, None, 400, "Licenses")),
        (_job(1, "RUNNING", 2, 0.0, 400, "None"), _job(2, "RUNNING", 2, 20.0, 400, "None")),
        (_job(2, "RUNNING", 2, 20.0, 400, "None"),),
    ]
    measured = [950.0, 1050.0, 720.0]
    for i, (queue, watts) in enumerate(zip(queues, measured, strict=True)):
        now = 15.0 * (i + 1)
        nodes = tuple(NodePower(f"n{k}", "MIXED", watts / 4) for k in range(4))
        obs = Observation(now, queue, (), nodes, LicenseState("power", 600, 0, False))
        plan = decide(obs, est, cfg, applied={}, idle_watts=None, fresh=True, now=now)
        cycle = store.record_cycle(
            now, mode="shadow", cap=plan.cap, budget=plan.budget, predicted_running=plan.predicted_running,
            predicted_power=plan.predicted_power, measured_power=plan.measured_power,
            n_pending=1, n_running=len(queue), delayed=plan.delayed, advanced=plan.advanced,
        )  # fmt: skip
        store.audit(plan.actions, cycle=cycle, mode="shadow", applied=plan.apply, t=now)


def test_shadow_report_tables_and_summary(tmp_path: Path) -> None:
    with AdvisorStore(tmp_path / "s.sqlite") as store:
        _run_cycles(store)
    report = shadow_report(tmp_path / "s.sqlite")
    s = report.summary
    assert s["cycles"] == 3 and s["max_measured_watts"] == pytest.approx(1050.0)
    assert s["cycles_measured_over_cap"] == 1  # 1050 W > 1000 W
    assert s["cycles_predicted_over_cap"] == 0  # 2 × 2 × 150 + 400 idle = 1000 W: at the cap, not over it
    assert report.jobs.rows() == [(3, "advance", 15.0)]
    assert s["would_delay"] == 0 and s["would_advance"] == 1
    assert s["prediction_error_watts"]["mean"] == pytest.approx(((700 - 950) + (1000 - 1050) + (700 - 720)) / 3)
    assert report.actions["applied"].to_list() == [0, 0]
    assert report.actions["kind"].to_list() == ["set_license", "set_comment"]  # job 3 waits for power: its reason
    paths = write_shadow_report(report, tmp_path / "out")
    assert json.loads(paths["summary"].read_text())["cycles"] == 3
    assert paths["power"].read_text().splitlines()[0].startswith("time,cap,budget,predicted_power,measured_power")


def test_shadow_report_without_cycles_says_so(tmp_path: Path) -> None:
    AdvisorStore(tmp_path / "s.sqlite").close()
    with pytest.raises(ValueError, match="no advisor cycle recorded in shadow mode"):
        shadow_report(tmp_path / "s.sqlite")


def test_figures_are_written(tmp_path: Path) -> None:
    from test_advise_replay import write_dump
    from wattsched.report.advisor import write_replay_figure, write_shadow_figure

    with AdvisorStore(tmp_path / "s.sqlite") as store:
        _run_cycles(store)
    shadow = write_shadow_figure(shadow_report(tmp_path / "s.sqlite"), tmp_path / "fig")
    cfg = load_config(None, cap=1400, power__idle_watts_per_node=50, power__max_watts_per_node=400)
    replayed = write_replay_figure(replay(write_dump(tmp_path / "d.sacct", n=20), cfg), tmp_path / "fig")
    for path in (*shadow, *replayed):
        assert path.stat().st_size > 5000, path
