"""System-level metrics of a simulated schedule: makespan, utilisation and step-function timelines.

Timelines are step functions stored as one row per change instant: the value in a row holds on
``[time, next row's time)``, the last row holds forever, and the value before the first row is 0. Simultaneous
events are merged into one row, and instants whose events cancel out (a job starts exactly when another is
submitted) are dropped. So consecutive rows always differ in value.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from wattsched.metrics.jobs import TIME_COLUMNS, check_schedule


def default_window(schedule: pl.DataFrame) -> tuple[float, float]:
    """``(min(submit), max(end))``: the span over which every job of the schedule exists."""
    if schedule.height == 0:
        raise ValueError("schedule is empty: the default window [min(submit), max(end)] is undefined")
    check_schedule(schedule, ("submit_time", "end_time"))
    t0, t1 = (float(v) for v in schedule.select(pl.col("submit_time").min(), pl.col("end_time").max()).row(0))
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError(f"schedule times are not finite: min(submit) = {t0}, max(end) = {t1}")
    return t0, t1


def makespan(schedule: pl.DataFrame) -> dict[str, float]:
    """Both common makespan definitions, named, since papers and tools disagree on which one they mean.

    - ``makespan_from_first_submit = max(end) − min(submit)``: P2 and the common definition;
    - ``makespan_from_zero = max(end)``: Batsim's, the last job's completion time on a clock starting at 0.
    """
    t0, t1 = default_window(schedule)
    return {"makespan_from_first_submit": t1 - t0, "makespan_from_zero": t1}


def _check_window(t0: float, t1: float) -> None:
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError(f"window bounds must be finite, got [{t0}, {t1})")
    if t1 <= t0:
        raise ValueError(f"empty window: t1 ({t1}) must be greater than t0 ({t0})")


def utilisation(schedule: pl.DataFrame, machine_size: int, t0: float | None = None, t1: float | None = None) -> float:
    """Fraction of the machine's unit-seconds in ``[t0, t1)`` that jobs occupied.

    ``Σ size·|[start, end) ∩ [t0, t1)| / (machine_size·(t1 − t0))``: jobs are clipped at the window edges, so
    a window can exclude warm-up and cool-down without counting work done outside it. Each missing bound
    defaults to the schedule's span (``min(submit)``, ``max(end)``).
    """
    if machine_size <= 0:
        raise ValueError(f"machine_size must be positive, got {machine_size}")
    if t0 is None or t1 is None:
        d0, d1 = default_window(schedule)
        t0 = d0 if t0 is None else t0
        t1 = d1 if t1 is None else t1
    t0, t1 = float(t0), float(t1)
    _check_window(t0, t1)
    check_schedule(schedule, (*TIME_COLUMNS, "size"))
    start = schedule["start_time"].to_numpy()
    end = schedule["end_time"].to_numpy()
    size = schedule["size"].to_numpy().astype(np.float64)
    overlap = np.clip(np.minimum(end, t1) - np.maximum(start, t0), 0.0, None)
    return float(np.sum(size * overlap) / (machine_size * (t1 - t0)))


def _step_timeline(times: np.ndarray, deltas: dict[str, np.ndarray]) -> pl.DataFrame:
    """Merge ± events into a step function: one row per instant with a net change, levels as running sums."""
    schema = {"time": pl.Float64, **dict.fromkeys(deltas, pl.Int64)}
    if times.size == 0:
        return pl.DataFrame(schema=schema)
    order = np.argsort(times)  # order within an instant is irrelevant: its deltas are summed
    t = times[order]
    first = np.flatnonzero(np.concatenate(([True], t[1:] != t[:-1])))
    net = {name: np.add.reduceat(d[order], first) for name, d in deltas.items()}
    changed = np.logical_or.reduce([n != 0 for n in net.values()])
    data = {"time": t[first][changed], **{name: np.cumsum(n)[changed] for name, n in net.items()}}
    return pl.DataFrame(data, schema=schema)


def queue_length_timeline(schedule: pl.DataFrame) -> pl.DataFrame:
    """Queue length as a step function ``time, queue_length``: ``|{j: submit ≤ t < start}|`` at time t.

    This is P1's queue length "at second t". Jobs that start the instant they are submitted never appear.
    """
    check_schedule(schedule, TIME_COLUMNS)
    submit = schedule["submit_time"].to_numpy()
    start = schedule["start_time"].to_numpy()
    waited = start > submit
    n = int(waited.sum())
    times = np.concatenate((submit[waited], start[waited]))
    delta = np.concatenate((np.ones(n, np.int64), np.full(n, -1, np.int64)))
    return _step_timeline(times, {"queue_length": delta})


def running_timeline(schedule: pl.DataFrame) -> pl.DataFrame:
    """Running jobs and busy units as a step function: ``time, running_jobs, busy_units``.

    ``running_jobs(t) = |{j: start ≤ t < end}|`` and ``busy_units(t)`` is the sum of their ``size``.
    Zero-length runs never appear.
    """
    check_schedule(schedule, (*TIME_COLUMNS, "size"))
    start = schedule["start_time"].to_numpy()
    end = schedule["end_time"].to_numpy()
    size = schedule["size"].to_numpy().astype(np.int64)
    ran = end > start
    n = int(ran.sum())
    times = np.concatenate((start[ran], end[ran]))
    jobs = np.concatenate((np.ones(n, np.int64), np.full(n, -1, np.int64)))
    units = np.concatenate((size[ran], -size[ran]))
    return _step_timeline(times, {"running_jobs": jobs, "busy_units": units})


def system_timeline(schedule: pl.DataFrame) -> pl.DataFrame:
    """Queue length, running jobs and busy units together as one step function:
    ``time, queue_length, running_jobs, busy_units`` (each row's values hold until the next row)."""
    check_schedule(schedule, (*TIME_COLUMNS, "size"))
    submit = schedule["submit_time"].to_numpy()
    start = schedule["start_time"].to_numpy()
    end = schedule["end_time"].to_numpy()
    size = schedule["size"].to_numpy().astype(np.int64)
    waited = start > submit
    ran = end > start
    nw = int(waited.sum())
    nr = int(ran.sum())
    times = np.concatenate((submit[waited], start[waited], start[ran], end[ran]))
    zeros_w = np.zeros(2 * nw, np.int64)
    zeros_r = np.zeros(2 * nr, np.int64)
    queue = np.concatenate((np.ones(nw, np.int64), np.full(nw, -1, np.int64), zeros_r))
    jobs = np.concatenate((zeros_w, np.ones(nr, np.int64), np.full(nr, -1, np.int64)))
    units = np.concatenate((zeros_w, size[ran], -size[ran]))
    return _step_timeline(times, {"queue_length": queue, "running_jobs": jobs, "busy_units": units})


def _segments(timeline: pl.DataFrame, column: str, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
    """Values of the step function's pieces and how long each lasts inside ``[t0, t1)``."""
    _check_window(t0, t1)
    if "time" not in timeline.columns or column not in timeline.columns:
        raise ValueError(f"timeline needs columns 'time' and {column!r}; it has {timeline.columns}")
    times = timeline["time"].to_numpy()
    if times.size > 1 and not np.all(times[1:] > times[:-1]):
        raise ValueError("timeline times must be strictly increasing")
    values = timeline[column].to_numpy().astype(np.float64)
    # Prepend the implicit zero piece (−inf, first time) so windows starting early are covered.
    starts = np.concatenate(([-np.inf], times))
    ends = np.concatenate((times, [np.inf]))
    values = np.concatenate(([0.0], values))
    durations = np.clip(np.minimum(ends, t1) - np.maximum(starts, t0), 0.0, None)
    return values, durations


def time_average(timeline: pl.DataFrame, column: str, t0: float, t1: float) -> float:
    """Time-weighted mean of a step-function timeline over ``[t0, t1)``.

    A plain mean over rows would weight a one-second spike like a one-day plateau; weighting by duration gives
    e.g. the mean queue length a job arriving at a random time in the window would see.
    """
    values, durations = _segments(timeline, column, float(t0), float(t1))
    return float(np.sum(values * durations) / (t1 - t0))


def time_max(timeline: pl.DataFrame, column: str, t0: float, t1: float) -> float:
    """Largest value the step-function timeline takes on a non-empty part of ``[t0, t1)``."""
    values, durations = _segments(timeline, column, float(t0), float(t1))
    return float(values[durations > 0].max())
