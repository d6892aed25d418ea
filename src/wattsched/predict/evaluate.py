"""How good are the predictions: MAE overall, per user, with and without user history, per job class, and the
split between under- and over-prediction (paper 000 Fig. 3; paper 001 §4), plus box plots.

Under-prediction is the dangerous side for a scheduler (a power check passes a job that then draws more, an
expected end passes before the job ends), so it is reported apart: its share of jobs and its mean magnitude.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wattsched.core.atomic import atomic_figure

#: Job classes by true runtime (paper 001: short < 1 h, long > 12 h).
RUNTIME_CLASSES = (("short", 0.0, 3600.0), ("medium", 3600.0, 43200.0), ("long", 43200.0, np.inf))

POWER_METRICS = ("power_mean", "power_max", "power_std")


def _class_of(runtime: np.ndarray) -> np.ndarray:
    labels = np.empty(runtime.size, dtype=object)
    for name, lo, hi in RUNTIME_CLASSES:
        labels[(runtime >= lo) & (runtime < hi)] = name
    return labels


def error_stats(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    """MAE, median absolute error, and the under-/over-prediction split over the pairs where both are known."""
    pred = np.asarray(pred, dtype=np.float64)
    true = np.asarray(true, dtype=np.float64)
    ok = np.isfinite(pred) & np.isfinite(true)
    err = pred[ok] - true[ok]
    n = int(err.size)
    if n == 0:
        return {
            "jobs": 0,
            "mae": float("nan"),
            "median_ae": float("nan"),
            "under_share": float("nan"),
            "under_mean": float("nan"),
            "over_share": float("nan"),
            "over_mean": float("nan"),
        }
    under, over = err < 0, err > 0
    return {
        "jobs": n,
        "mae": float(np.abs(err).mean()),
        "median_ae": float(np.median(np.abs(err))),
        "under_share": float(under.mean()),
        "under_mean": float(-err[under].mean()) if under.any() else 0.0,
        "over_share": float(over.mean()),
        "over_mean": float(err[over].mean()) if over.any() else 0.0,
    }


def per_user_mae(pred: np.ndarray, true: np.ndarray, users: np.ndarray) -> np.ndarray:
    """One MAE per user (users with at least one evaluable job), in user order."""
    frame = pl.DataFrame({"u": users, "e": np.abs(np.asarray(pred, float) - np.asarray(true, float))})
    frame = frame.filter(pl.col("e").is_finite() & pl.col("u").is_not_null())
    return frame.group_by("u").agg(pl.col("e").mean()).sort("u")["e"].to_numpy()


def _distribution(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {"users": 0, "median": float("nan"), "q1": float("nan"), "q3": float("nan")}
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return {"users": int(values.size), "median": float(med), "q1": float(q1), "q3": float(q3)}


def evaluate(
    jobs: pl.DataFrame,
    pred: np.ndarray,
    true: np.ndarray,
    *,
    has_history: np.ndarray | None = None,
) -> dict[str, Any]:
    """The full report for one predicted quantity: overall, with/without user history, per runtime class,
    and the distribution over users of the per-user MAE (headline = its median, as paper 000 reports)."""
    users = jobs["user_id"].to_numpy() if "user_id" in jobs.columns else np.full(jobs.height, None)
    report: dict[str, Any] = {"overall": error_stats(pred, true)}
    if has_history is not None:
        has = np.asarray(has_history, dtype=bool)
        report["with_history"] = error_stats(pred[has], true[has])
        report["without_history"] = error_stats(pred[~has], true[~has])
    classes = _class_of(jobs["runtime"].to_numpy().astype(np.float64))
    report["by_class"] = {
        name: error_stats(pred[classes == name], true[classes == name]) for name, _, _ in RUNTIME_CLASSES
    }
    report["per_user_mae"] = _distribution(per_user_mae(pred, true, users))
    return report


def evaluate_power(
    jobs: pl.DataFrame, predictions: pl.DataFrame, has_history: np.ndarray | None = None
) -> dict[str, Any]:
    """Per metric (per-node W): the :func:`evaluate` report of ``pred_<metric>`` against the measured value.
    The with/without-history split uses ``has_history`` (default: the predictions' own flag), so that a
    baseline is judged on the same jobs as the predictor it is compared with."""
    has = has_history
    if has is None and "has_user_history" in predictions.columns:
        has = predictions["has_user_history"].to_numpy()
    out = {}
    for metric in POWER_METRICS:
        col = f"pred_{metric}"
        if col in predictions.columns and metric in jobs.columns:
            out[metric] = evaluate(
                jobs,
                predictions[col].to_numpy().astype(float),
                jobs[metric].cast(pl.Float64).fill_null(np.nan).to_numpy(),
                has_history=has,
            )
    return out


def evaluate_runtime(jobs: pl.DataFrame, predictions: pl.DataFrame) -> dict[str, Any]:
    """The :func:`evaluate` report of ``pred_runtime`` against the true runtime (seconds), plus the walltime's
    own report for comparison and, for the rule cascade, the share of jobs per rule."""
    true = jobs["runtime"].to_numpy().astype(float)
    report = evaluate(jobs, predictions["pred_runtime"].to_numpy().astype(float), true)
    report["walltime"] = error_stats(jobs["walltime"].to_numpy().astype(float), true)
    if "pred_runtime_rule" in predictions.columns:
        counts = predictions["pred_runtime_rule"].value_counts().sort("pred_runtime_rule")
        report["rule_share"] = {int(r): c / jobs.height for r, c in counts.iter_rows()}
    return report


def boxplot_per_user(
    reports: Mapping[str, np.ndarray], path: Path | str, *, title: str, ylabel: str, showfliers: bool = False
) -> Path:
    """Box plot of the per-user MAE of several predictors (paper 000 Fig. 3), written as PNG (or by extension)."""
    import matplotlib  # heavy (≈0.3 s), only for this figure

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg")

    path = Path(path)
    names: Sequence[str] = list(reports)
    fig, ax = plt.subplots(figsize=(1.6 * max(len(names), 2) + 1.5, 4.0))
    ax.boxplot([reports[n] for n in names], showfliers=showfliers)
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
