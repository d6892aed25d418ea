"""Paper 000 (Scheduling with lightweight predictions in power-constrained HPC platforms): its experiment in one
command, ``wattsched reproduce 000 [--quick]``.

The experiment is two campaigns, built here as the very specs a user could write (both are written to the output
folder as TOML, so ``wattsched campaign run campaign.toml --output DIR`` reruns them):

- ``campaign.toml`` (§6.4–6.5): Marconi100-like workloads cut into 24-h windows (the jobs running at a window's
  start resubmitted at t = 0, ``prestate = "requeue"``), EASY+PC on the marconi100 platform, caps 0.4/0.5/0.6/0.7
  of the dynamic range during a 3-h window at t = 0, the 11 estimators (naive; real and predicted mean, max,
  gaussian68/95/99) and an uncapped EASY baseline per window;
- ``campaign-policies.toml`` (§6.6): the same windows at cap 0.5 with gaussian99, real and predicted, under EASY
  FCFS, EASY SAF, Knapsack Wait and Knapsack Stretch.

The full setting runs 30 windows per seed (30 × 4 × 11 = 1,320 instances per seed, the paper's campaign); the
quick one fewer windows of a smaller workload, still over three seeds. The claims are computed from the results
table in :mod:`wattsched.reproduce.paper000_claims`.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.campaign.power import prepare_workload, spec_hash
from wattsched.campaign.runner import load_results, run_experiment
from wattsched.campaign.spec import (
    CampaignSpec,
    GridSpec,
    WindowsSpec,
    expand_runs,
    parse_spec,
    workload_variants,
)
from wattsched.campaign.workloads import load_workload_spec
from wattsched.core.atomic import atomic_write
from wattsched.core.executors import map_tasks
from wattsched.core.store import MANIFEST, CampaignLayout, write_manifest
from wattsched.engine.windows import WindowSpec, cut_windows
from wattsched.reproduce.paper000_claims import compute_claims
from wattsched.reproduce.paper000_figures import draw_predictor_figures
from wattsched.reproduce.paper000_sensitivity import sensitivity, wanted
from wattsched.reproduce.runner import PaperRun, ReproduceContext

#: The 11 estimators of §6.4: naive (own source) + 5 checks × {real, predicted}.
CHECKS = ["naive", "mean", "max", "gaussian68", "gaussian95", "gaussian99"]
SOURCES = ["real", "predicted"]
CAPS = [0.4, 0.5, 0.6, 0.7]
#: §6.6: EASY FCFS, EASY SAF, Knapsack Wait, Knapsack Stretch (``wattsched policies``).
POLICIES = ["easy-pc", "easy-saf-pc", "knapsack-wait", "knapsack-stretch"]
POLICY_LABELS = {
    "easy-pc": "EASY FCFS",
    "easy-saf-pc": "EASY SAF",
    "knapsack-wait": "Knapsack Wait",
    "knapsack-stretch": "Knapsack Stretch",
}
POWER_WINDOW = 3 * 3600.0
#: The window construction of the paper's experiment ([AMBIG-0.9], docs/decisions.md).
PRESTATE = "requeue"
#: The cap after the 3-h window. The paper's text applies a cap "solely during the first 3 hours"; its artifact
#: keeps 719,880 W (the dynamic range) with the same estimator afterwards. "none" is the paper's text, and it is
#: what reproduces the paper's turnaround increases (docs/reproduce-000.md, "post-window cap").
POST_WINDOW_CAP = "none"
#: The paper's own options (``wattsched reproduce 000 --set NAME=VALUE`` where the CLI has ``--set``).
OPTIONS = {"sensitivity": "on (default) or off: the variant campaigns of the report's sensitivity table (one seed)"}


@dataclass(frozen=True)
class Setting:
    """How big the run is: jobs generated per seed and windows cut per seed."""

    name: str
    jobs: int
    windows: int
    ml_methods: tuple[str, ...]


#: 30 windows of 24 h per seed as in §6.4, out of a 100,000-job trace (≈ 2 months of Marconi100 arrivals, enough
#: user history for the predictors). C000-27 compares history with the linear and SGD regressions; the forest and
#: SVR (RFECV + 5-fold grid search per week and metric) took over 14 minutes on a 30,000-job trace, so they are
#: left to ``wattsched predict power --method ml-forest``.
FULL = Setting("full", 100_000, 30, ("ml-linear", "ml-sgd"))
#: A smaller trace (40,000 jobs: 9–24 days at the generator's offered load 0.95, so the weekly ML predictors
#: train at least one model) with 6 windows per seed: every shape, ≤ 3
#: minutes on 2 cores (docs/decisions.md).
QUICK = Setting("quick", 40_000, 6, ("ml-linear",))


def _windows_entry(setting: Setting) -> dict[str, Any]:
    """The ``windows`` table, with the requeue construction when this version of the campaign spec has it."""
    entry: dict[str, Any] = {"count": setting.windows, "hours": 24, "seed": 0}
    try:
        WindowsSpec.model_validate({**entry, "prestate": PRESTATE})
        entry["prestate"] = PRESTATE
    except ValueError:
        entry["prestate"] = True  # a campaign spec without requeue: the report notes it
    return entry


def _grid_extra() -> dict[str, Any]:
    return {"post_window_cap": POST_WINDOW_CAP} if "post_window_cap" in GridSpec.model_fields else {}


def campaign_data(setting: Setting, seeds: tuple[int, ...], experiment: str) -> dict[str, Any]:
    """The campaign file's content (a plain dict, TOML-writable) for ``experiment`` "estimators" or "policies"."""
    workload = {
        "name": "m100",
        "generate": {"model": "m100", "jobs": setting.jobs, "seed": 0},
        "windows": _windows_entry(setting),
    }
    if experiment == "estimators":
        grid = {"policies": ["easy-pc"], "checks": CHECKS, "sources": SOURCES, "caps": CAPS}
    elif experiment == "policies":
        grid = {"policies": POLICIES, "checks": ["gaussian99"], "sources": SOURCES, "caps": [0.5]}
    else:
        raise ValueError(f"experiment must be 'estimators' or 'policies', got {experiment!r}")
    grid.update({"seeds": list(seeds), "power_window": POWER_WINDOW, **_grid_extra()})
    return {
        "kind": "power",
        "name": f"paper000-{experiment}-{setting.name}",
        "platform": "marconi100",
        "workloads": [workload],
        "grid": grid,
        "prediction": {"method": "history"},
        "baselines": True,
    }


