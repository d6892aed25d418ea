"""Workload windows: cut a long trace into seeded windows of D hours (reference spec [AMBIG-0.9], paper 000's
30 windows of 24 h).

A window starting at T holds the jobs submitted in [T, T + D), with submit times shifted by −T. With the
**pre-state** (default), the machine does not start empty:

- jobs *queued* at T (submitted before, started at or after T in the trace) are re-submitted at t = 0, in
  job-id order (ids follow submission order in Slurm and SWF traces);
- jobs *running* at T start at t = 0 without a policy decision (``prestarted``), with their remaining runtime,
  remaining walltime and the rest of their power profile: from the sample in force at T, held from t = 0 for a
  full period (the profile's phase moves by less than one sample period).

Queued or running is judged on the trace's own schedule (``trace_start_time``, ``start_time`` or SWF's
``submit + wait``); a table without one (a generated workload) gets the schedule of an EASY replay.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from wattsched.workload.schema import ReadResult, WorkloadError, coerce_columns, sort_queue_order

#: Absolute-time columns shifted with the window (when present).
_SHIFTED = ("trace_start_time", "trace_end_time", "start_time", "end_time", "pm100_eligible_time")
SCHEDULE_SOURCES = ("auto", "trace", "replay")


@dataclass(frozen=True)
class WindowSpec:
    """How to cut windows: ``count`` windows of ``hours`` each, starts drawn uniformly with ``seed``."""

    count: int = 30
    hours: float = 24.0
    seed: int = 0
    prestate: bool = True

    def __post_init__(self) -> None:
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
    from wattsched.sim.replay import easy_replay

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
    prestate: bool = True,
    sample_period: float = 20.0,
) -> pl.DataFrame:
    """The jobs of the window [t0, t0 + hours·3600) with times shifted by −t0 (queue order in, queue order out).

    ``start`` (the trace start of each job, aligned) is needed for the pre-state; the result has a Boolean
    ``prestarted`` column either way.
    """
    t1 = t0 + hours * 3600.0
    submit = pl.col("submit_time")
    inside = jobs.filter((submit >= t0) & (submit < t1)).with_columns(
        (submit - t0).alias("submit_time"), pl.lit(False).alias("prestarted")
    )
    parts = []
    if prestate:
        if start is None:
            raise ValueError("the pre-state needs each job's trace start")
        before = jobs.with_columns(pl.Series("__start", start)).filter(submit < t0)
        ran = pl.min_horizontal("runtime", "walltime")
        queued = before.filter(pl.col("__start") >= t0).with_columns(
            pl.lit(0.0).alias("submit_time"), pl.lit(False).alias("prestarted")
        ).sort("job_id")
        running = before.filter((pl.col("__start") < t0) & (pl.col("__start") + ran > t0))
        elapsed = pl.lit(t0) - pl.col("__start")
        running = running.with_columns(
            pl.lit(0.0).alias("submit_time"),
            (pl.col("runtime") - elapsed).alias("runtime"),
            (pl.col("walltime") - elapsed).alias("walltime"),
            pl.lit(True).alias("prestarted"),
        )
        if "power_profile" in running.columns:
            skip = (elapsed / sample_period).floor().cast(pl.Int64)
            running = running.with_columns(pl.col("power_profile").list.slice(skip))
        parts = [running.drop("__start"), queued.drop("__start")]
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
    start, where = trace_starts(jobs, schedule, machine_size=size) if spec.prestate else (None, "not used")
    period = float(read.provenance.header.get("sample_period", 20.0) or 20.0)
    out = []
    for k, t0 in enumerate(window_starts(jobs, spec)):
        window = cut_window(jobs, float(t0), spec.hours, start=start, prestate=spec.prestate, sample_period=period)
        prov = dataclasses.replace(
            read.provenance,
            source=f"{read.provenance.source}#window{k}",
            n_jobs=window.height,
            header={**read.provenance.header, "window": {
                "index": k, "start": float(t0), "hours": spec.hours, "seed": spec.seed, "prestate": spec.prestate,
                "trace_schedule": where, "prestarted": int(window["prestarted"].sum()),
            }},
            conventions=[*read.provenance.conventions, _convention(spec, where)],
        )
        out.append((float(t0), ReadResult(window, read.rejects.head(0), prov)))
    return out


def _convention(spec: WindowSpec, where: str) -> str:
    pre = (f"pre-state from the {where} schedule: queued jobs re-submitted at 0 in job-id order, running jobs "
           "prestarted at 0 with their remaining runtime, walltime and profile") if spec.prestate else "no pre-state"
    return f"window of {spec.hours:g} h (seed {spec.seed}), submit times shifted to the window start; {pre}"


