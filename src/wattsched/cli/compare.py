"""``wattsched compare RUN_A RUN_B [RUN_C...]``: the metrics of simulate runs side by side, with differences;
``wattsched report RUN``: the figures and HTML report of one run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from wattsched.cli.common import console, emit_json, err, fail


def compare(
    runs: Annotated[
        list[Path], typer.Argument(help="Two or more `simulate --output` folders; the first is the reference.")
    ],
    common_jobs: Annotated[
        bool,
        typer.Option(help="Runs over different job sets: recompute the job metrics over the jobs they share."),
    ] = False,
) -> None:
    """Compare the metrics of simulate runs (from each run's summary.json), with each run's difference from the
    first; runs over different job sets are refused unless --common-jobs."""
    # deferred: the report package loads matplotlib; `wattsched --help` should not
    from wattsched.api.reports import compare_runs

    try:
        table, notes = compare_runs(runs, common_jobs=common_jobs)
    except ValueError as exc:  # CompareError, and unreadable run folders
        fail(str(exc))
    if "recomputed" in notes:
        per_run = ", ".join(f"{k}: {v:,}" for k, v in notes["jobs_per_run"].items())
        err.print(
            f"warning: different job sets ({per_run}); comparing the {notes['jobs_compared']:,} common jobs",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    emit_json({"notes": notes, "metrics": table.to_dicts()})
    policies = ", ".join(f"{label}: {policy}" for label, policy in notes["policies"].items())
    out = Table(
        title=f"{len(runs)} runs over {notes['jobs_compared']:,} jobs (differences against {table.columns[1]})",
        caption=f"policies: {policies}",
    )
    for col in table.columns:
        out.add_column(col, justify="left" if col == "metric" else "right")
    for row in table.iter_rows():
        values = row[1:]
        integral = all(v is None or float(v).is_integer() for v in values)
        out.add_row(row[0], *(_cell(v, integral) for v in values))
    console.print(out)


def _cell(value: float | None, integral: bool) -> str:
    """A row of whole numbers without decimals; fractions below 1 with four, the rest with two."""
    if value is None:
        return "n/a"
    if integral:
        return f"{int(value):,}"
    return f"{value:.4f}" if abs(value) < 1 else f"{value:,.2f}"


def report(
    run: Annotated[Path, typer.Argument(help="A `simulate --output` folder (any --format).")],
    time_from: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Zoom the figure from this instant: seconds of the run's clock, or a date (2022-01-03T12:00, "
            "UTC unless it says) when the trace has a start time.",
        ),
    ] = None,
    time_to: Annotated[
        str | None, typer.Option("--to", help="Zoom the figure up to this instant (seconds or a date, as --from).")
    ] = None,
) -> None:
    """Write RUN/report.html and RUN/run.png, .svg for a run made without --html: Gantt chart on the node
    allocation, utilisation, queue length, and power against the cap for a power run; the time axis in dates
    when the trace has a start time."""
    # deferred: the report package loads matplotlib; `wattsched --help` should not
    from wattsched.api.reports import RUN_REPORT_FIGURES, write_run_report

    try:
        path = write_run_report(run, time_from, time_to)
    except ValueError as exc:  # not a run folder, unreadable tables, an impossible schedule, a bad instant
        fail(str(exc))
    files = [path, *(path.with_name(name) for name in RUN_REPORT_FIGURES)]
    emit_json({"files": [str(f) for f in files]})
    console.print(f"wrote {', '.join(str(f) for f in files)}", markup=False)
