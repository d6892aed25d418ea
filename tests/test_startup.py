"""Start-up: what `wattsched --help` imports, where numba's cache goes, how the console script exits, and the
batch path of `wattsched simulate` (several workloads in one process). The figures are in bench/startup.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

import wattsched
from wattsched import save_workload
from wattsched.cli import app
from wattsched.cli.simulate import batch_folders
from wattsched.workload.generate.lublin import generate_lublin

SRC = Path(wattsched.__file__).resolve().parent.parent
HEAVY = ("numba", "polars", "pyarrow", "pydantic", "scipy", "numpy", "sklearn", "matplotlib")
runner = CliRunner()


def python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    full = {k: v for k, v in full.items() if v is not None}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "WATTSCHED_NUMBA_CACHE_KEYED_FOR")}
    return {**env, "PYTHONPATH": str(SRC)}


def test_the_command_line_loads_no_heavy_library_to_print_its_help() -> None:
    code = (
        "import sys, wattsched.cli.root_app\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), check=True)
    assert out.stdout.strip() == "[]"


def test_the_numba_cache_folder_is_set_without_importing_numba_and_numba_uses_it() -> None:
    code = (
        "import os, sys, wattsched\n"
        "assert 'numba' not in sys.modules\n"
        "import numba\n"
        "print(json.dumps([os.environ['NUMBA_CACHE_DIR'], numba.config.CACHE_DIR]))\n"
    ).replace("import os,", "import json, os,")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), check=True)
    chosen, used = json.loads(out.stdout)
    assert chosen == used
    assert Path(chosen).parent.name == "numba" and Path(chosen).parent.parent.name == "wattsched"


def test_a_users_cache_folder_wins_and_one_keyed_for_another_checkout_does_not(tmp_path: Path) -> None:
    code = "import os, wattsched; print(os.environ['NUMBA_CACHE_DIR'])"
    mine = str(tmp_path / "mine")
    env = {**clean_env(), "NUMBA_CACHE_DIR": mine}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == mine
    # a folder a parent process keyed on another checkout's sources is recomputed for these sources
    env = {**env, "WATTSCHED_NUMBA_CACHE_KEYED_FOR": str(tmp_path / "other-checkout")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() != mine and Path(out.stdout.strip()).parent.name == "numba"


def test_numba_imported_before_wattsched_gets_the_folder_too() -> None:
    code = "import numba, os, wattsched; print(numba.config.CACHE_DIR == os.environ['NUMBA_CACHE_DIR'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), check=True)
    assert out.stdout.strip() == "True"


def test_a_simulation_does_not_import_scipy_linalg_and_numba_still_finds_blas() -> None:
    """numba's BLAS check runs without importing scipy.linalg (0.14 s of a 100-job ``simulate``); its answer is
    unchanged, and a compiled function that needs BLAS still gets it (core/numba_cache.py)."""
    code = (
        "import sys, numpy as np, wattsched\n"
        "from wattsched.workload.generate.lublin import generate_lublin\n"
        "wattsched.simulate(generate_lublin(50, 256, seed=1), 'easy')\n"
        "import numba.np.arraymath as arraymath, numba.np.linalg as linalg\n"
        "print('scipy.linalg' in sys.modules, arraymath._HAVE_BLAS, arraymath.ensure_blas is linalg.ensure_blas)\n"
        "from numba import njit\n"
        "print(njit(lambda a, b: np.dot(a, b))(np.ones(3), np.arange(3.0)), 'scipy.linalg' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), check=True)
    assert out.stdout.split() == ["False", "True", "True", "3.0", "True"], out.stdout + out.stderr


def test_the_console_script_runs_atexit_and_waits_for_live_threads(tmp_path: Path) -> None:
    """The script skips the interpreter's teardown, but not the atexit callbacks, and exits normally while
    another thread still works (os._exit would kill it)."""
    marker, threaded = tmp_path / "atexit", tmp_path / "thread"
    code = (
        "import atexit, pathlib, threading, time\n"
        "from wattsched.cli.console_script import leave\n"
        f"atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text('ran'))\n"
        f"t = threading.Thread(target=lambda: (time.sleep(0.3), pathlib.Path({str(threaded)!r}).write_text('done')))\n"
        "t.start()\n"
        "print('out', flush=False)\n"
        "leave(3)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env())
    assert out.returncode == 3 and out.stdout == "out\n"
    assert marker.read_text() == "ran" and threaded.read_text() == "done"
    code = code.replace("t.start()\n", "").replace("leave(3)", "leave('bad input')")
    marker.unlink()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env())
    assert out.returncode == 1 and out.stdout == "out\n" and "bad input" in out.stderr
    assert marker.read_text() == "ran"


def test_python_m_wattsched_exits_with_the_commands_code(tmp_path: Path) -> None:
    env = clean_env()
    ok = subprocess.run([sys.executable, "-m", "wattsched", "--version"], capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and ok.stdout.startswith("wattsched ")
    bad = subprocess.run(
        [sys.executable, "-m", "wattsched", "simulate", "--workload", str(tmp_path / "nope.swf"), "--policy",
         "easy", "--output", str(tmp_path / "o")],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert bad.returncode != 0 and "nope.swf" in bad.stderr and "Traceback" not in bad.stderr


def test_batch_folders_are_unique_in_the_order_given() -> None:
    paths = [Path("a/log.swf"), Path("b/log.swf"), Path("c/run.swf.gz"), Path("log.csv")]
    assert batch_folders(paths) == ["log", "log-2", "run", "log-3"]


def test_simulate_over_several_workloads_in_one_process(tmp_path: Path) -> None:
    paths = []
    for seed in range(3):
        path = tmp_path / f"w{seed}" / "log.swf"
        path.parent.mkdir()
        save_workload(generate_lublin(60, 64, seed=seed), path)
        paths.append(path)
    bad = tmp_path / "missing.swf"
    args = ["--json", "simulate", "--policy", "easy", "--output", str(tmp_path / "out")]
    for path in [*paths, bad]:
        args += ["--workload", str(path)]
    result = runner.invoke(app, args)
    assert result.exit_code != 0  # one workload failed: said, after the others were written
    summary = json.loads(result.stdout)
    assert [r["output"] for r in summary["runs"]] == [str(tmp_path / "out" / n) for n in ("log", "log-2", "log-3")]
    assert summary["failed"][0]["workload"] == str(bad)
    # each run is exactly the single-workload command's output
    for path, name in zip(paths, ("log", "log-2", "log-3"), strict=True):
        single = runner.invoke(
            app, ["simulate", "--workload", str(path), "--policy", "easy", "--output", str(tmp_path / "one" / name)]
        )
        assert single.exit_code == 0, single.output
        batch_jobs = pl.read_parquet(tmp_path / "out" / name / "jobs.parquet")
        assert batch_jobs.equals(pl.read_parquet(tmp_path / "one" / name / "jobs.parquet"))
    ok = runner.invoke(app, [*args[:-2]])
    assert ok.exit_code == 0, ok.output


def test_a_config_file_may_give_one_workload_or_several(tmp_path: Path) -> None:
    paths = []
    for seed in range(2):
        path = tmp_path / f"w{seed}.swf"
        save_workload(generate_lublin(40, 32, seed=seed), path)
        paths.append(path)
    config = tmp_path / "sim.toml"
    config.write_text(f'workload = ["w0.swf", "w1.swf"]\npolicy = "fcfs"\noutput = "{tmp_path / "many"}"\n')
    result = runner.invoke(app, ["simulate", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "many" / "w0" / "jobs.parquet").exists() and (tmp_path / "many" / "w1" / "jobs.parquet").exists()
    config.write_text(f'workload = "w0.swf"\npolicy = "fcfs"\noutput = "{tmp_path / "one"}"\n')
    result = runner.invoke(app, ["simulate", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "one" / "jobs.parquet").exists()
