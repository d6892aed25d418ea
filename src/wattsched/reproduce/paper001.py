"""Paper 001 (Galleguillos et al., "Data-driven job dispatching in HPC systems"): the dispatcher × runtime-estimate
experiment on the Eurora instances, with the paper's metrics and its claims C001-01…13.

What runs: SJF, LJF, EBF, PRB and CPH × W (walltime), D (the data-driven rule cascade, online in the simulation:
each job predicted at submission from the jobs the simulation has completed, starting from the sample's jobs
that ended before the instance's first submission, as the paper's continuous trace would) and R (real durations)
on the Eurora instances of the shared data (``eurora/historical_traces``: 206 instances of 50–1,000 real jobs,
5,930 distinct jobs of 2014-03-31…04-04), one simulation per instance × combination, run as a dispatch campaign
(:mod:`wattsched.studies.multires.experiment`, resumable under ``OUT/campaign``).

- **quick**: per seed, ``QUICK_PER_CLASS`` instances of every size class (50, 100, …, 1000 jobs) drawn with the
  seed; the spread of every value is over these seeded samples.
- **full** (default): all 206 instances; the spread is over instances (the seeds do not change the instances).

Options (``wattsched reproduce 001 --set NAME=VALUE``, :data:`OPTIONS`; docs/decisions.md):

- ``ewt``: the expected waiting time per queue that PRB and CPH rank by ([AMBIG-1.5]). ``queues-file`` (default):
  the per-queue waits of the shared ``system_configs/system_queues`` (the authors' own simulator's table; the
  traces' queue ``R``, which the table lacks, gets 1,800 s); ``constant``: 1,800 s for every queue.
- ``cph``: CPH's budget per CP solve. ``det=X``, a CP-SAT deterministic-time limit (default ``DEFAULT_CPH``,
  reproducible; ``bench/cph_budget.py`` measures which X matches 1 s), or ``wall=X`` wall-clock seconds (the
  paper's ``wall=1``; the greedy plan is CP-SAT's checked first solution). ``$WATTSCHED_P001_CPH`` still sets it
  when ``--set cph`` is not given.

Metrics (the paper's §5): slowdown ``(wait + p)/p`` (p floored at 1 s; the Eurora jobs last ≥ 11 s, so the floor
never binds) over the jobs that waited in at least one combination of their instance (the paper removes those
"dispatched immediately as they arrive"); mean per instance, then mean over the instances that have such jobs.
Queue length: per instance, the mean number of queued jobs over the seconds where some combination has a queue;
then the mean over instances. C001-01/02 are not checkable: the MAE of the rules (trace protocol) and of the
walltime over the 5,930 distinct jobs is shown as a stand-in for the paper's 372,321 jobs with their names.

Seeds: in the quick setting every claim is also computed on each seed's sample alone (``PaperRun.per_seed``, the
seed rule of ``claims.judge_seeds``); in the full setting the seeds do not change the instances, so there is no
per-seed verdict and the spread is over instances.

Criteria of the order claims (docs/decisions.md): "unchanged" (C001-07, LJF "does not benefit" in C001-13) is a
relative change of at most ``UNCHANGED`` (10%); "comparable" (C001-10) is within ``COMPARABLE`` (25%, the claims'
number band) of the mean of PRB and CPH; "between" (C001-08) is ``min(W, R) ≤ D ≤ max(W, R)``; a decrease or an
increase is a strict one of the mean.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wattsched.campaign.runner import run_experiment
from wattsched.core.schema import sort_queue_order
from wattsched.core.store import MANIFEST, read_manifest
from wattsched.predict.runtime import predict_runtime
from wattsched.reproduce.paper001_claims import (
    COMPARABLE,
    DISPATCHERS,
    ESTIMATES,
    UNCHANGED,
    Table,
    claims,
    label,
    predicates,
)
from wattsched.reproduce.runner import PaperRun, ReproduceContext, ReproduceError, per_seed_claims
from wattsched.studies.multires.eurora import read_queue_config
from wattsched.studies.multires.experiment import DispatchSpec
from wattsched.studies.multires.figures import plot_durations, plot_figures
from wattsched.studies.multires.results import instance_metrics, load_dispatch_jobs, queue_distributions
from wattsched.workload.eurora import read_eurora

__all__ = ["COMPARABLE", "DISPATCHERS", "ESTIMATES", "UNCHANGED", "predicates", "run"]

SIZE_CLASSES = (50, 100, 200, 400, 600, 800, 1000)
#: Instances drawn per size class and seed in the quick setting.
QUICK_PER_CLASS = 1
#: CPH's budget per CP solve unless ``--set cph=…`` or ``$WATTSCHED_P001_CPH`` says otherwise: CP-SAT
#: deterministic time (docs/decisions.md, "CPH's budget": the measurement of bench/cph_budget.py).
DEFAULT_CPH = "det=0.02"
CPH_ENV = "WATTSCHED_P001_CPH"
#: Expected waiting times per queue unless ``--set ewt=…`` says otherwise ([AMBIG-1.5], docs/decisions.md).
DEFAULT_EWT = "queues-file"
EWT_CHOICES = ("queues-file", "constant")
#: The options of ``wattsched reproduce 001 --set NAME=VALUE`` (checked by the runner).
OPTIONS = {
    "ewt": f"expected wait per queue for PRB and CPH: queues-file (system_queues) or constant (1,800 s); "
    f"default {DEFAULT_EWT}",
    "cph": f"CPH's budget per CP solve: det=X (CP-SAT deterministic time) or wall=X (seconds; the paper's wall=1); "
    f"default {DEFAULT_CPH}",
}


def ewt_choice(text: str | None = None) -> str:
    """The ``ewt`` option: ``queues-file`` (default) or ``constant``."""
    choice = (text or DEFAULT_EWT).strip()
    if choice not in EWT_CHOICES:
        raise ReproduceError(f"ewt must be one of {', '.join(EWT_CHOICES)}, got {choice!r}")
    return choice


def cph_budget(text: str | None = None) -> dict[str, Any]:
    """The ``[cph]`` campaign fields of a budget text: ``det=X`` (deterministic time X per solve) or ``wall=X``
    (wall-clock X s, the greedy plan as CP-SAT's first solution: the paper's setting with X = 1). None: the
    environment's ``$WATTSCHED_P001_CPH``, else :data:`DEFAULT_CPH`."""
    text = (text if text is not None else os.environ.get(CPH_ENV, DEFAULT_CPH)).strip()
    kind, _, value = text.partition("=")
    try:
        x = float(value)
    except ValueError:
        x = -1.0
    if kind not in ("det", "wall") or x <= 0:
        raise ReproduceError(f"cph must be det=SECONDS or wall=SECONDS (e.g. det=0.02, wall=1), got {text!r}")
    return {"deterministic_time": x} if kind == "det" else {"time_limit_s": x}


