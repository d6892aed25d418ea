"""Benchmark (issue 18, item 2): the queue policies' CPU time as the trace grows, and ljf on RICC.

Each run is a fresh child process pinned to one core with single-threaded Polars/numba and a warm numba cache
(a 200-job warm-up simulation loads the compiled code before the timer starts). The figure is the CPU time
(``time.process_time``) of the ``simulate`` call alone; the Lublin traces (``wattsched generate lublin``, 256
processors, seed 0, offered load 1.0) are generated once into bench/results/queue_scaling_cache/ and reused.
The growth exponent is log(t_1M / t_100k) / log(10). Counters per run: scheduling passes and the longest queue.

    .venv/bin/python bench/queue_scaling.py [--quick] [--policies fcfs,sjf]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from wattsched.core.data_folder import shared_data_dir

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = HERE / "results" / "queue_scaling_cache"
RICC = (shared_data_dir(REPO) or REPO.parent / "shared" / "data") / "swf" / "RICC-2010-2.swf.gz"
POLICIES = ["fcfs", "sjf", "ljf", "easy", "easy-sjf", "easy-saf"]
BIG = {"easy-saf", "sjf", "easy-sjf"}  # also measured at 5 M jobs (targets)
ONE_CORE_ENV = {"POLARS_MAX_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
LOAD = "1.0"  # offered load 1: the queue grows with the trace (tens of thousands of jobs), as in issue 18
TIMEOUT_S = 400  # a run slower than this is recorded as missing its target by at least this much
sys.path.insert(0, str(HERE))


def trace(n: int) -> Path:
    """The n-job Lublin trace, generated on first use."""
    path = CACHE / f"lublin_{n}_load{LOAD}.parquet"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "wattsched",
                "generate",
                "lublin",
                "--output",
                str(path),
                "--jobs",
                str(n),
                "--load",
                LOAD,
            ],
            check=True,
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        )
    return path


def worker(policy: str, workload: str) -> None:
    """Runs inside the pinned child: warm up, then simulate under the CPU clock; print one JSON line."""
    from wattsched.engine.simulate import simulate
    from wattsched.workload.load import load_workload

    read = load_workload(Path(workload))
    machine = read.provenance.machine_size
    simulate(read.jobs.head(200), policy, machine)
    t = time.process_time()
    result = simulate(read.jobs, policy, machine)
    cpu = time.process_time() - t
    print(
        json.dumps(
            {
                "policy": policy,
                "jobs": read.jobs.height,
                "cpu_s": cpu,
                "jobs_per_s": read.jobs.height / max(cpu, 1e-9),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "passes": result.passes,
                "max_queue": result.max_queue_length,
            }
        )
    )


SRC = [str(REPO / "src")]  # --src: measure another checkout's sources (the "before" figures)


def measure(policy: str, workload: Path) -> dict:
    env = {**os.environ, **ONE_CORE_ENV, "PYTHONPATH": SRC[0]}
    cmd = ["taskset", "-c", "0", sys.executable, __file__, "--worker", policy, "--workload", str(workload)]
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"policy": policy, "workload": workload.name, "cpu_s": math.inf, "timeout_s": TIMEOUT_S}
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["workload"] = workload.name
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--workload")
    parser.add_argument("--quick", action="store_true", help="10k/30k/100k jobs, no 5 M runs, RICC prefix")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--sizes", help="comma-separated job counts instead of the defaults")
    parser.add_argument("--src", help="the src/ folder to measure (default: this checkout's)")
    args = parser.parse_args()
    if args.src:
        SRC[0] = str(Path(args.src).resolve())
    if args.worker:
        worker(args.worker, args.workload)
        return
    from targets import Target, record

    sizes = [10_000, 30_000, 100_000] if args.quick else [100_000, 300_000, 1_000_000]
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    big = [] if args.quick else [5_000_000]
    rows: list[dict] = []
    for policy in args.policies.split(","):
        for n in sizes + (big if policy in BIG else []):
            row = measure(policy, trace(n))
            rows.append(row)
            print(
                f"{policy:9s} {n:>9,} jobs  {row['cpu_s']:8.2f} CPU s  {row.get('jobs_per_s', 0):>12,.0f} jobs/s  "
                f"peak {row.get('peak_rss_mb', 0):6.0f} MB  passes {row.get('passes', 0):,}  "
                f"max queue {row.get('max_queue', 0):,}",
                flush=True,
            )
    ricc = measure("ljf", RICC) if RICC.exists() and not args.sizes else None
    if ricc:
        print(f"ljf on RICC: {ricc['cpu_s']:.2f} CPU s, max queue {ricc.get('max_queue', 0):,}", flush=True)

    def cpu(policy: str, n: int) -> float:
        return next((r["cpu_s"] for r in rows if r["policy"] == policy and r["jobs"] == n), math.nan)

    exponents = {
        p: math.log(cpu(p, sizes[-1]) / cpu(p, sizes[0])) / math.log(sizes[-1] / sizes[0])
        for p in args.policies.split(",")
        if len(sizes) > 1
    }
    for p, e in exponents.items():
        print(f"exponent {p}: {e:.2f}")
    out = {"sizes": sizes, "runs": rows, "exponents": exponents, "ljf_ricc": ricc, "quick": args.quick}
    (HERE / "results").mkdir(exist_ok=True)
    name = "queue_scaling.json" if not (args.quick or args.sizes or args.src) else "queue_scaling_partial.json"
    (HERE / "results" / name).write_text(json.dumps(out, indent=1, default=str) + "\n")
    if args.quick or args.sizes or args.src or args.policies != ",".join(POLICIES):
        return  # partial runs record no target rows

    def note(policy: str, n: int) -> str:
        r = next((r for r in rows if r["policy"] == policy and r["jobs"] == n), {})
        why = "; backfill scan through the queue's size index (policies/fit_index.py)" if "easy" in policy else ""
        return f"passes {r.get('passes', 0):,}, max queue {r.get('max_queue', 0):,}{why}"

    targets = [
        Target("fcfs, 1 M Lublin jobs", cpu("fcfs", 1_000_000), 2.0, "CPU s", note=note("fcfs", 1_000_000)),
        Target("ljf, RICC", ricc["cpu_s"] if ricc else math.nan, 2.0, "CPU s"),
        Target("ljf, 1 M Lublin jobs", cpu("ljf", 1_000_000), 2.0, "CPU s", note=note("ljf", 1_000_000)),
    ]
    for p in ("easy-saf", "sjf", "easy-sjf"):
        targets.append(Target(f"{p}, 5 M Lublin jobs", cpu(p, 5_000_000), 15.0, "CPU s", note=note(p, 5_000_000)))
    for p, e in exponents.items():
        targets.append(Target(f"{p} growth exponent 100k→1M", e, 1.2, "", note=note(p, 1_000_000)))
    record("queue_scaling", targets)


if __name__ == "__main__":
    main()
