"""The HTML report of ONE ``simulate`` run, read back from its output folder (any ``--format``).

The figure is :func:`wattsched.plots.run.run_figure` (matplotlib: a static PNG + SVG needs no browser or
kaleido), embedded as PNG so that the HTML report is one self-contained file (plotly stays the dashboard's stack).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import polars as pl
from jinja2 import Environment, PackageLoader

from wattsched.core.store import atomic_write
from wattsched.core.structured_input import load_json
from wattsched.plots.run import RunData, clock_origin, parse_instant, run_figure
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
        summary = load_json(summary_path.read_text(), summary_path)  # nested at most MAX_DEPTH
        summary["run"]["machine_size"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
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


def plot_run(
    run: RunData, out_dir: str | Path, stem: str = "run", window: tuple[float | None, float | None] | None = None
) -> list[Path]:
    """The run's figure (:func:`wattsched.plots.run.run_figure`, zoomed to ``window`` seconds of the run's clock)
    as ``<stem>.png`` and ``.svg`` in ``out_dir``."""
    return save_figure(run_figure(run, window), out_dir, stem)


def write_run_report(run_dir: str | Path, time_from: str | None = None, time_to: str | None = None) -> Path:
    """``run_dir/report.html``: the run's summary table and its figure (``run.png`` embedded, ``run.svg`` beside
    it), rendered from ``templates/run_report.html.j2``. ``time_from`` / ``time_to`` zoom the figure: seconds of
    the run's clock, or ISO dates when its clock has a date (:func:`wattsched.plots.run.parse_instant`). Returns
    the HTML file's path."""
    run = read_run(run_dir)
    origin = clock_origin(run)
    window = None
    if time_from is not None or time_to is not None:
        window = (
            parse_instant(time_from, origin) if time_from is not None else None,
            parse_instant(time_to, origin) if time_to is not None else None,
        )
    png, svg = plot_run(run, run.path, window=window)
    rows = [
        (str(k), _fmt(v))
        for section in ("metrics", "power")
        for k, v in (run.summary.get(section) or {}).items()
        if not isinstance(v, dict | list)
    ]
    env = Environment(loader=PackageLoader("wattsched.report", "templates"), autoescape=True)
    page = env.get_template("run_report.html.j2").render(
        title=f"{run.summary['run'].get('policy', '?')} on {run.summary['workload'].get('source', '?')}",
        jobs=f"{run.jobs.height:,}",
        nodes=f"{run.machine_size:,}",
        zoom=_zoom_text(window),
        svg=svg.name,
        png=base64.b64encode(png.read_bytes()).decode("ascii"),
        rows=rows,
    )
    out = run.path / "report.html"
    atomic_write(out, page)
    return out


def _zoom_text(window: tuple[float | None, float | None] | None) -> str:
    if window is None:
        return ""
    lo, hi = ("start" if x is None else f"{x:,.0f} s" for x in window)
    return f"The figure shows {lo} to {hi} of the run's clock."


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)
