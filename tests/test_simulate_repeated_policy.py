"""A repeated ``--policy`` runs each policy (issue 30, item 2): before, ``simulate --policy easy --policy fcfs``
ran fcfs only and its summary said fcfs. Each policy's run is the run a single ``--policy`` makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.cli.simulate import policy_folders
from wattsched.workload.generate import generate_lublin
from wattsched.workload.save import save_workload


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("traces")
    a, b = folder / "a.swf", folder / "b.parquet"
    save_workload(generate_lublin(300, 64, seed=1), a)
    save_workload(generate_lublin(250, 64, seed=2), b)
    return a, b


def _simulate(*args: str) -> str:
    result = CliRunner().invoke(app, ["simulate", *args])
    assert result.exit_code == 0, result.output
    return result.output


def _summary(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text())


def test_each_repeated_policy_runs_into_its_own_folder(traces: tuple[Path, Path], tmp_path: Path) -> None:
    trace = str(traces[0])
    out = tmp_path / "both"
    printed = _simulate("--workload", trace, "--policy", "easy", "--policy", "FCFS", "--output", str(out))
    assert "2 policies on 1 workload" in printed
    for name in ("easy", "fcfs"):
        alone = tmp_path / f"alone-{name}"
        _simulate("--workload", trace, "--policy", name, "--output", str(alone))
        both, single = _summary(out / name), _summary(alone)
        assert both["run"]["policy"] == single["run"]["policy"] == name
        assert both["metrics"] == single["metrics"]
    assert _summary(out / "easy")["metrics"] != _summary(out / "fcfs")["metrics"]


def test_several_workloads_and_policies_make_one_folder_per_pair(traces: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "grid"
    args = ["--workload", str(traces[0]), "--workload", str(traces[1]), "--policy", "sjf", "--policy", "easy"]
    printed = _simulate(*args, "--output", str(out))
    assert "2 policies on 2 workloads" in printed
    for workload in ("a", "b"):
        for policy in ("sjf", "easy"):
            assert _summary(out / workload / policy)["run"]["policy"] == policy


def test_a_policy_given_twice_is_refused(traces: tuple[Path, Path], tmp_path: Path) -> None:
    args = ["simulate", "--workload", str(traces[0]), "--policy", "easy", "--policy", "EASY"]
    result = CliRunner().invoke(app, [*args, "--output", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "easy given more than once" in result.output
    assert not (tmp_path / "x").exists()


def test_python_policies_are_named_by_their_class() -> None:
    assert policy_folders(["easy", "examples/strict_fcfs.py:StrictFcfs", "pkg.mod:StrictFcfs"]) == [
        "easy",
        "StrictFcfs",
        "StrictFcfs-2",
    ]
