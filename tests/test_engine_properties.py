"""Engine invariants on random workloads (hypothesis), and agreement with the naive reference simulator."""

from __future__ import annotations

import os

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_sim import RefJob, simulate_reference
from wattsched.core.schema import QUEUE_RANK, _in_queue_order, sort_queue_order
from wattsched.engine.simulate import simulate
from wattsched.policies.registry import POLICIES

MACHINE = 8
POLICY_SHAPES = {
    "fcfs": ("fcfs", "none"),
    "sjf": ("sjf", "none"),
    "ljf": ("ljf", "none"),
    "easy": ("fcfs", "easy"),
    "easy-sjf": ("sjf", "easy"),
    "easy-saf": ("saf", "easy"),
    "conservative": ("fcfs", "conservative"),
    "easy-pc": ("fcfs", "easy"),
    "easy-saf-pc": ("saf", "easy"),  # without a power check: EASY and EASY-SAF
}
PROFILE = settings(
    max_examples=int(os.environ.get("WATTSCHED_HYPOTHESIS_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def workloads(draw, exact: bool = False, with_estimates: bool = False, max_jobs: int = 25):
    """Small integer-timed workloads: many ties, zero runtimes, kills at walltime, jobs as wide as the machine."""
    n = draw(st.integers(1, max_jobs))
    submit = np.cumsum(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)))
    size = draw(st.lists(st.integers(1, MACHINE), min_size=n, max_size=n))
    wall = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    run = wall if exact else [draw(st.integers(0, w + 5)) for w in wall]
    cols = {
        "job_id": list(range(1, n + 1)),
        "submit_time": submit.astype(float),
        "size": size,
        "walltime": [float(w) for w in wall],
        "runtime": [float(r) for r in run],
    }
    if with_estimates:
        cols["pred"] = [float(draw(st.integers(0, 30))) for _ in range(n)]
    return pl.DataFrame(cols)


def brute_force_checks(jobs: pl.DataFrame, sched: pl.DataFrame) -> None:
    s = sched.sort("job_id")
    j = jobs.sort("job_id")
    start = s["start_time"].to_numpy()
    end = s["end_time"].to_numpy()
    assert not np.isnan(start).any() and not np.isnan(end).any(), "every job starts and ends"
    assert s.height == j.height and s["job_id"].n_unique() == s.height, "each job exactly once"
    assert (start >= j["submit_time"].to_numpy()).all(), "start >= submit"
    expected_run = np.minimum(j["runtime"].to_numpy(), j["walltime"].to_numpy())
    assert np.allclose(end - start, expected_run), "runs last min(runtime, walltime)"
    size = j["size"].to_numpy()
    for t in np.unique(np.concatenate([start, end])):
        busy = size[(start <= t) & (end > t)].sum()
        assert busy <= MACHINE, f"over-allocation at t={t}"
        zero = (start == t) & (end == t)
        across = size[(start < t) & (end > t)].sum()
        assert (size[zero] <= MACHINE - across).all(), f"zero-length job does not fit at t={t}"


@PROFILE
@given(workloads(), st.sampled_from(sorted(POLICIES)))
def test_invariants(jobs: pl.DataFrame, policy: str) -> None:
    brute_force_checks(jobs, simulate(jobs, policy, MACHINE).schedule)


@PROFILE
@given(workloads(with_estimates=True), st.sampled_from(sorted(POLICY_SHAPES)))  # the policies the oracle knows
def test_agrees_with_reference_simulator(jobs: pl.DataFrame, policy: str) -> None:
    for estimate in (None, "pred"):
        sched = simulate(jobs, policy, MACHINE, runtime_estimate=estimate).schedule
        est = sched.sort("job_id")["estimate"].to_list()
        ref_jobs = [
            RefJob(i, r["submit_time"], r["size"], r["walltime"], r["runtime"], est[i])
            for i, r in enumerate(jobs.sort("job_id").iter_rows(named=True))
        ]
        order, backfill = POLICY_SHAPES[policy]
        ref = simulate_reference(ref_jobs, MACHINE, order, backfill)
        got = sched.sort("job_id")["start_time"].to_list()
        assert got == [ref[i] for i in range(len(ref_jobs))], (policy, estimate)


@PROFILE
@given(workloads(exact=True))
def test_easy_never_delays_the_head_reservation_when_runtimes_equal_walltimes(jobs: pl.DataFrame) -> None:
    """FCFS EASY only: under easy-sjf/easy-saf a newcomer that sorts first becomes the priority job and may take
    the units reserved for the previous one (docs/semantics.md §3.1), which is how SAF starves wide jobs."""
    s = simulate(jobs, "easy", MACHINE).schedule
    reserved = s.filter(pl.col("first_reservation").is_not_nan())
    assert (reserved["start_time"] <= reserved["first_reservation"]).all()


@PROFILE
@given(workloads())
def test_easy_head_guarantee_holds_with_early_completions_too(jobs: pl.DataFrame) -> None:
    s = simulate(jobs, "easy", MACHINE).schedule
    reserved = s.filter(pl.col("first_reservation").is_not_nan())
    assert (reserved["start_time"] <= reserved["first_reservation"]).all()


@PROFILE
@given(workloads())
def test_conservative_never_delays_any_reservation(jobs: pl.DataFrame) -> None:
    s = simulate(jobs, "conservative", MACHINE).schedule
    assert s["first_reservation"].is_not_nan().all(), "every job gets a reservation"
    assert (s["start_time"] <= s["first_reservation"]).all()


@PROFILE
@given(workloads())
def test_fcfs_starts_jobs_in_queue_order(jobs: pl.DataFrame) -> None:
    s = simulate(jobs, "fcfs", MACHINE).schedule.sort(["submit_time", "job_id"])
    assert (np.diff(s["start_time"].to_numpy()) >= 0).all()


@PROFILE
@given(workloads(), st.sampled_from(sorted(POLICIES)))
def test_deterministic_and_independent_of_chunking(jobs: pl.DataFrame, policy: str) -> None:
    a = simulate(jobs, policy, MACHINE).schedule
    b = simulate(jobs, policy, MACHINE).schedule
    calls: list[int] = []
    c = simulate(jobs, policy, MACHINE, progress=lambda done, total: calls.append(done), chunks=7).schedule
    assert a.equals(b) and a.equals(c)
    assert calls[-1] == jobs.height


@PROFILE
@given(workloads(), st.sampled_from(sorted(POLICIES)), st.data())
def test_policy_never_sees_true_runtimes(jobs: pl.DataFrame, policy: str, data) -> None:
    """Changing a job's true runtime changes nothing that happens before that job could have ended."""
    k = data.draw(st.integers(0, jobs.height - 1))
    wall = jobs["walltime"][k]
    new_run = float(data.draw(st.integers(0, int(wall) + 5)))
    changed = jobs.with_columns(
        pl.when(pl.int_range(pl.len()) == k).then(new_run).otherwise(pl.col("runtime")).alias("runtime")
    )
    a = simulate(jobs, policy, MACHINE).schedule.sort("job_id")
    b = simulate(changed, policy, MACHINE).schedule.sort("job_id")
    ka = a.row(k, named=True)
    horizon = ka["start_time"] + min(new_run, jobs["runtime"][k], wall)
    before = (a["start_time"] < horizon).to_numpy()
    assert (a["start_time"].to_numpy()[before] == b["start_time"].to_numpy()[before]).all()


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, -0.0, 1.0, 2.0, float("nan")]),
            st.one_of(st.none(), st.integers(0, 2)),
            st.integers(-2, 2),
        ),
        max_size=8,
    ),
    st.booleans(),
)
def test_queue_order_skips_only_a_sort_that_would_not_move_a_row(rows: list, rank: bool) -> None:  # type: ignore[type-arg]
    """``sort_queue_order`` returns rows already in order as they are: the same frame as polars' stable sort, on
    ties, nulls last in ``queue_rank``, NaN submit times and ±0.0 alike."""
    schema = {"submit_time": pl.Float64, "job_id": pl.Int64} | ({QUEUE_RANK: pl.Int64} if rank else {})
    data = {"submit_time": [r[0] for r in rows], "job_id": [r[2] for r in rows]}
    jobs = pl.DataFrame(data | ({QUEUE_RANK: [r[1] for r in rows]} if rank else {}), schema=schema)
    keys = ["submit_time", *([QUEUE_RANK] if rank else []), "job_id"]
    expected = jobs.sort(keys, nulls_last=True, maintain_order=True)
    assert sort_queue_order(jobs).equals(expected)
    if _in_queue_order(jobs):
        assert jobs.equals(expected)
