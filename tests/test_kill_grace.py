"""A walltime grace, Slurm's OverTimeLimit (issue 30, item 5): on real traces many jobs overrun their limit by
seconds (accounting slack) and were all killed without notice. ``kill_grace`` lets them finish; a run in which
more than a few percent of the jobs are killed warns, naming the option."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from wattsched import run_policy, simulate
from wattsched.cli import app
from wattsched.core.schema import ReadResult
from wattsched.engine.simulate import SimulationError
from wattsched.workload.generate import generate_lublin
from wattsched.workload.save import save_workload


def _overrunning(n: int = 200, share: float = 0.5, by: float = 10.0, seed: int = 1) -> ReadResult:
    """A Lublin workload in which ``share`` of the jobs run ``by`` seconds past their walltime."""
    read = generate_lublin(n, 32, seed=seed)
    rng = np.random.default_rng(seed)
    over = rng.random(read.jobs.height) < share
    jobs = read.jobs.with_columns(
        pl.when(pl.Series(over)).then(pl.col("walltime") + by).otherwise(pl.col("runtime")).alias("runtime")
    )
    return read._replace(jobs=jobs)


def test_grace_lets_overrunning_jobs_finish_and_still_kills_the_rest() -> None:
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3],
            "submit_time": [0.0, 0.0, 0.0],
            "size": [1, 1, 1],
            "walltime": [100.0, 100.0, 100.0],
            "runtime": [50.0, 130.0, 200.0],
        }
    )
    strict = simulate(jobs, "easy", 4).schedule.sort("job_id")
    assert strict["runtime"].to_list() == [50.0, 100.0, 100.0]
    assert strict["killed"].to_list() == [False, True, True]
    graced = simulate(jobs, "easy", 4, kill_grace=60.0)
    schedule = graced.schedule.sort("job_id")
    assert schedule["runtime"].to_list() == [50.0, 130.0, 160.0]
    assert schedule["killed"].to_list() == [False, False, True]
    assert graced.info()["kill_grace"] == 60.0
    with pytest.raises(SimulationError, match="kill_grace must be a finite number of seconds >= 0"):
        simulate(jobs, "easy", 4, kill_grace=-1.0)


@settings(max_examples=30, deadline=None)
@given(grace=st.floats(0, 500), seed=st.integers(0, 50), policy=st.sampled_from(["fcfs", "easy", "conservative"]))
def test_every_job_runs_its_runtime_cut_at_walltime_plus_grace(grace: float, seed: int, policy: str) -> None:
    read = _overrunning(120, 0.4, by=float(seed * 7), seed=seed)
    schedule = simulate(read, policy, kill_grace=grace).schedule
    limit = schedule["walltime"] + grace
    expected = np.minimum(schedule["trace_runtime"].to_numpy(), limit.to_numpy())
    np.testing.assert_allclose(schedule["runtime"].to_numpy(), expected)
    assert (schedule["killed"] == (schedule["trace_runtime"] > limit)).all()


def test_a_run_killing_many_jobs_warns_from_python_and_the_cli(tmp_path: Path) -> None:
    read = _overrunning()
    run = run_policy(read, "easy")
    (warning,) = run.summary["run"]["warnings"]
    killed = int(run.jobs["killed"].sum())
    assert killed > 0.3 * read.jobs.height
    assert f"{killed:,} of {read.jobs.height:,} jobs" in warning and "--kill-grace" in warning
    assert "by 10 s at the median" in warning
    assert run_policy(read, "easy", kill_grace=30.0).summary["run"]["warnings"] == []

    path = tmp_path / "over.parquet"
    save_workload(read, path)
    runner = CliRunner()
    cli = runner.invoke(app, ["simulate", "--workload", str(path), "--policy", "easy", "--output", str(tmp_path / "a")])
    assert cli.exit_code == 0, cli.output
    assert "warning:" in cli.stderr and "were killed at their walltime" in cli.stderr
    assert f"{killed:,} ({killed / read.jobs.height:.1%})" in cli.stdout
    base = ["simulate", "--workload", str(path), "--policy", "easy"]
    args = [*base, "--kill-grace", "30", "--output", str(tmp_path / "b")]
    graced = runner.invoke(app, args)
    assert graced.exit_code == 0, graced.output
    assert "killed at their walltime" not in graced.stderr
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["run"]["kill_grace"] == 30.0 and summary["metrics"]["n_killed"] == 0
    refused = runner.invoke(app, [*base, "--kill-grace", "-5", "--output", str(tmp_path / "c")])
    assert refused.exit_code == 2
