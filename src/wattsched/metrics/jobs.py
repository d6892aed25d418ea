"""Per-job metrics of a simulated schedule (docs/semantics.md §5).

The run duration is always taken as ``end_time − start_time``. In simulator output it equals the ``runtime``
column (``min(trace runtime, walltime)``), but reading the times directly keeps the metrics right for any
table whose ``runtime`` still holds the unclipped trace value. So ``runtime`` is never read here.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

#: Time columns every schedule metric needs.
TIME_COLUMNS: tuple[str, ...] = ("submit_time", "start_time", "end_time")

#: Default bounded-slowdown threshold τ in seconds (Feitelson et al., JSSPP 1997).
DEFAULT_TAU: float = 10.0


def check_schedule(schedule: pl.DataFrame, columns: Iterable[str]) -> None:
    """Fail loudly on input that would otherwise give silently wrong metrics.

    Checks that ``columns`` exist and hold no nulls and, when all three time columns are requested, that
    ``submit ≤ start ≤ end`` (a violation, or a NaN, would make waits negative and timelines go below zero).
    """
    columns = tuple(columns)
    missing = [c for c in columns if c not in schedule.columns]
    if missing:
        raise ValueError(f"schedule lacks column(s) {missing}; it has {schedule.columns}")
    # a Series knows its null count (Arrow validity metadata): no query, 0.06 ms a call against 0.27 ms for a
    # select, and a power run checks its schedule a dozen times (docs/performance.md, issue 32)
    with_nulls = [c for c in columns if schedule[c].null_count()]
    if with_nulls:
        raise ValueError(f"schedule column(s) {with_nulls} contain nulls (unscheduled jobs?)")
    if schedule.height and all(c in columns for c in TIME_COLUMNS):
        submit, start, end = (schedule[c].to_numpy() for c in TIME_COLUMNS)
        if not np.all(start >= submit):
            raise ValueError("schedule has start_time < submit_time (or NaN times)")
        if not np.all(end >= start):
            raise ValueError("schedule has end_time < start_time (or NaN times)")


def add_job_metrics(schedule: pl.DataFrame, *, tau: float = DEFAULT_TAU) -> pl.DataFrame:
    """Return ``schedule`` with ``wait``, ``turnaround``, ``slowdown`` and ``bounded_slowdown`` columns added.

    - ``wait = start − submit``; ``turnaround = end − submit`` (P2's "response time");
    - ``slowdown = turnaround / run``, the unbounded form of P1 and Batsim's ``stretch``. It is **null** for
      zero-length runs (run = 0), where it is undefined; it is never inf or NaN;
    - ``bounded_slowdown = max(1, turnaround / max(run, tau))``, Feitelson's form. It stays defined and damped
      for very short jobs, which otherwise dominate mean slowdown.

    ``run = end − start`` (see module docstring). Existing columns with these names are replaced.
    """
    if not tau > 0:
        raise ValueError(f"tau must be positive, got {tau}")
    check_schedule(schedule, TIME_COLUMNS)
    run = pl.col("end_time") - pl.col("start_time")
    turnaround = pl.col("end_time") - pl.col("submit_time")
    return schedule.with_columns(
        (pl.col("start_time") - pl.col("submit_time")).alias("wait"),
        turnaround.alias("turnaround"),
        pl.when(run > 0).then(turnaround / run).otherwise(None).cast(pl.Float64).alias("slowdown"),
        pl.max_horizontal(pl.lit(1.0), turnaround / pl.max_horizontal(run, pl.lit(float(tau)))).alias(
            "bounded_slowdown"
        ),
    )
