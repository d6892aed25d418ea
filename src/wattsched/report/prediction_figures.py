"""Prediction errors of a campaign's power predictor (paper 000's Fig. 3): per-user MAE against a global-mean
baseline, and predicted against true values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from wattsched.core.store import CampaignError, CampaignLayout, read_store_json
from wattsched.plots.style import (
    save_figure,
)
from wattsched.predict.evaluate import POWER_METRICS, per_user_mae

# ------------------------------------------------------------------------------------------ prediction errors


def global_mean_baseline(predictions: pl.DataFrame, metric: str) -> np.ndarray:
    """The constant predictor: every job gets the mean of ``metric`` over all jobs. A predictor worth using beats
    it; it is the floor of paper 000's Fig. 3 comparison."""
    true = predictions[metric].cast(pl.Float64).fill_null(np.nan).to_numpy()
    return np.full(true.size, np.nanmean(true) if np.isfinite(true).any() else np.nan)


def predicted_metrics(predictions: pl.DataFrame) -> list[str]:
    """The power metrics that have both a true and a predicted column."""
    return [m for m in POWER_METRICS if m in predictions.columns and f"pred_{m}" in predictions.columns]


def per_user_errors(predictions: pl.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """Per metric: the per-user MAE (W per node) of the predictor and of the global-mean baseline."""
    users = predictions["user_id"].to_numpy()
    out = {}
    for m in predicted_metrics(predictions):
        true = predictions[m].cast(pl.Float64).fill_null(np.nan).to_numpy()
        pred = predictions[f"pred_{m}"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        out[m] = {
            "predicted": per_user_mae(pred, true, users),
            "global mean": per_user_mae(global_mean_baseline(predictions, m), true, users),
        }
    return out


def plot_prediction_errors(predictions: pl.DataFrame, out_dir: str | Path, name: str, method: str = "") -> list[Path]:
    """Per-user MAE box plots per metric (paper 000 Fig. 3): the predictor against the global-mean baseline;
    writes ``prediction_mae_<name>.png/.svg``."""
    errors = per_user_errors(predictions)
    if not errors:
        raise CampaignError(f"predictions of {name!r} have no predicted power column")
    fig = Figure(figsize=(3.4 * len(errors) + 0.8, 4.3), layout="constrained")
    axes = fig.subplots(1, len(errors), squeeze=False)[0]
    colours = ["#E69F00", "#999999"]
    for ax, (metric, series) in zip(axes, errors.items(), strict=True):
        labels = list(series)
        boxes = ax.boxplot(
            [series[k] for k in labels],
            widths=0.6,
            showfliers=True,
            patch_artist=True,
            medianprops={"color": "black"},
            flierprops={"markersize": 2, "alpha": 0.4},
        )
        for patch, colour in zip(boxes["boxes"], colours, strict=True):
            patch.set_facecolor(colour)
            patch.set_alpha(0.6)
        medians = [float(np.median(series[k])) if series[k].size else np.nan for k in labels]
        names = [labels[0] + (f" ({method})" if method else ""), labels[1]]
        ax.set_xticks([1, 2], [f"{n}\nmedian {m:.0f} W" for n, m in zip(names, medians, strict=True)])
        ax.set_title(metric.replace("_", " "), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("per-user MAE (W per node)")
    users = max(v["predicted"].size for v in errors.values())
    fig.suptitle(f"Power prediction error per user, {name} ({users:,} users) — paper 000 Fig. 3", fontsize=11)
    return save_figure(fig, out_dir, f"prediction_mae_{name}")


def plot_prediction_scatter(predictions: pl.DataFrame, out_dir: str | Path, name: str) -> list[Path]:
    """Predicted against true per-node power, one hexbin per metric (log counts) with the diagonal; writes
    ``prediction_scatter_<name>.png/.svg``. Jobs without history sit on the fallback's horizontal line."""
    metrics = predicted_metrics(predictions)
    if not metrics:
        raise CampaignError(f"predictions of {name!r} have no predicted power column")
    fig = Figure(figsize=(4.6 * len(metrics) + 0.6, 4.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, m in zip(axes, metrics, strict=True):
        true = predictions[m].cast(pl.Float64).fill_null(np.nan).to_numpy()
        pred = predictions[f"pred_{m}"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        ok = np.isfinite(true) & np.isfinite(pred)
        true, pred = true[ok], pred[ok]
        both = np.concatenate([true, pred])
        top = 1.0
        if both.size:  # the whole range unless a few outliers would squash the rest
            high, typical = float(both.max()), float(np.percentile(both, 99.5))
            top = (high if high <= 1.5 * typical else typical * 1.1) * 1.03
        inside = (true <= top) & (pred <= top)
        hb = ax.hexbin(
            true[inside],
            pred[inside],
            gridsize=55,
            extent=(0, top, 0, top),
            bins="log",
            mincnt=1,
            cmap="magma_r",
            linewidths=0.1,
            rasterized=True,
        )  # thousands of hexagons: a raster in SVG
        if not inside.all():
            ax.text(
                0.98,
                0.02,
                f"{int((~inside).sum()):,} jobs off scale",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize=8,
            )
        ax.plot([0, top], [0, top], color="#0072B2", linewidth=1.0, linestyle="--", label="prediction = truth")
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_box_aspect(1)
        mae = float(np.mean(np.abs(pred - true))) if ok.any() else np.nan
        ax.set_title(f"{m.replace('_', ' ')} — MAE {mae:.0f} W ({int(ok.sum()):,} jobs)", fontsize=10)
        ax.set_xlabel("true (W per node)")
        ax.set_ylabel("predicted (W per node)")
        ax.legend(loc="upper left", fontsize=8, frameon=False)
        fig.colorbar(hb, ax=ax, shrink=0.8, label="jobs")
    fig.suptitle(f"Predicted against true job power, {name}", fontsize=11)
    return save_figure(fig, out_dir, f"prediction_scatter_{name}")


def prediction_files(campaign_dir: str | Path) -> dict[str, tuple[pl.DataFrame, dict[str, Any]]]:
    """Per workload: its prediction table and report (empty when the grid has no ``predicted`` source)."""
    return {name: prediction_file(campaign_dir, name) for name in prediction_names(campaign_dir)}


def prediction_names(campaign_dir: str | Path) -> list[str]:
    """The workloads with a prediction table, in name order."""
    folder = CampaignLayout(Path(campaign_dir)).predictions
    if not folder.exists():
        return []
    return [path.stem for path in sorted(folder.glob("*.parquet")) if not path.name.startswith(".")]


def prediction_file(campaign_dir: str | Path, name: str) -> tuple[pl.DataFrame, dict[str, Any]]:
    """One workload's prediction table and report (the report empty when it has none)."""
    path = CampaignLayout(Path(campaign_dir)).predictions / f"{name}.parquet"
    report_path = path.with_suffix(".json")
    report = read_store_json(report_path, "a prediction report") if report_path.exists() else {}
    if not isinstance(report, dict):
        raise CampaignError(f"{report_path}: a prediction report is a JSON object; this one is not (damaged?)")
    return pl.read_parquet(path), report
