"""Benchmark: the cost per pass of the exact CP-SAT knapsack in the power window, against the greedy knapsack,
on a busy Marconi100-like window (the jobs of the 12 h before the window queued at t = 0, then load 1.0;
6,000 jobs; cap 0.5 of the dynamic range for 3 h; gaussian99), one core.

    .venv/bin/python bench/knapsack.py [--time-limits 0.1 0.3 1 3] [--quick]

Per solve time limit it reports the share of solver calls where CP-SAT improves on the greedy choice, the share
where its search found no solution of its own (the greedy choice, a complete hint, is the pass's answer then) and
the share of passes that ended without a plan (must be 0), recorded via bench/targets.py (issue 18).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import polars as pl

import targets

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time-limits", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0])
    parser.add_argument("--quick", action="store_true", help="1,500 jobs at 0.1 s (< 1 min)")
    args = parser.parse_args()
    limits = [0.1] if args.quick else args.time_limits
    os.sched_setaffinity(0, {0})
    from wattsched.engine.simulate import simulate
    from wattsched.policies.powercheck import PowerCheck
    from wattsched.power.platform import PowerCapSchedule, load_platform
    from wattsched.power.run import ESTIMATE_COLUMNS, PowerSetup, reject_never_fitting, with_estimates
    from wattsched.workload.generate import generate_m100like

    r = generate_m100like(1500 if args.quick else 6000, seed=3, target_load=1.0)
    jobs = r.jobs.with_columns((pl.col("submit_time") - 12 * 3600.0).clip(lower_bound=0.0))
    plat = load_platform("marconi100")
    cap = PowerCapSchedule.window(0.5, plat, window_end=10_800.0, post_window_cap="dynamic_range")
    setup = PowerSetup(plat, PowerCheck.named("gaussian99"), "real", cap, 10_800.0)
    jobs, _ = reject_never_fitting(with_estimates(jobs, setup), r.rejects, setup, "bench")
    results: dict[str, dict] = {}
    runs = [(p, None) for p in ("knapsack-wait", "knapsack-stretch")]
    runs += [(p, t) for t in limits for p in ("knapsack-exact-wait", "knapsack-exact-stretch")]
    for policy, limit in runs:
        t = time.perf_counter()
        res = simulate(
            jobs,
            policy,
            980,
            power_check=setup.check,
            power_estimates=ESTIMATE_COLUMNS,
            cap=cap,
            knapsack_until=10_800.0,
            solver={"time_limit": limit if limit is not None else 1.0},
        )
        s = res.schedule
        key = policy if limit is None else f"{policy}@{limit:g}s"
        results[key] = {
            "seconds": time.perf_counter() - t,
            "jobs_started_in_window": int((s["start_time"] < 10_800).sum()),
            "mean_wait_s": float(s["wait"].mean()),
            **{f"solver_{k}": v for k, v in res.policy_stats.items()},
        }
        print(key, json.dumps(results[key]), flush=True)
    rows = []
    for limit in limits:
        stats = [results[f"{p}@{limit:g}s"] for p in ("knapsack-exact-wait", "knapsack-exact-stretch")]
        calls = sum(r["solver_solver_calls"] for r in stats)
        improved = sum(r["solver_improved_on_greedy"] for r in stats) / max(calls, 1)
        no_own = sum(r["solver_search_without_solution"] for r in stats) / max(calls, 1)
        no_solution = sum(r["solver_no_solution"] for r in stats) / max(calls, 1)
        breaks = sum(r["solver_hint_breaks_rounding"] for r in stats)
        note = (
            f"{calls:,} solver calls (wait+stretch); CP-SAT improves on greedy in {improved:.0%}; its search found "
            f"no solution of its own in {no_own:.1%}, then the greedy hint is CP-SAT's solution (fixed to the hint)"
            + (f"; {breaks} greedy choices break the conservative rounding (greedy kept)" if breaks else "")
        )
        what = f"exact knapsack solver calls ending without a CP-SAT solution at {limit:g} s"
        rows.append(targets.Target(what, no_solution, 0.0, "share", note=note))
    targets.record("knapsack", rows)
    out = REPO / "bench" / "results" / "knapsack.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
