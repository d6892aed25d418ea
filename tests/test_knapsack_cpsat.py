"""The exact knapsack (CP-SAT): optimal on small instances (checked by brute force), never worse than the
greedy, and safe in the engine."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from test_engine_properties import PROFILE
from test_power_engine import CHECKS, Cap, assert_bookkeeping_under_cap, power_workloads
from wattsched.core.policy import JobAttributes, View, read_only
from wattsched.engine.simulate import simulate
from wattsched.policies.knapsack_cpsat import CpSatKnapsack
from wattsched.policies.powercheck import PowerCheck


def make_view(rows, free, cap, sums, now=1000.0) -> View:
    """rows: (submit, size, estimate, m, M, s) of the queued jobs, positions 0..n-1, all queued."""
    cols = [np.array(c, dtype=float) for c in zip(*rows, strict=True)]
    n = len(rows)
    jobs = JobAttributes(
        job_id=read_only(np.arange(1, n + 1)),
        user_id=read_only(np.full(n, -1)),
        submit_time=read_only(cols[0]),
        size=read_only(cols[1].astype(np.int64)),
        walltime=read_only(cols[2]),
        estimate=read_only(cols[2]),
        est_dyn_mean=read_only(cols[3]),
        est_dyn_max=read_only(cols[4]),
        est_dyn_std=read_only(cols[5]),
    )
    empty = read_only(np.empty(0, dtype=np.int64))
    return View(
        now=now,
        free=free,
        machine_size=64,
        jobs=jobs,
        queue=read_only(np.arange(n)),
        running=empty,
        running_expected_end=read_only(np.empty(0)),
        running_start=read_only(np.empty(0)),
        finished=empty,
        cap=cap,
        power_sums=sums,
    )


def brute_force(view: View, solver: CpSatKnapsack) -> float:
    """The best total profit over every subset that fits in units and power."""
    queue = np.asarray(view.queue)
    profit = solver._profits(view, queue)
    best = 0.0
    for r in range(len(queue) + 1):
        for subset in itertools.combinations(range(len(queue)), r):
            sums = list(view.power_sums)
            free = view.free
            ok = True
            for i in subset:
                j = int(queue[i])
                if view.jobs.size[j] > free or not solver._fits(view, sums, j):
                    ok = False
                    break
                free -= int(view.jobs.size[j])
                sums[0] += view.jobs.est_dyn_mean[j]
                sums[1] += view.jobs.est_dyn_max[j]
                sums[2] += view.jobs.est_dyn_std[j] ** 2
            if ok:
                best = max(best, float(sum(profit[i] for i in subset)))
    return best


@st.composite
def instances(draw):
    n = draw(st.integers(1, 7))
    rows = []
    for _ in range(n):
        m = draw(st.integers(0, 300))
        rows.append(
            (
                float(draw(st.integers(0, 999))),
                draw(st.integers(1, 6)),
                float(draw(st.integers(1, 500))),
                m,
                m + draw(st.integers(0, 200)),
                draw(st.integers(0, 60)),
            )
        )
    free = draw(st.integers(1, 12))
    cap = float(draw(st.integers(100, 1200)))
    sums = (float(draw(st.integers(0, 200))), float(draw(st.integers(0, 300))), float(draw(st.integers(0, 2000))))
    return rows, free, cap, sums


@PROFILE
@given(instances(), st.sampled_from(["mean", "max", "gaussian68", "gaussian99"]), st.sampled_from(["wait", "stretch"]))
def test_exact_knapsack_is_optimal_on_small_instances(instance, check, profit) -> None:
    rows, free, cap, sums = instance
    view = make_view(rows, free, cap, sums)
    solver = CpSatKnapsack(profit, PowerCheck.named(check), time_limit=10.0)
    chosen = solver.schedule(view)
    queue = np.asarray(view.queue)
    gains = dict(zip(queue.tolist(), solver._profits(view, queue), strict=True))
    got = sum(gains[j] for j in chosen)
    # feasible under the real (unrounded) check
    sums_now, used = list(sums), 0
    for j in chosen:
        assert solver._fits(view, sums_now, j)
        sums_now[0] += view.jobs.est_dyn_mean[j]
        sums_now[1] += view.jobs.est_dyn_max[j]
        sums_now[2] += view.jobs.est_dyn_std[j] ** 2
        used += int(view.jobs.size[j])
    assert used <= free
    # optimal (profits are scaled to integers in the model: stretch to 1/1000)
    tolerance = 1e-9 if profit == "wait" else 1e-3 * len(rows)
    assert got >= brute_force(view, solver) - tolerance
    greedy = sum(gains[j] for j in solver.greedy(view))
    assert got >= greedy - tolerance


@PROFILE
@given(
    power_workloads(max_jobs=12),
    st.sampled_from(CHECKS),
    st.sampled_from(["knapsack-exact-wait", "knapsack-exact-stretch"]),
)
def test_exact_knapsack_bookkeeping_never_exceeds_the_cap(jobs, check, policy) -> None:
    cap = Cap([0.0, 40.0], [600.0, 20_000.0])
    pc = PowerCheck.named(check)
    schedule = simulate(jobs, policy, 8, power_check=pc, cap=cap, solver={"time_limit": 5.0}).schedule
    assert_bookkeeping_under_cap(jobs, schedule, pc, cap, 8)


def test_a_tiny_time_limit_still_returns_a_feasible_plan_at_least_as_good_as_greedy() -> None:
    """200 queued jobs, a 1 µs limit: the search finds nothing of its own, the pass still ends with the greedy
    choice (a complete hint), feasible and counted apart (issue 18)."""
    rng = np.random.default_rng(18)
    rows = []
    for _ in range(200):
        m = float(rng.integers(10, 300))
        rows.append(
            (float(rng.integers(0, 999)), int(rng.integers(1, 6)), float(rng.integers(1, 500)), m, m + 50, 20.0)
        )
    view = make_view(rows, free=40, cap=3000.0, sums=(100.0, 200.0, 400.0))
    for check in ("mean", "gaussian99"):
        solver = CpSatKnapsack("wait", PowerCheck.named(check), time_limit=1e-6)
        chosen = solver.schedule(view)
        queue = np.asarray(view.queue)
        gains = dict(zip(queue.tolist(), solver._profits(view, queue), strict=True))
        greedy = solver.greedy(view)
        assert greedy and sum(gains[j] for j in chosen) >= sum(gains[j] for j in greedy)
        sums_now, used = list(view.power_sums), 0
        for j in chosen:
            assert solver._fits(view, sums_now, j)
            sums_now[0] += view.jobs.est_dyn_mean[j]
            sums_now[2] += view.jobs.est_dyn_std[j] ** 2
            used += int(view.jobs.size[j])
        assert used <= view.free
        stats = solver.summary()
        assert stats["solver_calls"] == 1
        assert stats["search_without_solution"] + stats["optimal"] + stats["feasible"] == 1
        # a search that found nothing ends with CP-SAT's own solution: the greedy hint, all variables fixed to it
        assert stats["no_solution"] == 0 and stats["hint_solution"] == stats["search_without_solution"]
