"""Campaigns as functions: what ``wattsched campaign run|status|results|report``, ``rmap grid`` and ``eamc grid``
do, with their option names and defaults (docs/campaigns.md). The command line adds a progress bar and prints.

A campaign of any kind runs through the one runner (:mod:`wattsched.campaign.runner`: resumable, locally or on
Dask); the grids of papers 002 and 004 are campaigns whose spec is built from the grid's options here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from wattsched.campaign.runner import CampaignInterrupted, CampaignRun
from wattsched.core.store import atomic_table

if TYPE_CHECKING:  # the campaign modules load pydantic and the engine: imported by the calls that use them
    import polars as pl

    from wattsched.core.experiment import Experiment

__all__ = [
    "CampaignInterrupted",
    "CampaignReport",
    "CampaignRun",
    "RmapGridReport",
    "campaign_report",
    "campaign_status",
    "collect_results",
    "eamc_grid_experiment",
    "grid_report",
    "ignored_executor_options",
    "load_experiment",
    "partial_campaign_note",
    "rmap_grid_experiment",
    "rmap_grid_report",
    "run_campaign",
    "summary_tables",
]

Progress = Callable[[int, int], None]

#: The kinds whose ``campaign report --html`` writes an HTML page (the power dashboard, the queue report).
HTML_KINDS = ("power", "queue")


def load_experiment(spec: str | Path) -> Experiment:
    """A campaign file (.toml, .yaml or .json) of any kind, validated into its experiment."""
    from wattsched.campaign.kinds import load_experiment as load

    return load(spec)


def ignored_executor_options(executor: str | None, workers: int | None, address: str | None) -> list[str]:
    """The executor options a run ignores, each as a warning: ``address`` names a Dask scheduler and means
    nothing to local processes; a remote scheduler's cluster has its own workers, so ``workers`` means nothing to
    it."""
    notes = []
    if address is not None and executor != "dask":
        notes.append(
            f"--address is ignored: it names a Dask scheduler and the executor is {executor} (give --executor dask)"
        )
    if address is not None and executor == "dask" and workers is not None:
        notes.append("--workers is ignored: the Dask cluster at --address has its own workers")
    return notes


def run_campaign(
    experiment: Experiment,
    output: str | Path,
    *,
    executor: Literal["local", "dask"] | str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
    max_runs: int | None = None,
) -> CampaignRun:
    """Prepare the campaign once, then run every run not done yet (``campaign run``); safe to interrupt and run
    again. Raises ``CampaignInterrupted`` on Ctrl-C or SIGTERM (what finished is kept) and ``FolderBusyError``
    when another process runs a campaign in ``output``. A new campaign whose grid expands to more than
    ``max_runs`` runs (default: the spec's ``max_runs``, else 1,000,000) is refused (``CampaignError``) before
    anything is written."""
    from wattsched.campaign.runner import run_experiment

    options: dict[str, Any] = {"executor": executor, "workers": workers, "address": address, "max_runs": max_runs}
    if progress is not None:
        options["progress"] = progress
    if log is not None:
        options["log"] = log
    return run_experiment(experiment, output, **options)


def campaign_status(directory: Path) -> dict[str, Any]:
    """How many runs are done (``campaign status``): name, kind, done, runs, the two main parameters (``keys``)
    and a table of done/runs per pair of them (``per``)."""
    from wattsched.campaign.runner import status

    return status(directory)


def collect_results(directory: Path, output: Path) -> pl.DataFrame:
    """Every finished run in one table, written atomically to ``output`` (.parquet or .csv) and returned."""
    from wattsched.campaign.runner import load_results

    table = load_results(directory)
    atomic_table(table, output)
    return table


def summary_tables(directory: Path, aggregate: str = "mean") -> list[tuple[str, pl.DataFrame]]:
    """The campaign's summary tables, titled (a power campaign's: per cap and, with several caps, pooled)."""
    from wattsched.campaign.runner import summary_tables as tables

    return tables(directory, aggregate=aggregate)


def partial_campaign_note(directory: Path) -> str | None:
    """A warning when some planned runs have not finished: the tables then compare only the groups (window and
    cap, or window) that every setting finished; the note says how many groups that leaves out. None when all
    runs are done."""
    from wattsched.campaign.runner import load_results, status
    from wattsched.campaign.summary import incomplete_group_count

    state = status(directory)
    if state["done"] >= state["runs"]:
        return None
    message = (
        f"warning: partial campaign: {state['done']:,} of {state['runs']:,} runs done; the tables compare only "
        "the groups every setting has finished"
    )
    if state["kind"] == "power":
        left_out, total = incomplete_group_count(load_results(directory))
        message += f" ({left_out:,} of {total:,} (window, cap) groups left out)"
    return message


@dataclass(frozen=True)
class CampaignReport:
    """What ``campaign report`` wrote: the campaign's kind, the folder, the files, the summary tables, and the
    warnings to show (a partial campaign, an option that does not apply)."""

    kind: str
    output: Path
    paths: list[Path]
    tables: list[tuple[str, pl.DataFrame]]
    notes: list[str] = field(default_factory=list)
    dashboard: Path | None = None


def campaign_report(
    directory: Path,
    output: Path | None = None,
    *,
    html: bool = False,
    gantt_run: str | None = None,
    aggregate: str = "mean",
    workers: int | None = None,
) -> CampaignReport:
    """Figures (PNG and SVG) and tables of a campaign in ``output`` (default ``DIR/report``): a power campaign's
    figures and, with ``html``, its dashboard; a queue campaign's figure per workload and, with ``html``, its
    ``report.html`` (``dashboard`` is the page written; asked of another kind, ``html`` is a warning in
    ``notes``). A power campaign's figures are drawn on ``workers`` processes (default: one per core)."""
    from wattsched.campaign.kinds import open_experiment
    from wattsched.campaign.runner import report
    from wattsched.core.executors import default_workers
    from wattsched.report.dashboard import write_dashboard
    from wattsched.report.figures import write_figures
    from wattsched.report.queue_report import write_queue_figures, write_queue_html

    out = output or directory / "report"
    kind = open_experiment(directory).kind
    notes = []
    if html and kind not in HTML_KINDS:
        notes.append(
            f"warning: --html is ignored: the HTML report is drawn for {' and '.join(HTML_KINDS)} campaigns, "
            f"this one is {kind}"
        )
    partial = partial_campaign_note(directory)
    if partial is not None:
        notes.append(partial)
    paths = report(directory, out, aggregate=aggregate)
    dashboard = None
    if kind == "power":  # the power campaign's figures and dashboard are drawn by wattsched.report
        paths += write_figures(directory, out, gantt_run=gantt_run, workers=default_workers(workers))
        if html:
            dashboard = write_dashboard(directory, out / "dashboard.html")
            paths.append(dashboard)
    elif kind == "queue":  # one figure per workload, never pooled across traces
        figures = write_queue_figures(directory, out)
        paths += [p for f in figures for p in (f.png, f.svg)]
        if html:
            dashboard = write_queue_html(directory, out, figures, [n.removeprefix("warning: ") for n in notes])
            paths.append(dashboard)
    tables = summary_tables(directory, aggregate=aggregate)
    return CampaignReport(kind=kind, output=out, paths=paths, tables=tables, notes=notes, dashboard=dashboard)


