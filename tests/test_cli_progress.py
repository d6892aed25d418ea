"""Progress where there is no terminal (issue 30, item 13): `campaign run` under CI or nohup printed nothing for
minutes; now plain lines with the count, the elapsed time and the time left, and bars show the time left."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.progress import Progress, TimeRemainingColumn
from typer.testing import CliRunner

from wattsched.cli import app, progress
from wattsched.cli.progress import LineProgress, progress_bar


def test_without_a_terminal_progress_is_plain_lines(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)
    with progress_bar("[bold]runs[/]") as bar:
        assert isinstance(bar, LineProgress)
        task = bar.add_task("runs", total=4)
        for _ in range(4):
            bar.advance(task)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("runs: 1/4 (25%), 0:00:00 elapsed, about ")
    assert lines[-1] == "runs: 4/4 (100%), 0:00:00 elapsed"  # the end: no time left, and printed once
    assert len(lines) == 4


def test_a_quick_task_prints_nothing_more(capsys) -> None:
    with progress_bar("runs") as bar:
        task = bar.add_task("runs", total=3)
        for _ in range(3):
            bar.advance(task)
    assert capsys.readouterr().err == ""


def test_on_a_terminal_the_bar_shows_the_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress.err, "_force_terminal", True)
    bar = progress_bar("runs")
    assert type(bar) is Progress
    assert any(isinstance(c, TimeRemainingColumn) for c in bar.columns)


def test_campaign_run_reports_progress_in_a_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)
    spec = tmp_path / "q.toml"
    spec.write_text(
        'kind = "queue"\nname = "log"\npolicies = ["fcfs", "easy"]\n[[workloads]]\nname = "l"\n'
        'generate = { model = "lublin", jobs = 800, machine_size = 32, seed = 1 }\n'
        "windows = { count = 1, hours = 24, seed = 0 }\n"
    )
    result = CliRunner().invoke(app, ["campaign", "run", str(spec), "--output", str(tmp_path / "c"), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "queue log: 2/2 (100%)" in result.stderr
