"""Paper 000's §6.6 claims (C000-18…24: the four policies at cap 0.5 with gaussian99) and the setup check of the
campaign's size (C000-28), computed from the results table through :mod:`wattsched.reproduce.paper000_metrics`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from wattsched.reproduce.claims import (
    ClaimResult,
    Spread,
    check_number,
    check_order,
    check_parts,
    check_setup,
    claim,
)
from wattsched.reproduce.paper000_metrics import (
    ABOVE,
    CLOSE,
    INWIN,
    MAXTURN,
    TRESPASS,
    TURN,
    Claims,
    _chain,
    _pct,
    group_mean,
)


def above_bound(claim_id: str, values: dict[str, Spread], *, explain: str = "") -> ClaimResult:
    """The numbers part of a claim the paper states as a bound ("more than 30%"): holds when every value's
    pooled mean lies above its catalogue ``target`` (the bound, read from the catalogue, never typed here). A
    ``check_order``-style part carrying the measured values, since ``check_number`` judges a band around a
    value, not a bound."""
    c = claim(claim_id)
    if len(values) != len(c.target):
        raise ValueError(f"{claim_id}: {len(c.target)} values expected, got {len(values)}")
    below = [
        f"{label} {s.mean:.1f}{c.unit} ≤ {bound:g}{c.unit}"
        for (label, s), bound in zip(values.items(), c.target, strict=True)
        if not s.mean > bound
    ]
    ours = "; ".join(f"{label} {s.text(c.unit)}" for label, s in values.items())
    bounds = " / ".join(f"{b:g}" for b in c.target)
    return check_order(
        claim_id,
        not below,
        ours,
        note=f"each above the paper's bound ({bounds}{c.unit})",
        explain="not above the bound: " + "; ".join(below) + (f"; {explain}" if explain else ""),
        spreads=values,
    )


def _closer(policy: Spread, fcfs: Spread) -> int:
    """On how many seeds ``policy`` runs closer to the cap than FCFS (both spreads over the same seeds)."""
    return sum(a < b for a, b in zip(policy.values, fcfs.values, strict=True))


def _inwin_explain(c: Claims) -> str:
    base = group_mean(c.base.with_columns(pl.lit(0.5).alias("cap")), INWIN)
    return (
        f"the uncapped EASY baseline itself starts {base.text('%')} of the window's jobs in the first 3 h: the "
        "share is set by how many jobs arrive or wait in the first 3 h of our windows, which the cap then "
        "lowers"
    )


def policy_claims(c: Claims) -> list[ClaimResult]:
    """C000-18…24: the policies campaign (§6.6, cap 0.5, gaussian99; real values unless the claim says)."""
    lab = {"easy-pc": "FCFS", "easy-saf-pc": "SAF", "knapsack-wait": "Wait", "knapsack-stretch": "Stretch"}
    others = ["easy-saf-pc", "knapsack-wait", "knapsack-stretch"]
    order = ["easy-pc", *others]
    inwin, close = c.by_policy(INWIN), c.by_policy(CLOSE)
    turn, maxturn = c.by_policy(TURN), c.by_policy(MAXTURN)
    out = [
        check_number(
            "C000-18",
            inwin["easy-pc"],
            note="jobs started by the policy before the window's end over "
            "all jobs of the window's workload; real values",
            explain=_inwin_explain(c),
        )
    ]
    ok = all(inwin[p].mean > inwin["easy-pc"].mean for p in others)
    out.append(
        check_parts(
            "C000-19",
            order=check_order(
                "C000-19",
                ok,
                "started in the window " + _chain(inwin, order, "vs", lab),
                explain="a policy does not start more jobs in the window than EASY FCFS",
            ),
            numbers=above_bound("C000-19", {lab[p]: inwin[p] for p in others}, explain=_inwin_explain(c)),
        )
    )
    ok = all(close[p].mean < close["easy-pc"].mean for p in others)
    out.append(
        check_order(
            "C000-20",
            ok,
            "|1 − U| " + _chain(close, order, "vs", lab),
            note="distance of the mean power in the window from the cap, real values",
            explain="per seed: "
            + "; ".join(f"{lab[p]} " + ", ".join(f"{v:.1f}" for v in close[p].values) for p in order)
            + "%; "
            + "; ".join(
                f"{lab[p]} closer than FCFS on {_closer(close[p], close['easy-pc'])} of {close[p].n} seed(s)"
                for p in others
                if not close[p].mean < close["easy-pc"].mean
            ),
        )
    )
    knaps = ["knapsack-wait", "knapsack-stretch"]
    above_r, above_p = c.by_policy(ABOVE, "real"), c.by_policy(ABOVE, "predicted")
    tres_r, tres_p = c.by_policy(TRESPASS, "real"), c.by_policy(TRESPASS, "predicted")
    ok = all(above_p[k].mean > above_r[k].mean for k in knaps)
    text = "; ".join(
        f"{lab[k]}: time above the cap predicted {_pct(above_p[k])} vs real {_pct(above_r[k])}, "
        f"trespassing instances {_pct(tres_p[k])} vs {_pct(tres_r[k])}"
        for k in knaps
    )
    out.append(
        check_order(
            "C000-21",
            ok,
            text,
            note="violation = share of the window above the cap",
            explain="the predicted values do not make the knapsacks violate the cap more often",
        )
    )
    worst = max(turn, key=lambda k: turn[k].mean)
    best = min(turn, key=lambda k: turn[k].mean)
    out.append(
        check_order(
            "C000-22",
            worst == "easy-pc" and best == "easy-saf-pc",
            "turnaround increase " + _chain(turn, order, "vs", lab),
            explain=f"worst {lab[worst]}, best {lab[best]}",
        )
    )
    largest = max(maxturn, key=lambda k: maxturn[k].mean)
    out.append(
        check_order(
            "C000-23",
            largest == "easy-saf-pc",
            "max-turnaround increase " + _chain(maxturn, order, "vs", lab),
            explain=f"the largest is {lab[largest]}'s",
        )
    )
    out.append(
        check_order(
            "C000-24",
            turn["knapsack-stretch"].mean < turn["knapsack-wait"].mean,
            f"turnaround increase Stretch {_pct(turn['knapsack-stretch'])} vs Wait {_pct(turn['knapsack-wait'])}",
            explain="Wait's turnaround is not above Stretch's",
        )
    )
    return out


def size_claim(
    results: pl.DataFrame, specs: dict[str, Any], full_specs: dict[str, Any], grid_size: Callable[[Any], dict[str, int]]
) -> ClaimResult:
    """C000-28: the full setting's grid (computed from its spec) and what this run ran."""
    full = grid_size(full_specs["estimators"])
    this = grid_size(specs["estimators"])
    est = results.filter(pl.col("experiment") == "estimators")
    ran = (
        est.group_by("seed")
        .agg((pl.col("kind") == "run").sum().alias("runs"), (pl.col("kind") == "baseline").sum().alias("baselines"))
        .sort("seed")
    )
    g = full_specs["estimators"].grid
    estimators = sum(1 if ch == "naive" else len(g.sources) for ch in g.checks)
    windows = full_specs["estimators"].workloads[0].windows.count
    ours = (
        f"full setting: {windows} × {len(g.caps)} × {estimators} = {full['instances']:,} instances + "
        f"{full['baselines']} baselines per seed (from its spec); this run: {this['instances']:,} + "
        f"{this['baselines']} per seed planned, ran " + ", ".join(f"seed {s}: {r:,} + {b}" for s, r, b in ran.rows())
    )
    ok = full["instances"] == 1320 and full["baselines"] == 30
    return check_setup(
        "C000-28",
        ok,
        ours,
        note="" if ok else "the full spec's grid is not the paper's",
        value=float(full["instances"]),
    )
