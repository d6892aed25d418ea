"""PM100 reader: Marconi100's ``job_table.parquet`` (Zenodo 10.5281/zenodo.8129258 / record 10127767).

PM100 is a user-supplied download (35 columns, one row per Slurm job, power lists sampled every 20 s); this module
turns it into the canonical job table so the Marconi100 experiments can run on the real trace.

Conventions (each is also recorded in ``provenance.conventions``):

* ``job_id``, ``user_id``, ``group_id`` are Int64; ``partition``, ``queue`` (= ``qos``) and ``state``
  (= ``job_state``) are strings.
* ``submit_time`` = PM100 ``submit_time`` as absolute epoch seconds (float, UTC; ``provenance.timezone`` is
  "UTC" and ``unix_start_time`` 0, since times are already absolute). The trace's own ``start_time`` and
  ``end_time`` are kept as ``trace_start_time`` / ``trace_end_time`` (epoch s) for comparison with a simulation.
* ``walltime`` = ``time_limit`` × 60 (PM100 stores minutes); a null or non-positive limit is rejected
  ("time limit unknown").
* ``runtime`` = ``run_time`` (s); when null, ``end_time`` − ``start_time``.
* ``size`` = ``num_nodes_alloc`` in nodes (``provenance.size_unit`` = "nodes": Marconi100 is node-exclusive);
  ``cores`` = ``num_cores_alloc``, ``gpus`` = ``num_gpus_alloc``, ``mem`` = ``mem_alloc`` in **GB**.
* ``power_profile`` = ``node_power_consumption`` as List(Float32): job power in W **summed over its nodes**, one
  sample per ``sample_period`` (20 s). ``cpu_power_profile`` / ``mem_power_profile`` likewise from
  ``cpu_``/``mem_power_consumption`` when present (they may be empty lists; that is not a reject).
* Per-node power statistics (paper 000 Fig. 2 reads them per node; docs/semantics.md §3.7): ``power_mean`` =
  mean(profile) / nodes, exact. ``power_max`` = max(profile) / nodes and ``power_std`` = std(profile, ddof=0) /
  nodes are the max and std of the node-*average* series: the summed series cannot recover the per-node ones.
  Both are exact for one-node jobs; for multi-node jobs ``power_max`` is a lower bound of the true per-node max.
* ``energy`` (J) = Σ profile × ``sample_period``.
* Kept with a ``pm100_`` prefix (requests and scheduler inputs that have no canonical home): ``num_nodes_req``,
  ``num_cores_req``, ``num_gpus_req``, ``mem_req`` (GB), ``priority``, ``num_tasks``, ``state_reason``,
  ``eligible_time`` (epoch s) and ``nodes`` (the node list, for exclusivity filters). Other columns are dropped.
* Rejected (one row each; ``line`` = 1-based Parquet row, ``raw`` = the key fields as text), first failing rule
  wins: submitted after its end (``submit_time`` > ``end_time``: the record contradicts itself); time limit
  unknown; no power samples (null or empty ``node_power_consumption``); profile length
  inconsistent with run time (|run_time − period·len| > ``length_tolerance_samples`` · period; PM100 notebooks
  find 208,794 of 231,238 jobs within one sample); then the canonical rules of ``schema.validate_jobs``
  (size > machine size, duplicate id, ...).
* A numeric column stored as Booleans, lists or structs, or as date-times where PM100 has no time (``run_time``
  may be a Duration, read as seconds; ``time_limit`` counts minutes), is an error naming the file and the column
  (``core.schema.dtype_problem``): every value of it would be cast by accident.
* Jobs come back in queue order (submit time, job id).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from wattsched.core.schema import (
    MAX_SUBMIT_TIME,
    Check,
    Provenance,
    ReadResult,
    TimeRole,
    WorkloadError,
    finish_read,
    replace_raw,
    shorten,
)
from wattsched.workload.tableio import parse_column

__all__ = ["PM100_KEPT_COLUMNS", "PM100_REQUIRED_COLUMNS", "is_pm100_parquet", "read_pm100"]

#: PM100 columns without which no canonical job (or its power) can be built.
PM100_REQUIRED_COLUMNS: tuple[str, ...] = (
    "job_id",
    "submit_time",
    "time_limit",
    "run_time",
    "num_nodes_alloc",
    "node_power_consumption",
)

#: PM100 columns mapped onto canonical names (used when present, null otherwise).
_RENAMED: dict[str, tuple[str, pl.DataType]] = {
    "user_id": ("user_id", pl.Int64()),
    "group_id": ("group_id", pl.Int64()),
    "partition": ("partition", pl.Utf8()),
    "qos": ("queue", pl.Utf8()),
    "job_state": ("state", pl.Utf8()),
    "num_cores_alloc": ("cores", pl.Int64()),
    "num_gpus_alloc": ("gpus", pl.Int64()),
    "mem_alloc": ("mem", pl.Float64()),
}

#: PM100 columns kept verbatim as ``pm100_<name>`` (timestamps become epoch seconds).
PM100_KEPT_COLUMNS: tuple[str, ...] = (
    "num_nodes_req",
    "num_cores_req",
    "num_gpus_req",
    "mem_req",
    "priority",
    "num_tasks",
    "state_reason",
    "eligible_time",
    "nodes",
)

_TIMES = ("submit_time", "start_time", "end_time", "eligible_time")
#: Numeric PM100 columns read value by value (text, fractions in integer columns and out-of-range numbers are
#: rejects naming the column, not a traceback); times become epoch seconds on the way.
_NUMERIC: dict[str, pl.DataType] = {
    "job_id": pl.Int64(), "num_nodes_alloc": pl.Int64(), "user_id": pl.Int64(), "group_id": pl.Int64(),
    "num_cores_alloc": pl.Int64(), "num_gpus_alloc": pl.Int64(), "time_limit": pl.Float64(),
    "run_time": pl.Float64(), "mem_alloc": pl.Float64(), **dict.fromkeys(_TIMES, pl.Float64()),
}  # fmt: skip
#: How a date-time or a duration is read in PM100's columns (``core.schema.dtype_problem``): the times are
#: instants (epoch seconds), ``run_time`` a length of time; ``time_limit`` counts minutes, so a Duration there is
#: refused rather than guessed.
_ROLES: dict[str, TimeRole] = {**dict.fromkeys(_TIMES, "instant"), "run_time": "duration"}
_PROFILES = ("node_power_consumption", "cpu_power_consumption", "mem_power_consumption")
_LINE = "__line"
_RAW = "__raw"


def is_pm100_parquet(path: str | Path) -> bool:
    """True when ``path`` is a Parquet file with PM100's signature columns (for ``load_workload``'s dispatch)."""
    try:
        names = set(pq.read_schema(Path(path)).names)
    except (OSError, pa.ArrowException):
        return False
    return {"node_power_consumption", "num_nodes_alloc"} <= names


def _open(path: Path) -> pl.DataFrame:
    """Read only the columns this reader uses, failing with the file name and any missing required columns."""
    if not path.exists():
        raise WorkloadError(f"{path}: file does not exist")
    if not path.is_file():
        raise WorkloadError(f"{path}: not a regular file")
    try:
        names = pq.read_schema(path).names
    except (OSError, pa.ArrowException) as exc:
        raise WorkloadError(f"{path}: not a readable Parquet file: {shorten(exc, 200)}") from exc
    missing = [c for c in PM100_REQUIRED_COLUMNS if c not in names]
    if missing:
        raise WorkloadError(
            f"{path}: not a PM100 job table; missing column(s) {missing} (required: {list(PM100_REQUIRED_COLUMNS)})"
        )
    wanted = {
        *PM100_REQUIRED_COLUMNS,
        *_RENAMED,
        *PM100_KEPT_COLUMNS,
        "start_time",
        "end_time",
        "cpu_power_consumption",
        "mem_power_consumption",
    }
    try:
        table = pq.read_table(path, columns=[c for c in names if c in wanted])
        return pl.DataFrame(table)
    except (OSError, pa.ArrowException, pl.exceptions.PolarsError) as exc:
        raise WorkloadError(f"{path}: cannot read Parquet: {shorten(exc, 200)}") from exc


def _seconds(frame: pl.DataFrame, name: str) -> pl.Expr:
    """Epoch seconds of a time column (already converted by :func:`_clean`), null when the column is absent."""
    if name not in frame.columns:
        return pl.lit(None, dtype=pl.Float64)
    return pl.col(name).cast(pl.Float64)


def _clean(frame: pl.DataFrame, source: str) -> tuple[pl.DataFrame, list[dict[str, object]]]:
    """Numeric columns read value by value and power lists cast to floats: ``(the readable rows with their 1-based
    row number in _LINE, one reject per unreadable row)``. A column whose type cannot hold the values at all (a
    list where a number belongs, text where a list of samples belongs) is an error naming it."""
    frame = frame.with_columns((pl.int_range(pl.len(), dtype=pl.Int64) + 1).alias(_LINE))
    bad_any = pl.Series([False] * frame.height)
    rejects: list[dict[str, object]] = []
    columns = []
    for name, dtype in _NUMERIC.items():
        if name not in frame.columns:
            continue
        try:
            values, bad, why = parse_column(frame[name], dtype, _ROLES.get(name))
        except WorkloadError as exc:  # the column's dtype (a Boolean count, a list): refused whole
            raise WorkloadError(f"{source}: {exc}") from None
        except pl.exceptions.PolarsError as exc:
            raise WorkloadError(
                f"{source}: column {name!r} has type {frame.schema[name]}, expected {dtype} ({shorten(exc, 80)})"
            ) from None
        columns.append(values.alias(name))
        fresh = bad & ~bad_any
        for i in fresh.arg_true().to_list():
            shown = str(frame[name][i])[:40]
            rejects.append(
                {"source": source, "line": i + 1, "field": name, "reason": f"value {shown!r} in column {name!r} {why}"}
            )
        bad_any = bad_any | bad
    for name in _PROFILES:
        if name not in frame.columns:
            continue
        if not isinstance(frame.schema[name], pl.List | pl.Array):
            raise WorkloadError(
                f"{source}: column {name!r} has type {frame.schema[name]}, expected a list of power samples (W)"
            )
        try:
            columns.append(frame[name].cast(pl.List(pl.Float64), strict=False))
        except pl.exceptions.PolarsError as exc:
            raise WorkloadError(f"{source}: column {name!r} cannot be read as power samples: {str(exc)[:80]}") from None
    return frame.with_columns(columns).filter(~bad_any), rejects


def _profile(name: str) -> pl.Expr:
    return pl.col(name).cast(pl.List(pl.Float32))


def read_pm100(
    path: str | Path,
    *,
    machine_size: int | None = 980,
    strict: bool = False,
    sample_period: float = 20.0,
    length_tolerance_samples: float | None = 1,
) -> ReadResult:
    """Read a PM100 ``job_table.parquet`` into the canonical job table with per-node power statistics.

    ``machine_size`` defaults to Marconi100's 980 nodes (None: no size-vs-machine rejects). ``sample_period`` is
    the power sampling period (s). ``length_tolerance_samples``: how many samples the profile length may be off
    the run time before the job is rejected (None disables the check). ``strict=True`` raises
    :class:`WorkloadError` naming the first reject. See the module docstring for every convention.
    """
    path = Path(path)
    source = str(path)
    if machine_size is not None and int(machine_size) < 1:
        raise WorkloadError(f"machine_size must be a positive number of nodes, got {machine_size!r}")
    if not sample_period > 0:
        raise WorkloadError(f"sample_period must be positive, got {sample_period!r}")
    frame = _open(path)
    if frame.height == 0:
        raise WorkloadError(f"{path}: no rows (columns: {shorten(frame.columns, 200)})")

    original = frame
    frame, own = _clean(frame, source)
    start, end = _seconds(frame, "start_time"), _seconds(frame, "end_time")
    run_time = pl.col("run_time").cast(pl.Float64)
    exprs: list[pl.Expr] = [
        pl.col("job_id").cast(pl.Int64),
        _seconds(frame, "submit_time").alias("submit_time"),
        (pl.col("time_limit").cast(pl.Float64) * 60.0).alias("walltime"),
        pl.when(run_time.is_not_null()).then(run_time).otherwise(end - start).alias("runtime"),
        pl.col("num_nodes_alloc").cast(pl.Int64).alias("size"),
    ]
    for src, (dst, dtype) in _RENAMED.items():
        value = pl.col(src).cast(dtype) if src in frame.columns else pl.lit(None, dtype=dtype)
        exprs.append(value.alias(dst))
    profile = pl.col("node_power_consumption").cast(pl.List(pl.Float64))
    nodes = pl.col("num_nodes_alloc").cast(pl.Float64)
    exprs += [
        (profile.list.mean() / nodes).alias("power_mean"),
        (profile.list.max() / nodes).alias("power_max"),
        (profile.list.std(ddof=0) / nodes).alias("power_std"),
        (profile.list.sum() * sample_period).alias("energy"),
        start.alias("trace_start_time"),
        end.alias("trace_end_time"),
        _profile("node_power_consumption").alias("power_profile"),
    ]
    for name in ("cpu", "mem"):
        if f"{name}_power_consumption" in frame.columns:
            exprs.append(_profile(f"{name}_power_consumption").alias(f"{name}_power_profile"))
    for name in PM100_KEPT_COLUMNS:
        if name in frame.columns:
            value = _seconds(frame, name) if name in _TIMES else pl.col(name)
            exprs.append(value.alias(f"pm100_{name}"))
    exprs += [
        pl.col(_LINE),
        pl.concat_str(
            [
                pl.format("{}={}", pl.lit(c), pl.col(c).cast(pl.Utf8).fill_null("null"))
                for c in ("job_id", "submit_time", "time_limit", "run_time", "num_nodes_alloc")
            ]
            + [pl.format("samples={}", pl.col("node_power_consumption").list.len().cast(pl.Utf8).fill_null("null"))],
            separator=" ",
        ).alias(_RAW),
    ]
    jobs = frame.select(exprs)
    texts = dict(zip(jobs[_LINE], jobs[_RAW], strict=True))  # a reject's raw: the key PM100 fields of its row

    def row_text(line: int) -> str:
        if line in texts:
            return texts[line]
        row = original.row(line - 1, named=True)
        return " ".join(f"{c}={str(row[c])[:40]}" for c in PM100_REQUIRED_COLUMNS[:5])

    own_rejects = [r | {"job_id": None, "raw": row_text(int(cast(int, r["line"])))} for r in own]

    provenance = Provenance(
        source=source,
        format="pm100",
        machine_size=machine_size,
        size_unit="nodes",
        unix_start_time=0.0,
        timezone="UTC",
        header={
            "dataset": "PM100 (Marconi100), Zenodo 10.5281/zenodo.8129258",
            "sample_period": sample_period,
            "columns": frame.columns,
        },
        n_records=frame.height,
        conventions=_conventions(machine_size, sample_period, length_tolerance_samples),
    )
    return finish_read(
        jobs.drop(_RAW),
        own_rejects,
        provenance,
        strict=strict,
        line_column=_LINE,
        checks=_checks(sample_period, length_tolerance_samples),
        locate=lambda rejects: replace_raw(rejects, row_text),
        unit="row",
    )


def _checks(sample_period: float, length_tolerance_samples: float | None) -> list[Check]:
    """PM100's own rules, first failing one wins; the canonical rules follow."""
    n_samples = pl.col("power_profile").list.len().fill_null(0).cast(pl.Int64)
    samples = pl.col("power_profile").cast(pl.List(pl.Float64))
    submit, end = pl.col("submit_time"), pl.col("trace_end_time")
    checks: list[Check] = [
        (  # the record's times contradict each other: which one is wrong cannot be told, so the job is not used
            "submit_time",
            (submit > end) & (submit.abs() <= MAX_SUBMIT_TIME),  # beyond it, the canonical rule says why (a unit)
            pl.format(
                "job submitted after it ended: submit_time {} is {} s after end_time {} (epoch s)",
                submit,
                submit - end,
                end,
            ),
        ),
        ("walltime", pl.col("walltime").is_null() | (pl.col("walltime") <= 0), "time limit unknown"),
        ("power_profile", n_samples == 0, "no power samples"),
        ("power_profile", samples.list.drop_nulls().list.len() == 0, "power profile has only null samples"),
        (
            "power_profile",
            samples.list.eval(pl.element().is_nan() | pl.element().is_infinite()).list.any(),
            "power profile has a NaN or infinite sample",
        ),
        (
            "power_profile",
            samples.list.min() < 0,
            pl.format("power profile has a negative sample ({} W)", samples.list.min()),
        ),
    ]
    if length_tolerance_samples is not None:
        slack = float(length_tolerance_samples) * sample_period
        gap = (pl.col("runtime") - sample_period * n_samples).abs()
        why = pl.format(
            "power profile length inconsistent with run time: {} samples × {} s vs run time {} s"
            " (more than {} sample(s) apart)",
            n_samples,
            pl.lit(sample_period),
            pl.col("runtime"),
            pl.lit(length_tolerance_samples),
        )
        checks.append(("power_profile", gap > slack, why))
    return checks


