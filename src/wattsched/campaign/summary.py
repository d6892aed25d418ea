"""Campaign results grouped the way paper 000 reads them: by estimator (power check × power source) and cap.

Shared by the static figures, the dashboard and the CLI table, so that the three agree on the estimator names,
their order and the aggregates.
"""

from __future__ import annotations

import polars as pl

#: Checks from the most conservative (naive: every node at 1,860 W) to the most aggressive (mean), so that a
#: figure reads as a trade-off: less power used and less delay on the left, more of both on the right.
CHECK_ORDER = ("naive", "max", "gaussian99", "gaussian95", "gaussian68", "mean")
#: Sources side by side within a check, so that each predicted estimator sits next to its real-power twin.
SOURCE_ORDER = ("naive", "predicted", "real")

#: The per-run metrics the summary aggregates: result column -> short name (fractions, not percents).
SUMMARY_METRICS = {
    "p_power_utilisation": "utilisation",
    "p_trespass": "trespass",
    "p_max_instantaneous_break": "max_break",
    "p_time_above_cap_share": "above_cap",
    "p_turnaround_increase": "turnaround_inc",
    "p_max_turnaround_increase": "max_turnaround_inc",
    "p_share_started_in_window": "in_window",
}


def estimator_label(check: str, source: str) -> str:
    """``naive`` alone (it has its own source), else ``"<source> <check>"``, e.g. ``"predicted gaussian99"``."""
    return check if check == "naive" else f"{source} {check}"


def _rank(check: str, source: str) -> tuple[int, str, int, str]:
    c = CHECK_ORDER.index(check) if check in CHECK_ORDER else len(CHECK_ORDER)
    s = SOURCE_ORDER.index(source) if source in SOURCE_ORDER else len(SOURCE_ORDER)
    return (c, check, s, source)


def estimator_order(results: pl.DataFrame) -> list[str]:
    """The estimator labels present in ``results`` in a fixed order: by check (:data:`CHECK_ORDER`, unknown
    checks such as ``quantile:P`` after, alphabetically), then by source (predicted before real)."""
    pairs = results.select("check", "source").unique().rows()
    return [estimator_label(c, s) for c, s in sorted(pairs, key=lambda p: _rank(*p))]


def capped_runs(results: pl.DataFrame) -> pl.DataFrame:
    """The capped runs (baselines dropped) with an ``estimator`` column; empty when none has finished."""
    if results.is_empty() or "kind" not in results.columns:
        return pl.DataFrame()
    runs = results.filter(pl.col("kind") == "run")
    if runs.is_empty():
        return runs
    return runs.with_columns(
        pl.when(pl.col("check") == "naive").then(pl.col("check"))
        .otherwise(pl.concat_str("source", pl.lit(" "), "check")).alias("estimator")
    )


def campaign_summary(results: pl.DataFrame, *, stat: str = "median") -> pl.DataFrame:
    """One row per policy × cap × estimator: the number of runs and the ``stat`` ("median" or "mean") over
    workload windows of each metric of :data:`SUMMARY_METRICS` (fractions; ``trespass`` = share of runs that
    broke the cap). Rows sorted by policy, cap, then :func:`estimator_order`."""
    if stat not in ("median", "mean"):
        raise ValueError(f"stat must be 'median' or 'mean', got {stat!r}")
    runs = capped_runs(results)
    columns = {"policy": pl.Utf8, "cap": pl.Float64, "estimator": pl.Utf8, "runs": pl.UInt32,
               **dict.fromkeys(SUMMARY_METRICS.values(), pl.Float64)}
    if runs.is_empty():
        return pl.DataFrame(schema=columns)
    aggs = []
    for col, name in SUMMARY_METRICS.items():
        if col not in runs.columns:
            aggs.append(pl.lit(None, pl.Float64).alias(name))
            continue
        value = pl.col(col).cast(pl.Float64)
        # trespass is a yes/no per run: its median would hide how often it happens, so it is always a share
        aggs.append((value.mean() if stat == "mean" or col == "p_trespass" else value.median()).alias(name))
    order = {label: k for k, label in enumerate(estimator_order(runs))}
    table = runs.group_by("policy", "cap", "estimator").agg(pl.len().alias("runs"), *aggs)
    return (
        table.with_columns(pl.col("estimator").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
        .sort("policy", "cap", "_order")
        .drop("_order")
        .select(list(columns))
        .cast(columns)
    )


def cost_summary(results: pl.DataFrame) -> pl.DataFrame:
    """Per run kind: how many runs and the distribution of their wall-clock cost (``elapsed_s`` quantiles), to
    size the next campaign."""
    if results.is_empty() or "elapsed_s" not in results.columns:
        return pl.DataFrame()
    e = pl.col("elapsed_s")
    return (
        results.group_by("kind")
        .agg(pl.len().alias("runs"), e.min().alias("min_s"), e.quantile(0.25).alias("q1_s"),
             e.median().alias("median_s"), e.quantile(0.75).alias("q3_s"), e.quantile(0.95).alias("p95_s"),
             e.max().alias("max_s"), e.sum().alias("total_s"))
        .sort("kind")
    )
