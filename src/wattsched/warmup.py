"""Compile and cache every numba kernel once, so that a user's first real run does not pay for compilation.

`make` runs it right after installing, once per source version (the cache is keyed on the sources, see
``wattsched.core.numba_cache``). ``python -m wattsched.warmup``.

Each *step* runs a tiny version of documented commands through the code paths those commands take, so every
kernel is compiled with the argument types the commands pass (numba compiles one machine-code version per type
signature; a kernel warmed with other types would compile again on the user's run):

- ``queue``: every queue policy (``simulate`` without power, ``dispatch``, ``rmap``, the campaigns and
  reproductions built on them);
- ``power-metrics``: the power timeline and the cap metrics of a Marconi100-like workload under a capped window,
  on a schedule made up without simulating (each job at its submission), so this step needs no simulation kernel
  and runs beside ``queue``;
- ``studies``: an SWF file read, paper 002's DVFS priority backfilling (``eamc``) and the PM100 extraction of
  ``dataset build``;
- ``power``, once ``queue`` is done: EASY+PC on real and on online-predicted power (the history predictor online
  and as ``predict power`` sweeps it), written in the evalys layout (the node allocation).

Issue 32 measured the first power run after set-up at 39.2 s when only the queue policies were warmed (4.5 s the
second time). Compilation is single-threaded, so the steps run in separate processes, two at a time. A step that
simulates waits for ``queue``: it would otherwise compile the simulation kernel (about 40 s) a second time, in
parallel, before either process had cached it. tests/test_warmup.py checks that a documented command run after
the warm-up compiles nothing.

A warm-up that starts from an empty cache folder (``make setup`` on a new checkout or source version) keeps a copy
of the files it wrote in the subfolder :data:`WARMED_COPY` (about 11 MB; numba never writes there, while the
kernels' own index files gain entries whenever a run compiles another signature): tests/test_warmup.py checks the
documented commands on a copy of exactly those files instead of compiling them all again (93-188 s of
``make test``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _queue(tmp: Path) -> None:
    from wattsched.engine.simulate import simulate
    from wattsched.policies.registry import POLICIES
    from wattsched.workload.generate import generate_m100like

    jobs = generate_m100like(20, seed=0).jobs  # the kernel's types do not depend on the reader (simulate casts)
    for name in POLICIES:
        simulate(jobs, name, 980)


def _swf(tmp: Path) -> None:
    from wattsched.workload.swf import read_swf

    path = tmp / "warmup.swf"
    path.write_text(
        "; MaxProcs: 4\n"
        "1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 1 -1 5 4 -1 -1 4 10 -1 1 1 1 -1 1 -1 -1 -1\n"
        "3 2 -1 0 1 -1 -1 1 0 -1 1 2 1 -1 1 -1 -1 -1\n"
    )
    read_swf(path)


def _power(tmp: Path) -> None:
    from wattsched.power.platform import load_platform
    from wattsched.predict.power_history import HistoryConfig
    from wattsched.predict.run import run_power_prediction
    from wattsched.runs import power_setup, run_policy, write_run
    from wattsched.workload.generate import generate_m100like

    workload = generate_m100like(200, seed=1)
    capped = power_setup("marconi100", "gaussian99", source="real", cap=0.5, window=10800.0)
    run = run_policy(workload, "easy-pc", power=capped)
    write_run(run, tmp / "evalys", "evalys")
    run_policy(workload, "easy-pc", power=capped, online_power="history")
    # predict power: the offline sweep of the same predictor, configured as the command configures it
    fallback = load_platform("marconi100").max_node_watts
    run_power_prediction(workload, "history", history=HistoryConfig(window=None, fallback_watts=fallback))


def _power_metrics(tmp: Path) -> None:
    import polars as pl

    from wattsched.power.run import power_outputs, with_estimates
    from wattsched.runs import power_setup
    from wattsched.workload.generate import generate_m100like

    capped = power_setup("marconi100", "gaussian99", source="real", cap=0.5, window=10800.0)
    assert capped is not None  # None only without a platform
    jobs = with_estimates(generate_m100like(200, seed=1).jobs, capped)
    start, runtime = pl.col("submit_time"), pl.col("runtime")
    schedule = jobs.select(  # the columns and types of a simulated schedule (engine.simulate)
        "job_id",
        "user_id",
        "submit_time",
        start.alias("start_time"),
        (start + runtime).alias("end_time"),
        pl.lit(0.0).alias("wait"),
        "size",
        "walltime",
        "runtime",
        runtime.alias("trace_runtime"),
        pl.col("walltime").alias("estimate"),
        pl.lit(False).alias("killed"),
        start.alias("first_reservation"),
    )
    power_outputs(jobs, schedule, capped, capped.platform.nodes, baseline=False)


def _studies(tmp: Path) -> None:
    from wattsched.dataset.build import build_dataset
    from wattsched.dataset.synthetic import place_jobs, write_synthetic_exadata
    from wattsched.studies.eamc.dvfs import DVFSConfigError, load_dvfs_platform
    from wattsched.studies.eamc.energy_model import eamc_appdb
    from wattsched.studies.eamc.experiment import run_eamc
    from wattsched.studies.eamc.policies import EAMC_POLICIES, EAMCOptions
    from wattsched.studies.eamc.workloads import generate_eamc_workload

    _swf(tmp)  # the SWF tokenizer, here rather than in ``queue``, the longest step
    try:
        machine = load_dvfs_platform("eamc-p1p2")
    except DVFSConfigError:  # paper 002's model is learned data, found as eamc finds it: nothing to warm without it
        print(
            "wattsched warmup: no EAMC data found ($WATTSCHED_DATA, ../shared/data): eamc not warmed", file=sys.stderr
        )
    else:
        table = generate_eamc_workload("W13", 60, seed=0)
        for policy in EAMC_POLICIES:
            run_eamc(table, machine, eamc_appdb(None, machine), policy, EAMCOptions())
    placed = place_jobs(20, n_nodes=8, hours=2.0, seed=0)
    write_synthetic_exadata(placed, tmp / "telemetry")
    build_dataset(placed.jobs, tmp / "telemetry", workers=1)


#: Each step's function and the steps it waits for, in the order they are started.
STEPS: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "queue": (_queue, ()),
    "power-metrics": (_power_metrics, ()),
    "studies": (_studies, ()),
    "power": (_power, ("queue",)),
}


def run_step(name: str) -> None:
    """Run one step in this process (``python -m wattsched.warmup --step NAME``)."""
    with tempfile.TemporaryDirectory(prefix="wattsched-warmup-") as tmp:
        STEPS[name][0](Path(tmp))


#: In the numba cache folder: a copy of the files a warm-up wrote there from empty, and in it :data:`CHECKOUT`,
#: the package folder (the checkout) it ran from.
WARMED_COPY = "wattsched-warmed"
CHECKOUT = "checkout.json"


def cache_files(cache: Path) -> dict[str, int]:
    """Every file of a numba cache folder (relative path → modification time in ns), :data:`WARMED_COPY` left
    out."""
    found = (p for p in cache.rglob("*") if p.is_file() and p.relative_to(cache).parts[0] != WARMED_COPY)
    return {p.relative_to(cache).as_posix(): p.stat().st_mtime_ns for p in found}


def _keep_copy(cache: Path) -> None:
    """Copy what the warm-up wrote into ``cache/WARMED_COPY`` (made aside, then renamed into place)."""
    part = cache / f".{WARMED_COPY}.part"
    shutil.rmtree(part, ignore_errors=True)
    for name in cache_files(cache):
        (part / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cache / name, part / name)
    # the folder is keyed on the sources' content, so another checkout of them may share it; numba's files are
    # per source path: the copy says which checkout's they are
    (part / CHECKOUT).write_text(json.dumps({"package": str(Path(__file__).resolve().parent)}) + "\n")
    shutil.rmtree(cache / WARMED_COPY, ignore_errors=True)
    part.rename(cache / WARMED_COPY)


def warm_up(parallel: int = 2) -> float:
    """Run every step, ``parallel`` processes at a time, each once the steps it waits for are done; returns the
    seconds spent. A failed step is a RuntimeError naming it (its output is shown): set-up must not pass with a
    kernel left to compile. From an empty cache folder, the files written are copied into :data:`WARMED_COPY`."""
    t0 = time.perf_counter()
    folder = os.environ.get("NUMBA_CACHE_DIR")
    cache = Path(folder) if folder else None
    from_empty = cache is not None and not (cache.exists() and cache_files(cache))
    pending = list(STEPS)
    done: set[str] = set()
    running: list[tuple[str, subprocess.Popen[bytes]]] = []
    failed: list[str] = []
    try:
        while pending or running:
            ready = [name for name in pending if set(STEPS[name][1]) <= done]
            while ready and len(running) < max(parallel, 1):
                name = ready.pop(0)
                pending.remove(name)
                argv = [sys.executable, "-m", "wattsched.warmup", "--step", name]
                running.append((name, subprocess.Popen(argv, env=os.environ.copy())))
            if not running:  # a step waits for one that failed
                failed.extend(pending)
                break
            time.sleep(0.05)  # the next finished step frees its slot
            for name, proc in [(n, p) for n, p in running if p.poll() is not None]:
                running.remove((name, proc))
                if proc.returncode == 0:
                    done.add(name)
                else:
                    failed.append(name)
    finally:
        for _, proc in running:  # Ctrl-C: leave no compiling child behind
            proc.terminate()
            proc.wait()
    if failed:
        raise RuntimeError(f"wattsched warmup: step(s) {', '.join(failed)} failed (output above)")
    if cache is not None and from_empty:
        _keep_copy(cache)
    return time.perf_counter() - t0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--step" and sys.argv[2] in STEPS:
        run_step(sys.argv[2])
    else:
        print(f"wattsched: compiled and cached the numba kernels in {warm_up():.1f} s")
