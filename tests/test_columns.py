"""Column mappings (``--columns``, a TOML file, a campaign's ``columns = {...}``): any job table read as one."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.campaign.spec import WorkloadSpec
from wattsched.campaign.workloads import load_workload_spec
from wattsched.cli import app
from wattsched.core.schema import WorkloadError
from wattsched.workload.columns import parse_columns
from wattsched.workload.load import load_workload

M100_COLUMNS = "runtime=run_time,size=num_nodes_alloc,walltime=time_limit * 60,gpus=num_gpus_alloc,state=job_state"


def test_parse_columns_text_file_and_mapping(tmp_path: Path) -> None:
    assert parse_columns("runtime=run_time, size = nodes") == {"runtime": "run_time", "size": "nodes"}
    # a comma inside an expression does not split items
    assert parse_columns("walltime=COALESCE(req, run_time * 2),size=n") == {
        "walltime": "COALESCE(req, run_time * 2)",
        "size": "n",
    }
    assert parse_columns("walltime='time_limit * 60'") == {"walltime": "time_limit * 60"}
    f = tmp_path / "m.toml"
    f.write_text('[columns]\nruntime = "run_time"\nsize = "num_nodes_alloc"\n')
    assert parse_columns(str(f)) == {"runtime": "run_time", "size": "num_nodes_alloc"}
    f.write_text('runtime = "run_time"\n')  # keys at top level
    assert parse_columns(str(f)) == {"runtime": "run_time"}
    assert parse_columns({"size": "n"}) == {"size": "n"} and parse_columns(None) is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("runtime=", "item 'runtime=' is not target=source"),
        ("size=a,size=b", "column 'size' is mapped twice"),
        ("run-time=a", "target column 'run-time' is not a plain name"),
        ("runtime=a +", "runtime = 'a +' is not a column or SQL expression"),
        ("nothere.toml", "nothere.toml does not exist"),
        ("  ", "empty"),
    ],
)
def test_parse_columns_errors_name_the_item(spec: str, message: str) -> None:
    with pytest.raises(WorkloadError, match="--columns") as err:
        parse_columns(spec)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_marconi100_job_table_read_with_a_mapping() -> None:
    path = require_data("m100/m100_real_jobs.parquet")
    with pytest.raises(WorkloadError, match=r"lacks required column.*map them with --columns"):
        load_workload(path)
    read = load_workload(path, columns=M100_COLUMNS, machine_size=980)
    raw = pl.read_parquet(path)
    assert read.jobs.height == raw.height == 1994 and read.rejects.is_empty()
    by_id = read.jobs.sort("job_id")
    raw = raw.sort("job_id")
    assert by_id["runtime"].to_list() == raw["run_time"].cast(pl.Float64).to_list()
    assert by_id["walltime"].to_list() == (raw["time_limit"] * 60).cast(pl.Float64).to_list()
    assert by_id["size"].to_list() == raw["num_nodes_alloc"].to_list()
    assert by_id["submit_time"][0] == raw["submit_time"][0].timestamp()  # a datetime becomes epoch seconds
    assert set(by_id["state"]) == set(raw["job_state"])
    assert read.provenance.conventions[0].startswith("columns mapped: runtime = run_time")


def test_runtime_derived_from_start_and_end(tmp_path: Path) -> None:
    t = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    table = pl.DataFrame(
        {
            "id": [1, 2],
            "queued": [t, t + dt.timedelta(seconds=5)],
            "started": [t + dt.timedelta(seconds=10), t + dt.timedelta(seconds=20)],
            "ended": [t + dt.timedelta(seconds=70), t + dt.timedelta(seconds=20)],
            "limit_h": [1.0, 0.5],
            "nodes n": [2, 1],
        }
    )
    path = tmp_path / "jobs.parquet"
    table.write_parquet(path)
    mapping = tmp_path / "map.toml"
    mapping.write_text(
        '[columns]\njob_id = "id"\nsubmit_time = "queued"\nruntime = "ended - started"\n'
        'walltime = "limit_h * 3600"\nsize = "nodes n"\n'
    )
    read = load_workload(path, columns=str(mapping))
    assert read.jobs["runtime"].to_list() == [60.0, 0.0]
    assert read.jobs["walltime"].to_list() == [3600.0, 1800.0] and read.jobs["size"].to_list() == [2, 1]
    with pytest.raises(WorkloadError, match=r"jobs.parquet: column mapping runtime = 'stop - started' names a col"):
        load_workload(path, columns="job_id=id,submit_time=queued,runtime=stop - started,walltime=1,size=1")


def test_mapping_refused_for_fixed_formats(tmp_path: Path) -> None:
    swf = tmp_path / "a.swf"
    swf.write_text("1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(WorkloadError, match="a column mapping applies to job tables"):
        load_workload(swf, columns="size=nodes")


def test_columns_option_on_simulate_convert_and_predict(tmp_path: Path) -> None:
    path = str(require_data("m100/m100_real_jobs.parquet"))
    runner = CliRunner()
    out = tmp_path / "m100.csv"
    args = ["--columns", M100_COLUMNS, "--machine-size", "980"]
    result = runner.invoke(app, ["data", "convert", "--input", path, "--output", str(out), *args])
    assert result.exit_code == 0, result.output
    assert pl.read_csv(out).height == 1994
    result = runner.invoke(
        app, ["simulate", "--workload", path, "--policy", "easy", "--output", str(tmp_path / "run"), *args]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["metrics"]["n_jobs"] == 1994
    pred = tmp_path / "pred.parquet"
    result = runner.invoke(app, ["predict", "runtime", "--workload", path, "--output", str(pred), *args])
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(pred).height == 1994


def test_campaign_workload_columns(tmp_path: Path) -> None:
    path = str(require_data("m100/m100_real_jobs.parquet"))
    wl = WorkloadSpec(
        name="m100",
        path=path,
        machine_size=980,
        columns={"runtime": "run_time", "size": "num_nodes_alloc", "walltime": "time_limit * 60"},
    )
    assert load_workload_spec(wl, 0).jobs.height == 1994
    assert "columns" not in WorkloadSpec(name="a", path=path).model_dump()  # old specs keep their hash
    with pytest.raises(ValueError, match="is not a column or SQL expression"):
        WorkloadSpec(name="m100", path=path, columns={"runtime": "run_time +"})
    with pytest.raises(ValueError, match="'columns' maps a job table's columns; it needs 'path'"):
        WorkloadSpec(name="g", generate={"model": "m100", "jobs": 10}, columns={"size": "n"})


def test_text_dates_in_a_csv_through_expressions(tmp_path: Path) -> None:
    path = tmp_path / "sacct-like.csv"
    path.write_text(
        "JobID,Submit,Start,End,NNodes,Limit\n"
        "7,2024-03-01T10:00:00,2024-03-01T10:05:00,2024-03-01T11:05:00,4,7200\n"
        "8,2024-03-01T10:01:00,2024-03-01T10:06:00,2024-03-01T10:06:30,1,60\n"
    )
    read = load_workload(
        path,
        columns='job_id=JobID,submit_time=TIMESTAMP(Submit),runtime=TIMESTAMP("End") - TIMESTAMP("Start"),'
        "size=NNodes,walltime=Limit",  # Limit, End and Start are SQL keywords: alone a name, quoted in expressions
    )
    assert read.jobs["runtime"].to_list() == [3600.0, 30.0]
    assert read.jobs["submit_time"].to_list() == [1709287200.0, 1709287260.0]
