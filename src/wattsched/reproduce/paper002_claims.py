"""Paper 002's claims C002-01…15, computed from the EAMC grid and its side runs (:mod:`wattsched.reproduce.paper002`
runs them). Every function takes the results tables and returns :class:`~wattsched.reproduce.claims.ClaimResult`
objects, so the same code gives the claims on all seeds pooled and on one seed's rows alone.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import polars as pl

from wattsched.core.scalars import as_float, as_number
from wattsched.reproduce.claims import ClaimResult, Spread, check_number, check_order, check_setup
from wattsched.studies.eamc.energy_model import EAMC_APP_NAMES
from wattsched.studies.eamc.epm import demoted, epm_table, evaluate
from wattsched.studies.eamc.results import improvement

MIXES = ["W13", "W33", "W50"]
T_WEIGHTS = [1.0, 1.5]
PRIO = ["eamc-priorityinc", "eamc-priorityinc-v"]
EAMC = ["eamc-reorder", *PRIO]
#: The reproduction's PriorityInc-V threshold reading (decision register, [AMBIG-2.4]).
THRESHOLD_MODE: Literal["relative", "absolute"] = "absolute"
#: The offered load of the side runs that test the load explanation.
HIGH_LOAD = 1.5
#: Claims that do not depend on the seed (setup checks), not computed per seed.
SEED_FREE = ("C002-11", "C002-15")
#: Paper Table 1, runtime (s) and power (W) at the nominal frequency on p1 / p2 (the paper's values, C002-15).
TABLE1 = {
    "lu.C": ((52.49, 57.45), (386, 367)),
    "ep.D": ((64.20, 74.20), (349, 337)),
    "bt-mz.C": ((43.95, 51.32), (417, 411)),
    "sp-mz.C": ((46.05, 59.76), (460, 427)),
    "lu-mz.C": ((59.21, 61.41), (355, 360)),
    "ua.C": ((46.96, 53.11), (368, 360)),
    "DGEMM": ((47.40, 52.60), (491, 497)),
    "STREAM": ((107.55, 81.43), (381, 365)),
}


# ---------------------------------------------------------------------------------------------------------------
# claims


def _cells(
    imp: pl.DataFrame, metric: str, policies: list[str], mixes: list[str] | None = None, tws: list[float] | None = None
) -> pl.DataFrame:
    """(mix, t_weight, policy) cells of ``imp`` with the per-seed values of ``metric`` and their mean."""
    frame = imp.filter(
        pl.col("policy").is_in(policies)
        & pl.col("mix").is_in(mixes or MIXES)
        & pl.col("t_weight").is_in(tws or T_WEIGHTS)
    )
    return (
        frame.sort("seed")
        .group_by("mix", "t_weight", "policy", maintain_order=True)
        .agg(pl.col(metric).alias("values"), pl.col(metric).mean().alias("mean"))
        .sort("mix", "t_weight", "policy")
    )


def _label(row: dict[str, Any]) -> str:
    return f"{row['policy']} {row['mix']} t_weight {row['t_weight']:g}"


def _extreme(
    imp: pl.DataFrame,
    metric: str,
    policies: list[str],
    mixes: list[str] | None = None,
    tws: list[float] | None = None,
    *,
    largest: bool = True,
) -> tuple[Spread, str]:
    """The cell with the largest (or smallest) mean over seeds, as a spread over seeds, and its name."""
    cells = _cells(imp, metric, policies, mixes, tws)
    row = cells.row(int(np.argmax(cells["mean"]) if largest else np.argmin(cells["mean"])), named=True)
    return Spread.of(row["values"]), _label(row)


def _mean(frame: pl.DataFrame, metric: str, **eq: Any) -> float:
    for k, v in eq.items():
        frame = frame.filter(pl.col(k) == v)
    return as_float(frame[metric].mean())


def claims_from(
    grid: pl.DataFrame, relative: pl.DataFrame, high: pl.DataFrame, platform: Any, appdb: Any
) -> list[ClaimResult]:
    """Every claim of paper 002 from the grid (``grid``), the side runs and the model layer."""
    part_metrics = ("mean_response_p1", "mean_response_p2")
    vs_rt = improvement(grid, "min-runtime", ("makespan", "mean_response", "sum_energy", "sum_runtime", *part_metrics))
    vs_en = improvement(grid, "min-energy")
    vs_base = improvement(grid, "base-slurm")
    out: list[ClaimResult] = []

    # C002-01/02: PriorityInc variants against Min runtime, up to, over every mix and t_weight
    resp, resp_at = _extreme(vs_rt, "mean_response", PRIO)
    mk, mk_at = _extreme(vs_rt, "makespan", PRIO)
    runtime_cost = _cells(vs_rt, "sum_runtime", PRIO)
    out.append(
        check_number(
            "C002-01",
            {"response time": resp, "makespan": mk},
            note=f"maximum over PriorityInc and PriorityInc-V × W13/W33/W50 × t_weight 1, 1.5: response at {resp_at}, "
            f"makespan at {mk_at}",
            explain=_makespan_explain(grid, vs_rt, runtime_cost),
        )
    )
    en, en_at = _extreme(vs_rt, "sum_energy", PRIO)
    out.append(check_number("C002-02", en, note=f"maximum over the PriorityInc variants' cells, at {en_at}"))

    # C002-03: against Min energy
    hi_en = improvement(high, "min-energy")
    r3, r3_at = _extreme(vs_en, "mean_response", PRIO)
    m3, m3_at = _extreme(vs_en, "makespan", PRIO)
    e3, e3_at = _extreme(vs_en, "sum_energy", PRIO)
    out.append(
        check_number(
            "C002-03",
            {"response time": r3, "makespan": m3, "energy": e3},
            note=f"maximum over the PriorityInc variants' cells: response at {r3_at}, makespan at {m3_at}, energy at "
            f"{e3_at}",
            explain=f"at an offered load of {HIGH_LOAD:g} PriorityInc's gains over Min energy are, per mix "
            f"(W13 / W33 / W50): response {_high(hi_en, 'eamc-priorityinc', 'mean_response')}, makespan "
            f"{_high(hi_en, 'eamc-priorityinc', 'makespan')}, energy {_high(hi_en, 'eamc-priorityinc', 'sum_energy')}: "
            f"the time gains depend on the queue the arrivals build (C002-05); energy: "
            + _energy_gap_explain(platform, appdb, grid),
        )
    )

    # C002-04: Min runtime against Base Slurm, W13, t_weight 1
    hi_base = improvement(high, "base-slurm")
    c4 = vs_base.filter((pl.col("policy") == "min-runtime") & (pl.col("mix") == "W13") & (pl.col("t_weight") == 1.0))
    out.append(
        check_number(
            "C002-04",
            explain=f"at an offered load of {HIGH_LOAD:g}, W13: makespan "
            f"{_high(hi_base, 'min-runtime', 'makespan', ['W13'])}, response "
            f"{_high(hi_base, 'min-runtime', 'mean_response', ['W13'])}; Base Slurm queues 7 of 8 apps on p1 alone, "
            f"so its makespan is the drain of p1's backlog, which our workload's arrivals (not ANL's) set",
            ours={
                "makespan": Spread.of(c4.sort("seed")["makespan"]),
                "response time": Spread.of(c4.sort("seed")["mean_response"]),
            },
            note="Min runtime against Base Slurm on W13, t_weight 1",
        )
    )

    # C002-05: PriorityInc against Min runtime, per mix, up to over t_weight
    per_mix = {m: _extreme(vs_rt, "mean_response", ["eamc-priorityinc"], [m]) for m in MIXES}
    vs_rt_high = improvement(high, "min-runtime")
    hi5 = {m: _mean(vs_rt_high.filter(pl.col("policy") == "eamc-priorityinc"), "mean_response", mix=m) for m in MIXES}
    out.append(
        check_number(
            "C002-05",
            {m: s for m, (s, _) in per_mix.items()},
            note="PriorityInc, maximum over t_weight 1 and 1.5 per mix",
            explain=f"PriorityInc's response is below Min runtime's in {_wins(vs_rt, 'eamc-priorityinc')} cells, "
            f"but the size of the gain is not stable: per seed it ranges {_range(vs_rt, 'eamc-priorityinc')} pp, "
            f"and at an offered load of {HIGH_LOAD:g} (t_weight 1) it is "
            + " / ".join(f"{hi5[m]:+.1f}%" for m in MIXES)
            + " (W13 / W33 / W50): it depends on the queue the arrivals build, and the paper's ANL arrival pattern "
            "(Cirne model) is not public",
        )
    )

    # C002-06: per partition, PriorityInc-V at t_weight 1.5, up to over the mixes
    vs_rt_high_p = improvement(high, "min-runtime", part_metrics)
    p2, p2_at = _extreme(vs_rt, "mean_response_p2", ["eamc-priorityinc-v"], tws=[1.5])
    p1_cells = _cells(vs_rt, "mean_response_p1", ["eamc-priorityinc-v"], tws=[1.5])
    p1_row = p1_cells.row(int(np.argmin(p1_cells["mean"])), named=True)
    p1 = Spread.of([-v for v in p1_row["values"]])
    out.append(
        check_number(
            "C002-06",
            {"p2 improvement": p2, "p1 worsening": p1},
            note=f"PriorityInc-V, t_weight 1.5, against Min runtime, over W13/W33/W50: p2 at {p2_at}, p1 at "
            f"{_label(p1_row)} (p1 worsening = −improvement)",
            explain=f"PriorityInc-V runs p1 at {_freq(grid, 'eamc-priorityinc-v', 'p1')} GHz against Min runtime's "
            f"{_freq(grid, 'min-runtime', 'p1')} GHz; at an offered load of {HIGH_LOAD:g} PriorityInc (t_weight 1) "
            f"changes p2's response by {_high(vs_rt_high_p, 'eamc-priorityinc', 'mean_response_p2')} and p1's by "
            f"{_high(vs_rt_high_p, 'eamc-priorityinc', 'mean_response_p1')} (W13 / W33 / W50, improvement): the "
            f"per-partition response, like the overall one (C002-05), moves with the queue the arrivals build",
        )
    )

    # C002-07: Reorder's response against the PriorityInc variants, every cell
    resp_cells = _cells(grid.rename({"mean_response": "r"}), "r", EAMC)
    worse = []
    for (mix, tw), g in resp_cells.group_by("mix", "t_weight", maintain_order=True):
        r = {row["policy"]: row["mean"] for row in g.iter_rows(named=True)}
        worse.append((mix, tw, r["eamc-reorder"] > max(r[p] for p in PRIO), r))
    n_worse = sum(w for _, _, w, _ in worse)
    detail = "; ".join(
        f"{m} tw {tw:g}: Reorder {r['eamc-reorder'] / 3600:.2f} h vs PriorityInc "
        f"{r['eamc-priorityinc'] / 3600:.2f} / -V {r['eamc-priorityinc-v'] / 3600:.2f} h"
        for m, tw, _, r in worse
    )
    out.append(
        check_order(
            "C002-07",
            n_worse == len(worse),
            f"Reorder worse in {n_worse} of {len(worse)} cells (mean response over seeds): {detail}",
            explain="Reorder is worse than the PriorityInc variants in only some cells",
        )
    )

    # C002-08: makespan gains against Min runtime, smallest and largest over the PriorityInc variants' cells
    lo, lo_at = _extreme(vs_rt, "makespan", PRIO, largest=False)
    hi, hi_at = _extreme(vs_rt, "makespan", PRIO)
    out.append(
        check_number(
            "C002-08",
            {"smallest": lo, "largest": hi},
            note=f"PriorityInc variants' cells: smallest at {lo_at}, largest at {hi_at}",
            explain=_makespan_explain(grid, vs_rt, runtime_cost),
        )
    )

    # C002-09: Min energy against Min runtime, W33 and W50, up to
    hi_me = (
        improvement(high, "min-runtime")
        .filter(pl.col("policy") == "min-energy")
        .with_columns(-pl.col("mean_response"), -pl.col("makespan"))
    )
    w13 = vs_rt.filter((pl.col("policy") == "min-energy") & (pl.col("mix") == "W13"))
    me = vs_rt.filter(pl.col("policy") == "min-energy").with_columns(-pl.col("mean_response"), -pl.col("makespan"))
    r9, r9_at = _extreme(me, "mean_response", ["min-energy"], ["W33", "W50"])
    m9, m9_at = _extreme(me, "makespan", ["min-energy"], ["W33", "W50"])
    out.append(
        check_number(
            "C002-09",
            {"response time": r9, "makespan": m9},
            note=f"increase over Min runtime, maximum over W33 and W50 (as the paper; W13 is given "
            f"apart): response at {r9_at}, makespan at {m9_at}; on W13 (paper: 93%) the response increase is "
            f"{-as_number(w13['mean_response'].mean()):.1f}%",
            explain=f"the increase depends on the queue: at an offered load of {HIGH_LOAD:g} it is, per mix "
            f"(W13 / W33 / W50), response {_high(hi_me, 'min-energy', 'mean_response')}, makespan "
            f"{_high(hi_me, 'min-energy', 'makespan')}",
        )
    )

    # C002-10: Min runtime's energy above Min energy's
    e10 = {}
    for m in ("W33", "W50"):
        rt = grid.filter((pl.col("policy") == "min-runtime") & (pl.col("mix") == m) & (pl.col("t_weight") == 1.0))
        en_ = grid.filter((pl.col("policy") == "min-energy") & (pl.col("mix") == m) & (pl.col("t_weight") == 1.0))
        e10[m] = Spread.of(100 * (rt.sort("seed")["sum_energy"] / en_.sort("seed")["sum_energy"] - 1))
    out.append(
        check_number(
            "C002-10",
            e10,
            note="(E(Min runtime) / E(Min energy) − 1) per seed",
            explain=_energy_gap_explain(platform, appdb, grid),
        )
    )

    # C002-11: EAMC energy against Min energy / Min runtime, up to over every EAMC cell
    # a setup check, not a result: the paper's summary of C002-02/03's own cells, judged on the same cells
    e11a, a_at = _extreme(vs_en, "sum_energy", EAMC)
    e11b, b_at = _extreme(vs_rt, "sum_energy", EAMC)
    c11 = check_number(
        "C002-11",
        {"over Min energy": e11a, "over Min runtime": e11b},
        note=f"maximum over Reorder, PriorityInc, PriorityInc-V × mixes × t_weight: at {a_at} and {b_at}; the "
        "cells of C002-02 and C002-03 again, so a check of their summary, not a result of its own",
        explain=_energy_gap_explain(platform, appdb, grid),
    )
    out.append(check_setup("C002-11", c11.verdict == "holds", c11.ours_text, note=c11.note, value=c11.value))

    out.append(_claim_12(grid, relative, platform, appdb))
    out.append(_claim_13(grid))

    # C002-14: W50, Base Slurm against Min runtime
    b = vs_rt.filter((pl.col("policy") == "base-slurm") & (pl.col("mix") == "W50") & (pl.col("t_weight") == 1.0))
    hb = vs_rt_high.filter((pl.col("policy") == "base-slurm") & (pl.col("mix") == "W50"))
    out.append(
        check_number(
            "C002-14",
            {
                "response time": Spread.of(b.sort("seed")["mean_response"]),
                "energy": Spread.of(b.sort("seed")["sum_energy"]),
            },
            note="W50, t_weight 1 (Base Slurm and Min runtime do not use t_weight)",
            explain=f"Base Slurm's response gain over Min runtime on W50 ranges "
            f"{_range(vs_rt, 'base-slurm', ['W50'], [1.0])} pp between seeds, and is "
            f"{as_number(hb['mean_response'].mean()):+.1f}% at an offered load of {HIGH_LOAD:g} (energy "
            f"{as_number(hb['sum_energy'].mean()):+.1f}%, makespan {as_number(hb['makespan'].mean()):+.1f}%): "
            "with the two partitions "
            f"equally demanded, which policy wins on response is decided by the arrival pattern, which is not public "
            f'(the paper: "Base Slurm could not adapt to changes in the load"); the energy gap is bounded by the '
            f"model (C002-10)",
        )
    )
    out.append(_claim_15(platform, appdb))
    return out


def _high(imp: pl.DataFrame, policy: str, metric: str, mixes: list[str] | None = None) -> str:
    """A policy's mean improvement (%) per mix in a side run's improvement table, as "a / b / c"."""
    vals = [imp.filter((pl.col("policy") == policy) & (pl.col("mix") == m))[metric].mean() for m in mixes or MIXES]
    return " / ".join(f"{as_number(v):+.1f}%" for v in vals)


def _range(
    imp: pl.DataFrame,
    policy: str,
    mixes: list[str] | None = None,
    tws: list[float] | None = None,
    metric: str = "mean_response",
) -> str:
    """The per-seed range of a policy's improvement over the given cells, "a to b"."""
    vals = _cells(imp, metric, [policy], mixes, tws)["values"].explode()
    return f"{as_number(vals.min()):+.1f} to {as_number(vals.max()):+.1f}"


