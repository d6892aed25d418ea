"""The exclusive-job filter of the PM100 method (paper 003 §3, [AMBIG-0.1], [AMBIG-3.1]; docs/dataset.md).

On the sample grid of period θ (20 s on Marconi100) a job covers the instants {start', start' + θ, …, end'} with
``start' = ceil_θ(start)`` and ``end' = floor_θ(end)`` (sub-second parts dropped first, as the reference code
does). It is **exclusive** when it is the only job on every one of its nodes at every one of its instants: only
then is a node's measured power the job's own. Two jobs share a cell even when one ends on the instant the next
starts (both cover it). A job with ``start' > end'`` (shorter than one period between grid points) has no instant
to check: it is **unverifiable** and dropped by default, rather than passing vacuously as in the reference code.

The test is global by default: a conflict counts whatever month the jobs started in and however many nodes they
have. ``legacy_split=True`` reproduces the original per-month, single- vs multi-node split, in which conflicts
across those groups go unseen.

Vectorised: the (job, node) pairs are sorted by node and grid start; a pair conflicts when it starts at or before
the latest end among the node's earlier pairs, or ends at or after the next pair's start. O(P log P) for P pairs.
"""

from __future__ import annotations

import polars as pl

#: Status of each job.
EXCLUSIVE, SHARED, UNVERIFIABLE = "exclusive", "shared", "unverifiable"


def grid_bounds(start: pl.Expr, end: pl.Expr, period: float) -> tuple[pl.Expr, pl.Expr]:
    """``(start', end')``: whole seconds, then start rounded up and end rounded down to the grid."""
    s = start.floor()
    e = end.floor()
    return (s / period).ceil() * period, (e / period).floor() * period


def classify_exclusive(
    jobs: pl.DataFrame,
    *,
    period: float = 20.0,
    legacy_split: bool = False,
    nodes_column: str = "nodes",
) -> pl.DataFrame:
    """One row per input job: ``job_id, grid_start, grid_end, samples, status`` (exclusive, shared,
    unverifiable) and ``conflicts`` (how many of its (node, job) pairs overlap another job).

    ``jobs`` has ``job_id``, ``start_time`` and ``end_time`` (seconds, any epoch) and a list column of node names
    (``nodes_column``); every job keeps a row, so nothing is dropped without a status.
    """
    missing = [c for c in ("job_id", "start_time", "end_time", nodes_column) if c not in jobs.columns]
    if missing:
        raise ValueError(f"the exclusivity test needs column(s) {missing}; the table has {jobs.columns}")
    if not isinstance(jobs.schema[nodes_column], pl.List):
        raise ValueError(f"{nodes_column!r} must be a list of node names per job, got {jobs.schema[nodes_column]}")
    if jobs["job_id"].n_unique() != jobs.height:
        raise ValueError("job ids must be unique for the exclusivity test")
    if not period > 0:
        raise ValueError(f"the sample period must be positive, got {period}")
    g0, g1 = grid_bounds(pl.col("start_time").cast(pl.Float64), pl.col("end_time").cast(pl.Float64), period)
    base = jobs.select(
        "job_id",
        g0.alias("grid_start"),
        g1.alias("grid_end"),
        pl.col(nodes_column).list.unique().alias("__nodes"),
        _group_key(jobs, nodes_column, legacy_split).alias("__group"),
    )
    verifiable = base.filter(pl.col("grid_start") <= pl.col("grid_end"))
    pairs = verifiable.explode("__nodes").drop_nulls("__nodes").sort("__group", "__nodes", "grid_start", "job_id")
    part = ["__group", "__nodes"]
    pairs = pairs.with_columns(
        pl.col("grid_end").cum_max().shift(1).over(part).alias("__prev_end"),
        pl.col("grid_start").shift(-1).over(part).alias("__next_start"),
    ).with_columns(
        (
            (pl.col("grid_start") <= pl.col("__prev_end")).fill_null(False)
            | (pl.col("__next_start") <= pl.col("grid_end")).fill_null(False)
        ).alias("__conflict")
    )
    conflicts = pairs.group_by("job_id").agg(pl.col("__conflict").sum().alias("conflicts"))
    out = base.join(conflicts, on="job_id", how="left", maintain_order="left").with_columns(
        pl.col("conflicts").fill_null(0).cast(pl.Int64)
    )
    samples = ((pl.col("grid_end") - pl.col("grid_start")) / period).floor().cast(pl.Int64) + 1
    status = (
        pl.when(pl.col("grid_start") > pl.col("grid_end"))
        .then(pl.lit(UNVERIFIABLE))
        .when(pl.col("conflicts") > 0)
        .then(pl.lit(SHARED))
        .otherwise(pl.lit(EXCLUSIVE))
    )
    return out.select(
        "job_id",
        "grid_start",
        "grid_end",
        pl.when(pl.col("grid_start") > pl.col("grid_end")).then(0).otherwise(samples).alias("samples"),
        status.alias("status"),
        "conflicts",
    )


def _group_key(jobs: pl.DataFrame, nodes_column: str, legacy_split: bool) -> pl.Expr:
    """The partition the test runs in: everything together, or (start month, single/multi-node) for the legacy
    behaviour of the reference scripts."""
    if not legacy_split:
        return pl.lit("all")
    month = pl.from_epoch(pl.col("start_time").cast(pl.Float64).floor().cast(pl.Int64), time_unit="s").dt.strftime(
        "%Y-%m"
    )
    multi = pl.when(pl.col(nodes_column).list.unique().list.len() > 1).then(pl.lit("multi")).otherwise(pl.lit("single"))
    return pl.concat_str([month, multi], separator="/")
