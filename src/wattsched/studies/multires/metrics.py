"""Metrics of paper 001's dispatcher comparison (§5.2; docs/dispatch.md): per-job slowdown, job classes by
duration, and the number of queued jobs at every second.

- **slowdown** = (wait + p) / p with p the job's run time, floored at ``floor`` seconds (default 1 s) so that the
  many zero-second Eurora jobs have a finite slowdown (a job that did not wait has slowdown 1 either way);
- **classes**: short (p < 1 h), medium (1 h ≤ p ≤ 12 h), long (p > 12 h);
- **queue length per second**: each run's queue timeline is a step function (the value after each pass holds
  until the next pass). Several runs of one instance are put on the union of their breakpoints, and the seconds
  where *every* run has an empty queue are left out (the paper removes them: they carry no comparison). The
  result is, per run, how many seconds the queue held each length.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import numpy as np
import polars as pl

#: A run's key in :func:`queue_seconds` (a name, or a (dispatcher, estimate) pair).
_K = TypeVar("_K")

#: Class bounds (s): short below the first, long above the second.
CLASS_BOUNDS = (3600.0, 43_200.0)
CLASSES = ("short", "medium", "long")


def add_slowdown(jobs: pl.DataFrame, *, floor: float = 1.0) -> pl.DataFrame:
    """``slowdown`` and ``job_class`` columns from ``wait`` and ``runtime``."""
    p = pl.max_horizontal(pl.col("runtime"), pl.lit(floor))
    return jobs.with_columns(
        ((pl.col("wait") + p) / p).alias("slowdown"),
        pl.when(pl.col("runtime") < CLASS_BOUNDS[0])
        .then(pl.lit("short"))
        .when(pl.col("runtime") <= CLASS_BOUNDS[1])
        .then(pl.lit("medium"))
        .otherwise(pl.lit("long"))
        .alias("job_class"),
    )


def queue_seconds(timelines: Mapping[_K, pl.DataFrame], *, drop_all_empty: bool = True) -> dict[_K, np.ndarray]:
    """Per run (key), seconds spent at each queue length (index = length) over one instance's runs; see the
    module docstring. Timelines have ``time`` and ``queued``."""
    if not timelines:
        return {}
    steps = {k: (t["time"].to_numpy(), t["queued"].to_numpy()) for k, t in timelines.items()}
    grid = np.unique(np.concatenate([s[0] for s in steps.values()]))
    if grid.size < 2:
        return {k: np.zeros(1) for k in steps}
    length = np.diff(grid)
    values = {}
    for k, (t, q) in steps.items():
        idx = np.searchsorted(t, grid[:-1], side="right") - 1
        values[k] = np.where(idx >= 0, q[np.maximum(idx, 0)], 0)
    keep = np.ones(length.size, dtype=bool)
    if drop_all_empty:
        keep = np.any(np.stack(list(values.values())) > 0, axis=0)
    top = max(int(v.max()) for v in values.values()) + 1
    return {k: np.bincount(v[keep], weights=length[keep], minlength=top) for k, v in values.items()}


def weighted_quantiles(hist: np.ndarray, qs: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)) -> list[float]:
    """Quantiles of a distribution given as weights per integer value (a queue-length histogram)."""
    total = hist.sum()
    if total <= 0:
        return [0.0 for _ in qs]
    cdf = np.cumsum(hist) / total
    return [float(np.searchsorted(cdf, q - 1e-12)) if q > 0 else float(np.flatnonzero(hist > 0)[0]) for q in qs]


def moved_jobs(jobs: pl.DataFrame, key: tuple[str, ...] = ("instance", "job_id")) -> pl.DataFrame:
    """The jobs of ``jobs`` (one row per job × combination) that waited in at least one combination: the paper's
    filter, which removes the jobs "dispatched immediately as they arrive" in every combination. A job that did not
    wait has slowdown exactly 1, so this is the paper's "slowdown different from 1 in at least one combination"."""
    waited = jobs.group_by(list(key)).agg((pl.col("wait") > 0).any().alias("_moved")).filter("_moved")
    return jobs.join(waited.select(list(key)), on=list(key), how="semi")


def queue_mean(hist: np.ndarray) -> float:
    """Mean queue length of a per-length histogram of seconds (0 when it holds no seconds)."""
    total = float(hist.sum())
    return float((np.arange(hist.size) * hist).sum() / total) if total > 0 else 0.0
