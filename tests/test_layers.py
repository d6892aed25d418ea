"""The layers contract (``[tool.importlinter]`` in pyproject.toml) holds, and it catches a planted back-edge.

``make test`` runs ``lint-imports`` too; this test makes a bare ``pytest`` fail on a back-edge as well. Both runs
take well under a second (grimp parses the imports, nothing is imported).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the repository's contracts over the package found in ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, "-c", LINT, str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_contracts_kept(tmp_path: Path) -> None:
    run = _lint(SRC, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_planted_back_edge_breaks_the_layers(tmp_path: Path) -> None:
    """A core module importing the API, inside a function (where imports used to hide), breaks the contract."""
    copy = tmp_path / "src"
    shutil.copytree(SRC / "wattsched", copy / "wattsched", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "wattsched" / "core" / "planted.py").write_text(
        "def upward():\n    from wattsched.api import run_policy\n\n    return run_policy\n"
    )
    run = _lint(copy, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Layers import downward only BROKEN" in run.stdout
    assert "wattsched.core.planted -> wattsched.api" in run.stdout


def test_planted_study_edge_breaks_independence(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(SRC / "wattsched", copy / "wattsched", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "wattsched" / "studies" / "eamc" / "planted.py").write_text(
        "from wattsched.studies.rmap.machine import JobDetails\n"
    )
    run = _lint(copy, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "No study imports another study BROKEN" in run.stdout


def test_planted_cli_shortcut_breaks_the_api_contract(tmp_path: Path) -> None:
    """A command that reads a workload itself instead of through ``wattsched.api``, in a type-only import (where
    a shortcut would hide), breaks the contract: the CLI parses, calls the API and prints."""
    copy = tmp_path / "src"
    shutil.copytree(SRC / "wattsched", copy / "wattsched", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "wattsched" / "cli" / "planted.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from wattsched.workload.load import load_workload\n"
    )
    run = _lint(copy, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "The command line reaches the toolkit only through wattsched.api BROKEN" in run.stdout
    assert "wattsched.cli.planted -> wattsched.workload.load" in run.stdout


def _room(module: str) -> str:
    """The package a module lives in (a study counts as its own package)."""
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[1] == "studies" and len(parts) > 2 else ".".join(parts[:2])


def test_no_private_name_crosses_a_package() -> None:
    """A leading underscore means "this package only": another package that needs the name gets a public one."""
    found = set()
    for path in sorted((SRC / "wattsched").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("wattsched."):
                for alias in node.names:
                    if alias.name.startswith("_") and _room(node.module) != _room(module):
                        found.add((module, f"{node.module}.{alias.name}"))
    assert found == set(), "private names imported from another package"
