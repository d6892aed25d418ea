"""Benchmark: wall time of whole CLI commands as a user starts them (interpreter start, imports, work, outputs):
`wattsched --help` and `wattsched rmap grid` (paper 004's default grid, 20 runs, figures). Medians of several
runs; one core for the grid. The figures are in docs/performance.md ("The layout of issue 15").

    .venv/bin/python bench/cli_time.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WATTSCHED = Path(sys.executable).with_name("wattsched")


def wall(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    help_s = [wall([str(WATTSCHED), "--help"]) for _ in range(repeat)]
    grid_s = []
    for _ in range(max(1, repeat // 2)):
        out = Path(tempfile.mkdtemp(prefix="wattsched-rmap-"))
        try:
            grid_s.append(wall(["taskset", "-c", "0", str(WATTSCHED), "rmap", "grid", "--output", str(out / "g")]))
        finally:
            shutil.rmtree(out, ignore_errors=True)
    result = {
        "help_s_median": statistics.median(help_s),
        "help_s": help_s,
        "rmap_grid_s_median": statistics.median(grid_s),
        "rmap_grid_s": grid_s,
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
