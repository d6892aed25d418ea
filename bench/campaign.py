"""Benchmark: the full paper-000-shaped campaign on this machine's cores.

30 windows of 24 h from a 231,000-job Marconi100-like workload × 4 caps (0.4–0.7) × 11 estimators (naive;
real and predicted × mean, max, gaussian68/95/99) + 30 uncapped EASY baselines = 1,350 runs, EASY+PC, local
processes. Timed separately: preparing the workloads (generation, history predictions over the whole trace,
the EASY replay that gives the pre-state, 30 windows) and running the 1,350 runs; the per-run cost distribution
comes from the runs' own timings.

    .venv/bin/python bench/campaign.py [--jobs 231000] [--workers 2] [--executor local|dask]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=231_000)
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--executor", default="local")
    args = parser.parse_args()
    import numpy as np
    import polars as pl

    from wattsched.campaign.power import PowerExperiment
    from wattsched.campaign.runner import load_results, prepare, run_experiment
    from wattsched.campaign.spec import parse_spec

    spec = parse_spec(
        {
            "kind": "power",
            "name": "paper000",
            "platform": "marconi100",
            "workloads": [
                {
                    "name": "m100",
                    "generate": {"model": "m100", "jobs": args.jobs, "seed": 0},
                    "windows": {"count": args.windows, "hours": 24, "seed": 0, "prestate": True},
                }
            ],
            "grid": {
                "policies": ["easy-pc"],
                "checks": ["naive", "mean", "max", "gaussian68", "gaussian95", "gaussian99"],
                "sources": ["real", "predicted"],
                "caps": [0.4, 0.5, 0.6, 0.7],
                "power_window": 10_800,
            },
            "prediction": {"method": "history"},
        }
    )
    out = REPO / "bench" / "results" / "campaign-run"
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    manifest = prepare(PowerExperiment(spec), out)
    t_prepare = time.perf_counter() - t
    t = time.perf_counter()
    run = run_experiment(spec, out, executor=args.executor, workers=args.workers)
    t_runs = time.perf_counter() - t
    results = load_results(out)
    cost = results["elapsed_s"].to_numpy()
    sim = results["simulation_s"].to_numpy()
    jobs = results["jobs"].to_numpy()
    runs = results.filter(pl.col("kind") == "run")
    figures = {
        "runs": run.total,
        "workers": args.workers,
        "executor": args.executor,
        "trace_jobs": args.jobs,
        "prepare_s": t_prepare,
        "runs_s": t_runs,
        "total_s": t_prepare + t_runs,
        "per_run_s": {
            q: float(np.percentile(cost, p))
            for q, p in (("p10", 10), ("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))
        }
        | {"mean": float(cost.mean())},
        "simulation_share_of_run": float(sim.sum() / cost.sum()),
        "jobs_per_window": {"min": int(jobs.min()), "median": float(np.median(jobs)), "max": int(jobs.max())},
        "prestarted_per_window_median": float(results["prestarted"].median()),
        "median_power_utilisation_by_cap": {
            str(c): float(v)
            for c, v in runs.group_by("cap").agg(pl.col("p_power_utilisation").median()).sort("cap").iter_rows()
        },
        "windows": len(manifest["windows"]["m100"]),
    }
    print(json.dumps(figures, indent=2))
    path = REPO / "bench" / "results" / "campaign.json"
    path.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
