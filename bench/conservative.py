"""Benchmark (issue 18, item 1): conservative backfilling on prefixes of RICC and on the full trace.

Each size runs in a fresh single-threaded child (numba cache warm: one small warm-up run first); the figure is
the child's CPU seconds (user + sys) for ``simulate`` alone, with the policy's operation counters (fit searches,
searches that found nothing, breakpoints scanned, elements moved by edits). The growth exponent is the slope of
log CPU vs log jobs over the prefixes from 100k jobs to the full trace.

    PYTHONPATH=src .venv/bin/python bench/conservative.py [--quick] [--sizes 100000,200000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from wattsched.core.data_folder import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
RICC = (shared_data_dir(REPO) or REPO.parent / "shared" / "data") / "swf" / "RICC-2010-2.swf.gz"
FULL = 447_794
SIZES = [100_000, 200_000, 300_000, FULL]
QUICK_SIZES = [10_000, 20_000, 40_000]
TARGET_S = 20.0
ONE_CORE_ENV = {"POLARS_MAX_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def worker(jobs: int, policy: str) -> None:
    """Inside the child: read RICC, keep the first ``jobs`` jobs, simulate, print one JSON line."""
    import wattsched.engine.simulate as sim
    from wattsched.policies.conservative import COUNTER_NAMES, POL_SIZE
    from wattsched.workload.load import load_workload

    states = []

    class _Recorded(sim.KernelState):  # keeps the kernel state so the counters can be read after the run
        def __init__(self, *args: object) -> None:
            super().__init__(*args)
            states.append(self)

    sim.KernelState = _Recorded
    read = load_workload(RICC)
    table = read.jobs.head(jobs)
    t0 = time.process_time()
    result = sim.simulate(table, policy, read.provenance.machine_size)
    cpu = time.process_time() - t0
    counters = dict(zip(COUNTER_NAMES, (int(v) for v in states[-1].pol[2:POL_SIZE]), strict=True))
    out = {"jobs": table.height, "cpu_s": cpu, "jobs_per_cpu_s": table.height / cpu, "passes": result.passes}
    out |= {"max_queue": result.max_queue_length, "mean_wait_s": float(result.schedule["wait"].mean()), **counters}
    print(json.dumps(out))


def _child(jobs: int, policy: str) -> dict:
    env = {**os.environ, **ONE_CORE_ENV, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, __file__, "--worker", str(jobs), "--policy", policy]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def exponent(rows: list[dict]) -> float:
    """Least-squares slope of log CPU s against log jobs."""
    xs = [math.log(r["jobs"]) for r in rows]
    ys = [math.log(r["cpu_s"]) for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small prefixes only (< 1 min)")
    ap.add_argument("--sizes", help="comma-separated prefix sizes (default: 100k, 200k, 300k, full)")
    ap.add_argument("--policy", default="conservative")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        worker(args.worker, args.policy)
        return
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else QUICK_SIZES if args.quick else SIZES
    _child(2_000, args.policy)  # warm the numba cache
    rows = []
    for n in sizes:
        rows.append(_child(n, args.policy))
        print(json.dumps(rows[-1]), flush=True)
    slope = exponent(rows) if len(rows) > 1 else float("nan")
    results = REPO / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "conservative.json").write_text(json.dumps({"policy": args.policy, "rows": rows, "exponent": slope}))
    if args.quick or args.sizes:
        print(f"exponent {slope:.2f}")
        return
    from targets import Target, record

    full = rows[-1]
    first = rows[0]
    counters = (
        f"exact compression: {full['compressions']:,} sweeps visit {full['swept'] / 1e6:.0f} M reservations, "
        f"{full['fit_searches'] / 1e6:.1f} M searches ({full['empty_searches'] / 1e6:.1f} M empty) visit "
        f"{full['breakpoints_scanned'] / 1e9:.1f} B breakpoints, {full['moves'] / 1e6:.1f} M moves shift or update "
        f"{full['elements_moved'] / 1e9:.1f} B elements"
    )
    growth = (
        f"stated (no target in the issue); log-log slope over {', '.join(f'{r:,}' for r in (x['jobs'] for x in rows))} "
        f"jobs; the queue grows from {first['max_queue']:,} to {full['max_queue']:,} jobs at most and a sweep visits "
        f"{first['swept'] / first['compressions']:,.0f} → {full['swept'] / full['compressions']:,.0f} reservations"
    )
    record(
        "conservative",
        [
            Target(
                f"{args.policy} on full RICC ({full['jobs']:,} jobs)", full["cpu_s"], TARGET_S, "CPU s", True, counters
            ),
            Target("growth exponent 100k→447k jobs", slope, math.nan, "", True, growth),
        ],
    )


if __name__ == "__main__":
    main()
