"""Paper 000's claims C000-01…28, computed from the results table of :mod:`wattsched.reproduce.paper000`: the
§6.5 estimator claims here, the §6.6 policy claims and the setup check in :mod:`.paper000_policies`, the predictor
claims in :mod:`.paper000_predictors`, all through the metric layer :mod:`.paper000_metrics` (the paper's
aggregation, spreads over seeds).

:func:`compute_claims` computes every claim twice over, as the seed rule of ``reproduce/claims.py`` needs: on all
seeds pooled, and on each seed's rows alone (``PaperRun.per_seed``). Claims about instances ("never trespasses")
count every instance of the rows given. Where the paper gives an order *and* its numbers (C000-08, 12, 14, 19),
both are judged apart (``check_parts``). "Predicted close to real" (C000-17) holds when, for mean and each Gaussian
check, predicted's under-utilisation and turnaround increase lie within :data:`CLOSE_ABS` pp or :data:`CLOSE_REL`
of real's (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wattsched.campaign.spec import workload_variants
from wattsched.core.store import CampaignLayout
from wattsched.reproduce.claims import ClaimResult, check_number, check_order, check_parts
from wattsched.reproduce.paper000_metrics import (
    ABOVE,
    BREAK,
    GAUSSIANS,
    OVER,
    SHORT,
    TRESPASS,
    TURN,
    UNDER,
    Claims,
    _bias,
    _chain,
    _descending,
    group_mean,
    num,
)
from wattsched.reproduce.paper000_policies import policy_claims, size_claim
from wattsched.reproduce.paper000_predictors import _ml_medians, prediction_claims  # noqa: F401 (task path)
from wattsched.reproduce.runner import per_seed_claims

#: Claims left out of the per-seed computation: C000-28 is a setup check (seed-free); C000-25/26 are stand-ins
#: (never judged); C000-27 is judged by the overlap of its values' ranges over the seeds, which one seed has not.
SEED_FREE = ("C000-25", "C000-26", "C000-27", "C000-28")


def estimator_claims(c: Claims) -> list[ClaimResult]:
    """C000-01…17: the estimators campaign (§6.5)."""
    out = []
    under, turn = c.by_check(UNDER), c.by_check(TURN)
    trespass, above = c.by_check(TRESPASS), c.by_check(ABOVE)
    breaks, breaks_median = c.by_check(BREAK), c.by_check(BREAK, stat="median")
    out.append(
        check_number(
            "C000-01",
            under["naive"],
            note="1 − U over the 3-h window, per (window, cap) group then averaged over groups; spread over seeds",
            explain=_naive_explain(c),
        )
    )
    out.append(
        check_number(
            "C000-02",
            turn["naive"],
            note="mean turnaround against uncapped EASY on the same window",
            explain=_turnaround_explain(c, "naive"),
        )
    )
    for cid, source in (("C000-03", "real"), ("C000-04", "predicted")):
        frame = c.check("max", source)
        n_tres = int(frame["p_trespass"].sum())
        peak = num(frame["p_max_instantaneous_break"].max()) * 100 + 100
        ours = (
            f"{n_tres} of {frame.height} instances trespass (caps {sorted(frame['cap'].unique().to_list())}, "
            f"{frame['seed'].n_unique()} seeds); highest power {peak:.1f}% of the cap"
        )
        out.append(check_order(cid, n_tres == 0, ours, explain=_max_explain(c, source)))
    out.append(check_number("C000-05", under["max"], note="real and predicted max pooled"))
    out.append(
        check_number(
            "C000-06", turn["max"], note="real and predicted max pooled", explain=_turnaround_explain(c, "max")
        )
    )
    over = group_mean(c.check("mean"), OVER)
    no07 = group_mean(c.check("mean").filter(pl.col("cap") < 0.7), OVER)
    out.append(
        check_number(
            "C000-07",
            over,
            note=f"U − 1 of mean (real and predicted); without cap 0.7: {no07.text('%')} (paper: 3%)",
            explain=_saturation_explain(c),
        )
    )
    lowest = min(turn, key=lambda k: turn[k].mean)
    out.append(
        check_parts(
            "C000-08",
            order=check_order(
                "C000-08",
                lowest == "mean",
                "turnaround increase " + _chain(turn, sorted(turn, key=lambda k: turn[k].mean), "<"),
                note="real and predicted pooled",
                explain=f"{SHORT[lowest]} has the lowest, {turn['mean'].mean - turn[lowest].mean:.2f} pp below "
                f"mean; per seed mean {', '.join(f'{v:.1f}' for v in turn['mean'].values)}% vs {SHORT[lowest]} "
                f"{', '.join(f'{v:.1f}' for v in turn[lowest].values)}%",
            ),
            numbers=check_number("C000-08", turn["mean"], explain=_turnaround_explain(c, "mean")),
        )
    )
    out.append(
        check_number(
            "C000-09",
            trespass["mean"],
            note="share of mean's instances (real and predicted) whose power exceeds the cap in the window",
        )
    )
    out.append(
        check_number(
            "C000-10",
            {"average": breaks["mean"], "median": breaks_median["mean"]},
            note="break = max(0, max P/cap − 1) per instance; average per (window, cap) group then "
            "over groups; median over instances; spread over seeds",
            explain="average per cap "
            + ", ".join(
                f"{cap:g}: {v:.1f}%" for cap, v in c.check("mean").group_by("cap").agg(BREAK.mean()).sort("cap").rows()
            )
            + ": the break grows as the cap falls (a larger share of the window's power rides on estimates)",
        )
    )
    others = ["gaussian68", "gaussian95", "gaussian99", "max"]
    ok = all(trespass["mean"].mean > trespass[k].mean for k in others)
    out.append(
        check_order(
            "C000-11",
            ok,
            "trespassing instances " + _chain(trespass, ["mean", *others], "vs"),
            explain="mean is not above every other check",
        )
    )
    k_order = ["gaussian99", "gaussian95", "gaussian68"]
    out.append(
        check_parts(
            "C000-12",
            order=check_order(
                "C000-12",
                _descending(under, k_order),
                "under-utilisation " + _chain(under, k_order, ">"),
                explain="the Gaussian checks' under-utilisation is not ordered by k",
            ),
            numbers=check_number(
                "C000-12",
                {g: under[g] for g in k_order},
                note="real and predicted pooled",
                explain=_saturation_explain(c, "gaussian99"),
            ),
        )
    )
    out.append(
        check_number(
            "C000-13",
            {g: turn[g] for g in GAUSSIANS},
            note=f"real and predicted pooled; mean: {turn['mean'].text('%')}",
            explain=_turnaround_explain(c, "gaussian99"),
        )
    )
    chain = ["mean", "gaussian68", "gaussian95", "gaussian99"]
    out.append(
        check_parts(
            "C000-14",
            order=check_order(
                "C000-14",
                _descending(breaks, chain),
                "average break " + _chain(breaks, chain, ">") + "; median " + _chain(breaks_median, chain, ">"),
                explain="the breaks are not ordered by the check's margin",
            ),
            numbers=check_number(
                "C000-14",
                {k: breaks[k] for k in reversed(chain)},
                note="average break per (window, cap) group, then over groups; " + _break_explain(c),
            ),
        )
    )
    ok = all(above[g].mean < above["mean"].mean for g in GAUSSIANS) and above["gaussian99"].mean == min(
        above[g].mean for g in GAUSSIANS
    )
    out.append(
        check_order(
            "C000-15",
            ok,
            "time above the cap " + _chain(above, chain, "vs"),
            explain="a Gaussian check is not below mean, or g99 is not the lowest",
        )
    )
    ok = all(under["naive"].mean > under[k].mean for k in under if k != "naive")
    out.append(
        check_order(
            "C000-16",
            ok,
            "under-utilisation " + _chain(under, sorted(under, key=lambda k: -under[k].mean), ">"),
            explain="naive is not the most under-using check",
        )
    )
    out.append(_close_to_real(c))
    return out


#: C000-17's band between predicted and real: max(CLOSE_ABS pp, CLOSE_REL · real). The paper gives no number
#: ("satisfactory"); this is the band the catalogue gives the paper's own "around" numbers of §6.5 (C000-02/05/06/13,
#: basis "wording"), so "close" means the same on both sides of the comparison (docs/decisions.md).
CLOSE_REL = 0.25
CLOSE_ABS = 2.0


def _band(real: float) -> float:
    return max(CLOSE_ABS, CLOSE_REL * abs(real))


def _close_to_real(c: Claims) -> ClaimResult:
    """C000-17: predicted within :data:`CLOSE_ABS` pp or :data:`CLOSE_REL` of real, for U and turnaround, mean and
    the Gaussian checks."""
    parts, misses = [], []
    for check in ("mean", *GAUSSIANS):
        for name, expr in (("under-utilisation", UNDER), ("turnaround", TURN)):
            real = group_mean(c.check(check, "real"), expr).mean
            pred = group_mean(c.check(check, "predicted"), expr).mean
            ok = abs(pred - real) <= _band(real)
            parts.append(f"{SHORT[check]} {name} {pred:.1f}% vs {real:.1f}%")
            if not ok:
                misses.append(
                    f"{SHORT[check]} {name}: predicted {pred:.1f}% vs real {real:.1f}% (band ±{_band(real):.1f} pp)"
                )
    return check_order(
        "C000-17",
        not misses,
        "predicted vs real: " + "; ".join(parts),
        note=f"criterion: |predicted − real| ≤ max({CLOSE_ABS:g} pp, {CLOSE_REL:.0%} of real) for the "
        "under-utilisation and the turnaround increase of mean and each Gaussian check (the band the catalogue "
        'gives the paper\'s "around" numbers)',
        explain="outside the band: " + "; ".join(misses) + _bias(c),
    )


def _saturation_explain(c: Claims, check: str = "mean") -> str:
    """Where the uncapped baseline stays below the cap, no check can use the cap: measured per (window, cap).
    For ``mean`` the value over the binding groups is its U − 1, for a Gaussian check its under-utilisation."""
    frame = c.binding(c.check(check))
    groups = frame.select("seed", "workload", "cap", "binds").unique()
    share = num(groups["binds"].mean()) * 100
    bound = frame.filter(pl.col("binds"))
    if check == "mean":
        inside = f"{group_mean(bound, OVER).mean:+.1f}%" if not bound.is_empty() else "no such group"
        what = "mean's U − 1"
    else:
        checks = [g for g in reversed(GAUSSIANS)]
        inside = (
            " / ".join(f"{group_mean(c.binding(c.check(g)).filter(pl.col('binds')), UNDER).mean:.1f}" for g in checks)
            if not bound.is_empty()
            else "no such group"
        )
        what = "the under-utilisation of " + " / ".join(SHORT[g] for g in checks) + " (%)"
    return (
        f"in {100 - share:.0f}% of the (window, cap) groups the uncapped EASY baseline's own mean power in the "
        f"3-h window is below the cap, so no check can fill it; over the groups where the baseline is above "
        f"the cap, {what} is {inside} (sensitivity table)"
    )


def _break_explain(c: Claims) -> str:
    """The break per cap: it is set by how much of the window's power rides on estimates at the cap."""
    rows = []
    for k in ("gaussian99", "gaussian95", "gaussian68", "mean"):
        per_cap = c.check(k).group_by("cap").agg(BREAK.mean()).sort("cap").rows()
        rows.append(f"{SHORT[k]} " + " / ".join(f"{v:.1f}" for _, v in per_cap))
    caps = " / ".join(f"{cap:g}" for cap in sorted(c.est["cap"].unique().to_list()))
    return f"average break per cap {caps}: " + "; ".join(rows) + " (%; sensitivity table)"