def eamc_grid_experiment(
    *,
    jobs: int = 5000,
    mixes: list[str] | None = None,
    policies: list[str] | None = None,
    t_weights: list[float] | None = None,
    seeds: list[int] | None = None,
    data_dir: Path | None = None,
) -> Experiment:
    """Paper 002's evaluation grid (mixes × policies × t_weight × seeds) as a campaign of kind eamc
    (``eamc grid``; defaults: mixes W13, W33, W50; all six policies; t_weight 1 and 1.5; seed 0)."""
    from wattsched.campaign.kinds import parse_experiment

    spec: dict[str, Any] = {
        "kind": "eamc",
        "name": "eamc-grid",
        "data_dir": str(data_dir) if data_dir else None,
        "mixes": mixes if mixes is not None else ["W13", "W33", "W50"],
        "t_weights": t_weights if t_weights is not None else [1.0, 1.5],
        "seeds": seeds if seeds is not None else [0],
        "jobs": jobs,
        **({"policies": policies} if policies else {}),
    }
    return parse_experiment(spec, "eamc grid")


def grid_report(directory: Path) -> list[Path]:
    """A grid's report files in ``DIR/report`` (the kind's figures and tables)."""
    from wattsched.campaign.runner import report

    return report(directory, directory / "report")


def rmap_grid_experiment(
    *,
    traces: list[str] | None = None,
    bounds: list[float] | None = None,
    seed: int = 0,
    sample_share: float = 0.1,
    overestimate: float = 0.0,
    arrival_scale: float = 1.0,
    details: Path | None = None,
    cab_data: str = "calibrated",
) -> Experiment:
    """Paper 004's experiment as a campaign of kind rmap (``rmap grid``): traces × bounds × Traditional / Naive /
    Adaptive, oracle and model data (defaults: all four traces; 6,500 to 14,000 W)."""
    from wattsched.campaign.kinds import parse_experiment

    spec: dict[str, Any] = {
        "kind": "rmap",
        "name": "rmap-grid",
        "traces": traces if traces is not None else ["small", "large", "random1", "random2"],
        "bounds": bounds if bounds is not None else [6500.0, 8000.0, 10000.0, 12000.0, 14000.0],
        "seed": seed,
        "sample_share": sample_share,
        "overestimate": overestimate,
        "arrival_scale": arrival_scale,
        "details": str(details) if details is not None else None,
        "cab_data": cab_data,
    }
    return parse_experiment(spec, "rmap grid")


@dataclass(frozen=True)
class RmapGridReport:
    """An RMAP grid's report: the files, the summary on the default data, and, when the grid ran the large trace
    at 6,500 W, the improvement over Traditional per policy (the paper's Table 4 quantity, %)."""

    paths: list[Path]
    summary: pl.DataFrame
    table4: dict[str, float] | None


def rmap_grid_report(directory: Path) -> RmapGridReport:
    """Write an RMAP grid's report (also ``DIR/jobs.parquet`` and ``DIR/decisions.parquet``) and summarise it."""
    import polars as pl

    from wattsched.campaign.kinds import open_experiment
    from wattsched.studies.rmap.experiment import load_rmap_runs
    from wattsched.studies.rmap.results import rmap_summary, table4_check

    paths = grid_report(directory)
    jobs, _ = load_rmap_runs(directory)
    summary = rmap_summary(jobs)
    spec = open_experiment(directory).spec
    table4 = table4_check(summary) if "large" in spec.traces and 6500.0 in spec.bounds else None
    return RmapGridReport(paths=paths, summary=summary.filter(pl.col("default_data")), table4=table4)
