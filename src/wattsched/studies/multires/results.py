"""The tables of a dispatch campaign's directory (paper 001): its finished runs and jobs, the queue length per
second, the paper's per-instance metrics and the per (dispatcher, estimate) summary. Shared by the experiment
(its summary), the figures and the reproduction, below all three.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from wattsched.core.store import CampaignError, CampaignLayout, read_result
from wattsched.studies.multires.dispatchers import DISPATCHERS
from wattsched.studies.multires.metrics import CLASSES, moved_jobs, queue_mean, queue_seconds, weighted_quantiles

#: The runtime estimates a dispatcher can see: the walltime, the rule cascade (online), the true durations.
ESTIMATES: tuple[Literal["walltime", "rules", "real"], ...] = ("walltime", "rules", "real")


def load_dispatch_results(out: str | Path) -> pl.DataFrame:
    """One row per finished run (its summary); a damaged result file is a run not done, as for the runner."""
    results = CampaignLayout(Path(out)).results
    found = (read_result(p) for p in sorted(results.glob("*.json"))) if results.exists() else iter(())
    rows = [row for row in found if row is not None]
    if not rows:
        raise CampaignError(f"{out}: no finished runs")
    return pl.DataFrame(rows, infer_schema_length=None)


def load_dispatch_jobs(out: str | Path) -> pl.DataFrame:
    files = sorted(CampaignLayout(Path(out)).results.glob("*.jobs.parquet"))
    if not files:
        raise CampaignError(f"{out}: no finished runs")
    return pl.concat([pl.read_parquet(f) for f in files], how="vertical_relaxed")


def instance_queues(out: str | Path) -> Iterator[tuple[str, dict[tuple[str, str], np.ndarray]]]:
    """Per instance: seconds at each queue length per (dispatcher, estimate), the seconds where every combination's
    queue is empty left out (see :mod:`wattsched.studies.multires.metrics`)."""
    results = load_dispatch_results(out)
    for (instance,), group in results.group_by(["instance"], maintain_order=True):
        timelines = {
            (r["dispatcher"], r["estimate"]): pl.read_parquet(CampaignLayout(Path(out)).run_table(r["id"], "timeline"))
            for r in group.iter_rows(named=True)
        }
        yield str(instance), queue_seconds(timelines)


def queue_distributions(out: str | Path) -> dict[tuple[str, str], np.ndarray]:
    """Seconds at each queue length per (dispatcher, estimate), summed over instances (:func:`instance_queues`)."""
    totals: dict[tuple[str, str], np.ndarray] = {}
    for _, hists in instance_queues(out):
        for key, hist in hists.items():
            prev = totals.get(key, np.zeros(0))
            size = max(prev.size, hist.size)
            totals[key] = np.pad(prev, (0, size - prev.size)) + np.pad(hist, (0, size - hist.size))
    return totals


def instance_metrics(out: str | Path) -> pl.DataFrame:
    """One row per run, the paper's metrics per instance: ``moved`` (the instance's jobs that waited in at least one
    combination; the others are removed, as the paper does), ``slowdown`` (mean over the moved jobs; null when
    the instance has none) and ``slowdown_<class>`` (mean over the moved jobs of the class), ``queue`` (mean queue
    length over the instance's seconds where some combination has a queue; ``queue_s`` those seconds), with the
    run's summary columns (``jobs``, ``run_s``, CPH's CP cost)."""
    results = load_dispatch_results(out)
    jobs = load_dispatch_jobs(out)
    moved = moved_jobs(jobs)
    combo = ["instance", "dispatcher", "estimate"]
    per = moved.group_by(combo).agg(
        pl.len().alias("moved"),
        pl.col("slowdown").mean().alias("slowdown"),
        *(pl.col("slowdown").filter(pl.col("job_class") == c).mean().alias(f"slowdown_{c}") for c in CLASSES),
        *(pl.col("slowdown").filter(pl.col("job_class") == c).len().alias(f"moved_{c}") for c in CLASSES),
    )
    rows = []
    for instance, hists in instance_queues(out):
        for (d, e), hist in hists.items():
            rows.append(
                {
                    "instance": instance,
                    "dispatcher": d,
                    "estimate": e,
                    "queue": queue_mean(hist),
                    "queue_s": float(hist.sum()),
                }
            )
    queues = pl.DataFrame(
        rows,
        schema={
            "instance": pl.Utf8,
            "dispatcher": pl.Utf8,
            "estimate": pl.Utf8,
            "queue": pl.Float64,
            "queue_s": pl.Float64,
        },
    )
    keep = [
        c
        for c in ("id", *combo, "jobs", "mean_wait", "run_s", "cp_passes", "cp_solved", "cp_total_s", "cp_max_s")
        if c in results.columns
    ]
    return (
        results.select(keep)
        .join(per, on=combo, how="left")
        .join(queues, on=combo, how="left")
        .with_columns(pl.col("moved", *(f"moved_{c}" for c in CLASSES)).fill_null(0))
    )


def dispatch_summary(out: str | Path) -> pl.DataFrame:
    """Per (dispatcher, estimate): jobs, slowdown (mean, median, per class) and queue length per second (mean,
    median, 95th percentile); for CPH, the CP stage's cost per pass (mean over every pass, and the maximum), the
    passes and how many of them called the solver; ``run_s``, the runs' summed wall time."""
    jobs = load_dispatch_jobs(out)
    per = jobs.group_by("dispatcher", "estimate").agg(
        pl.len().alias("jobs"),
        pl.col("slowdown").mean().alias("mean_slowdown"),
        pl.col("slowdown").median().alias("median_slowdown"),
        *(pl.col("slowdown").filter(pl.col("job_class") == c).mean().alias(f"mean_slowdown_{c}") for c in CLASSES),
        pl.col("wait").mean().alias("mean_wait_s"),
    )
    queues = queue_distributions(out)
    rows = []
    for (d, e), hist in queues.items():
        total = hist.sum()
        mean = float((np.arange(hist.size) * hist).sum() / total) if total > 0 else 0.0
        q = weighted_quantiles(hist, (0.5, 0.95))
        rows.append({"dispatcher": d, "estimate": e, "mean_queue": mean, "median_queue": q[0], "p95_queue": q[1]})
    queue_frame = pl.DataFrame(
        rows,
        schema={
            "dispatcher": pl.Utf8,
            "estimate": pl.Utf8,
            "mean_queue": pl.Float64,
            "median_queue": pl.Float64,
            "p95_queue": pl.Float64,
        },
    )
    results = load_dispatch_results(out)
    has_cp = "cp_total_s" in results.columns
    cost = results.group_by("dispatcher", "estimate").agg(
        *(
            [
                (pl.col("cp_total_s").sum() / pl.col("cp_passes").sum()).alias("cp_mean_s"),
                pl.col("cp_max_s").max(),
                pl.col("cp_passes").sum(),
                pl.col("cp_solved").sum(),
            ]
            if has_cp
            else []
        ),
        pl.col("run_s").sum().alias("run_s"),
    )
    order = {d: i for i, d in enumerate(DISPATCHERS)}
    return (
        per.join(queue_frame, on=["dispatcher", "estimate"], how="left")
        .join(cost, on=["dispatcher", "estimate"], how="left")
        .sort(
            pl.col("dispatcher").replace_strict(order, return_dtype=pl.Int64),
            pl.col("estimate").replace_strict({e: i for i, e in enumerate(ESTIMATES)}, return_dtype=pl.Int64),
        )
    )
