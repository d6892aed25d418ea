"""One simulation's figure, in memory: four panels on one time axis.

The Gantt chart with the concrete node allocation (``metrics.allocation``, the same one ``--format evalys``
writes), the utilisation, the queue length and, for a power run, the platform's dynamic power against the cap.
``RunOutput.plot()`` returns it; ``report.run_report`` saves it (PNG + SVG) and embeds it in ``report.html``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.collections import PolyCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from wattsched.metrics import system_timeline
from wattsched.metrics.allocation import allocate_nodes, node_blocks, parse_interval_set
from wattsched.plots.steps import resample_step
from wattsched.plots.style import RASTERISE_ABOVE

__all__ = ["EPOCH_LIKE_S", "RunData", "clock_origin", "node_rectangles", "parse_instant", "run_figure"]

#: Submit times above this many seconds (10 years) are read as Unix epoch seconds when the run does not say
#: where its clock starts: no trace is ten years long, and an axis in hours since 1970 reads "456000 h".
EPOCH_LIKE_S = 10 * 365.25 * 86_400.0


@dataclass
class RunData:
    """A run to draw: its summary, its schedule (canonical column names) and its power timeline; from a run in
    memory (``RunOutput``) or a run folder read back (``report.run_report.read_run``)."""

    path: Path
    summary: dict[str, Any]
    jobs: pl.DataFrame
    power: pl.DataFrame | None

    @property
    def machine_size(self) -> int:
        return int(self.summary["run"]["machine_size"])


def clock_origin(run: RunData) -> float | None:
    """The Unix time (s) of the run's t = 0: the workload's own (``summary.json``'s ``workload.clock_origin``:
    SWF's UnixStartTime, 0 for traces in epoch seconds, shifted to a window's start), else 0 when the submit times
    are themselves epoch seconds (:data:`EPOCH_LIKE_S`), else None (a synthetic trace: plain hours)."""
    origin = run.summary.get("workload", {}).get("clock_origin")
    if origin is not None:
        return float(origin)
    first = run.jobs["submit_time"].cast(pl.Float64).min() if run.jobs.height else None
    return 0.0 if first is not None and float(first) > EPOCH_LIKE_S else None  # type: ignore[arg-type]


def parse_instant(text: str, origin: float | None) -> float:
    """A ``--from`` / ``--to`` instant in the run's clock (s): seconds as a number, or, when the run has a date
    origin, an ISO date or date-time (``2022-01-03``, ``2022-01-03T12:00``; UTC unless it says otherwise)."""
    try:
        return float(text)
    except ValueError:
        pass
    if origin is None:
        raise ValueError(f"{text!r} is not a number of seconds (this run's clock has no date to read a date against)")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is neither seconds nor an ISO date (2022-01-03 or 2022-01-03T12:00)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() - origin


def _date_axis(ax: Any, origin: float, span_h: float) -> None:
    """Tick labels as UTC dates (with the hour on spans under four days) on an axis in hours since t = 0."""
    fmt = "%Y-%m-%d %H:%M" if span_h < 96 else "%Y-%m-%d"

    def label(x: float, _pos: int) -> str:
        return datetime.fromtimestamp(origin + x * 3600.0, tz=UTC).strftime(fmt)

    ax.xaxis.set_major_formatter(FuncFormatter(label))
    ax.tick_params(axis="x", labelrotation=20)


def node_rectangles(run: RunData) -> pl.DataFrame:
    """``row, start, end, node_lo, node_hi`` (``node_hi`` exclusive), one per contiguous block of a job's nodes:
    from ``allocated_resources`` when the run wrote it (evalys format), else computed the same way."""
    jobs = run.jobs
    if "allocated_resources" in jobs.columns:
        nodes = [parse_interval_set(x or "") for x in jobs["allocated_resources"].cast(pl.Utf8).to_list()]
    else:
        nodes = allocate_nodes(jobs, run.machine_size)
    rows, lo, hi = [], [], []
    for k, ids in enumerate(nodes):
        for first, end in node_blocks(ids):
            rows.append(k)
            lo.append(first)
            hi.append(end)
    r = np.asarray(rows, dtype=np.int64)
    return pl.DataFrame(
        {
            "row": r,
            "start": jobs["start_time"].cast(pl.Float64).to_numpy()[r],
            "end": jobs["end_time"].cast(pl.Float64).to_numpy()[r],
            "node_lo": np.asarray(lo, dtype=np.int64),
            "node_hi": np.asarray(hi, dtype=np.int64),
        }
    )


def run_figure(run: RunData, window: tuple[float | None, float | None] | None = None) -> Figure:
    """The run's figure: Gantt, utilisation, queue length, and power against the cap when the run has power.
    ``window`` zooms to ``(from, to)`` seconds of the run's clock (either may be None: the run's own end). The
    time axis reads as UTC dates when the run's clock has a date (:func:`clock_origin`), else in hours."""
    h = 3600.0
    rect = node_rectangles(run)
    power = run.power if run.power is not None and run.power.height and "dynamic" in run.power.columns else None
    has_power = power is not None
    panels = 4 if has_power else 3
    fig = Figure(figsize=(13, 3.2 + 2.2 * panels), layout="constrained")
    axes = fig.subplots(panels, 1, sharex=True, height_ratios=[3] + [1.2] * (panels - 1))
    gantt, util, queue = axes[0], axes[1], axes[2]

    s, e = rect["start"].to_numpy() / h, rect["end"].to_numpy() / h
    lo, hi = rect["node_lo"].to_numpy(), rect["node_hi"].to_numpy()
    verts = np.stack(
        [np.column_stack([s, lo]), np.column_stack([e, lo]), np.column_stack([e, hi]), np.column_stack([s, hi])], axis=1
    )
    wait = run.jobs["wait"].cast(pl.Float64).to_numpy()[rect["row"].to_numpy()] / h
    coll = PolyCollection(
        verts,  # type: ignore[arg-type]  # an (n, 4, 2) array of vertices, as matplotlib documents
        array=wait,
        cmap=colormaps["viridis"],
        norm=Normalize(0.0, float(np.percentile(wait, 99)) if wait.size and wait.max() > 0 else 1.0),
        edgecolors="white" if len(verts) < 200 else "none",
        linewidths=0.3 if len(verts) < 200 else 0.0,
        rasterized=len(verts) > RASTERISE_ABOVE,
    )
    gantt.add_collection(coll)
    gantt.set_ylim(0, run.machine_size)
    gantt.set_ylabel("node id")
    fig.colorbar(coll, ax=gantt, pad=0.01, aspect=30).set_label("job's wait (h)")

    timeline = system_timeline(run.jobs)
    t = timeline["time"].to_numpy() / h
    util.step(t, timeline["busy_units"].to_numpy() / run.machine_size, where="post", color="#0072B2", linewidth=0.8)
    util.set_ylim(0, 1.05)
    util.set_ylabel("utilisation")
    queue.step(t, timeline["queue_length"].to_numpy(), where="post", color="#D55E00", linewidth=0.8)
    queue.set_ylabel("queued jobs")
    if power is not None:
        _power_panel(axes[3], power)
    for ax in axes:
        ax.grid(alpha=0.25)
    last_end = float(run.jobs["end_time"].cast(pl.Float64).max() or 0.0)  # type: ignore[arg-type]
    first_submit = float(run.jobs["submit_time"].cast(pl.Float64).min() or 0.0)  # type: ignore[arg-type]
    end = max(last_end, float(t[-1] * h) if t.size else 0.0) / h
    start = min(first_submit / h, 0.0 if t.size == 0 else float(t[0]))
    if window is not None:
        start = window[0] / h if window[0] is not None else start
        end = window[1] / h if window[1] is not None else end
        if end <= start:
            raise ValueError(f"the zoom's end ({end * h:g} s) is not after its start ({start * h:g} s)")
    axes[-1].set_xlim(start, end if end > start else start + 1.0)
    origin = clock_origin(run)
    if origin is None:
        axes[-1].set_xlabel("time (h)")
    else:
        _date_axis(axes[-1], origin, end - start)
        axes[-1].set_xlabel("time (UTC)")
    m = run.summary.get("metrics", {})
    source = Path(str(run.summary.get("workload", {}).get("source", "?"))).name
    util_mean, wait_mean = m.get("utilisation", float("nan")), m.get("wait_mean", float("nan"))
    fig.suptitle(
        f"{run.summary['run'].get('policy', '?')} on {source} — {run.jobs.height:,} jobs, {run.machine_size:,} "
        f"nodes, utilisation {util_mean:.3f}, mean wait {wait_mean:,.0f} s",
        fontsize=11,
    )
    return fig


