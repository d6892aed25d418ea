"""Paper 004's reproduction: what drives the ranking of Traditional, Naive and Adaptive in our runs.

The measured quantities behind the claims that differ (:func:`mechanism`) and the notes built from them
(:func:`explain`): how many jobs Adaptive starts through power-aware backfilling and the best fallback it was
offered, the waits and slowdowns each policy trades, the Cab data against the paper's published measurements, and
two sensitivity runs (sparser arrivals; traces of the non-scalable apps only). Every number comes from the run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from wattsched.studies.rmap.calibration import calibration_table
from wattsched.studies.rmap.experiment import BOUNDS, POLICIES
from wattsched.studies.rmap.machine import DEFAULT_CAB_DATA, PAPER_FIG2, PAPER_TABLE2, RMAP_CAB_APPS, cab_data_set
from wattsched.studies.rmap.results import rmap_run_means

#: Arrival-rate factor of the sensitivity run (mean inter-arrival = factor × mean t_req; the default is 1).
SPARSE_ARRIVALS = 5.0
T, N, A0, A10, A20, A30, AU = POLICIES

#: The paper's Table 2 (SP-MZ class C), config → (nodes, cores, cap W, power W, time s): the worked example's input.
TABLE2 = PAPER_TABLE2


def wide(jobs: pl.DataFrame) -> pl.DataFrame:
    """Mean turnaround per (sample, trace, bound), one column per policy (default data)."""
    means = rmap_run_means(jobs).filter(pl.col("default_data"))
    return means.pivot(on="policy", index=["sample", "trace", "bound"], values="tt").sort("sample", "trace", "bound")


def gain(frame: pl.DataFrame, a: str, b: str) -> pl.Expr:
    """Improvement (%) of policy ``a`` over ``b`` in a :func:`wide` ``frame``: 100 · (1 − TT_a / TT_b)."""
    return 100.0 * (1.0 - pl.col(a) / pl.col(b))


def mechanism(jobs: pl.DataFrame, sparse: pl.DataFrame, mix: pl.DataFrame) -> dict[str, Any]:
    """Measured quantities behind the ranking of Adaptive-0, Naive and unbounded Adaptive (large trace)."""
    large = jobs.filter((pl.col("trace") == "large") & pl.col("default_data"))

    def of(pol: str) -> pl.DataFrame:
        return large.filter(pl.col("policy") == pol)

    out: dict[str, Any] = {
        "fallback_a0": 100.0 * float((of(A0)["started_by"] == "power-aware").mean()),
        "fallback_a20": 100.0 * float((of(A20)["started_by"] == "power-aware").mean()),
        "fallback_au": 100.0 * float((of(AU)["started_by"] == "power-aware").mean()),
        "wait_a0": float(of(A0)["wait"].mean()),
        "wait_au": float(of(AU)["wait"].mean()),
        "wait_n": float(of(N)["wait"].mean()),
        "slow_a0": float((of(A0)["runtime"] / of(A0)["t_req"]).mean()),
        "slow_au": float((of(AU)["runtime"] / of(AU)["t_req"]).mean()),
        "over2_au": 100.0 * float((of(AU)["runtime"] > 2.0 * of(AU)["t_req"]).mean()),
        "share_wait_a0": 100.0 * float(of(A0)["wait"].sum() / of(A0)["turnaround"].sum()),
    }
    # what Adaptive-0's power-aware backfilling offered the jobs that waited (planned time / t_req)
    waited = of(A0).filter(pl.col("wait") > 0)
    offer, any_nodes = waited["fallback_offer"].to_numpy(), waited["fallback_offer_any_nodes"].to_numpy()
    out |= {
        "waited_a0": float(waited.height / max(of(A0).height, 1) * 100.0),
        "offer_none": 100.0 * float(np.mean(np.isinf(offer))),
        "offer_median": float(np.median(offer[np.isfinite(offer)])) if np.isfinite(offer).any() else math.inf,
        "offer_any_median": float(np.median(any_nodes[np.isfinite(any_nodes)]))
        if np.isfinite(any_nodes).any()
        else math.inf,
        "offer_le_1": 100.0 * float(np.mean(offer <= 1.0)),
        "offer_le_13": 100.0 * float(np.mean(offer <= 1.3)),
        # the paper's premise (§3.3): the fastest configuration within the fair share beats t_req
        "naive_meets_treq": 100.0 * float((of(N)["planned_time"] <= of(N)["t_req"]).mean()),
        "naive_meets_treq_low": 100.0
        * float(
            of(N)
            .filter(pl.col("bound") == min(BOUNDS))
            .select((pl.col("planned_time") <= pl.col("t_req")).mean())
            .item()
        ),
    }
    # waits and runs per trace and policy (default data), for the per-claim explanations
    every_default = jobs.filter(pl.col("default_data"))
    for trace in ("large", "small"):
        for pol, key in ((T, "t"), (A0, "a0"), (A10, "a10")):
            sub = every_default.filter((pl.col("trace") == trace) & (pl.col("policy") == pol))
            out[f"{trace}_wait_{key}"] = float(sub["wait"].mean())
            out[f"{trace}_run_{key}"] = float(sub["runtime"].mean())
    # Naive against Traditional over all traces: waits, runs and nodes per requested node
    every = jobs.filter(pl.col("default_data"))
    for pol, key in ((N, "n"), (T, "t")):
        sub = every.filter(pl.col("policy") == pol)
        out[f"all_wait_{key}"] = float(sub["wait"].mean())
        out[f"all_run_{key}"] = float(sub["runtime"].mean())
        out[f"nodes_high_{key}"] = float(
            sub.filter(pl.col("bound") == max(BOUNDS)).select((pl.col("nodes") / pl.col("n_req")).mean()).item()
        )
    mw = wide(mix)
    for traces, key in ((("large",), "large"), (("random1", "random2"), "random")):
        sub = mw.filter(pl.col("trace").is_in(traces))
        out[f"mix_{key}_a0_vs_n"] = float(sub.select(gain(sub, A0, N).mean()).item())
        out[f"mix_{key}_a0_vs_t"] = float(sub.select(gain(sub, A0, T).mean()).item())
        out[f"mix_{key}_a0_vs_au"] = float(sub.select(gain(sub, A0, AU).mean()).item())
    mix_a0 = mix.filter((pl.col("trace") == "large") & (pl.col("policy") == A0))
    out["mix_fallback_a0"] = 100.0 * float((mix_a0["started_by"] == "power-aware").mean())
    sw = wide(sparse)
    out["sparse_a0_vs_au"] = float(sw.select(gain(sw, A0, AU).mean()).item())
    out["sparse_wait_a0"] = float(sparse.filter(pl.col("policy") == A0)["wait"].mean())
    # the Cab data's SP-MZ (class D, the one in the traces) at the paper's Table 2 configurations (class C)
    apps, socket = cab_data_set(DEFAULT_CAB_DATA)
    app = next(a for a in apps if a.name == "sp-mz")
    cfg = [TABLE2[c] for c in ("C1", "C2", "C3")]
    ev = app.evaluate(*(np.array([c[i] for c in cfg]) for i in range(3)), socket=socket)
    out |= {
        "ours_t3": 100.0 * (ev["time"][2] / ev["time"][0] - 1.0),
        "ours_p3": 100.0 * (ev["power"][2] / ev["power"][0] - 1.0),
        "paper_t3": 100.0 * (cfg[2][4] / cfg[0][4] - 1.0),
        "paper_p3": 100.0 * (cfg[2][3] / cfg[0][3] - 1.0),
        "ours_w1": float(ev["power"][0] / (2 * cfg[0][0])),
        "paper_w1": cfg[0][3] / (2 * cfg[0][0]),
    }
    # the Cab data against every number the paper publishes about its measurements
    table = calibration_table(DEFAULT_CAB_DATA)
    fig2 = table.filter(pl.col("target").str.starts_with("Fig. 2"))
    table2 = table.filter(pl.col("target").str.starts_with("Table 2"))
    out |= {
        "cal_agree": float(table["agrees"].sum()),
        "cal_total": float(table.height),
        "fig2_mean": float(fig2.filter(pl.col("target").str.contains("mean"))["ours"][0]),
        "fig2_min": float(fig2.filter(pl.col("target").str.contains("lowest"))["ours"][0]),
        "fig2_max": float(fig2.filter(pl.col("target").str.contains("highest"))["ours"][0]),
        "table2_dev": 100.0 * float((table2["ours"] / table2["paper"] - 1.0).abs().max()),
    }
    misses = table.filter(~pl.col("agrees"))
    out["cal_misses"] = "; ".join(  # type: ignore[assignment]
        f"{r['target']} {r['ours']:.1f} {r['unit']} (paper {r['paper_text']})" for r in misses.iter_rows(named=True)
    )
    return out


def explain(m: dict[str, Any]) -> dict[str, str]:
    """The measured explanations shared by the claims that differ."""
    table2 = (
        f"The Cab data ({DEFAULT_CAB_DATA}) agree with {m['cal_agree']:.0f} of the {m['cal_total']:.0f} numbers the "
        f"paper publishes about its measurements: at 64 nodes × 16 cores uncapped the apps draw {m['fig2_mean']:.1f} W "
        f"per socket on average ({m['fig2_min']:.1f}–{m['fig2_max']:.1f}; Fig. 2: {PAPER_FIG2['mean']:.1f} W, "
        f"{PAPER_FIG2['nsc']:.1f}–{PAPER_FIG2['sp-mz']:.1f}), and Table 2's SP-MZ class C runs are met within "
        f"{m['table2_dev']:.1f}%; they miss {m['cal_misses'] or 'none'}. The traces' SP-MZ is class D, which draws "
        f"{m['ours_w1']:.0f} W per socket at C1 (class C: {m['paper_w1']:.0f} W) and trades C3 against C1 at "
        f"{m['ours_t3']:+.1f}% time for {m['ours_p3']:+.1f}% power (class C, Table 2: {m['paper_t3']:+.1f}% for "
        f"{m['paper_p3']:+.1f}%). What the paper does not publish (the apps' times against nodes, cores and caps "
        f"away from those points, and its traces) is synthetic"
    )
    fallback = (
        f"On the large trace Adaptive-0 starts only {m['fallback_a0']:.1f}% of its jobs through power-aware "
        f"backfilling (Adaptive-20 {m['fallback_a20']:.1f}%, unbounded {m['fallback_au']:.1f}%): a configuration "
        f"within the leftover power and the free nodes is rarely as fast as t_req (the packed time). Of the "
        f"{m['waited_a0']:.0f}% of its jobs that waited, {m['offer_none']:.0f}% were never offered any "
        f"configuration that fits, and the others' best offer was a median {m['offer_median']:.2f}× t_req "
        f"({m['offer_any_median']:.2f}× had the free nodes not bounded it, [AMBIG-4.3]); {m['offer_le_1']:.0f}% were "
        f"offered ≤ 1× and {m['offer_le_13']:.0f}% ≤ 1.3×. So Adaptive-0 behaves like Naive and waits "
        f"{m['wait_a0']:.0f} s on average (Naive {m['wait_n']:.0f} s; waits are {m['share_wait_a0']:.0f}% of its "
        f"turnaround). The paper's premise that the fair-share configuration 'will exceed the user's performance "
        f"expectations in most cases' (§3.3) holds for {m['naive_meets_treq']:.0f}% of Naive's large-trace jobs, "
        f"{m['naive_meets_treq_low']:.0f}% at {min(BOUNDS):,.0f} W"
    )
    naive = (
        f"Over all traces Naive waits {m['all_wait_n']:.0f} s on average (Traditional {m['all_wait_t']:.0f} s) and "
        f"runs {m['all_run_n']:.0f} s (Traditional {m['all_run_t']:.0f} s); at the highest bound it moulds jobs onto "
        f"{m['nodes_high_n']:.2f}× their requested nodes (Traditional {m['nodes_high_t']:.2f}×), the paper's "
        f"mechanism, but in our data those node-hungry configurations do not lengthen the queue enough to "
        f"make Naive worse overall"
    )
    unbounded = (
        f"Unbounded Adaptive starts at once and cuts the mean wait to {m['wait_au']:.0f} s, while its runs take "
        f"{m['slow_au']:.2f}× t_req on average (Adaptive-0 {m['slow_a0']:.2f}×; {m['over2_au']:.1f}% of its runs "
        f"exceed 2× t_req), so the saved waits outweigh the slowdowns. With arrivals {SPARSE_ARRIVALS:g}× sparser "
        f"(mean Adaptive-0 wait {m['sparse_wait_a0']:.0f} s) Adaptive-0 is {m['sparse_a0_vs_au']:+.1f}% against "
        f"unbounded, and with traces of the non-scalable apps only {m['mix_large_a0_vs_au']:+.1f}%: the ranking "
        f"follows how much queue wait there is to trade"
    )
    flat = ", ".join(a.name for a in RMAP_CAB_APPS if not a.scalable)
    mixed = (
        f"With traces of the non-scalable apps only ({flat}: fewer nodes and less power cost them little), "
        f"Adaptive-0 starts {m['mix_fallback_a0']:.0f}% of the large-trace jobs through power-aware backfilling and "
        f"beats Naive by {m['mix_large_a0_vs_n']:.1f}% and Traditional by {m['mix_large_a0_vs_t']:.1f}% on the large "
        f"trace ({m['mix_random_a0_vs_n']:.1f}% and {m['mix_random_a0_vs_t']:.1f}% on the random traces): the gap to "
        f"Naive follows how cheaply the data trade power for time"
    )
    return {"table2": table2, "fallback": fallback, "unbounded": unbounded, "naive": naive, "mix": mixed}
