"""Metrics: hand-computed small schedules checked exactly, plus hypothesis properties linking the metrics."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.metrics import (
    add_job_metrics,
    default_window,
    makespan,
    queue_length_timeline,
    running_timeline,
    summarise,
    time_average,
    time_max,
    utilisation,
)

MACHINE = 4


def make_schedule(rows: list[tuple[float, float, float, int]], **extra: list) -> pl.DataFrame:
    """Schedule table from (submit, start, end, size) rows, with the simulator's column set and dtypes."""
    submit, start, end, size = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
    return pl.DataFrame(
        {
            "job_id": list(range(1, len(rows) + 1)),
            "user_id": [None] * len(rows),
            "submit_time": submit,
            "start_time": start,
            "end_time": end,
            "size": size,
            "walltime": [1000.0] * len(rows),
            "runtime": [e - s for s, e in zip(start, end, strict=True)],
            **extra,
        },
        schema_overrides={
            "job_id": pl.Int64,
            "user_id": pl.Int64,
            "submit_time": pl.Float64,
            "start_time": pl.Float64,
            "end_time": pl.Float64,
            "size": pl.Int64,
            "walltime": pl.Float64,
            "runtime": pl.Float64,
        },
    )


# Hand-checked schedule on a 4-unit machine; the clock does not start at 0, so the two makespans differ.
#   job  submit start end  size  wait  turnaround  run  slowdown  bounded (τ=10)
#   1    100    100   110  2     0     10          10   1         1
#   2    100    105   125  1     5     25          20   1.25      1.25
#   3    100    110   114  3     10    14          4    3.5       1.4
#   4    110    110   110  1     0     0           0    null      1
#   5    110    125   125  2     15    15          0    null      1.5
# Simultaneous events: three submissions at 100 (one starts at once); at 110 job 3 starts as job 5 arrives
# (queue change cancels: no row) and job 1 ends as job 3 starts (running count unchanged, busy units +1).
HAND = [
    (100.0, 100.0, 110.0, 2),
    (100.0, 105.0, 125.0, 1),
    (100.0, 110.0, 114.0, 3),
    (110.0, 110.0, 110.0, 1),
    (110.0, 125.0, 125.0, 2),
]


@pytest.fixture
def hand() -> pl.DataFrame:
    return make_schedule(HAND)


# ------------------------------------------------------------------------------------------ per-job metrics


def test_job_metrics_hand(hand: pl.DataFrame) -> None:
    out = add_job_metrics(hand)
    assert out.columns[: hand.width] == hand.columns
    assert out["wait"].to_list() == [0.0, 5.0, 10.0, 0.0, 15.0]
    assert out["turnaround"].to_list() == [10.0, 25.0, 14.0, 0.0, 15.0]
    assert out["slowdown"].to_list() == [1.0, 1.25, 3.5, None, None]
    assert out["bounded_slowdown"].to_list() == [1.0, 1.25, 1.4, 1.0, 1.5]
    assert out["slowdown"].dtype == pl.Float64


def test_job_metrics_tau(hand: pl.DataFrame) -> None:
    out = add_job_metrics(hand, tau=20.0)
    # turnaround / max(run, 20): 0.5, 1.25, 0.7, 0, 0.75 → floored at 1.
    assert out["bounded_slowdown"].to_list() == [1.0, 1.25, 1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="tau"):
        add_job_metrics(hand, tau=0.0)


def test_job_metrics_use_simulated_run_not_trace_runtime(hand: pl.DataFrame) -> None:
    """A runtime column still holding the unclipped trace value must not change the metrics."""
    skewed = hand.with_columns(pl.col("runtime") * 7 + 1)
    assert add_job_metrics(skewed).drop("runtime").equals(add_job_metrics(hand).drop("runtime"))


