"""The error path of the command line: one plain line per error, --debug for the traceback, exit codes, and the
tracebacks of issue 16 turned into clear errors."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.cli.common import MESSAGE_LIMIT, error_line
from wattsched.core.policy import View
from wattsched.engine.simulate import SimulationError, simulate

runner = CliRunner()


@pytest.fixture(scope="module")
def small_swf(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("wl") / "small.swf"
    result = runner.invoke(app, ["generate", "lublin", "--jobs", "60", "--machine-size", "32", "--output", str(path)])
    assert result.exit_code == 0, result.output
    return str(path)


def _boom(exc: BaseException):
    def load_workload(*args, **kwargs):
        raise exc

    return load_workload


def test_an_unexpected_exception_is_one_line_with_the_debug_hint(monkeypatch, small_swf, tmp_path) -> None:
    monkeypatch.setattr("wattsched.workload.load.load_workload", _boom(KeyError("power_profile")))
    result = runner.invoke(app, ["simulate", "--workload", small_swf, "--policy", "easy", "--output", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["error: KeyError: 'power_profile' (run with --debug for the traceback)"]
    assert "Traceback" not in result.output


def test_an_input_error_is_its_message_alone(monkeypatch, small_swf, tmp_path) -> None:
    # a ValueError from a reader that the command did not catch itself: bad input, no hint
    monkeypatch.setattr("wattsched.workload.load.load_workload", _boom(OSError("w.swf: permission denied")))
    result = runner.invoke(app, ["simulate", "--workload", small_swf, "--policy", "easy", "--output", str(tmp_path)])
    assert result.exit_code == 1 and result.stderr == "error: w.swf: permission denied\n"


@pytest.mark.parametrize("how", ["option", "env"])
def test_debug_shows_the_traceback(monkeypatch, small_swf, tmp_path, how: str) -> None:
    monkeypatch.setattr("wattsched.workload.load.load_workload", _boom(KeyError("power_profile")))
    args = ["simulate", "--workload", small_swf, "--policy", "easy", "--output", str(tmp_path)]
    if how == "option":
        result = runner.invoke(app, ["--debug", *args])
    else:
        result = runner.invoke(app, args, env={"WATTSCHED_DEBUG": "1"})
    assert isinstance(result.exception, KeyError)  # raised through: typer prints the traceback


def test_debug_prints_the_traceback_of_a_caught_error(tmp_path) -> None:
    result = runner.invoke(
        app, ["--debug", "simulate", "--workload", str(tmp_path / "no.swf"), "--policy", "easy", "--output", "o"]
    )
    assert result.exit_code == 2
    assert "Traceback (most recent call last)" in result.stderr and "WorkloadError" in result.stderr
    assert result.stderr.rstrip().endswith("file does not exist")


def test_ctrl_c_exits_130_with_one_line(monkeypatch, small_swf, tmp_path) -> None:
    monkeypatch.setattr("wattsched.workload.load.load_workload", _boom(KeyboardInterrupt()))
    result = runner.invoke(app, ["simulate", "--workload", small_swf, "--policy", "easy", "--output", str(tmp_path)])
    assert result.exit_code == 130 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("interrupted: `wattsched") and "stopped before it finished" in result.stderr


@pytest.mark.parametrize("name", ["[/b]odd.swf", "[bold]odd[/bold].swf", "[red]x.swf"])
def test_markup_in_input_is_printed_literally(tmp_path, name: str) -> None:
    path = tmp_path / name
    result = runner.invoke(app, ["simulate", "--workload", str(path), "--policy", "easy", "--output", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {path}: file does not exist\n"  # the brackets kept, no MarkupError


def test_a_long_message_is_not_wrapped(tmp_path) -> None:
    path = tmp_path / ("d" * 150) / "w.swf"
    result = runner.invoke(app, ["simulate", "--workload", str(path), "--policy", "easy", "--output", str(tmp_path)])
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and len(result.stderr) > 200


def test_an_echoed_input_is_shortened(small_swf, tmp_path) -> None:
    huge = "1" * 1_000_000 + ":x"
    args = ["simulate", "--workload", small_swf, "--policy", "easy", "--output", str(tmp_path)]
    result = runner.invoke(app, [*args, "--metrics-window", huge])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --metrics-window must be START:END in seconds, got '111")
    assert len(result.stderr) < 200 and "characters left out" in result.stderr


def test_error_line_is_one_line_and_bounded(capsys) -> None:
    error_line("first line\n  second line [/b]\n" + "y" * 1_000_000)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: first line; second line [/b]; yyy")
    assert len(err) <= MESSAGE_LIMIT + 20


def test_a_usage_error_is_one_plain_line() -> None:
    result = runner.invoke(app, ["campaign", "report", "nowhere", "--aggregate", "mode"])
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and "╭" not in result.stderr
    assert "'mode' is not one of 'mean', 'median'" in result.stderr and "campaign report --help" in result.stderr
    result = runner.invoke(app, ["--no-such-option"])
    assert result.exit_code == 2 and result.stderr.startswith("error: No such option: --no-such-option")


def test_a_power_campaign_on_a_trace_without_power_is_refused_before_running(small_swf, tmp_path) -> None:
    spec = tmp_path / "c.toml"
    spec.write_text(
        f'kind = "power"\nname = "np"\nplatform = "marconi100"\n\n[[workloads]]\nname = "lub"\npath = "{small_swf}"\n'
        '\n[grid]\nchecks = ["max"]\ncaps = [0.5]\nsources = ["real", "predicted"]\n'
    )
    result = runner.invoke(app, ["campaign", "run", str(spec), "--output", str(tmp_path / "c"), "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (  # (a progress bar's empty line may come first)
        f"error: workload 'lub' ({small_swf}) lacks the power column(s) power_mean, power_max, power_std that a "
        "power campaign reads (sources: real, predicted); give a workload with per-node power (a Marconi100-like or "
        'PM100 table) or use a queue campaign (kind = "queue") for a trace without power'
    )
    assert not list((tmp_path / "c").glob("results/*"))  # nothing ran


JOBS = pl.DataFrame(
    {
        "job_id": [101, 102, 103],
        "submit_time": [0.0, 1.0, 2.0],
        "size": [1, 1, 1],
        "walltime": [10.0, 10.0, 10.0],
        "runtime": [5.0, 5.0, 5.0],
    }
)


class _Returns:
    def __init__(self, what) -> None:
        self.name = "py-bad"
        self.what = what

    def schedule(self, view: View):
        return self.what(view)


@pytest.mark.parametrize(
    ("what", "says"),
    [
        (lambda v: None, "returned None at t = 0"),
        (lambda v: [int(v.jobs.job_id[p]) for p in v.queue], "returned 101, which is not a position in view.queue"),
        (lambda v: [0.5], "returned [0.5] at t = 0, not a list of integer positions"),
        (lambda v: ["a"], "not a list of integer positions"),
        (lambda v: 7, "returned 7 at t = 0, not a list"),
    ],
)
def test_a_python_policy_returning_ids_or_none_is_told_positions_are_expected(what, says: str) -> None:
    with pytest.raises(SimulationError, match=r"positions of the jobs to start, taken from view\.queue") as caught:
        simulate(JOBS, _Returns(what), 4)
    assert says in str(caught.value)
    if "101" in says:
        assert "(it is a queued job's id)" in str(caught.value)


def test_a_python_policy_returning_positions_as_numpy_integers_runs() -> None:
    result = simulate(JOBS, _Returns(lambda v: np.asarray(v.queue)), 4)
    assert result.schedule["start_time"].to_list() == [0.0, 1.0, 2.0]


def test_renamed_options_still_work_with_a_warning(tmp_path) -> None:
    result = runner.invoke(
        app,
        [
            "dataset",
            "build",
            "--jobs",
            str(tmp_path / "j.parquet"),
            "--telemetry",
            str(tmp_path),
            "--output",
            str(tmp_path / "o"),
        ],
    )
    assert "warning: --jobs is deprecated; use --job-table" in result.stderr
    assert result.exit_code != 0 and "j.parquet" in result.stderr  # then the missing file, named
    result = runner.invoke(app, ["dataset", "build", "--telemetry", str(tmp_path), "--output", str(tmp_path / "o")])
    assert result.exit_code == 2 and result.stderr.startswith("error: missing option --job-table")


def test_every_reproduction_takes_workers(monkeypatch, tmp_path) -> None:
    # paper 004's RMAP grid ran in one process and --workers warned that it was ignored; since issue 32 it runs
    # its samples on the workers, like the other papers
    seen = []

    def stop(*args, **kwargs):
        seen.append(kwargs.get("workers"))
        raise ValueError("stopped by the test before running")

    monkeypatch.setattr("wattsched.reproduce.runner.reproduce", stop)
    for paper in ("003", "004"):
        result = runner.invoke(app, ["reproduce", paper, "--workers", "2", "--output", str(tmp_path / "r")])
        assert "ignored" not in result.stderr, result.stderr
    assert seen == [2, 2]


# ------------------------------------------------------------------ issue 31 item 9: values refused or said in one line


@pytest.mark.parametrize(
    ("cap", "says"),
    [
        ("1e308W", "error: cap '1e308W': 1e+308 W is more than any machine draws"),
        ("0W", "error: cap '0W': a zero cap lets no job start"),
        ("0", "error: cap '0': a zero cap lets no job start"),
    ],
)
def test_simulate_refuses_an_absurd_or_zero_cap(small_swf, tmp_path, cap: str, says: str) -> None:
    argv = ["simulate", "--workload", small_swf, "--policy", "easy-pc", "--platform", "marconi100"]
    result = runner.invoke(app, [*argv, "--power-check", "max", "--cap", cap, "--output", str(tmp_path)])
    assert result.exit_code == 2 and result.stderr.startswith(says), result.output
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.output


def test_simulate_warns_a_cap_above_the_platform(tmp_path) -> None:
    """1e9 W on Marconi100 (at most 1,822,800 W dynamic) binds no real power: the run goes on, with one warning."""
    workload = tmp_path / "m100.parquet"
    made = runner.invoke(app, ["generate", "m100", "--jobs", "40", "--seed", "1", "--output", str(workload)])
    assert made.exit_code == 0, made.output
    argv = ["simulate", "--workload", str(workload), "--policy", "easy-pc", "--platform", "marconi100"]
    result = runner.invoke(app, [*argv, "--power-check", "max", "--cap", "1e9W", "--output", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warned == [
        "warning: cap 1,000,000,000 W (dynamic) is above the most marconi100 can draw (1,822,800 W dynamic: 980 nodes"
        " at 2,100 W, less idle): it binds no real power; a typo? ('none' for no cap)"
    ]


def test_a_boolean_column_is_one_line_naming_file_and_column(tmp_path) -> None:
    path = tmp_path / "flags.parquet"
    pl.DataFrame(
        {"job_id": [1], "submit_time": [0.0], "walltime": [9.0], "runtime": [5.0], "size": [True]}
    ).write_parquet(path)
    result = runner.invoke(app, ["data", "convert", "--workload", str(path), "--output", str(tmp_path / "o.csv")])
    assert result.exit_code == 2
    assert (
        result.stderr == f"error: {path}: column 'size' is Boolean (true/false), not a number (Int64): refused"
        " rather than read as 1 and 0\n"
    )
