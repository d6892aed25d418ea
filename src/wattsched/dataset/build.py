"""Build a per-job power dataset from a job table and node telemetry (the PM100 method, paper 003).

Every input job ends in exactly one of the two outputs: the dataset (exclusive jobs with a complete power series,
PM100 schema: the job's columns, the unpacked TRES counts, ``power_consumption`` and the per-node summaries), or
the rejects with the reason (shares a node, too short to verify, missing samples).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from wattsched.core.output_folders import FolderLock, clean_temporaries_of
from wattsched.core.store import atomic_path
from wattsched.dataset.exclusive import SHARED, UNVERIFIABLE, classify_exclusive
from wattsched.dataset.extract import ExtractionStats, extract_series
from wattsched.dataset.inputs import check_jobs
from wattsched.dataset.telemetry import TelemetrySource
from wattsched.dataset.tres import unpack_tres

if TYPE_CHECKING:
    from polars._typing import ColumnNameOrSelector, PolarsDataType

REJECT_SCHEMA: dict[ColumnNameOrSelector | PolarsDataType, PolarsDataType] = {
    "job_id": pl.Int64,
    "stage": pl.Utf8,
    "reason": pl.Utf8,
}


def epoch_seconds(frame: pl.DataFrame, columns: tuple[str, ...] = ("start_time", "end_time")) -> pl.DataFrame:
    """Datetime columns as float epoch seconds (naive datetimes are taken as UTC); numbers pass through."""
    exprs = []
    for c in columns:
        if c in frame.columns and frame.schema[c].is_temporal():
            exprs.append((pl.col(c).dt.epoch("ms").cast(pl.Float64) / 1000.0).alias(c))
    return frame.with_columns(exprs) if exprs else frame


def build_dataset(
    jobs: pl.DataFrame,
    telemetry: str | Path | pl.DataFrame | pl.LazyFrame | TelemetrySource,
    *,
    period: float = 20.0,
    legacy_split: bool = False,
    max_missing: float = 0.0,
    nodes_column: str = "nodes",
    snap: float = 0.0,
    memory_gb: float = 1.0,
    executor: str = "local",
    workers: int = 1,
    address: str | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    stats: ExtractionStats | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(dataset, rejects)``; see the module docstring. ``jobs`` needs ``job_id``, ``start_time``, ``end_time``
    (seconds or datetimes) and the node list. ``telemetry`` is a path (file, directory of partitions or the
    ExaData layout, read window by window) or an in-memory table (``node, timestamp`` and ``ps0, ps1`` or
    ``watts``); see :mod:`wattsched.dataset.telemetry`. The remaining options are those of
    :func:`~wattsched.dataset.extract.extract_series`."""
    # a job with a missing or impossible time or an unreadable node list is an input reject, not a failed build
    jobs, bad_input = check_jobs(epoch_seconds(jobs), nodes_column)
    no_nodes = jobs.filter(pl.col(nodes_column).list.len().fill_null(0) == 0)
    jobs = jobs.filter(pl.col(nodes_column).list.len().fill_null(0) > 0)
    status = classify_exclusive(jobs, period=period, legacy_split=legacy_split, nodes_column=nodes_column)
    reasons = status.filter(pl.col("status") != "exclusive").select(
        "job_id",
        pl.lit("exclusivity").alias("stage"),
        pl.when(pl.col("status") == SHARED)
        .then(pl.format("shares a node with another job at some sample instant ({} node conflicts)", "conflicts"))
        .when(pl.col("status") == UNVERIFIABLE)
        .then(pl.lit(f"too short to verify: no {period:g}-s sample instant between its start and end"))
        .otherwise(pl.col("status"))
        .alias("reason"),
    )
    exclusive = status.filter(pl.col("status") == "exclusive").join(
        jobs.select("job_id", nodes_column), on="job_id", how="left"
    )
    series, missing = extract_series(
        exclusive,
        telemetry,
        period=period,
        max_missing=max_missing,
        nodes_column=nodes_column,
        snap=snap,
        memory_gb=memory_gb,
        executor=executor,
        workers=workers,
        address=address,
        progress=progress,
        stats=stats,
    )
    rejects = pl.concat(
        [
            bad_input,
            no_nodes.select("job_id", pl.lit("input").alias("stage"), pl.lit("no node list").alias("reason")),
            reasons,
            missing.select("job_id", pl.lit("extraction").alias("stage"), "reason"),
        ],
        how="vertical_relaxed",
    ).cast(REJECT_SCHEMA)
    dataset = unpack_tres(jobs.join(series, on="job_id", how="inner", maintain_order="left"))
    return dataset, rejects.sort("job_id")


# ------------------------------------------------------------------------------------------------ outputs


def rejects_path(output: Path) -> Path:
    """Where a build's rejects go: ``<stem>.rejects.parquet`` next to the dataset ``output``."""
    return output.with_name(output.stem + ".rejects.parquet")


def lock_output(output: Path) -> FolderLock:
    """The held lock of the build writing ``output`` (one build per output at a time; another one is refused at
    once with an :class:`OSError` naming this process); holding it, the temporaries a killed build of ``output``
    left are removed. Per output, not per folder: builds of other files in the same folder do not conflict.
    Release it with :meth:`FolderLock.release` (or let the process end)."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    lock = FolderLock(output.parent, f"the dataset output {output}", name=f".{output.name}.lock").acquire()
    clean_temporaries_of([output, rejects_path(output)])
    return lock


def write_outputs(dataset: pl.DataFrame, rejects: pl.DataFrame, output: Path) -> Path:
    """Write the dataset to ``output`` and the rejects next to it (:func:`rejects_path`, returned), each to a
    temporary file renamed over the target once complete: a kill never leaves a partial or empty file under a
    final name, and a previous build stays whole until the new one is written."""
    output = Path(output)
    rejects_file = rejects_path(output)
    with atomic_path(output, keep_suffix=True) as data_tmp, atomic_path(rejects_file, keep_suffix=True) as rej_tmp:
        dataset.write_parquet(data_tmp)
        rejects.write_parquet(rej_tmp)
    return rejects_file