def windows_of(setting: Setting, seed: int) -> list[Any]:
    """The windows (``ReadResult`` each) that the reproduction's campaigns run for ``seed``, without predictions:
    the one construction shared by ``reproduce 000``, the power-shape tests and the docs."""
    spec = parse_spec(campaign_data(setting, (seed,), "estimators"))
    wl = spec.workloads[0]
    read = load_workload_spec(wl, seed)
    w = wl.windows
    assert w is not None  # campaign_data always cuts windows
    return [window for _, window in cut_windows(read, WindowSpec(w.count, w.hours, w.seed + seed, w.prestate))]


def grid_size(spec: CampaignSpec) -> dict[str, int]:
    """Instances (capped runs) and baselines per seed of ``spec``, counted by expanding its grid as the runner
    does (window ids stand in for the windows, which the count does not depend on)."""
    count = spec.workloads[0].windows.count if spec.workloads[0].windows else 1
    windows = {name: [f"{name}-w{k:02d}" for k in range(count)] for _, _, name in _variants(spec)}
    runs = expand_runs(spec, windows)
    seeds = len(spec.grid.seeds)
    return {
        "instances": sum(r["kind"] == "run" for r in runs) // seeds,
        "baselines": sum(r["kind"] == "baseline" for r in runs) // seeds,
    }


def _variants(spec: CampaignSpec) -> list[tuple[Any, int, str]]:
    return workload_variants(spec)


