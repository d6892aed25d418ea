"""`wattsched compare RUN_A RUN_B ...`: metrics side by side, differences, and refusal of different job sets."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.report.compare import CompareError, compare_runs

runner = CliRunner()


def run(workload, policy: str, out, *extra: str) -> None:
    args = ["simulate", "--workload", str(workload), "--policy", policy, "--output", str(out), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cmp")
    workload = root / "lublin.parquet"
    args = ["generate", "lublin", "--jobs", "400", "--machine-size", "32", "--load", "0.9", "--seed", "2"]
    assert runner.invoke(app, [*args, "--output", str(workload)]).exit_code == 0
    run(workload, "fcfs", root / "fcfs")
    run(workload, "easy", root / "easy", "--format", "evalys")
    run(workload, "conservative", root / "cons", "--format", "csv")
    # the same workload less its first 50 jobs: a different job set
    jobs = pl.read_parquet(workload)
    smaller = root / "smaller.parquet"
    jobs.sort("submit_time").slice(50).write_parquet(smaller)
    run(smaller, "easy", root / "smaller", "--machine-size", "32")
    return root


def test_side_by_side_with_differences(runs) -> None:
    table, notes = compare_runs([runs / "fcfs", runs / "easy", runs / "cons"])
    assert table.columns == [
        "metric",
        "fcfs",
        "easy",
        "cons",
        "easy − fcfs",
        "cons − fcfs",
        "easy vs fcfs (%)",
        "cons vs fcfs (%)",
    ]
    assert notes["jobs_compared"] == 400
    assert notes["policies"] == {"fcfs": "fcfs", "easy": "easy", "cons": "conservative"}
    row = {r["metric"]: r for r in table.to_dicts()}
    fcfs = json.loads((runs / "fcfs" / "summary.json").read_text())["metrics"]
    easy = json.loads((runs / "easy" / "summary.json").read_text())["metrics"]
    assert row["wait_mean"]["fcfs"] == fcfs["wait_mean"] and row["wait_mean"]["easy"] == easy["wait_mean"]
    assert row["wait_mean"]["easy − fcfs"] == pytest.approx(easy["wait_mean"] - fcfs["wait_mean"])
    assert row["wait_mean"]["easy − fcfs"] < 0  # backfilling shortens waits on a loaded machine
    assert row["n_jobs"]["cons − fcfs"] == 0
    relative = 100 * (easy["wait_mean"] - fcfs["wait_mean"]) / fcfs["wait_mean"]
    assert row["wait_mean"]["easy vs fcfs (%)"] == pytest.approx(relative)


def test_different_job_sets_are_refused_with_counts(runs) -> None:
    with pytest.raises(CompareError, match=r"different job sets \(easy: 400, smaller: 350; 350 in common\)"):
        compare_runs([runs / "easy", runs / "smaller"])
    result = runner.invoke(app, ["compare", str(runs / "easy"), str(runs / "smaller")])
    assert result.exit_code == 2 and "--common-jobs" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_jobs_of_another_trace_with_the_same_ids_are_not_common(runs, tmp_path) -> None:
    """Issue 30, item 3: job 1 of one machine is not job 1 of another; --common-jobs matched ids alone."""
    other = tmp_path / "other.parquet"
    args = ["generate", "lublin", "--jobs", "400", "--machine-size", "32", "--load", "0.9", "--seed", "7"]
    assert runner.invoke(app, [*args, "--output", str(other)]).exit_code == 0
    run(other, "easy", tmp_path / "other-easy")
    with pytest.raises(CompareError, match="no job in common"):
        compare_runs([runs / "easy", tmp_path / "other-easy"], common=True)
    with pytest.raises(CompareError, match=r"different job sets \(easy: 400, other-easy: 400; 0 in common\)"):
        compare_runs([runs / "easy", tmp_path / "other-easy"])


def test_common_jobs_recomputes_the_metrics(runs) -> None:
    table, notes = compare_runs([runs / "easy", runs / "smaller"], common=True)
    assert notes["jobs_compared"] == 350
    row = {r["metric"]: r for r in table.to_dicts()}
    assert row["n_jobs"]["easy"] == row["n_jobs"]["smaller"] == 350
    result = runner.invoke(app, ["--json", "compare", str(runs / "easy"), str(runs / "smaller"), "--common-jobs"])
    assert result.exit_code == 0, result.output
    assert "comparing the 350 common jobs" in result.output


def test_not_a_run_folder(tmp_path, runs) -> None:
    result = runner.invoke(app, ["compare", str(runs / "easy"), str(tmp_path)])
    assert result.exit_code == 2 and "no summary.json" in result.output
    result = runner.invoke(app, ["compare", str(runs / "easy")])
    assert result.exit_code == 2 and "at least two" in result.output


@pytest.mark.data
def test_queue_campaign_over_swf_windows_as_documented(tmp_path) -> None:
    """The queue campaign of docs/campaigns.md on KTH-SP2's windows runs, and FCFS waits longer than EASY."""
    import re
    from pathlib import Path

    from conftest import require_data

    trace = require_data("swf/KTH-SP2/log.swf")
    docs = (Path(__file__).resolve().parents[1] / "docs" / "campaigns.md").read_text()
    spec = re.search(r'```toml\n(kind = "queue"\nname = "kth-policies".*?)```', docs, re.S).group(1)
    assert 'path = "../shared/data/swf/KTH-SP2/log.swf"' in spec
    (tmp_path / "kth.toml").write_text(spec.replace("../shared/data/swf/KTH-SP2/log.swf", str(trace)))
    out = tmp_path / "runs"
    result = runner.invoke(app, ["campaign", "run", str(tmp_path / "kth.toml"), "--output", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["campaign", "report", str(out)])
    assert result.exit_code == 0, result.output
    summary = pl.read_csv(out / "report" / "summary.csv")
    wait = dict(zip(summary["policy"], summary["wait_mean"], strict=True))
    assert set(wait) == {"fcfs", "easy", "easy-sjf", "conservative"}
    assert wait["fcfs"] > 4 * wait["easy"]
