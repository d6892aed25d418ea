"""Benchmark: paper 002's evaluation grid — 3 app mixes × 6 policies × 2 t_weight = 36 runs of 5,000 jobs on the
p1/p2 DVFS machine (2 × 512 nodes) — through the campaign runner (what `wattsched eamc grid` runs), timed, with
the per-run cost.

    .venv/bin/python bench/eamc_grid.py [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    import polars as pl

    from wattsched.campaign.runner import load_results, report, run_experiment
    from wattsched.studies.eamc.experiment import EAMCSpec

    out = REPO / "bench" / "results" / "eamc-grid"
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    run = run_experiment(EAMCSpec(kind="eamc", data_dir=str(DATA)), out, workers=args.workers)
    wall = time.perf_counter() - t
    report(out, out / "report")
    results = load_results(out)
    summary = pl.read_csv(out / "report" / "summary.csv")
    with pl.Config(tbl_rows=40, tbl_cols=20, tbl_width_chars=220):
        print(
            summary.select(
                "mix",
                "t_weight",
                "policy",
                (pl.col("makespan") / 86400).alias("makespan_d"),
                (pl.col("mean_response") / 3600).alias("response_h"),
                (pl.col("sum_energy") / 3.6e9).alias("energy_MWh"),
                "mean_frequency",
                "share_optimal",
            )
        )
    figures = {
        "runs": run.total,
        "executed": run.executed,
        "workers": args.workers,
        "wall_s": wall,
        "run_s_mean": float(results["run_s"].mean()),
        "run_s_max": float(results["run_s"].max()),
        "pass_s_total": float(results["pass_s"].sum()),
        "passes_mean": float(results["passes"].mean()),
    }
    (REPO / "bench" / "results" / "eamc_grid.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