def _naive_explain(c: Claims) -> str:
    u = group_mean(c.check("naive"), UNDER)
    per_cap = c.check("naive").group_by("cap").agg(UNDER.mean()).sort("cap")
    caps = ", ".join(f"cap {cap:g}: {v:.0f}%" for cap, v in per_cap.rows())
    return (
        f"naive reserves 1,860 W per node; its under-utilisation depends on how far below that the jobs run "
        f"and on the backlog at the window start ({caps}; mean {u.mean:.0f}%)"
    )


def _turnaround_explain(c: Claims, check: str) -> str:
    frame = c.check(check)
    med = num(frame["p_turnaround_increase"].median()) * 100
    per_cap = frame.group_by("cap").agg(TURN.mean()).sort("cap")
    caps = ", ".join(f"cap {cap:g}: {v:.1f}%" for cap, v in per_cap.rows())
    return (
        f"per cap {caps}; median over instances {med:.1f}%. The increase is the backlog the check holds back in "
        "the 3 h, so it grows with each window's queue at t = 0 (the requeued jobs), a property of the workload "
        "more than of the check: the sensitivity table measures what moves it (the pre-state, the post-window "
        "cap, the offered load, the window length)"
    )


def _max_explain(c: Claims, source: str) -> str:
    frame = c.check("max", source).filter(pl.col("p_trespass"))
    if frame.is_empty():
        return ""
    worst = num(frame["p_max_instantaneous_break"].max()) * 100
    if source == "predicted":
        return (
            f"{frame.height} instance(s) break the cap, by at most {worst:.1f}%: a check on predicted max is only "
            "as safe as the prediction" + _bias(c) + " (the paper's predictor: median per-user MAE of max 149.3 W; "
            "ours on the stand-in: C000-25)"
        )
    return f"{frame.height} instance(s) break the cap by at most {worst:.1f}%"


