"""Per-metric box plots of a power campaign over workload windows, one facet per cap (and per policy when the grid
has several): the equivalents of paper 000's Figs. 4–7 (mean power against the cap, turnaround increase, share of
the window above the cap, max-turnaround increase, share of jobs started in the window, maximum cap break).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from wattsched.campaign.summary import (
    capped_runs,
    estimator_order,
)
from wattsched.core.store import CampaignError
from wattsched.plots.style import (
    CHECK_COLOURS,
    PREDICTED_HATCH,
    check_colour,
    dwarf_ratio,
    grid_shape,
    hours_label,
    save_figure,
    symlog,
)

# --------------------------------------------------------------------------------------------- metric boxes


@dataclass(frozen=True)
class MetricFigure:
    """One metric figure: what to plot per run (an expression over the result row), and how to read it."""

    key: str
    title: str
    ylabel: str
    value: Callable[[], pl.Expr]
    reference: str | float | None = 0.0  # "cap": a line at each facet's cap; a number: a dashed line there
    paper: str = ""


#: The metric figures, in the paper's order. Values are fractions; axes show them as percents.
METRICS: dict[str, MetricFigure] = {
    m.key: m
    for m in (
        MetricFigure(
            "power_utilisation",
            "Mean dynamic power in the power window against the cap",
            "mean dynamic power (% of the dynamic range)",
            lambda: pl.col("p_power_utilisation") * pl.col("cap"),
            "cap",
            "Fig. 4",
        ),
        MetricFigure(
            "turnaround_increase",
            "Mean turnaround increase against uncapped EASY",
            "mean turnaround increase",
            lambda: pl.col("p_turnaround_increase"),
            0.0,
            "Fig. 5",
        ),
        MetricFigure(
            "time_above_cap",
            "Share of the power window spent above the cap",
            "time above the cap (% of the window)",
            lambda: pl.col("p_time_above_cap_share"),
            None,
            "Fig. 6",
        ),
        MetricFigure(
            "max_turnaround_increase",
            "Max turnaround increase against uncapped EASY (starvation)",
            "max turnaround increase",
            lambda: pl.col("p_max_turnaround_increase"),
            0.0,
            "Fig. 7c",
        ),
        MetricFigure(
            "share_started_in_window",
            "Share of the workload's jobs started inside the power window",
            "jobs started in the window",
            lambda: pl.col("p_share_started_in_window"),
            None,
            "Fig. 7d",
        ),
        MetricFigure(
            "max_instantaneous_break",
            "Largest instantaneous cap break in the window",
            "max dynamic power / cap − 1",
            lambda: pl.col("p_max_instantaneous_break"),
            0.0,
            "",
        ),
    )
}


def _layout(estimators: list[str], checks: dict[str, str]) -> tuple[list[float], list[tuple[float, str]]]:
    """Box positions (a gap between checks, so that a check's sources stand together) and one tick per check."""
    positions: list[float] = []
    ticks: list[tuple[str, list[float]]] = []
    x, previous = 0.0, None
    for est in estimators:
        check = checks[est]
        if previous is not None:
            x += 1.0 if check == previous else 1.6
        positions.append(x)
        if check != previous:
            ticks.append((check, []))
        ticks[-1][1].append(x)
        previous = check
    return positions, [(float(np.mean(xs)), check) for check, xs in ticks]


def plot_metric(results: pl.DataFrame, key: str, out_dir: str | Path, *, ncols: int = 2) -> list[Path]:
    """Box plots of one metric of :data:`METRICS` per estimator, over workload windows (dots = runs), one facet
    per cap and policy, wrapped ``ncols`` to a row; colour = power check (:data:`CHECK_COLOURS`), hatched =
    predicted. When one estimator (naive) dwarfs the others the axis is symmetric-log, linear near zero. Writes
    ``<key>.png`` and ``<key>.svg``."""
    spec = METRICS[key]
    runs = capped_runs(results)
    if runs.is_empty():
        raise CampaignError("no finished capped run to plot")
    runs = runs.with_columns(spec.value().cast(pl.Float64).alias("_y"))
    estimators = estimator_order(runs)
    pairs = dict(runs.select("estimator", "check").unique().rows())
    sources = dict(runs.select("estimator", "source").unique().rows())
    positions, ticks = _layout(estimators, pairs)
    caps = sorted(runs["cap"].unique().to_list())
    policies = sorted(runs["policy"].unique().to_list())
    cells = [(p, c) for p in policies for c in caps]
    nrows, cols = grid_shape(len(cells), ncols)
    width = max(3.6, 0.42 * len(estimators) + 1.4)
    fig = Figure(figsize=(width * cols + 0.8, 3.3 * nrows + 1.6), layout="constrained")
    axes = fig.subplots(nrows, cols, sharey=True, squeeze=False).ravel()
    per_est = {e: runs.filter(pl.col("estimator") == e)["_y"].drop_nulls().drop_nans().to_numpy() for e in estimators}
    linthresh = dwarf_ratio(per_est) if spec.reference != "cap" else None
    rng = np.random.default_rng(0)
    for ax, (policy, cap) in zip(axes, cells, strict=False):
        cell = runs.filter((pl.col("policy") == policy) & (pl.col("cap") == cap))
        data, where, est_here = [], [], []
        for est, x in zip(estimators, positions, strict=True):
            y = cell.filter(pl.col("estimator") == est)["_y"].drop_nulls().drop_nans().to_numpy()
            if y.size:
                data.append(y)
                where.append(x)
                est_here.append(est)
        if data:
            boxes = ax.boxplot(
                data,
                positions=where,
                widths=0.7,
                showfliers=False,
                patch_artist=True,
                medianprops={"color": "black", "linewidth": 1.4},
            )
            for patch, est in zip(boxes["boxes"], est_here, strict=True):
                patch.set_facecolor(check_colour(pairs[est]))
                patch.set_alpha(0.6)
                if sources[est] == "predicted":
                    patch.set_hatch(PREDICTED_HATCH)
            for y, x, est in zip(data, where, est_here, strict=True):
                jitter = rng.uniform(-0.18, 0.18, y.size)
                ax.scatter(
                    x + jitter, y, s=9, color=check_colour(pairs[est]), edgecolors="black", linewidths=0.3, zorder=3
                )
        if spec.reference == "cap":
            ax.axhline(cap, color="black", linewidth=1.5, zorder=2)
        elif spec.reference is not None:
            ax.axhline(spec.reference, color="grey", linewidth=0.9, linestyle="--", zorder=1)
        ax.set_xticks([t for t, _ in ticks], [c for _, c in ticks], rotation=30, ha="right")
        ax.set_xlim(positions[0] - 0.8, positions[-1] + 0.8)
        if linthresh is not None:
            symlog(ax, linthresh)
        else:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"cap {cap:g}" + (f" · {policy}" if len(policies) > 1 else ""), fontsize=10)
    for ax in axes[len(cells) :]:
        ax.set_visible(False)
    for r in range(nrows):
        axes[r * cols].set_ylabel(spec.ylabel)
    checks_present = [c for c in CHECK_COLOURS if c in set(pairs.values())] + sorted(
        set(pairs.values()) - set(CHECK_COLOURS)
    )
    handles: list[Artist] = [
        Patch(facecolor=check_colour(c), alpha=0.6, edgecolor="black", label=c) for c in checks_present
    ]
    present = set(sources.values())
    if "real" in present:
        handles.append(Patch(facecolor="white", edgecolor="black", label="real values"))
    if "predicted" in present:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch=PREDICTED_HATCH, label="predicted values"))
    if spec.reference == "cap":
        handles.append(Line2D([], [], color="black", linewidth=1.5, label="cap"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5), frameon=False)
    windows = runs["workload"].n_unique()
    window = hours_label(float(runs["power_window"][0])) if "power_window" in runs.columns else "power"
    policy_note = f" ({policies[0]})" if len(policies) == 1 else ""
    scale = f" — symmetric-log axis (linear below ±{linthresh * 100:g}%)" if linthresh else ""
    fig.suptitle(
        f"{spec.title}{policy_note}\nboxes over {windows} workload window(s), dots = runs; "
        f"{window} power window" + (f" — paper 000 {spec.paper}" if spec.paper else "") + scale,
        fontsize=11,
    )
    return save_figure(fig, out_dir, key)


