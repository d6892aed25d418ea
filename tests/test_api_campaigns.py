"""Campaigns and reproductions from Python (`wattsched.api.campaigns`, `wattsched.api.reproduce`): the functions
the `campaign`, `rmap grid`, `eamc grid` and `reproduce` commands call, with the same results and warnings."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.api.campaigns import (
    campaign_report,
    campaign_status,
    collect_results,
    ignored_executor_options,
    load_experiment,
    partial_campaign_note,
    rmap_grid_experiment,
    run_campaign,
)
from wattsched.api.reproduce import (
    ReproduceError,
    paper_id,
    reproduce_paper,
    reproduction_output,
)
from wattsched.cli import app
from wattsched.core.errors import CampaignError

QUEUE = """
kind = "queue"
name = "api-queue"
policies = ["fcfs", "easy"]
[[workloads]]
name = "small"
generate = { model = "lublin", jobs = 1500, machine_size = 64, seed = 3 }
windows = { count = 1, hours = 24, seed = 0 }
[[workloads]]
name = "large"
generate = { model = "lublin", jobs = 1500, machine_size = 256, seed = 4 }
windows = { count = 1, hours = 24, seed = 0 }
"""


def test_a_queue_campaign_runs_reports_and_collects_from_python(tmp_path: Path) -> None:
    spec = tmp_path / "queue.toml"
    spec.write_text(QUEUE)
    out = tmp_path / "campaign"
    seen: list[tuple[int, int]] = []
    run = run_campaign(load_experiment(spec), out, workers=1, progress=lambda d, t: seen.append((d, t)))
    assert run.total == 4 and run.executed == 4 and seen[-1] == (4, 4)
    state = campaign_status(out)
    assert (state["done"], state["runs"], state["kind"]) == (4, 4, "queue")
    assert partial_campaign_note(out) is None
    shown = CliRunner().invoke(app, ["campaign", "status", str(out)])
    assert shown.exit_code == 0, shown.output
    # the kind is in the title, not a stray last line (issue 30, item 12)
    assert "queue campaign api-queue: 4 of 4 runs done" in " ".join(shown.output.split())
    assert shown.output.strip().splitlines()[-1].strip() not in ("queue", "power")

    table = collect_results(out, tmp_path / "all.csv")
    assert table.height == 4
    assert pl.read_csv(tmp_path / "all.csv").height == 4

    written = campaign_report(out, html=True)
    assert written.kind == "queue" and written.output == out / "report" and written.notes == []
    assert written.dashboard == out / "report" / "report.html"
    assert written.paths and all(p.exists() for p in written.paths)
    # two traces of different machines are never pooled (issue 30, item 4): a row per workload and policy, a
    # figure per workload, and the HTML report has both
    ((title, summary),) = written.tables
    assert "each workload" in title
    assert summary.select("workload", "policy", "windows").rows() == [
        ("small", "fcfs", 1),
        ("small", "easy", 1),
        ("large", "fcfs", 1),
        ("large", "easy", 1),
    ]
    names = {p.name for p in written.paths}
    assert {"queue_small.png", "queue_small.svg", "queue_large.png", "queue_large.svg"} <= names
    assert set(pl.read_csv(out / "report" / "results.csv")["workload_name"]) == {"small", "large"}
    page = written.dashboard.read_text()
    assert "<h2>small</h2>" in page and "<h2>large</h2>" in page and page.count("data:image/png;base64,") == 2

    # the command line writes the same files
    cli = CliRunner().invoke(app, ["campaign", "report", str(out), "--html", "--output", str(tmp_path / "r2")])
    assert cli.exit_code == 0, cli.output
    assert "is ignored" not in cli.output
    assert sorted(p.name for p in (tmp_path / "r2").iterdir()) == sorted(p.name for p in written.paths)

    # a run removed: the campaign is partial, and the report says so
    first = sorted((out / "results").glob("*.json"))[0]
    first.unlink()
    note = partial_campaign_note(out)
    assert note is not None and "3 of 4 runs done" in note
    assert note in campaign_report(out).notes


def test_executor_options_a_run_ignores_are_named() -> None:
    assert ignored_executor_options("local", None, None) == []
    assert ignored_executor_options("local", 2, "tcp://h:8786") == [
        "--address is ignored: it names a Dask scheduler and the executor is local (give --executor dask)"
    ]
    assert ignored_executor_options("dask", 2, "tcp://h:8786") == [
        "--workers is ignored: the Dask cluster at --address has its own workers"
    ]
    assert ignored_executor_options("dask", 2, None) == []


def test_grid_specs_are_validated_as_campaign_files_are() -> None:
    experiment = rmap_grid_experiment(traces=["small"], bounds=[8000.0])
    assert experiment.kind == "rmap" and list(experiment.spec.traces) == ["small"]
    with pytest.raises((CampaignError, ValueError), match="nope"):
        rmap_grid_experiment(traces=["nope"])


def test_reproduction_arguments_are_checked_before_anything_runs(tmp_path: Path) -> None:
    assert paper_id("1") == "001" and paper_id("004") == "004"
    with pytest.raises(ReproduceError, match="paper must be one of 000, 001, 002, 003, 004, got '9'"):
        paper_id("9")
    assert reproduction_output("2", quick=True) == Path("reproduce-002-quick")
    assert reproduction_output("002") == Path("reproduce-002")
    with pytest.raises(ReproduceError, match="seed_count must be at least 1"):
        reproduce_paper("000", tmp_path / "out", seed_count=0)
    assert not (tmp_path / "out").exists()
