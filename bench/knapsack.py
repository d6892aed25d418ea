"""Benchmark: the cost per pass of the exact CP-SAT knapsack in the power window, against the greedy knapsack,
on a busy Marconi100-like window (the jobs of the 12 h before the window queued at t = 0, then load 1.0;
6,000 jobs; cap 0.5 of the dynamic range for 3 h; gaussian99), one core.

    .venv/bin/python bench/knapsack.py [--time-limit 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time-limit", type=float, default=1.0)
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    from wattsched.engine.simulate import simulate
    from wattsched.policies.powercheck import PowerCheck
    from wattsched.power.platform import PowerCapSchedule, load_platform
    from wattsched.power.run import ESTIMATE_COLUMNS, PowerSetup, reject_never_fitting, with_estimates
    from wattsched.workload.generate import generate_m100like

    r = generate_m100like(6000, seed=3, target_load=1.0)
    jobs = r.jobs.with_columns((pl.col("submit_time") - 12 * 3600.0).clip(lower_bound=0.0))
    plat = load_platform("marconi100")
    cap = PowerCapSchedule.window(0.5, plat, window_end=10_800.0)
    setup = PowerSetup(plat, PowerCheck.named("gaussian99"), "real", cap, 10_800.0)
    jobs, _ = reject_never_fitting(with_estimates(jobs, setup), r.rejects, setup, "bench")
    results = {}
    for policy in ("knapsack-wait", "knapsack-exact-wait", "knapsack-stretch", "knapsack-exact-stretch"):
        t = time.perf_counter()
        res = simulate(
            jobs,
            policy,
            980,
            power_check=setup.check,
            power_estimates=ESTIMATE_COLUMNS,
            cap=cap,
            knapsack_until=10_800.0,
            solver={"time_limit": args.time_limit},
        )
        s = res.schedule
        results[policy] = {
            "seconds": time.perf_counter() - t,
            "jobs_started_in_window": int((s["start_time"] < 10_800).sum()),
            "mean_wait_s": float(s["wait"].mean()),
            **{f"solver_{k}": v for k, v in res.policy_stats.items()},
        }
        print(policy, json.dumps(results[policy]), flush=True)
    out = REPO / "bench" / "results" / "knapsack.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
