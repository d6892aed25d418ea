"""The online predictor protocol: what a predictor is given and when (the contract; the drivers are in
:mod:`wattsched.predict.online`, the predictors in :mod:`wattsched.predict`).

A prediction for a job submitted at ``r`` may use only the jobs that **completed at or before** ``r``. A
predictor is bound to one job table (rows in queue order: (submit time, job id)) and then fed, in time order,
``observe(rows, end_times)`` for completed jobs and ``predict(rows, now)`` for submitted ones. It may read any
column of a completed job (its true runtime and power included: they are known once it completed) and only the
submission-time columns of a job it predicts.

The protocol lives in the core because both the simulators (which feed a predictor the simulated completions)
and the predictors depend on it, and neither may import the other's layer for it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import polars as pl

__all__ = ["OnlinePredictor", "PredictorBase"]


@runtime_checkable
class OnlinePredictor(Protocol):
    """A predictor that learns from completions and predicts at submission.

    The required members; the optional ones and their defaults are on :class:`PredictorBase`."""

    name: str
    #: Names of the columns ``predict`` returns (e.g. ``("pred_runtime",)``).
    outputs: tuple[str, ...]

    def bind(self, jobs: pl.DataFrame) -> None:
        """Start from no history on ``jobs`` (queue order; a row index is a job's identity from now on)."""

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        """Learn from jobs that completed, in completion order, at ``end_times`` (ascending)."""

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        """Predictions for the jobs submitted at ``now``: one array per output, aligned with ``rows``."""


class PredictorBase(OnlinePredictor):
    """A base class for online predictors that declares the optional members of :class:`OnlinePredictor` with
    their defaults. Callers read them with :func:`wattsched.core.protocols.optional_member`, so a predictor that
    does not inherit this class gets the same defaults."""

    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame | None:
        """The whole trace protocol in one vectorised pass: every job's outputs (a frame aligned with ``jobs``,
        in queue order) given the completion times ``completion``; it must equal what the generic driver of
        :func:`wattsched.predict.online.predict_online` returns. Default: ``None``, no fast path (the generic
        driver runs)."""
        return None

    @property
    def report(self) -> pl.DataFrame | None:
        """A table of the fitted models (one row per model), for the prediction report. Default: ``None``."""
        return None
