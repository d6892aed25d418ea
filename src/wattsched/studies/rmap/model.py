"""The configuration model of paper 004 (RMAP, [AMBIG-4.1]) and its accuracy statistics (the paper's Figs. 6–7).

Per application and per target y ∈ {ln t, ln P}: OLS on the full degree-2 polynomial of (ln n, ln c, ln p), 10
terms (:data:`CONFIG_MODEL_TERMS`), trained on a seeded random ``sample_share`` (10%) of that application's points.
:func:`fit_config_model` gives the predicted table and per-point errors; :func:`model_error_summary` the paper's
accuracy statistics (§5: time mean < 10%, max < 33%, Q3 < 13.2%, median < 7.7%; power under-prediction ≤ 10% for
96% of points, worst < 15%). The figures are in :mod:`wattsched.studies.rmap.model_figures` (matplotlib).
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import polars as pl

from wattsched.studies.rmap.configurations import ConfigTable, JobDetails

__all__ = ["CONFIG_MODEL_TERMS", "app_rng", "config_features", "fit_config_model", "model_error_summary"]


def app_rng(seed: int, app: str) -> np.random.Generator:
    """A generator per (seed, app), so adding or reordering apps does not change another app's draws."""
    return np.random.default_rng([int(seed), zlib.crc32(app.encode("utf-8"))])


#: The 10 regressors of the degree-2 log-polynomial configuration model ([AMBIG-4.1]).
CONFIG_MODEL_TERMS: tuple[str, ...] = (
    "1", "ln n", "ln c", "ln p", "ln n²", "ln c²", "ln p²", "ln n·ln c", "ln n·ln p", "ln c·ln p",
)  # fmt: skip


def config_features(nodes: np.ndarray, cores: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Design matrix (K × 10) of :data:`CONFIG_MODEL_TERMS` for the given configurations."""
    ln = np.log(np.asarray(nodes, dtype=np.float64))
    lc = np.log(np.asarray(cores, dtype=np.float64))
    lp = np.log(np.asarray(cap, dtype=np.float64))
    return np.column_stack([np.ones_like(ln), ln, lc, lp, ln * ln, lc * lc, lp * lp, ln * lc, ln * lp, lc * lp])


def fit_config_model(details: JobDetails, sample_share: float = 0.1, seed: int = 0) -> tuple[JobDetails, pl.DataFrame]:
    """Fit the configuration model per app and predict every config: (predicted table, per-point errors).

    Each app trains on ``ceil(sample_share · K)`` random points (at least 10, the number of terms, when it has
    them; OLS via least squares, so a degenerate sample still predicts). Errors are signed relative errors
    (predicted − true)/true, positive = over-prediction; ``train`` marks the training points.
    """
    if not 0.0 < sample_share <= 1.0:
        raise ValueError(f"sample_share must be in (0, 1], got {sample_share}")
    tables, frames = [], []
    for app, table in details.items():
        k = len(table)
        size = min(k, max(math.ceil(sample_share * k), len(CONFIG_MODEL_TERMS)))
        train = np.zeros(k, dtype=bool)
        train[app_rng(seed, app).choice(k, size=size, replace=False)] = True
        x = config_features(table.nodes, table.cores, table.cap)
        predicted = {}
        for target in ("time", "power"):
            y = np.log(np.maximum(getattr(table, target), 1e-12))
            coef, *_ = np.linalg.lstsq(x[train], y[train], rcond=None)
            predicted[target] = np.exp(x @ coef)
        tables.append(ConfigTable(app, table.nodes, table.cores, table.cap, predicted["time"], predicted["power"]))
        frames.append(
            pl.DataFrame(
                {
                    "app": [app] * k,
                    "config": np.arange(k, dtype=np.int64),
                    "nodes": table.nodes,
                    "cores": table.cores,
                    "cap": table.cap,
                    "train": train,
                    "time_true": table.time,
                    "time_pred": predicted["time"],
                    "power_true": table.power,
                    "power_pred": predicted["power"],
                }
            )
        )
    errors = pl.concat(frames).with_columns(
        ((pl.col("time_pred") - pl.col("time_true")) / pl.col("time_true")).alias("time_rel_err"),
        ((pl.col("power_pred") - pl.col("power_true")) / pl.col("power_true")).alias("power_rel_err"),
        (pl.col("time_pred") - pl.col("time_true")).alias("time_abs_err"),
    )
    return JobDetails(tables), errors


def model_error_summary(errors: pl.DataFrame, *, include_training: bool = True) -> pl.DataFrame:
    """Per app (and ``all``) and target: quartiles, mean and max of |relative error| and under-prediction stats.

    ``share_under_within_10`` is the share of points whose under-prediction is at most 10% (over-predictions
    count as within), the paper's "96%" figure; ``worst_under`` the largest under-prediction (0 if none). The paper
    reports on the whole dataset, training points included — hence the default.
    """
    data = errors if include_training else errors.filter(~pl.col("train"))
    rows = []
    groups = [(app, data.filter(pl.col("app") == app)) for app in data["app"].unique(maintain_order=True)]
    for app, part in [*groups, ("all", data)]:
        for target in ("time", "power"):
            rel = part[f"{target}_rel_err"].to_numpy()
            if len(rel) == 0:
                continue
            magnitude = np.abs(rel)
            q1, median, q3 = np.quantile(magnitude, [0.25, 0.5, 0.75])
            rows.append(
                {
                    "app": app,
                    "target": target,
                    "points": len(rel),
                    "q1": float(q1),
                    "median": float(median),
                    "q3": float(q3),
                    "mean": float(magnitude.mean()),
                    "max": float(magnitude.max()),
                    "mean_signed": float(rel.mean()),
                    "share_under_within_10": float((rel >= -0.10).mean()),
                    "worst_under": float(max(0.0, -rel.min())),
                }
            )
    return pl.DataFrame(rows)
