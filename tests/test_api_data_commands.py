"""The data commands as Python functions (issue 29): ``wattsched.api``'s ``generate``, ``data stats`` and
``data fetch``, ``dataset build``, ``platforms`` and ``compare``/``report`` functions return what the commands
print and write the files the commands write, with the same errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from wattsched.api.datasets import build_power_dataset, lock_dataset_output, read_job_table
from wattsched.api.generate import (
    generate_lublin_workload,
    generate_m100_workload,
    generate_node_telemetry,
    psu_samples,
)
from wattsched.api.platforms import PlatformFileError, describe_platform, platform_presets
from wattsched.api.reports import RUN_REPORT_FIGURES, compare_runs, write_run_report
from wattsched.api.workloads import (
    PM100_RECORD,
    PUBLIC_DATASETS,
    EmptyWorkloadError,
    fetch_dataset,
    load_workload,
    workload_statistics,
)
from wattsched.cli import app
from wattsched.core.schema import ReadResult, empty_rejects

runner = CliRunner()


def cli_json(*args: str) -> dict:
    """The ``--json`` summary of a command that must succeed."""
    result = runner.invoke(app, ["--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def cli_error(*args: str) -> str:
    """The one error line of a command that must fail with exit code 2."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    return result.stderr.strip()


@pytest.fixture(scope="module")
def lublin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same small Lublin workload written by the API (first) and by the CLI (second)."""
    root = tmp_path_factory.mktemp("lublin")
    api_path, cli_path = root / "api.parquet", root / "cli.parquet"
    made = generate_lublin_workload(api_path, jobs=120, machine_size=32, seed=5, load=0.8, users=7)
    assert made.jobs.height == 120
    summary = cli_json(
        *("generate", "lublin", "--output", str(cli_path), "--jobs", "120", "--machine-size", "32"),
        *("--seed", "5", "--load", "0.8", "--users", "7"),
    )
    assert summary == {"output": str(cli_path), "jobs": 120}
    return api_path, cli_path


def test_lublin_writes_what_the_cli_writes_and_reads_back(lublin: tuple[Path, Path]) -> None:
    api_path, cli_path = lublin
    assert_frame_equal(pl.read_parquet(api_path), pl.read_parquet(cli_path))
    back = load_workload(api_path)
    assert back.jobs.height == 120 and back.provenance.machine_size == 32
    assert (back.jobs["size"] <= 32).all()  # rigid jobs that fit the machine they were drawn for


def test_generators_refuse_a_bad_output_before_drawing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot write a workload there") as lublin:
        generate_lublin_workload(tmp_path / "w.txt", jobs=10)
    assert cli_error("generate", "lublin", "--output", str(tmp_path / "w.txt"), "--jobs", "10") == (
        f"error: {lublin.value}"
    )
    message = "power profiles are a list column: write the m100 workload as .parquet"
    with pytest.raises(ValueError, match=message):
        generate_m100_workload(tmp_path / "m.csv", jobs=10)
    assert cli_error("generate", "m100", "--output", str(tmp_path / "m.csv"), "--jobs", "10") == f"error: {message}"
    with pytest.raises(ValueError, match=r"--jobs = 1,000,000,000,000: the lublin generator needs about"):
        generate_lublin_workload(tmp_path / "w.swf", jobs=10**12)
    assert list(tmp_path.iterdir()) == []


def test_stats_are_the_cli_summary_and_the_figure_is_drawn(lublin: tuple[Path, Path], tmp_path: Path) -> None:
    api_path, _ = lublin
    figure = tmp_path / "stats.png"
    stats = workload_statistics(api_path, machine_size=64, figure=figure)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert stats["jobs"] == 120 and stats["machine_size"] == 64
    printed = cli_json("data", "stats", str(api_path), "--machine-size", "64")
    assert printed == json.loads(json.dumps(stats))
    # a workload already read gives the same statistics; the machine size changes the offered load only
    again = workload_statistics(load_workload(api_path), machine_size=32)
    assert again["offered_load"] == pytest.approx(2 * stats["offered_load"])
    assert again["size"] == stats["size"] and again["runtime_s"] == stats["runtime_s"]


def test_stats_of_a_workload_without_jobs_is_an_error(lublin: tuple[Path, Path]) -> None:
    read = load_workload(lublin[0])
    empty = ReadResult(read.jobs.clear(), empty_rejects(), read.provenance)
    with pytest.raises(EmptyWorkloadError, match=r"^w\.parquet: no job to describe \(0 input lines rejected\)$"):
        workload_statistics(empty, source="w.parquet")
    with pytest.raises(EmptyWorkloadError, match=f"^{read.provenance.source}: no job to describe"):
        workload_statistics(empty)


def test_fetch_refuses_what_the_cli_refuses_before_any_download(tmp_path: Path) -> None:
    assert PUBLIC_DATASETS == {"pm100": PM100_RECORD}
    with pytest.raises(ValueError, match=r"^--max-size must be a size in GiB between 0 and 1048576, got 0$"):
        fetch_dataset("pm100", tmp_path, max_size=0)
    error = cli_error("data", "fetch", "pm100", "--output", str(tmp_path / "t"), "--max-size", "0")
    assert error == "error: --max-size must be a size in GiB between 0 and 1048576, got 0"
    with pytest.raises(ValueError, match=r"unknown dataset 'pm200'; available: pm100"):
        fetch_dataset("pm200", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_telemetry_and_dataset_build_as_the_cli(tmp_path: Path) -> None:
    options = ("--jobs", "60", "--nodes", "12", "--days", "0.25", "--seed", "2")
    made = generate_node_telemetry(tmp_path / "api", jobs=60, nodes=12, days=0.25, seed=2)
    printed = cli_json("generate", "telemetry", "--output", str(tmp_path / "cli"), *options)
    assert printed == {
        "jobs": str(tmp_path / "cli" / "jobs.parquet"),
        "n_jobs": made.n_jobs,
        "psu_samples": made.psu_samples,
    }
    assert made.jobs == tmp_path / "api" / "jobs.parquet" and 0 < made.n_jobs <= 60  # those the span holds
    assert 0 < made.psu_samples <= psu_samples(12, 0.25, 20.0)  # a few samples are missing by design
    assert_frame_equal(pl.read_parquet(made.jobs), pl.read_parquet(tmp_path / "cli" / "jobs.parquet"))

    output = tmp_path / "api.parquet"
    built = build_power_dataset(made.jobs, made.telemetry, output, workers=1)
    assert built.jobs == made.n_jobs and built.dataset.height + built.rejects.height == made.n_jobs
    assert built.dataset.height > 0 and built.rejects_path.exists()
    assert built.rejects_path == tmp_path / "api.rejects.parquet"
    assert_frame_equal(pl.read_parquet(output), built.dataset)
    summary = cli_json(
        *("dataset", "build", "--job-table", str(made.jobs), "--telemetry", str(made.telemetry)),
        *("--output", str(tmp_path / "cli.parquet"), "--workers", "1"),
    )
    assert summary["kept"] == built.dataset.height and summary["rejected"] == built.rejects.height
    assert summary["rejected_per_stage"] == built.rejected_per_stage
    assert summary["telemetry_rows"] == built.stats.telemetry_rows and summary["windows"] == built.stats.windows
    assert_frame_equal(pl.read_parquet(tmp_path / "cli.parquet"), built.dataset)
    # the build released its lock: the output can be locked (and so rebuilt) again
    lock_dataset_output(output).release()
    assert read_job_table(made.jobs).height == made.n_jobs


def test_a_held_output_is_refused(tmp_path: Path) -> None:
    output = tmp_path / "d.parquet"
    lock = lock_dataset_output(output)
    try:
        with pytest.raises(OSError, match=r"d\.parquet"):
            build_power_dataset(pl.DataFrame(), tmp_path / "absent", output)
    finally:
        lock.release()
    assert not output.exists()


def test_platforms_are_what_the_cli_lists_and_checks(tmp_path: Path) -> None:
    presets = platform_presets()
    listed = cli_json("platforms", "list")["presets"]
    assert listed == [p._asdict() for p in presets] and len(presets) > 3
    described = describe_platform("marconi100")
    assert described.kind == "power" and described.fields["dynamic range (basis of caps)"] == "719,880 W"
    assert cli_json("platforms", "check", "marconi100") == {
        "platform": "marconi100",
        "kind": "power",
        "fields": described.fields,
    }
    for preset in presets:
        assert describe_platform(preset.name).kind == preset.kind
    bad = tmp_path / "bad.toml"
    bad.write_text("kind = 'nope'\n")
    with pytest.raises(PlatformFileError, match="is not one of") as refused:
        describe_platform(bad)
    assert cli_error("platforms", "check", str(bad)) == f"error: {refused.value}"


def test_compare_and_report_as_the_cli(lublin: tuple[Path, Path], tmp_path: Path) -> None:
    for policy in ("fcfs", "easy"):
        args = ["simulate", "--workload", str(lublin[0]), "--policy", policy, "--output", str(tmp_path / policy)]
        assert runner.invoke(app, args).exit_code == 0
    table, notes = compare_runs([tmp_path / "fcfs", tmp_path / "easy"])
    assert table.columns == ["metric", "fcfs", "easy", "easy − fcfs", "easy vs fcfs (%)"]
    assert notes["jobs_compared"] == 120
    printed = cli_json("compare", str(tmp_path / "fcfs"), str(tmp_path / "easy"))
    assert printed["metrics"] == json.loads(json.dumps(table.to_dicts()))
    with pytest.raises(ValueError, match="at least two"):
        compare_runs([tmp_path / "fcfs"], common_jobs=True)
    page = write_run_report(tmp_path / "easy")
    assert page == tmp_path / "easy" / "report.html" and "<table" in page.read_text()
    assert all((tmp_path / "easy" / name).stat().st_size > 0 for name in RUN_REPORT_FIGURES)
    assert cli_json("report", str(tmp_path / "fcfs"))["files"] == [
        str(tmp_path / "fcfs" / name) for name in ("report.html", *RUN_REPORT_FIGURES)
    ]
