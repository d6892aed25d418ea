"""What every sub-app shares: the consoles, the one-line error, option parsing and result tables."""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:  # polars is imported by the commands that use it, not to print --help
    import polars as pl

__all__ = [
    "MESSAGE_LIMIT",
    "PROGRESS_THRESHOLD",
    "ColumnsOption",
    "OutputFormat",
    "TimezoneOption",
    "console",
    "emit_json",
    "err",
    "error_line",
    "fail",
    "output",
    "parse_items",
    "parse_window",
    "print_table",
    "quote",
    "renamed_option",
    "report_rejects",
    "warn",
    "warn_ignored_timezone",
]

# Piped output (CI logs, files) gets a wide console so tables are not squeezed to 80 columns. Neither console reads
# rich markup: what they print holds file names, option values and input lines, in which "[/b]" would raise a
# MarkupError and "[bold]" restyle the text (colours are given as rich Text styles instead). soft_wrap: a message
# is one line whatever the terminal width (a wrapped line cannot be grepped).
console = (
    Console(markup=False, soft_wrap=True) if sys.stdout.isatty() else Console(width=160, markup=False, soft_wrap=True)
)
err = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

#: The longest error or warning printed, in characters: an error echoes input (a line, a value), and an input can be
#: a 1 MB line; the middle of a longer message is left out.
MESSAGE_LIMIT = 1000

#: Runs with more jobs than this show a progress bar.
PROGRESS_THRESHOLD = 50_000

T = TypeVar("T")


class OutputFormat(StrEnum):
    """Formats of the per-job and timeline tables a command writes."""

    parquet = "parquet"
    csv = "csv"


@dataclass
class OutputMode:
    """The root options that change how every command prints (``wattsched --debug/--quiet/--json CMD``), set by the
    root callback for one invocation and reset after it."""

    debug: bool = False
    quiet: bool = False
    json: bool = False
    json_emitted: bool = False


#: The current invocation's output mode.
output = OutputMode()


def set_output_mode(*, debug: bool = False, quiet: bool = False, json: bool = False) -> None:
    """Apply the root options: --quiet silences both consoles (errors are printed past them); --json moves the
    text output to stderr so that stdout holds only the JSON summary."""
    output.debug, output.quiet, output.json, output.json_emitted = debug, quiet, json, False
    console.quiet = err.quiet = quiet
    console.file = sys.stderr if json else None  # type: ignore[assignment]  # None: sys.stdout at print time


def reset_output_mode() -> None:
    """Back to the defaults (tests run many invocations in one process)."""
    set_output_mode()


def quote(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, its middle left out past ``limit`` characters: a message echoes the
    offending input, not all of it."""
    return _shorten(repr(value), limit)


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 20)
    return f"{text[: keep // 2]}… ({len(text) - keep:,} characters left out) …{text[-(keep - keep // 2) :]}"


def _one_line(message: str) -> str:
    """A message on one line (a multi-line message, e.g. pydantic's, joined with "; "), at most MESSAGE_LIMIT
    characters."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return _shorten("; ".join(lines), MESSAGE_LIMIT)


def error_line(message: str) -> None:
    """Print ``error: MESSAGE`` on stderr: one line, plain text (never read as markup), shortened past
    MESSAGE_LIMIT, printed even under --quiet. Under --debug, the exception being handled (if any) first."""
    if output.debug and sys.exc_info()[0] is not None:
        traceback.print_exc()
    # typer.echo (click's), not rich: no markup, no wrapping, colour only on a terminal
    typer.echo(typer.style("error:", fg="red", bold=True) + " " + _one_line(message), err=True)


def warn(message: str) -> None:
    """Print ``warning: MESSAGE`` on stderr (one plain line; silenced by --quiet): an option ignored, a default
    taken, a deprecated name used."""
    if not output.quiet:
        typer.echo(typer.style("warning:", fg="yellow", bold=True) + " " + _one_line(message), err=True)


def fail(message: str) -> NoReturn:
    """Print ``error: MESSAGE`` on one line (whatever the terminal width, the message taken literally, not as
    markup) and exit with code 2, click's code for a usage error."""
    error_line(message)
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


def renamed_option(value: T, old_value: T | None, old: str, new: str) -> T:
    """The value of an option renamed from ``old`` to ``new`` (one name, one meaning across commands, docs/cli.md):
    the old name still works, with a warning, and its value wins (a default of ``new`` cannot be told from a value
    given)."""
    if old_value is None:
        return value
    warn(f"{old} is deprecated; use {new} (same meaning; the value given to {old} is used)")
    return old_value


def emit_json(summary: dict[str, Any]) -> None:
    """Under ``wattsched --json``, print the command's summary as one JSON object on stdout; otherwise nothing.
    A command calls it once with what its text output says (counts, metrics, files written)."""
    if not output.json:
        return
    output.json_emitted = True
    typer.echo(json.dumps(_jsonable(summary), default=str, allow_nan=False))


def _jsonable(value: Any) -> Any:
    """``value`` with NaN and infinities as null (strict JSON has neither) and paths, dates as text (default=str)."""
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def parse_window(window: str | None, option: str = "--metrics-window") -> tuple[float, float] | None:
    """``START:END`` in seconds, or None when the option was not given."""
    if window is None:
        return None
    try:
        t0, t1 = (float(x) for x in window.split(":"))
    except ValueError:
        fail(f"{option} must be START:END in seconds, got {quote(window)}")
    return t0, t1


def parse_items(text: str) -> list[str]:
    """A comma-separated option as its non-empty, stripped items."""
    return [x.strip() for x in text.split(",") if x.strip()]


def print_table(frame: pl.DataFrame, title: str) -> None:
    """A data frame as a rich table: text columns left, numbers right, floats with three decimals."""
    import polars as pl

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
    """Warn on stderr that ``--timezone`` did nothing because ``source`` (format ``fmt``) has no naive
    wall-clock times (the formats' registry says which do: ``workload/formats.py``)."""
    from wattsched.api.vocabulary import reads_timezone

    if timezone is not None and not reads_timezone(fmt):
        err.print(
            f"warning: --timezone {timezone} ignored: {source} is {fmt}, which has no local wall-clock times",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
