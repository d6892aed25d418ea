"""Build a per-job power dataset from a job table and node telemetry (the PM100 method, paper 003).

Every input job ends in exactly one of the two outputs: the dataset (exclusive jobs with a complete power series,
PM100 schema: the job's columns, the unpacked TRES counts, ``power_consumption`` and the per-node summaries), or
the rejects with the reason (shares a node, too short to verify, missing samples).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from wattsched.dataset.exclusive import SHARED, UNVERIFIABLE, classify_exclusive
from wattsched.dataset.extract import extract_series
from wattsched.dataset.tres import unpack_tres

REJECT_SCHEMA = {"job_id": pl.Int64, "stage": pl.Utf8, "reason": pl.Utf8}


def node_lists(jobs: pl.DataFrame, column: str = "nodes") -> pl.DataFrame:
    """The node column as a list of names: a list already, or a comma- or space-separated string (brackets
    and quotes stripped, e.g. ``"['r1n1', 'r1n2']"``)."""
    dtype = jobs.schema[column]
    if isinstance(dtype, pl.List):
        return jobs.with_columns(pl.col(column).cast(pl.List(pl.Utf8)))
    cleaned = pl.col(column).cast(pl.Utf8).str.replace_all(r"[\[\]'\"]", "").str.strip_chars()
    return jobs.with_columns(
        cleaned.str.split(",").list.eval(pl.element().str.strip_chars()).list.filter(pl.element() != "")
        .alias(column)
    )


def epoch_seconds(frame: pl.DataFrame, columns: tuple[str, ...] = ("start_time", "end_time")) -> pl.DataFrame:
    """Datetime columns as float epoch seconds (naive datetimes are taken as UTC); numbers pass through."""
    exprs = []
    for c in columns:
        if c in frame.columns and frame.schema[c].is_temporal():
            exprs.append((pl.col(c).dt.epoch("ms").cast(pl.Float64) / 1000.0).alias(c))
    return frame.with_columns(exprs) if exprs else frame


def read_telemetry(path: str | Path) -> pl.LazyFrame:
    """Telemetry from a Parquet file or a directory of Parquet partitions (scanned lazily)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.rglob("*.parquet"))
        if not files:
            raise FileNotFoundError(f"{path}: no Parquet files in the telemetry directory")
        lf = pl.scan_parquet(files)
    elif path.exists():
        lf = pl.scan_parquet(path)
    else:
        raise FileNotFoundError(f"{path}: telemetry file or directory does not exist")
    if "timestamp" in lf.collect_schema().names() and lf.collect_schema()["timestamp"].is_temporal():
        lf = lf.with_columns((pl.col("timestamp").dt.epoch("ms").cast(pl.Float64) / 1000.0).alias("timestamp"))
    return lf


def build_dataset(
    jobs: pl.DataFrame,
    telemetry: pl.DataFrame | pl.LazyFrame,
    *,
    period: float = 20.0,
    legacy_split: bool = False,
    max_missing: float = 0.0,
    nodes_column: str = "nodes",
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(dataset, rejects)``; see the module docstring. ``jobs`` needs ``job_id``, ``start_time``, ``end_time``
    (seconds) and the node list; ``telemetry`` is ``node, timestamp, ps0, ps1`` or ``node, timestamp, watts``."""
    jobs = node_lists(epoch_seconds(jobs), nodes_column)
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
    series, missing = extract_series(exclusive, telemetry, period=period, max_missing=max_missing,
                                     nodes_column=nodes_column)
    rejects = pl.concat(
        [
            no_nodes.select("job_id", pl.lit("input").alias("stage"), pl.lit("no node list").alias("reason")),
            reasons,
            missing.select("job_id", pl.lit("extraction").alias("stage"), "reason"),
        ],
        how="vertical_relaxed",
    ).cast(REJECT_SCHEMA)
    dataset = unpack_tres(jobs.join(series, on="job_id", how="inner", maintain_order="left"))
    return dataset, rejects.sort("job_id")
