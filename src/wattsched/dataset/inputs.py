"""The job table of ``dataset build`` checked row by row before the method runs: a job whose id, times or node
list cannot be used becomes a reject with its reason (stage ``input``) instead of failing the whole build.

Before these checks one null ``start_time`` turned the whole time grid into int64 minimum values and the build
died with a MemoryError, and one malformed or huge hostlist (``n[0-999999999]``) failed every job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from wattsched.dataset.hostlist import expand_hostlist

if TYPE_CHECKING:
    from polars._typing import ColumnNameOrSelector, PolarsDataType

#: Largest job time accepted, in seconds since 1970 (year 2286): a larger one is almost always milliseconds or
#: nanoseconds, and simulated as such would make a time grid of billions of samples.
MAX_EPOCH_S = 1e10
INPUT_REJECT_SCHEMA: dict[ColumnNameOrSelector | PolarsDataType, PolarsDataType] = {
    "job_id": pl.Int64,
    "stage": pl.Utf8,
    "reason": pl.Utf8,
}


def parse_nodes(text: str) -> list[str]:
    """One node-list cell: a list written out by Python or JSON (``"['r1n1', 'r1n2']"``) or a Slurm hostlist
    (``r1n[01-04],r2n01``); ``ValueError`` with the reason when it is neither or too large."""
    text = text.strip()
    if text.startswith("["):  # a list written out by Python or JSON
        inner = text.strip("[]").replace("'", "").replace('"', "")
        return [n.strip() for n in inner.split(",") if n.strip()]
    return list(expand_hostlist(text)) if text else []


def parse_node_texts(texts: pl.Series) -> tuple[list[list[str] | None], list[str | None]]:
    """``(lists, errors)`` for a text column of node lists: each distinct text parsed once; a cell that fails has
    ``None`` as its list and the reason as its error."""
    mapping: dict[str, list[str] | ValueError] = {}
    for t in texts.drop_nulls().unique().to_list():
        try:
            mapping[t] = parse_nodes(t)
        except ValueError as exc:
            mapping[t] = exc
    lists: list[list[str] | None] = []
    errors: list[str | None] = []
    for t in texts.to_list():
        got = None if t is None else mapping[t]
        if isinstance(got, ValueError):
            lists.append(None)
            errors.append(str(got))
        else:
            lists.append(got)
            errors.append(None)
    return lists, errors


def _text_times(jobs: pl.DataFrame, column: str) -> tuple[pl.DataFrame, pl.Expr]:
    """A text time column as float epoch seconds: each cell a number of seconds or an ISO date-time (naive ones are
    UTC); the expression gives the reason for a cell that is neither."""
    text = pl.col(column).str.strip_chars()
    as_number = text.cast(pl.Float64, strict=False)
    as_datetime = text.str.to_datetime(strict=False, time_zone="UTC").dt.epoch("ms").cast(pl.Float64) / 1000.0
    parsed = jobs.with_columns(
        pl.coalesce(as_number, as_datetime).alias(f"__{column}"), pl.col(column).alias(f"__{column}_text")
    )
    reason = pl.when(
        pl.col(column).is_null() & pl.col(f"__{column}_text").str.strip_chars().str.len_chars().gt(0)
    ).then(
        pl.format(
            f"{column} '{{}}' is not a time (seconds or a date-time)", pl.col(f"__{column}_text").str.slice(0, 80)
        )
    )
    return parsed.with_columns(pl.col(f"__{column}").alias(column)).drop(f"__{column}"), reason


def check_jobs(jobs: pl.DataFrame, nodes_column: str = "nodes") -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(usable, rejects)``: ``jobs`` (times in epoch seconds already) split into the rows the method can take and
    one reject per other row (``job_id, stage="input", reason``). The node column is parsed into lists here; a
    text cell that is not a node list rejects its job. Missing columns stay an error of the whole table."""
    missing = [c for c in ("job_id", "start_time", "end_time", nodes_column) if c not in jobs.columns]
    if missing:
        raise ValueError(f"the job table lacks column(s) {', '.join(missing)}")
    reason_exprs: list[pl.Expr] = []
    for c in ("start_time", "end_time"):
        if jobs.schema[c] == pl.Utf8:  # a CSV column with one bad cell is text: read each cell, reject the bad
            jobs, reason = _text_times(jobs, c)
            reason_exprs.append(reason)
        elif not (jobs.schema[c].is_numeric() or jobs.schema[c] == pl.Null):
            raise ValueError(f"column {c} is {jobs.schema[c]}, not a time (seconds or a datetime)")
    if isinstance(jobs.schema[nodes_column], pl.List):
        jobs = jobs.with_columns(pl.col(nodes_column).cast(pl.List(pl.Utf8)))
    else:
        lists, errors = parse_node_texts(jobs[nodes_column].cast(pl.Utf8))
        jobs = jobs.with_columns(
            pl.Series(nodes_column, lists, dtype=pl.List(pl.Utf8)), pl.Series("__nodes_error", errors, pl.Utf8)
        )
        reason_exprs.append(pl.format("{}: {}", pl.lit(nodes_column), pl.col("__nodes_error")))
    reason_exprs.append(pl.when(pl.col("job_id").is_null()).then(pl.lit("job_id is missing")))
    for c in ("start_time", "end_time"):
        value = pl.col(c).cast(pl.Float64)
        reason_exprs.append(
            pl.when(value.is_null())
            .then(pl.lit(f"{c} is missing"))
            .when(value.is_nan() | value.is_infinite())
            .then(pl.format(f"{c} is {{}}, not a time", value))
            .when(value.abs() > MAX_EPOCH_S)
            .then(pl.format(f"{c} {{}} is beyond year 2286 in seconds (milliseconds or nanoseconds?)", value))
        )
    reason_exprs.append(
        pl.when(pl.col("end_time").cast(pl.Float64) < pl.col("start_time").cast(pl.Float64)).then(
            pl.format("end_time {} is before start_time {}", pl.col("end_time"), pl.col("start_time"))
        )
    )
    checked = jobs.with_columns(pl.coalesce(reason_exprs).alias("__reason"))
    rejects = checked.filter(pl.col("__reason").is_not_null()).select(
        pl.col("job_id").cast(pl.Int64, strict=False),
        pl.lit("input").alias("stage"),
        pl.col("__reason").alias("reason"),
    )
    scratch = ["__reason", "__nodes_error", "__start_time_text", "__end_time_text"]
    usable = checked.filter(pl.col("__reason").is_null()).drop(scratch, strict=False)
    return usable, rejects.cast(INPUT_REJECT_SCHEMA)