def _power_panel(ax: Any, power: pl.DataFrame) -> None:
    """The platform's dynamic power (kW) and the cap, as steps (resampled min–max bands on long timelines)."""
    h = 3600.0
    t = power["time"].cast(pl.Float64).to_numpy()
    dyn = power["dynamic"].cast(pl.Float64).to_numpy()
    if t.size > 8000:
        left, mean, vmin, vmax = resample_step(t, dyn, 2000)
        width = (left[1] - left[0]) if left.size > 1 else 0.0
        xs = np.column_stack([left, left + width]).ravel() / h
        ax.fill_between(xs, np.repeat(vmin, 2) / 1e3, np.repeat(vmax, 2) / 1e3, color="#0072B2", alpha=0.25, lw=0)
        ax.plot(xs, np.repeat(mean, 2) / 1e3, color="#0072B2", linewidth=0.8, label="dynamic power")
    else:
        ax.step(t / h, dyn / 1e3, where="post", color="#0072B2", linewidth=0.8, label="dynamic power")
    if "cap" in power.columns and power["cap"].is_not_null().any():
        cap = power["cap"].cast(pl.Float64).to_numpy()
        ax.step(t / h, cap / 1e3, where="post", color="black", linewidth=1.2, label="cap")
    ax.set_ylabel("dynamic power (kW)")
    ax.legend(loc="upper right", fontsize=8)
