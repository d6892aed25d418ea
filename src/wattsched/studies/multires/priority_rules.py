"""The PRB priority rule of paper 001 (§4; docs/dispatch.md), shared by the PRB dispatcher and CPH's job selection.

A queued job's urgency is ``max_ewt · qtime / ewt`` with ``qtime = now − queued + 1`` (s) and ``ewt`` its queue's
expected waiting time, ``max_ewt`` the largest ewt among the jobs queued now: jobs of short-wait queues, and jobs
that have waited long, come first. Ties go to the smaller demand ``expected_duration × Σ_r chunks × amount_r``,
then to the earlier queue position (a stable sort).
"""

from __future__ import annotations

import numpy as np


def prb_urgency(now: float, queued: np.ndarray, ewt: np.ndarray) -> np.ndarray:
    """Urgency ratio of each queued job (larger is more urgent)."""
    if ewt.size == 0:
        return np.zeros(0)
    if (ewt <= 0).any():
        raise ValueError("expected waiting times must be positive")
    qtime = now - queued + 1.0
    return ewt.max() * qtime / ewt


def prb_demand(expected_duration: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Tie-break key: expected duration × the job's summed resource amounts (``demand`` is jobs × resources,
    totals over the chunks)."""
    return expected_duration * demand.sum(axis=1)


def prb_order(
    now: float, queued: np.ndarray, ewt: np.ndarray, expected_duration: np.ndarray, demand: np.ndarray
) -> np.ndarray:
    """Indices of the queued jobs in PRB order: urgency descending, then demand ascending, then queue order."""
    urgency = prb_urgency(now, queued, ewt)
    tie = prb_demand(expected_duration, demand)
    return np.lexsort((np.arange(urgency.size), tie, -urgency))
