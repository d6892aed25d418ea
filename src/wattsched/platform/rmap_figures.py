"""Figures of the RMAP configuration model's accuracy (paper 004 Figs. 6–7); the only RMAP platform module that
imports matplotlib, so the data and the model load without it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.patches import Patch

__all__ = ["write_model_figures"]


def _save(fig: Figure, out_dir: Path, stem: str) -> list[Path]:
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=130)
    fig.savefig(paths[1])
    return paths


def write_model_figures(errors: pl.DataFrame, out_dir: str | Path) -> list[Path]:
    """Figs. 6–7 equivalents (PNG + SVG): error boxes per app, and over/under-prediction histograms.

    Drawn on bare :class:`Figure` objects (no pyplot) so plotting changes no global state and needs no display.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    apps = errors["app"].unique(maintain_order=True).to_list()
    per_app = {app: errors.filter(pl.col("app") == app) for app in apps}

    fig = Figure(figsize=(min(18.0, max(9.0, 0.7 * len(apps) * 3)), 4.4), layout="constrained")
    axes = fig.subplots(1, 3)
    panels = (
        ("time_abs_err", 1.0, "|time error| (s)", ()),
        ("time_rel_err", 100.0, "|time error| (%)", ((7.7, "paper median < 7.7%"), (13.2, "paper Q3 < 13.2%"))),
        ("power_rel_err", 100.0, "|power error| (%)", ((10.0, "10%"),)),
    )
    for ax, (column, scale, title, refs) in zip(axes, panels, strict=True):
        data = [np.abs(per_app[a][column].to_numpy()) * scale for a in apps]
        ax.boxplot(data, tick_labels=apps, whis=(0, 100), widths=0.6)
        for value, text in refs:
            ax.axhline(value, color="tab:red", linestyle="--", linewidth=0.9)
            ax.annotate(text, (0.01, value), xycoords=("axes fraction", "data"), fontsize=7, color="tab:red",
                        va="bottom")  # fmt: skip
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=45)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Configuration model errors per application ({errors.height} points; whiskers = min/max) — paper "
                 "004 Fig. 6")  # fmt: skip
    paths = _save(fig, out, "rmap_model_error_quartiles")

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, target in zip(axes, ("time", "power"), strict=True):
        rel = errors[f"{target}_rel_err"].to_numpy() * 100.0
        lo, hi = min(-20.0, float(np.floor(rel.min()))), max(20.0, float(np.ceil(rel.max())))
        bins = np.arange(2.0 * math.floor(lo / 2.0), 2.0 * math.ceil(hi / 2.0) + 2.0, 2.0)
        ax.axvspan(bins[0], 0.0, color="tab:orange", alpha=0.12)
        ax.axvspan(0.0, bins[-1], color="tab:blue", alpha=0.10)
        ax.hist(rel, bins=bins, color="0.35", edgecolor="white")
        if target == "power":
            ax.axvline(-10.0, color="tab:red", linestyle="--", linewidth=0.9)
        under10 = float((rel >= -10.0).mean()) * 100.0
        ax.set_title(
            f"{target}: under-prediction ≤ 10% for {under10:.1f}% of points\nworst under-prediction "
            f"{max(0.0, -rel.min()):.1f}%, worst over-prediction {max(0.0, rel.max()):.1f}%",
            fontsize=10,
        )
        ax.set_xlabel("relative error (predicted − true)/true (%)")
        ax.set_ylabel("points")
        ax.legend(handles=[Patch(color="tab:orange", alpha=0.3, label="under-predicted"),
                           Patch(color="tab:blue", alpha=0.3, label="over-predicted")], fontsize=8)  # fmt: skip
    fig.suptitle(f"Range of prediction errors ({errors.height} points) — paper 004 Fig. 7")
    return paths + _save(fig, out, "rmap_model_error_histograms")
