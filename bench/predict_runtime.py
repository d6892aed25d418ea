"""Benchmark: the online runtime predictors on the full RICC trace (447,794 jobs), one core.

Each predictor runs in a fresh process pinned to CPU 0 with single-threaded Polars, under the trace protocol
with the trace's own completion times (submit + SWF wait + runtime). Reading the trace is timed and reported
but is not part of a predictor's time. Accuracy: MAE against the true runtime (seconds and minutes); for the
rule cascade, the share of jobs per rule.

RICC has no job names (nor application ids), so its cascade only reaches rules 1, 3, 5 and 7. The extra run
``rules-named`` gives every job a synthetic name (shared prefixes, derived from its id, size and walltime) to
time the prefix indexes (rules 2, 4 and 6) at full scale; its MAE means nothing.

    .venv/bin/python bench/predict_runtime.py [--predictors walltime,oracle,last2,rules,rules-named]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from wattsched.core.data_folder import shared_data_dir

if TYPE_CHECKING:
    import polars as pl

REPO = Path(__file__).resolve().parents[1]
RICC = (shared_data_dir(REPO) or REPO.parent / "shared" / "data") / "swf" / "RICC-2010-2.swf.gz"
PREDICTORS = ["walltime", "oracle", "last2", "rules", "rules-named"]
ONE_CORE_ENV = {"POLARS_MAX_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def synthetic_names(jobs: pl.DataFrame) -> pl.DataFrame:
    """Names with shared prefixes: a family per (size, walltime), a variant per job id."""
    import polars as pl

    return jobs.with_columns(
        pl.format(
            "app{}_{}h_v{}",
            pl.col("size") % 7,
            (pl.col("walltime") / 3600).floor().cast(pl.Int64),
            pl.col("job_id") % 13,
        ).alias("name")
    )


def worker(method: str) -> None:
    """Runs inside the pinned child: read, completion times, predict; print one JSON line."""
    os.sched_setaffinity(0, {0})
    t0 = time.perf_counter()
    import numpy as np

    from wattsched.predict.online import completion_times
    from wattsched.predict.runtime import RULE_OUTPUT, RUNTIME_OUTPUT, predict_runtime
    from wattsched.workload.load import load_workload

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    jobs = load_workload(RICC).jobs
    t_read = time.perf_counter() - t1
    named = method == "rules-named"
    if named:
        jobs = synthetic_names(jobs)
    t2 = time.perf_counter()
    completion, source = completion_times(jobs, "trace")
    t_completion = time.perf_counter() - t2
    t3 = time.perf_counter()
    out = predict_runtime(jobs, "rules" if named else method, completion)
    t_predict = time.perf_counter() - t3
    err = np.abs(out[RUNTIME_OUTPUT].to_numpy() - jobs["runtime"].to_numpy())
    row = {
        "predictor": method,
        "jobs": jobs.height,
        "completion": source,
        "import_s": t_import,
        "read_s": t_read,
        "completion_s": t_completion,
        "predict_s": t_predict,
        "jobs_per_s": jobs.height / t_predict,
        "mae_s": float(err.mean()),
        "mae_min": float(err.mean() / 60),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if RULE_OUTPUT in out.columns:
        counts = out[RULE_OUTPUT].value_counts().sort(RULE_OUTPUT)
        row["rule_share"] = {str(r): c / jobs.height for r, c in counts.iter_rows()}
    print(json.dumps(row))


def measure(method: str) -> dict:
    env = {**os.environ, **ONE_CORE_ENV}
    t = time.perf_counter()
    out = subprocess.run(
        ["taskset", "-c", "0", sys.executable, __file__, "--worker", method],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_wall_s"] = time.perf_counter() - t
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--predictors", default=",".join(PREDICTORS))
    parser.add_argument("--output", default=str(REPO / "bench" / "results" / "predict_runtime.json"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if not RICC.exists():
        sys.exit(f"missing {RICC} (benchmarks read ../shared/data in place)")
    results: dict = {"trace": str(RICC), "cpu": "one core (taskset -c 0)", "protocol": "trace", "runs": []}
    print(
        f"{'predictor':12s} {'read s':>7s} {'predict s':>10s} {'jobs/s':>11s} {'MAE s':>10s} {'MAE min':>9s}"
        f" {'peak MB':>8s}  rule shares",
        flush=True,
    )
    for method in args.predictors.split(","):
        row = measure(method)
        results["runs"].append(row)
        shares = " ".join(f"{r}:{100 * s:.2f}%" for r, s in row.get("rule_share", {}).items())
        print(
            f"{method:12s} {row['read_s']:7.2f} {row['predict_s']:10.2f} {row['jobs_per_s']:11,.0f} "
            f"{row['mae_s']:10,.0f} {row['mae_min']:9.1f} {row['peak_rss_mb']:8.0f}  {shares}",
            flush=True,
        )
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
