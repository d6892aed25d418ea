"""Campaign results grouped the way paper 000 reads them: by estimator (power check × power source) and cap.

Shared by the static figures, the dashboard and the CLI table, so that the three agree on the estimator names,
their order and the aggregates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

import polars as pl

if TYPE_CHECKING:
    from polars._typing import ColumnNameOrSelector, PolarsDataType

#: Checks from the most conservative (naive: every node at its max − idle) to the most aggressive (mean), so that a
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
        pl.when(pl.col("check") == "naive")
        .then(pl.col("check"))
        .otherwise(pl.concat_str("source", pl.lit(" "), "check"))
        .alias("estimator")
    )


#: How the summary aggregates over (workload window, cap) groups: paper 000 averages ("Values given in the
#: remaining of this section are computed by (workload, powercap) group, and then averaged on all groups").
AGGREGATES = ("mean", "median")
DEFAULT_AGGREGATE = "mean"


def _group_keys(runs: pl.DataFrame) -> list[str]:
    """``post_window_cap`` joins the estimator keys when a campaign sweeps it (else it would pool its values)."""
    if "post_window_cap" in runs.columns and runs["post_window_cap"].drop_nulls().n_unique() > 1:
        return ["post_window_cap"]
    return []


def _aggregate(runs: pl.DataFrame, keys: list[str], stat: str) -> pl.DataFrame:
    """The paper's two steps: each metric's mean per (``keys``, workload window, cap) group, then ``stat`` over
    the groups of each ``keys`` (trespass is always a share: the mean of per-group shares)."""
    if stat not in AGGREGATES:
        raise ValueError(f"stat must be one of {AGGREGATES}, got {stat!r}")
    present = {col: name for col, name in SUMMARY_METRICS.items() if col in runs.columns}
    groups = runs.group_by(*dict.fromkeys([*keys, "workload", "cap"])).agg(
        pl.len().alias("runs"), *[pl.col(col).cast(pl.Float64).mean().alias(name) for col, name in present.items()]
    )
    aggs = []
    for name in SUMMARY_METRICS.values():
        if name not in present.values():
            aggs.append(pl.lit(None, pl.Float64).alias(name))
            continue
        value = pl.col(name)
        # trespass is a yes/no per run: its median would hide how often it happens, so it is always a share
        aggs.append((value.mean() if stat == "mean" or name == "trespass" else value.median()).alias(name))
    table = groups.group_by(*keys).agg(pl.col("runs").sum(), pl.len().alias("groups"), *aggs)
    order = {label: k for k, label in enumerate(estimator_order(runs))}
    sort = [k for k in keys if k != "estimator"]
    return (
        table.with_columns(pl.col("estimator").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
        .sort(*sort, "_order")
        .drop("_order")
    )


def complete_groups(runs: pl.DataFrame) -> pl.DataFrame:
    """The capped runs of the (workload window, cap) groups that every estimator has finished.

    A partial campaign (stopped, or still running) has groups where only some estimators ran; averaging each
    estimator over its own groups would compare unequal instance sets (e.g. one estimator over 11,921 jobs and
    another over 12,921), so the summaries keep only the groups complete for every estimator present."""
    if runs.is_empty():
        return runs
    keys = [*_group_keys(runs), "workload", "cap"]
    wanted = runs["estimator"].n_unique()
    full = runs.group_by(keys).agg(pl.col("estimator").n_unique().alias("_n")).filter(pl.col("_n") == wanted)
    return runs.join(full.drop("_n"), on=keys, how="semi", nulls_equal=True)


def incomplete_group_count(results: pl.DataFrame) -> tuple[int, int]:
    """``(incomplete, total)`` (workload window, cap) groups of capped runs: the groups :func:`complete_groups`
    leaves out of the summaries, so that a caller can warn about them."""
    runs = capped_runs(results)
    if runs.is_empty():
        return 0, 0
    keys = [*_group_keys(runs), "workload", "cap"]
    total = runs.select(keys).unique().height
    return total - complete_groups(runs).select(keys).unique().height, total


def campaign_summary(results: pl.DataFrame, *, stat: str = DEFAULT_AGGREGATE) -> pl.DataFrame:
    """One row per policy × cap × estimator (× post-window cap when the campaign sweeps it): the number of runs
    and the ``stat`` ("mean", paper 000's aggregation and the default, or "median") over workload windows of
    each metric of :data:`SUMMARY_METRICS` (fractions; ``trespass`` = share of runs that broke the cap), runs
    first averaged per (workload window, cap) group; only groups complete for every estimator count
    (:func:`complete_groups`). Rows sorted by policy, cap, then :func:`estimator_order`."""
    return _summary(results, ["policy", "cap", "estimator"], "runs", stat)


def paper_summary(results: pl.DataFrame, *, stat: str = DEFAULT_AGGREGATE) -> pl.DataFrame:
    """Paper 000's headline numbers: one row per policy × estimator (× post-window cap when swept), each metric
    computed per (workload window, cap) group and then averaged (``stat="mean"``) or taken the median of over
    all groups, caps pooled; ``groups`` counts them."""
    return _summary(results, ["policy", "estimator"], "groups", stat)


def _summary(results: pl.DataFrame, keys: list[str], count: str, stat: str) -> pl.DataFrame:
    """The capped runs aggregated over ``keys`` (plus the swept post-window cap), with a typed empty frame when
    there are none; ``count`` names the column that counts what each row aggregates."""
    if stat not in AGGREGATES:
        raise ValueError(f"stat must be one of {AGGREGATES}, got {stat!r}")
    runs = complete_groups(capped_runs(results))
    extra = _group_keys(runs) if not runs.is_empty() else []
    columns = {
        **({"post_window_cap": pl.Utf8} if extra else {}),
        **{k: pl.Float64 if k == "cap" else pl.Utf8 for k in keys},
        count: pl.UInt32,
        **dict.fromkeys(SUMMARY_METRICS.values(), pl.Float64),
    }
    if runs.is_empty():
        return pl.DataFrame(schema=columns)
    table = _aggregate(runs, [*extra, *keys], stat)
    # DataFrame.cast wants a Mapping keyed by column name, selector or dtype (invariant in the key).
    return table.select(list(columns)).cast(
        cast("Mapping[ColumnNameOrSelector | PolarsDataType, PolarsDataType]", columns)
    )


def cost_summary(results: pl.DataFrame) -> pl.DataFrame:
    """Per run kind: how many runs and the distribution of their wall-clock cost (``elapsed_s`` quantiles), to
    size the next campaign."""
    if results.is_empty() or "elapsed_s" not in results.columns:
        return pl.DataFrame()
    e = pl.col("elapsed_s")
    return (
        results.group_by("kind")
        .agg(
            pl.len().alias("runs"),
            e.min().alias("min_s"),
            e.quantile(0.25).alias("q1_s"),
            e.median().alias("median_s"),
            e.quantile(0.75).alias("q3_s"),
            e.quantile(0.95).alias("p95_s"),
            e.max().alias("max_s"),
            e.sum().alias("total_s"),
        )
        .sort("kind")
    )