def test_job_metrics_reject_bad_schedules(hand: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="start_time < submit_time"):
        add_job_metrics(hand.with_columns(pl.col("start_time") - 50))
    with pytest.raises(ValueError, match="end_time < start_time"):
        add_job_metrics(hand.with_columns(pl.col("end_time") - 50))
    with pytest.raises(ValueError, match="nulls"):
        add_job_metrics(hand.with_columns(pl.lit(None, dtype=pl.Float64).alias("start_time")))
    with pytest.raises(ValueError, match="lacks column"):
        add_job_metrics(hand.drop("end_time"))


def test_job_metrics_empty_schedule() -> None:
    out = add_job_metrics(make_schedule([]))
    assert out.height == 0
    assert {"wait", "turnaround", "slowdown", "bounded_slowdown"} <= set(out.columns)


# ------------------------------------------------------------------------------------------- system metrics


def test_makespan_both_definitions(hand: pl.DataFrame) -> None:
    assert makespan(hand) == {"makespan_from_first_submit": 25.0, "makespan_from_zero": 125.0}
    assert default_window(hand) == (100.0, 125.0)
    with pytest.raises(ValueError, match="empty"):
        makespan(make_schedule([]))


def test_utilisation_full_span(hand: pl.DataFrame) -> None:
    # Σ size·run = 2·10 + 1·20 + 3·4 = 52 over 4 units × 25 s.
    assert utilisation(hand, MACHINE) == pytest.approx(52 / 100, rel=1e-15)


def test_utilisation_clips_jobs_at_window_edges(hand: pl.DataFrame) -> None:
    # [105, 112): job 1 for 5 s × 2, job 2 for 7 s × 1, job 3 for 2 s × 3 = 23 over 4 × 7.
    assert utilisation(hand, MACHINE, 105.0, 112.0) == pytest.approx(23 / 28, rel=1e-15)
    # Window wider than the span: the same work over a longer time.
    assert utilisation(hand, MACHINE, 90.0, 130.0) == pytest.approx(52 / 160, rel=1e-15)
    # Only t0 given: t1 defaults to max(end) = 125; job 2 for 15 s, job 3 for 4 s × 3 = 27 over 4 × 15.
    assert utilisation(hand, MACHINE, t0=110.0) == pytest.approx(27 / 60, rel=1e-15)
    # A window where nothing runs.
    assert utilisation(hand, MACHINE, 200.0, 300.0) == 0.0


def test_utilisation_rejects_bad_input(hand: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="t1"):
        utilisation(hand, MACHINE, 110.0, 110.0)
    with pytest.raises(ValueError, match="t1"):
        utilisation(hand, MACHINE, 120.0, 110.0)
    with pytest.raises(ValueError, match="machine_size"):
        utilisation(hand, 0)
    with pytest.raises(ValueError, match="empty"):
        utilisation(make_schedule([]), MACHINE)


def test_queue_length_timeline_hand(hand: pl.DataFrame) -> None:
    tl = queue_length_timeline(hand)
    assert tl.schema == pl.Schema({"time": pl.Float64, "queue_length": pl.Int64})
    # 100: jobs 2 and 3 queue (job 1 starts at once: merged, net +2); 105: job 2 starts;
    # 110: job 3 starts as job 5 arrives (cancels: no row; job 4 never waits); 125: job 5 starts.
    assert tl.rows() == [(100.0, 2), (105.0, 1), (125.0, 0)]


def test_running_timeline_hand(hand: pl.DataFrame) -> None:
    tl = running_timeline(hand)
    assert tl.schema == pl.Schema({"time": pl.Float64, "running_jobs": pl.Int64, "busy_units": pl.Int64})
    # 110: job 1 (2 units) ends as job 3 (3 units) starts; jobs 4 and 5 run for 0 s and never appear.
    assert tl.rows() == [(100.0, 1, 2), (105.0, 2, 3), (110.0, 2, 4), (114.0, 1, 1), (125.0, 0, 0)]


