"""The canonical job table: one row per job, the single currency between readers, predictors and the simulator.

Every reader returns a :class:`ReadResult` ``(jobs, rejects, provenance)``. Nothing is dropped silently: a row that
cannot be used appears in ``rejects`` with its source line, the offending field and a reason. Every reader ends with
:func:`finish_read`, so the canonical rules, the order of jobs and rejects, the counts and ``strict`` are the same
whatever the format.

Times are float seconds. ``size`` is the number of resource units the job occupies on the simulated machine
(processors for SWF traces, nodes for node-exclusive machines such as Marconi100); ``provenance.size_unit`` says which.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np
import polars as pl

from wattsched.core.errors import WorkloadError as WorkloadError  # defined there, named here too

#: Required columns and their dtypes. ``runtime`` is the truth: only the engine may read it.
REQUIRED_COLUMNS: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "submit_time": pl.Float64(),
    "walltime": pl.Float64(),
    "runtime": pl.Float64(),
    "size": pl.Int64(),
}

#: Optional columns with fixed dtypes; readers fill what their source has. Unknown values are null.
OPTIONAL_COLUMNS: dict[str, pl.DataType] = {
    "user_id": pl.Int64(),
    "group_id": pl.Int64(),
    "name": pl.Utf8(),
    "queue": pl.Utf8(),
    "partition": pl.Utf8(),
    "app_id": pl.Utf8(),
    "state": pl.Utf8(),
    "cores": pl.Int64(),
    "gpus": pl.Int64(),
    "mem": pl.Float64(),
    "power_mean": pl.Float64(),
    "power_max": pl.Float64(),
    "power_std": pl.Float64(),
    "energy": pl.Float64(),
}

#: Accepted input aliases for canonical columns (a table with ``nodes`` but no ``size`` is node-sized).
COLUMN_ALIASES: dict[str, str] = {"nodes": "size"}

#: Schema of the rejects table, shared by every reader.
REJECTS_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.Utf8(),
    "line": pl.Int64(),
    "job_id": pl.Int64(),
    "field": pl.Utf8(),
    "reason": pl.Utf8(),
    "raw": pl.Utf8(),
}


#: Physical bounds every reader applies (docs/decisions.md, "reader bounds"). Each is a module constant so a caller
#: with an unusual machine can change it; a value beyond a bound is a unit error far more often than a real job.
#: |submit_time| at most 2100-01-01T00:00Z in epoch seconds: millisecond, microsecond and nanosecond epochs
#: (1.6e12, 1.6e15, 1.6e18) and garbage such as 1e300 are rejected, relative SWF times and real epochs kept.
MAX_SUBMIT_TIME: float = 4_102_444_800.0
#: Runtime and walltime at most 100 years (3.16e9 s): LLNL-Atlas' largest requested time (23 years, a "no limit"
#: placeholder) stays accepted; Slurm's 4294967295-minute INFINITE (8,171 years) and 1e300 are rejected.
MAX_DURATION: float = 100 * 365.25 * 86400.0
#: Job size at most 10 million units (Frontier has 8.7 million cores); a larger size is a corrupt field.
MAX_JOB_SIZE: int = 10_000_000
#: Per-node power at most 100 kW (dense GPU nodes draw < 10 kW): 1e30 W is a corrupt value, not a node.
MAX_NODE_POWER_W: float = 100_000.0
#: Power and energy columns that must be finite and non-negative when present (null = unknown is fine).
POWER_COLUMNS: tuple[str, ...] = ("power_mean", "power_max", "power_std")
#: Largest id that is an exact Int64 (ids are never read through float64: 2^53 and above would collide).
MAX_INT64: int = 2**63 - 1

#: What a date-time or a duration means in a numeric column (job tables in Parquet, or built with polars, hold
#: them). ``submit_time`` is an instant: a Datetime becomes epoch seconds (a naive one read as UTC), a Duration
#: seconds from the trace's origin (SWF's relative times). ``walltime`` and ``runtime`` are lengths of time: a
#: Duration becomes seconds. Any other temporal value in a numeric column is refused, because its cast would be a
#: number by accident: a Datetime run time cast is 1,577,836,800 s (the epoch of 2020), a Date a day count.
INSTANT_COLUMNS: tuple[str, ...] = ("submit_time",)
DURATION_COLUMNS: tuple[str, ...] = ("walltime", "runtime")
#: The two temporal readings of a column (None: a plain number, no temporal value accepted).
TimeRole = Literal["instant", "duration"] | None


def time_role(name: str) -> TimeRole:
    """How a temporal value of the canonical column ``name`` is read (:data:`INSTANT_COLUMNS`)."""
    if name in INSTANT_COLUMNS:
        return "instant"
    return "duration" if name in DURATION_COLUMNS else None


def dtype_problem(found: pl.DataType, expected: pl.DataType, role: TimeRole = None) -> str | None:
    """Why a column stored as ``found`` cannot give values of ``expected`` (the schema's dtype), or None.

    Every value is cast one way or another, so the dtype is judged first: a cast that succeeds can still be wrong.
    Booleans are refused for numbers (a boolean ``submit_time`` cast is 0 and 1, a boolean ``size`` 1 for every
    true); lists, arrays and structs are refused for every column (a job has one value; a struct cast to text
    loses its field names); temporal values are accepted only as ``role`` reads them (:data:`INSTANT_COLUMNS`),
    and the caller converts those. Text and numbers of any width pass: their values are parsed one by one, and an
    unreadable one is a reject naming its row.
    """
    if isinstance(found, pl.List | pl.Array | pl.Struct) or found == pl.Object:
        return f"holds {found} values: one value per job is expected ({expected}), not a nested one"
    if expected == pl.Utf8:
        return None
    if found == pl.Boolean:
        return f"is Boolean (true/false), not a number ({expected}): refused rather than read as 1 and 0"
    if found == pl.Binary:
        return f"holds bytes (Binary), not numbers ({expected})"
    if isinstance(found, pl.Datetime):
        if role == "instant":
            return None
        if role == "duration":
            return "is a date-time (Datetime), an instant, not a length of time: give seconds, or end − start"
        return f"is a date-time (Datetime), not a number ({expected})"
    if isinstance(found, pl.Duration):
        return None if role is not None else f"is a Duration, not a number ({expected})"
    if found == pl.Date:
        if role == "instant":
            return "is a Date (a day without its time of day): give a Datetime or epoch seconds"
        return f"is a Date, not a number ({expected})"
    if found == pl.Time:
        return f"is a time of day without a date (Time), not a number ({expected})"
    return None


def shorten(text: object, limit: int = 80) -> str:
    """``text`` as one line of at most ``limit`` characters (newlines shown as ``\\n``, an ellipsis when cut),
    so an error message never echoes a megabyte of input."""
    one = str(text).replace("\r", "\\r").replace("\n", "\\n")
    return one if len(one) <= limit else one[: limit - 1] + "…"


@dataclass
class Provenance:
    """Where a job table came from and which conventions turned the source into canonical columns."""

    source: str
    format: str
    machine_size: int | None = None
    size_unit: str = "processors"
    unix_start_time: float | None = None
    timezone: str | None = None
    header: dict[str, Any] = field(default_factory=dict)
    n_records: int = 0
    n_jobs: int = 0
    n_rejected: int = 0
    conventions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)


class ReadResult(NamedTuple):
    """``(jobs, rejects, provenance)``; unpacks like a tuple."""

    jobs: pl.DataFrame
    rejects: pl.DataFrame
    provenance: Provenance


def empty_rejects() -> pl.DataFrame:
    return pl.DataFrame(schema=REJECTS_SCHEMA)


def make_rejects(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """Build a rejects table from dict rows (missing keys become null)."""
    if not rows:
        return empty_rejects()
    columns: dict[str, list[Any]] = {name: [r.get(name) for r in rows] for name in REJECTS_SCHEMA}
    for name in ("line", "job_id"):  # a 20-digit id in a reject is itself unrepresentable: null, the raw keeps it
        columns[name] = [v if isinstance(v, int) and -MAX_INT64 <= v <= MAX_INT64 else None for v in columns[name]]
    return pl.DataFrame(columns, schema=REJECTS_SCHEMA)


def canonical_order(jobs: pl.DataFrame) -> pl.DataFrame:
    """Order columns canonically: required first, then known optional ones, then source-specific extras."""
    known = [c for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in jobs.columns]
    order = known + [c for c in jobs.columns if c not in known]
    return jobs if order == jobs.columns else jobs.select(order)  # already ordered: no query


def coerce_columns(jobs: pl.DataFrame) -> pl.DataFrame:
    """Rename aliases and cast known columns to their canonical dtypes.

    Raises :class:`WorkloadError` naming the column when a required column is missing, its dtype cannot hold the
    column's values (:func:`dtype_problem`: a Boolean ``size`` would cast to 1, a Datetime to microseconds) or a
    cast fails. Date-times are not converted here: the readers do it, each by its format's convention.
    """
    renames = {a: c for a, c in COLUMN_ALIASES.items() if a in jobs.columns and c not in jobs.columns}
    if renames:
        jobs = jobs.rename(renames)
    missing = [c for c in REQUIRED_COLUMNS if c not in jobs.columns]
    if missing:
        raise WorkloadError(
            f"job table lacks required column(s) {missing}; required: {list(REQUIRED_COLUMNS)}"
            f" (alias accepted: {COLUMN_ALIASES})"
        )
    casts = []
    for name, dtype in {**REQUIRED_COLUMNS, **OPTIONAL_COLUMNS}.items():
        if name in jobs.columns and jobs.schema[name] != dtype:
            found = jobs.schema[name]
            why = dtype_problem(found, dtype)
            if why is not None:
                hint = "; convert it to seconds or read the table with read_table" if found.is_temporal() else ""
                raise WorkloadError(f"column {name!r} {why}{hint}")
            casts.append((name, dtype))
    for name, dtype in casts:
        try:
            jobs = jobs.with_columns(pl.col(name).cast(dtype, strict=True))
        except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError) as exc:
            raise WorkloadError(f"column {name!r} cannot be read as {dtype}: {exc}") from exc
    return canonical_order(jobs)


#: A reader's own rule: ``(field, condition, reason)``; the reason is text or an expression over the row.
Check = tuple[str, pl.Expr, str | pl.Expr]


def validate_jobs(
    jobs: pl.DataFrame,
    *,
    machine_size: int | None,
    source: str,
    line_column: str | None = None,
    checks: Sequence[Check] = (),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split a coerced table into accepted jobs and rejects, applying the canonical semantic rules.

    Rules (each reject names the field and why): ``job_id`` and ``submit_time`` present; ``submit_time`` finite;
    ``runtime`` present and ≥ 0; ``walltime`` present (readers apply their own missing-walltime convention first)
    and ≥ 0; ``size`` present and ≥ 1; ``size`` ≤ ``machine_size`` when known; ``job_id`` unique (later
    duplicates are rejected). ``checks`` are a reader's own rules, judged before these; the first failing rule
    names the reject.
    ``line_column`` names a column holding source line numbers for the rejects (it is dropped from the jobs).
    """
    canonical: list[Check] = [
        ("job_id", pl.col("job_id").is_null(), "job id is missing"),
        (
            "submit_time",
            pl.col("submit_time").is_null() | ~pl.col("submit_time").is_finite(),
            "submit time is missing or not finite",
        ),
        ("runtime", pl.col("runtime").is_null() | ~pl.col("runtime").is_finite(), "run time is unknown"),
        (
            "submit_time",
            pl.col("submit_time").abs() > MAX_SUBMIT_TIME,
            pl.format(
                "submit time {} s is beyond {} s (year 2100): a ms/µs/ns epoch or a corrupt value",
                pl.col("submit_time"),
                pl.lit(MAX_SUBMIT_TIME),
            ),
        ),
        ("runtime", pl.col("runtime").is_null() | ~pl.col("runtime").is_finite(), "run time is unknown"),
        ("runtime", pl.col("runtime") < 0, "run time is negative"),
        (
            "runtime",
            pl.col("runtime") > MAX_DURATION,
            pl.format("run time {} s is longer than 100 years (a unit error or a sentinel)", pl.col("runtime")),
        ),
        ("walltime", pl.col("walltime").is_null() | ~pl.col("walltime").is_finite(), "walltime is unknown"),
        ("walltime", pl.col("walltime") < 0, "walltime is negative"),
        (
            "walltime",
            pl.col("walltime") > MAX_DURATION,
            pl.format("walltime {} s is longer than 100 years (a 'no limit' sentinel?)", pl.col("walltime")),
        ),
        ("size", pl.col("size").is_null(), "job size is unknown"),
        ("size", pl.col("size") <= 0, "job size is not positive"),
        (
            "size",
            pl.col("size") > MAX_JOB_SIZE,
            pl.format("job size {} is above {} units (a corrupt value)", pl.col("size"), pl.lit(MAX_JOB_SIZE)),
        ),
    ]
    for name in POWER_COLUMNS:
        if name in jobs.columns:
            value = pl.col(name).cast(pl.Float64)
            canonical += [
                (
                    name,
                    value.is_nan() | value.is_infinite(),
                    pl.format("{} is {} (not a finite power)", pl.lit(name), value),
                ),
                (name, value < 0, pl.format("{} is negative ({} W)", pl.lit(name), value)),
                (
                    name,
                    value > MAX_NODE_POWER_W,
                    pl.format(
                        "{} {} W per node is above {} W (a corrupt value)",
                        pl.lit(name),
                        value,
                        pl.lit(MAX_NODE_POWER_W),
                    ),
                ),
            ]
    if "energy" in jobs.columns:
        energy = pl.col("energy").cast(pl.Float64)
        canonical.append(
            (
                "energy",
                energy.is_nan() | energy.is_infinite() | (energy < 0),
                pl.format("energy {} J is not a finite non-negative number", energy),
            )
        )
    if machine_size is not None:
        canonical.append(("size", pl.col("size") > machine_size, f"job size exceeds the machine size ({machine_size})"))
    reason = pl.lit(None, dtype=pl.Utf8)
    field_ = pl.lit(None, dtype=pl.Utf8)
    # Build a "first failing rule" expression by folding the checks in reverse.
    for name, cond, why in reversed([*checks, *canonical]):
        reason = pl.when(cond.fill_null(False)).then(why if isinstance(why, pl.Expr) else pl.lit(why)).otherwise(reason)
        field_ = pl.when(cond.fill_null(False)).then(pl.lit(name)).otherwise(field_)
    tagged = jobs.with_columns(reason.alias("__reason"), field_.alias("__field"))
    # A duplicate id is judged among the rows that pass every other rule, so a bad earlier row does not turn a
    # good later one into a "duplicate".
    ok_id = pl.when(pl.col("__reason").is_null()).then(pl.col("job_id"))
    duplicate = ok_id.is_not_null() & ~ok_id.is_first_distinct()
    tagged = tagged.with_columns(
        pl.when(duplicate)
        .then(pl.lit("duplicate job id (an earlier row has it)"))
        .otherwise(pl.col("__reason"))
        .alias("__reason"),
        pl.when(duplicate).then(pl.lit("job_id")).otherwise(pl.col("__field")).alias("__field"),
    )
    bad = tagged.filter(pl.col("__reason").is_not_null())
    good = tagged.filter(pl.col("__reason").is_null()).drop("__reason", "__field")
    if line_column is not None:
        good = good.drop(line_column)
    if bad.height == 0:
        return good, empty_rejects()
    raw = pl.concat_str(
        [pl.format("{}={}", pl.lit(c), pl.col(c).cast(pl.Utf8).fill_null("null")) for c in REQUIRED_COLUMNS],
        separator=" ",
    )
    rejects = bad.select(
        pl.lit(source).alias("source"),
        (pl.col(line_column).cast(pl.Int64) if line_column else pl.lit(None, dtype=pl.Int64)).alias("line"),
        pl.col("job_id"),
        pl.col("__field").alias("field"),
        pl.col("__reason").alias("reason"),
        raw.alias("raw"),
    )
    return good, rejects.cast(pl.Schema(REJECTS_SCHEMA))


def raise_if_strict(source: str, rejects: pl.DataFrame, strict: bool, unit: str = "line") -> None:
    """Under ``strict``, any reject is an error naming the first one (file, line, field, why)."""
    if strict and rejects.height:
        first = rejects.row(0, named=True)
        raise WorkloadError(
            f"{source}: {rejects.height} rejected {unit}(s); first at line {first['line']},"
            f" field {first['field']!r}: {shorten(first['reason'], 160)} (raw: {shorten(first['raw'])!r})"
        )


#: Optional column that orders jobs with the same submit time before the job id (a workload window's pre-state:
#: the running jobs resubmitted at 0 in trace-start order, then the queued ones; see ``engine/windows.py``).
QUEUE_RANK = "queue_rank"


def sort_queue_order(jobs: pl.DataFrame) -> pl.DataFrame:
    """The queue order every policy starts from: (submit time, job id); with a ``queue_rank`` column,
    (submit time, queue rank with nulls last, job id). Rows already in that order are returned as they are (the
    stable sort would not move them): every simulation starts here, and a campaign simulates the same ordered
    window again and again (paper 000: 90 times a window; the check costs a tenth of the sort)."""
    if _in_queue_order(jobs):
        return jobs
    if QUEUE_RANK in jobs.columns:
        return jobs.sort(["submit_time", QUEUE_RANK, "job_id"], nulls_last=True, maintain_order=True)
    return jobs.sort(["submit_time", "job_id"], maintain_order=True)


def _in_queue_order(jobs: pl.DataFrame) -> bool:
    """True when every row's key is at most the next one's (keys as :func:`sort_queue_order` sorts them); False
    when a key column is missing, null or NaN, which the sort then handles."""
    if jobs.height < 2:
        return True
    keys = ["submit_time", *([QUEUE_RANK] if QUEUE_RANK in jobs.columns else []), "job_id"]
    if any(k not in jobs.columns for k in keys) or jobs["submit_time"].null_count() or jobs["job_id"].null_count():
        return False
    columns = [jobs[k].to_numpy() for k in keys[:1]]
    if QUEUE_RANK in jobs.columns:  # nulls last: above every rank
        rank = jobs[QUEUE_RANK]
        columns.append(rank.is_null().to_numpy())
        columns.append(rank.fill_null(0).to_numpy())
    columns.append(jobs["job_id"].to_numpy())
    # lexicographic ≤ of each row and the next, the last key compared ≤ and the others < then ==
    ordered = columns[-1][:-1] <= columns[-1][1:]
    for values in reversed(columns[:-1]):
        before, after = values[:-1], values[1:]
        ordered = (before < after) | ((before == after) & ordered)
    return bool(np.all(ordered))


def _as_rejects(frame: pl.DataFrame) -> pl.DataFrame:
    """The rejects columns in their order and dtypes."""
    return frame.select(list(REJECTS_SCHEMA)).cast(pl.Schema(REJECTS_SCHEMA))


def replace_raw(rejects: pl.DataFrame, text: Callable[[int], str]) -> pl.DataFrame:
    """The rejects with ``raw`` replaced by ``text(line)``: the source text of each reject's line."""
    texts = [text(line) for line in rejects["line"].to_list()]
    return rejects.with_columns(pl.Series("raw", texts, dtype=pl.Utf8))


def finish_read(
    jobs: pl.DataFrame,
    rejects: pl.DataFrame | Sequence[Mapping[str, Any]],
    provenance: Provenance,
    *,
    strict: bool,
    line_column: str | None = None,
    checks: Sequence[Check] = (),
    locate: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
    sources: Sequence[str] | None = None,
    unit: str = "line",
) -> ReadResult:
    """The end every reader shares: coerce, validate, merge the rejects, queue order, counts, ``strict``.

    ``jobs`` are the reader's candidate rows (canonical and source-specific columns, ``line_column`` holding each
    row's source line; it is dropped). ``rejects`` are the records the reader refused itself, complete (source,
    line, field, reason, raw). ``provenance`` is complete but for ``n_jobs`` and ``n_rejected``, set here; its
    ``source`` names the input and its ``machine_size`` bounds ``size``.

    ``checks`` are the reader's own rules on candidate rows, judged before the canonical ones of
    :func:`validate_jobs`. Their rejects' ``raw`` is a summary of the canonical columns: ``locate`` turns them
    into source terms (the line's text in ``raw``, see :func:`replace_raw`; for a reader of several files also
    ``source`` and ``line``). Rejects come back ordered by ``line`` (with ``sources``, by file in that order
    first), jobs in queue order. Under ``strict`` any reject raises :class:`WorkloadError` naming the first one;
    ``unit`` says what a record is ("line", "row", "record").
    """
    try:
        coerced = coerce_columns(jobs)
    except WorkloadError as exc:  # the message names the column; the file is named here
        raise WorkloadError(f"{provenance.source}: {exc}") from exc
    good, refused = validate_jobs(
        coerced,
        machine_size=provenance.machine_size,
        source=provenance.source,
        line_column=line_column,
        checks=checks,
    )
    if locate is not None and refused.height:
        refused = _as_rejects(locate(refused))
    own = rejects if isinstance(rejects, pl.DataFrame) else make_rejects(rejects)
    merged = pl.concat([_as_rejects(own), refused])
    if sources is None:
        merged = merged.sort("line", maintain_order=True)
    else:
        order = {s: i for i, s in enumerate(dict.fromkeys(sources))}
        rank = pl.col("source").replace_strict(order, return_dtype=pl.Int64)
        merged = merged.sort(rank, "line", maintain_order=True)
    good = sort_queue_order(good)
    provenance.n_jobs = good.height
    provenance.n_rejected = merged.height
    raise_if_strict(provenance.source, merged, strict, unit)
    return ReadResult(good, merged, provenance)
