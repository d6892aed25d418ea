"""Rejects told by reason: the shared summary, and every command that reads a workload printing and keeping them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.campaign.kinds import load_experiment
from wattsched.campaign.runner import load_results, run_experiment
from wattsched.cli import app
from wattsched.core.rejects import AllRejectedError, rejects_by_reason, rejects_path, rejects_summary
from wattsched.core.schema import make_rejects
from wattsched.workload.load import load_workload


def _rejects(rows: list[tuple[str, int | None, int | None, str]]) -> pl.DataFrame:
    return make_rejects([{"source": s, "line": ln, "job_id": j, "reason": r, "field": "f"} for s, ln, j, r in rows])


def test_summary_counts_reasons_most_frequent_first_with_examples() -> None:
    rejects = _rejects(
        [("a", 3, 1, "late"), ("a", 5, 2, "size"), ("a", 8, 3, "size"), ("a", 9, 4, "size"), ("a", 12, 5, "size")]
    )
    assert rejects_summary(rejects) == "5 rejected: size (4; first: line 5, 8, 9, …); late (1; first: line 3)"
    assert rejects_summary(rejects, "record", examples=1) == (
        "5 rejected: size (4; first: record 5, …); late (1; first: record 3)"
    )
    assert rejects_summary(rejects, reasons=1).endswith("; and 1 more reason(s)")
    table = rejects_by_reason(rejects)
    assert table["reason"].to_list() == ["size", "late"] and table["count"].to_list() == [4, 1]
    assert rejects_summary(rejects.head(0)) == ""


def test_summary_names_files_and_job_ids_when_there_is_no_line() -> None:
    several = _rejects([("x.log", 2, 1, "bad"), ("y.log", 7, 2, "bad")])
    assert rejects_summary(several) == "2 rejected: bad (2; first: x.log:2, y.log:7)"
    no_line = _rejects([("a", None, 42, "bad"), ("a", None, None, None)])
    assert rejects_summary(no_line) == "2 rejected: bad (1; first: job 42); no reason given (1; first: ?)"


def test_rejects_path_sits_next_to_the_output() -> None:
    assert rejects_path("out/m100.parquet") == Path("out/m100.rejects.parquet")
    assert rejects_path("x.swf.gz") == Path("x.rejects.parquet")
    assert rejects_path("p.csv.gz", "csv") == Path("p.rejects.csv")


def test_llnl_atlas_rejects_by_reason() -> None:
    read = load_workload(require_data("swf/LLNL-Atlas-2006-2.1-cln.swf"))
    assert rejects_summary(read.rejects) == "4,571 rejected: job size is unknown (4,571; first: line 33, 34, 35, …)"


def test_every_line_rejected_says_why_not_no_jobs(tmp_path: Path) -> None:
    # every job's run time unknown (-1): nothing to simulate, and the reason is given, not "no jobs"
    path = tmp_path / "unknown.swf"
    path.write_text(
        "; MaxProcs: 8\n" + "".join(f"{k} {k} -1 -1 2 -1 -1 2 100 -1 1 1 -1 -1 -1 -1 -1 -1\n" for k in range(1, 31))
    )
    with pytest.raises(AllRejectedError) as err:
        load_workload(path)
    assert err.value.rejects.height == 30
    assert "unknown.swf: no usable job, every line was rejected; 30 rejected: " in str(err.value)
    result = CliRunner().invoke(
        app, ["simulate", "--workload", str(path), "--policy", "easy", "--output", str(tmp_path / "o")]
    )
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert "every line was rejected; 30 rejected:" in text and "no jobs to simulate" not in text


BAD_CSV = """job_id,submit_time,walltime,runtime,size,user_id
1,0,100,50,2,1
2,10,100,-5,1,1
3,20,100,40,x,2
4,30,100,30,1,2
5,40,100,,1,1
6,50,100,20,1,1
7,60,100,10,2,2
8,70,100,60,1,1
"""


def test_simulate_and_predict_list_rejects_by_reason_and_keep_them(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV)
    runner = CliRunner()
    run = tmp_path / "run"
    args = ["--workload", str(path), "--machine-size", "4"]
    result = runner.invoke(app, ["simulate", *args, "--policy", "easy", "--output", str(run)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "3 rejected: " in text and "run time is negative (1; first: line 3)" in text
    assert "value 'x' in column 'size' is not an integer" in text and "(1; first: line 4)" in text
    assert pl.read_parquet(run / "rejects.parquet").height == 3
    out = tmp_path / "pred.csv"
    result = runner.invoke(
        app, ["predict", "runtime", *args, "--output", str(out), "--report", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 0, result.output
    assert "3 rejected: " in " ".join(result.output.split())
    kept = pl.read_csv(tmp_path / "pred.rejects.csv")
    assert kept["line"].to_list() == [3, 4, 6]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["rejected"] == 3 and sum(report["rejected_by_reason"].values()) == 3


def test_campaign_results_count_the_source_rejects(tmp_path: Path) -> None:
    rows = ["job_id,submit_time,walltime,runtime,size"]
    rows += [f"{i},{i * 60},600,{300 if i % 10 else -1},{1 + i % 4}" for i in range(1, 201)]
    trace = tmp_path / "t.csv"
    trace.write_text("\n".join(rows) + "\n")
    spec = tmp_path / "q.toml"
    spec.write_text(
        f'kind = "queue"\nname = "q"\npolicies = ["fcfs"]\n[[workloads]]\nname = "t"\npath = "{trace}"\n'
        "machine_size = 8\n"
    )
    out = tmp_path / "c"
    logged: list[str] = []
    run_experiment(load_experiment(spec), out, workers=1, log=logged.append)
    assert any("workload t: 20 rejected: run time is negative (20; first: line 11, 21, 31, …)" in m for m in logged)
    results = load_results(out)
    assert results["rejected"].to_list() == [20] and results["jobs"].to_list() == [180]
    assert pl.read_parquet(out / "workloads" / "t.rejects.parquet").height == 20
