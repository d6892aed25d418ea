"""Workload windows with the pre-state ([AMBIG-0.9]) and prestarted jobs in the engine."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wattsched.platform.power import PLATFORMS, PowerCapSchedule
from wattsched.sched.powercheck import PowerCheck
from wattsched.sim.engine import SimulationError, simulate
from wattsched.workload.generate import generate_m100like
from wattsched.workload.schema import Provenance, ReadResult, empty_rejects
from wattsched.workload.windows import WindowSpec, cut_window, cut_windows, trace_starts, window_starts

HOUR = 3600.0


def _trace() -> pl.DataFrame:
    # window [1000, 1000 + 3600): job 1 ended before, 2 runs across T, 3 is queued at T, 4 and 5 inside, 6 after
    return pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4, 5, 6],
            "submit_time": [0.0, 100.0, 900.0, 1000.0, 2000.0, 5000.0],
            "trace_start_time": [0.0, 150.0, 1200.0, 1000.0, 2500.0, 5000.0],
            "walltime": [500.0, 3000.0, 100.0, 60.0, 60.0, 60.0],
            "runtime": [400.0, 2000.0, 50.0, 30.0, 30.0, 30.0],
            "size": [1, 2, 1, 1, 1, 1],
            "power_profile": [[1.0] * 20, [float(k) for k in range(100)], [3.0] * 3, [4.0], [5.0], [6.0]],
        },
        schema_overrides={"power_profile": pl.List(pl.Float32)},
    )


def test_cut_window_with_the_pre_state() -> None:
    trace = _trace()
    w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy())
    assert w["job_id"].to_list() == [2, 3, 4, 5]
    row = {r["job_id"]: r for r in w.iter_rows(named=True)}
    # running at T: started at 150, 850 s elapsed → remaining runtime 1150, walltime 2150; sample 42 is in force
    assert row[2]["prestarted"] and row[2]["submit_time"] == 0.0
    assert (row[2]["runtime"], row[2]["walltime"]) == (1150.0, 2150.0)
    assert row[2]["power_profile"][0] == 42.0 and len(row[2]["power_profile"]) == 58
    assert row[2]["trace_start_time"] == 150.0 - 1000.0
    # queued at T: re-submitted at 0, unchanged otherwise
    assert not row[3]["prestarted"] and row[3]["submit_time"] == 0.0 and row[3]["runtime"] == 50.0
    assert (row[4]["submit_time"], row[5]["submit_time"]) == (0.0, 1000.0)


def test_cut_window_without_the_pre_state() -> None:
    w = cut_window(_trace(), 1000.0, 1.0, prestate=False)
    assert w["job_id"].to_list() == [4, 5] and not w["prestarted"].any()


def test_prestarted_jobs_start_at_zero_whatever_the_policy_and_cap() -> None:
    trace = _trace()
    w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy()).with_columns(
        pl.lit(500.0).alias("est_dyn_mean"), pl.lit(500.0).alias("est_dyn_max"), pl.lit(0.0).alias("est_dyn_std")
    )
    res = simulate(w, "easy-pc", 2, power_check=PowerCheck.named("mean"), cap=PowerCapSchedule.constant(600.0))
    s = {r["job_id"]: r for r in res.schedule.iter_rows(named=True)}
    assert s[2]["start_time"] == 0.0 and s[2]["end_time"] == 1150.0
    # job 3 waits for room (2 units, both taken by job 2), then for power (500 + 500 > 600)
    assert s[3]["start_time"] == 1150.0


def test_prestarted_jobs_that_do_not_fit_and_conservative_are_refused() -> None:
    trace = _trace()
    w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy())
    crowded = w.with_columns(
        pl.when(pl.col("job_id") == 3).then(True).otherwise(pl.col("prestarted")).alias("prestarted"),
        pl.when(pl.col("job_id") == 3).then(2).otherwise(pl.col("size")).alias("size"),
    )
    with pytest.raises(SimulationError, match="job 3 was already running when the window opened"):
        simulate(crowded, "easy", 3)
    with pytest.raises(SimulationError, match="conservative"):
        simulate(w, "conservative", 4)


def test_window_starts_are_seeded_and_inside_the_trace() -> None:
    jobs = _trace()
    a = window_starts(jobs, WindowSpec(count=5, hours=1.0, seed=3))
    assert np.array_equal(a, window_starts(jobs, WindowSpec(count=5, hours=1.0, seed=3)))
    assert not np.array_equal(a, window_starts(jobs, WindowSpec(count=5, hours=1.0, seed=4)))
    assert np.all(a >= 0.0) and np.all(a <= 5000.0 - HOUR) and np.all(np.diff(a) >= 0)
    with pytest.raises(Exception, match="shorter than one"):
        window_starts(jobs, WindowSpec(count=1, hours=2.0))


def test_trace_starts_sources() -> None:
    jobs = _trace()
    start, where = trace_starts(jobs)
    assert where == "trace (trace_start_time)" and start[2] == 1200.0
    start, where = trace_starts(jobs.drop("trace_start_time"), machine_size=4)
    assert where.startswith("replay") and np.all(start >= jobs["submit_time"].to_numpy())
    with pytest.raises(Exception, match="no trace schedule"):
        trace_starts(jobs.drop("trace_start_time"), "trace")


def test_windows_of_a_generated_workload_simulate_with_power() -> None:
    read = generate_m100like(6000, seed=2, target_load=1.0)
    windows = cut_windows(read, WindowSpec(count=2, hours=12.0, seed=1))
    assert len(windows) == 2
    plat = PLATFORMS["marconi100"]
    for t0, w in windows:
        header = w.provenance.header["window"]
        assert header["start"] == t0 and header["prestarted"] == int(w.jobs["prestarted"].sum()) > 0
        res = simulate(w.jobs, "easy", plat.nodes)
        pre = res.schedule.join(w.jobs.select("job_id", "prestarted"), on="job_id").filter(pl.col("prestarted"))
        assert (pre["start_time"] == 0.0).all()
        assert (w.jobs["submit_time"] >= 0).all() and (w.jobs["submit_time"] < 12 * HOUR).all()


def test_reject_tables_are_kept_empty_per_window() -> None:
    jobs = _trace()
    read = ReadResult(jobs, empty_rejects(), Provenance(source="t", format="test", machine_size=4))
    (_, w), = cut_windows(read, WindowSpec(count=1, hours=1.0, seed=0))
    assert w.rejects.height == 0 and w.provenance.source == "t#window0"