def test_timelines_drop_fully_cancelling_instants() -> None:
    # Job 2 is submitted and job 1 starts at 5; job 1 ends and job 2 starts at 8 with the same size.
    sched = make_schedule([(0.0, 5.0, 8.0, 2), (5.0, 8.0, 9.0, 2)])
    assert queue_length_timeline(sched).rows() == [(0.0, 1), (8.0, 0)]
    assert running_timeline(sched).rows() == [(5.0, 1, 2), (9.0, 0, 0)]


def test_timelines_empty() -> None:
    assert queue_length_timeline(make_schedule([])).height == 0
    none_waits = make_schedule([(0.0, 0.0, 0.0, 1)])
    assert queue_length_timeline(none_waits).height == 0
    assert running_timeline(none_waits).height == 0


def test_time_average_and_max(hand: pl.DataFrame) -> None:
    tl = queue_length_timeline(hand)
    # [100, 125): 2 for 5 s, 1 for 20 s.
    assert time_average(tl, "queue_length", 100.0, 125.0) == pytest.approx(30 / 25, rel=1e-15)
    # Before the first row the value is 0; after the last it holds (0 here).
    assert time_average(tl, "queue_length", 90.0, 130.0) == pytest.approx(30 / 40, rel=1e-15)
    assert time_average(tl, "queue_length", 105.0, 112.0) == 1.0
    assert time_average(tl, "queue_length", 0.0, 50.0) == 0.0
    assert time_max(tl, "queue_length", 90.0, 130.0) == 2.0
    assert time_max(tl, "queue_length", 105.0, 130.0) == 1.0
    assert time_max(tl, "queue_length", 0.0, 100.0) == 0.0  # [0, 100) ends where the queue fills
    busy = running_timeline(hand)
    # [100, 125): 2·5 + 3·5 + 4·4 + 1·11 = 52 unit-seconds, matching utilisation.
    assert time_average(busy, "busy_units", 100.0, 125.0) == pytest.approx(52 / 25, rel=1e-15)
    with pytest.raises(ValueError, match="t1"):
        time_average(tl, "queue_length", 5.0, 5.0)
    with pytest.raises(ValueError, match="columns"):
        time_average(tl, "nope", 0.0, 1.0)


# -------------------------------------------------------------------------------------------------- summary

EXPECTED_KEYS = [
    "n_jobs",
    "machine_size",
    *(f"{m}_{s}" for m in ("wait", "turnaround") for s in ("mean", "max", "p50", "p90", "p95", "p99")),
    *(f"slowdown_{s}" for s in ("mean", "max", "p50", "p90", "p95", "p99")),
    "slowdown_n_jobs",
    "slowdown_n_excluded",
    *(f"bounded_slowdown_{s}" for s in ("mean", "max", "p50", "p90", "p95", "p99")),
    "bounded_slowdown_tau",
    "makespan_from_first_submit",
    "makespan_from_zero",
    "utilisation",
    "utilisation_window_start",
    "utilisation_window_end",
    "queue_length_mean",
    "queue_length_max",
    "n_killed",
]


