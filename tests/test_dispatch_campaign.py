"""Paper 001's experiment end to end on real Eurora instances: a dispatch campaign from the command line, resumed,
reported; and the queue-length metric on hand-made timelines."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app
from wattsched.studies.multires.metrics import add_slowdown, queue_seconds, weighted_quantiles


def test_queue_seconds_drop_the_seconds_where_every_run_is_empty() -> None:
    a = pl.DataFrame({"time": [0.0, 10.0, 20.0, 40.0], "queued": [2, 0, 0, 0]})
    b = pl.DataFrame({"time": [0.0, 5.0, 30.0, 40.0], "queued": [0, 1, 0, 0]})
    hist = queue_seconds({"a": a, "b": b})
    # segments: [0,5) a=2 b=0; [5,10) 2,1; [10,20) 0,1; [20,30) 0,1; [30,40) 0,0 (dropped)
    assert hist["a"].tolist() == [20.0, 0.0, 10.0] and hist["b"].tolist() == [5.0, 25.0, 0.0]
    assert queue_seconds({"a": a, "b": b}, drop_all_empty=False)["a"].tolist() == [30.0, 0.0, 10.0]
    assert weighted_quantiles(np.array([20.0, 0.0, 10.0]), (0.5, 0.9)) == [0.0, 2.0]


def test_slowdown_floors_zero_second_jobs_and_classes_follow_the_paper() -> None:
    jobs = pl.DataFrame({"wait": [0.0, 10.0, 100.0, 0.0], "runtime": [0.0, 0.0, 3600.0, 50_000.0]})
    out = add_slowdown(jobs)
    assert out["slowdown"].to_list() == [1.0, 11.0, 3700 / 3600, 1.0]
    assert out["job_class"].to_list() == ["short", "short", "medium", "long"]


def test_the_paper_001_experiment_on_eurora_instances(tmp_path) -> None:
    traces = require_data("eurora/historical_traces/50")
    files = sorted(traces.glob("*.log_crypt"))[:2]
    spec = tmp_path / "p1.toml"
    spec.write_text(
        'kind = "dispatch"\nname = "p1-small"\n'
        f"instances = {json.dumps([str(f) for f in files])}\n"
        'dispatchers = ["sjf", "ljf", "ebf", "prb", "cph"]\nestimates = ["walltime", "rules", "real"]\n'
        "[cph]\ndeterministic_time = 0.2\n"
    )
    out = tmp_path / "campaign"
    runner = CliRunner()
    first = runner.invoke(app, ["campaign", "run", str(spec), "--output", str(out), "--workers", "1"])
    assert first.exit_code == 0, first.output
    assert "30 runs" in first.output and "30 ran now" in first.output
    again = runner.invoke(app, ["campaign", "run", str(spec), "--output", str(out), "--workers", "1"])
    assert "30 were done, 0 ran now" in again.output
    status = runner.invoke(app, ["campaign", "status", str(out)])
    assert status.exit_code == 0 and "30 of 30 runs done" in status.output
    report = runner.invoke(app, ["campaign", "report", str(out)])
    assert report.exit_code == 0, report.output
    for name in ("fig2_prediction_error", "fig3_slowdown", "fig4_slowdown_classes", "fig5_queue_length"):
        assert (out / "report" / f"{name}.png").exists()
    summary = pl.read_csv(out / "report" / "summary.csv")
    assert summary.height == 15 and (summary["jobs"] == 100).all()
    assert (summary["mean_slowdown"] >= 1.0).all()
    cph = summary.filter(pl.col("dispatcher") == "cph")
    assert cph["cp_mean_s"].is_not_null().all()
    # with the real durations every job's expected end is right: SJF starts short jobs first
    sjf = summary.filter(pl.col("dispatcher") == "sjf").sort("estimate")
    assert (
        sjf.filter(pl.col("estimate") == "real")["mean_slowdown"][0]
        <= sjf.filter(pl.col("estimate") == "walltime")["mean_slowdown"][0]
    )
