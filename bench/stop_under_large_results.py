"""Benchmark: SIGTERM while a process pool's 400 MB results are in flight (issue 31, item 2).

Each run starts a child Python that fans ``bytes(400_000_000)`` out to 2 local workers through
``wattsched.core.executors.map_tasks`` the way a command runs (SIGTERM as Ctrl-C, then the console script's exit),
waits for its first result (the next ones are then being sent), sends SIGTERM and times the child's exit. Runs
alternate ordered and unordered fan-outs. Before issue 31, 4 of 4 such processes printed "interrupted" and never
exited: the pool's manager thread waited for the rest of a result whose worker had been ended, and CPython's exit
joined it. The target: every run exits within 15 s. The figures are in docs/performance.md.

    .venv/bin/python bench/stop_under_large_results.py [--runs 100] [--size 400000000] [--limit 15]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import sys
from wattsched.cli.console_script import leave
from wattsched.core.executors import map_tasks
from wattsched.core.stopping import sigterm_as_interrupt
code = 0
with sigterm_as_interrupt():
    try:
        for result in map_tasks(bytes, [{size}] * 12, workers=2, ordered={ordered}):
            print(len(result), flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr, flush=True)
        code = 130
leave(code)
"""


def one_stop(size: int, ordered: bool, limit: float) -> tuple[float, int, str]:
    """Seconds from SIGTERM to the child's exit (infinite if it had not exited after ``4 × limit`` s: then it is
    killed), its exit code and its last line."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(size=size, ordered=ordered)],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if not first.strip():
        _, err = proc.communicate()
        raise RuntimeError(f"the child ended before its first result:\n{err}")
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=4 * limit)
        seconds = time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        seconds = float("inf")
    lines = err.strip().splitlines()
    return seconds, proc.returncode, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--size", type=int, default=400_000_000, help="bytes per result")
    parser.add_argument("--limit", type=float, default=15.0, help="seconds a stop may take")
    args = parser.parse_args()
    t0 = time.perf_counter()
    times, codes, lines = [], set(), set()
    for k in range(args.runs):
        seconds, code, line = one_stop(args.size, k % 2 == 0, args.limit)
        times.append(seconds)
        codes.add(code)
        lines.add(line)
        print(f"run {k + 1}: {seconds:.3f} s, exit code {code}, {line!r}", file=sys.stderr, flush=True)
    print(
        json.dumps(
            {
                "runs": args.runs,
                "result_bytes": args.size,
                "exited_within_limit": sum(t <= args.limit for t in times),
                "limit_s": args.limit,
                "max_exit_s": round(max(times), 3),
                "median_exit_s": round(sorted(times)[len(times) // 2], 3),
                "exit_codes": sorted(codes),
                "last_lines": sorted(lines),
                "bench_s": round(time.perf_counter() - t0, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
