"""One spelling of a command's input and the report's time window (issue 30, items 8 and 11): `--workload` on
every command that reads a workload (the old `data convert --input` and `data stats FILE` still work, with a
warning), and `report RUN --from --to` zooms the run's figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.workload.generate import generate_lublin
from wattsched.workload.save import save_workload

runner = CliRunner()


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spelling") / "w.swf"
    save_workload(generate_lublin(200, 32, seed=4), path)
    return path


def test_convert_and_stats_take_workload_and_the_old_forms_warn(trace: Path, tmp_path: Path) -> None:
    new = runner.invoke(app, ["data", "convert", "--workload", str(trace), "--output", str(tmp_path / "a.parquet")])
    assert new.exit_code == 0 and "warning" not in new.output
    old = runner.invoke(app, ["data", "convert", "--input", str(trace), "--output", str(tmp_path / "b.parquet")])
    assert old.exit_code == 0 and "--input is deprecated; use --workload" in old.output
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    stats = runner.invoke(app, ["--json", "data", "stats", "--workload", str(trace)])
    assert stats.exit_code == 0, stats.output
    positional = runner.invoke(app, ["--json", "data", "stats", str(trace)])
    assert positional.exit_code == 0 and positional.stdout == stats.stdout
    assert f"give the workload as --workload {trace}" in positional.stderr
    for command in (["data", "convert", "--output", str(tmp_path / "c.csv")], ["data", "stats"]):
        missing = runner.invoke(app, command)
        assert missing.exit_code == 2 and "missing option --workload" in missing.output


def test_report_zooms_to_from_and_to(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = runner.invoke(app, ["simulate", "--workload", str(trace), "--policy", "easy", "--output", str(out)])
    assert done.exit_code == 0, done.output
    zoomed = runner.invoke(app, ["report", str(out), "--from", "3600", "--to", "7200"])
    assert zoomed.exit_code == 0, zoomed.output
    assert "The figure shows 3,600 s to 7,200 s" in (out / "report.html").read_text()
    bad = runner.invoke(app, ["report", str(out), "--from", "noon"])
    assert bad.exit_code == 2 and "has no date" in bad.output


def test_report_help_names_the_option_that_exists() -> None:
    """Issue 30, item 12: `report --help` said "a run made without --report"; the option is `simulate --html`."""
    result = runner.invoke(app, ["report", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "without --html" in result.output and "--report" not in result.output
