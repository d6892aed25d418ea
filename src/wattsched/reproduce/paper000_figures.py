"""Paper 000's Figs. 2–3 regenerated from the reproduction's own data, with the paper's axes.

- Fig. 2, "Distributions of the actual mean, maximum, and standard deviation of power consumption per node of the
  filtered jobs": one panel per quantity, power per node (W) against the density of jobs, one line per seed.
- Fig. 3, "Mean Absolute Error of the mean, maximum, and standard deviation power consumption prediction
  methods": one panel per quantity, a standard box plot (boxes from the first to the third quartile, whiskers to
  the furthest point within 1.5 IQR, as the paper's Fig. 4 caption defines them) of each user's MAE (W) per
  prediction method, seeds pooled, with the paper's medians (C000-25/26 of the catalogue) marked beside ours.

Both are drawn on the synthetic Marconi100-like stand-in (Marconi100's 2022 per-job power is not offline), so the
titles say so: the shapes are the generator's, not the paper's data (docs/reproduce-000.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from wattsched.reproduce.claims import claim

#: The quantities of Figs. 2–3, in the paper's order, with the column of the measured value.
QUANTITIES = (("mean", "power_mean"), ("max", "power_max"), ("std", "power_std"))
#: The methods' labels on Fig. 3's axis, as the paper names them (§6.2).
METHOD_LABELS = {
    "history": "jobs history",
    "ml-linear": "linear regression",
    "ml-sgd": "SGD regression",
    "ml-forest": "random forest",
    "ml-svr": "linear SVR",
}
#: The catalogue claims that hold the paper's median per-user MAE of each method (mean / max / std), marked on Fig. 3.
PAPER_MEDIANS = {"history": "C000-25", "ml-linear": "C000-26"}
#: Bins of Fig. 2's densities, in W per node (the Marconi100 node power range, 0–2,100 W by the platform).
BINS = 60


def figure_2(predictions: pl.DataFrame, folder: Path) -> list[Path]:
    """Fig. 2: the density of each job's measured mean, max and std power per node, one line per seed."""
    from matplotlib.figure import Figure

    from wattsched.plots.style import save_figure

    fig = Figure(figsize=(11, 3.4), layout="constrained")
    axes = fig.subplots(1, len(QUANTITIES))
    seeds = sorted(predictions["seed"].unique().to_list())
    for ax, (name, column) in zip(axes, QUANTITIES, strict=True):
        values = predictions[column].cast(pl.Float64).drop_nulls().to_numpy()
        edges = np.linspace(0.0, float(np.nanmax(values)) if values.size else 1.0, BINS + 1)
        for seed in seeds:
            v = predictions.filter(pl.col("seed") == seed)[column].cast(pl.Float64).drop_nulls().to_numpy()
            density, _ = np.histogram(v, bins=edges, density=True)
            ax.step(edges[:-1], density, where="post", label=f"seed {seed}", linewidth=1.2)
        ax.set_title(f"{name} power per node")
        ax.set_xlabel("power per node (W)")
        ax.set_ylabel("density of jobs")
        ax.set_xlim(left=0.0)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"Fig. 2 — measured power per node of each job ({predictions.height:,} jobs; synthetic Marconi100-like "
        "stand-in)",
        fontsize=10,
    )
    return save_figure(fig, folder, "fig2_power_distributions")


def figure_3(user_mae: pl.DataFrame, folder: Path) -> list[Path]:
    """Fig. 3: each user's MAE of the predicted mean, max and std power, one box per method, seeds pooled."""
    from matplotlib.figure import Figure

    from wattsched.plots.style import save_figure

    fig = Figure(figsize=(11, 3.6), layout="constrained")
    axes = fig.subplots(1, len(QUANTITIES))
    methods = [m for m in METHOD_LABELS if m in set(user_mae["method"].to_list())]
    for ax, (name, _) in zip(axes, QUANTITIES, strict=True):
        data = [
            user_mae.filter((pl.col("metric") == name) & (pl.col("method") == m))["mae"].drop_nans().to_numpy()
            for m in methods
        ]
        ax.boxplot(data, whis=1.5, showfliers=True, flierprops={"markersize": 2})
        for k, m in enumerate(methods, start=1):
            if m in PAPER_MEDIANS:
                c = claim(PAPER_MEDIANS[m])
                paper = c.target[c.labels.index(name)]
                ax.plot([k], [paper], marker="D", color="tab:red", linestyle="none", label="paper's median")
        ax.set_xticks(range(1, len(methods) + 1), [METHOD_LABELS[m] for m in methods], rotation=15)
        for k, values in enumerate(data, start=1):
            if values.size:
                ax.annotate(
                    f"{np.median(values):.1f}", (k + 0.27, float(np.median(values))), fontsize=7, ha="left", va="center"
                )
        ax.set_title(f"{name} power")
        ax.set_ylabel("MAE per user (W)")
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        axes[0].legend(handles[:1], labels[:1], fontsize=8)
    per_seed = user_mae.filter((pl.col("method") == "history") & (pl.col("metric") == "mean")).group_by("seed").len()
    users = " / ".join(str(n) for n in per_seed.sort("seed")["len"].to_list())
    fig.suptitle(
        f"Fig. 3 — per-user MAE of the power predictions (users per seed: {users}; seeds pooled; our medians "
        "annotated; synthetic Marconi100-like stand-in)",
        fontsize=10,
    )
    return save_figure(fig, folder, "fig3_prediction_mae")


def draw_predictor_figures(predictions: pl.DataFrame | None, user_mae: pl.DataFrame, folder: Path) -> list[Path]:
    """Figs. 2–3 as PNG (the SVG beside each), or none where the data is missing."""
    paths: list[Path] = []
    if predictions is not None and not predictions.is_empty():
        paths += figure_2(predictions, folder)
    if not user_mae.is_empty():
        paths += figure_3(user_mae, folder)
    return [p for p in paths if p.suffix == ".png"]
