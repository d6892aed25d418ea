"""Paper 004 (RMAP, Patki et al., HPDC 2015): Traditional, Naive and Adaptive on an overprovisioned 64-node Cab.

The experiment (paper 004 §6; docs/rmap.md): four 30-job traces (small, large, random 1, random 2) × five global power
bounds (6,500–14,000 W) × Traditional, Naive and Adaptive with thresholds 0, 10, 20, 30% and unbounded; Traditional
and Naive plan with the measured (oracle) configuration data, Adaptive with the degree-2 log-polynomial model, as
the paper does. Traditional, Naive and Adaptive-0 also run with the other data source (Fig. 8).

A *sample* is one draw of the Cab data (the ``calibrated`` stand-in, studies/rmap/data.py) and the model's 10%
training sample (seed ``s``) and of the traces (seed ``s + 1000·r`` for replicate ``r``): quick runs
:data:`QUICK_REPLICATES` replicates per seed, full runs :data:`FULL_REPLICATES`. Every claim is computed per sample
and reported as its spread over the samples, pooled and per seed (the seed rule, reproduce/claims.py). The paper ran
each trace once on its measured Cab data, which is not public; our samples show how much the stand-in varies.

The requested time t_req has two readings ([AMBIG-4.2], studies/rmap/traces.py): a random recorded configuration
at the requested node count (:data:`T_REQ`, the default: the paper's §6 "random selection of our recorded
configuration data") and the packed configuration's time (:data:`OTHER_T_REQ`). The grid runs under both, on the
same samples; the claims the reading moves are reported under the other one as an alternative.

Besides the claims, the run measures what drives the policies' ranking (reproduce/paper004_mechanism.py) and three
sensitivity runs: arrivals :data:`SPARSE_ARRIVALS`× sparser ([AMBIG-4.5]), traces of the non-scalable apps only, and
the default t_req with arrival gaps scaled by its own mean t_req (the arrival rate then moves with the reading).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.executors import map_tasks
from wattsched.reproduce.claims import ClaimResult, Spread
from wattsched.reproduce.paper004_claims import (
    EXAMPLE_POLICIES,
    LARGE,
    RANDOM,
    SEED_FREE,
    Why,
    claims,
    per_sample,
    worked_example,
)
from wattsched.reproduce.paper004_mechanism import (
    A0,
    AU,
    SPARSE_ARRIVALS,
    N,
    T,
    calibration_rows,
    data_figures,
    data_note,
    fallback_note,
    gain,
    mix_note,
    policy_figures,
    sensitivity_figures,
    wide,
)
from wattsched.reproduce.paper004_table4 import table4, table4_note, write_table4_figure
from wattsched.reproduce.runner import (
    Alternative,
    PaperRun,
    ReproduceContext,
    ReproduceError,
    Sensitivity,
    per_seed_claims,
)
from wattsched.studies.rmap.experiment import BOUNDS, run_rmap_grid
from wattsched.studies.rmap.figures import write_rmap_figures
from wattsched.studies.rmap.machine import (
    DEFAULT_CAB_DATA,
    RMAP_CAB_APPS,
    JobDetails,
    fit_config_model,
    rmap_cab_details,
)
from wattsched.studies.rmap.model_figures import write_calibration_figure, write_model_figures
from wattsched.studies.rmap.results import rmap_run_means
from wattsched.studies.rmap.traces import DEFAULT_T_REQ, TReq

__all__ = [
    "EXAMPLE_POLICIES",
    "FULL_REPLICATES",
    "OPTIONS",
    "OTHER_T_REQ",
    "QUICK_REPLICATES",
    "T_REQ",
    "run",
    "worked_example",
]

#: Trace replicates per seed: quick 4 (12 samples on three seeds, 4 per seed for the seed rule), full 10.
QUICK_REPLICATES = 4
FULL_REPLICATES = 10
#: The default reading of t_req and the other one, reported as an alternative ([AMBIG-4.2], docs/decisions.md).
T_REQ: TReq = DEFAULT_T_REQ
OTHER_T_REQ: TReq = "packed"
#: What each reading of t_req is, for the report.
READINGS: dict[str, str] = {
    "random-config": "the measured time of a random recorded configuration at the requested node count (any cores "
    "and cap), the paper's §6 'random selection of our recorded configuration data'",
    "packed": "the measured time of the packed configuration (n_req × 16 cores, 115 W), the reading of earlier "
    "versions",
}
#: The paper's own options (``wattsched reproduce 004 --set NAME=VALUE``, where the CLI offers it).
OPTIONS: dict[str, str] = {
    "t_req": f"the reading of t_req ([AMBIG-4.2]): {T_REQ} (default) or {OTHER_T_REQ}; the other reading is "
    "reported as the alternative",
}


def readings(ctx: ReproduceContext) -> tuple[TReq, TReq]:
    """(default reading, alternative reading) of t_req: :data:`T_REQ` first unless the ``t_req`` option swaps them."""
    chosen = getattr(ctx, "options", {}).get("t_req", T_REQ)
    if chosen not in READINGS:
        raise ReproduceError(f"t_req must be one of {', '.join(READINGS)}, got {chosen!r}")
    return (T_REQ, OTHER_T_REQ) if chosen == T_REQ else (OTHER_T_REQ, T_REQ)


def samples(ctx: ReproduceContext) -> list[tuple[int, int, int]]:
    """(sample, data seed, trace seed) of every sample of this run."""
    replicates = QUICK_REPLICATES if ctx.quick else FULL_REPLICATES
    rows = [(seed, seed + 1000 * r) for r in range(replicates) for seed in ctx.seeds]
    return [(k, d, t) for k, (d, t) in enumerate(rows)]


@dataclass
class Grid:
    """The jobs of every run of the reproduction, over every sample (columns ``sample``, ``data_seed``,
    ``trace_seed``): the main grid under each t_req reading and the sensitivity runs (default reading)."""

    jobs: pl.DataFrame
    other: pl.DataFrame
    sparse: pl.DataFrame
    mix: pl.DataFrame
    arrivals: pl.DataFrame


@functools.lru_cache(maxsize=16)
def _details(data_seed: int) -> tuple[JobDetails, JobDetails, pl.DataFrame]:
    """(measured details, the configuration model fitted to them, the model's per-point errors) of one data seed:
    shared by the samples of the seed that a process runs, and by the model figures."""
    oracle = rmap_cab_details(data_seed)
    return oracle, *fit_config_model(oracle, 0.1, seed=data_seed)


def _sample_runs(task: tuple[int, int, int, TReq, TReq]) -> dict[str, pl.DataFrame]:
    """The jobs of every run of one sample, tagged with it (a worker's task: a sample's data and traces come
    from its own seeds, so the samples can run in any process and order)."""
    k, data_seed, trace_seed, main, other = task
    oracle, model, _ = _details(data_seed)
    flat = [a.name for a in RMAP_CAB_APPS if not a.scalable]
    tag = [pl.lit(k).alias("sample"), pl.lit(data_seed).alias("data_seed"), pl.lit(trace_seed).alias("trace_seed")]
    grids = {
        "jobs": run_rmap_grid(oracle, model, seed=trace_seed, t_req=main),
        "other": run_rmap_grid(oracle, model, seed=trace_seed, t_req=other, other_sources=False),
        "sparse": run_rmap_grid(
            oracle,
            model,
            traces=LARGE,
            policies=(A0, AU),
            seed=trace_seed,
            arrival_scale=SPARSE_ARRIVALS,
            other_sources=False,
            t_req=main,
        ),
        "mix": run_rmap_grid(
            JobDetails([oracle[a] for a in flat]),
            JobDetails([model[a] for a in flat]),
            traces=("large", *RANDOM),
            policies=(T, N, A0, AU),
            seed=trace_seed,
            other_sources=False,
            t_req=main,
        ),
        "arrivals": run_rmap_grid(
            oracle,
            model,
            traces=LARGE,
            policies=(T, N, A0, AU),
            seed=trace_seed,
            other_sources=False,
            t_req=main,
            arrival_reference="t_req",
        ),
    }
    return {name: jobs.with_columns(tag) for name, (jobs, _, _) in grids.items()}


def _draw(task: tuple[Any, ...]) -> list[Path]:
    """Draw one of the two halves of the figures (a worker's task, about even: Figs. 8–15 from the grid; the
    model's, the calibration and Table 4's); the paths written."""
    if task[0] == "grid":
        _, jobs, folder = task
        return write_rmap_figures(jobs, folder)
    _, errors, t4, folder = task
    return write_model_figures(errors, folder) + write_calibration_figure(folder) + write_table4_figure(t4, folder)


def run_grid(ctx: ReproduceContext, main: TReq = T_REQ, other: TReq = OTHER_T_REQ) -> Grid:
    """Every run of :class:`Grid` under the ``main`` reading, and the main grid under the ``other`` one (without the
    other data source: no claim uses it); the samples on ``ctx.workers`` processes, gathered in sample order (the
    same tables on any number of workers)."""
    runs: dict[str, list[pl.DataFrame]] = {k: [] for k in ("jobs", "other", "sparse", "mix", "arrivals")}
    todo = [(k, data_seed, trace_seed, main, other) for k, data_seed, trace_seed in samples(ctx)]
    workers = max(1, min(ctx.workers, len(todo)))
    for grids in ctx.track(map_tasks(_sample_runs, todo, workers=workers), len(todo), "RMAP grid"):
        for name, jobs in grids.items():
            runs[name].append(jobs)
    return Grid(**{name: pl.concat(frames) for name, frames in runs.items()})


def _seed(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    return frame.filter(pl.col("data_seed") == seed)


def _gain(jobs: pl.DataFrame, traces: tuple[str, ...], a: str, b: str) -> Spread:
    w = wide(jobs)
    return per_sample(w, traces, gain(w, a, b))


def _row(claim: str, change: str, default: Spread, variant: Spread) -> Sensitivity:
    """A sensitivity row; ``claim`` may name the claim's label after a space ("C004-05 vs Naive"), which goes to the
    change (the table's claim column is the id)."""
    cid, _, label = claim.partition(" ")
    what = f"{label}: {change}" if label else change
    return Sensitivity(
        cid, what, default.text("%"), variant.text("%"), f"{variant.mean - default.mean:+.1f} pp on the mean"
    )


def sensitivity(
    grid: Grid, default: list[ClaimResult], other: list[ClaimResult], main: TReq = T_REQ, alt: TReq = OTHER_T_REQ
) -> list[Sensitivity]:
    """The sensitivity table: what the t_req reading, the arrival rate and the apps in the traces move (claims'
    values as the claims compute them; the variants' on the same samples)."""
    by_id = {r.id: r for r in default}
    moved = {r.id: r for r in other}
    rows = [
        _row(f"{cid} {label}", f"t_req = {alt} instead of {main}", by_id[cid].spreads[label], moved[cid].spreads[label])
        for cid, label in (
            ("C004-03", "vs Traditional"),
            ("C004-05", "vs Naive"),
            ("C004-13", "threshold 0"),
            ("C004-13", "threshold 20%"),
        )
        if cid in moved
    ]
    own_rate = f"arrival gaps scaled by the {main} reading's mean t_req instead of the mean packed time"
    rows += [
        _row("C004-05 vs Naive", own_rate, _gain(grid.jobs, LARGE, A0, N), _gain(grid.arrivals, LARGE, A0, N)),
        _row("C004-10", own_rate, _gain(grid.jobs, LARGE, A0, AU), _gain(grid.arrivals, LARGE, A0, AU)),
        _row(
            "C004-10",
            f"arrivals {SPARSE_ARRIVALS:g}× sparser ([AMBIG-4.5])",
            _gain(grid.jobs, LARGE, A0, AU),
            _gain(grid.sparse, LARGE, A0, AU),
        ),
    ]
    flat = ", ".join(a.name for a in RMAP_CAB_APPS if not a.scalable)
    for cid, traces in (("C004-05 vs Naive", LARGE), ("C004-03 vs Naive", RANDOM)):
        rows.append(
            _row(
                cid,
                f"traces of the non-scalable apps only ({flat})",
                _gain(grid.jobs, traces, A0, N),
                _gain(grid.mix, traces, A0, N),
            )
        )
    return rows


def results_table(jobs: pl.DataFrame) -> pl.DataFrame:
    """One row per run: sample, seeds, t_req reading, trace, bound, policy, data source and its mean turnaround,
    wait and run, ratios to Traditional and Naive, and the share of jobs started through power-aware backfilling."""
    keys = ["sample", "data_seed", "trace_seed", "t_req_reading", "trace", "bound", "policy", "data", "default_data"]
    stats = jobs.group_by(keys).agg(
        pl.col("turnaround").mean().alias("mean_turnaround"),
        pl.col("wait").mean().alias("mean_wait"),
        pl.col("runtime").mean().alias("mean_runtime"),
        pl.col("alloc_power").mean().alias("mean_alloc_power"),
        (pl.col("started_by") == "power-aware").mean().alias("share_power_aware"),
    )
    parts = []
    for reading in jobs["t_req_reading"].unique(maintain_order=True):
        sub = jobs.filter(pl.col("t_req_reading") == reading)
        ratios = rmap_run_means(sub).select("sample", "trace", "bound", "policy", "data", "vs_trad", "vs_naive")
        parts.append(ratios.with_columns(pl.lit(reading).alias("t_req_reading")))
    ratios = pl.concat(parts)
    stats = stats.join(ratios, on=["sample", "t_req_reading", "trace", "bound", "policy", "data"])
    return stats.sort(keys)


def _per_seed(ctx: ReproduceContext, jobs: pl.DataFrame) -> dict[int, list[ClaimResult]]:
    return per_seed_claims(ctx.seeds, lambda s: claims(_seed(jobs, s), seed_free=False), skip=SEED_FREE)


def _moved(default: list[ClaimResult], other: list[ClaimResult]) -> list[str]:
    """Claims whose value the t_req reading moves: the value or the measured text that decides it differs (an
    order claim's value is only whether it holds)."""
    before = {r.id: (r.value, r.ours_text) for r in default}
    return [r.id for r in other if r.id not in SEED_FREE and (r.value, r.ours_text) != before.get(r.id)]


def run(ctx: ReproduceContext) -> PaperRun:
    """Paper 004's experiment and claims (see the module docstring)."""
    t0 = time.perf_counter()
    main, alt = readings(ctx)
    todo = samples(ctx)
    ctx.step(
        f"RMAP grid: {len(todo)} samples × 4 traces × {len(BOUNDS)} bounds × 7 policies (+ 3 with the other data "
        f"source), t_req = {main} and {alt}, and the sensitivity runs"
    )
    ctx.phase("the RMAP grid (both t_req readings, sensitivity runs)")
    grid = run_grid(ctx, main, alt)
    seconds = time.perf_counter() - t0
    ctx.step("claims and figures")
    ctx.phase("claims, pooled and per seed (with the figures' summaries)")
    m, m_other = policy_figures(grid.jobs), policy_figures(grid.other)
    d = data_figures(ctx.seeds)
    s = sensitivity_figures(grid.sparse, grid.mix)
    refs = {"fallback": "M1", "data": "M2", "mix": "M3"}
    results = claims(grid.jobs, Why(m, refs))
    per_seed = _per_seed(ctx, grid.jobs)
    other_all = claims(grid.other, Why(m_other, {"fallback": "P1", "data": "M2"}), seed_free=False)
    moved = _moved(results, other_all)
    other = [r for r in other_all if r.id in moved]
    other_seed = {seed: [r for r in rs if r.id in moved] for seed, rs in _per_seed(ctx, grid.other).items()}
    alternative = Alternative(
        f"t_req = {alt}",
        f"t_req is {READINGS[alt]}, rounded up to 10 s ([AMBIG-4.2], option t_req = {alt}); the same samples, "
        f"jobs, arrivals, data and policies as the default (t_req = {main}).",
        other,
        other_seed,
    )
    fig_dir = ctx.out / "figures"
    ctx.phase("figures")
    first = todo[0][1]
    errors = _details(first)[2]
    t4: dict[str, dict[str, Spread]] = {main: table4(grid.jobs), alt: table4(grid.other)}
    tasks = [("grid", grid.jobs, fig_dir), ("model", errors, t4, fig_dir)]
    figures = [path for paths in map_tasks(_draw, tasks, workers=max(1, min(ctx.workers, 2))) for path in paths]
    trad14 = grid.jobs.filter(
        (pl.col("trace") == "random2")
        & (pl.col("bound") == max(BOUNDS))
        & (pl.col("policy") == T)
        & pl.col("default_data")
    )
    no_wait = trad14.group_by("sample").agg((pl.col("wait") <= 1e-9).sum().alias("v"))["v"]
    mix_w = wide(grid.mix)
    mix_gains = {
        f"{key}_{b}": float(mix_w.filter(pl.col("trace").is_in(tr)).select(gain(mix_w, A0, pol).mean()).item())
        for key, tr in (("large", LARGE), ("random", RANDOM))
        for b, pol in (("n", N), ("t", T))
    }
    t_req_mean = {
        reading: Spread.of(
            frame.filter((pl.col("policy") == T) & pl.col("default_data"))
            .group_by("sample")
            .agg(pl.col("t_req").mean())
            .sort("sample")["t_req"],
            "samples",
        )
        for reading, frame in ((main, grid.jobs), (alt, grid.other))
    }
    seeds = ", ".join(str(x) for x in ctx.seeds)
    notes = [
        f"No Cab measurements are public: the configuration data are the '{DEFAULT_CAB_DATA}' stand-in of "
        "studies/rmap/data.py (docs/rmap.md), one draw per data seed; the paper ran each trace once on measured data.",
        f"t_req ([AMBIG-4.2]): {main} by default ({READINGS[main]}); the claims the reading moves are also shown "
        f"under the alternative 't_req = {alt}' ({READINGS[alt]}). Mean t_req over a trace's jobs: "
        f"{t_req_mean[main].text('s', 0)} ({main}) against {t_req_mean[alt].text('s', 0)} ({alt}). Both readings' "
        "traces have the same jobs and "
        "arrivals (the gaps scale with the mean packed time, [AMBIG-4.5]); the sensitivity table shows what scaling "
        "them with the default reading's mean t_req would move.",
        f"The Cab data against the paper's published measurements, on the run's data seeds {seeds}: "
        + "; ".join(calibration_rows(d["calibration"]))
        + ".",
        f"Arrival-rate check ([AMBIG-4.5]): on random trace 2 at {max(BOUNDS):,.0f} W, "
        f"{Spread.of(no_wait, 'samples').text('', 1)} of 30 jobs start without waiting under Traditional (the paper, "
        "§7.4: 14 of 30).",
        f"[M1] Why Adaptive-0 stays close to Naive (t_req = {main}): " + fallback_note(m, main),
        f"[P1] The same under t_req = {alt}: " + fallback_note(m_other, alt),
        "[M2] The data: " + data_note(d),
        "[M3] The non-scalable apps: " + mix_note(s, mix_gains),
        table4_note(t4),
        f"Simulation time {seconds:.1f} s for {len(todo)} samples (both t_req readings and the sensitivity runs).",
    ]
    settings = {
        "setting": "quick" if ctx.quick else "full",
        "Cab data": DEFAULT_CAB_DATA,
        "seeds (Cab data, model sample)": seeds,
        "trace replicates per seed": QUICK_REPLICATES if ctx.quick else FULL_REPLICATES,
        "samples": len(todo),
        "traces": "small, large, random1, random2 (30 jobs each)",
        "t_req": f"{main} (alternative: {alt})",
        "global bounds (W)": ", ".join(f"{b:,.0f}" for b in BOUNDS),
        "policies": "Traditional, Naive (oracle data); Adaptive 0/10/20/30%/unbounded (model data)",
        "arrivals": "Poisson, mean gap = the jobs' mean packed time (sensitivity: × " + f"{SPARSE_ARRIVALS:g})",
        "simulation seconds": round(seconds, 1),
    }
    both = pl.concat(
        [
            grid.jobs.with_columns(pl.lit(main).alias("t_req_reading")),
            grid.other.with_columns(pl.lit(alt).alias("t_req_reading")),
        ]
    )
    return PaperRun(
        results=results_table(both),
        claims=results,
        figures=figures,
        settings=settings,
        notes=notes,
        per_seed=per_seed,
        alternatives=[alternative],
        sensitivity=sensitivity(grid, results, other, main, alt),
    )
