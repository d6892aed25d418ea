"""One flat, JSON-serialisable summary of a schedule: the numbers every experiment reports.

Key names are stable, so results from different runs and policies can be stacked into one table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from wattsched.metrics.jobs import DEFAULT_TAU, add_job_metrics
from wattsched.metrics.system import (
    _check_window,
    default_window,
    makespan,
    queue_length_timeline,
    time_average,
    time_max,
    utilisation,
)

#: Per-job metrics summarised with mean, max and percentiles, in key order.
SUMMARISED_METRICS: tuple[str, ...] = ("wait", "turnaround", "slowdown", "bounded_slowdown")


def _percentile_key(metric: str, q: float) -> str:
    """``wait_p90`` for q = 90; ``wait_p99_9`` for q = 99.9 (no dots, so keys stay valid identifiers)."""
    label = str(int(q)) if float(q).is_integer() else repr(float(q)).replace(".", "_")
    return f"{metric}_p{label}"


def _stats(metric: str, values: np.ndarray, percentiles: Sequence[float]) -> dict[str, float | None]:
    """Mean, max and percentiles (numpy's default linear interpolation); all None without values."""
    keys = [f"{metric}_mean", f"{metric}_max", *(_percentile_key(metric, q) for q in percentiles)]
    if values.size == 0:
        return dict.fromkeys(keys)
    numbers = [values.mean(), values.max()]
    if percentiles:
        numbers.extend(np.percentile(values, percentiles))
    return {k: float(v) for k, v in zip(keys, numbers, strict=True)}


def summarise(
    schedule: pl.DataFrame,
    machine_size: int,
    *,
    window: tuple[float, float] | None = None,
    percentiles: Sequence[float] = (50, 90, 95, 99),
    tau: float = DEFAULT_TAU,
) -> dict[str, Any]:
    """Summarise a schedule in a flat dict of plain ints, floats and None.

    Keys, in order:

    - ``n_jobs``, ``machine_size``;
    - for ``m`` in wait, turnaround, slowdown, bounded_slowdown: ``m_mean``, ``m_max``, ``m_p<q>`` per
      percentile (``wait_p90``; ``wait_p99_9`` for 99.9). Slowdown statistics cover only jobs with a positive
      run, since slowdown is undefined for zero-length runs: ``slowdown_n_jobs`` counts the jobs used and
      ``slowdown_n_excluded`` the zero-run jobs left out (all slowdown stats are None if every run is zero).
      Bounded slowdown is defined for every job and covers all of them; ``bounded_slowdown_tau`` records τ;
    - ``makespan_from_first_submit`` (max end − min submit) and ``makespan_from_zero`` (max end, Batsim);
    - ``utilisation`` over ``[utilisation_window_start, utilisation_window_end)``: ``window`` if given, else
      ``[min(submit), max(end)]``. Jobs are clipped at the window edges;
    - ``queue_length_mean`` (time-averaged) and ``queue_length_max`` over the same window;
    - ``n_killed``: jobs with ``killed`` true, or None when the schedule has no ``killed`` column.

    An empty schedule raises ValueError: its statistics would all be undefined, which is almost always an
    upstream bug rather than a result.
    """
    if schedule.height == 0:
        raise ValueError("cannot summarise an empty schedule (0 jobs): every statistic would be undefined")
    bad = [q for q in percentiles if not 0 <= q <= 100]
    if bad:
        raise ValueError(f"percentiles must lie in [0, 100], got {bad}")
    t0, t1 = default_window(schedule) if window is None else (float(window[0]), float(window[1]))
    _check_window(t0, t1)

    per_job = add_job_metrics(schedule, tau=tau)
    out: dict[str, Any] = {"n_jobs": schedule.height, "machine_size": int(machine_size)}
    for metric in SUMMARISED_METRICS:
        values = per_job[metric].drop_nulls().to_numpy()
        out.update(_stats(metric, values, percentiles))
        if metric == "slowdown":
            out["slowdown_n_jobs"] = int(values.size)
            out["slowdown_n_excluded"] = schedule.height - int(values.size)
    out["bounded_slowdown_tau"] = float(tau)

    out.update(makespan(schedule))
    out["utilisation"] = utilisation(schedule, machine_size, t0, t1)
    out["utilisation_window_start"] = t0
    out["utilisation_window_end"] = t1
    queue = queue_length_timeline(schedule)
    out["queue_length_mean"] = time_average(queue, "queue_length", t0, t1)
    out["queue_length_max"] = int(time_max(queue, "queue_length", t0, t1))
    out["n_killed"] = int(schedule["killed"].sum()) if "killed" in schedule.columns else None
    return out
