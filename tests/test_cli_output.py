"""--json (one JSON object of the command's summary on stdout) and --quiet (errors only)."""

from __future__ import annotations

import inspect
import json

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.cli.command_group import WattschedGroup, hoist_root_flags
from wattsched.cli.common import console, err, output, set_output_mode

runner = CliRunner()


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("wl") / "w.swf"
    result = runner.invoke(app, ["generate", "lublin", "--jobs", "120", "--machine-size", "32", "--output", str(path)])
    assert result.exit_code == 0, result.output
    return path


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # the whole of stdout: one object


def test_simulate_json_is_the_summary(workload, tmp_path) -> None:
    result = runner.invoke(
        app, ["--json", "simulate", "--workload", str(workload), "--policy", "easy", "--output", str(tmp_path)]
    )
    summary = _json(result)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert summary["metrics"] == on_disk["metrics"] and summary["metrics"]["n_jobs"] == 120
    assert summary["files"]["jobs"] == str(tmp_path / "jobs.parquet")
    assert "jobs simulated" in result.stderr  # the text table went to stderr


def test_root_flags_work_after_the_command_too(workload, tmp_path) -> None:
    """Issue 30, item 7: `simulate … --json` was "No such option: --json"; now the root's flags may come after
    the command, and every command's help names them."""
    args = ["simulate", "--workload", str(workload), "--policy", "easy", "--output", str(tmp_path / "a")]
    summary = _json(runner.invoke(app, [*args, "--json"]))
    assert summary["metrics"]["n_jobs"] == 120
    quiet_args = ["simulate", "--workload", str(workload), "-q", "--policy", "easy", "--output", str(tmp_path / "q")]
    quiet = runner.invoke(app, quiet_args)
    assert quiet.exit_code == 0 and quiet.output == ""
    shown = runner.invoke(app, ["simulate", "--help"])
    assert "Global options, before or after the command: --json, --quiet (-q), --debug" in " ".join(
        shown.output.split()
    )


def test_root_flags_after_a_double_dash_are_arguments() -> None:
    assert hoist_root_flags(["simulate", "--output", "x", "--json", "--", "--json"]) == [
        "--json",
        "simulate",
        "--output",
        "x",
        "--",
        "--json",
    ]
    assert hoist_root_flags(["data", "stats", "f.swf"]) == ["data", "stats", "f.swf"]


def test_quiet_prints_nothing_but_errors(workload, tmp_path) -> None:
    result = runner.invoke(
        app, ["-q", "simulate", "--workload", str(workload), "--policy", "easy", "--output", str(tmp_path)]
    )
    assert result.exit_code == 0 and result.output == ""
    assert pl.read_parquet(tmp_path / "jobs.parquet").height == 120
    result = runner.invoke(app, ["--quiet", "simulate", "--workload", "none.swf", "--policy", "easy", "--output", "o"])
    assert result.exit_code == 2 and result.stderr == "error: none.swf: file does not exist\n"
    assert not console.quiet and not err.quiet and not output.quiet  # reset after the invocation


def test_data_convert_and_predict_json(workload, tmp_path) -> None:
    out = tmp_path / "w.parquet"
    convert = _json(runner.invoke(app, ["--json", "data", "convert", "--input", str(workload), "--output", str(out)]))
    assert convert == {"input": str(workload), "output": str(out), "jobs": 120, "rejected": 0}
    pred = _json(
        runner.invoke(
            app,
            ["--json", "predict", "runtime", "--workload", str(out), "--output", str(tmp_path / "p.parquet")],
        )
    )
    assert pred["method"] == "rules" and pred["report"]["runtime"]["overall"]["jobs"] > 0


def test_campaign_status_and_report_json(tmp_path) -> None:
    spec = tmp_path / "q.toml"
    spec.write_text(
        'kind = "queue"\nname = "tiny"\npolicies = ["fcfs", "easy"]\n[[workloads]]\nname = "lublin"\n'
        'generate = { model = "lublin", jobs = 600, machine_size = 64, seed = 1 }\n'
    )
    camp = tmp_path / "c"
    run = _json(runner.invoke(app, ["--json", "campaign", "run", str(spec), "--output", str(camp), "--workers", "1"]))
    assert run["runs"] == 2 and run["executed"] == 2
    status = _json(runner.invoke(app, ["--json", "campaign", "status", str(camp)]))
    assert status["done"] == status["runs"] == 2 and sum(r["done"] for r in status["per"]) == 2
    report = _json(runner.invoke(app, ["--json", "campaign", "report", str(camp)]))
    assert report["files"] and report["tables"]
    assert all(isinstance(rows, list) for rows in report["tables"].values())


def test_json_is_strict(monkeypatch, capsys) -> None:
    from wattsched.cli.common import emit_json, reset_output_mode, set_output_mode

    set_output_mode(json=True)
    try:
        emit_json({"a": float("nan"), "b": [float("inf"), 1.5], "c": tmp_path_like()})
    finally:
        reset_output_mode()
    assert json.loads(capsys.readouterr().out) == {"a": None, "b": [None, 1.5], "c": "x/y"}


def tmp_path_like():
    from pathlib import PurePosixPath

    return PurePosixPath("x/y")


def _leaves(command):
    subs = getattr(command, "commands", None)
    if not subs:
        yield command
        return
    for sub in subs.values():
        yield from _leaves(sub)


def test_every_command_has_a_json_summary() -> None:
    """A drift guard: a new command that prints a summary also hands it to emit_json (or --json warns)."""
    root = typer.main.get_command(app)
    missing = [c.name for c in _leaves(root) if "emit_json(" not in inspect.getsource(c.callback)]
    # (demo --kind campaign reaches it through _demo_campaign)
    assert missing == []


def test_json_where_a_command_has_no_summary_warns() -> None:
    """The root group's fallback, for a command without a summary (here a stand-in app on the same group)."""
    other = typer.Typer(cls=WattschedGroup)

    @other.callback()
    def root(json_output: bool = typer.Option(False, "--json")) -> None:
        set_output_mode(json=json_output)

    @other.command()
    def hello() -> None:
        console.print("hello")

    result = runner.invoke(other, ["--json", "hello"])
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == "hello\nwarning: --json: this command has no JSON summary; its text output went to stderr\n"
    listed = _json(runner.invoke(app, ["--json", "policies"]))
    assert "easy" in [p["name"] for p in listed["policies"]]


def test_quiet_and_json_exclude_each_other() -> None:
    result = runner.invoke(app, ["--quiet", "--json", "policies"])
    assert result.exit_code == 2 and "exclude each other" in result.stderr