def _wins(imp: pl.DataFrame, policy: str, metric: str = "mean_response") -> str:
    """In how many (mix, t_weight) cells the policy's mean improvement is positive, "k of n"."""
    cells = _cells(imp, metric, [policy])
    return f"{int((cells['mean'] > 0).sum())} of {cells.height}"


def _freq(grid: pl.DataFrame, policy: str, partition: str) -> str:
    return f"{as_number(grid.filter(pl.col('policy') == policy)[f'mean_frequency_{partition}'].mean()):.2f}"


def _energy_gap_explain(platform: Any, appdb: Any, grid: pl.DataFrame) -> str:
    """The model's bound on DVFS energy savings: per app and partition, E at Min runtime's frequency over E at Min
    energy's, and the mean frequencies the policies ran at."""
    apps = appdb.apps()
    e_rt = evaluate(platform, appdb, apps, rule="min_time").energy
    e_en = evaluate(platform, appdb, apps, rule="min_energy").energy
    ratio = 100 * (e_rt / e_en - 1)
    freq = {
        p: as_number(grid.filter(pl.col("policy") == p)["mean_frequency"].mean())
        for p in ("min-runtime", "min-energy", "eamc-priorityinc")
    }
    return (
        f"on the public EAR model, running an app at Min runtime's frequency costs {np.nanmin(ratio):.0f}–"
        f"{np.nanmax(ratio):.0f}% more energy than at Min energy's (per app and partition; STREAM "
        f"{ratio[apps.index('8')].min():.0f}–{ratio[apps.index('8')].max():.0f}%), which bounds every energy "
        f"gap between the policies; mean frequencies: Min runtime {freq['min-runtime']:.2f}, Min energy "
        f"{freq['min-energy']:.2f}, PriorityInc {freq['eamc-priorityinc']:.2f} GHz"
    )


