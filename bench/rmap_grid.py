"""Benchmark: paper 004's whole experiment grid — 4 traces × 5 global bounds × 7 policies (+ the 3 policies with
the other configuration data) = 200 runs of 30 jobs, on the synthetic Cab data (2,840 configurations) with the
configuration model fitted on 10% — through the campaign runner (what `wattsched rmap grid` runs) in this process,
timed: planning (data generation and model fit), the grid's 20 (trace, bound) runs, and the report.

    .venv/bin/python bench/rmap_grid.py
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    from wattsched.campaign.runner import prepare, report, run_experiment
    from wattsched.studies.rmap.experiment import RMAPExperiment, RMAPSpec, load_rmap_runs

    out = REPO / "bench" / "results" / "rmap-grid"
    shutil.rmtree(out, ignore_errors=True)
    experiment = RMAPExperiment(RMAPSpec(kind="rmap"))
    t = time.perf_counter()
    prepare(experiment, out)
    t_prepare = time.perf_counter() - t
    t = time.perf_counter()
    run_experiment(experiment, out, workers=1)
    t_grid = time.perf_counter() - t
    t = time.perf_counter()
    report(out, out)
    t_report = time.perf_counter() - t
    jobs, _ = load_rmap_runs(out)
    runs = jobs.select("trace", "bound", "policy", "data").unique().height
    figures = {
        "runs": runs,
        "prepare_s": t_prepare,
        "grid_s": t_grid,
        "per_run_ms": 1000 * t_grid / runs,
        "report_s": t_report,
    }
    (REPO / "bench" / "results" / "rmap_grid.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
