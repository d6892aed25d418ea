"""The CP stage of CPH (CP-SAT): hand-checked plans, optimal on small instances (checked against every serial
schedule), the 100-job cap, the weights, the fast paths and reproducibility."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

import wattsched.studies.multires.cph as cph_module
from wattsched.studies.multires.cph import HINT_CHECK_FLOOR_S, CPHOptions, cph_plan, cph_weights
from wattsched.studies.multires.priority_rules import prb_order

EXACT = CPHOptions(deterministic_time=5.0)
NONE = np.empty(0)


def one_resource(
    durations, demands, queued, ewt, running=((10, 2),), capacity=4, now=100.0, options: CPHOptions = EXACT
):
    """Plan a 1-resource instance; ``running`` is (remaining, demand) pairs."""
    rem = np.array([r for r, _ in running], dtype=float)
    rdem = np.array([[d] for _, d in running], dtype=float).reshape(-1, 1)
    return cph_plan(
        now,
        np.array(queued, dtype=float),
        np.array(durations, dtype=float),
        np.array(demands, dtype=float).reshape(-1, 1),
        np.array(ewt, dtype=float),
        rem,
        rdem,
        np.array([capacity]),
        options,
    )


# A (2 units, 5 s), B (3 units, 10 s), C (1 unit, 4 s); a running job holds 2 of 4 units for 10 s. PRB order A, B, C.
# B cannot start before 10. A and C cannot overlap before 10: greedy puts A at 0 and C at 5 (Σ starts 15), the
# optimum C at 0 and A at 4 (Σ 14).
GOLDEN = {"durations": [5, 10, 4], "demands": [2, 3, 1], "queued": [90, 95, 99]}


def test_golden_cp_beats_greedy():
    plan = one_resource(**GOLDEN, ewt=[1800, 1800, 1800])
    assert plan.status == "optimal"
    assert plan.starts.tolist() == [4, 10, 0]
    assert plan.start_now.tolist() == [2]
    assert plan.modelled == 3
    assert plan.objective == pytest.approx(1e5 * ((4 + 10) + (10 + 5) + (0 + 1)))


def test_greedy_is_the_fallback_and_the_hint():
    plan = one_resource(**GOLDEN, ewt=[1800, 1800, 1800], options=CPHOptions(deterministic_time=0.0))
    assert plan.status == "greedy"
    assert plan.starts.tolist() == [0, 10, 5]
    assert plan.start_now.tolist() == [0]


def test_weights_change_the_plan():
    # A's queue expects 1000 s: "head" weighs it 1.8 × the others (A first), "2017" floors that to 1 (C first)
    head = one_resource(**GOLDEN, ewt=[1000, 1800, 1800])
    assert head.starts.tolist() == [0, 10, 5]
    assert head.objective == pytest.approx(180000 * 10 + 100000 * (15 + 6))
    old = one_resource(**GOLDEN, ewt=[1000, 1800, 1800], options=CPHOptions(weights="2017", deterministic_time=5.0))
    assert old.starts.tolist() == [4, 10, 0]
    assert old.objective == pytest.approx(14 + 15 + 1)
    assert cph_weights(np.array([1000.0, 1800.0, 600.0]), "head").tolist() == [180000, 100000, 300000]
    assert cph_weights(np.array([1000.0, 1800.0, 600.0]), "2017").tolist() == [1, 1, 3]
    with pytest.raises(ValueError):
        cph_weights(np.array([1.0]), "tail")
    with pytest.raises(ValueError):
        CPHOptions(weights="tail")
    with pytest.raises(ValueError):
        CPHOptions(time_limit_s=0.0)


def test_rounding_of_durations_and_remaining_times():
    # the running job's 0.3 s rounds up to 1 and the 4.2 s job to 5 s: greedy puts it at 1 and the next at 6
    args = ([4.2, 1.0, 1.0], [4, 3, 1], [90, 95, 99], [1800, 1800, 1800])
    greedy = one_resource(*args, running=((0.3, 2),), options=CPHOptions(deterministic_time=0.0))
    assert greedy.status == "greedy" and greedy.starts.tolist() == [1, 6, 0]
    best = one_resource(*args, running=((0.3, 2),))
    assert best.status == "optimal" and best.starts.tolist() == [2, 1, 0]  # the short 3-unit job before the long


def test_all_fit_now_needs_no_solver(monkeypatch):
    monkeypatch.setattr(cph_module, "_solve", _no_solver)
    plan = one_resource([5, 3, 2], [1, 1, 0], [99, 90, 95], [1800, 1800, 1800])
    assert plan.status == "optimal"
    assert plan.starts.tolist() == [0, 0, 0]
    assert plan.start_now.tolist() == [1, 2, 0]  # PRB order (oldest first here)


def test_skipped_when_nothing_fits_now(monkeypatch):
    monkeypatch.setattr(cph_module, "_solve", _no_solver)
    plan = one_resource([5, 3], [1, 2], [90, 95], [1800, 1800], running=((10, 4), (3, 0)))
    assert plan.status == "skipped"
    assert plan.start_now.size == 0
    assert plan.starts.tolist() == [10, 10]  # the greedy plan


def test_empty_and_impossible_jobs():
    plan = one_resource([], [], [], [])
    assert plan.status == "empty" and plan.start_now.size == 0 and plan.starts.size == 0
    only_big = one_resource([5], [5], [90], [1800])
    assert only_big.status == "empty" and only_big.starts.tolist() == [-1] and only_big.modelled == 0
    # the impossible job (5 > 4 units) is postponed and does not take one of the max_jobs slots
    mixed = one_resource(
        [5, 3, 2], [5, 1, 1], [80, 90, 95], [1800, 1800, 1800], options=CPHOptions(max_jobs=2, deterministic_time=5.0)
    )
    assert mixed.starts.tolist() == [-1, 0, 0]
    assert mixed.modelled == 2


def test_running_overload_is_an_error():
    with pytest.raises(ValueError):
        one_resource([5], [1], [90], [1800], running=((10, 3), (5, 2)))


def test_max_jobs_cap():
    rng = np.random.default_rng(3)
    n = 12
    queued = 1000.0 - rng.integers(0, 500, n)
    ewt = rng.choice([600.0, 1800.0], n)
    duration = rng.integers(1, 20, n).astype(float)
    plan = one_resource(
        duration,
        np.ones(n),
        queued,
        ewt,
        running=(),
        capacity=2,
        options=CPHOptions(max_jobs=5, deterministic_time=5.0),
        now=1000.0,
    )
    order = prb_order(1000.0, queued, ewt, duration, np.ones((n, 1)))
    assert plan.modelled == 5
    assert (plan.starts[order[5:]] == -1).all()
    assert (plan.starts[order[:5]] >= 0).all()
    assert plan.start_now.size == 2 and set(plan.start_now) <= set(order[:5].tolist())


def test_time_limit_doubles_until_a_solution(monkeypatch):
    """Only when CP-SAT cannot even check the greedy hint (the first call, every variable fixed) is the limit
    doubled as in the original (issue 18)."""
    limits = []

    def unknown(self, model, *args, **kwargs):
        limits.append(self.parameters.max_time_in_seconds)
        return cp_model.UNKNOWN

    monkeypatch.setattr(cp_model.CpSolver, "solve", unknown)
    plan = one_resource(**GOLDEN, ewt=[1800, 1800, 1800], options=CPHOptions(time_limit_s=1.0, max_time_s=5.0))
    assert limits == [1.0, 1.0, 2.0, 4.0, 5.0]  # the hint check, then the doubled searches
    assert plan.status == "greedy" and plan.starts.tolist() == [0, 10, 5]


def test_the_greedy_hint_is_a_solution_so_one_limit_suffices(monkeypatch):
    """The greedy plan is CP-SAT's checked first solution: a search that finds nothing in its limit ends with it,
    at that one limit (issue 18: passes had ended with no solution and the limit was doubled)."""
    calls = []
    real_solve = cp_model.CpSolver.solve

    def search_finds_nothing(self, model, *args, **kwargs):
        fixed = self.parameters.fix_variables_to_their_hinted_value
        calls.append((fixed, self.parameters.max_time_in_seconds))
        return real_solve(self, model, *args, **kwargs) if fixed else cp_model.UNKNOWN

    monkeypatch.setattr(cp_model.CpSolver, "solve", search_finds_nothing)
    plan = one_resource(**GOLDEN, ewt=[1800, 1800, 1800], options=CPHOptions(time_limit_s=0.001, max_time_s=5.0))
    # the check gets its floor (a few ms of work, independent of the load); the search its 1 ms, once
    assert calls == [(True, HINT_CHECK_FLOOR_S), (False, 0.001)]
    assert plan.status == "greedy" and plan.search_solution is False and plan.starts.tolist() == [0, 10, 5]


def test_a_tiny_wall_limit_still_ends_with_a_plan_at_least_as_good_as_greedy():
    """Random two-resource queues at a 1 ms limit: every pass ends with a feasible plan no worse than greedy."""
    rng = np.random.default_rng(18)
    for _ in range(20):
        n, cap = 60, np.array([32, 4])
        demand = np.stack([rng.integers(1, 17, n), rng.integers(0, 3, n)], axis=1).astype(float)
        args = (
            5000.0,
            5000.0 - rng.uniform(0, 3000, n),
            rng.uniform(60, 3600, n),
            demand,
            rng.choice([600.0, 1800.0], n),
            rng.uniform(1, 2000, 4),
            np.array([[8, 1], [4, 0], [8, 1], [2, 0]], dtype=float),
            cap,
        )
        plan = cph_plan(*args, CPHOptions(time_limit_s=0.001, max_time_s=0.001))
        greedy = cph_plan(*args, CPHOptions(deterministic_time=0.0))
        assert plan.status in ("optimal", "feasible", "greedy", "skipped")
        assert plan.objective <= greedy.objective
        assert plan.solve_s < 1.0  # one limit, never doubled


def test_deterministic_budget_is_reproducible():
    rng = np.random.default_rng(7)
    n, cap = 40, np.array([32, 4])
    demand = np.stack([rng.integers(1, 17, n), rng.integers(0, 3, n)], axis=1).astype(float)
    args = (
        5000.0,
        5000.0 - rng.uniform(0, 3000, n),
        rng.uniform(60, 3600, n),
        demand,
        rng.choice([600.0, 1800.0], n),
        rng.uniform(1, 2000, 4),
        np.array([[8, 1], [4, 0], [8, 1], [2, 0]], dtype=float),
        cap,
    )
    options = CPHOptions(deterministic_time=0.05)
    first, second = cph_plan(*args, options), cph_plan(*args, options)
    assert first.status in ("optimal", "feasible", "greedy")
    assert np.array_equal(first.starts, second.starts)
    assert np.array_equal(first.start_now, second.start_now)
    assert first.objective == second.objective and first.status == second.status
    _assert_respects_pools(
        first.starts,
        np.ceil(args[2]).astype(int),
        demand.astype(int),
        np.ceil(args[5]).astype(int),
        args[6].astype(int),
        cap,
    )


# -- optimality by brute force -----------------------------------------------------------------------------------


def _no_solver(*args, **kwargs):
    raise AssertionError("the solver must not be called")


def _usage(starts, duration, demand, running_remaining, running_demand, horizon):
    """Pool usage at every integer second [0, horizon) (a plain time-indexed profile)."""
    use = np.zeros((horizon, demand.shape[1]), dtype=np.int64)
    for rem, dem in zip(running_remaining, running_demand, strict=True):
        use[:rem] += dem
    for s, d, dem in zip(starts, duration, demand, strict=True):
        if s >= 0:
            use[s : s + d] += dem
    return use


def _assert_respects_pools(starts, duration, demand, running_remaining, running_demand, capacity):
    horizon = int(max(running_remaining.max(initial=0), (starts + duration).max(initial=0))) + 1
    use = _usage(starts, duration, demand, running_remaining, running_demand, horizon)
    assert (use <= capacity).all()


def _sgs_by_seconds(order, duration, demand, running_remaining, running_demand, capacity):
    """Serial schedule generation on the time-indexed profile: each job at the first second it fits."""
    horizon = int(running_remaining.sum() + duration.sum()) + 1
    use = _usage([], [], demand[:0], running_remaining, running_demand, horizon + int(duration.max()))
    starts = np.full(duration.size, -1)
    for j in order:
        t = next(t for t in range(horizon + 1) if (use[t : t + duration[j]] + demand[j] <= capacity).all())
        use[t : t + duration[j]] += demand[j]
        starts[j] = t
    return starts


@st.composite
def small_instances(draw):
    n_res = draw(st.integers(1, 2))
    capacity = np.array([draw(st.integers(1, 5)) for _ in range(n_res)])
    n_run = draw(st.integers(0, 2))
    free = capacity.copy()
    running_demand = np.zeros((n_run, n_res), dtype=np.int64)
    for k in range(n_run):
        running_demand[k] = [draw(st.integers(0, int(f))) for f in free]
        free -= running_demand[k]
    running_remaining = np.array([draw(st.sampled_from([0.5, 1, 2, 3.5, 5, 8])) for _ in range(n_run)])
    n = draw(st.integers(1, 5))
    duration = np.array([draw(st.sampled_from([1, 2, 2.5, 3, 4, 6])) for _ in range(n)], dtype=float)
    demand = np.array([[draw(st.integers(0, int(c) + 1)) for c in capacity] for _ in range(n)], dtype=float)
    now = 1000.0
    queued = np.array([now - draw(st.integers(0, 600)) for _ in range(n)], dtype=float)
    ewt = np.array([draw(st.sampled_from([600.0, 1000.0, 1800.0, 3600.0])) for _ in range(n)])
    weights = draw(st.sampled_from(["head", "2017"]))
    return now, queued, duration, demand, ewt, running_remaining, running_demand.astype(float), capacity, weights


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances())
def test_optimal_against_every_serial_schedule(instance):
    now, queued, duration, demand, ewt, rem, rdem, capacity, weights = instance
    plan = cph_plan(
        now, queued, duration, demand, ewt, rem, rdem, capacity, CPHOptions(weights=weights, deterministic_time=5.0)
    )
    dur = np.maximum(np.ceil(duration), 1).astype(int)
    dem = demand.astype(int)
    run_rem = np.maximum(np.ceil(rem), 1).astype(int)
    run_dem = rdem.astype(int)
    w = np.array([math.floor(ewt.max() * (1e5 if weights == "head" else 1.0) / e) for e in ewt])
    possible = np.flatnonzero((dem <= capacity).all(axis=1))
    assert (plan.starts[np.setdiff1d(np.arange(queued.size), possible)] == -1).all()
    assert plan.modelled == possible.size
    if possible.size == 0:
        assert plan.status == "empty"
        return
    starts = plan.starts[possible]
    assert (starts >= 0).all()
    _assert_respects_pools(starts, dur[possible], dem[possible], run_rem, run_dem, capacity)
    assert plan.objective == pytest.approx(float(np.sum(w[possible] * (starts + now - queued[possible]))))
    assert set(plan.start_now.tolist()) == set(possible[starts == 0].tolist())
    order = prb_order(now, queued, ewt, duration, demand)
    assert plan.start_now.tolist() == [j for j in order if j in set(plan.start_now.tolist())]
    free0 = capacity - run_dem.sum(axis=0)
    if plan.status == "skipped":
        assert not (dem[possible] <= free0).all(axis=1).any()
        return
    assert plan.status == "optimal"
    best = min(
        int(
            np.sum(w[possible] * _sgs_by_seconds(np.array(p), dur[possible], dem[possible], run_rem, run_dem, capacity))
        )
        for p in itertools.permutations(range(possible.size))
    )
    assert int(np.sum(w[possible] * starts)) == best
