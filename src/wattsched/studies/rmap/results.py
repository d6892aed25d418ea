"""The tables of an RMAP grid's jobs (paper 004): the summary per trace, bound and policy, the per-sample means and
their ratios to Traditional and Naive, and Table 4's improvements. Shared by the experiment (its summary), the
figures and the reproduction, below all three.
"""

from __future__ import annotations

import math

import polars as pl

#: The worst-case power of the machine (W), by which bounds are normalised (``normalised_bound``, the figures' x).
WORST_CASE = 64 * 2 * 115.0


def rmap_summary(jobs: pl.DataFrame) -> pl.DataFrame:
    """Per trace, bound, policy and data source: mean turnaround (s), normalised to Traditional (its default,
    oracle data), per-job comparisons with Traditional, and the power allocated and drawn at most."""
    key = ["trace", "bound"]
    trad = jobs.filter((pl.col("policy") == "rmap-traditional") & pl.col("default_data")).select(
        *key, "job_id", pl.col("turnaround").alias("trad_turnaround")
    )
    joined = jobs.join(trad, on=[*key, "job_id"], how="left")
    out = (
        joined.group_by(*key, "policy", "data", "default_data")
        .agg(
            pl.col("turnaround").mean().alias("mean_turnaround"),
            pl.col("trad_turnaround").mean().alias("traditional_turnaround"),
            (pl.col("turnaround") < pl.col("trad_turnaround") - 1e-6).sum().alias("jobs_better"),
            ((pl.col("turnaround") - pl.col("trad_turnaround")).abs() <= 1e-6).sum().alias("jobs_same"),
            (pl.col("turnaround") > pl.col("trad_turnaround") + 1e-6).sum().alias("jobs_worse"),
            pl.col("wait").mean().alias("mean_wait"),
            pl.col("alloc_power").mean().alias("mean_alloc_power"),
        )
        .with_columns(
            (pl.col("mean_turnaround") / pl.col("traditional_turnaround")).alias("normalised_turnaround"),
            (pl.col("bound") / WORST_CASE).round(2).alias("normalised_bound"),
        )
    )
    return out.sort("trace", "bound", "policy", "data")


def with_sample(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with a ``sample`` column (0 when it has none): the index of one draw of data, model and traces."""
    return frame if "sample" in frame.columns else frame.with_columns(pl.lit(0).alias("sample"))


def rmap_run_means(jobs: pl.DataFrame) -> pl.DataFrame:
    """Mean turnaround ``tt`` per sample, trace, bound, policy and data source, with its ratio to Traditional
    (``vs_trad``) and to Naive (``vs_naive``) of the same sample, trace and bound (default data), and the bound
    normalised by the worst case (``x``)."""
    jobs = with_sample(jobs)
    key = ["sample", "trace", "bound"]
    means = jobs.group_by(*key, "policy", "data", "default_data").agg(pl.col("turnaround").mean().alias("tt"))
    ref = means.filter(pl.col("default_data"))
    trad = ref.filter(pl.col("policy") == "rmap-traditional").select(*key, pl.col("tt").alias("tt_trad"))
    naive = ref.filter(pl.col("policy") == "rmap-naive").select(*key, pl.col("tt").alias("tt_naive"))
    return (
        means.join(trad, on=key, how="left")
        .join(naive, on=key, how="left")
        .with_columns(
            (pl.col("tt") / pl.col("tt_trad")).alias("vs_trad"),
            (pl.col("tt") / pl.col("tt_naive")).alias("vs_naive"),
            (pl.col("bound") / WORST_CASE).alias("x"),
        )
    )


def table4_check(summary: pl.DataFrame) -> dict[str, float]:
    """Improvement (%) of each policy's mean turnaround over Traditional on the large trace at 6,500 W (the
    quantity of the paper's Table 4)."""
    sub = summary.filter((pl.col("trace") == "large") & (pl.col("bound") == 6500.0) & pl.col("default_data"))
    return {
        r["policy"]: 100.0 * (1.0 - r["normalised_turnaround"])
        for r in sub.iter_rows(named=True)
        if not math.isnan(r["normalised_turnaround"])
    }
