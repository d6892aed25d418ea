"""The HTML report of ONE ``simulate`` run, read back from its output folder (any ``--format``).

The figure is :func:`wattsched.plots.run.run_figure` (matplotlib: a static PNG + SVG needs no browser or
kaleido), embedded as PNG so that the HTML report is one self-contained file (plotly stays the dashboard's stack).
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.store import atomic_write
from wattsched.plots.run import RunData, run_figure
from wattsched.plots.style import save_figure

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


def plot_run(run: RunData, out_dir: str | Path, stem: str = "run") -> list[Path]:
    """The run's figure (:func:`wattsched.plots.run.run_figure`) as ``<stem>.png`` and ``.svg`` in ``out_dir``."""
    return save_figure(run_figure(run), out_dir, stem)


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
    atomic_write(out, page)
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)
