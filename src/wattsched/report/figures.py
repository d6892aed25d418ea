"""Static figures of a campaign directory (PNG and SVG), the equivalents of paper 000's Figs. 3–7 plus a Gantt
chart of one run with its power timeline.

- per-metric box plots over workload windows, one facet per cap (and per policy when the grid has several):
  mean power in the window against the cap (Fig. 4), turnaround increase (Fig. 5), share of the window above the
  cap (Fig. 6), max-turnaround increase (Fig. 7c), share of jobs started in the window (Fig. 7d) and the maximum
  instantaneous cap break;
- a Gantt chart of one run (jobs over time × nodes) above its dynamic power and cap, on one time axis, which
  shows *why* a run breaks or under-uses the cap;
- prediction errors (Fig. 3): per-user MAE of the power predictor against a global-mean baseline, and predicted
  against true values.

Figures are drawn on bare :class:`matplotlib.figure.Figure` objects (no pyplot), so that making them changes
no global state and needs no display.

Why two stacks (matplotlib here, plotly in :mod:`wattsched.report.dashboard`), measured for issue 16 on the
22-run campaign of ``tests/test_campaign_report.py``: the figures drawn twice are 288 lines of matplotlib
(``plot_metric`` and its layout, ``plot_gantt``, the two prediction plots) against 326 of plotly (``metric_figure``,
``gantt_figure``, the two prediction figures); ``plot_policies`` (paper 000's Fig. 8) has no plotly twin. The data
behind them (``MetricFigure``,
``gantt_data``, ``resample_step``, ``per_user_errors``) is shared already. Exporting the plotly figures through
kaleido 1.5 instead works offline only with a Chromium on the machine: kaleido is a pip package but its browser
is not (its ``get_chrome`` downloads one from the network; Debian's ``chromium`` package is 300+ MB of system
packages), so ``wattsched demo``, ``campaign report`` and ``reproduce 000`` would fail on a plain ``pip install``.
With Debian's Chromium present, the same 14 files (6 metrics and the Gantt chart, PNG and SVG) took 13.4 s
(0.5 s to build the figures, 5.0 s of it to start Chromium) against 9.0 s with matplotlib, and 2.4 MB against
1.4 MB (the Gantt SVG alone 1.9 MB). The studies' figures and the single-run figures are matplotlib too. So the
static figures stay matplotlib, and plotly draws only the interactive HTML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wattsched.campaign.runner import load_results
from wattsched.campaign.summary import (
    capped_runs,
)
from wattsched.core.executors import map_tasks
from wattsched.core.store import CampaignError
from wattsched.report.gantt import default_gantt_run, gantt_data, plot_gantt
from wattsched.report.metric_figures import METRICS, plot_metric
from wattsched.report.prediction_figures import (
    plot_prediction_errors,
    plot_prediction_scatter,
    predicted_metrics,
    prediction_file,
    prediction_names,
)

__all__ = ["write_figures"]

# ------------------------------------------------------------------------------------------------------- all


def write_figures(
    campaign_dir: str | Path, out_dir: str | Path, *, gantt_run: str | None = None, workers: int = 1
) -> list[Path]:
    """Every static figure of a campaign (PNG and SVG) in ``out_dir``; returns the files written. ``gantt_run``
    is the run id drawn as a Gantt chart (default: :func:`default_gantt_run`).

    Each figure is one task over ``workers`` processes: matplotlib's layout and rendering are single-threaded,
    and the demo's 9 figures took 14.6 of its 28 s on one core (docs/performance.md, issue 32). The files are
    the same on any number of workers."""
    results = load_results(campaign_dir)
    if capped_runs(results).is_empty():
        raise CampaignError(f"{campaign_dir}: no finished capped run yet (run the campaign first)")
    run = gantt_run or default_gantt_run(campaign_dir, results)
    tasks: list[tuple[Any, ...]] = [("metric", results, key, out_dir) for key in METRICS]
    tasks += [("gantt", campaign_dir, run, out_dir)]
    tasks += [("prediction", campaign_dir, name, out_dir) for name in prediction_names(campaign_dir)]
    drawn = map_tasks(_draw, tasks, workers=max(1, min(workers, len(tasks))))
    return [path for paths in drawn for path in paths]


def _draw(task: tuple[Any, ...]) -> list[Path]:
    """One figure of :func:`write_figures` (a picklable task): its files."""
    kind, source, what, out_dir = task
    if kind == "metric":
        return plot_metric(source, what, out_dir)  # the results, read once
    if kind == "gantt":
        return plot_gantt(gantt_data(source, what), out_dir)
    frame, report = prediction_file(source, what)
    if not predicted_metrics(frame):
        return []
    paths: list[Path] = []
    if "user_id" in frame.columns:  # per-user errors need users
        paths += plot_prediction_errors(frame, out_dir, what, str(report.get("method", "")))
    return paths + plot_prediction_scatter(frame, out_dir, what)