def test_summarise_hand(hand: pl.DataFrame) -> None:
    s = summarise(hand, MACHINE)
    assert list(s) == EXPECTED_KEYS
    # Percentiles use linear interpolation: p90 of 5 sorted values sits at index 3.6.
    expected = {
        "n_jobs": 5,
        "machine_size": 4,
        # waits sorted 0, 0, 5, 10, 15
        "wait_mean": 6.0, "wait_max": 15.0, "wait_p50": 5.0, "wait_p90": 13.0, "wait_p95": 14.0,
        "wait_p99": 14.8,
        # turnarounds sorted 0, 10, 14, 15, 25
        "turnaround_mean": 12.8, "turnaround_max": 25.0, "turnaround_p50": 14.0, "turnaround_p90": 21.0,
        "turnaround_p95": 23.0, "turnaround_p99": 24.6,
        # slowdowns of the three jobs with a positive run: 1, 1.25, 3.5 (p90 at index 1.8)
        "slowdown_mean": 5.75 / 3, "slowdown_max": 3.5, "slowdown_p50": 1.25, "slowdown_p90": 3.05,
        "slowdown_p95": 3.275, "slowdown_p99": 3.455,
        "slowdown_n_jobs": 3,
        "slowdown_n_excluded": 2,
        # bounded slowdowns sorted 1, 1, 1.25, 1.4, 1.5
        "bounded_slowdown_mean": 1.23, "bounded_slowdown_max": 1.5, "bounded_slowdown_p50": 1.25,
        "bounded_slowdown_p90": 1.46, "bounded_slowdown_p95": 1.48, "bounded_slowdown_p99": 1.496,
        "bounded_slowdown_tau": 10.0,
        "makespan_from_first_submit": 25.0,
        "makespan_from_zero": 125.0,
        "utilisation": 0.52,
        "utilisation_window_start": 100.0,
        "utilisation_window_end": 125.0,
        "queue_length_mean": 1.2,
        "queue_length_max": 2,
    }  # fmt: skip
    assert s.pop("n_killed") is None
    assert s == pytest.approx(expected, rel=1e-12)
    assert type(s["n_jobs"]) is int and type(s["queue_length_max"]) is int
    assert all(type(v) in (int, float) for v in s.values())
    assert json.loads(json.dumps(s)) == s


def test_summarise_window_and_killed(hand: pl.DataFrame) -> None:
    killed = hand.with_columns(pl.Series("killed", [False, True, False, False, None]))
    s = summarise(killed, MACHINE, window=(105.0, 112.0), percentiles=(50, 99.9))
    assert s["utilisation"] == pytest.approx(23 / 28, rel=1e-15)
    assert (s["utilisation_window_start"], s["utilisation_window_end"]) == (105.0, 112.0)
    assert s["queue_length_mean"] == 1.0 and s["queue_length_max"] == 1
    assert s["n_killed"] == 1
    assert "wait_p99_9" in s and "wait_p90" not in s
    assert s["wait_p99_9"] == pytest.approx(14.98, rel=1e-12)
    # Window-independent statistics stay whole-schedule.
    assert s["makespan_from_first_submit"] == 25.0 and s["wait_mean"] == 6.0


def test_summarise_all_zero_runs() -> None:
    s = summarise(make_schedule([(0.0, 4.0, 4.0, 1), (2.0, 4.0, 4.0, 1)]), MACHINE)
    assert s["slowdown_n_jobs"] == 0 and s["slowdown_n_excluded"] == 2
    assert s["slowdown_mean"] is None and s["slowdown_p50"] is None
    assert s["bounded_slowdown_mean"] == 1.0
    assert s["utilisation"] == 0.0
    json.dumps(s)


def test_summarise_errors(hand: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="empty schedule"):
        summarise(make_schedule([]), MACHINE)
    with pytest.raises(ValueError, match="t1"):
        summarise(hand, MACHINE, window=(110.0, 100.0))
    with pytest.raises(ValueError, match="percentiles"):
        summarise(hand, MACHINE, percentiles=(50, 101))


# ----------------------------------------------------------------------------------------------- properties

# Small integer times make ties (simultaneous events) common; arbitrary floats cover the general case.
_times = st.one_of(st.integers(0, 20).map(float), st.floats(0.0, 1e5, allow_nan=False, allow_infinity=False))


@st.composite
def schedules(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(1, 25))
    rows = []
    for _ in range(n):
        submit, wait, run = draw(_times), draw(_times), draw(_times)
        start = submit + wait
        rows.append((submit, start, start + run, draw(st.integers(1, 64))))
    return make_schedule(rows)


def _value_at(timeline: pl.DataFrame, column: str, t: np.ndarray) -> np.ndarray:
    """Evaluate a step-function timeline at times t (0 before the first row)."""
    idx = np.searchsorted(timeline["time"].to_numpy(), t, side="right") - 1
    values = timeline[column].to_numpy()
    return np.where(idx >= 0, values[np.maximum(idx, 0)] if values.size else 0, 0)


