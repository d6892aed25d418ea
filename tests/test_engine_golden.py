"""Hand-computed schedules (the worked examples of docs/semantics.md): each one separates policies."""

from __future__ import annotations

import math

import polars as pl
import pytest

from wattsched.engine.simulate import SimulationError, simulate


def table(rows: list[tuple[float, int, float, float]]) -> pl.DataFrame:
    """(submit, size, walltime, runtime) rows; job ids 1..n."""
    return pl.DataFrame(
        {
            "job_id": list(range(1, len(rows) + 1)),
            "submit_time": [float(r[0]) for r in rows],
            "size": [r[1] for r in rows],
            "walltime": [float(r[2]) for r in rows],
            "runtime": [float(r[3]) for r in rows],
        }
    )


def starts(jobs: pl.DataFrame, policy: str, machine: int, **kw) -> list[float]:
    return simulate(jobs, policy, machine, **kw).schedule.sort("job_id")["start_time"].to_list()


# Example A (docs/semantics.md §3.1): a short job arrives behind a blocked wide job.
EXAMPLE_A = table([(0, 2, 10, 10), (1, 4, 10, 10), (2, 2, 5, 5), (3, 2, 20, 20)])

# Example B (§3.2): EASY protects only the head; conservative protects every queued job.
EXAMPLE_B = table([(0, 2, 10, 10), (1, 3, 10, 10), (2, 4, 10, 10), (3, 1, 30, 30)])


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("fcfs", [0, 10, 20, 20]),
        ("sjf", [0, 10, 2, 20]),
        ("ljf", [0, 23, 33, 3]),
        ("easy", [0, 10, 2, 20]),
        ("easy-sjf", [0, 10, 2, 20]),
        ("easy-saf", [0, 10, 2, 20]),
        ("conservative", [0, 10, 2, 20]),
    ],
)
def test_example_a(policy: str, expected: list[float]) -> None:
    assert starts(EXAMPLE_A, policy, 4) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("fcfs", [0, 10, 20, 30]),
        ("sjf", [0, 10, 20, 30]),
        ("ljf", [0, 10, 33, 3]),
        ("easy", [0, 10, 33, 3]),
        ("conservative", [0, 10, 20, 30]),
    ],
)
def test_example_b_easy_vs_conservative(policy: str, expected: list[float]) -> None:
    assert starts(EXAMPLE_B, policy, 4) == expected


def test_example_b_reservations() -> None:
    easy = simulate(EXAMPLE_B, "easy", 4).schedule.sort("job_id")
    # job 2 is the priority job at t=1 (shadow 10); job 3 becomes it at t=10 (shadow 33, behind backfilled job 4)
    assert easy["first_reservation"].to_list()[1:3] == [10.0, 33.0]
    cons = simulate(EXAMPLE_B, "conservative", 4).schedule.sort("job_id")
    assert cons["first_reservation"].to_list() == [0.0, 10.0, 20.0, 30.0]


def test_extra_units_rule() -> None:
    # machine 10; job 1 holds 6 units until 100. Head job 2 needs 8: shadow 100, extra = 10 - 8 = 2.
    # job 3 (2 units, long) uses the extra units; job 4 (2 units, long) would exceed them and must wait.
    jobs = table([(0, 6, 100, 100), (1, 8, 50, 50), (2, 2, 500, 500), (3, 2, 500, 500)])
    assert starts(jobs, "easy", 10) == [0, 100, 2, 150]


def test_extra_counts_all_jobs_ending_at_the_shadow_time() -> None:
    # two running jobs end at 100; the head needs 5 of the 8 units then free: extra = 3
    jobs = table([(0, 4, 100, 100), (0, 4, 100, 100), (1, 5, 10, 10), (2, 3, 1000, 1000)])
    # nothing is free until 100 so job 4 cannot start early, but at t=100 both start together
    assert starts(jobs, "easy", 8) == [0, 0, 100, 100]
    jobs = table([(0, 3, 100, 100), (0, 3, 100, 100), (1, 5, 10, 10), (2, 1, 1000, 1000)])
    # 2 units free now; the first job ending at 100 already gives the head its 5 units, but both end then:
    # 8 units are free at the shadow time, extra = 3, so the long 1-unit job backfills now
    assert starts(jobs, "easy", 8) == [0, 0, 100, 2]


