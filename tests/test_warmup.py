"""`python -m wattsched.warmup` (run by `make setup`) leaves nothing to compile for the documented commands.

Issue 32, item 2: the first power run after set-up took 39.2 s (4.5 s the second time) because only the queue
policies were warmed. Here the warm-up fills an empty numba cache, then tiny versions of the documented commands
(README.md's use section, docs/eamc.md, docs/dataset.md) run on it: numba writes a cache file for every kernel
signature it compiles, so any file added or rewritten is a compilation the user would have waited for.

The empty cache is filled by the copy `make setup`'s warm-up kept of what it wrote into this checkout's empty
cache folder (``wattsched.warmup.WARMED_COPY``: a fresh clone, as in CI), else by a warm-up run here (65-190 s);
the failure message says which.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import wattsched
from conftest import require_data
from wattsched.warmup import CHECKOUT, WARMED_COPY, cache_files

WATTSCHED = [sys.executable, "-m", "wattsched"]
# README.md's power runs: EASY+PC with the gaussian99 check, cap 0.5 for 3 h, on real and on predicted power
POWER_REAL = [
    "--power-check",
    "gaussian99",
    "--power-source",
    "real",
    "--cap",
    "0.5",
    "--window",
    "10800",
    "--output",
    "out-pc/",
]
POWER_PRED = ["--power-check", "gaussian99", "--power-source", "predicted", "--cap", "0.5", "--window", "10800"]
POWER_PRED += ["--output", "out-pred/", "--format", "evalys"]


def _set_up_cache(cache: Path, env: dict[str, str], cwd: Path) -> str:
    """Fill the empty folder ``cache`` as the warm-up does: with the copy `make setup`'s warm-up kept of what it
    wrote from empty into this checkout's cache folder (``WARMED_COPY``: a fresh clone, as in CI), else by running
    the warm-up. Says which."""
    kept = Path(os.environ.get("NUMBA_CACHE_DIR", "")) / WARMED_COPY  # wattsched's import set this checkout's
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        mine = json.loads((kept / CHECKOUT).read_text())["package"] == str(Path(wattsched.__file__).resolve().parent)
        if mine:  # numba's files are per source path: another checkout's would all compile again
            shutil.copytree(kept, cache, ignore=shutil.ignore_patterns(CHECKOUT), dirs_exist_ok=True)
            return f"the copy `make setup`'s warm-up kept in {kept}"
    _run([sys.executable, "-m", "wattsched.warmup"], env, cwd)
    return "a warm-up run here"


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-6000:])


@pytest.mark.slow
def test_documented_commands_compile_nothing_after_the_warmup(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    # the EAMC model's data, found from this folder as from the repository root where `make setup` runs
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "WATTSCHED_DATA": str(require_data(""))}
    env.pop("WATTSCHED_NUMBA_CACHE_KEYED_FOR", None)  # this empty folder, not one keyed by the test process
    how = _set_up_cache(cache, env, tmp_path)
    warmed = cache_files(cache)
    assert any(name.endswith(".nbi") for name in warmed), f"the warm-up cached no kernel ({how})"
    commands = [
        ["generate", "lublin", "--jobs", "300", "--machine-size", "64", "--seed", "7", "--output", "w.parquet"],
        ["data", "convert", "--workload", "w.parquet", "--output", "w.swf"],
        ["simulate", "--workload", "w.swf", "--policy", "easy", "--output", "out/"],
        ["simulate", "--workload", "w.parquet", "--policy", "conservative", "--output", "out-c/", "--format", "csv"],
        ["generate", "m100", "--jobs", "400", "--seed", "1", "--output", "m100.parquet"],
        ["simulate", "--workload", "m100.parquet", "--platform", "marconi100", "--policy", "easy-pc", *POWER_REAL],
        ["predict", "power", "--workload", "m100.parquet", "--method", "history", "--output", "m100-pred.parquet"],
        ["simulate", "--workload", "m100-pred.parquet", "--platform", "marconi100", "--policy", "easy-pc", *POWER_PRED],
        ["eamc", "run", "--policy", "eamc-priorityinc-v", "--mix", "W33", "--jobs", "200", "--output", "out-eamc/"],
        ["generate", "telemetry", "--output", ".", "--jobs", "60", "--nodes", "12", "--days", "0.2"],
        ["dataset", "build", "--job-table", "jobs.parquet", "--telemetry", "telemetry/", "--output", "ds.parquet"],
    ]
    for argv in commands:
        _run([*WATTSCHED, "--quiet", *argv], env, tmp_path)
    after = cache_files(cache)
    compiled = sorted(name for name in after if after[name] != warmed.get(name))
    assert not compiled, f"compiled after the warm-up ({how}): {compiled}"
