"""Learning job power with the simulator's predictors: two users converge to their truth, a new user gets the
default, the key ``nodes`` separates job sizes, the quantile sits above the mean, and no user can talk an estimate
down (evidence by size, the gradual fall, the floors, what a key was last measured drawing, its running jobs)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from wattsched.advise.config import load_config
from wattsched.advise.learn import PowerLearner, default_watts
from wattsched.advise.records import FinishedJob, QueuedJob
from wattsched.advise.store import AdvisorStore
from wattsched.predict.registry import POWER_PREDICTORS

IDLE = 50.0


def _pending(job_id: int, user: str, nodes: int = 2, t: float = 1e5) -> QueuedJob:
    return QueuedJob(job_id, "PENDING", user, "acct", "job", "p", nodes, t, None, None, None, False, "Priority")


def _history(tmp_path: Path, truth: dict[tuple[str, int], float], n: int = 8, seed: int = 1) -> AdvisorStore:
    """``n`` jobs per (user, nodes), true gross per-node power ±5 %, energy = power × nodes × elapsed."""
    rng = random.Random(seed)
    store = AdvisorStore(tmp_path / "s.sqlite")
    jobs, t, i = [], 1000.0, 0
    for _ in range(n):
        for (user, nodes), watts in truth.items():
            i += 1
            p = watts * rng.uniform(0.95, 1.05)
            jobs.append(
                FinishedJob(i, "COMPLETED", user, "acct", "job", nodes, t, t + 10, t + 610, p * nodes * 600, None)
            )
            t += 100
    store.record_finished(jobs, idle_watts=None)
    store.set_idle_watts(IDLE)
    return store


@pytest.mark.parametrize("estimate", ["mean", "quantile"])
def test_two_users_within_ten_percent_and_new_user_default(tmp_path: Path, estimate: str) -> None:
    truth = {("alice", 2): 300.0, ("bob", 2): 120.0}
    store = _history(tmp_path, truth)
    cfg = load_config(None, cap="10kW", power__max_watts_per_node=400, learning__estimate=estimate)
    est = PowerLearner(cfg).estimate(
        store.history_frame(), [_pending(1, "alice"), _pending(2, "bob"), _pending(3, "carol")], 1e5,
        idle_watts=store.idle_watts(),
    )  # fmt: skip
    for job_id, user in ((1, "alice"), (2, "bob")):
        net = truth[(user, 2)] - IDLE
        assert est[job_id].has_history and est[job_id].source.startswith("history:history")
        assert est[job_id].watts_per_node == pytest.approx(net, rel=0.10)
    assert not est[3].has_history
    assert est[3].watts_per_node == 400.0 - IDLE and est[3].source == "default:worst-case"


def test_quantile_above_mean_and_capped_by_the_highest(tmp_path: Path) -> None:
    store = _history(tmp_path, {("alice", 2): 300.0}, n=12)
    frame, pend = store.history_frame(), [_pending(1, "alice")]
    get = {
        kind: PowerLearner(load_config(None, cap="10kW", learning__estimate=kind)).estimate(frame, pend, 1e5)[1]
        for kind in ("mean", "quantile", "max")
    }
    assert get["mean"].watts_per_node < get["quantile"].watts_per_node <= get["max"].watts_per_node
    highest = frame.select((frame["watts_gross"] - IDLE).max()).item()
    assert get["max"].watts_per_node == pytest.approx(highest)


def test_key_nodes_separates_sizes(tmp_path: Path) -> None:
    truth = {("alice", 1): 150.0, ("alice", 4): 350.0}
    store = _history(tmp_path, truth)
    frame = store.history_frame()
    by_user = load_config(None, cap="10kW", learning__estimate="mean")
    by_size = load_config(None, cap="10kW", learning__estimate="mean", learning__key=["user", "nodes"])
    pend = [_pending(1, "alice", nodes=1), _pending(2, "alice", nodes=4), _pending(3, "alice", nodes=2)]
    mixed = PowerLearner(by_user).estimate(frame, pend, 1e5)
    split = PowerLearner(by_size).estimate(frame, pend, 1e5)
    assert mixed[1].watts_per_node == pytest.approx(mixed[2].watts_per_node)  # one key: one figure
    assert split[1].watts_per_node == pytest.approx(150.0 - IDLE, rel=0.1)
    assert split[2].watts_per_node == pytest.approx(350.0 - IDLE, rel=0.1)
    assert not split[3].has_history  # no 2-node history: the default
    # ≥ WORST_MIN_JOBS completed jobs: the highest per-node power seen is the worst case (not the whole budget)
    top = max(frame["watts_gross"].to_list()) - IDLE
    assert split[3].source == "default:observed-worst" and split[3].watts_per_node == pytest.approx(top)
    young = PowerLearner(by_size).estimate(frame.head(2), pend, 1e5)  # 2 jobs: too few to trust an observed worst
    assert young[3].source == "default:budget" and math.isinf(young[3].watts_per_node)


def test_only_jobs_ended_by_now_and_usable_ones_teach(tmp_path: Path) -> None:
    store = AdvisorStore(tmp_path / "s.sqlite")
    jobs = [
        FinishedJob(1, "COMPLETED", "alice", "a", "job", 1, 0, 10, 610, 200.0 * 600, None),
        FinishedJob(2, "COMPLETED", "alice", "a", "job", 1, 0, 10, 10, 99.0, None),  # zero elapsed: unusable
        FinishedJob(3, "COMPLETED", "alice", "a", "job", 1, 0, 10, 5000, 900.0 * 4990, None),  # ends after now
    ]
    store.record_finished(jobs, idle_watts=0.0)
    cfg = load_config(None, cap="10kW", power__definition="gross", learning__estimate="mean")
    est = PowerLearner(cfg).estimate(store.history_frame(), [_pending(9, "alice")], 1000.0)[9]
    assert est.has_history and est.watts_per_node == pytest.approx(200.0)
    two = load_config(None, cap="10kW", power__definition="gross", learning__min_history=2)
    assert not PowerLearner(two).estimate(store.history_frame(), [_pending(9, "alice")], 1000.0)[9].has_history


def test_default_chain() -> None:
    assert default_watts(load_config(None, cap=1, learning__default_watts_per_node="250W"), 10.0) == (
        250.0,
        "default:configured",
    )
    assert default_watts(load_config(None, cap=1, power__max_watts_per_node=400), None) == (400.0, "default:worst-case")
    gross = load_config(None, cap=1, power__max_watts_per_node=400, power__definition="gross")
    assert default_watts(gross, 100.0) == (400.0, "default:worst-case")


@pytest.mark.parametrize("name", POWER_PREDICTORS)
def test_every_registered_power_predictor_runs_in_the_learner(tmp_path: Path, name: str) -> None:
    store = _history(tmp_path, {("alice", 2): 300.0, ("bob", 2): 120.0}, n=4)
    cfg = load_config(None, cap="10kW", learning__predictor=name, learning__estimate="mean")
    est = PowerLearner(cfg).estimate(store.history_frame(), [_pending(1, "alice"), _pending(2, "bob")], 1e5)
    assert est[1].has_history and est[1].source == f"history:{name}:mean"
    assert all(math.isfinite(e.watts_per_node) and e.watts_per_node > 0 for e in est.values())


def _jobs(specs: list[tuple[str, int, float]], t0: float = 1000.0) -> list[FinishedJob]:
    """Finished jobs in order, 600 s each: (user, nodes, gross watts per node)."""
    return [
        FinishedJob(i, "COMPLETED", u, "a", "job", nodes, t0 + 700 * i, t0 + 700 * i, t0 + 700 * i + 600,
                    w * nodes * 600, None)
        for i, (u, nodes, w) in enumerate(specs, start=1)
    ]  # fmt: skip


def _estimate(tmp_path: Path, specs: list[tuple[str, int, float]], pending: list[QueuedJob], **cfg: object) -> dict:
    store = AdvisorStore(tmp_path / "e.sqlite")
    store.record_finished(_jobs(specs), idle_watts=0.0)
    config = load_config(None, cap="10kW", power__definition="gross", learning__estimate="mean", **cfg)
    return PowerLearner(config).estimate(store.history_frame(), pending, 1e6, **{})


def test_thirty_idle_small_jobs_cannot_talk_down_a_large_one(tmp_path: Path) -> None:
    """The poisoned history of issue 28: 30 idle 1-node jobs say nothing about a 4-node job (evidence by size)."""
    est = _estimate(
        tmp_path, [("mallory", 1, 0.0)] * 30, [_pending(1, "mallory", nodes=4), _pending(2, "mallory", nodes=2),
                                               _pending(3, "mallory", nodes=1)],
        power__max_watts_per_node=500,
    )  # fmt: skip
    assert not est[1].has_history and est[1].watts_per_node == 500.0  # the worst case
    assert est[2].has_history and est[3].has_history  # 1-node jobs are evidence for up to 2 nodes
    assert est[3].watts_per_node == pytest.approx(0.1 * 500)  # the floor: floor_share × the worst case


def test_the_fall_from_the_worst_case_takes_several_jobs(tmp_path: Path) -> None:
    for n, expected in ((1, 100 / 3 + 400 * 2 / 3), (2, 200 / 3 + 400 / 3), (3, 100.0), (5, 100.0)):
        est = _estimate(tmp_path / str(n), [("u", 1, 100.0)] * n, [_pending(1, "u", nodes=1)],
                        power__max_watts_per_node=400)  # fmt: skip
        assert est[1].watts_per_node == pytest.approx(expected), n
    quick = _estimate(tmp_path / "q", [("u", 1, 100.0)], [_pending(1, "u", nodes=1)], power__max_watts_per_node=400,
                      learning__fall_jobs=1)  # fmt: skip
    assert quick[1].watts_per_node == pytest.approx(100.0)


def test_floors_last_measured_and_running_jobs(tmp_path: Path) -> None:
    specs = [("u", 1, 100.0)] * 5 + [("u", 1, 160.0)]  # the last job drew more than the mean
    pend = [_pending(1, "u", nodes=1)]
    est = _estimate(tmp_path / "a", specs, pend, power__max_watts_per_node=400)
    assert est[1].watts_per_node == pytest.approx(160.0)  # never below what the key was last measured drawing
    floored = _estimate(tmp_path / "b", [("u", 1, 10.0)] * 5, pend, learning__floor_watts_per_node="75W")
    assert floored[1].watts_per_node == pytest.approx(75.0)
    store = AdvisorStore(tmp_path / "c.sqlite")
    store.record_finished(_jobs([("u", 1, 100.0)] * 5), idle_watts=0.0)
    cfg = load_config(None, cap="10kW", power__definition="gross", learning__estimate="mean", learning__key=["user"])
    learner = PowerLearner(cfg)
    hot = learner.estimate(store.history_frame(), pend, 1e6, running={"user=u": 300.0})
    assert hot[1].watts_per_node == pytest.approx(300.0)  # a running job drawing more raises the key at once
    other = learner.estimate(store.history_frame(), pend, 1e6, running={"user=v": 300.0})
    assert other[1].watts_per_node == pytest.approx(100.0)
    corrected = learner.estimate(store.history_frame(), pend, 1e6, correction=1.1)
    assert corrected[1].watts_per_node == pytest.approx(110.0)


def test_sacct_correction_is_the_median_under_read_and_only_raises(tmp_path: Path) -> None:
    store = AdvisorStore(tmp_path / "s.sqlite")
    jobs = _jobs([("u", 1, 100.0), ("u", 1, 200.0), ("u", 1, 300.0)])
    store.record_finished(jobs, idle_watts=0.0)
    assert store.sacct_correction() == (1.0, 0)
    for job, ratio in zip(jobs, (1.02, 1.05, 1.2), strict=True):
        for _ in range(3):
            store.record_running([(job, job.energy_joules / 600 * ratio)], job.start_time or 0.0)
    assert store.sacct_correction() == (pytest.approx(1.05), 3)
    low = AdvisorStore(tmp_path / "t.sqlite")
    low.record_finished(jobs[:1], idle_watts=0.0)
    for _ in range(3):
        low.record_running([(jobs[0], 50.0)], 1.0)
    assert low.sacct_correction() == (1.0, 1)  # sacct above the running reading: no correction downwards