def _conventions(machine_size: int | None, period: float, tolerance: float | None) -> list[str]:
    out = [
        "submit_time = PM100 submit_time as absolute epoch seconds (UTC); trace start/end kept as"
        " trace_start_time / trace_end_time (epoch s)",
        "walltime = time_limit × 60 (PM100 time_limit is in minutes); null or ≤ 0 rejected (time limit unknown)",
        "runtime = run_time (s); end_time − start_time when run_time is null",
        "size = num_nodes_alloc (unit: nodes); cores = num_cores_alloc; gpus = num_gpus_alloc; mem = mem_alloc (GB)",
        "queue = qos; partition = partition; state = job_state",
        f"power_profile = node_power_consumption as List(Float32): W summed over the job's nodes, one sample"
        f" every {period:g} s; cpu_/mem_power_profile likewise from cpu_/mem_power_consumption",
        "power_mean = mean(power_profile) / nodes (exact per-node mean)",
        "power_max = max(power_profile) / nodes and power_std = std(power_profile, ddof=0) / nodes are the max and"
        " population std of the node-AVERAGE series: exact for 1-node jobs, a lower bound of the true per-node max"
        " (and not the per-node std) for multi-node jobs, since the summed series cannot recover them",
        f"energy (J) = Σ power_profile × {period:g} s",
        f"kept with a pm100_ prefix: {', '.join(PM100_KEPT_COLUMNS)} (eligible_time as epoch s); other PM100"
        " columns dropped",
        "rejected: a value of a numeric column that is text, fractional (integer columns) or beyond Int64, naming"
        " the column",
        "rejected: submitted after its end (submit_time > end_time)",
        "rejected: null or empty node_power_consumption (no power samples), only null samples, a NaN, infinite or"
        " negative sample; null samples among others are ignored by the statistics",
        "rejected: power beyond the reader bounds of schema (MAX_NODE_POWER_W per node), see docs/decisions.md",
        "reject 'line' is the 1-based Parquet row number; 'raw' lists the key PM100 fields",
        "rejected: the canonical rules of schema.validate_jobs",
        "jobs sorted in queue order (submit_time, job_id)",
    ]
    if tolerance is None:
        out.append("profile length vs run time not checked")
    else:
        out.append(
            f"rejected: |run_time − {period:g}·len(power_profile)| > {tolerance:g} sample(s) ({tolerance * period:g} s)"
        )
    if machine_size is None:
        out.append("machine size unknown: no size-vs-machine rejects")
    else:
        out.append(f"machine size {machine_size} nodes")
    return out
