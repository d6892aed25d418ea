"""Paper 002's figures (Figs. 3–5 equivalents) from an EAMC grid's results: one colour per policy in every
figure, facets per app mix and t_weight. Fig. 6 (system p1/p3) needs the p3 (Gold 6148) model data, which are not
public."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from wattsched.core.atomic import atomic_figure
from wattsched.studies.eamc.policies import EAMC_POLICIES
from wattsched.studies.eamc.results import METRICS, improvement

#: One colour and one label per policy, the same in every figure.
POLICY_STYLE = {
    "base-slurm": ("#7f7f7f", "Base Slurm"),
    "min-runtime": ("#1f77b4", "Min runtime"),
    "min-energy": ("#2ca02c", "Min energy"),
    "eamc-reorder": ("#ff7f0e", "Reorder"),
    "eamc-priorityinc": ("#9467bd", "PriorityInc"),
    "eamc-priorityinc-v": ("#d62728", "PriorityInc-V"),
}
METRIC_LABELS = {
    "makespan": "makespan",
    "mean_response": "response",
    "sum_energy": "energy",
    "sum_runtime": "runtime",
    "mean_response_p1": "response p1",
    "mean_response_p2": "response p2",
    "share_optimal": "both partitions",
    "share_optimal_p2": "jobs run on p2",
}


def _bars(ax: Any, frame: pl.DataFrame, groups: list[str], policies: list[str], floor: float | None = None) -> None:
    """Grouped bars: x = ``groups`` (metric columns of ``frame``), one bar per policy: the mean over the rows
    (seeds) with a min–max whisker. Bars below ``floor`` are cut there and labelled with their value."""
    width = 0.8 / max(len(policies), 1)
    for i, pol in enumerate(policies):
        sub = frame.filter(pl.col("policy") == pol)
        if not sub.height:
            continue
        colour, label = POLICY_STYLE[pol]
        x = np.arange(len(groups)) + (i - (len(policies) - 1) / 2) * width
        mean = np.array([sub[g].mean() for g in groups], dtype=float)
        lo = np.array([sub[g].min() for g in groups], dtype=float)
        hi = np.array([sub[g].max() for g in groups], dtype=float)
        shown = mean if floor is None else np.maximum(mean, floor)
        ax.bar(x, shown, width, color=colour, label=label)
        whisk = np.isfinite(lo) & (floor is None or lo > floor)
        ax.errorbar(
            x[whisk],
            mean[whisk],
            yerr=[mean[whisk] - lo[whisk], hi[whisk] - mean[whisk]],
            fmt="none",
            ecolor="black",
            elinewidth=0.7,
            capsize=1.5,
        )
        if floor is not None:
            for xx, m in zip(x, mean, strict=True):
                if m < floor:
                    ax.text(xx, floor, f"{m:.0f}", rotation=90, ha="center", va="bottom", fontsize=6.5, color="white")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(np.arange(len(groups)), [METRIC_LABELS.get(g, g) for g in groups])
    ax.grid(axis="y", lw=0.3, alpha=0.6)


def _legend(fig: Figure, policies: list[str]) -> None:
    handles = [Patch(color=POLICY_STYLE[p][0], label=POLICY_STYLE[p][1]) for p in policies]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False, fontsize=8)


#: The figures :func:`draw_eamc_figures` draws, by file stem, in its order.
EAMC_FIGURES = ("fig3_vs_base_slurm", "fig4_vs_min_runtime", "fig4b_response_per_partition", "fig5_optimal_partition")


def draw_eamc_figures(results: pl.DataFrame, report: str | Path, names: Collection[str] = EAMC_FIGURES) -> list[Path]:
    """Figs. 3–5 equivalents (PNG, SVG) from a grid's results (one row per run): bars are means over seeds with
    min–max whiskers; each policy has one colour in every figure; facets wrap (rows = mixes, columns =
    t_weight); a bar far below the others (Base Slurm's response) is cut at the axis floor and labelled.
    ``names`` (of :data:`EAMC_FIGURES`) draws only those, so that a reproduction draws them on two workers."""
    unknown = set(names) - set(EAMC_FIGURES)
    if unknown:
        raise ValueError(f"unknown EAMC figure(s) {sorted(unknown)}; known: {', '.join(EAMC_FIGURES)}")
    report = Path(report)
    report.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    policies = [p for p in EAMC_POLICIES if p in set(results["policy"])]
    mixes = sorted(set(results["mix"]))
    tws = sorted(set(results["t_weight"]))

    def save(fig: Figure, name: str) -> None:
        for ext in ("png", "svg"):
            atomic_figure(fig, report / f"{name}.{ext}", dpi=130, bbox_inches="tight")
            paths.append(report / f"{name}.{ext}")

    def faceted(
        frame: pl.DataFrame,
        shown: list[str],
        groups: list[str],
        rows: list[str],
        title: str,
        ylabel: str,
        name: str,
        floor: float | None = None,
    ) -> None:
        if name not in names:
            return
        fig = Figure(figsize=(4.6 * len(tws), 2.9 * len(rows) + 0.5), layout="constrained")
        axes = fig.subplots(len(rows), len(tws), squeeze=False, sharey=True)
        for r, mix in enumerate(rows):
            for c, tw in enumerate(tws):
                ax = axes[r][c]
                _bars(ax, frame.filter((pl.col("mix") == mix) & (pl.col("t_weight") == tw)), groups, shown, floor)
                ax.set_title(f"{mix}, t_weight {tw:g}", fontsize=9)
                if c == 0:
                    ax.set_ylabel(ylabel, fontsize=8)
        if floor is not None:
            axes[0][0].set_ylim(bottom=floor)
        _legend(fig, shown)
        fig.suptitle(title)
        save(fig, name)

    if "base-slurm" in policies and "W13" in mixes:
        vs_base = improvement(results, "base-slurm").filter(pl.col("mix") == "W13")
        faceted(
            vs_base,
            [p for p in policies if p != "base-slurm"],
            list(METRICS),
            ["W13"],
            "Savings over Base Slurm, W13 (paper Fig. 3)",
            "improvement over Base Slurm (%)",
            "fig3_vs_base_slurm",
        )
    if "min-runtime" in policies:
        vs_rt = improvement(results, "min-runtime", (*METRICS, "mean_response_p1", "mean_response_p2"))
        shown = [p for p in policies if p != "min-runtime"]
        low = float(vs_rt.filter(pl.col("policy") != "base-slurm").select(METRICS).min().min_horizontal()[0])
        floor = min(-60.0, 10 * np.floor(low / 10) - 10)
        faceted(
            vs_rt,
            shown,
            list(METRICS),
            mixes,
            "Improvement over Min runtime (paper Fig. 4)",
            "improvement over Min runtime (%)",
            "fig4_vs_min_runtime",
            floor,
        )
        faceted(
            vs_rt,
            [p for p in shown if p != "base-slurm"],
            ["mean_response", "mean_response_p1", "mean_response_p2"],
            mixes,
            "Response time per partition against Min runtime",
            "improvement over Min runtime (%)",
            "fig4b_response_per_partition",
            floor,
        )
    share = results.with_columns(pl.col("share_optimal", "share_optimal_p2") * 100)
    faceted(
        share,
        policies,
        ["share_optimal", "share_optimal_p2"],
        mixes,
        "Jobs on their optimal partition (paper Fig. 5)",
        "% of jobs on their optimal partition",
        "fig5_optimal_partition",
    )
    return paths
