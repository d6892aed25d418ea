"""The rejects of a read, told by reason: one summary every command prints, and one place rejects are written.

Every reader returns its unusable records as a rejects table (``core.schema.REJECTS_SCHEMA``: source, line,
job id, field, reason, raw). A bare count ("4,571 input lines rejected") does not say what went wrong, so every
command prints :func:`rejects_summary` instead: the count, then each reason with its count and the first records
it hit, most frequent first::

    4,571 rejected: job size is unknown (4,571; first: line 12, 40, 77)

The rejects themselves go to a file next to the command's output (:func:`rejects_path`, :func:`write_rejects`).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from wattsched.core.atomic import atomic_table
from wattsched.core.record_units import record_unit, register_record_unit
from wattsched.core.schema import WorkloadError

__all__ = [
    "MAX_EXAMPLES",
    "MAX_REASONS",
    "AllRejectedError",
    "record_unit",
    "register_record_unit",
    "rejects_by_reason",
    "rejects_path",
    "rejects_summary",
    "write_rejects",
]

#: Reasons a summary names before "and N more reasons", and records it shows per reason.
MAX_REASONS = 5
MAX_EXAMPLES = 3


#: What a reject's ``line`` counts, by ``Provenance.format``: a table row, a JSON record, else a text line.
def rejects_by_reason(rejects: pl.DataFrame, examples: int = MAX_EXAMPLES) -> pl.DataFrame:
    """One row per ``reason``: ``count`` and the first ``examples`` records (``where``: ``line N``, or the job id
    when the reader knew no line; prefixed by the file when the rejects come from several files), most frequent
    first, ties in order of first appearance."""
    if rejects.is_empty():
        return pl.DataFrame(schema={"reason": pl.Utf8, "count": pl.UInt32, "where": pl.List(pl.Utf8)})
    several = rejects["source"].n_unique() > 1
    where: pl.Expr = (
        pl.when(pl.col("line").is_not_null())
        .then(pl.col("line").cast(pl.Utf8))
        .when(pl.col("job_id").is_not_null())
        .then(pl.format("job {}", pl.col("job_id")))
        .otherwise(pl.lit("?"))
    )
    if several:
        where = pl.format("{}:{}", pl.col("source").fill_null("?"), where)
    return (
        rejects.with_row_index("__order")
        .with_columns(where.alias("where"), pl.col("reason").fill_null("no reason given"))
        .group_by("reason", maintain_order=True)
        .agg(pl.len().alias("count"), pl.col("where").head(examples), pl.col("__order").min())
        .sort(["count", "__order"], descending=[True, False])
        .drop("__order")
    )


def rejects_summary(
    rejects: pl.DataFrame, unit: str = "line", *, reasons: int = MAX_REASONS, examples: int = MAX_EXAMPLES
) -> str:
    """One line: ``N rejected: REASON (COUNT; first: UNIT A, B, C); …`` for the ``reasons`` most frequent
    reasons (then "and K more reason(s)"); the empty string when nothing was rejected. ``unit`` names what a
    reject's ``line`` counts (:func:`record_unit`)."""
    if rejects.is_empty():
        return ""
    table = rejects_by_reason(rejects, examples)
    parts = []
    for row in table.head(reasons).iter_rows(named=True):
        shown = row["where"]
        # "line 12, 40, 77" when every example is a line number; else as they are ("job 5", "a.swf:12")
        label = f"{unit} " if all(w.isdigit() for w in shown) else ""
        first = label + ", ".join(shown)
        more = ", …" if row["count"] > len(shown) else ""
        parts.append(f"{row['reason']} ({row['count']:,}; first: {first}{more})")
    rest = table.height - reasons
    tail = f"; and {rest} more reason(s)" if rest > 0 else ""
    return f"{rejects.height:,} rejected: {'; '.join(parts)}{tail}"


class AllRejectedError(WorkloadError):
    """A workload of which every record was rejected; carries the rejects (and the format, for their unit) so
    that a command can still write them."""

    def __init__(self, source: str, rejects: pl.DataFrame, fmt: str | None = None) -> None:
        unit = record_unit(fmt)
        super().__init__(f"{source}: no usable job, every {unit} was rejected; {rejects_summary(rejects, unit)}")
        self.rejects = rejects
        self.fmt = fmt


def rejects_path(output: str | Path, fmt: str = "parquet") -> Path:
    """Where the rejects of a command that writes ``output`` go: next to it, ``<stem>.rejects.<fmt>``
    (``out/m100.parquet`` → ``out/m100.rejects.parquet``; a CSV output gets ``.rejects.csv``)."""
    output = Path(output)
    name = output.name
    for ending in (".swf.gz", ".csv.gz", ".parquet", ".csv", ".swf", ".json", ".gz"):
        if name.lower().endswith(ending):
            name = name[: -len(ending)]
            break
    return output.with_name(f"{name}.rejects.{fmt}")


def write_rejects(rejects: pl.DataFrame, path: str | Path) -> Path:
    """Write the rejects table as Parquet or CSV (by ``path``'s ending), creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_table(rejects, path)  # CSV or Parquet by the name
