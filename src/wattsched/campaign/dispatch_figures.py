"""Figures of a dispatch campaign, the equivalents of paper 001's Figs. 2–5 (PNG and SVG), and the summary table.

- Fig. 2: distribution of the absolute duration-prediction error, data-driven rules against the walltime, over
  every distinct job of the instances (trace protocol: each job predicted at its submission from the jobs the
  trace shows completed by then);
- Fig. 3: slowdown distribution per dispatcher × estimate (labels W, D, R as the paper: walltime, data-driven
  rules, real), over the jobs whose slowdown differs from 1 in at
  least one combination (the paper's filter);
- Fig. 4: slowdown box plots per job class (short, medium, long);
- Fig. 5: distribution of the number of queued jobs at every second (seconds where every combination's queue is
  empty left out).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from wattsched.campaign.dispatch import (
    ESTIMATES,
    MANIFEST,
    dispatch_summary,
    instance_files,
    load_dispatch_jobs,
    parse_dispatch_spec,
    queue_distributions,
)
from wattsched.metrics.dispatch import CLASSES, weighted_quantiles
from wattsched.sched.dispatchers import DISPATCHERS

COLOURS = {"walltime": "#4c72b0", "rules": "#dd8452", "real": "#55a868"}
#: The paper's letters: W = walltime, D = data-driven (rules), R = real durations.
LETTERS = {"walltime": "W", "rules": "D", "real": "R"}


def _combos(frame: pl.DataFrame) -> list[tuple[str, str]]:
    present = set(frame.select("dispatcher", "estimate").unique().iter_rows())
    return [(d, e) for d in DISPATCHERS for e in ESTIMATES if (d, e) in present]


def _save(fig: Figure, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for p in paths:
        fig.savefig(p, dpi=120, bbox_inches="tight")
    return paths


def prediction_errors(directory: Path) -> pl.DataFrame:
    """Per distinct job of the campaign's instances: absolute error (s) of the rules and of the walltime."""
    from wattsched.predict.runtime import predict_runtime
    from wattsched.workload.eurora import read_eurora
    from wattsched.workload.schema import sort_queue_order

    manifest = json.loads((directory / MANIFEST).read_text())
    spec = parse_dispatch_spec(manifest["spec"])
    files = [str(f) for f in instance_files(spec)]
    jobs, _, _ = read_eurora(files)
    jobs = sort_queue_order(jobs)
    pred = predict_runtime(jobs, "rules", "trace")["pred_runtime"]
    truth = jobs["runtime"]
    return pl.DataFrame({"rules": (pred - truth).abs(), "walltime": (jobs["walltime"] - truth).abs()})


def write_dispatch_figures(directory: str | Path, out: str | Path) -> list[Path]:
    """Write the four figures and ``summary.csv`` into ``out``; returns the paths."""
    directory, out = Path(directory), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = load_dispatch_jobs(directory)
    combos = _combos(jobs)
    labels = [f"{d.upper()}-{LETTERS[e]}" for d, e in combos]
    colours = [COLOURS[e] for _, e in combos]
    paths: list[Path] = []

    errors = prediction_errors(directory)
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    top = float(max(errors["walltime"].max() or 1, errors["rules"].max() or 1)) / 60
    bins = np.linspace(0, top, 60)
    for name in ("walltime", "rules"):
        minutes = errors[name].to_numpy() / 60
        ax.hist(minutes, bins=bins, alpha=0.6, color=COLOURS[name],
                label=f"{name} (MAE {minutes.mean():.1f} min)")
    ax.set(xlabel="absolute error (min)", ylabel="jobs", yscale="log",
           title=f"duration prediction error over {errors.height:,} jobs")
    ax.legend()
    paths += _save(fig, out, "fig2_prediction_error")

    key = ["instance", "job_id"]
    moved = jobs.group_by(key).agg((pl.col("slowdown") != 1.0).any().alias("moved")).filter("moved")
    shown = jobs.join(moved.select(key), on=key, how="semi")
    fig = Figure(figsize=(max(7, 0.5 * len(combos)), 4))
    ax = fig.add_subplot()
    data = [np.log10(shown.filter((pl.col("dispatcher") == d) & (pl.col("estimate") == e))["slowdown"].to_numpy())
            for d, e in combos]
    parts = ax.violinplot([x if x.size else np.zeros(1) for x in data], showmedians=True)
    for body, c in zip(parts["bodies"], colours, strict=True):
        body.set_facecolor(c)
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=60)
    ax.set(ylabel="log10 slowdown", title=f"slowdown of the {moved.height:,} jobs not at 1 in every combination")
    paths += _save(fig, out, "fig3_slowdown")

    fig = Figure(figsize=(max(9, 0.6 * len(combos)), 8))
    for i, c in enumerate(CLASSES):
        ax = fig.add_subplot(len(CLASSES), 1, i + 1)
        cls = jobs.filter(pl.col("job_class") == c)
        values = [cls.filter((pl.col("dispatcher") == d) & (pl.col("estimate") == e))["slowdown"].to_numpy()
                  for d, e in combos]
        box = ax.boxplot([v if v.size else np.ones(1) for v in values], patch_artist=True, showfliers=False)
        for patch, col in zip(box["boxes"], colours, strict=True):
            patch.set_facecolor(col)
        ax.set_yscale("log")
        ax.set_ylabel(f"{c} ({cls.height // max(len(combos), 1):,} jobs)")
        ax.set_xticks(range(1, len(labels) + 1), labels if i == len(CLASSES) - 1 else [""] * len(labels),
                      rotation=60)
    fig.suptitle("slowdown per job class (outliers not drawn)")
    paths += _save(fig, out, "fig4_slowdown_classes")

    queues = queue_distributions(directory)
    fig = Figure(figsize=(max(7, 0.5 * len(combos)), 4))
    ax = fig.add_subplot()
    stats = []
    for (d, e), label in zip(combos, labels, strict=True):
        q = weighted_quantiles(queues.get((d, e), np.zeros(1)), (0.05, 0.25, 0.5, 0.75, 0.95))
        stats.append({"label": label, "whislo": q[0], "q1": q[1], "med": q[2], "q3": q[3], "whishi": q[4],
                      "fliers": []})
    box = ax.bxp(stats, patch_artist=True, showfliers=False)
    for patch, col in zip(box["boxes"], colours, strict=True):
        patch.set_facecolor(col)
    ax.tick_params(axis="x", rotation=60)
    ax.set(ylabel="queued jobs", title="queue length at every second (5–95% whiskers)")
    paths += _save(fig, out, "fig5_queue_length")

    summary = dispatch_summary(directory)
    summary.write_csv(out / "summary.csv")
    paths.append(out / "summary.csv")
    return paths
