"""Benchmark: every policy on the full RICC trace (447,794 jobs, 8,192 processors), one core.

Each measurement runs in a fresh process pinned to CPU 0 with single-threaded Polars/numba, so the peak RSS is
that run's own. "cold" uses an empty numba cache (first run after installation: includes JIT compilation);
"warm" reuses the cache. The end-to-end figure is the `wattsched simulate` command itself: interpreter start,
imports, reading, simulation, metrics and writing the outputs.

    .venv/bin/python bench/ricc.py [--policies easy,fcfs,...] [--skip-cli]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wattsched.core.data_folder import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
RICC = (shared_data_dir(REPO) or REPO.parent / "shared" / "data") / "swf" / "RICC-2010-2.swf.gz"
POLICIES = ["fcfs", "sjf", "ljf", "easy", "easy-sjf", "easy-saf", "conservative"]
ONE_CORE_ENV = {"POLARS_MAX_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def worker(policy: str) -> None:
    """Runs inside the pinned child: read + simulate, print one JSON line."""
    t0 = time.perf_counter()
    from wattsched.engine.simulate import simulate
    from wattsched.workload.load import load_workload

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    read = load_workload(RICC)
    t_read = time.perf_counter() - t1
    t2 = time.perf_counter()
    result = simulate(read.jobs, policy, read.provenance.machine_size)
    t_sim = time.perf_counter() - t2
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "policy": policy,
                "jobs": read.jobs.height,
                "import_s": t_import,
                "read_s": t_read,
                "simulate_s": t_sim,
                "read_plus_simulate_s": t_read + t_sim,
                "jobs_per_s": read.jobs.height / t_sim,
                "peak_rss_mb": peak_mb,
                "mean_wait_s": float(result.schedule["wait"].mean()),
                "passes": result.passes,
                "max_queue": result.max_queue_length,
            }
        )
    )


def _run(args: list[str], env: dict[str, str]) -> tuple[str, float]:
    t = time.perf_counter()
    out = subprocess.run(["taskset", "-c", "0", *args], env=env, capture_output=True, text=True, check=True)
    return out.stdout, time.perf_counter() - t


def measure(policy: str, cache_dir: str) -> dict:
    env = {**os.environ, **ONE_CORE_ENV, "NUMBA_CACHE_DIR": cache_dir}
    stdout, wall = _run([sys.executable, __file__, "--worker", policy], env)
    row = json.loads(stdout.strip().splitlines()[-1])
    row["process_wall_s"] = wall
    return row


def measure_cli(policy: str, cache_dir: str) -> float:
    env = {**os.environ, **ONE_CORE_ENV, "NUMBA_CACHE_DIR": cache_dir}
    with tempfile.TemporaryDirectory() as out:
        _, wall = _run(
            [
                str(REPO / ".venv" / "bin" / "wattsched"),
                "simulate",
                "--workload",
                str(RICC),
                "--policy",
                policy,
                "--output",
                out,
            ],
            env,
        )
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--output", default=str(REPO / "bench" / "results" / "ricc.json"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if not RICC.exists():
        sys.exit(f"missing {RICC} (benchmarks read ../shared/data in place)")
    results: dict = {"trace": str(RICC), "cpu": "one core (taskset -c 0)", "runs": []}
    with tempfile.TemporaryDirectory() as cache:
        cold = measure("easy", cache)
        cold["cache"] = "cold"
        results["runs"].append(cold)
        print(
            f"easy (cold JIT cache): read+simulate {cold['read_plus_simulate_s']:.2f} s, "
            f"process {cold['process_wall_s']:.2f} s",
            flush=True,
        )
        if not args.skip_cli:
            results["cli_easy_warm_s"] = min(measure_cli("easy", cache) for _ in range(3))
            print(
                f"`wattsched simulate` easy end to end (warm, best of 3): {results['cli_easy_warm_s']:.2f} s",
                flush=True,
            )
        for policy in args.policies.split(","):
            row = measure(policy, cache)
            row["cache"] = "warm"
            results["runs"].append(row)
            print(
                f"{policy:13s} read {row['read_s']:.2f} s  simulate {row['simulate_s']:8.2f} s  "
                f"{row['jobs_per_s']:>12,.0f} jobs/s  peak {row['peak_rss_mb']:.0f} MB  "
                f"mean wait {row['mean_wait_s']:,.0f} s",
                flush=True,
            )
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
