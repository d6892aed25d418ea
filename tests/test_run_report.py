"""`simulate --html`: the run's figure (Gantt with the allocation, utilisation, queue, power) and report.html."""

from __future__ import annotations

import base64
import re

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.metrics.allocation import allocate_nodes
from wattsched.plots.run import node_rectangles
from wattsched.report.run_report import read_run, write_run_report

runner = CliRunner()


@pytest.fixture(scope="module")
def lublin(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("w") / "lublin.parquet"
    args = ["generate", "lublin", "--jobs", "300", "--machine-size", "32", "--seed", "4", "--output", str(path)]
    assert runner.invoke(app, args).exit_code == 0
    return path


@pytest.mark.parametrize("fmt", ["parquet", "evalys"])
def test_report_of_a_queue_run(lublin, tmp_path, fmt: str) -> None:
    out = tmp_path / "run"
    args = ["simulate", "--workload", str(lublin), "--policy", "easy", "--output", str(out), "--html"]
    result = runner.invoke(app, [*args, "--format", fmt])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert "easy on" in page and "wait_mean" in page and 'href="run.svg"' in page
    png = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", page).group(1))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png == (out / "run.png").read_bytes()
    svg = (out / "run.svg").read_text()
    assert "queued jobs" in svg and "utilisation" in svg and "dynamic power" not in svg
    # the Gantt's rectangles are the allocation: every job's nodes, each node in one job at a time
    run = read_run(out)
    rect = node_rectangles(run)
    assert (rect["node_hi"] - rect["node_lo"]).sum() == run.jobs["size"].sum()
    assert rect["node_hi"].max() <= 32 and rect["node_lo"].min() >= 0


def test_evalys_and_computed_allocations_agree(lublin, tmp_path) -> None:
    out = tmp_path / "run"
    args = ["simulate", "--workload", str(lublin), "--policy", "easy", "--output", str(out), "--format", "evalys"]
    assert runner.invoke(app, args).exit_code == 0
    run = read_run(out)
    written = node_rectangles(run)
    computed = allocate_nodes(run.jobs, run.machine_size)
    total = sum(int(x.size) for x in computed)
    assert (written["node_hi"] - written["node_lo"]).sum() == total
    # rebuild the written sets and compare job by job
    from_rects: dict[int, list[int]] = {}
    for row, lo, hi in written.select("row", "node_lo", "node_hi").iter_rows():
        from_rects.setdefault(row, []).extend(range(lo, hi))
    for k, ids in enumerate(computed):
        assert sorted(from_rects.get(k, [])) == ids.tolist()


def test_report_of_a_power_run(tmp_path) -> None:
    workload = tmp_path / "m100.parquet"
    args = ["generate", "m100", "--jobs", "400", "--seed", "1", "--output", str(workload)]
    assert runner.invoke(app, args).exit_code == 0, "generate m100"
    out = tmp_path / "pc"
    args = [
        "simulate", "--workload", str(workload), "--platform", "marconi100", "--policy", "easy-pc",
        "--power-check", "mean", "--cap", "0.5", "--window", "7200", "--output", str(out), "--no-baseline",
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    path = write_run_report(out)
    assert path == out / "report.html"
    svg = (out / "run.svg").read_text()
    assert "dynamic power" in svg and "cap" in svg
    assert "power_utilisation" in path.read_text()


def test_report_command_on_an_existing_run(lublin, tmp_path) -> None:
    out = tmp_path / "run"
    args = ["simulate", "--workload", str(lublin), "--policy", "conservative", "--output", str(out), "--format", "csv"]
    assert runner.invoke(app, args).exit_code == 0
    assert not (out / "report.html").exists()
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    assert "conservative on" in (out / "report.html").read_text() and (out / "run.svg").is_file()
    result = runner.invoke(app, ["report", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "no summary.json" in result.output


def test_not_a_run_folder(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"no summary\.json"):
        read_run(tmp_path)
    (tmp_path / "summary.json").write_text('{"run": {"machine_size": 4}}')
    with pytest.raises(ValueError, match=r"no jobs\.parquet or jobs\.csv"):
        read_run(tmp_path)
    pl.DataFrame({"job_id": [1]}).write_csv(tmp_path / "jobs.csv")
    with pytest.raises(ValueError, match="lacks column"):
        read_run(tmp_path)
    (tmp_path / "jobs.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match=r"jobs\.parquet: cannot be read"):
        read_run(tmp_path)


def test_a_reused_output_folder_holds_only_the_last_run(lublin, tmp_path) -> None:
    """Issue 30, item 1: fcfs (Parquet) then easy (CSV, with a report) into the same folder left fcfs's
    jobs.parquet beside easy's jobs.csv, and the report drew its Gantt chart from the leftover FCFS schedule."""
    out = tmp_path / "run"
    base = ["simulate", "--workload", str(lublin), "--output", str(out)]
    assert runner.invoke(app, [*base, "--policy", "fcfs", "--html"]).exit_code == 0
    result = runner.invoke(app, [*base, "--policy", "easy", "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "jobs.csv",
        "provenance.json",
        "rejects.csv",
        "summary.json",
        "timeline.csv",
    ]
    run = read_run(out)
    easy_wait = run.summary["metrics"]["wait_mean"]
    assert run.summary["run"]["policy"] == "easy"
    assert run.jobs["wait"].mean() == pytest.approx(easy_wait)
