"""Power checks in the engine (docs/semantics.md §3.3–§3.4): golden examples and invariants."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_engine_properties import PROFILE
from wattsched.engine.simulate import SimulationError, simulate
from wattsched.policies.powercheck import PowerCheck, check_names


@dataclass
class Cap:
    times: list[float]
    caps: list[float]


def power_jobs(rows: list[tuple[float, int, float, float, float, float, float]]) -> pl.DataFrame:
    """(submit, size, walltime, runtime, m, M, s) rows; job ids 1..n."""
    cols = list(zip(*rows, strict=True))
    return pl.DataFrame(
        {
            "job_id": list(range(1, len(rows) + 1)),
            "submit_time": [float(x) for x in cols[0]],
            "size": list(cols[1]),
            "walltime": [float(x) for x in cols[2]],
            "runtime": [float(x) for x in cols[3]],
            "est_dyn_mean": [float(x) for x in cols[4]],
            "est_dyn_max": [float(x) for x in cols[5]],
            "est_dyn_std": [float(x) for x in cols[6]],
        }
    )


def starts(jobs, policy, check, cap, machine=10, knapsack_until=None, **kw) -> list[float]:
    res = simulate(
        jobs, policy, machine, power_check=PowerCheck.named(check, **kw), cap=cap, knapsack_until=knapsack_until
    )
    return res.schedule.sort("job_id")["start_time"].to_list()


# docs/semantics.md §3.3, Gaussian example: two running jobs with m = 300, s = 50; a candidate alike; cap 1000
GAUSSIAN_EXAMPLE = power_jobs(
    [(0, 1, 100, 100, 300, 300, 50), (0, 1, 100, 100, 300, 300, 50), (1, 1, 100, 100, 300, 300, 50)]
)


@pytest.mark.parametrize(
    ("check", "candidate_start"),
    [("mean", 1.0), ("gaussian68", 1.0), ("gaussian95", 100.0), ("gaussian99", 100.0), ("none", 1.0)],
)
def test_gaussian_accept_reject_example(check: str, candidate_start: float) -> None:
    # mean: 900 ≤ 1000; g68: 900 + 86.60 = 986.6 < 1000; g95: 1073.2 and g99: 1159.8 are rejected
    assert starts(GAUSSIAN_EXAMPLE, "easy-pc", check, Cap([0.0], [1000.0])) == [0.0, 0.0, candidate_start]


def test_checks_are_strict_for_gaussian_and_inclusive_for_mean_and_max() -> None:
    jobs = power_jobs([(0, 1, 10, 10, 500, 600, 0), (0, 1, 10, 10, 500, 400, 0)])
    cap = Cap([0.0], [1000.0])
    assert starts(jobs, "easy-pc", "mean", cap) == [0, 0]  # 1000 ≤ 1000
    assert starts(jobs, "easy-pc", "max", cap) == [0, 0]  # 600 + 400 ≤ 1000
    # gaussian with σ = 0 is μ < cap: 1000 < 1000 is false
    assert starts(jobs, "easy-pc", "quantile:0.9", cap) == [0, 10]


def test_quantile_check_uses_the_one_sided_normal_quantile() -> None:
    assert PowerCheck.named("quantile:0.95").k == pytest.approx(1.6448536)
    assert PowerCheck.named("gaussian99").k == 3.0
    with pytest.raises(ValueError, match="quantile probability"):
        PowerCheck.named("quantile:1.5")
    with pytest.raises(ValueError, match="unknown power check"):
        PowerCheck.named("gaussian90")


def test_a_rising_cap_is_a_timer_event() -> None:
    # nothing else happens at t=50, yet the job starts then: the cap change wakes the policy
    jobs = power_jobs([(0, 1, 10, 10, 100, 100, 0)])
    assert starts(jobs, "easy-pc", "mean", Cap([0.0, 50.0], [0.0, 1000.0])) == [50.0]


def test_the_power_check_applies_to_backfilled_jobs_too() -> None:
    # job 2 (8 nodes) is blocked by nodes; at t=2 job 3 would backfill by nodes (it ends by the shadow time)
    # but 600 + 500 W breaks the cap; at t=100 it fits next to job 2 (100 + 500 W, 8 + 2 nodes)
    jobs = power_jobs([(0, 6, 100, 100, 600, 600, 0), (1, 8, 10, 10, 100, 100, 0), (2, 2, 50, 50, 500, 500, 0)])
    cap = Cap([0.0], [1000.0])
    assert starts(jobs, "easy", "none", None) == [0, 100, 2]
    assert starts(jobs, "easy-pc", "mean", cap) == [0, 100, 100]


def test_power_blocked_priority_job_and_the_reservation_options() -> None:
    # 10 nodes, cap 1000 W (mean check). Jobs 1 and 2 run at 350 W each, until 100 and 1000. Job 3 (400 W) is
    # blocked by power alone. Nodes-only reservation (faithful): shadow = now, extra = 8 nodes, so job 4
    # (300 W, 500 s) backfills at t=2 and keeps the power up: when job 1 ends, 650 + 400 > 1000 and job 3
    # starves until job 4 ends at 502 ([AMBIG-0.7]). Nodes+power: job 3's shadow is 100 (job 1's end, when
    # 350 + 400 fits); job 4 outlasts it and would not fit next to it (750 + 300 > 1000), so it waits: job 3
    # starts at 100, job 4 at 150 when job 3 ends.
    jobs = power_jobs(
        [
            (0, 1, 100, 100, 350, 350, 0),
            (0, 1, 1000, 1000, 350, 350, 0),
            (1, 1, 50, 50, 400, 400, 0),
            (2, 2, 500, 500, 300, 300, 0),
        ]
    )
    cap = Cap([0.0], [1000.0])
    assert starts(jobs, "easy-pc", "mean", cap) == [0, 0, 502, 2]
    assert starts(jobs, "easy-pc", "mean", cap, reservation="nodes+power") == [0, 0, 100, 150]
    # shadow_when_nodes_suffice="first_end" (easy.cpp): the shadow is job 1's end (100) with extra 8 nodes:
    # job 4 outlasts it but fits in the extra nodes, so it backfills as in the faithful default
    assert starts(jobs, "easy-pc", "mean", cap, shadow_when_nodes_suffice="first_end") == [0, 0, 502, 2]


def test_missing_estimates_and_conservative_are_clear_errors() -> None:
    jobs = GAUSSIAN_EXAMPLE.drop("est_dyn_std")
    with pytest.raises(SimulationError, match="est_dyn_std"):
        simulate(jobs, "easy-pc", 10, power_check=PowerCheck.named("gaussian99"), cap=Cap([0.0], [1.0]))
    with pytest.raises(SimulationError, match="conservative"):
        simulate(GAUSSIAN_EXAMPLE, "conservative", 10, power_check=PowerCheck.named("mean"), cap=Cap([0.0], [1.0]))


@st.composite
def power_workloads(draw, max_jobs: int = 20):
    n = draw(st.integers(1, max_jobs))
    rows = []
    t = 0
    for _ in range(n):
        t += draw(st.integers(0, 5))
        wall = draw(st.integers(1, 30))
        m = draw(st.integers(0, 400))
        rows.append(
            (
                t,
                draw(st.integers(1, 8)),
                wall,
                draw(st.integers(1, wall + 3)),
                m,
                m + draw(st.integers(0, 300)),
                draw(st.integers(0, 100)),
            )
        )
    return power_jobs(rows)


# every registered check (a family with a parameter of its own), from the registry: a new check is tested here
CHECKS = [name.replace(":P", ":0.9") for name in check_names() if name != "none"]


def assert_bookkeeping_under_cap(jobs, schedule, pc: PowerCheck, cap: Cap, machine: int) -> None:
    """At every instant a job starts, the running jobs' estimates pass the check under the cap then."""
    s = schedule.join(jobs.select("job_id", "est_dyn_mean", "est_dyn_max", "est_dyn_std"), on="job_id")
    start, end = s["start_time"].to_numpy(), s["end_time"].to_numpy()
    m, mx, sd = (s[c].to_numpy() for c in ("est_dyn_mean", "est_dyn_max", "est_dyn_std"))
    size = s["size"].to_numpy()
    for t in np.unique(start):
        running = (start <= t) & (end > t)
        assert size[running].sum() <= machine
        c = cap.caps[int(np.searchsorted(cap.times, t, side="right")) - 1]
        # the rule written out independently of the engine, from the check's declared coefficients
        r = pc.rule
        level = r.mean * m[running].sum() + r.max * mx[running].sum() + r.k * math.sqrt((sd[running] ** 2).sum())
        assert level < c if r.strict else level <= c


