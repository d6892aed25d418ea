"""Workload windows: cut a long trace into seeded windows of D hours ([AMBIG-0.9] in docs/decisions.md, paper 000's
30 windows of 24 h).

A window starting at T holds the jobs submitted in [T, T + D), with submit times shifted by −T. The machine at T
is not empty; ``prestate`` says what the window does with the jobs queued or running at T:

- ``"requeue"`` (default): every job *running* at T is resubmitted at t = 0 (``requeued``) with its remaining
  runtime, remaining walltime and the rest of its power profile, in trace-start order, **ahead of** the jobs
  *queued* at T (submitted before, started at or after T in the trace), which are resubmitted at 0 in job-id
  order (ids follow submission order in Slurm and SWF traces). The policy decides on all of them under the cap,
  through the same power check as any job: the window's power is the policy's alone. A ``queue_rank`` column
  keeps that order in the engine's queue (:func:`~wattsched.core.schema.sort_queue_order`).
- ``"prestart"``: the running jobs start at t = 0 without a policy decision (``prestarted``), with their
  remaining runtime, walltime and profile; the queued ones are resubmitted at 0 in job-id order. Their power
  bypasses every check, so the power metrics report it apart (``prestate_*`` in ``power/cap_metrics.py``).
- ``"drop"``: no pre-state; the machine starts empty.

The rest of a profile starts from the sample in force at T, held from t = 0 for a full period (the profile's
phase moves by less than one sample period). Queued or running is judged on the trace's own schedule
(``trace_start_time``, ``start_time`` or SWF's ``submit + wait``); a table without one (a generated workload)
gets the schedule of an EASY replay.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import polars as pl

from wattsched.core.schema import QUEUE_RANK, ReadResult, WorkloadError, coerce_columns, sort_queue_order
from wattsched.engine.replay import easy_replay

#: Absolute-time columns shifted with the window (when present).
_SHIFTED = ("trace_start_time", "trace_end_time", "start_time", "end_time", "pm100_eligible_time")
SCHEDULE_SOURCES = ("auto", "trace", "replay")
#: How a window treats the jobs queued or running at its start (see the module docstring).
PRESTATES = ("requeue", "prestart", "drop")
Prestate = Literal["requeue", "prestart", "drop"]
DEFAULT_PRESTATE: Prestate = "requeue"


def prestate_mode(value: str | bool) -> Prestate:
    """``value`` as one of :data:`PRESTATES`. The old Booleans still work with a one-line warning:
    ``True`` (the pre-state on) was ``"prestart"``, ``False`` was ``"drop"``."""
    if isinstance(value, bool):
        mode: Prestate = "prestart" if value else "drop"
        # warn_explicit without a source file: one line, wherever the Boolean came from (a campaign file, code)
        warnings.warn_explicit(
            f'prestate = {str(value).lower()} is deprecated; write prestate = "{mode}" (or the new default "requeue")',
            FutureWarning,
            "wattsched",
            0,
        )
        return mode
    if value not in PRESTATES:
        raise ValueError(f"prestate must be one of {', '.join(PRESTATES)}, got {value!r}")
    return cast(Prestate, value)  # checked against PRESTATES just above


@dataclass(frozen=True)
class WindowSpec:
    """How to cut windows: ``count`` windows of ``hours`` each, starts drawn uniformly with ``seed``, and what
    to do with the jobs queued or running at each start (``prestate``, one of :data:`PRESTATES`)."""

    count: int = 30
    hours: float = 24.0
    seed: int = 0
    prestate: Prestate = DEFAULT_PRESTATE

    def __post_init__(self) -> None:
        object.__setattr__(self, "prestate", prestate_mode(self.prestate))
        if self.count < 1:
            raise ValueError(f"window count must be ≥ 1, got {self.count}")
        if not (math.isfinite(self.hours) and self.hours > 0):
            raise ValueError(f"window length must be a positive number of hours, got {self.hours}")


def trace_starts(
    jobs: pl.DataFrame, source: str = "auto", *, machine_size: int | None = None
) -> tuple[np.ndarray, str]:
    """Each job's start in the trace (aligned with ``jobs``, queue order) and where it came from:
    ``trace`` (``trace_start_time``, ``start_time`` or submit + ``swf_wait``), ``replay`` (EASY), or ``auto``."""
    if source not in SCHEDULE_SOURCES:
        raise ValueError(f"schedule source must be one of {SCHEDULE_SOURCES}, got {source!r}")
    if source in ("auto", "trace"):
        for col, expr in (
            ("trace_start_time", pl.col("trace_start_time")),
            ("start_time", pl.col("start_time")),
            ("swf_wait", pl.col("submit_time") + pl.col("swf_wait")),
        ):
            if col in jobs.columns:
                start = jobs.select(expr.cast(pl.Float64)).to_series().to_numpy()
                if np.isfinite(start).all():
                    return start, f"trace ({col})"
                if source == "trace":
                    raise WorkloadError(f"{int((~np.isfinite(start)).sum())} job(s) lack a trace start ({col})")
        if source == "trace":
            raise WorkloadError("the workload has no trace schedule (trace_start_time, start_time or swf_wait)")
    if machine_size is None:
        raise ValueError("an EASY replay needs the machine size")
    return easy_replay(jobs, machine_size)[0], f"replay (EASY on {machine_size} units)"


def window_starts(jobs: pl.DataFrame, spec: WindowSpec) -> np.ndarray:
    """``spec.count`` start instants drawn uniformly in [first submit, last submit − D], ascending."""
    submit = jobs["submit_time"].to_numpy()
    lo, hi = float(submit.min()), float(submit.max()) - spec.hours * 3600.0
    if hi < lo:
        raise WorkloadError(
            f"the trace spans {(submit.max() - submit.min()) / 3600:.1f} h, shorter than one {spec.hours:g}-h window"
        )
    rng = np.random.default_rng(spec.seed)
    return np.sort(rng.uniform(lo, hi, spec.count))


def cut_window(
    jobs: pl.DataFrame,
    t0: float,
    hours: float,
    *,
    start: np.ndarray | None = None,
    prestate: Prestate | bool = DEFAULT_PRESTATE,
    sample_period: float = 20.0,
) -> pl.DataFrame:
    """The jobs of the window [t0, t0 + hours·3600) with times shifted by −t0 (queue order in, queue order out).

    ``start`` (the trace start of each job, aligned) is needed for the pre-state (``requeue`` and
    ``prestart``). The result has Boolean ``prestarted`` and ``requeued`` columns either way, and with
    ``requeue`` a ``queue_rank`` (0, 1, ... for the resubmitted jobs, null for the others) that the engine's
    queue order follows.
    """
    mode = prestate_mode(prestate)
    t1 = t0 + hours * 3600.0
    submit = pl.col("submit_time")
    flags = [pl.lit(False).alias("prestarted"), pl.lit(False).alias("requeued")]
    inside = jobs.filter((submit >= t0) & (submit < t1)).with_columns((submit - t0).alias("submit_time"), *flags)
    parts = []
    if mode != "drop":
        if start is None:
            raise ValueError("the pre-state needs each job's trace start")
        before = jobs.with_columns(pl.Series("__start", start, dtype=pl.Float64)).filter(submit < t0)
        ran = pl.min_horizontal("runtime", "walltime")
        queued = before.filter(pl.col("__start") >= t0).with_columns(pl.lit(0.0).alias("submit_time"), *flags)
        running = before.filter((pl.col("__start") < t0) & (pl.col("__start") + ran > t0))
        elapsed = pl.lit(t0) - pl.col("__start")
        running = running.with_columns(
            pl.lit(0.0).alias("submit_time"),
            (pl.col("runtime") - elapsed).alias("runtime"),
            (pl.col("walltime") - elapsed).alias("walltime"),
            pl.lit(mode == "prestart").alias("prestarted"),
            pl.lit(mode == "requeue").alias("requeued"),
        )
        if "power_profile" in running.columns:
            skip = (elapsed / sample_period).floor().cast(pl.Int64)
            running = running.with_columns(pl.col("power_profile").list.slice(skip))
        running = running.sort("__start", "job_id").drop("__start")
        queued = queued.sort("job_id").drop("__start")
        if mode == "requeue":
            running = running.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(QUEUE_RANK))
            queued = queued.with_columns((pl.int_range(pl.len(), dtype=pl.Int64) + running.height).alias(QUEUE_RANK))
            inside = inside.with_columns(pl.lit(None, pl.Int64).alias(QUEUE_RANK))
        parts = [running, queued]
    window = pl.concat([*parts, inside], how="vertical_relaxed")
    shifts = [(pl.col(c) - t0).alias(c) for c in _SHIFTED if c in window.columns]
    if shifts:
        window = window.with_columns(shifts)
    return sort_queue_order(window)


def cut_windows(
    read: ReadResult,
    spec: WindowSpec,
    *,
    schedule: str = "auto",
    machine_size: int | None = None,
) -> list[tuple[float, ReadResult]]:
    """All windows of ``spec`` as ``(start instant, ReadResult)`` pairs, each with its own provenance."""
    jobs = sort_queue_order(coerce_columns(read.jobs))
    size = machine_size or read.provenance.machine_size
    pre = spec.prestate != "drop"
    start, where = trace_starts(jobs, schedule, machine_size=size) if pre else (None, "not used")
    return [
        (float(t0), _window_read(read, jobs, float(t0), spec, start, where, k))
        for k, t0 in enumerate(window_starts(jobs, spec))
    ]


def cut_one_window(
    read: ReadResult,
    t0: float,
    hours: float = 24.0,
    *,
    prestate: Prestate | bool = DEFAULT_PRESTATE,
    schedule: str = "auto",
    machine_size: int | None = None,
) -> ReadResult:
    """The window [t0, t0 + hours·3600) of a workload (``t0`` in the workload's own seconds), times shifted by
    −t0, with its own provenance: what ``wattsched simulate --window-start`` simulates."""
    spec = WindowSpec(count=1, hours=hours, seed=0, prestate=prestate_mode(prestate))
    jobs = sort_queue_order(coerce_columns(read.jobs))
    submit = jobs["submit_time"].to_numpy()
    first, last = float(submit.min()), float(submit.max())
    if not (math.isfinite(t0) and first <= t0 <= last):
        raise WorkloadError(f"window start {t0:g} s is outside the workload's submissions [{first:g}, {last:g}] s")
    size = machine_size or read.provenance.machine_size
    pre = spec.prestate != "drop"
    start, where = trace_starts(jobs, schedule, machine_size=size) if pre else (None, "not used")
    window = _window_read(read, jobs, float(t0), spec, start, where, None)
    if window.jobs.height == 0:
        raise WorkloadError(f"the window [{t0:g}, {t0 + hours * 3600:g}) s holds no job")
    return window


def _window_read(
    read: ReadResult,
    jobs: pl.DataFrame,
    t0: float,
    spec: WindowSpec,
    start: np.ndarray | None,
    where: str,
    index: int | None,
) -> ReadResult:
    period = float(read.provenance.header.get("sample_period", 20.0) or 20.0)
    window = cut_window(jobs, t0, spec.hours, start=start, prestate=spec.prestate, sample_period=period)
    info = {
        "index": index,
        "start": t0,
        "hours": spec.hours,
        "seed": spec.seed if index is not None else None,
        "prestate": spec.prestate,
        "trace_schedule": where,
        "prestarted": int(window["prestarted"].sum()),
        "requeued": int(window["requeued"].sum()),
    }
    tag = f"#window{index}" if index is not None else f"#window@{t0:g}s"
    prov = dataclasses.replace(
        read.provenance,
        source=f"{read.provenance.source}{tag}",
        n_jobs=window.height,
        header={**read.provenance.header, "window": info},
        conventions=[*read.provenance.conventions, _convention(spec, where, index is not None)],
    )
    return ReadResult(window, read.rejects.head(0), prov)


def _convention(spec: WindowSpec, where: str, seeded: bool = True) -> str:
    pre = {
        "requeue": f"pre-state from the {where} schedule: running jobs resubmitted at 0 with their remaining "
        "runtime, walltime and profile (trace-start order), then the queued jobs (job-id order)",
        "prestart": f"pre-state from the {where} schedule: queued jobs re-submitted at 0 in job-id order, running "
        "jobs prestarted at 0 with their remaining runtime, walltime and profile",
        "drop": "no pre-state",
    }[spec.prestate]
    seed = f" (seed {spec.seed})" if seeded else ""
    return f"window of {spec.hours:g} h{seed}, submit times shifted to the window start; {pre}"
