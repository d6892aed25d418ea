"""End to end: ``wattsched predict power|runtime`` on real and generated traces, and the predictions consumed
by ``wattsched simulate`` (trace protocol and in simulation)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app

runner = CliRunner()


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("method", ["walltime", "last2", "rules", "oracle"])
def test_predict_runtime_on_kth(tmp_path, method) -> None:
    kth = require_data("swf/KTH-SP2/log.swf")
    out = tmp_path / "kth.parquet"
    report = tmp_path / "report.json"
    text = _ok(
        [
            "predict",
            "runtime",
            "--workload",
            str(kth),
            "--method",
            method,
            "--output",
            str(out),
            "--report",
            str(report),
            "--plots",
            str(tmp_path),
        ]
    )
    assert "trace (submit_time + swf_wait + runtime)" in text
    jobs = pl.read_parquet(out)
    assert jobs.height == 28_489 and jobs["pred_runtime"].null_count() == 0
    if method != "oracle":  # the truth may exceed the walltime (the engine caps estimates at it)
        assert (jobs["pred_runtime"] <= jobs["walltime"]).all()
    rep = json.loads(report.read_text())["runtime"]
    if method == "rules":
        assert rep["overall"]["mae"] < rep["walltime"]["mae"]
        assert set(rep["rule_share"]) <= {"1", "2", "3", "4", "5", "6", "7"}
    if method == "oracle":
        assert rep["overall"]["mae"] == 0.0
    assert (tmp_path / "runtime_mae_per_user.png").stat().st_size > 1000


def test_predicted_runtimes_feed_the_simulator(tmp_path) -> None:
    kth = require_data("swf/KTH-SP2/log.swf")
    pred = tmp_path / "kth.csv"
    _ok(["predict", "runtime", "--workload", str(kth), "--method", "rules", "--output", str(pred)])
    waits = {}
    for name, extra in {"walltime": [], "pred": ["--runtime-estimate", "pred_runtime"]}.items():
        _ok(
            [
                "simulate",
                "--workload",
                str(pred),
                "--machine-size",
                "100",
                "--policy",
                "easy-sjf",
                "--output",
                str(tmp_path / name),
                *extra,
            ]
        )
        jobs = pl.read_parquet(tmp_path / name / "jobs.parquet")
        waits[name] = jobs["wait"].mean()
        if name == "pred":
            expected = pl.read_csv(pred).sort("submit_time", "job_id")["pred_runtime"]
            assert jobs.sort("submit_time", "job_id")["estimate"].to_list() == pytest.approx(expected.to_list())
    assert waits["walltime"] != waits["pred"]


@pytest.fixture(scope="module")
def m100(tmp_path_factory):
    path = tmp_path_factory.mktemp("m100") / "m100.parquet"
    _ok(["generate", "m100", "--jobs", "4000", "--seed", "5", "--load", "1.0", "--output", str(path)])
    return path


def test_predict_power_history_and_simulate_with_it(tmp_path, m100) -> None:
    out = tmp_path / "pred.parquet"
    report = tmp_path / "power.json"
    text = _ok(
        [
            "predict",
            "power",
            "--workload",
            str(m100),
            "--method",
            "history",
            "--output",
            str(out),
            "--report",
            str(report),
        ]
    )
    assert "replay (EASY on 980 units)" in text
    rep = json.loads(report.read_text())
    mae = rep["metrics"]["power_mean"]["with_history"]["mae"]
    assert mae < 0.8 * rep["global_mean_baseline"]["power_mean"]["with_history"]["mae"]
    table = pl.read_parquet(out)
    assert {"pred_power_mean", "pred_power_max", "pred_power_std", "has_user_history"} <= set(table.columns)
    _ok(
        [
            "simulate",
            "--workload",
            str(out),
            "--platform",
            "marconi100",
            "--policy",
            "easy-pc",
            "--power-check",
            "gaussian99",
            "--power-source",
            "predicted",
            "--cap",
            "0.5",
            "--window",
            "10800",
            "--output",
            str(tmp_path / "sim"),
        ]
    )
    summary = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert summary["power"]["power_source"] == "predicted"


@pytest.mark.parametrize("power", ["history", "ml-linear"])
def test_online_predictors_inside_the_simulation(tmp_path, m100, power) -> None:
    _ok(
        [
            "simulate",
            "--workload",
            str(m100),
            "--platform",
            "marconi100",
            "--policy",
            "easy-pc",
            "--power-check",
            "gaussian95",
            "--cap",
            "0.5",
            "--window",
            "10800",
            "--online-power",
            power,
            "--online-runtime",
            "last2",
            "--output",
            str(tmp_path / "sim"),
        ]
    )
    summary = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert summary["power"]["power_source"] == f"online {power}"
    jobs = pl.read_parquet(tmp_path / "sim" / "jobs.parquet")
    assert jobs["estimate"].to_list() == jobs["online_pred_runtime"].to_list()
    assert jobs["online_pred_power_mean"].null_count() == 0


def test_predict_power_weekly_ml(tmp_path) -> None:
    weeks = tmp_path / "weeks.parquet"
    _ok(["generate", "m100", "--jobs", "4000", "--seed", "6", "--span-days", "28", "--output", str(weeks)])
    report = tmp_path / "ml.json"
    _ok(
        [
            "predict",
            "power",
            "--workload",
            str(weeks),
            "--method",
            "ml-linear",
            "--cv-kind",
            "timeseries",
            "--output",
            str(tmp_path / "ml.parquet"),
            "--report",
            str(report),
        ]
    )
    rep = json.loads(report.read_text())
    assert rep["models"] and {"week", "metric", "features", "n_train"} <= set(rep["models"][0])
    mae = rep["metrics"]["power_mean"]["with_history"]["mae"]
    assert mae < 0.8 * rep["global_mean_baseline"]["power_mean"]["with_history"]["mae"]


def test_bad_requests_fail_clearly(tmp_path, m100) -> None:
    result = runner.invoke(
        app, ["predict", "power", "--workload", str(m100), "--method", "nope", "--output", str(tmp_path / "x.parquet")]
    )
    assert result.exit_code == 2 and "unknown power prediction method" in result.output
    result = runner.invoke(
        app,
        [
            "predict",
            "runtime",
            "--workload",
            str(m100),
            "--completion",
            "trace",
            "--output",
            str(tmp_path / "x.parquet"),
        ],
    )
    assert result.exit_code == 2 and "no trace completion times" in result.output
    result = runner.invoke(app, ["predict", "runtime", "--workload", str(m100), "--output", str(tmp_path / "x.txt")])
    assert result.exit_code == 2 and ".parquet, .csv" in result.output


def test_runtime_cascade_beats_the_walltime_on_the_synthetic_workload(tmp_path, m100) -> None:
    report = tmp_path / "runtime.json"
    _ok(
        [
            "predict",
            "runtime",
            "--workload",
            str(m100),
            "--method",
            "rules",
            "--output",
            str(tmp_path / "r.csv"),
            "--report",
            str(report),
        ]
    )
    rep = json.loads(report.read_text())["runtime"]
    assert rep["overall"]["mae"] < 0.6 * rep["walltime"]["mae"]


def test_predict_power_sizes_its_replay_from_the_platform(tmp_path, m100) -> None:
    """Issue 30, item 6: without a declared machine size, `predict power --completion replay` answered "an EASY
    replay needs the machine size" although its platform (marconi100 by default: 980 nodes) says it."""
    table = tmp_path / "m100.csv"
    pl.read_parquet(m100).drop("power_profile", strict=False).write_csv(table)  # CSV declares no machine size
    out = tmp_path / "pred.parquet"
    _ok(["predict", "power", "--workload", str(table), "--completion", "replay", "--output", str(out)])
    assert pl.read_parquet(out)["pred_power_mean"].null_count() == 0


def test_predict_runtime_sizes_its_replay_from_a_platform(tmp_path, m100) -> None:
    """Issue 30, item 6: `predict runtime` had no --platform, so a workload that declares no size could not be
    replayed without typing the node count; with --platform the platform's node count sizes the replay, and
    without either the error names the option to give."""
    table = tmp_path / "m100.csv"
    pl.read_parquet(m100).drop("power_profile", strict=False).write_csv(table)  # CSV declares no machine size
    out = tmp_path / "pred.parquet"
    base = ["predict", "runtime", "--workload", str(table), "--completion", "replay", "--output", str(out)]
    refused = runner.invoke(app, base)
    assert refused.exit_code != 0 and "machine size" in refused.output, refused.output
    _ok([*base, "--platform", "marconi100"])
    assert pl.read_parquet(out)["pred_runtime"].null_count() == 0