def toml_text(data: dict[str, Any]) -> str:
    """``data`` (scalars, lists of scalars, tables, arrays of tables whose values are scalars or flat tables) as
    TOML: enough for a campaign file, without a TOML-writing dependency."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        raise TypeError(f"cannot write {type(v).__name__} to TOML")

    lines = [
        f"{k} = {value(v)}"
        for k, v in data.items()
        if not isinstance(v, dict | list) or (isinstance(v, list) and not (v and isinstance(v[0], dict)))
    ]
    for k, v in data.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                lines += ["", f"[[{k}]]", *(f"{kk} = {value(vv)}" for kk, vv in item.items())]
    for k, v in data.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]", *(f"{kk} = {value(vv)}" for kk, vv in v.items())]
    return "\n".join(lines) + "\n"


def _prepare_variant(item: tuple[dict[str, Any], int, str, str]) -> tuple[str, list[str]]:
    """Generate, predict and cut one workload variant (one seed) of a campaign: a picklable task."""
    data, seed, name, out = item
    spec = parse_spec(data)
    return name, prepare_workload(spec, spec.workloads[0], seed, name, Path(out))


def prepare_shared(datas: dict[str, dict[str, Any]], dirs: dict[str, Path], workers: int) -> None:
    """Prepare both campaigns' directories as the campaign runner would, but with the seeds' workloads
    prepared in parallel, and once: §6.6 runs "the same workloads as the previous sections", so the policies
    campaign gets the estimators campaign's window files (hard links) and its own manifest. Rerunning either TOML
    file with ``wattsched campaign run`` regenerates the same windows (generation and cutting are seeded)."""
    if all((dirs[e] / MANIFEST).exists() for e in datas):
        return
    first = next(iter(datas))
    for d in dirs.values():
        CampaignLayout(d).make()
    spec = parse_spec(datas[first])
    items = [(datas[first], seed, name, str(dirs[first])) for _, seed, name in workload_variants(spec)]
    windows = dict(map_tasks(_prepare_variant, items, workers=max(1, min(workers, len(items)))))
    for experiment, data in datas.items():
        d = dirs[experiment]
        if experiment != first:
            for sub in CampaignLayout.SHARED:
                for path in (dirs[first] / sub).iterdir():
                    target = d / sub / path.name
                    if not target.exists():
                        try:
                            os.link(path, target)
                        except OSError:
                            shutil.copy2(path, target)
        s = parse_spec(data)
        manifest = {
            "kind": "power",
            "name": s.name,
            "spec": s.model_dump(mode="json"),
            "spec_hash": spec_hash(s),
            "windows": windows,
            "runs": expand_runs(s, windows),
        }
        write_manifest(d, manifest)


def run_experiments(ctx: ReproduceContext, setting: Setting) -> tuple[pl.DataFrame, dict[str, CampaignSpec]]:
    """Write both campaign files, prepare them (seeds in parallel), run them with ``ctx.workers`` processes and
    return every finished run (with an ``experiment`` column) and the specs."""
    specs, dirs, datas = {}, {}, {}
    for experiment, filename in (("estimators", "campaign.toml"), ("policies", "campaign-policies.toml")):
        data = campaign_data(setting, ctx.seeds, experiment)
        atomic_write(ctx.out / filename, toml_text(data))
        specs[experiment] = parse_spec(data, filename)
        dirs[experiment] = ctx.out / f"campaign-{experiment}"
        datas[experiment] = data
    ctx.step(
        f"preparing {len(ctx.seeds)} seed(s): {setting.jobs:,} Marconi100-like jobs per seed, "
        f"{setting.windows} windows of 24 h, history power predictions"
    )
    ctx.phase("preparing the workloads (generation, history predictions, windows)")
    prepare_shared(datas, dirs, ctx.workers)
    frames = []
    for experiment, spec in specs.items():
        ctx.step(f"running the {experiment} campaign ({dirs[experiment].name})")
        ctx.phase(f"the {experiment} campaign's runs")
        run_experiment(spec, dirs[experiment], workers=ctx.workers, progress=_Progress(ctx, experiment))
        frames.append(load_results(dirs[experiment]).with_columns(pl.lit(experiment).alias("experiment")))
    return pl.concat(frames, how="diagonal_relaxed"), specs


class _Progress:
    """A campaign progress callback that reports every tenth of the runs as a ``ctx.step`` line."""

    def __init__(self, ctx: ReproduceContext, name: str) -> None:
        self.ctx, self.name, self.next = ctx, name, 0.1

    def __call__(self, done: int, total: int) -> None:
        if total and done / total >= self.next:
            self.ctx.step(f"{self.name}: {done}/{total} runs")
            while self.next <= done / total:
                self.next += 0.1


def run(ctx: ReproduceContext) -> PaperRun:
    """Run both campaigns, compute every claim C000-01…28 pooled and per seed, the sensitivity table, and draw
    Figs. 2–7."""
    setting = QUICK if ctx.quick else FULL
    t0 = time.perf_counter()
    results, specs = run_experiments(ctx, setting)
    run_seconds = time.perf_counter() - t0
    ctx.step("computing the claims, pooled and per seed (predictor accuracy on the synthetic stand-in included)")
    ctx.phase("claims, pooled and per seed (the predictor comparison included)")
    full_specs = {e: parse_spec(campaign_data(FULL, ctx.seeds, e)) for e in ("estimators", "policies")}
    computed = compute_claims(results, ctx, setting, specs, full_specs, partial(grid_size))
    notes = computed.notes
    t1 = time.perf_counter()
    ctx.phase("sensitivity variants")
    rows, sens_notes = sensitivity(ctx, setting, results, specs["policies"].grid.policies, campaign_data)
    notes += sens_notes
    sens_seconds = time.perf_counter() - t1
    ctx.step("drawing the figures")
    ctx.phase("figures")
    figures = draw_figures(results, ctx.out, computed.predictions, computed.user_mae, ctx.workers)
    windows = specs["estimators"].workloads[0].windows
    prestate = windows.prestate if windows is not None else None
    settings = {
        "workload": f"Marconi100-like generator, {setting.jobs:,} jobs per seed",
        "windows": f"{setting.windows} × 24 h per seed, prestate = {prestate}",
        "platform": "marconi100 (980 nodes, dynamic range 719,880 W)",
        "estimators campaign": f"EASY+PC, caps {CAPS}, 3-h window at t = 0, 11 estimators + uncapped EASY baselines",
        "policies campaign": "cap 0.5, gaussian99, real and predicted: " + ", ".join(POLICY_LABELS.values()),
        "post-window cap": getattr(specs["estimators"].grid, "post_window_cap", "dynamic range (spec default)"),
        "runs": f"{results.height:,} ({(results['kind'] == 'run').sum():,} capped, "
        f"{(results['kind'] == 'baseline').sum():,} baselines) in {run_seconds:.0f} s on {ctx.workers} "
        "worker(s)",
        "sensitivity": f"{len(rows)} rows in {sens_seconds:.0f} s (variant campaigns: "
        + ("on" if wanted(ctx) else "off")
        + ")",
        "rerun": "wattsched campaign run campaign.toml --output DIR (and campaign-policies.toml)",
    }
    if prestate is True:
        notes.append(
            'This campaign spec has no `prestate = "requeue"`; the windows were cut with prestarted jobs '
            "(see the issue 14 notes): the trespass claims are not the paper's construction."
        )
    return PaperRun(
        results=_flat(results),
        claims=computed.claims,
        figures=figures,
        settings=settings,
        notes=notes,
        per_seed=computed.per_seed,
        sensitivity=rows,
    )


def draw_figures(
    results: pl.DataFrame, out: Path, predictions: pl.DataFrame | None, user_mae: pl.DataFrame, workers: int = 1
) -> list[Path]:
    """Figs. 4–6 (estimators: power in the window, turnaround increase, time above the cap, breaks), Fig. 7 (the
    four policies) and Figs. 2–3 (the predictors), PNG and SVG, in ``out/figures``; the PNG paths, in that order.

    Each figure is one task over ``workers`` processes: matplotlib's layout and rendering is single-threaded and
    took a minute of the quick run on one core (docs/performance.md, issue 32); the files are the same."""
    folder = out / "figures"
    est = _plottable(results.filter(pl.col("experiment") == "estimators"))
    pol = _plottable(results.filter(pl.col("experiment") == "policies"))
    tasks: list[tuple[Any, ...]] = [("metric", est, key, folder) for key in FIGURE_METRICS]
    tasks += [("policies", pol, folder), ("predictors", predictions, user_mae, folder)]
    paths = [p for batch in map_tasks(_draw, tasks, workers=max(1, min(workers, len(tasks)))) for p in batch]
    return [p for p in paths if p.suffix == ".png"]


#: Figs. 4–6's metrics, one figure each.
FIGURE_METRICS = ("power_utilisation", "turnaround_increase", "time_above_cap", "max_instantaneous_break")


def _plottable(results: pl.DataFrame) -> pl.DataFrame:
    """The columns a figure reads (a task's frame is pickled to a worker: no Python objects)."""
    return results.drop([c for c, t in results.schema.items() if t == pl.Object])


def _draw(task: tuple[Any, ...]) -> list[Path]:
    """Draw one figure (a picklable task of :func:`draw_figures`); the paths written."""
    from wattsched.report.metric_figures import plot_metric, plot_policies  # matplotlib: not in the spawned workers

    kind, *args = task
    if kind == "predictors":
        predictions, user_mae, folder = args
        return draw_predictor_figures(predictions, user_mae, folder)
    if kind == "metric":
        frame, key, folder = args
        return plot_metric(frame, key, folder)
    frame, folder = args
    return plot_policies(frame, folder, labels=POLICY_LABELS)


def _flat(results: pl.DataFrame) -> pl.DataFrame:
    """The results table without nested columns (parquet-safe, one row per run)."""
    nested = [c for c, t in results.schema.items() if t.is_nested() or t == pl.Object]
    return results.drop(nested)