@settings(max_examples=200, deadline=None)
@given(schedules(), st.integers(1, 4096))
def test_utilisation_full_span_is_work_over_capacity(sched: pl.DataFrame, machine_size: int) -> None:
    t0, t1 = default_window(sched)
    if t1 <= t0:
        return
    work = float((sched["size"].cast(pl.Float64) * sched["runtime"]).sum())
    expected = work / (machine_size * (t1 - t0))
    assert utilisation(sched, machine_size) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(schedules())
def test_queue_time_average_times_span_is_total_wait(sched: pl.DataFrame) -> None:
    t0, t1 = default_window(sched)
    if t1 <= t0:
        return
    total_wait = float((sched["start_time"] - sched["submit_time"]).sum())
    got = time_average(queue_length_timeline(sched), "queue_length", t0, t1) * (t1 - t0)
    assert got == pytest.approx(total_wait, rel=1e-9, abs=1e-6)
    busy = time_average(running_timeline(sched), "busy_units", t0, t1) * (t1 - t0)
    work = float((sched["size"].cast(pl.Float64) * sched["runtime"]).sum())
    assert busy == pytest.approx(work, rel=1e-9, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(schedules(), st.floats(0.5, 100.0))
def test_slowdown_bounds(sched: pl.DataFrame, tau: float) -> None:
    out = add_job_metrics(sched, tau=tau)
    assert (out["bounded_slowdown"] >= 1.0).all()
    ran = out["end_time"] > out["start_time"]
    assert out["slowdown"].is_null().to_list() == (~ran).to_list()
    assert (out.filter(ran)["slowdown"] >= 1.0).all()
    assert out["bounded_slowdown"].is_finite().all()


@settings(max_examples=200, deadline=None)
@given(schedules())
def test_timelines_match_brute_force_counts(sched: pl.DataFrame) -> None:
    submit, start, end = (sched[c].to_numpy() for c in ("submit_time", "start_time", "end_time"))
    size = sched["size"].to_numpy()
    queue, running = queue_length_timeline(sched), running_timeline(sched)
    for tl in (queue, running):
        times = tl["time"].to_numpy()
        assert np.all(np.diff(times) > 0)
    # Values only change at event instants, so checking every event instant checks the whole function.
    instants = np.unique(np.concatenate((submit, start, end)))
    waiting = (submit[None, :] <= instants[:, None]) & (instants[:, None] < start[None, :])
    active = (start[None, :] <= instants[:, None]) & (instants[:, None] < end[None, :])
    assert np.array_equal(_value_at(queue, "queue_length", instants), waiting.sum(axis=1))
    assert np.array_equal(_value_at(running, "running_jobs", instants), active.sum(axis=1))
    assert np.array_equal(_value_at(running, "busy_units", instants), (active * size).sum(axis=1))
    # Minimal form: every row is a real change.
    for tl, col in ((queue, "queue_length"), (running, "running_jobs")):
        values = np.concatenate(([0], tl[col].to_numpy()))
        if col == "running_jobs":
            units = np.concatenate(([0], tl["busy_units"].to_numpy()))
            assert np.all((np.diff(values) != 0) | (np.diff(units) != 0))
        else:
            assert np.all(np.diff(values) != 0)


@settings(max_examples=60, deadline=None)
@given(schedules())
def test_system_timeline_matches_the_separate_timelines(schedule) -> None:
    from wattsched.metrics import system_timeline

    combined = system_timeline(schedule)
    t0, t1 = float(schedule["submit_time"].min()), float(schedule["end_time"].max()) + 1.0
    for column, separate in (
        ("queue_length", queue_length_timeline(schedule)),
        ("busy_units", running_timeline(schedule)),
    ):
        assert time_average(combined, column, t0, t1) == pytest.approx(time_average(separate, column, t0, t1))