@PROFILE
@given(
    power_workloads(),
    st.sampled_from(CHECKS),
    st.sampled_from(["easy-pc", "easy-saf-pc", "fcfs", "sjf"]),
    st.sampled_from(["nodes", "nodes+power"]),
)
def test_infinite_cap_gives_the_power_free_schedule(jobs, check, policy, reservation) -> None:
    free_policy = {"easy-pc": "easy", "easy-saf-pc": "easy-saf"}.get(policy, policy)
    plain = simulate(jobs, free_policy, 8).schedule
    for cap in (None, Cap([0.0], [math.inf])):
        capped = simulate(jobs, policy, 8, power_check=PowerCheck.named(check, reservation=reservation), cap=cap)
        assert capped.schedule["start_time"].to_list() == plain["start_time"].to_list()


@PROFILE
@given(
    power_workloads(),
    st.sampled_from(CHECKS),
    st.sampled_from(["easy-pc", "easy-saf-pc"]),
    st.sampled_from(["nodes", "nodes+power"]),
    st.lists(st.integers(200, 2000), min_size=0, max_size=3),
)
def test_bookkeeping_never_exceeds_the_cap_at_a_decision(jobs, check, policy, reservation, levels) -> None:
    levels = [*levels, 20_000]  # the last level is above any single job's estimate: every job can start
    times = [0.0] + [float(10 * (i + 1)) for i in range(len(levels) - 1)]
    cap = Cap(times, [float(v) for v in levels])
    pc = PowerCheck.named(check, reservation=reservation)
    assert_bookkeeping_under_cap(jobs, simulate(jobs, policy, 8, power_check=pc, cap=cap).schedule, pc, cap, 8)


