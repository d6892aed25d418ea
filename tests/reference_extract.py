"""A brute-force reference of the PM100 extraction for property tests: every (job, node, instant) cell joined
with the telemetry by Polars, no windows, no compiled kernel (the implementation before the out-of-core one)."""

from __future__ import annotations

import polars as pl

#: Telemetry layouts accepted: ``node, timestamp, ps0, ps1`` or ``node, timestamp, watts``.
TELEMETRY_FORMS = (("node", "timestamp", "ps0", "ps1"), ("node", "timestamp", "watts"))


def node_watts(telemetry: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """``node, timestamp, watts`` from either telemetry form (PSUs summed where both reported)."""
    lf = telemetry.lazy()
    cols = lf.collect_schema().names()
    if {"ps0", "ps1"} <= set(cols):
        return lf.select(
            "node",
            pl.col("timestamp").cast(pl.Float64),
            (pl.col("ps0") + pl.col("ps1")).cast(pl.Float64).alias("watts"),
        ).drop_nulls("watts")
    if "watts" in cols:
        return lf.select("node", pl.col("timestamp").cast(pl.Float64), pl.col("watts").cast(pl.Float64)).drop_nulls(
            "watts"
        )
    raise ValueError(f"telemetry needs columns node, timestamp and ps0+ps1 or watts; it has {cols}")


def reference_extract(
    jobs: pl.DataFrame,
    telemetry: pl.DataFrame | pl.LazyFrame,
    *,
    period: float = 20.0,
    max_missing: float = 0.0,
    nodes_column: str = "nodes",
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(series, rejects)`` for ``jobs`` (``job_id, grid_start, grid_end`` and the node list; typically the
    exclusive rows of :func:`~wattsched.dataset.exclusive.classify_exclusive` joined with the node lists).

    ``series``: ``job_id, power_consumption`` (list of W), ``samples``, ``missing_samples``, ``power_mean``,
    ``power_max``, ``power_std`` (per node, W) and ``energy`` (J). ``rejects``: ``job_id, reason``.
    """
    if not 0.0 <= max_missing <= 1.0:
        raise ValueError(f"max_missing is a share of samples in [0, 1], got {max_missing}")
    needed = [c for c in ("job_id", "grid_start", "grid_end", nodes_column) if c not in jobs.columns]
    if needed:
        raise ValueError(f"extraction needs job column(s) {needed}")
    watts = node_watts(telemetry)
    plan = jobs.lazy().select(
        "job_id",
        pl.col(nodes_column).list.unique().alias("node"),
        pl.int_ranges(
            pl.col("grid_start").cast(pl.Int64), pl.col("grid_end").cast(pl.Int64) + int(period), int(period)
        ).alias("timestamp"),
        pl.col(nodes_column).list.unique().list.len().alias("n_nodes"),
    )
    cells = plan.explode("timestamp").explode("node").with_columns(pl.col("timestamp").cast(pl.Float64))
    # one value per (node, timestamp): duplicated telemetry rows would double-count, so they are averaged
    per_node = watts.group_by("node", "timestamp").agg(pl.col("watts").mean())
    joined = cells.join(per_node, on=["node", "timestamp"], how="left")
    per_instant = (
        joined.group_by("job_id", "timestamp")
        .agg(
            pl.col("watts").sum().alias("p"),
            pl.col("watts").count().alias("present"),
            pl.col("n_nodes").first(),
            pl.col("watts").alias("node_values"),
        )
        .with_columns((pl.col("present") == pl.col("n_nodes")).alias("complete"))
    )
    per_job = (
        per_instant.sort("job_id", "timestamp")
        .group_by("job_id", maintain_order=True)
        .agg(
            pl.col("p").filter(pl.col("complete")).alias("power_consumption"),
            pl.len().alias("samples"),
            (~pl.col("complete")).sum().alias("missing_samples"),
            pl.col("node_values").filter(pl.col("complete")).explode().alias("__values"),
            pl.col("present").filter(~pl.col("complete")).min().alias("__least_nodes"),
            pl.col("n_nodes").first(),
        )
        .collect()
    )
    share = per_job["missing_samples"] / per_job["samples"]
    bad = per_job.filter((share > max_missing) | (pl.col("missing_samples") == pl.col("samples")))
    # formatted in Python: pl.format panics on some inputs in Polars 2.1
    rejects = pl.DataFrame(
        {
            "job_id": bad["job_id"],
            "reason": [
                f"{m} of {s} samples missing (some instants have {lo or 0} of {n} nodes reporting)"
                for m, s, lo, n in bad.select("missing_samples", "samples", "__least_nodes", "n_nodes").iter_rows()
            ],
        },
        schema={"job_id": bad["job_id"].dtype, "reason": pl.Utf8},
    )
    good = per_job.join(bad.select("job_id"), on="job_id", how="anti", maintain_order="left")
    series = good.select(
        "job_id",
        pl.col("power_consumption").cast(pl.List(pl.Float64)),
        "samples",
        "missing_samples",
        pl.col("__values").list.mean().alias("power_mean"),
        pl.col("__values").list.max().alias("power_max"),
        pl.col("__values").list.std(ddof=0).alias("power_std"),
        (pl.col("power_consumption").list.sum() * period).alias("energy"),
    )
    return series, rejects
