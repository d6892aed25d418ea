"""Workload windows with the pre-state ([AMBIG-0.9]): requeue, prestart and drop, and their jobs in the engine."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from wattsched.core.schema import Provenance, ReadResult, empty_rejects
from wattsched.engine.simulate import SimulationError, simulate
from wattsched.engine.windows import WindowSpec, cut_window, cut_windows, trace_starts, window_starts
from wattsched.policies.powercheck import PowerCheck
from wattsched.power.platform import PowerCapSchedule, load_platform
from wattsched.workload.generate import generate_m100like

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
    w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy(), prestate="prestart")
    assert w["job_id"].to_list() == [2, 3, 4, 5]
    row = {r["job_id"]: r for r in w.iter_rows(named=True)}
    # running at T: started at 150, 850 s elapsed → remaining runtime 1150, walltime 2150; sample 42 is in force
    assert row[2]["prestarted"] and not row[2]["requeued"] and row[2]["submit_time"] == 0.0
    assert (row[2]["runtime"], row[2]["walltime"]) == (1150.0, 2150.0)
    assert row[2]["power_profile"][0] == 42.0 and len(row[2]["power_profile"]) == 58
    assert row[2]["trace_start_time"] == 150.0 - 1000.0
    # queued at T: re-submitted at 0, unchanged otherwise
    assert not row[3]["prestarted"] and row[3]["submit_time"] == 0.0 and row[3]["runtime"] == 50.0
    assert (row[4]["submit_time"], row[5]["submit_time"]) == (0.0, 1000.0)


def test_cut_window_without_the_pre_state() -> None:
    w = cut_window(_trace(), 1000.0, 1.0, prestate="drop")
    assert w["job_id"].to_list() == [4, 5] and not w["prestarted"].any() and not w["requeued"].any()


def _two_running() -> pl.DataFrame:
    # window at T = 1000: job 9 (started 100) and job 7 (started 300) run across T, job 3 and job 1 are queued
    return pl.DataFrame(
        {
            "job_id": [1, 3, 7, 9, 12],
            "submit_time": [50.0, 60.0, 200.0, 90.0, 1000.0],
            "trace_start_time": [1500.0, 1100.0, 300.0, 100.0, 1000.0],
            "walltime": [100.0, 100.0, 2000.0, 1200.0, 60.0],
            "runtime": [50.0, 50.0, 1700.0, 1000.0, 30.0],
            "size": [1, 1, 1, 1, 1],
            "power_profile": [[1.0], [3.0], [float(k) for k in range(85)], [float(-k) for k in range(50)], [5.0]],
        },
        schema_overrides={"power_profile": pl.List(pl.Float32)},
    )


def test_cut_window_requeue_golden() -> None:
    trace = _two_running()
    w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy())  # requeue is the default
    # running first in trace-start order (9 started before 7), then queued in job-id order, then the window's own
    assert w["job_id"].to_list() == [9, 7, 1, 3, 12]
    assert w["queue_rank"].to_list() == [0, 1, 2, 3, None]
    assert w["requeued"].to_list() == [True, True, False, False, False] and not w["prestarted"].any()
    row = {r["job_id"]: r for r in w.iter_rows(named=True)}
    # job 9: 900 s elapsed → 100 s of runtime and 300 s of walltime left; sample 45 in force at T
    assert (row[9]["submit_time"], row[9]["runtime"], row[9]["walltime"]) == (0.0, 100.0, 300.0)
    assert row[9]["power_profile"][0] == -45.0 and len(row[9]["power_profile"]) == 5
    # job 7: 700 s elapsed → 1000 s and 1300 s left; sample 35
    assert (row[7]["runtime"], row[7]["walltime"]) == (1000.0, 1300.0)
    assert row[7]["power_profile"][0] == 35.0 and len(row[7]["power_profile"]) == 50
    assert (row[1]["runtime"], row[3]["walltime"]) == (50.0, 100.0)


def test_requeued_jobs_go_first_and_through_the_power_check() -> None:
    trace = _two_running()
    w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy()).with_columns(
        pl.lit(500.0).alias("est_dyn_mean"), pl.lit(500.0).alias("est_dyn_max"), pl.lit(0.0).alias("est_dyn_std")
    )
    # one unit: strict FCFS runs them one after the other in the window's queue order, although ids 1 and 3
    # come before 7 and 9 and every job is submitted at 0
    s = simulate(w, "fcfs", 1).schedule.sort("start_time")
    assert s["job_id"].to_list() == [9, 7, 1, 3, 12]
    # under a cap of 600 W (estimates 500 W each) with room for all, the requeued jobs do not start together
    res = simulate(w, "easy-pc", 5, power_check=PowerCheck.named("mean"), cap=PowerCapSchedule.constant(600.0))
    starts = dict(res.schedule.select("job_id", "start_time").iter_rows())
    assert starts[9] == 0.0 and starts[7] == 100.0 and starts[1] == 1100.0


def test_cut_window_old_booleans_warn() -> None:
    trace = _trace()
    with pytest.warns(FutureWarning, match="prestate = true is deprecated"):
        w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy(), prestate=True)
    assert w["prestarted"].sum() == 1
    with pytest.warns(FutureWarning, match="prestate = false is deprecated"):
        assert WindowSpec(prestate=False).prestate == "drop"
    with pytest.raises(ValueError, match="prestate must be one of"):
        WindowSpec(prestate="restart")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_running_job_is_requeued_once_with_its_remaining_runtime(seed: int) -> None:
    read = generate_m100like(3000, seed=seed, target_load=0.9)
    jobs = read.jobs.sort("submit_time", "job_id")
    start, _ = trace_starts(jobs, machine_size=read.provenance.machine_size)
    rng = np.random.default_rng(seed)
    sub = jobs["submit_time"].to_numpy()
    for t0 in rng.uniform(sub.min() + 6 * HOUR, sub.max() - 6 * HOUR, 3):
        w = cut_window(jobs, t0, 6.0, start=start)
        ran = np.minimum(jobs["runtime"].to_numpy(), jobs["walltime"].to_numpy())
        running = (sub < t0) & (start < t0) & (start + ran > t0)
        expect = dict(
            zip(
                jobs["job_id"].to_numpy()[running],
                jobs["runtime"].to_numpy()[running] - (t0 - start[running]),
                strict=True,
            )
        )
        req = w.filter(pl.col("requeued"))
        assert req["job_id"].n_unique() == req.height == len(expect) > 0
        assert w["job_id"].n_unique() == w.height
        got = dict(req.select("job_id", "runtime").iter_rows())
        assert got.keys() == expect.keys()
        assert all(abs(got[j] - expect[j]) < 1e-6 for j in expect)
        # the requeued jobs head the queue, in trace-start order
        head = w.head(req.height)
        assert head["requeued"].all()
        order = head.join(jobs.select("job_id", pl.Series("s", start)), on="job_id", maintain_order="left")["s"]
        assert (order.diff().drop_nulls() >= 0).all()


def test_prestarted_jobs_start_at_zero_whatever_the_policy_and_cap() -> None:
    trace = _trace()
    w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy(), prestate="prestart").with_columns(
        pl.lit(500.0).alias("est_dyn_mean"), pl.lit(500.0).alias("est_dyn_max"), pl.lit(0.0).alias("est_dyn_std")
    )
    res = simulate(w, "easy-pc", 2, power_check=PowerCheck.named("mean"), cap=PowerCapSchedule.constant(600.0))
    s = {r["job_id"]: r for r in res.schedule.iter_rows(named=True)}
    assert s[2]["start_time"] == 0.0 and s[2]["end_time"] == 1150.0
    # job 3 waits for room (2 units, both taken by job 2), then for power (500 + 500 > 600)
    assert s[3]["start_time"] == 1150.0


def test_prestarted_jobs_that_do_not_fit_and_conservative_are_refused() -> None:
    trace = _trace()
    w = cut_window(trace, 1000.0, 1.0, start=trace["trace_start_time"].to_numpy(), prestate="prestart")
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
    windows = cut_windows(read, WindowSpec(count=2, hours=12.0, seed=1, prestate="prestart"))
    assert len(windows) == 2
    plat = load_platform("marconi100")
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
    ((_, w),) = cut_windows(read, WindowSpec(count=1, hours=1.0, seed=0))
    assert w.rejects.height == 0 and w.provenance.source == "t#window0"


def test_requeued_windows_of_a_generated_workload_simulate_under_a_cap() -> None:
    read = generate_m100like(6000, seed=2, target_load=1.0)
    plat = load_platform("marconi100")
    for _, w in cut_windows(read, WindowSpec(count=2, hours=12.0, seed=1)):
        header = w.provenance.header["window"]
        assert header["prestate"] == "requeue" and header["requeued"] == int(w.jobs["requeued"].sum()) > 0
        assert header["prestarted"] == 0
        jobs = w.jobs.with_columns(
            (pl.col("size") * 1000.0).alias("est_dyn_mean"),
            (pl.col("size") * 1000.0).alias("est_dyn_max"),
            pl.lit(0.0).alias("est_dyn_std"),
        )
        cap = PowerCapSchedule.constant(0.3 * plat.dynamic_range)
        jobs = jobs.filter(pl.col("est_dyn_max") <= cap.caps[0])  # the others could never start
        res = simulate(jobs, "easy-pc", plat.nodes, power_check=PowerCheck.named("max"), cap=cap)
        s = res.schedule.join(jobs.select("job_id", "requeued", "est_dyn_max"), on="job_id")
        # never more estimated power at once than the cap: the requeued jobs went through the check
        t = s["start_time"].to_numpy()
        running = (s["start_time"].to_numpy()[:, None] <= t) & (s["end_time"].to_numpy()[:, None] > t)
        assert (s["est_dyn_max"].to_numpy() @ running).max() <= cap.caps[0] + 1e-6


def test_one_window_through_the_api_and_the_cli(tmp_path) -> None:
    from typer.testing import CliRunner

    from wattsched.api import workload_window
    from wattsched.cli import app
    from wattsched.workload.tableio import write_table

    read = generate_m100like(3000, seed=1, target_load=0.9)
    t0 = float(read.jobs["submit_time"].quantile(0.5))
    w = workload_window(read, t0, 6.0)
    header = w.provenance.header["window"]
    assert header["prestate"] == "requeue" and header["start"] == t0 and header["requeued"] > 0
    assert w.provenance.source.endswith(f"#window@{t0:g}s")
    expect = cut_window(
        read.jobs.sort("submit_time", "job_id"), t0, 6.0,
        start=trace_starts(read.jobs.sort("submit_time", "job_id"), machine_size=read.provenance.machine_size)[0],
    )  # fmt: skip
    assert w.jobs["job_id"].to_list() == expect["job_id"].to_list()
    assert workload_window(read, t0, 6.0, prestate="drop").jobs.height < w.jobs.height
    with pytest.raises(Exception, match="outside the workload's submissions"):
        workload_window(read, -5.0)

    path = tmp_path / "w.parquet"
    write_table(read.jobs, path, provenance=read.provenance)
    runner = CliRunner()
    base = ["simulate", "--workload", str(path), "--policy", "easy-pc", "--platform", "marconi100",
            "--power-check", "max", "--cap", "0.5", "--window", "10800", "--window-start", str(t0),
            "--window-hours", "6"]  # fmt: skip
    out = {}
    for pre in ("requeue", "prestart", "drop"):
        for post in ("dynamic_range", "none", "0.8", "350000W"):
            res = runner.invoke(app, [*base, "--prestate", pre, "--post-window-cap", post,
                                      "--output", str(tmp_path / f"{pre}-{post}")])  # fmt: skip
            assert res.exit_code == 0, res.output
            out[pre, post] = json.loads((tmp_path / f"{pre}-{post}" / "summary.json").read_text())
    assert out["requeue", "none"]["workload"]["jobs"] == w.jobs.height
    # real max under requeue never breaks the cap; with prestart the pre-state's power is reported apart
    assert all(out["requeue", p]["power"]["machine_trespass"] is False for p in ("dynamic_range", "none"))
    assert out["prestart", "none"]["power"]["prestate_max_dynamic"] > 0
    assert out["requeue", "none"]["power"]["prestate_max_dynamic"] == 0.0
    res = runner.invoke(app, [*base, "--prestate", "restart", "--output", str(tmp_path / "x")])
    assert res.exit_code == 2 and "'restart' is not one of 'requeue', 'prestart', 'drop'" in res.output
