"""End-to-end runs of the `wattsched` command on real traces and on generated workloads."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app

runner = CliRunner()

#: trace → (machine size override or None, accepted jobs, rejected lines)
TRACES = {
    "swf/KTH-SP2/log.swf": (None, 28_489, 0),
    "swf/NASA-iPSC-1993-3.1-cln.swf": (None, 18_239, 0),
    "swf/LLNL-Atlas-2006-2.1-cln.swf": (None, 39_207, 4_571),
    "swf/CEA-curie_sample/log.swf": (None, 29_998, 0),
    "swf/alea/wagap-2013.swf": (2176, 17_898, 2),  # no header: 20×80 + 48×12 cores from wagap-2013.machines
    "swf/DOST-ASTI_COARE-Saliksik-2020-cln.swf": (None, 19_760, 0),
    "swf_synthetic/lublin_256.swf": (None, 10_000, 0),
}


@pytest.mark.data
@pytest.mark.parametrize("relative", sorted(TRACES))
@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_simulate_real_trace(relative: str, policy: str, tmp_path) -> None:
    path = require_data(relative)
    machine, n_jobs, n_rejects = TRACES[relative]
    args = ["simulate", "--workload", str(path), "--policy", policy, "--output", str(tmp_path)]
    if machine:
        args += ["--machine-size", str(machine)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    jobs = pl.read_parquet(tmp_path / "jobs.parquet")
    rejects = pl.read_parquet(tmp_path / "rejects.parquet")
    summary = json.loads((tmp_path / "summary.json").read_text())
    timeline = pl.read_parquet(tmp_path / "timeline.parquet")
    assert timeline.columns == ["time", "queue_length", "running_jobs", "busy_units"]
    assert timeline["busy_units"].max() <= summary["run"]["machine_size"]
    assert timeline["queue_length"].max() == summary["metrics"]["queue_length_max"]
    assert jobs.height == n_jobs and rejects.height == n_rejects
    assert summary["metrics"]["n_jobs"] == n_jobs and summary["workload"]["rejected"] == n_rejects
    for col in ("job_id", "user_id", "submit_time", "start_time", "end_time", "wait", "size", "walltime", "runtime"):
        assert col in jobs.columns
    assert (jobs["start_time"] >= jobs["submit_time"]).all()
    assert (jobs["wait"] - (jobs["start_time"] - jobs["submit_time"])).abs().max() == 0
    assert 0 < summary["metrics"]["utilisation"] <= 1
    assert "jobs simulated" in result.output


def test_csv_output_and_generated_workload(tmp_path) -> None:
    workload = tmp_path / "lublin.parquet"
    result = runner.invoke(
        app, ["generate", "lublin", "--jobs", "500", "--machine-size", "64", "--seed", "3", "--output", str(workload)]
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "simulate",
            "--workload",
            str(workload),
            "--policy",
            "easy-saf",
            "--output",
            str(out),
            "--format",
            "csv",
            "--metrics-window",
            "0:86400",
        ],
    )
    assert result.exit_code == 0, result.output
    jobs = pl.read_csv(out / "jobs.csv")
    assert jobs.height == 500
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["utilisation_window_end"] == 86400
    assert summary["run"]["policy"] == "easy-saf" and summary["run"]["machine_size"] == 64


def test_generated_swf_round_trips_through_simulate(tmp_path) -> None:
    swf = tmp_path / "w.swf"
    assert (
        runner.invoke(
            app, ["generate", "lublin", "--jobs", "200", "--machine-size", "32", "--output", str(swf)]
        ).exit_code
        == 0
    )
    result = runner.invoke(app, ["simulate", "--workload", str(swf), "--policy", "fcfs", "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(tmp_path / "jobs.parquet").height == 200


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (None, [], "does not exist"),
        ("", [], "empty"),
        (
            "; MaxProcs: 4\n1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"
            "2 0 -1 x 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n",
            ["--strict"],
            "line 3",
        ),
        ("1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n", [], "--machine-size"),
    ],
)
def test_bad_input_gives_a_clear_error(tmp_path, content, extra, message) -> None:
    path = tmp_path / "bad.swf"
    if content is not None:
        path.write_text(content)
    result = runner.invoke(
        app, ["simulate", "--workload", str(path), "--policy", "easy", "--output", str(tmp_path / "o"), *extra]
    )
    assert result.exit_code == 2
    assert message in result.output


def test_rejects_are_written_not_dropped(tmp_path) -> None:
    path = tmp_path / "w.swf"
    path.write_text(
        "; MaxProcs: 4\n"
        "1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 5 -1 10 9 -1 -1 9 20 -1 1 1 1 -1 1 -1 -1 -1\n"
        "3 6 -1 -1 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    result = runner.invoke(app, ["simulate", "--workload", str(path), "--policy", "easy", "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rejects = pl.read_parquet(tmp_path / "rejects.parquet").sort("line")
    assert rejects.select("line", "field").rows() == [(3, "size"), (4, "runtime")]
    assert pl.read_parquet(tmp_path / "jobs.parquet")["job_id"].to_list() == [1]


def test_policies_lists_every_policy() -> None:
    result = runner.invoke(app, ["policies"])
    for name in ("fcfs", "sjf", "ljf", "easy", "easy-saf", "easy-sjf", "conservative"):
        assert name in result.output
