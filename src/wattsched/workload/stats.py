"""Workload statistics as the Parallel Workloads Archive shows them for each log: jobs and users, the offered
load, size and runtime distributions (quantiles and log2 histograms), inter-arrival times and walltime accuracy.

Definitions (docs/workload-stats.md):
- offered load = Σ size × runtime / (machine size × span), span = last submit − first submit (the archive's
  "offered load" over the log's duration; named option ``load_span = "submits"`` in docs/decisions.md);
- log2 histograms: bin k counts the values in [2^k, 2^(k+1)); sizes start at k = 0 (size 1); runtimes have one
  more bin, ``0`` for runs shorter than a second;
- walltime accuracy = runtime / walltime per job with a positive walltime (Tsafrir's "accuracy"); jobs whose
  runtime reached the walltime are counted as killed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from wattsched.core.schema import ReadResult

__all__ = ["QUANTILES", "log2_histogram", "workload_stats"]

#: Quantiles reported for every distribution.
QUANTILES: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)


def _quantiles(values: np.ndarray) -> dict[str, float | None]:
    if values.size == 0:
        return {"mean": None, **{f"p{round(q * 100)}": None for q in QUANTILES}}
    qs = np.quantile(values, QUANTILES)
    return {
        "mean": float(values.mean()),
        **{f"p{round(q * 100)}": float(v) for q, v in zip(QUANTILES, qs, strict=True)},
    }


def log2_histogram(values: np.ndarray, *, zero_bin: bool = False) -> list[dict[str, Any]]:
    """Counts per bin [2^k, 2^(k+1)) as ``{"low", "high", "count"}`` rows (``high`` exclusive), from the
    smallest to the largest non-empty bin; with ``zero_bin``, values below 1 form a first bin [0, 1)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    rows: list[dict[str, Any]] = []
    if zero_bin:
        below = int((v < 1).sum())
        rows.append({"low": 0, "high": 1, "count": below})
    v = v[v >= 1]
    if v.size == 0:
        return rows
    k = np.floor(np.log2(v)).astype(np.int64)
    counts = np.bincount(k)
    rows += [{"low": 2**i, "high": 2 ** (i + 1), "count": int(c)} for i, c in enumerate(counts)]
    return rows


def workload_stats(read: ReadResult, machine_size: int | None = None) -> dict[str, Any]:
    """The statistics of a read workload (its accepted jobs; rejects are counted, not described)."""
    jobs = read.jobs
    size_total = machine_size or read.provenance.machine_size
    submit = jobs["submit_time"].cast(pl.Float64).to_numpy()
    size = jobs["size"].cast(pl.Float64).to_numpy()
    runtime = jobs["runtime"].cast(pl.Float64).to_numpy()
    walltime = jobs["walltime"].cast(pl.Float64).to_numpy()
    span = float(submit.max() - submit.min()) if submit.size else 0.0
    area = float(np.sum(size * runtime))
    load = area / (float(size_total) * span) if size_total and span > 0 else None
    has_wall = np.isfinite(walltime) & (walltime > 0)
    accuracy = runtime[has_wall] / walltime[has_wall]
    users: dict[str, Any] = {"count": None}
    if "user_id" in jobs.columns and jobs["user_id"].null_count() < jobs.height:
        per_user = jobs.filter(pl.col("user_id").is_not_null()).group_by("user_id").len().sort("len", descending=True)
        top = per_user.head(5)
        users = {
            "count": per_user.height,
            "jobs_per_user": _quantiles(per_user["len"].cast(pl.Float64).to_numpy()),
            "top5_share_of_jobs": float(top["len"].sum() / jobs.height) if jobs.height else None,
        }
    int_sizes = size.astype(np.int64)
    return {
        "source": read.provenance.source,
        "format": read.provenance.format,
        "jobs": jobs.height,
        "rejected": read.rejects.height,
        "machine_size": int(size_total) if size_total else None,
        "size_unit": read.provenance.size_unit,
        "span_s": span,
        "offered_load": load,
        "area_unit_s": area,
        "size": {
            **_quantiles(size),
            "serial_share": float((size == 1).mean()) if size.size else None,
            "power_of_two_share": float(((int_sizes & (int_sizes - 1)) == 0).mean()) if size.size else None,
            "log2_histogram": log2_histogram(size),
        },
        "runtime_s": {**_quantiles(runtime), "log2_histogram": log2_histogram(runtime, zero_bin=True)},
        "interarrival_s": _quantiles(np.diff(np.sort(submit))),
        "walltime_s": _quantiles(walltime[has_wall]),
        "walltime_accuracy": {
            **_quantiles(accuracy),
            "jobs_with_walltime": int(has_wall.sum()),
            "killed_share": float((runtime[has_wall] >= walltime[has_wall]).mean()) if has_wall.any() else None,
        },
        "users": users,
    }