def instance_classes(base: Path) -> dict[int, list[Path]]:
    """The instance files per size class (the folder name), sorted."""
    classes = {size: sorted((base / str(size)).glob("*.log_crypt")) for size in SIZE_CLASSES}
    empty = [s for s, f in classes.items() if not f]
    if empty:
        raise ReproduceError(f"{base}: no instances in size class(es) {empty}")
    return classes


def sample_instances(classes: dict[int, list[Path]], seed: int, per_class: int) -> list[Path]:
    """``per_class`` instances of every size class, drawn without replacement with ``seed``."""
    rng = np.random.default_rng(seed)
    picked = []
    for size in SIZE_CLASSES:
        files = classes[size]
        idx = rng.choice(len(files), size=min(per_class, len(files)), replace=False)
        picked += [files[i] for i in sorted(idx)]
    return picked


def prediction_error(base: Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Per distinct job of all instances: absolute error (s) of the rules (trace protocol: predicted at submission
    from the jobs the trace shows completed) and of the walltime; and facts about the sample's durations."""
    jobs, _, _ = read_eurora(base)
    jobs = sort_queue_order(jobs)
    pred = predict_runtime(jobs, "rules", "trace")
    truth = jobs["runtime"].cast(pl.Float64)
    errors = pl.DataFrame(
        {
            "runtime": truth,
            "rules": (pred["pred_runtime"] - truth).abs(),
            "walltime": (jobs["walltime"] - truth).abs(),
            "under": pred["pred_runtime"] < truth,
            "rule": pred["pred_runtime_rule"],
            "day": (jobs["submit_time"] // 86_400).cast(pl.Int64),
        }
    )
    p = truth.to_numpy()
    cpu = p * jobs["cores"].cast(pl.Float64).to_numpy()
    facts = {
        "jobs": jobs.height,
        "users": jobs["user_id"].n_unique(),
        "names": jobs["name"].n_unique(),
        "max_runtime_h": float(p.max() / 3600),
        "max_walltime_h": float(jobs["walltime"].to_numpy().max() / 3600),
        "share_short": float((p < 3600).mean()),
        "share_medium": float(((p >= 3600) & (p <= 43_200)).mean()),
        "share_long": float((p > 43_200).mean()),
        "cpu_short": float(cpu[p < 3600].sum() / cpu.sum()),
        "cpu_medium": float(cpu[(p >= 3600) & (p <= 43_200)].sum() / cpu.sum()),
        "cpu_long": float(cpu[p > 43_200].sum() / cpu.sum()),
        "rule1": float((pred["pred_runtime_rule"] == 1).to_numpy().mean()),
        "under": float(errors["under"].to_numpy().mean()),
        "wall_over_runtime": float(np.median(jobs["walltime"].to_numpy() / np.maximum(p, 1.0))),
        # SJF and LJF use only the order of the estimates: how well each estimate ranks the true durations
        "rank_w": _spearman(jobs["walltime"], truth),
        "rank_d": _spearman(pred["pred_runtime"], truth),
    }
    return errors, facts


def _spearman(a: pl.Series, b: pl.Series) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    frame = pl.DataFrame({"a": a.cast(pl.Float64), "b": b.cast(pl.Float64)})
    return float(frame.select(pl.corr("a", "b", method="spearman")).item())


def run_campaign(
    ctx: ReproduceContext, files: list[Path], cph: dict[str, Any], history: Path, ewt: str, configs: Path
) -> Path:
    """Run (or resume) the dispatch campaign of ``files`` under ``ctx.out/campaign``; the rules predictor of each
    instance starts from the jobs of ``history`` that ended before the instance's first submission; the machine
    and its queues' expected waits (per ``ewt``) are read from the data's ``system_configs`` (``configs``)."""
    spec = DispatchSpec(
        kind="dispatch",
        name="p001",
        instances=[str(f) for f in files],
        config_dir=str(configs),
        ewt=ewt,
        dispatchers=list(DISPATCHERS),
        estimates=list(ESTIMATES),
        cph=cph,
        history=[str(history)],
    )
    out = ctx.out / "campaign"
    manifest = out / MANIFEST
    if manifest.exists() and read_manifest(out).get("spec") != spec.model_dump():  # damaged: one line naming it
        shutil.rmtree(out)  # an earlier reproduction with other instances or settings: start afresh
    total = len(files) * len(DISPATCHERS) * len(ESTIMATES)
    ctx.step(
        f"simulating {len(files)} instance(s) × {len(DISPATCHERS)} dispatchers × {len(ESTIMATES)} estimates "
        f"= {total} runs on {ctx.workers} worker(s)"
    )
    bar = iter(ctx.track(range(total), total, "runs"))
    seen = [0]

    def progress(done: int, _total: int) -> None:
        while seen[0] < done:
            next(bar, None)
            seen[0] += 1

    run_experiment(spec, out, workers=ctx.workers, progress=progress)
    for _ in bar:
        pass
    return out


def run(ctx: ReproduceContext) -> PaperRun:
    """The paper's experiment (see the module docstring)."""
    base = ctx.data("eurora/historical_traces", "the Eurora instances")
    configs = ctx.data("eurora/system_configs", "Eurora's node and queue tables")
    classes = instance_classes(base)
    cph = cph_budget(ctx.options.get("cph"))
    ewt = ewt_choice(ctx.options.get("ewt"))
    if ctx.quick:
        samples_files = {s: sample_instances(classes, s, QUICK_PER_CLASS) for s in ctx.seeds}
    else:
        everything = [f for size in SIZE_CLASSES for f in classes[size]]
        samples_files = {s: everything for s in ctx.seeds}
    files = sorted({f for fs in samples_files.values() for f in fs})
    ctx.step("prediction error of the rules and of the walltime over every distinct job")
    ctx.phase("prediction error over every distinct job")
    errors, facts = prediction_error(base)
    ctx.phase("the dispatch campaign's runs (CPH's solves included)")
    out = run_campaign(ctx, files, cph, base, ewt, configs)
    ctx.step("metrics per instance (moved jobs, slowdown, queue length)")
    ctx.phase("metrics per instance")
    runs = instance_metrics(out)
    size = {f.stem: int(f.parent.name) for f in files}
    runs = runs.with_columns(pl.col("instance").replace_strict(size, return_dtype=pl.Int64).alias("size_class"))
    runs = runs.with_columns(pl.when(pl.col("queue_s") > 0).then(pl.col("queue")).alias("queue"))
    jobs = load_dispatch_jobs(out)
    samples = {s: [f.stem for f in fs] for s, fs in samples_files.items()}
    table = Table(runs, samples, ctx.quick, jobs)
    ctx.step("figures")
    ctx.phase("figures")
    figures = [p for p in plot_figures(jobs, queue_distributions(out), errors, ctx.out) if p.suffix == ".png"]
    figures.insert(0, plot_durations(errors, facts, ctx.out))
    ctx.phase("claims, pooled and per seed")
    results = claims(table, errors, facts)
    per_seed = {}
    if ctx.quick:
        per_seed = per_seed_claims(
            ctx.seeds, lambda seed: claims(table.seed(seed), errors, facts), skip=("C001-01", "C001-02", "C001-03")
        )
    cp = runs.filter(pl.col("dispatcher") == "cph")
    contended = runs.filter(pl.col("moved") > 0)["instance"].n_unique()
    settings = {
        "instances": f"{len(files)} of 206" + (f" ({QUICK_PER_CLASS} per size class per seed)" if ctx.quick else ""),
        "instances with waiting jobs": contended,
        "combinations": "SJF, LJF, EBF, PRB, CPH × W (walltime), D (rules, online), R (real)",
        "expected wait per queue (PRB, CPH)": (
            "system_queues: "
            + ", ".join(f"{q} {w:,.0f} s" for q, w in read_queue_config(configs / "system_queues").items())
            + "; queue R (not in the table) 1,800 s"
            if ewt == "queues-file"
            else "1,800 s for every queue (constant)"
        ),
        "CPH budget per solve": (
            f"deterministic {cph['deterministic_time']} (CP-SAT)"
            if "deterministic_time" in cph
            else f"wall-clock {cph['time_limit_s']} s, the greedy plan as first solution (the paper's)"
        ),
        "CPH CP time (sum)": f"{float(cp['cp_total_s'].sum()):,.0f} s in {int(cp['cp_solved'].sum()):,} passes"
        " not skipped",
        "simulation time (sum over runs)": f"{float(runs['run_s'].sum()):,.0f} s",
        "seeds used": "to draw the instances" if ctx.quick else "no (every instance runs)",
        "spread": "over seeded instance samples" if ctx.quick else "over instances",
    }
    notes = [
        f"The Eurora data here is a 5-day sample (2014-03-31…04-04, {facts['jobs']:,} distinct jobs in 206 "
        f"overlapping instances), not the paper's 10 months (372,321 jobs). Longest job "
        f"{facts['max_runtime_h']:.1f} h (paper: 24 h); short / medium / long jobs {facts['share_short']:.1%} / "
        f"{facts['share_medium']:.1%} / {facts['share_long']:.1%} (paper 93.15% / 6.82% / 0.03%).",
        f"User and executable names are masked in the public data ({facts['users']} user, {facts['names']} name), so "
        f"the rule cascade matches jobs of every user by queue, walltime and resources; rule 1 (exact profile) "
        f"decides {facts['rule1']:.0%} of the predictions.",
        "Each instance is simulated on its own (the paper simulated one continuous trace); slowdown and queue "
        "length are averaged per instance, then over instances.",
        f"{contended} of {len(files)} instances have a job that waits in some combination; the others carry no "
        f"comparison and are left out of every mean.",
    ]
    if runs.filter(pl.col("moved") > 0).height:
        for column, what in (("slowdown", "Mean slowdown"), ("queue", "Mean queue length")):
            means = table.means(column)
            notes.append(
                f"{what} per combination, mean (min–max over {'seeds' if ctx.quick else 'instances'}): "
                + "; ".join(f"{label(d, e)} {means[d, e].text(digits=2)}" for d in DISPATCHERS for e in ESTIMATES)
            )
    if not ctx.quick:
        notes.append(
            "Seeds: in the full setting every instance runs and the seeds change nothing, so no claim has per-seed "
            "verdicts; each order claim's note says in how many instances it holds (the spread over instances)."
        )
    return PaperRun(results=runs, claims=results, figures=figures, settings=settings, notes=notes, per_seed=per_seed)
