"""The figure of ``wattsched data stats --figure``: a workload's size and runtime log2 histograms, its walltime
accuracy and its submissions per day, from :func:`wattsched.workload.stats.workload_stats` and the job table.
Matplotlib, like every static figure of the project (plots/style.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from wattsched.core.atomic import atomic_figure

__all__ = ["plot_workload_stats"]


def _log2_bars(ax: Any, rows: list[dict[str, Any]], xlabel: str, colour: str) -> None:
    labels = [f"{r['low']:g}" if r["high"] - r["low"] <= 1 else f"{r['low']:g}–{r['high'] - 1:g}" for r in rows]
    ax.bar(np.arange(len(rows)), [r["count"] for r in rows], color=colour)
    ax.set_xticks(np.arange(len(rows)), labels, rotation=60, fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("jobs")


def plot_workload_stats(stats: dict[str, Any], jobs: pl.DataFrame, path: str | Path) -> Path:
    """Write the four-panel figure to ``path`` (its suffix picks the format: .png, .svg, .pdf)."""
    fig = Figure(figsize=(12, 8), layout="constrained")
    (a, b), (c, d) = fig.subplots(2, 2)
    _log2_bars(a, stats["size"]["log2_histogram"], f"job size ({stats['size_unit']}, log2 bins)", "#0072B2")
    _log2_bars(b, stats["runtime_s"]["log2_histogram"], "runtime (s, log2 bins)", "#D55E00")
    runtime = jobs["runtime"].cast(pl.Float64).to_numpy()
    walltime = jobs["walltime"].cast(pl.Float64).to_numpy()
    ok = np.isfinite(walltime) & (walltime > 0)
    c.hist(np.clip(runtime[ok] / walltime[ok], 0, 1.0), bins=50, color="#009E73")
    c.set_xlabel("walltime accuracy (runtime / walltime, clipped at 1)")
    c.set_ylabel("jobs")
    day = np.floor(jobs["submit_time"].cast(pl.Float64).to_numpy() / 86400.0)
    if day.size:
        counts = np.bincount((day - day.min()).astype(np.int64))
        d.step(np.arange(counts.size), counts, where="post", color="#7f7f7f")
    d.set_xlabel("day since the first submission")
    d.set_ylabel("submitted jobs")
    load = stats["offered_load"]
    fig.suptitle(
        f"{Path(stats['source']).name}: {stats['jobs']:,} jobs, "
        + (f"{stats['users']['count']:,} users, " if stats["users"]["count"] else "")
        + (f"offered load {load:.2f}" if load is not None else "offered load unknown (no machine size)"),
        fontsize=11,
    )
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_figure(fig, out, dpi=130)
    return out