# docs/semantics.md §3.4, the worked example: at t = 1000, A waited 100 s (p̃ 100, w 200), B 50 s (p̃ 10, w 100), C 10 s
# (p̃ 1000, w 50). Wait ratios 0.5, 0.5, 0.2 → A, B, C; stretch v = 2, 6, 1.01 → ratios 0.01, 0.06, 0.0202 →
# B, C, A. The cap is 0 W until 1000 (nothing starts), then 250 W: the first jobs in knapsack order that fit.
# The knapsack window ends at 50,000 s (by default it would end at the cap's first change, as paper 000's).
KNAPSACK_EXAMPLE = power_jobs(
    [(900, 1, 100, 100, 200, 200, 0), (950, 1, 10, 10, 100, 100, 0), (990, 1, 1000, 1000, 50, 50, 0)]
)
KNAPSACK_CAP = Cap([0.0, 1000.0, 50_000.0], [0.0, 250.0, 250.0])


def test_knapsack_wait_order() -> None:
    # t=1000: A (200 W) starts, B would make 300 W > 250: stop. t=1100 (A ends): C (ratio 2.2) then B (1.5)
    assert starts(KNAPSACK_EXAMPLE, "knapsack-wait", "mean", KNAPSACK_CAP, knapsack_until=5e4) == [1000, 1100, 1100]


def test_knapsack_stretch_order() -> None:
    # t=1000: B (100 W) and C (50 W) start, A would make 350 W: stop. t=1010 (B ends): A fits (250 W)
    assert starts(KNAPSACK_EXAMPLE, "knapsack-stretch", "mean", KNAPSACK_CAP, knapsack_until=5e4) == [1010, 1000, 1000]


def test_knapsack_stop_versus_skip() -> None:
    # wait order A, B, C under a 260 W cap: A starts, B does not fit (300 W); stop leaves C (250 W) waiting,
    # skip starts it
    cap = Cap([0.0, 1000.0, 50_000.0], [0.0, 260.0, 260.0])
    assert starts(KNAPSACK_EXAMPLE, "knapsack-wait", "mean", cap, knapsack_until=5e4) == [1000, 1100, 1100]
    assert starts(KNAPSACK_EXAMPLE, "knapsack-wait", "mean", cap, knapsack_until=5e4, knapsack="skip") == [
        1000,
        1100,
        1000,
    ]


def test_knapsack_is_easy_pc_after_the_window() -> None:
    # knapsack_until = 0: the whole run is outside the window, so the schedule is EASY+PC's
    for policy in ("knapsack-wait", "knapsack-stretch"):
        res = simulate(
            KNAPSACK_EXAMPLE, policy, 10, power_check=PowerCheck.named("mean"), cap=KNAPSACK_CAP, knapsack_until=0.0
        )
        easy = simulate(KNAPSACK_EXAMPLE, "easy-pc", 10, power_check=PowerCheck.named("mean"), cap=KNAPSACK_CAP)
        assert res.schedule["start_time"].to_list() == easy.schedule["start_time"].to_list()


@PROFILE
@given(
    power_workloads(),
    st.sampled_from(CHECKS),
    st.sampled_from(["knapsack-wait", "knapsack-stretch"]),
    st.sampled_from(["stop", "skip"]),
    st.lists(st.integers(200, 2000), min_size=0, max_size=3),
)
def test_knapsack_bookkeeping_never_exceeds_the_cap(jobs, check, policy, knapsack, levels) -> None:
    levels = [*levels, 20_000]
    times = [0.0] + [float(10 * (i + 1)) for i in range(len(levels) - 1)]
    cap = Cap(times, [float(v) for v in levels])
    pc = PowerCheck.named(check, knapsack=knapsack)
    assert_bookkeeping_under_cap(jobs, simulate(jobs, policy, 8, power_check=pc, cap=cap).schedule, pc, cap, 8)
