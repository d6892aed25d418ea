"""The metric layer of paper 000's claims: which column answers which of the paper's words, and the paper's
aggregation (§6.5, "computed by (workload, powercap) group, and then averaged on all groups").

Per seed, an estimator check's value is the mean over (window, cap) groups of the group's mean over its instances
(real and predicted pooled, as the paper's per-check numbers are); a :class:`Spread` over seeds. The same layer
serves the pooled claims, the per-seed claims (a results table of one seed gives a one-value spread) and the
sensitivity rows (docs/reproduce-000.md), so every number of the report is computed one way.

Definitions (docs/semantics.md §3.7): under-utilisation = 1 − U, over-utilisation = U − 1 with U the mean dynamic
power in the 3-h window over the cap; an instance's break is ``max(0, max P/cap − 1)`` (0 when it stays below the
cap), so "average and median over instances" are over every instance.
"""

from __future__ import annotations

import itertools
from typing import Any

import polars as pl

from wattsched.power.platform import load_platform
from wattsched.reproduce.claims import Spread

GAUSSIANS = ("gaussian68", "gaussian95", "gaussian99")
SHORT = {"naive": "naive", "mean": "mean", "max": "max", "gaussian68": "g68", "gaussian95": "g95", "gaussian99": "g99"}

UNDER = ((1.0 - pl.col("p_power_utilisation")) * 100).alias("v")
OVER = ((pl.col("p_power_utilisation") - 1.0) * 100).alias("v")
TURN = (pl.col("p_turnaround_increase") * 100).alias("v")
MAXTURN = (pl.col("p_max_turnaround_increase") * 100).alias("v")
TRESPASS = (pl.col("p_trespass").cast(pl.Float64) * 100).alias("v")
BREAK = (pl.col("p_max_instantaneous_break").clip(lower_bound=0.0) * 100).alias("v")
ABOVE = (pl.col("p_time_above_cap_share") * 100).alias("v")
INWIN = (pl.col("p_share_started_in_window") * 100).alias("v")
CLOSE = ((1.0 - pl.col("p_power_utilisation")).abs() * 100).alias("v")


def num(value: Any) -> float:
    """A polars scalar (a mean, a median, a max of a numeric column) as a float, for the type checker."""
    return float(value)


def group_mean(frame: pl.DataFrame, expr: pl.Expr, *, stat: str = "mean") -> Spread:
    """Per seed, the mean over (window, cap) groups of the group mean of ``expr``; a spread over seeds.
    ``stat="median"`` takes the median over instances instead (C000-10's second number)."""
    if frame.is_empty():
        raise ValueError("no instance to aggregate")
    if stat == "median":
        per_seed = frame.group_by("seed").agg(expr.median()).sort("seed")
    else:
        # groups in key order, so that the mean over them sums in the same order in every run (polars gives groups
        # in any order: a +0.0 / -0.0 pp sign in the sensitivity table changed from run to run)
        groups = frame.group_by("seed", "workload", "cap").agg(expr.mean()).sort("seed", "workload", "cap")
        per_seed = groups.group_by("seed", maintain_order=True).agg(pl.col("v").mean())
    return Spread.of(per_seed["v"].to_list(), over="seeds")


def _pct(s: Spread) -> str:
    return f"{s.mean:.1f}%"


class Claims:
    """The claims' computations over one results table (estimator and policy experiments)."""

    def __init__(self, results: pl.DataFrame, policies: list[str], predictions: pl.DataFrame | None = None) -> None:
        self.policies = policies  # the policies campaign's, in the paper's order
        runs = results.filter(pl.col("kind") == "run")
        self.est = runs.filter(pl.col("experiment") == "estimators")
        self.pol = runs.filter(pl.col("experiment") == "policies")
        self.base = results.filter((pl.col("kind") == "baseline") & (pl.col("experiment") == "estimators"))
        self.predictions = predictions

    def binding(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` with ``binds``: whether the window's uncapped EASY baseline ran above the run's cap on average
        in the 3-h window (where it did not, no check can fill the cap: the workload is the limit)."""
        dyn = load_platform("marconi100").dynamic_range
        base = self.base.select("workload", (pl.col("p_window_mean_dynamic_w") / dyn).alias("uncapped"))
        return frame.join(base, on="workload", how="left").with_columns(
            (pl.col("uncapped") > pl.col("cap")).alias("binds")
        )

    def check(self, check: str, source: str | None = None) -> pl.DataFrame:
        f = self.est.filter(pl.col("check") == check)
        return f if source is None else f.filter(pl.col("source") == source)

    def by_check(self, expr: pl.Expr, checks: tuple[str, ...] = tuple(SHORT), **kw: Any) -> dict[str, Spread]:
        return {c: group_mean(self.check(c), expr, **kw) for c in checks if not self.check(c).is_empty()}

    def policy(self, policy: str, source: str = "real") -> pl.DataFrame:
        return self.pol.filter((pl.col("policy") == policy) & (pl.col("source") == source))

    def by_policy(self, expr: pl.Expr, source: str = "real") -> dict[str, Spread]:
        return {p: group_mean(self.policy(p, source), expr) for p in self.policies}


def _chain(values: dict[str, Spread], order: list[str], sep: str, labels: dict[str, str] = SHORT) -> str:
    return f" {sep} ".join(f"{labels.get(k, k)} {_pct(values[k])}" for k in order)


def _descending(values: dict[str, Spread], keys: list[str]) -> bool:
    means = [values[k].mean for k in keys]
    return all(a > b for a, b in itertools.pairwise(means))


def _bias(c: Claims) -> str:
    """The history predictor's error on the campaign's traces: what makes predicted run hotter or cooler."""
    p = c.predictions
    if p is None or p.is_empty():
        return ""
    p = p.filter(pl.col("pred_power_mean").is_not_null() & pl.col("power_mean").is_not_null())
    under = num((p["pred_power_max"] < p["power_max"]).mean()) * 100
    bias = num((p["pred_power_mean"] - p["power_mean"]).mean())
    mae = num((p["pred_power_mean"] - p["power_mean"]).abs().mean())
    return (
        f". The history predictor's mean-power error on these traces: MAE {mae:.0f} W per node, bias "
        f"{bias:+.0f} W; {under:.0f}% of the jobs get a predicted max below their real max"
    )