@dataclass
class Computed:
    """Every claim pooled and per seed, the report's notes, and the predictor data Figs. 2–3 draw: each job's
    measured and predicted power (``predictions``, with a ``seed`` column) and each user's MAE per method and
    metric (``user_mae``)."""

    claims: list[ClaimResult]
    per_seed: dict[int, list[ClaimResult]]
    notes: list[str]
    predictions: pl.DataFrame | None
    user_mae: pl.DataFrame


def load_predictions(campaign_dir: Path, spec: Any) -> pl.DataFrame | None:
    """The campaign's history predictions of every seed's whole trace, with a ``seed`` column."""
    frames = []
    for _, seed, name in workload_variants(spec):
        path = CampaignLayout(campaign_dir).prediction(name)
        if path.exists():
            frames.append(pl.read_parquet(path).with_columns(pl.lit(seed).alias("seed")))
    return pl.concat(frames, how="diagonal_relaxed") if frames else None


def seed_claims(results: pl.DataFrame, policies: list[str], predictions: pl.DataFrame | None) -> list[ClaimResult]:
    """The claims that depend on the campaigns' runs (C000-01…24), on the rows given."""
    c = Claims(results, policies, predictions)
    return [*estimator_claims(c), *policy_claims(c)]


def compute_claims(
    results: pl.DataFrame,
    ctx: Any,
    setting: Any,
    specs: dict[str, Any],
    full_specs: dict[str, Any],
    grid_size: Callable[[Any], dict[str, int]],
) -> Computed:
    """Every claim of the catalogue, pooled and on each seed alone, and the report's notes."""
    campaign_dir = ctx.out / "campaign-estimators"
    predictions = load_predictions(campaign_dir, specs["estimators"])
    policies = specs["policies"].grid.policies
    predicted, user_mae = prediction_claims(ctx, setting, specs["estimators"], campaign_dir)
    claims = [
        *seed_claims(results, policies, predictions),
        *predicted,
        size_claim(results, specs, full_specs, grid_size),
    ]

    def one_seed(seed: int) -> list[ClaimResult]:
        pred = predictions.filter(pl.col("seed") == seed) if predictions is not None else None
        return seed_claims(results.filter(pl.col("seed") == seed), policies, pred)

    per_seed = per_seed_claims(ctx.seeds, one_seed, skip=SEED_FREE)
    c = Claims(results, policies, predictions)
    windows = c.est.select("seed", "workload").unique().height
    notes = [
        "Aggregation: per seed, each check's value is the mean over (window, cap) groups (the paper's §6.5), real "
        "and predicted pooled unless the claim names a source; the spread is over seeds.",
        f"{windows} windows in all (seeds {', '.join(str(s) for s in ctx.seeds)}); instances per check: "
        + ", ".join(f"{SHORT[k]} {c.check(k).height}" for k in SHORT)
        + ".",
        f"An instance's break is max(0, max P/cap − 1); 'predicted close to real' (C000-17) holds within "
        f"max({CLOSE_ABS:g} pp, {CLOSE_REL:.0%} of real) between predicted and real, the band the catalogue gives "
        'the paper\'s "around" numbers.',
        f"Per seed: every claim but {', '.join(SEED_FREE)} is also computed on each seed's rows alone; the verdict "
        "follows the seed rule (holds on the pooled value and on at least two thirds of the seeds).",
    ]
    u = c.est.filter(pl.col("check") == "mean")["p_power_utilisation"].to_numpy()
    notes.append(
        f"mean's power utilisation over instances: median {np.median(u):.2f}, quartiles "
        f"{np.percentile(u, 25):.2f}–{np.percentile(u, 75):.2f} of the cap."
    )
    return Computed(claims, per_seed, notes, predictions, user_mae)
