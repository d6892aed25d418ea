"""The ``predict`` verbs: add online predictions to a workload table and say how good they are.

Power predictions are per-node watts (like the measured ``power_mean``/``power_max``/``power_std``); the
simulator turns them into job-level estimates with ``--power-source predicted``. Runtime predictions are
seconds in ``pred_runtime``, read by ``--runtime-estimate pred_runtime``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from wattsched.core.predictor import PredictorBase
from wattsched.core.protocols import optional_member
from wattsched.core.rejects import rejects_by_reason
from wattsched.core.schema import ReadResult
from wattsched.predict.evaluate import evaluate_power, evaluate_runtime, per_user_mae
from wattsched.predict.online import completion_times, predict_online, prepare
from wattsched.predict.power_history import GlobalMeanPowerPredictor, HistoryConfig
from wattsched.predict.registry import make_power_predictor, make_runtime_predictor


@dataclass
class PredictionRun:
    """A workload with its predictions, the evaluation report and where the completion times came from."""

    jobs: pl.DataFrame  # queue order, prediction columns appended (replacing any of the same name)
    predictions: pl.DataFrame
    report: dict[str, Any]
    completion: str
    per_user_mae: dict[str, np.ndarray] = field(default_factory=dict)  # for the box plots
    info: dict[str, Any] = field(default_factory=dict)  # e.g. the ML models chosen each week


def rejected_report(read: ReadResult) -> dict[str, Any]:
    """The input records the predictions do not cover: their count and the count per reason (the rejects
    themselves are the caller's to write; ``wattsched predict`` puts them next to its output)."""
    by_reason = rejects_by_reason(read.rejects)
    counts = dict(zip(by_reason["reason"], by_reason["count"], strict=True))
    return {"rejected": read.rejects.height, "rejected_by_reason": counts}


def _with(jobs: pl.DataFrame, predictions: pl.DataFrame) -> pl.DataFrame:
    return jobs.drop([c for c in predictions.columns if c in jobs.columns]).hstack(predictions)


def _completion(read: ReadResult, jobs: pl.DataFrame, source: str, machine_size: int | None) -> tuple[np.ndarray, str]:
    size = machine_size or read.provenance.machine_size
    return completion_times(jobs, source, machine_size=size)


def run_power_prediction(
    read: ReadResult,
    method: str,
    *,
    completion: str = "auto",
    machine_size: int | None = None,
    history: HistoryConfig | None = None,
    **options: Any,
) -> PredictionRun:
    """Predict every job's per-node power online (trace protocol) and evaluate it against the measurements,
    next to the global-mean baseline (the mean over every job completed so far, all users)."""
    jobs = prepare(read.jobs)
    done, where = _completion(read, jobs, completion, machine_size)
    if method.startswith("ml-") and "clock_offset" not in options and read.provenance.header.get("clock_offset"):
        options["clock_offset"] = float(read.provenance.header["clock_offset"])  # hour of day of submit 0
    predictor = make_power_predictor(method, history=history, **options)
    predictions = predict_online(predictor, jobs, done)
    cfg = history or HistoryConfig()
    baseline = predict_online(GlobalMeanPowerPredictor(cfg), jobs, done)
    report = {
        "method": method,
        "completion": where,
        **rejected_report(read),
        "metrics": evaluate_power(jobs, predictions),
        "global_mean_baseline": evaluate_power(jobs, baseline, predictions["has_user_history"].to_numpy()),
    }
    users = jobs["user_id"].to_numpy() if "user_id" in jobs.columns else np.full(jobs.height, None)
    true = jobs["power_mean"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    per_user = {
        method: per_user_mae(predictions["pred_power_mean"].to_numpy(), true, users),
        "global mean": per_user_mae(baseline["pred_power_mean"].to_numpy(), true, users),
    }
    models = optional_member(predictor, PredictorBase, "report")
    info = {"models": models.to_dicts()} if models is not None and models.height else {}
    return PredictionRun(_with(jobs, predictions), predictions, report, where, per_user, info)


def run_runtime_prediction(
    read: ReadResult,
    method: str,
    *,
    completion: str = "auto",
    machine_size: int | None = None,
    **options: Any,
) -> PredictionRun:
    """Predict every job's runtime online (trace protocol) and evaluate it, next to the walltime."""
    jobs = prepare(read.jobs)
    done, where = _completion(read, jobs, completion, machine_size)
    predictions = predict_online(make_runtime_predictor(method, **options), jobs, done)
    report = {
        "method": method,
        "completion": where,
        **rejected_report(read),
        "runtime": evaluate_runtime(jobs, predictions),
    }
    users = jobs["user_id"].to_numpy() if "user_id" in jobs.columns else np.full(jobs.height, None)
    true = jobs["runtime"].to_numpy().astype(float)
    per_user = {
        method: per_user_mae(predictions["pred_runtime"].to_numpy(), true, users),
        "walltime": per_user_mae(jobs["walltime"].to_numpy().astype(float), true, users),
    }
    return PredictionRun(_with(jobs, predictions), predictions, report, where, per_user)