def _makespan_explain(grid: pl.DataFrame, vs_rt: pl.DataFrame, runtime_cost: pl.DataFrame) -> str:
    """Why EAMC's makespan does not beat Min runtime's by 5–6% here: measured work and drain tail."""
    rt = grid.filter(pl.col("policy") == "min-runtime")
    tail = 100 * (1 - rt["submit_span"] / rt["makespan"])
    spread = _range(vs_rt, "eamc-priorityinc", metric="makespan")
    cost = ", ".join(
        f"{r['mix']} tw {r['t_weight']:g} {r['mean']:+.1f}%"
        for r in runtime_cost.filter(pl.col("policy") == "eamc-priorityinc").iter_rows(named=True)
    )
    return (
        f"the makespan is work over capacity plus a drain tail: PriorityInc's sum of runtimes improves on Min "
        f"runtime's by {cost} (f_opt below the maximum frequency lengthens apps 1–7, STREAM on p2 shortens), so "
        f"there is little work to save; Min runtime's makespan ends {as_number(tail.mean()):.0f}% of its length "
        "after the "
        f"last submission, and PriorityInc's makespan gain ranges {spread} pp between seeds. Our makespans are "
        f"{as_number(grid['makespan'].min()) / 86400:.1f}–"
        f"{as_number(grid['makespan'].max()) / 86400:.1f} days (paper 10–15)"
    )


