"""What every sub-app shares: the consoles, the one-line error, option parsing and result tables."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import polars as pl
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

__all__ = [
    "PROGRESS_THRESHOLD",
    "ColumnsOption",
    "OutputFormat",
    "TimezoneOption",
    "console",
    "err",
    "fail",
    "parse_items",
    "parse_window",
    "print_table",
    "progress_bar",
    "report_rejects",
    "track",
    "warn_ignored_timezone",
]

# Piped output (CI logs, files) gets a wide console so tables are not squeezed to 80 columns.
console = Console() if sys.stdout.isatty() else Console(width=160)
err = Console(stderr=True)

#: Runs with more jobs than this show a progress bar.
PROGRESS_THRESHOLD = 50_000

T = TypeVar("T")


class OutputFormat(StrEnum):
    """Formats of the per-job and timeline tables a command writes."""

    parquet = "parquet"
    csv = "csv"


def fail(message: str) -> NoReturn:
    """Print ``error: MESSAGE`` on one line (whatever the terminal width, the message taken literally, not as
    markup) and exit with code 2, click's code for a usage error."""
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code=2)


#: ``--columns`` of every command that reads a workload (applied once, in ``workload.load.load_workload``).
ColumnsOption = Annotated[
    str | None,
    typer.Option(
        "--columns",
        help="Map a job table's columns: target=source,... (a source is a column or an SQL expression, e.g. "
        "walltime=time_limit*60), or a TOML file of them; see docs/formats.md.",
    ),
]


def report_rejects(rejects: pl.DataFrame, fmt: str | None, write_to: Path | None = None) -> None:
    """Print the rejected input records by reason (count, first examples) on stderr and, when ``write_to`` is
    given and something was rejected, write them there. ``fmt`` is the workload's ``Provenance.format`` (it says
    whether a reject's number is a line, a row or a record)."""
    from wattsched.core.rejects import record_unit, rejects_summary, write_rejects  # deferred with the toolkit

    if rejects.is_empty():
        return
    err.print(rejects_summary(rejects, record_unit(fmt)), markup=False, highlight=False, soft_wrap=True)
    if write_to is not None:
        err.print(f"rejects: {write_rejects(rejects, write_to)}", markup=False, highlight=False, soft_wrap=True)


def parse_window(window: str | None, option: str = "--metrics-window") -> tuple[float, float] | None:
    """``START:END`` in seconds, or None when the option was not given."""
    if window is None:
        return None
    try:
        t0, t1 = (float(x) for x in window.split(":"))
    except ValueError:
        fail(f"{option} must be START:END in seconds, got {window!r}")
    return t0, t1


def parse_items(text: str) -> list[str]:
    """A comma-separated option as its non-empty, stripped items."""
    return [x.strip() for x in text.split(",") if x.strip()]


def progress_bar(label: str, *extra: ProgressColumn) -> Progress:
    """A transient progress bar on stderr (piped stdout stays clean): ``label`` (rich markup), the bar,
    done/total, the ``extra`` columns and the elapsed time."""
    return Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), *extra, TimeElapsedColumn(), console=err, transient=True
    )


def track(items: Iterable[T], total: int, description: str) -> Iterator[T]:
    """Yield ``items`` while a progress bar counts them."""
    with progress_bar(f"[bold]{description}[/]") as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)


def print_table(frame: pl.DataFrame, title: str) -> None:
    """A data frame as a rich table: text columns left, numbers right, floats with three decimals."""
    table = Table(title=title)
    for col in frame.columns:
        table.add_column(col, justify="left" if frame[col].dtype == pl.Utf8 else "right")
    for row in frame.iter_rows():
        table.add_row(*[_cell(v) for v in row])
    console.print(table)


def _cell(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


#: ``--timezone`` on every command that may read sacct output: sacct prints the client's local time without an
#: offset, so the zone must be said; the other formats carry epoch or relative times of their own.
TimezoneOption = Annotated[
    str | None,
    typer.Option(
        "--timezone",
        help="IANA time zone of the local times in sacct output, e.g. Europe/Rome (default UTC). "
        "Ignored, with a warning, for other formats.",
    ),
]


def warn_ignored_timezone(timezone: str | None, fmt: str, source: str) -> None:
    """Warn on stderr that ``--timezone`` did nothing because ``source`` (format ``fmt``) is not sacct output."""
    if timezone is not None and not fmt.startswith("sacct"):
        err.print(
            f"warning: --timezone {timezone} ignored: {source} is {fmt}, not sacct output",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
