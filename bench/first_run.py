"""Benchmark: the first run after `make setup` (issue 32, item 2).

In an empty numba cache: the set-up's warm-up (`python -m wattsched.warmup`), then README.md's power example
(`simulate` EASY+PC with the gaussian99 check, cap 0.5 for 3 h, on a 20,000-job Marconi100-like workload) twice:
the first run is what a user meets right after installing, the second what every later run costs. Before issue
32 the warm-up compiled the queue policies only: the first power run took 39.2 s, the second 4.5 s.

    .venv/bin/python bench/first_run.py        # about 2 minutes on 2 idle cores
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import targets

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
POWER = ["--platform", "marconi100", "--policy", "easy-pc", "--power-check", "gaussian99", "--power-source", "real"]
POWER += ["--cap", "0.5", "--window", "10800"]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="wattsched-first-run-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(work / "numba")}
        env.pop("WATTSCHED_NUMBA_CACHE_KEYED_FOR", None)
        warm = timed([PYTHON, "-m", "wattsched.warmup"], env, HERE.parent)
        wattsched = [PYTHON, "-m", "wattsched", "--quiet"]
        generate = [*wattsched, "generate", "m100", "--jobs", "20000", "--seed", "1", "--output", "m100.parquet"]
        timed(generate, env, work)
        run = [*wattsched, "simulate", "--workload", "m100.parquet", *POWER]
        first = timed([*run, "--output", "out-1/"], env, work)
        second = timed([*run, "--output", "out-2/"], env, work)
    figures = {"warmup_s": warm, "first_power_run_s": first, "second_power_run_s": second}
    print(json.dumps(figures, indent=1))
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "first_run.json").write_text(json.dumps(figures, indent=1) + "\n")
    targets.record(
        "first_run",
        [
            targets.Target(
                "first power run of README.md's example after the warm-up",
                first,
                5.0,
                "s",
                note=f"before: 39.2 s (the power kernels compiled on this run); the second run: {second:.1f} s",
            ),
            targets.Target(
                "the warm-up in an empty cache (part of make setup)",
                warm,
                37.0,
                "s",
                note=(
                    "before: the queue policies only, one process: 37 s in the issue, 59.9 s on 2026-11-29 (4cbb4fd, "
                    "idle, the hour this figure was taken); now four steps, two processes at a time"
                ),
            ),
        ],
    )


if __name__ == "__main__":
    main()
