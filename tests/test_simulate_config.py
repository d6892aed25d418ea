"""`wattsched simulate --config sim.toml`: every option as a key, validated; the command line overrides it."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.cli.config import config_keys
from wattsched.cli.simulate import simulate

runner = CliRunner()


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("w") / "lublin.parquet"
    args = ["generate", "lublin", "--jobs", "300", "--machine-size", "32", "--seed", "9", "--output", str(path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return path


def write(tmp_path, text: str):
    path = tmp_path / "sim.toml"
    path.write_text(text)
    return path


def test_every_option_is_a_key() -> None:
    keys = config_keys(simulate)
    for key in ("workload", "policy", "output", "machine_size", "format", "metrics_window", "power_check", "html"):
        assert key in keys
    assert "config" not in keys


def test_the_keys_single_runs_md_names_are_keys() -> None:
    """docs/single-runs.md lists example keys; each is one (issue 30, item 12: it listed `report`, refused)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "single-runs.md").read_text()
    sentence = page.split("Every option of `simulate` is a key of the TOML file")[1].split("…)")[0]
    named = [name.replace("-", "_") for name in re.findall(r"`([a-z][a-z_-]*)`", sentence)]
    assert len(named) >= 4
    assert set(named) <= set(config_keys(simulate))


def test_the_file_gives_every_option(workload, tmp_path) -> None:
    out = tmp_path / "run"
    config = write(
        tmp_path,
        f'workload = "{workload}"\npolicy = "easy-sjf"\noutput = "{out}"\nformat = "csv"\n'
        'metrics-window = "0:3600"\nbaseline = false\n',
    )
    result = runner.invoke(app, ["simulate", "--config", str(config)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["policy"] == "easy-sjf"
    assert summary["metrics"]["utilisation_window_end"] == 3600
    assert (out / "jobs.csv").is_file()


def test_the_command_line_overrides_the_file(workload, tmp_path) -> None:
    out = tmp_path / "run"
    config = write(tmp_path, f'workload = "{workload}"\npolicy = "easy-sjf"\noutput = "{out}"\nmachine_size = 16\n')
    result = runner.invoke(app, ["simulate", "--config", str(config), "--policy", "fcfs", "--machine-size", "40"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["policy"] == "fcfs" and summary["run"]["machine_size"] == 40


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('policy = "easy"\nmachine_sise = 3\n', "unknown key 'machine_sise'"),
        ('machine_size = "many"\n', "key 'machine_size': Input should be a valid integer"),
        ('format = "xlsx"\n', "key 'format'"),
        ("policy = [1, 2]\n", "key 'policy.0': Input should be a valid string"),
        ("policy = \n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_file_and_key(tmp_path, text: str, message: str) -> None:
    config = write(tmp_path, text)
    result = runner.invoke(app, ["simulate", "--config", str(config)])
    assert result.exit_code == 2
    assert message in result.output and str(config) in result.output.replace("\n", "")
    assert "Traceback" not in result.output


def test_a_missing_file(tmp_path) -> None:
    result = runner.invoke(app, ["simulate", "--config", str(tmp_path / "none.toml")])
    assert result.exit_code == 2 and "no such file" in result.output


def test_relative_paths_are_relative_to_the_file(workload, tmp_path, monkeypatch) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "w.parquet").write_bytes(workload.read_bytes())
    config = folder / "sim.toml"
    config.write_text('workload = "w.parquet"\npolicy = "easy"\noutput = "out"\n')
    monkeypatch.chdir(tmp_path)  # elsewhere than the file
    result = runner.invoke(app, ["simulate", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (folder / "out" / "summary.json").is_file()
