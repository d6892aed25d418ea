"""Benchmark: paper 001's experiment over every Eurora instance — 5 dispatchers (SJF, LJF, EBF, PRB, CPH) × 3
runtime estimates (walltime, rules, real) × the 206 instances of ``../shared/data/eurora/historical_traces`` =
3,090 runs, as a dispatch campaign on local processes; CPH with the paper's 1 s wall-clock limit per pass
(the greedy plan is CP-SAT's first solution). Prints and records the per-combination summary and CPH's cost per pass.

    .venv/bin/python bench/dispatch_experiment.py [--workers 2] [--deterministic-time T]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "data" / "eurora" / "historical_traces"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--deterministic-time", type=float, default=None)
    parser.add_argument("--keep", action="store_true", help="resume the previous run instead of starting over")
    args = parser.parse_args()
    import polars as pl

    from wattsched.campaign.runner import run_experiment
    from wattsched.studies.multires.experiment import DispatchSpec
    from wattsched.studies.multires.results import dispatch_summary, load_dispatch_results

    cph = {"deterministic_time": args.deterministic_time} if args.deterministic_time else {}
    spec = DispatchSpec(kind="dispatch", name="p1-eurora", instances=[str(TRACES)], cph=cph)
    out = REPO / "bench" / "results" / "dispatch-run"
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    run = run_experiment(spec, out, workers=args.workers)
    wall = time.perf_counter() - t
    summary = dispatch_summary(out)
    results = load_dispatch_results(out)
    with pl.Config(tbl_rows=20, tbl_cols=20, tbl_width_chars=200):
        print(summary)
    cph_runs = results.filter(pl.col("dispatcher") == "cph")
    figures = {
        "runs": run.total,
        "executed": run.executed,
        "workers": args.workers,
        "wall_s": wall,
        "cph": cph or {"time_limit_s": 1.0},
        "run_s_by_dispatcher": dict(results.group_by("dispatcher").agg(pl.col("run_s").sum()).iter_rows()),
        "cph_passes": int(cph_runs["cp_passes"].sum()),
        "cph_solver_calls": int(cph_runs["cp_solved"].sum()),
        "cph_mean_s_per_pass": float(cph_runs["cp_total_s"].sum() / cph_runs["cp_passes"].sum()),
        "cph_max_s_per_pass": float(cph_runs["cp_max_s"].max()),
        "summary": summary.to_dicts(),
    }
    (REPO / "bench" / "results" / "dispatch_experiment.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps({k: v for k, v in figures.items() if k != "summary"}, indent=1))


if __name__ == "__main__":
    main()
