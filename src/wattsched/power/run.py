"""Power for a run: estimates from a power source, the policy's check and cap, the actual power timeline and
the power metrics against an uncapped EASY baseline (paper 000's protocol, docs/semantics.md §3.7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from wattsched.engine.simulate import SimulationError, simulate
from wattsched.policies.powercheck import PowerCheck
from wattsched.power.actual_power import power_steps
from wattsched.power.cap_metrics import power_summary
from wattsched.power.compact_timeline import PowerSteps
from wattsched.power.platform import (
    Platform,
    PowerCapSchedule,
    SigmaScaling,
    job_dynamic_estimates,
    naive_estimates,
)

POWER_SOURCES = ("real", "predicted", "naive")
#: How a job's σ grows with its nodes: ``nodes`` (σ_job = nodes·σ_node, correlated nodes) or ``sqrt``
#: (√nodes·σ_node, independent nodes).
SIGMA_SCALINGS = ("nodes", "sqrt")
#: Per-node summaries each source reads (W): measured ones, or a predictor's.
SOURCE_COLUMNS = {
    "real": ("power_mean", "power_max", "power_std"),
    "predicted": ("pred_power_mean", "pred_power_max", "pred_power_std"),
}
ESTIMATE_COLUMNS = ("est_dyn_mean", "est_dyn_max", "est_dyn_std")


def sigma_scaling_of(value: str) -> SigmaScaling:
    """``value`` as one of :data:`SIGMA_SCALINGS`; a one-line ValueError naming the option otherwise."""
    if value == "nodes":
        return "nodes"
    if value == "sqrt":
        return "sqrt"
    raise ValueError(f"sigma_scaling (--sigma-scaling) must be {' or '.join(SIGMA_SCALINGS)}, got {value!r}")


@dataclass(frozen=True)
class PowerSetup:
    """What a power-aware run needs. ``window_end`` is where the P0 metrics' window ends (default: the cap's
    first change, else the run's end). The ``naive`` check always uses the naive source. ``platform_source``: the
    preset or file the platform came from, for messages (empty: the platform's name is said instead).

    Checked at construction, so that a bad value fails before a simulation starts: ``source`` is one of
    :data:`POWER_SOURCES`, ``sigma_scaling`` one of :data:`SIGMA_SCALINGS`, ``sample_period`` positive."""

    platform: Platform
    check: PowerCheck
    source: str = "real"
    cap: PowerCapSchedule | None = None
    window_end: float | None = None
    sample_period: float = 20.0
    subtract_idle: bool = True  # [AMBIG-0.3]: dynamic estimates nodes·(x̂ − idle); False = the paper's literal nodes·x̂
    sigma_scaling: SigmaScaling = "nodes"  # see SIGMA_SCALINGS
    platform_source: str = ""

    def __post_init__(self) -> None:
        if self.source not in POWER_SOURCES:
            raise ValueError(f"unknown power source {self.source!r}; choose one of {', '.join(POWER_SOURCES)}")
        sigma_scaling_of(self.sigma_scaling)  # a caller without type checking may pass any string
        if not self.sample_period > 0:
            raise ValueError(f"the power sample period must be positive, got {self.sample_period!r} s")

    @property
    def estimates(self) -> str:
        """The estimates the check reads: its own when it brings them (``naive``: every node at the platform's
        max − idle, checked like max), else ``source``."""
        return self.check.rule.source or self.source


def with_estimates(jobs: pl.DataFrame, setup: PowerSetup) -> pl.DataFrame:
    """Add the job-level dynamic estimate columns (W) the policy's power check reads.

    ``real``/``predicted``: nodes × (per-node value − idle) and nodes × σ ([AMBIG-0.3]); ``naive``: nodes × (the
    platform's max node power − idle). A job that never ran (runtime 0) and has no measured power is estimated at 0 W.
    """
    size = jobs["size"].to_numpy()
    if setup.estimates == "naive":
        m, mx, s = naive_estimates(size, setup.platform.naive_node_watts(setup.subtract_idle))
    else:
        columns = SOURCE_COLUMNS[setup.estimates]
        missing = [c for c in columns if c not in jobs.columns]
        if missing:
            hint = " (the per-node estimates a power predictor writes)" if setup.estimates == "predicted" else ""
            raise SimulationError(f"--power-source {setup.estimates} needs per-node columns {missing}{hint}")
        values = []
        for c in columns:
            v = jobs[c].cast(pl.Float64).to_numpy().astype(np.float64, copy=True)
            unknown = ~np.isfinite(v)
            never_ran = jobs["runtime"].to_numpy() == 0
            if (unknown & ~never_ran).any():
                job = jobs["job_id"][int(np.flatnonzero(unknown & ~never_ran)[0])]
                raise SimulationError(f"column {c!r} has no value for job {job}, which runs; cannot estimate its power")
            v[unknown] = setup.platform.idle_watts if c != columns[2] else 0.0
            values.append(v)
        mean, peak, std = values
        m, mx, s = job_dynamic_estimates(
            size,
            mean,
            peak,
            std,
            setup.platform.idle_watts,
            subtract_idle=setup.subtract_idle,
            sigma_scaling=setup.sigma_scaling,
        )
    return jobs.with_columns(
        pl.Series(ESTIMATE_COLUMNS[0], m), pl.Series(ESTIMATE_COLUMNS[1], mx), pl.Series(ESTIMATE_COLUMNS[2], s)
    )


def never_fit(jobs: pl.DataFrame, setup: PowerSetup) -> np.ndarray:
    """Jobs whose estimate alone fails the check under the highest cap of the schedule: they could never start,
    so a power-aware run rejects them at submission (as Batsim's easy.cpp rejects jobs larger than the
    machine) instead of waiting for ever. Needs the estimate columns (``with_estimates``)."""
    if setup.cap is None or not setup.check.active:
        return np.zeros(jobs.height, dtype=bool)
    caps = [np.inf if c is None else float(c) for c in setup.cap.caps]
    top = max(caps)
    m, mx, s = (jobs[c].to_numpy() for c in ESTIMATE_COLUMNS)
    return setup.check.rule.never_fits(m, mx, s, top)


def why_no_job_fits(jobs: pl.DataFrame, setup: PowerSetup, source: str) -> str:
    """The one line saying why none of ``jobs`` (with estimates, ``source``'s) could ever start under ``setup``,
    when :func:`never_fit` holds for every one. Two causes, told apart because their fixes differ: the platform's
    dynamic range is itself below every job's estimate (even a cap of the whole range fails them: its watts are
    wrong, e.g. max_node_watts equal to idle_watts but for 10^-9 W), named by its file; or the cap is too low for
    these jobs (raise it)."""
    platform = setup.platform
    caps = [np.inf if c is None else float(c) for c in setup.cap.caps] if setup.cap is not None else [np.inf]
    m, mx, s = (jobs[c].to_numpy() for c in ESTIMATE_COLUMNS)
    check = setup.check.name
    if setup.check.rule.never_fits(m, mx, s, platform.dynamic_range).all():
        where = setup.platform_source or f"platform {platform.name!r}"
        per_node = platform.max_node_watts - platform.idle_watts
        return (
            f"{where}: the platform's dynamic range is too small: {platform.dynamic_range:.3g} W (max_node_watts −"
            f" idle_watts = {per_node:.3g} W a node), below the estimated power of each of the {jobs.height:,} jobs"
            f" of {source} under the {check} check, so none could ever start, even capped at the whole range; check"
            " the platform's watts"
        )
    return (
        f"{source}: none of its {jobs.height:,} jobs could ever start: each one's estimated power alone fails the"
        f" {check} check under the highest cap ({max(caps):.3g} W); raise the cap"
    )


def reject_never_fitting(
    jobs: pl.DataFrame, rejects: pl.DataFrame, setup: PowerSetup, source: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Move the jobs that could never start under ``setup`` from the job table to the rejects, with why."""
    bad = never_fit(jobs, setup)
    if not bad.any() or setup.cap is None:  # without a cap no job is ever rejected (never_fit)
        return jobs, rejects
    caps = [np.inf if c is None else float(c) for c in setup.cap.caps]
    gone = jobs.filter(pl.Series(bad))
    rows = pl.DataFrame(
        {
            "source": [source] * gone.height,
            "line": pl.Series([None] * gone.height, dtype=pl.Int64),
            "job_id": gone["job_id"],
            "field": ["power"] * gone.height,
            "reason": [
                f"its estimated power alone fails the {setup.check.name} check under the highest cap "
                f"({max(caps):,.0f} W): it could never start"
            ]
            * gone.height,
            "raw": [
                f"nodes={q} est_dyn_mean={m:.0f}W est_dyn_max={x:.0f}W est_dyn_std={d:.0f}W"
                for q, m, x, d in gone.select("size", *ESTIMATE_COLUMNS).iter_rows()
            ],
        },
        schema=rejects.schema,
    )
    return jobs.filter(pl.Series(~bad)), pl.concat([rejects, rows])


def profiles_of(jobs: pl.DataFrame) -> pl.DataFrame:
    """Each job's power profile: the ``power_profile`` list column, else a flat profile at nodes × power_mean
    (held for the whole run), so that tables with summaries only still get a timeline."""
    if "power_profile" in jobs.columns:
        return jobs.select("job_id", "power_profile")
    if "power_mean" not in jobs.columns:
        raise SimulationError("the power timeline needs a power_profile column or per-node power_mean")
    flat = (pl.col("power_mean").fill_null(0.0) * pl.col("size")).cast(pl.Float32)
    return jobs.select("job_id", pl.concat_list(flat).alias("power_profile"))


def window_end_of(setup: PowerSetup, schedule: pl.DataFrame) -> float:
    if setup.window_end is not None:
        return float(setup.window_end)
    changes = setup.cap.change_times() if setup.cap is not None else ()
    return float(changes[0]) if changes else float(schedule.select(pl.col("end_time").max()).item())


#: The uncapped EASY schedules this process computed last: (rows, machine size, kill grace) → (jobs, schedule).
_REFERENCES: dict[tuple[int, int, float], list[tuple[pl.DataFrame, pl.DataFrame]]] = {}
_REFERENCE_CACHE = 4


def uncapped_easy(jobs: pl.DataFrame, machine_size: int, kill_grace: float) -> pl.DataFrame:
    """The baseline's schedule: ``jobs`` under EASY without a cap. A campaign runs every check and cap of a window
    against the same baseline (paper 000: 45 runs a window, 2 simulations each), so the last few are kept and
    one is reused when its job table is equal, every column and row, to this one: 26 ms of a 147 ms run on
    paper 000's windows (docs/performance.md, issue 32). Polars frames are immutable: a kept one cannot change."""
    key = (jobs.height, machine_size, float(kill_grace))
    for kept, schedule in _REFERENCES.get(key, ()):
        if kept.equals(jobs):
            return schedule
    schedule = simulate(jobs, "easy", machine_size, kill_grace=kill_grace).schedule
    while sum(map(len, _REFERENCES.values())) >= _REFERENCE_CACHE:
        oldest = next(iter(_REFERENCES))
        _REFERENCES[oldest].pop(0)
        if not _REFERENCES[oldest]:
            del _REFERENCES[oldest]
    _REFERENCES.setdefault(key, []).append((jobs, schedule))
    return schedule


def power_outputs(
    jobs: pl.DataFrame,
    schedule: pl.DataFrame,
    setup: PowerSetup,
    machine_size: int,
    *,
    baseline: bool = True,
    kill_grace: float = 0.0,
) -> tuple[PowerSteps, dict[str, Any]]:
    """The actual power timeline (compact: :class:`PowerSteps`) and the power summary (with turnaround changes
    against uncapped EASY, run with the same ``kill_grace``)."""
    if setup.platform.nodes != machine_size:
        raise SimulationError(
            f"platform {setup.platform.name!r} has {setup.platform.nodes} nodes but the machine has {machine_size}"
        )
    profiles = profiles_of(jobs)
    timeline = power_steps(schedule, profiles, setup.platform, setup.cap, period=setup.sample_period)
    prestarted, pre_timeline = None, None
    if "prestarted" in jobs.columns and jobs["prestarted"].any():
        flags = schedule.select("job_id").join(
            jobs.select("job_id", "prestarted"), on="job_id", how="left", maintain_order="left"
        )["prestarted"]
        prestarted = flags.fill_null(False).to_numpy().astype(bool)
        pre_timeline = power_steps(
            schedule.filter(pl.Series(prestarted)), profiles, setup.platform, setup.cap, period=setup.sample_period
        )
    reference = uncapped_easy(jobs, machine_size, kill_grace) if baseline else None
    summary = power_summary(
        timeline, schedule, window_end_of(setup, schedule), reference, prestate=pre_timeline, prestarted=prestarted
    )
    summary.update(
        {
            "power_check": setup.check.name,
            "power_source": setup.estimates,
            "k": setup.check.k,
            "reservation": setup.check.reservation,
            "platform": setup.platform.name,
            "baseline": "easy without a power cap" if baseline else None,
        }
    )
    return timeline, summary