def test_conservative_compresses_after_early_completion() -> None:
    # job 1 asks for 100 s but ends at 10: the reservations of jobs 2 and 3 (at 100) move to 10
    jobs = table([(0, 4, 100, 10), (1, 2, 50, 50), (2, 2, 50, 50)])
    sched = simulate(jobs, "conservative", 4).schedule.sort("job_id")
    assert sched["start_time"].to_list() == [0, 10, 10]
    assert sched["first_reservation"].to_list() == [0, 100, 100]


def test_zero_runtime_job_completes_at_its_start_instant() -> None:
    # job 1 runs 0 s: its completion is a new event at t=0, after which job 2 starts at t=0 too
    jobs = table([(0, 2, 10, 0), (0, 2, 5, 5)])
    for policy in ("fcfs", "easy", "conservative"):
        sched = simulate(jobs, policy, 2).schedule.sort("job_id")
        assert sched["start_time"].to_list() == [0, 0]
        assert sched["end_time"].to_list() == [0, 5]


def test_completions_are_applied_before_submissions() -> None:
    jobs = table([(0, 2, 10, 10), (10, 2, 5, 5)])
    assert starts(jobs, "fcfs", 2) == [0, 10]


def test_jobs_are_killed_at_walltime() -> None:
    jobs = table([(0, 1, 10, 25)])
    sched = simulate(jobs, "easy", 1).schedule
    assert sched["end_time"][0] == 10 and sched["runtime"][0] == 10
    assert sched["trace_runtime"][0] == 25 and sched["killed"][0]


def test_queue_order_is_submit_then_job_id_whatever_the_row_order() -> None:
    jobs = pl.DataFrame(
        {
            "job_id": [7, 3, 5],
            "submit_time": [0.0, 0.0, 0.0],
            "size": [2, 2, 2],
            "walltime": [10.0, 10.0, 10.0],
            "runtime": [10.0, 10.0, 10.0],
        }
    )
    sched = simulate(jobs, "fcfs", 2).schedule
    assert dict(zip(sched["job_id"], sched["start_time"], strict=True)) == {3: 0, 5: 10, 7: 20}


def test_runtime_estimate_column_drives_sjf_and_backfilling() -> None:
    # by walltime, job 3 (wall 100) cannot backfill before the shadow at 10; with a predicted 5 s it can
    jobs = table([(0, 2, 10, 10), (1, 4, 10, 10), (2, 2, 100, 5)]).with_columns(
        pl.Series("pred_runtime", [10.0, 10.0, 5.0])
    )
    assert starts(jobs, "easy", 4) == [0, 10, 20]
    assert starts(jobs, "easy", 4, runtime_estimate="pred_runtime") == [0, 10, 2]


def test_estimates_are_capped_and_missing_ones_fall_back_to_walltime() -> None:
    jobs = table([(0, 1, 10, 10), (0, 1, 10, 10)]).with_columns(pl.Series("est", [50.0, math.nan]))
    res = simulate(jobs, "easy", 1, runtime_estimate="est")
    assert res.schedule["estimate"].to_list() == [10.0, 10.0]
    assert any("capped" in n for n in res.notes) and any("walltime was used" in n for n in res.notes)


def test_missing_estimate_column_is_a_clear_error() -> None:
    with pytest.raises(SimulationError, match="pred_runtime"):
        simulate(EXAMPLE_A, "easy", 4, runtime_estimate="pred_runtime")


def test_oversized_job_is_refused_with_its_id() -> None:
    with pytest.raises(SimulationError, match="job 2 has size 4"):
        simulate(EXAMPLE_A, "easy", 3)


def test_unknown_policy() -> None:
    with pytest.raises(ValueError, match="unknown policy 'best'"):
        simulate(EXAMPLE_A, "best", 4)