#: Fig. 7's four panels: (metric expression, title, y label, reference) — a, b, c, d.
POLICY_PANELS = (
    (
        lambda: pl.col("p_power_utilisation") * pl.col("cap"),
        "(a) mean power in the window",
        "% of the dynamic range",
        "cap",
    ),
    (
        lambda: -pl.col("p_turnaround_increase"),
        "(b) mean turnaround improvement vs EASY",
        "improvement (higher is better)",
        0.0,
    ),
    (
        lambda: pl.col("p_max_turnaround_increase"),
        "(c) max turnaround increase vs EASY",
        "increase (lower is better)",
        0.0,
    ),
    (lambda: pl.col("p_share_started_in_window"), "(d) jobs started in the window", "% of the workload's jobs", None),
)


def plot_policies(
    results: pl.DataFrame, out_dir: str | Path, *, labels: dict[str, str] | None = None, stem: str = "policies"
) -> list[Path]:
    """Paper 000 Fig. 7: the scheduling policies at one cap and check, four panels (a–d) in a 2 × 2 grid, one box
    per policy and source (real plain, predicted hatched), one colour per policy in every panel."""
    runs = capped_runs(results)
    if runs.is_empty():
        raise CampaignError("no finished capped run to plot")
    labels = labels or {}
    policies = list(dict.fromkeys(runs["policy"].to_list()))
    sources = [s for s in ("real", "predicted") if s in set(runs["source"].to_list())]
    palette = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"]
    colours = {p: palette[k % len(palette)] for k, p in enumerate(policies)}
    fig = Figure(figsize=(11, 8.2), layout="constrained")
    axes = fig.subplots(2, 2).ravel()
    rng = np.random.default_rng(0)
    cap = float(runs["cap"][0])
    for ax, (value, title, ylabel, reference) in zip(axes, POLICY_PANELS, strict=True):
        frame = runs.with_columns(value().cast(pl.Float64).alias("_y"))
        data, where, style = [], [], []
        for i, policy in enumerate(policies):
            for j, source in enumerate(sources):
                y = (
                    frame.filter((pl.col("policy") == policy) & (pl.col("source") == source))["_y"]
                    .drop_nulls()
                    .drop_nans()
                    .to_numpy()
                )
                if y.size:
                    data.append(y)
                    where.append(i * (len(sources) + 0.6) + j)
                    style.append((policy, source))
        boxes = ax.boxplot(
            data,
            positions=where,
            widths=0.75,
            showfliers=False,
            patch_artist=True,
            medianprops={"color": "black", "linewidth": 1.4},
        )
        for patch, (policy, source) in zip(boxes["boxes"], style, strict=True):
            patch.set_facecolor(colours[policy])
            patch.set_alpha(0.6)
            if source == "predicted":
                patch.set_hatch(PREDICTED_HATCH)
        for y, x, (policy, _) in zip(data, where, style, strict=True):
            ax.scatter(
                x + rng.uniform(-0.18, 0.18, y.size),
                y,
                s=9,
                color=colours[policy],
                edgecolors="black",
                linewidths=0.3,
                zorder=3,
            )
        if reference == "cap":
            ax.axhline(cap, color="black", linewidth=1.5, zorder=2)
        elif reference is not None:
            ax.axhline(reference, color="grey", linewidth=0.9, linestyle="--", zorder=1)
        centres = [i * (len(sources) + 0.6) + (len(sources) - 1) / 2 for i in range(len(policies))]
        ax.set_xticks(centres, [labels.get(p, p) for p in policies], rotation=15)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    handles: list[Artist] = [Patch(facecolor="white", edgecolor="black", label="real values")]
    if "predicted" in sources:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch=PREDICTED_HATCH, label="predicted values"))
    handles.append(Line2D([], [], color="black", linewidth=1.5, label="cap"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False)
    checks = ", ".join(sorted(set(runs["check"].to_list())))
    fig.suptitle(
        f"Scheduling policies at cap {cap:g} with {checks} — paper 000 Fig. 7\nboxes over "
        f"{runs['workload'].n_unique()} workload window(s), dots = runs",
        fontsize=11,
    )
    return save_figure(fig, out_dir, stem)
