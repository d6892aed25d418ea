"""Defaults from what is known and options that are not silently ignored: `--version`, a platform's node count as
the machine size, a power-aware policy without a power setup, the output format of every table."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from wattsched import __version__
from wattsched.cli import app

runner = CliRunner()

JOBS = (
    "job_id,submit_time,runtime,walltime,size,power_mean,power_max,power_std\n"
    "1,0,100,200,500,1000,1200,50\n"
    "2,10,50,100,600,1100,1300,40\n"
    "3,20,30,60,400,900,1000,30\n"
)


def test_version_prints_the_package_version_and_exits() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"wattsched {__version__}"


def test_a_platform_gives_the_machine_size_a_workload_does_not_declare(tmp_path: Path) -> None:
    workload = tmp_path / "jobs.csv"
    workload.write_text(JOBS)
    without = runner.invoke(app, ["simulate", "--workload", str(workload), "--policy", "easy", "--output", "a"])
    assert without.exit_code == 2
    assert "does not declare a machine size" in without.output
    out = tmp_path / "out"
    args = ["simulate", "--workload", str(workload), "--policy", "easy", "--platform", "marconi100"]
    result = runner.invoke(app, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "machine size: 980 nodes, from platform marconi100" in result.output
    assert json.loads((out / "summary.json").read_text())["run"]["machine_size"] == 980


def test_a_machine_size_that_contradicts_the_platform_is_refused_in_one_line(tmp_path: Path) -> None:
    workload = tmp_path / "jobs.csv"
    workload.write_text(JOBS)
    args = ["simulate", "--workload", str(workload), "--policy", "easy", "--platform", "marconi100"]
    result = runner.invoke(app, [*args, "--machine-size", "700", "--output", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.strip() == "error: platform 'marconi100' has 980 nodes but the machine has 700"


def test_a_power_aware_policy_without_a_power_setup_is_refused_not_run_as_easy(tmp_path: Path) -> None:
    workload = tmp_path / "jobs.csv"
    workload.write_text(JOBS)
    args = ["simulate", "--workload", str(workload), "--policy", "easy-pc", "--machine-size", "980"]
    result = runner.invoke(app, [*args, "--output", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "policy easy-pc checks power: give a power setup (--platform, --power-check and --cap" in result.output
    assert not (tmp_path / "out").exists()


def test_csv_format_writes_every_table_as_csv(tmp_path: Path) -> None:
    workload = tmp_path / "jobs.csv"
    workload.write_text(JOBS + "4,30,x,60,400,900,1000,30\n")
    out = tmp_path / "out"
    args = ["simulate", "--workload", str(workload), "--policy", "easy", "--machine-size", "980", "--format", "csv"]
    result = runner.invoke(app, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "jobs.csv",
        "provenance.json",
        "rejects.csv",
        "summary.json",
        "timeline.csv",
    ]
    rejects = pl.read_csv(out / "rejects.csv")
    assert rejects.height == 1 and rejects["field"].to_list() == ["runtime"]


def test_a_power_check_given_to_a_queue_policy_is_ignored_with_a_warning(tmp_path: Path) -> None:
    workload = tmp_path / "jobs.csv"
    workload.write_text(JOBS)
    args = ["simulate", "--workload", str(workload), "--platform", "marconi100", "--cap", "0.5"]
    result = runner.invoke(
        app, [*args, "--policy", "easy", "--power-check", "gaussian99", "--output", str(tmp_path / "a")]
    )
    assert result.exit_code == 0, result.output
    assert "warning: the power check gaussian99 (--power-check) is ignored: easy does not check power" in result.output
    quiet = runner.invoke(
        app, [*args, "--policy", "easy-pc", "--power-check", "gaussian99", "--output", str(tmp_path / "b")]
    )
    assert quiet.exit_code == 0, quiet.output
    assert "is ignored" not in quiet.output
