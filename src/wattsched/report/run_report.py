"""Figures and an HTML report for ONE ``simulate`` run, read back from its output folder.

One figure, four panels on one time axis: the Gantt chart with the concrete node allocation
(``metrics.allocation``, the same one ``--format evalys`` writes), the utilisation, the queue length and, for a
power run, the platform's dynamic power against the cap. Drawn with matplotlib, like the campaign figures and
``report/gantt.py`` whose step resampling it reuses: a static PNG + SVG needs no browser or kaleido, and the
HTML report embeds the PNG so it is one self-contained file (plotly stays the dashboard's stack).
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.collections import PolyCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from wattsched.metrics import system_timeline
from wattsched.metrics.allocation import allocate_nodes, node_blocks, parse_interval_set
from wattsched.report.gantt import resample_step
from wattsched.report.style import RASTERISE_ABOVE, save_figure

__all__ = ["RunData", "plot_run", "read_run", "write_run_report"]

#: evalys / Batsim column → the canonical schedule column (``--format evalys`` runs are read back with them).
EVALYS_TO_CANONICAL = {
    "submission_time": "submit_time",
    "starting_time": "start_time",
    "finish_time": "end_time",
    "requested_number_of_resources": "size",
    "requested_time": "walltime",
    "waiting_time": "wait",
}


@dataclass
class RunData:
    """A run folder read back: its summary, its schedule (canonical column names) and its power timeline."""

    path: Path
    summary: dict[str, Any]
    jobs: pl.DataFrame
    power: pl.DataFrame | None

    @property
    def machine_size(self) -> int:
        return int(self.summary["run"]["machine_size"])


def read_run(run_dir: str | Path) -> RunData:
    """The run written by ``wattsched simulate --output run_dir`` (any ``--format``); a ValueError naming the
    folder and the missing file otherwise."""
    path = Path(run_dir)
    summary_path = path / "summary.json"
    if not summary_path.is_file():
        raise ValueError(f"{path}: not a simulate output folder (no summary.json)")
    try:
        summary = json.loads(summary_path.read_text())
        summary["run"]["machine_size"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{summary_path}: not a simulate summary ({type(exc).__name__}: {exc})") from None
    jobs = _read_table(path, "jobs")
    if jobs is None:
        raise ValueError(f"{path}: no jobs.parquet or jobs.csv")
    jobs = jobs.rename({k: v for k, v in EVALYS_TO_CANONICAL.items() if k in jobs.columns})
    missing = [c for c in ("job_id", "submit_time", "start_time", "end_time", "size") if c not in jobs.columns]
    if missing:
        raise ValueError(f"{path}: the jobs table lacks column(s) {', '.join(missing)}")
    if "killed" not in jobs.columns and "success" in jobs.columns:  # evalys: success 0 = killed at walltime
        jobs = jobs.with_columns((pl.col("success") == 0).alias("killed"))
    if "wait" not in jobs.columns:
        jobs = jobs.with_columns((pl.col("start_time") - pl.col("submit_time")).alias("wait"))
    return RunData(path, summary, jobs, _read_table(path, "power"))


def _read_table(path: Path, stem: str) -> pl.DataFrame | None:
    """``stem.parquet`` or ``stem.csv`` of the folder, None when neither exists; a ValueError naming the file
    when it cannot be read."""
    for name, read in ((f"{stem}.parquet", pl.read_parquet), (f"{stem}.csv", _read_csv)):
        if (path / name).is_file():
            try:
                return read(path / name)
            except (pl.exceptions.PolarsError, OSError) as exc:
                raise ValueError(f"{path / name}: cannot be read ({type(exc).__name__}: {exc})") from None
    return None


def _read_csv(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, infer_schema_length=None)


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


def plot_run(run: RunData, out_dir: str | Path, stem: str = "run") -> list[Path]:
    """The run's figure (Gantt, utilisation, queue length, and power against the cap when the run has power)
    as ``<stem>.png`` and ``.svg`` in ``out_dir``."""
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
    axes[-1].set_xlabel("time (h)")
    for ax in axes:
        ax.grid(alpha=0.25)
    last_end = float(run.jobs["end_time"].cast(pl.Float64).max() or 0.0)  # type: ignore[arg-type]
    first_submit = float(run.jobs["submit_time"].cast(pl.Float64).min() or 0.0)  # type: ignore[arg-type]
    end = max(last_end, float(t[-1] * h) if t.size else 0.0) / h
    start = min(first_submit / h, 0.0 if t.size == 0 else float(t[0]))
    axes[-1].set_xlim(start, end if end > start else start + 1.0)
    m = run.summary.get("metrics", {})
    source = Path(str(run.summary.get("workload", {}).get("source", "?"))).name
    util_mean, wait_mean = m.get("utilisation", float("nan")), m.get("wait_mean", float("nan"))
    fig.suptitle(
        f"{run.summary['run'].get('policy', '?')} on {source} — {run.jobs.height:,} jobs, {run.machine_size:,} "
        f"nodes, utilisation {util_mean:.3f}, mean wait {wait_mean:,.0f} s",
        fontsize=11,
    )
    return save_figure(fig, out_dir, stem)


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


def write_run_report(run_dir: str | Path) -> Path:
    """``run_dir/report.html``: the run's summary table and its figure (``run.png`` embedded, ``run.svg`` beside
    it). Returns the HTML file's path."""
    run = read_run(run_dir)
    png, svg = plot_run(run, run.path)
    rows = "\n".join(
        f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(_fmt(v))}</td></tr>"
        for section in ("metrics", "power")
        for k, v in (run.summary.get(section) or {}).items()
        if not isinstance(v, dict | list)
    )
    title = html.escape(f"{run.summary['run'].get('policy', '?')} on {run.summary['workload'].get('source', '?')}")
    image = base64.b64encode(png.read_bytes()).decode("ascii")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto}}td{{padding:2px 12px}}
tr:nth-child(even){{background:#f3f3f3}}img{{max-width:100%}}</style></head>
<body><h1>{title}</h1>
<p>{run.jobs.height:,} jobs on {run.machine_size:,} nodes. Gantt chart: node ids from the first-fit
allocation (lowest free contiguous block, else the lowest free nodes); colour: the job's wait.
Vector version: <a href="{svg.name}">{svg.name}</a>.</p>
<img alt="Gantt chart, utilisation, queue length and power of the run" src="data:image/png;base64,{image}">
<h2>Summary</h2><table>{rows}</table>
</body></html>
"""
    out = run.path / "report.html"
    out.write_text(page, encoding="utf-8")
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)
