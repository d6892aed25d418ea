"""Paper 002 (EAMC): the p1/p2 grid — W13/W33/W50 × the six policies × t_weight 1 and 1.5 — over seeds, with
the paper's Figs. 3–5 and every claim C002-01…15 computed from the runs.

Settings (decision register, "EAMC reproduction"):

- full: 5,000 jobs per workload (the paper's scale); quick: 2,000 jobs, the same generator, load and mixes, so
  every shape is still there with a shorter makespan;
- PriorityInc-V's threshold is the artifact's absolute part_eff gap ≥ 0.35 ([AMBIG-2.4]): with the paper text's
  relative 35% nothing on the public model reaches the threshold (STREAM's gap is 33%), so PriorityInc-V would be
  PriorityInc; the relative reading is also run, to show that;
- two side runs back the explanations of the claims that differ: the relative threshold (PriorityInc-V only) and
  an offered load of 1.5 instead of 1.0 (Min runtime, Base Slurm, PriorityInc at t_weight 1).

"Up to" claims are the maximum, over the cells the paper takes them over (each claim's note names them), of the
mean over seeds; the spread shown is that cell's spread over seeds. Improvements are ``100·(1 − ours/baseline)``
on the same (mix, t_weight, seed): positive is shorter or less energy.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.campaign.runner import run_experiment
from wattsched.core.executors import map_tasks
from wattsched.core.scalars import as_number
from wattsched.core.store import MANIFEST, read_manifest
from wattsched.reproduce.claims import ClaimResult
from wattsched.reproduce.paper002_claims import HIGH_LOAD, SEED_FREE, THRESHOLD_MODE, claims_from
from wattsched.reproduce.runner import PaperRun, ReproduceContext, per_seed_claims
from wattsched.studies.eamc.dvfs import eamc_p1p2
from wattsched.studies.eamc.energy_model import eamc_appdb
from wattsched.studies.eamc.experiment import EAMCExperiment, EAMCSpec
from wattsched.studies.eamc.figures import EAMC_FIGURES, draw_eamc_figures
from wattsched.studies.eamc.policies import EAMC_POLICIES
from wattsched.studies.eamc.results import load_eamc_results


def _draw(task: tuple[pl.DataFrame, Path, tuple[str, ...]]) -> list[Path]:
    """Draw some of the EAMC figures (a worker's task: matplotlib draws on one core, so two halves on two
    workers take about half the time); the paths written."""
    grid, out, names = task
    return draw_eamc_figures(grid, out, names)


def run(ctx: ReproduceContext) -> PaperRun:
    data_dir = ctx.data("eamc/en_conf", "the EAMC en_conf model data")
    n_jobs = 2000 if ctx.quick else 5000
    seeds = list(ctx.seeds)
    common: dict[str, Any] = dict(kind="eamc", data_dir=str(data_dir), seeds=seeds, jobs=n_jobs)

    def run_grid(name: str, description: str, **settings: Any) -> None:
        """Run (or resume) one grid under ``runs/<name>`` with a progress bar; a folder holding an earlier
        reproduction's grid with other settings is started afresh."""
        experiment = EAMCExperiment(EAMCSpec(name=f"p002-{name}", **{**common, **settings}))
        out = runs / name
        if (out / MANIFEST).exists() and read_manifest(out).get("spec_hash") != experiment.spec_hash():
            shutil.rmtree(out)
        s = experiment.spec
        total = len(s.mixes) * len(s.policies) * len(s.t_weights) * len(s.seeds)
        bar = iter(ctx.track(range(total), total, description))
        seen = [0]

        def progress(done: int, _total: int) -> None:
            while seen[0] < done:
                next(bar, None)
                seen[0] += 1

        run_experiment(experiment, out, workers=ctx.workers, progress=progress)
        for _ in bar:
            pass

    runs = ctx.out / "runs"
    ctx.step(f"grid: 3 mixes × 6 policies × 2 t_weight × {len(seeds)} seed(s), {n_jobs:,} jobs each")
    ctx.phase("the grid's runs")
    run_grid("grid", "grid", threshold_mode=THRESHOLD_MODE)
    ctx.step("side runs: PriorityInc-V with the relative threshold; offered load 1.5")
    ctx.phase("the side runs (relative threshold, load 1.5)")
    run_grid("relative", "relative threshold", policies=["eamc-priorityinc-v"], threshold_mode="relative")
    run_grid(
        "load",
        f"load {HIGH_LOAD:g}",
        policies=["min-runtime", "min-energy", "base-slurm", "eamc-priorityinc"],
        t_weights=[1.0],
        load=HIGH_LOAD,
    )
    ctx.phase("loading the results")
    grid = load_eamc_results(runs / "grid")
    relative = load_eamc_results(runs / "relative")
    high = load_eamc_results(runs / "load")
    results = pl.concat(
        [
            grid.with_columns(pl.lit("grid").alias("setting")),
            relative.with_columns(pl.lit("relative threshold").alias("setting")),
            high.with_columns(pl.lit(f"load {HIGH_LOAD:g}").alias("setting")),
        ],
        how="diagonal_relaxed",
    )
    results = results.drop([c for c in results.columns if results[c].dtype == pl.Null])

    ctx.step("figures")
    ctx.phase("figures")
    halves = [(grid, ctx.out, EAMC_FIGURES[:2]), (grid, ctx.out, EAMC_FIGURES[2:])]
    drawn = map_tasks(_draw, halves, workers=max(1, min(ctx.workers, len(halves))))
    figures = [p for paths in drawn for p in paths if p.suffix == ".png"]
    ctx.step("claims")
    ctx.phase("claims, pooled and per seed")
    platform = eamc_p1p2(str(data_dir))
    appdb = eamc_appdb(str(data_dir), platform)
    claims = claims_from(grid, relative, high, platform, appdb)

    def one_seed(seed: int) -> list[ClaimResult]:
        def only(f: pl.DataFrame) -> pl.DataFrame:
            return f.filter(pl.col("seed") == seed)

        return claims_from(only(grid), only(relative), only(high), platform, appdb)

    per_seed = per_seed_claims(seeds, one_seed, skip=SEED_FREE) if len(seeds) > 1 else {}
    days = grid["makespan"] / 86400
    settings = {
        "system": "p1/p2, 512 + 512 nodes (public EAR model, nominal reference block)",
        "workloads": f"{n_jobs:,} jobs per mix (Lublin–Feitelson calibrated to 18.29 nodes, 3.65 h; load 1.0)",
        "seeds": ", ".join(map(str, seeds)),
        "PriorityInc-V threshold": f"{THRESHOLD_MODE} part_eff gap ≥ 0.35 ([AMBIG-2.4])",
        "side runs": f"relative threshold (PriorityInc-V); offered load {HIGH_LOAD:g} (t_weight 1)",
        "mode": "quick" if ctx.quick else "full",
    }
    notes = [
        f"Makespan of the grid's runs: {as_number(days.min()):.1f}–{as_number(days.max()):.1f} days "
        "(paper: 10–15 days).",
        "Fig. 6 (system p1/p3) is not drawn: the p3 (Gold 6148) model data are not public.",
        "The AppDB is static, as in the paper's simulations (§3.2: \"the appDB is static and available at the "
        'beginning of simulations"); the learning AppDB is not used.',
    ]
    return PaperRun(results=results, claims=claims, figures=figures, settings=settings, notes=notes, per_seed=per_seed)


__all__ = ["EAMC_POLICIES", "run"]
