"""`wattsched eamc run` and `wattsched.api.eamc_run` are one run (the CLI parses, calls the API, prints), and an
EAMC workload table is read with one-line errors naming the file, the row and the column."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.api import eamc_run, write_eamc_run
from wattsched.cli import app
from wattsched.studies.eamc.workloads import generate_eamc_workload, read_eamc_workload

runner = CliRunner()


def test_the_cli_and_the_api_write_the_same_run(tmp_path: Path) -> None:
    data = require_data("eamc/en_conf/2hw.conf").parent
    table = tmp_path / "w.csv"
    generate_eamc_workload("W33", 200, seed=5).write_csv(table)
    cli_dir, api_dir = tmp_path / "cli", tmp_path / "api"
    args = ["eamc", "run", "--output", str(cli_dir), "--workload", str(table), "--data-dir", str(data)]
    result = runner.invoke(app, [*args, "--policy", "EAMC-PriorityInc"])
    assert result.exit_code == 0, result.output
    write_eamc_run(eamc_run("eamc-priorityinc", workload=table, data_dir=data), api_dir)
    assert pl.read_parquet(cli_dir / "jobs.parquet").equals(pl.read_parquet(api_dir / "jobs.parquet"))
    cli_summary, api_summary = (json.loads((d / "summary.json").read_text()) for d in (cli_dir, api_dir))
    timings = {k for k in cli_summary if k.endswith("_s")}  # this process's seconds, not the schedule
    assert timings and {k: v for k, v in cli_summary.items() if k not in timings} == {
        k: v for k, v in api_summary.items() if k not in timings
    }


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda w: w.drop("app_id"), "needs column(s) app_id"),
        (
            lambda w: w.with_columns(pl.when(pl.col("job_id") == 3).then(0).otherwise(pl.col("nodes")).alias("nodes")),
            "row 3 (job 3), column 'nodes': 0 is not a number ≥ 1",
        ),
        (lambda w: w.with_columns(pl.col("runtime").cast(pl.Utf8)), "column 'runtime' must hold numbers"),
    ],
    ids=["missing-column", "zero-nodes", "text-runtime"],
)
def test_a_bad_workload_table_is_one_line_naming_the_place(tmp_path: Path, edit, message: str) -> None:
    table = tmp_path / "w.parquet"
    edit(generate_eamc_workload("W13", 20, seed=1).sort("job_id")).write_parquet(table)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        read_eamc_workload(table)
    assert str(table) in str(caught.value) and "\n" not in str(caught.value)
    result = runner.invoke(app, ["eamc", "run", "--output", str(tmp_path / "o"), "--workload", str(table)])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_workload_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "w.swf"
    other.write_text("; not a table\n")
    with pytest.raises(ValueError, match=r"w.swf: an EAMC workload is a .parquet or .csv table"):
        read_eamc_workload(other)