def _claim_12(grid: pl.DataFrame, relative: pl.DataFrame, platform: Any, appdb: Any) -> ClaimResult:
    apps = appdb.apps()
    gaps, demoted_apps = [], {}
    for tw in T_WEIGHTS:
        epm = evaluate(platform, appdb, apps, t_weight=tw)
        low = demoted(epm.part_eff, threshold_mode=THRESHOLD_MODE)
        demoted_apps[tw] = sorted(
            {
                EAMC_APP_NAMES.get(a, a) + f" ({platform.names[p]})"
                for a, p in zip(*np.nonzero(low), strict=True)
                for a in [apps[a]]
            }
        )
        gap = np.nanmax(epm.part_eff, axis=1) - np.nanmin(epm.part_eff, axis=1)
        best = np.nanmin(epm.part_eff, axis=1)
        if tw == 1.0:
            gaps = [(EAMC_APP_NAMES.get(a, a), g, g / b) for a, g, b in zip(apps, gap, best, strict=True)]
    ep_d = any(n.startswith("ep.D") for names in demoted_apps.values() for n in names)
    v = grid.filter(pl.col("policy") == "eamc-priorityinc-v").sort("mix", "t_weight", "seed")
    p = grid.filter(pl.col("policy") == "eamc-priorityinc").sort("mix", "t_weight", "seed")
    d_energy = Spread.of(100 * (1 - v["sum_energy"] / p["sum_energy"]), over="runs")
    rel = relative.sort("mix", "t_weight", "seed")
    same_rel = bool(
        np.allclose(rel["mean_response"], p["mean_response"]) and np.allclose(rel["sum_energy"], p["sum_energy"])
    )
    gap_text = ", ".join(f"{n} {g:.3f} ({100 * r:.0f}%)" for n, g, r in sorted(gaps, key=lambda x: -x[1]))
    ours = (
        f"demoted ({THRESHOLD_MODE} gap ≥ 0.35): t_weight 1: {', '.join(demoted_apps[1.0]) or 'none'}; "
        f"t_weight 1.5: {', '.join(demoted_apps[1.5]) or 'none'}; PriorityInc-V's energy saving over "
        f"PriorityInc {d_energy.text('%', 2)}; with the relative 35% threshold PriorityInc-V "
        f"{'equals' if same_rel else 'differs from'} PriorityInc in every run"
    )
    return check_order(
        "C002-12",
        ep_d,
        ours,
        note=f"part_eff gaps to the best partition at t_weight 1 (absolute, relative): {gap_text}",
        explain="ep.D's gap is smaller than STREAM's, sp-mz.C's, bt-mz.C's and ua.C's under both readings of the "
        "threshold, so no threshold demotes ep.D without demoting those first (docs/eamc.md, EPM)",
        spreads={"energy saving of -V over PriorityInc": d_energy},
    )


