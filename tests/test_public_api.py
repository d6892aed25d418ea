"""The curated top-level namespace: every exported name resolves, lazily, and the README's examples run."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import wattsched
import wattsched.api
from wattsched.workload.generate import generate_lublin
from wattsched.workload.save import save_workload

README = Path(__file__).parent.parent / "README.md"


def test_every_exported_name_resolves_to_its_defining_module() -> None:
    assert "__version__" in wattsched.__all__
    for name in wattsched.__all__:
        value = getattr(wattsched, name)
        if name != "__version__":
            assert value is getattr(importlib.import_module(wattsched._EXPORTS[name]), name), name
    assert set(wattsched.__all__) == {"__version__", *wattsched._EXPORTS}
    assert set(wattsched.__all__) <= set(dir(wattsched))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = wattsched.nope


def test_api_exports_what_it_defines() -> None:
    defined = {
        name
        for name, value in vars(wattsched.api).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == "wattsched.api"
    }
    assert defined <= set(wattsched.api.__all__)
    assert all(hasattr(wattsched.api, name) for name in wattsched.api.__all__)


def test_import_wattsched_stays_cheap() -> None:
    """The names resolve on first use: importing the package, or its API, loads no engine, predictor or plotting
    module, and not numba either (its cache folder is set through the environment; see
    wattsched.core.numba_cache); the CLI imports ``wattsched.api`` for every command, ``--help`` included."""
    code = (
        "import sys, wattsched, wattsched.api\n"
        "heavy = ('wattsched.engine', 'wattsched.runs', 'wattsched.api.', 'wattsched.predict', 'wattsched.power', "
        "'wattsched.campaign', 'sklearn', 'matplotlib', 'pydantic', 'numba', 'polars')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(wattsched.__file__).parent.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's Python blocks, in order, with a small generated trace (128 processors) in place of the KTH
    trace they read as ``../shared/data/swf/KTH-SP2/log.swf`` (tests/test_docs_commands.py runs them on the real
    one)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks and "from wattsched import" in blocks[0]
    swf = tmp_path / "shared" / "data" / "swf" / "KTH-SP2" / "log.swf"
    swf.parent.mkdir(parents=True)
    save_workload(generate_lublin(200, 128, seed=0), swf)
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert (tmp_path / "repo" / "out" / "jobs.parquet").exists()
    assert namespace["result"].schedule.height == 200  # type: ignore[attr-defined]


def test_run_policy_takes_what_the_cli_takes(tmp_path: Path) -> None:
    """A built-in name in any case and a FILE.py:Class reference, as ``wattsched simulate --policy`` (issue 29)."""
    trace = tmp_path / "lublin.swf"
    save_workload(generate_lublin(150, 64, seed=1), trace)
    lower = wattsched.run_policy(trace, "easy", machine_size=64)
    upper = wattsched.run_policy(trace, "EASY", machine_size=64)
    assert upper.jobs["start_time"].to_list() == lower.jobs["start_time"].to_list()
    example = Path(__file__).resolve().parents[1] / "examples" / "strict_fcfs.py"
    ours = wattsched.run_policy(trace, f"{example}:StrictFcfs", machine_size=64)
    fcfs = wattsched.run_policy(trace, "fcfs", machine_size=64)
    assert ours.jobs["start_time"].to_list() == fcfs.jobs["start_time"].to_list()
    assert wattsched.PowerCheck.named("max").rule.max == 1.0
