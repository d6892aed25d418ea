"""A queue campaign's figures and HTML report (``campaign report`` on a campaign of kind ``queue``).

One figure per workload of the spec, never pooled across traces: each metric of the summary as one box per
policy over that workload's windows, each window a dot. ``report.html`` (with ``--html``) sets each workload's
summary table beside its figure, in one self-contained page rendered from a Jinja template
(``templates/queue_report.html.j2``) rather than strings pasted together.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from jinja2 import Environment, PackageLoader
from matplotlib.figure import Figure

from wattsched.campaign.kinds import open_experiment
from wattsched.campaign.queue import SUMMARY_METRICS, QueueExperiment, queue_summary
from wattsched.core.store import CampaignError, atomic_write
from wattsched.plots.style import grid_shape, save_figure

__all__ = ["QueueFigure", "write_queue_figures", "write_queue_html"]

#: The panels' titles, by summary metric.
METRIC_TITLES = {
    "m_wait_mean": "mean wait (s)",
    "m_wait_p90": "p90 wait (s)",
    "m_turnaround_mean": "mean turnaround (s)",
    "m_bounded_slowdown_mean": "mean bounded slowdown",
    "m_utilisation": "utilisation",
    "m_queue_length_mean": "mean queue length",
}
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"]


@dataclass(frozen=True)
class QueueFigure:
    """One workload's figure: its name and the PNG and SVG files."""

    workload: str
    png: Path
    svg: Path


def _experiment(directory: Path) -> QueueExperiment:
    experiment = open_experiment(directory)
    if not isinstance(experiment, QueueExperiment):
        raise CampaignError(f"{directory} holds a campaign of kind {experiment.kind}, not queue")
    return experiment


def _figure(runs: pl.DataFrame, workload: str, policies: list[str]) -> Figure:
    """Each summary metric as a panel: one box per policy over the workload's windows, the windows as dots."""
    metrics = [m for m in SUMMARY_METRICS if m in runs.columns]
    rows, cols = grid_shape(len(metrics), ncols=3)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    rng = np.random.default_rng(0)
    colours = {p: PALETTE[k % len(PALETTE)] for k, p in enumerate(policies)}
    windows = runs["workload"].n_unique()
    for ax, metric in zip(axes, metrics, strict=False):
        data = [
            runs.filter(pl.col("policy") == p)[metric].cast(pl.Float64).drop_nulls().drop_nans().to_numpy()
            for p in policies
        ]
        shown = [(k, y) for k, y in enumerate(data) if y.size]
        if shown:
            boxes = ax.boxplot(
                [y for _, y in shown],
                positions=[k for k, _ in shown],
                widths=0.6,
                showfliers=False,
                patch_artist=True,
                medianprops={"color": "black"},
            )
            for patch, (k, _) in zip(boxes["boxes"], shown, strict=True):
                patch.set_facecolor(colours[policies[k]])
                patch.set_alpha(0.55)
            for k, y in shown:
                ax.scatter(k + rng.uniform(-0.15, 0.15, y.size), y, s=10, color=colours[policies[k]], zorder=3)
        ax.set_xticks(range(len(policies)), policies, rotation=30, ha="right")
        ax.set_title(METRIC_TITLES.get(metric, metric), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle(f"{workload}: {len(policies)} policies over {windows} window{'s' if windows != 1 else ''}")
    return fig


def write_queue_figures(directory: Path, out: Path) -> list[QueueFigure]:
    """``queue_<workload>.png`` and ``.svg`` in ``out`` for each workload of the campaign with finished runs."""
    experiment = _experiment(directory)
    results = experiment.named_results(directory)
    if results.is_empty():
        raise CampaignError(f"{directory}: no finished run to plot")
    figures = []
    for workload in experiment.workload_names():
        runs = results.filter(pl.col("workload_name") == workload)
        if runs.is_empty():
            continue
        png, svg = save_figure(_figure(runs, workload, experiment.spec.policies), out, f"queue_{workload}")
        figures.append(QueueFigure(workload, png, svg))
    return figures


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return "" if value is None else str(value)


def write_queue_html(directory: Path, out: Path, figures: list[QueueFigure], notes: list[str]) -> Path:
    """``out/report.html``: per workload, its summary table and its figure (embedded; the SVG linked), and the
    report's warnings (a partial campaign). One self-contained file."""
    experiment = _experiment(directory)
    summary = queue_summary(experiment.named_results(directory), experiment.spec.policies, experiment.workload_names())
    by_name = {f.workload: f for f in figures}
    sections = []
    for workload in experiment.workload_names():
        rows = summary.filter(pl.col("workload") == workload).drop("workload")
        figure = by_name.get(workload)
        sections.append(
            {
                "name": workload,
                "columns": rows.columns,
                "rows": [[_cell(v) for v in row] for row in rows.iter_rows()],
                "png": base64.b64encode(figure.png.read_bytes()).decode("ascii") if figure else None,
                "svg": figure.svg.name if figure else None,
            }
        )
    env = Environment(loader=PackageLoader("wattsched.report", "templates"), autoescape=True)
    page = env.get_template("queue_report.html.j2").render(
        name=experiment.name, policies=experiment.spec.policies, sections=sections, notes=notes
    )
    path = out / "report.html"
    atomic_write(path, page)
    return path