def _claim_13(grid: pl.DataFrame) -> ClaimResult:
    share = grid.with_columns(pl.col("share_optimal") * 100)
    eamc, at = _extreme(share, "share_optimal", EAMC)
    mix = at.split()[1]
    others = (
        share.filter(
            pl.col("policy").is_in(["min-runtime", "min-energy"]) & (pl.col("mix") == mix) & (pl.col("t_weight") == 1.0)
        )
        .group_by("seed")
        .agg(pl.col("share_optimal").mean())
        .sort("seed")
    )
    placed = grid.filter(pl.col("policy").is_in(EAMC))
    recall = (
        f"; the share of STREAM jobs (optimal on p2) run on p2 under the EAMC variants is "
        f"{100 * as_number(placed['share_placed_p2'].min()):.0f}–"
        f"{100 * as_number(placed['share_placed_p2'].max()):.0f}%"
        if "share_placed_p2" in placed.columns
        else ""
    )
    return check_number(
        "C002-13",
        {"EAMC": eamc, "others": Spread.of(others["share_optimal"])},
        note=f"share of all jobs run on their optimal partition (by part_eff): EAMC = the largest EAMC cell ({at}); "
        f"others = mean of Min runtime and Min energy on the same mix{recall}",
        explain="the share grows with the STREAM fraction (p2's demand): with 7 of 8 apps preferring p1, a "
        "saturated p1 overflows to p2 under every policy that asks both partitions",
    )


