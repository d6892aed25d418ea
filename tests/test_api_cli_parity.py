"""The command line and the Python API are one product: ``wattsched simulate`` with some options and
``wattsched.api.run_policy`` + ``power_setup`` + ``write_run`` with the same options write identical files,
for every registered policy and every registered power check (issue 29: the CLI only parses, calls the API and
prints, with one source of defaults)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from wattsched.api import IgnoredOptionWarning, power_setup, run_policy, write_run
from wattsched.cli import app
from wattsched.policies.powercheck import check_names
from wattsched.policies.registry import CORE_POLICIES, POLICIES

runner = CliRunner()

#: Every check as it is typed: the families with a value (``quantile:P`` → ``quantile:0.9``).
CHECKS = [name.replace(":P", ":0.9") for name in check_names()]
POWER_POLICIES = [p for p in POLICIES if p not in CORE_POLICIES]


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Marconi100-like workload with per-job power, written by the CLI's own generator."""
    path = tmp_path_factory.mktemp("parity") / "m100.parquet"
    args = ["generate", "m100", "--jobs", "300", "--seed", "7", "--load", "1.2", "--output", str(path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return path


def _without_timings(value: Any) -> Any:
    """The summary less what measures this process rather than the schedule (seconds of CPU and wall)."""
    if isinstance(value, dict):
        return {
            k: _without_timings(v)
            for k, v in value.items()
            if not (k.endswith("_seconds") or k.endswith("_s") or k == "elapsed")
        }
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _same_folders(cli_dir: Path, api_dir: Path) -> None:
    cli_files = sorted(p.name for p in cli_dir.iterdir())
    assert cli_files == sorted(p.name for p in api_dir.iterdir())
    for name in cli_files:
        if name.endswith(".parquet"):
            assert_frame_equal(pl.read_parquet(cli_dir / name), pl.read_parquet(api_dir / name))
        elif name == "summary.json":
            cli_summary = json.loads((cli_dir / name).read_text())
            api_summary = json.loads((api_dir / name).read_text())
            assert _without_timings(cli_summary) == _without_timings(api_summary)
        else:
            assert (cli_dir / name).read_text() == (api_dir / name).read_text(), name


def _both_ways(
    tmp_path: Path, workload: Path, policy: str, cli_options: list[str], setup: dict[str, Any] | None, **run: Any
) -> None:
    cli_dir, api_dir = tmp_path / "cli", tmp_path / "api"
    args = ["simulate", "--workload", str(workload), "--policy", policy, "--output", str(cli_dir), *cli_options]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    power = power_setup(**setup) if setup is not None else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IgnoredOptionWarning)  # the CLI prints it; the files are compared
        out = run_policy(workload, policy, power=power, **run)
    write_run(out, api_dir)
    _same_folders(cli_dir, api_dir)


@pytest.mark.parametrize("policy", list(CORE_POLICIES))
def test_queue_policies_the_same_both_ways(tmp_path: Path, workload: Path, policy: str) -> None:
    _both_ways(tmp_path, workload, policy, [], None)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("policy", POWER_POLICIES)
def test_power_policies_and_checks_the_same_both_ways(tmp_path: Path, workload: Path, policy: str, check: str) -> None:
    options = ["--platform", "marconi100", "--power-check", check, "--cap", "0.4", "--window", "7200"]
    setup = {"platform": "marconi100", "check": check, "cap": 0.4, "window": 7200.0}
    _both_ways(tmp_path, workload, policy, options, setup)


@pytest.mark.parametrize(
    ("cli_options", "setup", "run"),
    [
        (
            ["--reservation", "nodes+power", "--sigma-scaling", "sqrt"],
            {"reservation": "nodes+power", "sigma_scaling": "sqrt"},
            {},
        ),
        (
            ["--no-subtract-idle", "--cap-basis", "total", "--cap", "0.6"],
            {"subtract_idle": False, "cap_basis": "total", "cap": 0.6},
            {},
        ),
        (
            ["--post-window-cap", "dynamic_range", "--power-source", "naive"],
            {"post_window_cap": "dynamic_range", "source": "naive"},
            {},
        ),
        (["--metrics-window", "0:7200", "--no-baseline"], {}, {"metrics_window": (0.0, 7200.0), "baseline": False}),
    ],
    ids=["reservation-sigma", "idle-basis", "post-window-source", "metrics-window"],
)
def test_power_options_the_same_both_ways(
    tmp_path: Path, workload: Path, cli_options: list[str], setup: dict[str, Any], run: dict[str, Any]
) -> None:
    base = ["--platform", "marconi100", "--power-check", "gaussian95", "--cap", "0.4", "--window", "7200"]
    options = base + cli_options  # a repeated option: the last one counts, on the command line as in the dict
    full = {"platform": "marconi100", "check": "gaussian95", "cap": 0.4, "window": 7200.0, **setup}
    _both_ways(tmp_path, workload, "easy-pc", options, full, **run)


def test_knapsack_skip_the_same_both_ways(tmp_path: Path, workload: Path) -> None:
    options = ["--platform", "marconi100", "--power-check", "mean", "--cap", "0.4", "--knapsack", "skip"]
    setup = {"platform": "marconi100", "check": "mean", "cap": 0.4, "knapsack": "skip"}
    _both_ways(tmp_path, workload, "knapsack-wait", options, setup)


def test_the_post_window_default_is_the_same_both_ways(workload: Path) -> None:
    """The same naive run gave a turnaround increase of 0.931 from Python and 0.211 from the command line while
    ``PowerCapSchedule.window`` defaulted to the dynamic range after the window (issue 29)."""
    setup = power_setup("marconi100", "naive", cap=0.4, window=7200.0)
    assert setup is not None and setup.cap is not None
    assert setup.cap.cap_at(1e9) is None  # no check after the window, as `--post-window-cap none`


def test_an_ignored_check_warns_from_python(workload: Path) -> None:
    setup = power_setup("marconi100", "max", cap=0.5)
    with pytest.warns(IgnoredOptionWarning, match="power check max .* is ignored: easy does not check power"):
        run_policy(workload, "easy", power=setup, baseline=False)


def test_a_power_policy_without_a_setup_is_refused_from_python(workload: Path) -> None:
    with pytest.raises(ValueError, match="policy easy-pc checks power"):
        run_policy(workload, "EASY-PC")


def test_a_run_gives_its_metrics_as_attributes_and_draws_itself(workload: Path) -> None:
    import copy
    import pickle

    run = run_policy(workload, "easy-pc", power=power_setup("marconi100", "max", cap=0.4, window=7200.0))
    assert run.metrics.wait_mean == run.summary["metrics"]["wait_mean"]
    assert "utilisation" in dir(run.metrics) and run.metrics.as_dict() == run.summary["metrics"]
    assert run.power_metrics is not None and run.power_metrics.trespass is False  # max estimates never break
    assert pickle.loads(pickle.dumps(run.metrics)).n_jobs == copy.copy(run.metrics).n_jobs == run.jobs.height
    with pytest.raises(AttributeError, match="no 'wait_average'; they are: n_jobs"):
        _ = run.metrics.wait_average
    figure = run.plot()
    assert len(figure.axes) >= 4  # Gantt, utilisation, queue, power (and the Gantt's colour bar)
    assert run_policy(workload, "easy").power_metrics is None
