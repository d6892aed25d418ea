"""Benchmark: paper 004's whole experiment grid — 4 traces × 5 global bounds × 7 policies (+ the 3 policies with
the other configuration data) = 200 runs of 30 jobs, on the synthetic Cab data (2,840 configurations) with the
configuration model fitted on 10% — timed: data generation, model fit, the grid, and the report.

    .venv/bin/python bench/rmap_grid.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    from wattsched.studies.rmap.experiment import run_rmap_grid, write_rmap_report
    from wattsched.studies.rmap.machine import fit_config_model, rmap_cab_details, write_model_figures

    t = time.perf_counter()
    oracle = rmap_cab_details(0)
    t_data = time.perf_counter() - t
    t = time.perf_counter()
    model, errors = fit_config_model(oracle, 0.1, seed=0)
    t_model = time.perf_counter() - t
    jobs, decisions, t_grid = run_rmap_grid(oracle, model)
    t = time.perf_counter()
    out = REPO / "bench" / "results" / "rmap-grid"
    write_rmap_report(jobs, decisions, out)
    write_model_figures(errors, out)
    t_report = time.perf_counter() - t
    runs = jobs.select("trace", "bound", "policy", "data").unique().height
    figures = {
        "runs": runs,
        "data_s": t_data,
        "model_fit_s": t_model,
        "grid_s": t_grid,
        "per_run_ms": 1000 * t_grid / runs,
        "report_s": t_report,
    }
    (REPO / "bench" / "results" / "rmap_grid.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