def _claim_15(platform: Any, appdb: Any) -> ClaimResult:
    ok, bad, prefer = True, [], {}  # Table 1 prints times to 0.01 s (truncated: STREAM p2 81.437 s → 81.43)
    for tw in T_WEIGHTS:
        t = epm_table(platform, appdb, t_weight=tw)
        for row in t.iter_rows(named=True):
            times, powers = TABLE1[row["app"]]
            k = platform.names.index(row["partition"])
            power = row["energy_nominal_j"] / row["time_nominal_s"]
            if abs(row["time_nominal_s"] - times[k]) > 0.01 or abs(power - powers[k]) > 0.5:
                bad.append(f"{row['app']} {row['partition']}: {row['time_nominal_s']:.2f} s, {power:.1f} W")
            if row["best"]:
                prefer[(tw, row["app"])] = row["partition"]
        stream = t.filter(pl.col("app") == "STREAM")
        f_stream = sorted(set(stream["f_opt_ghz"].round(3)))
        ok &= f_stream == [1.2]
    apps_p1 = all(prefer[(tw, a)] == "p1" for tw in T_WEIGHTS for a in TABLE1 if a != "STREAM")
    stream_p2 = all(prefer[(tw, "STREAM")] == "p2" for tw in T_WEIGHTS)
    ok = ok and apps_p1 and stream_p2 and not bad
    table = "all 16 equal (±0.01 s, ±0.5 W)" if not bad else "; ".join(sorted(set(bad)))
    ours = (
        f"Table 1 times/powers at nominal: {table}; "
        f"apps 1–7 prefer p1: {apps_p1}; STREAM prefers p2: {stream_p2} (t_weight 1 and 1.5); STREAM f_opt "
        f"{', '.join(f'{f:g}' for f in f_stream)} GHz on both partitions"
    )
    return check_setup(
        "C002-15",
        ok,
        ours,
        note="the model's input table, a check of our inputs" + ("" if ok else "; see the values above"),
    )
