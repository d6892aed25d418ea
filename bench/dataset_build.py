"""Benchmark: the PM100 method on one month of Marconi100-scale telemetry.

980 nodes × 2 PSUs × 133,920 instants (31 days at θ = 20 s) ≈ 262 M samples in the ExaData layout (one Parquet
file per day and PSU), with 40,000 jobs (5% sharing a node, 0.05% missing samples, 20 node outages). The
telemetry is generated once into ``bench/results/dataset-month/`` (kept for reruns; ``--regenerate`` to redo).
Then ``wattsched dataset build`` runs as a child process, timed, and its peak resident memory is read from
``getrusage(RUSAGE_CHILDREN)``. Target: ≤ 10 min and ≤ 8 GB on the 2-core machine.

    .venv/bin/python bench/dataset_build.py [--jobs 40000] [--days 31] [--memory-gb 1] [--workers 1]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=40_000)
    parser.add_argument("--days", type=float, default=31.0)
    parser.add_argument("--median-minutes", type=float, default=120.0)
    parser.add_argument("--memory-gb", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--regenerate", action="store_true")
    args = parser.parse_args()
    data = REPO / "bench" / "results" / "dataset-month"
    stamp = data / "generated.json"
    wanted = {"jobs": args.jobs, "days": args.days, "median_minutes": args.median_minutes}
    cli = str(Path(sys.executable).with_name("wattsched"))
    t_generate = None
    if args.regenerate or not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        shutil.rmtree(data, ignore_errors=True)
        t = time.perf_counter()
        subprocess.run(
            [
                cli,
                "generate",
                "telemetry",
                "--output",
                str(data),
                "--jobs",
                str(args.jobs),
                "--days",
                str(args.days),
                "--outages",
                "20",
                "--median-minutes",
                str(args.median_minutes),
            ],
            check=True,
        )
        t_generate = time.perf_counter() - t
        stamp.write_text(json.dumps(wanted))
    files = sorted((data / "telemetry").rglob("*.parquet"))
    on_disk = sum(f.stat().st_size for f in files)
    out = data / "dataset.parquet"
    t = time.perf_counter()
    subprocess.run(
        [
            cli,
            "dataset",
            "build",
            "--jobs",
            str(data / "jobs.parquet"),
            "--telemetry",
            str(data / "telemetry"),
            "--output",
            str(out),
            "--memory-gb",
            str(args.memory_gb),
            "--workers",
            str(args.workers),
        ],
        check=True,
    )
    t_build = time.perf_counter() - t
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB → GiB; the largest child
    import polars as pl

    dataset = pl.scan_parquet(out)
    rejects = pl.read_parquet(out.with_name("dataset.rejects.parquet"))
    samples = dataset.select(pl.col("power_consumption").list.len().sum()).collect().item()
    figures = {
        "days": args.days,
        "jobs": args.jobs,
        "telemetry_files": len(files),
        "telemetry_gb_on_disk": on_disk / 2**30,
        "generate_s": t_generate,
        "build_s": t_build,
        "peak_rss_gb": peak_gb,
        "memory_gb_option": args.memory_gb,
        "workers": args.workers,
        "dataset_jobs": dataset.select(pl.len()).collect().item(),
        "dataset_samples": samples,
        "rejects": dict(rejects.group_by("stage").len().iter_rows()),
    }
    print(json.dumps(figures, indent=2))
    (REPO / "bench" / "results" / "dataset_build.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
