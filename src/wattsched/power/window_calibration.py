"""Per-window load and uncapped power of a workload: what decides how a power cap binds (paper 000, issue 14).

A power-capped experiment on workload windows only means something if each window looks like the machine it
stands for: enough work offered that the cap binds, and an uncapped platform power inside the platform's
dynamic range (on Marconi100 the highest dynamic power observed in 2022 is 719,880 W; a synthetic window that
draws more without a cap is not a Marconi100 window). :func:`window_calibration` measures, for every window
that :func:`wattsched.engine.windows.cut_windows` builds, the quantities that decide this:

- ``offered_load``: Σ size·runtime of the jobs *submitted inside* the window / (nodes · window length);
- ``backlog_machine_hours``: Σ size·runtime of the pre-state (jobs submitted before the window, still queued
  or running at its start; their remaining runtime) / nodes, in hours: how long the full machine needs to
  clear what is there at t = 0;
- ``busy_nodes_t0`` and ``queued_t0``: nodes busy and jobs still waiting just after the first scheduling pass
  of an uncapped EASY run of the window (``queued_t0 > 0``: a backlog, so a cap at t = 0 binds);
- ``peak_dynamic``, ``mean_dynamic_cap``, ``mean_dynamic``: the uncapped EASY run's dynamic power as a
  fraction of the platform's dynamic range: its maximum over the window, its mean over the cap window
  (``cap_hours``, 3 h in paper 000) and its mean over the whole window.

The uncapped run is the paper's own baseline (EASY without a cap) on the window exactly as a campaign builds
it (same ``WindowSpec``, same pre-state), so these numbers are those a campaign's baseline run would show.
"""

from __future__ import annotations

import polars as pl

from wattsched.core.schema import ReadResult
from wattsched.engine.simulate import simulate
from wattsched.engine.windows import WindowSpec, cut_windows
from wattsched.power.actual_power import power_steps
from wattsched.power.cap_metrics import cap_metrics
from wattsched.power.platform import Platform, load_platform

__all__ = ["WINDOW_CALIBRATION_COLUMNS", "window_calibration"]

#: Columns of :func:`window_calibration`'s table, in order.
WINDOW_CALIBRATION_COLUMNS: tuple[str, ...] = (
    "window",
    "start_h",
    "jobs",
    "offered_load",
    "prestate_jobs",
    "backlog_machine_hours",
    "busy_nodes_t0",
    "queued_t0",
    "peak_dynamic",
    "mean_dynamic_cap",
    "mean_dynamic",
)


def window_calibration(
    read: ReadResult,
    spec: WindowSpec | None = None,
    *,
    platform: str | Platform = "marconi100",
    cap_hours: float = 3.0,
) -> pl.DataFrame:
    """One row per window of ``spec`` (default: ``WindowSpec()``, 30 windows of 24 h) with the columns of
    ``WINDOW_CALIBRATION_COLUMNS`` (module docstring); power fractions are of ``platform.dynamic_range``.

    The workload needs ``power_profile`` (sample period from its provenance, 20 s by default).
    """
    spec = spec if spec is not None else WindowSpec()
    plat = load_platform(platform)
    if "power_profile" not in read.jobs.columns:
        raise ValueError("window_calibration needs per-job power profiles (a 'power_profile' column)")
    if not 0 < cap_hours <= spec.hours:
        raise ValueError(f"cap_hours must be in (0, {spec.hours}], got {cap_hours}")
    nodes = plat.nodes
    period = float(read.provenance.header.get("sample_period", 20.0) or 20.0)
    length = spec.hours * 3600.0
    jobs = read.jobs
    submit = jobs["submit_time"].to_numpy()
    ids = jobs["job_id"].to_numpy()
    work = (jobs["size"].cast(pl.Float64) * jobs["runtime"].cast(pl.Float64)).to_numpy()
    rows = []
    for k, (t0, window) in enumerate(cut_windows(read, spec, machine_size=nodes)):
        w = window.jobs
        inside = (submit >= t0) & (submit < t0 + length)
        n_inside = int(inside.sum())
        pre = w.filter(~pl.col("job_id").is_in(ids[inside]))  # the pre-state: submitted before t0
        pre_work = float((pre["size"].cast(pl.Float64) * pre["runtime"].cast(pl.Float64)).sum())
        sched = simulate(w, "easy", nodes).schedule
        at0 = sched.filter(pl.col("submit_time") <= 0.0)
        started0 = at0["start_time"].to_numpy() <= 0.0
        timeline = power_steps(sched, w.select("job_id", "power_profile"), plat, period=period)
        whole = cap_metrics(timeline, length)
        capped = cap_metrics(timeline, cap_hours * 3600.0)
        rng = plat.dynamic_range
        rows.append(
            {
                "window": k,
                "start_h": t0 / 3600.0,
                "jobs": n_inside,
                "offered_load": float(work[inside].sum()) / (nodes * length),
                "prestate_jobs": pre.height,
                "backlog_machine_hours": pre_work / nodes / 3600.0,
                "busy_nodes_t0": int(at0["size"].to_numpy()[started0].sum()),
                "queued_t0": int((~started0).sum()),
                "peak_dynamic": whole["max_dynamic_w"] / rng,
                "mean_dynamic_cap": capped["mean_dynamic_w"] / rng,
                "mean_dynamic": whole["mean_dynamic_w"] / rng,
            }
        )
    table = pl.DataFrame(rows, schema_overrides={"window": pl.Int64, "jobs": pl.Int64})
    return table.select(WINDOW_CALIBRATION_COLUMNS).with_columns(
        pl.col("busy_nodes_t0", "queued_t0", "prestate_jobs").cast(pl.Int64)
    )
