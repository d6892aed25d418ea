"""Figures of the RMAP configuration model's accuracy (paper 004 Figs. 6–7); the only RMAP platform module that
imports matplotlib, so the data and the model load without it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from wattsched.core.atomic import atomic_figure
from wattsched.studies.rmap.calibration import fig2_power
from wattsched.studies.rmap.data import CAB_DATA, PAPER_FIG2, PAPER_TABLE2, SP_MZ_CLASS_C, cab_data_set

__all__ = ["write_model_figures"]


def _save(fig: Figure, out_dir: Path, stem: str) -> list[Path]:
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    atomic_figure(fig, paths[0], dpi=130)
    atomic_figure(fig, paths[1])
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


def write_calibration_figure(out_dir: str | Path) -> list[Path]:
    """The Cab stand-in against the paper's published measurements (PNG + SVG): Fig. 2's socket power per app, and
    Table 2's SP-MZ configurations as time and power relative to C1, for both ``cab_data`` parameter sets."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    colours = {"calibrated": "tab:blue", "synthetic-v1": "0.6"}
    fig = Figure(figsize=(12, 4.4), layout="constrained")
    ax_fig2, ax_t2 = fig.subplots(1, 2, width_ratios=(1.5, 1))
    powers = {name: fig2_power(name) for name in CAB_DATA}
    apps = list(powers[CAB_DATA[0]])
    x = np.arange(len(apps))
    width = 0.38
    for k, name in enumerate(CAB_DATA):
        ax_fig2.bar(x + (k - 0.5) * width, [powers[name][a] for a in apps], width, color=colours[name], label=name)
    for app in ("nsc", "sp-mz"):
        ax_fig2.plot(apps.index(app), PAPER_FIG2[app], marker="*", markersize=13, color="black", linestyle="none")
    ax_fig2.axhline(PAPER_FIG2["mean"], color="black", linestyle="--", linewidth=0.9)
    ax_fig2.plot([], [], marker="*", color="black", linestyle="--", label="paper (NSC, SP-MZ; mean)")
    ax_fig2.axhline(115.0, color="tab:red", linewidth=0.8)
    ax_fig2.annotate("115 W allocated", (0.01, 115.0), xycoords=("axes fraction", "data"), fontsize=8,
                     color="tab:red", va="bottom")  # fmt: skip
    ax_fig2.set_xticks(x, apps)
    ax_fig2.set_ylim(0.0, 125.0)
    ax_fig2.set_ylabel("socket power (W)")
    ax_fig2.set_title("Fig. 2: 64 nodes × 16 cores, 115 W (noise-free)", fontsize=10)
    ax_fig2.legend(fontsize=8, loc="lower right")
    ax_fig2.grid(axis="y", alpha=0.3)

    cfg = list(PAPER_TABLE2.values())
    n, c, p = (np.array([row[i] for row in cfg]) for i in range(3))
    paper_t = np.array([row[4] for row in cfg])
    paper_p = np.array([row[3] for row in cfg])
    series = [("paper (class C)", paper_p / paper_p[0], paper_t / paper_t[0], "black", "*")]
    cal_apps, cal_socket = cab_data_set("calibrated")
    for label, model, socket, colour, marker in (
        ("calibrated, class C", SP_MZ_CLASS_C, cal_socket, colours["calibrated"], "o"),
        ("calibrated, class D", next(a for a in cal_apps if a.name == "sp-mz"), cal_socket, colours["calibrated"],
         "s"),
        ("synthetic-v1 (class D)", next(a for a in cab_data_set("synthetic-v1")[0] if a.name == "sp-mz"),
         cab_data_set("synthetic-v1")[1], colours["synthetic-v1"], "s"),
    ):  # fmt: skip
        ev = model.evaluate(n, c, p, socket=socket)
        series.append((label, ev["power"] / ev["power"][0], ev["time"] / ev["time"][0], colour, marker))
    for label, px, ty, colour, marker in series:
        ax_t2.plot(px, ty, marker=marker, color=colour, linestyle="none", label=label, markersize=9 if marker == "*"
                   else 6)  # fmt: skip
        for name, xi, yi in zip(PAPER_TABLE2, px, ty, strict=True):
            ax_t2.annotate(name, (xi, yi), textcoords="offset points", xytext=(4, 3), fontsize=7, color=colour)
    ax_t2.set_xlabel("total power / C1's")
    ax_t2.set_ylabel("time / C1's")
    ax_t2.set_title(
        "Table 2: SP-MZ at C1 (6×16, 115 W),\nC2 (8×12, 65 W), C3 (8×10, 80 W); relative to C1", fontsize=10
    )
    ax_t2.legend(fontsize=8)
    ax_t2.grid(alpha=0.3)
    fig.suptitle("The Cab stand-in against the paper's published measurements (cab_data options)")
    return _save(fig, out, "rmap_cab_calibration")
