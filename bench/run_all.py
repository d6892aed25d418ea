"""Run every benchmark (`make bench`), then print one table of every recorded target (bench/targets.py).

Figures are copied into docs/performance.md by hand, with the date."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import targets

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    "ricc.py",
    "python_policy.py",
    "power.py",
    "power_year.py",
    "knapsack.py",
    "predict_runtime.py",
    "predict_power.py",
    "campaign.py",
    "dataset_build.py",
    "dispatch_experiment.py",
    "eamc_grid.py",
    "rmap_grid.py",
    "cli_time.py",
    "startup.py",
    "first_run.py",
    "doc_durations.py",
    "stopping.py",
    "reproduce.py",
    "swf_read.py",
    "cph_hint.py",
    "queue_scaling.py",
    "conservative.py",
]

if __name__ == "__main__":
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        subprocess.run([sys.executable, str(HERE / name)], check=True)
    print("== targets", flush=True)
    print(targets.table())
