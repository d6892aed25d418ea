"""Defaults from what is known, and the root options: `--version`, a platform's node count as the machine size."""

from __future__ import annotations

import json
from pathlib import Path

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
