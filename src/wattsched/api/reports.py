"""Simulate runs read back: the metrics of several runs side by side (``wattsched compare``) and the figures and
HTML report of one (``wattsched report``, ``simulate --html``), with the CLI's option names and defaults.

Both read what ``simulate --output`` wrote (``summary.json`` and the per-job tables, in any ``--format``), so a
run is compared or reported without simulating it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # the report package loads matplotlib: imported by the calls that use it
    import polars as pl

__all__ = ["RUN_REPORT_FIGURES", "RunComparison", "compare_runs", "write_run_report"]

#: The figure files :func:`write_run_report` writes next to ``report.html`` in the run folder.
RUN_REPORT_FIGURES = ("run.png", "run.svg")


class RunComparison(NamedTuple):
    """The comparison of runs: a table ``metric, <run A>, <run B>, ..., <run B> − <run A>, ...`` (differences
    against the first run) and notes (``jobs_compared``, ``jobs_per_run`` and, when the job metrics were
    recomputed over the common jobs, ``recomputed``). Unpacks as ``table, notes``."""

    table: pl.DataFrame
    notes: dict[str, Any]


def compare_runs(runs: Sequence[str | Path], *, common_jobs: bool = False) -> RunComparison:
    """Compare the metrics of two or more ``simulate --output`` folders (the first is the reference) from each
    run's summary. Runs over different job sets are not comparable as they are (their metrics average over
    different jobs): refused with a ValueError (``wattsched.report.compare.CompareError``) unless ``common_jobs``,
    which recomputes the job metrics over the jobs they share; a ValueError too for fewer than two runs or a
    folder that is not a readable run."""
    from wattsched.report.compare import compare_runs as compare

    table, notes = compare(runs, common=common_jobs)
    return RunComparison(table, notes)


def write_run_report(run: str | Path, time_from: str | None = None, time_to: str | None = None) -> Path:
    """Write ``run/report.html`` (the run's summary table and figure) and the figure itself,
    :data:`RUN_REPORT_FIGURES` beside it: the Gantt chart on the node allocation, utilisation, queue length, and
    power against the cap for a power run. ``time_from`` / ``time_to`` (``--from`` / ``--to``) zoom the figure:
    seconds of the run's clock, or ISO dates when the trace has a start time. Returns the HTML file's path; a
    ValueError for a folder that is not a run, unreadable tables, an impossible schedule or a bad instant."""
    from wattsched.report.run_report import write_run_report as write

    return write(run, time_from, time_to)
