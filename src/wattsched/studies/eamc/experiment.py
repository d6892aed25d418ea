"""Paper 002's evaluation: EAMC and baseline policies on the two-partition DVFS machine (docs/eamc.md).

:func:`run_eamc` simulates one workload under one policy and returns per-job outcomes and the paper's metrics:
makespan, mean response time, the sum of job energies (nodes × power × duration; idle nodes excluded), the sum of
runtimes, the mean chosen frequency (overall and per partition) and the share of jobs that ran on their optimal
partition (ranked first by part_eff at submission; overall and, per partition, among the jobs that ran there).

:func:`run_eamc_grid` runs the paper's grid — mixes × policies × t_weight (× seeds) — on local processes or
Dask, one result file per run (resumable), and :func:`write_eamc_figures` draws the equivalents of Figs. 3–5.
Fig. 6 (system p1/p3) needs the p3 (Gold 6148) model data, which are not public.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from wattsched.campaign.runner import _atomic_parquet, _atomic_write, done_ids
from wattsched.campaign.spec import run_id
from wattsched.core.executors import map_tasks
from wattsched.studies.eamc.dvfs import DVFSPlatform
from wattsched.studies.eamc.energy_model import AppDB
from wattsched.studies.eamc.engine import simulate_partitioned
from wattsched.studies.eamc.policies import EAMC_POLICIES, EAMCOptions, build_entries

METRICS = ("makespan", "mean_response", "sum_energy", "sum_runtime")


@dataclass
class EAMCRun:
    jobs: pl.DataFrame
    metrics: dict[str, Any]


def run_eamc(
    jobs: pl.DataFrame,
    platform: DVFSPlatform,
    appdb: AppDB,
    policy: str,
    options: EAMCOptions | None = None,
    *,
    queue_limit: int = 1000,
) -> EAMCRun:
    """Simulate ``jobs`` (``job_id, submit_time, nodes, runtime, walltime, app_id``; runtime and walltime on the
    primary partition at its highest frequency) under ``policy``."""
    needed = [c for c in ("job_id", "submit_time", "nodes", "runtime", "walltime", "app_id") if c not in jobs.columns]
    if needed:
        raise ValueError(f"an EAMC workload needs column(s) {needed}")
    options = options or EAMCOptions()
    submit = jobs["submit_time"].to_numpy().astype(np.float64)
    nodes = jobs["nodes"].to_numpy().astype(np.int64)
    entries, epm = build_entries(
        policy,
        platform,
        appdb,
        jobs["app_id"].to_numpy(),
        nodes,
        jobs["walltime"].to_numpy().astype(np.float64),
        jobs["runtime"].to_numpy().astype(np.float64),
        submit,
        options,
    )
    part_nodes = np.array([p.nodes for p in platform], dtype=np.int64)
    result = simulate_partitioned(submit, entries, part_nodes, queue_limit=queue_limit)
    e = result.entry
    names = np.asarray(platform.names, dtype=object)
    duration = result.end - result.start
    energy = nodes * entries.power[e] * duration
    out = (
        jobs.select("job_id", "submit_time", "nodes", "app_id")
        .with_columns(
            pl.Series("start_time", result.start),
            pl.Series("end_time", result.end),
            pl.Series("runtime", duration),
            pl.Series("partition", names[entries.partition[e]].astype(str)),
            pl.Series("frequency", entries.frequency[e]),
            pl.Series("energy", energy),
            pl.Series("optimal_partition", names[epm.best].astype(str)),
        )
        .with_columns(
            (pl.col("partition") == pl.col("optimal_partition")).alias("on_optimal"),
            (pl.col("end_time") - pl.col("submit_time")).alias("response"),
        )
    )
    metrics: dict[str, Any] = {
        "jobs": out.height,
        "makespan": float(out["end_time"].max() - out["submit_time"].min()),
        "submit_span": float(out["submit_time"].max() - out["submit_time"].min()),
        "mean_response": float(out["response"].mean()),
        "sum_energy": float(out["energy"].sum()),
        "sum_runtime": float(out["runtime"].sum()),
        "mean_frequency": float(out["frequency"].mean()),
        "share_optimal": float(out["on_optimal"].mean()),
        **result.stats,
    }
    for name in platform.names:
        part = out.filter(pl.col("partition") == name)
        metrics[f"jobs_{name}"] = part.height
        metrics[f"mean_frequency_{name}"] = float(part["frequency"].mean()) if part.height else None
        metrics[f"share_optimal_{name}"] = float(part["on_optimal"].mean()) if part.height else None
        metrics[f"mean_response_{name}"] = float(part["response"].mean()) if part.height else None
        favour = out.filter(pl.col("optimal_partition") == name)  # the jobs whose optimal partition this is
        metrics[f"share_placed_{name}"] = float(favour["on_optimal"].mean()) if favour.height else None
    return EAMCRun(out, metrics)


def grid_runs(
    mixes: list[str],
    policies: list[str],
    t_weights: list[float],
    seeds: list[int],
    n_jobs: int,
    *,
    threshold_mode: str = "relative",
    load: float = 1.0,
) -> list[dict[str, Any]]:
    """The grid's runs. ``threshold_mode`` ([AMBIG-2.4]) and the workload's offered ``load`` enter a run's
    parameters (and id) only when they differ from the library defaults, so older result folders still resume."""
    extra: dict[str, Any] = {}
    if threshold_mode != "relative":
        extra["threshold_mode"] = threshold_mode
    if load != 1.0:
        extra["load"] = load
    runs = []
    for seed in seeds:
        for mix in mixes:
            for tw in t_weights:
                for policy in policies:
                    params = {"mix": mix, "policy": policy, "t_weight": tw, "seed": seed, "jobs": n_jobs, **extra}
                    runs.append({"id": run_id(params), **params})
    return runs


def execute_eamc_run(run: dict[str, Any], out_dir: str, data_dir: str | None) -> dict[str, Any]:
    """One grid run: generate the workload, simulate, write the jobs then (atomically, last) the summary."""
    from wattsched.studies.eamc.dvfs import eamc_p1p2
    from wattsched.studies.eamc.energy_model import eamc_appdb
    from wattsched.studies.eamc.workloads import generate_eamc_workload

    t0 = time.perf_counter()
    platform = eamc_p1p2(data_dir)
    appdb = eamc_appdb(data_dir, platform)
    jobs = generate_eamc_workload(run["mix"], run["jobs"], seed=run["seed"], load=run.get("load", 1.0))
    options = EAMCOptions(t_weight=run["t_weight"], threshold_mode=run.get("threshold_mode", "relative"))
    result = run_eamc(jobs, platform, appdb, run["policy"], options)
    out = Path(out_dir) / "results"
    out.mkdir(parents=True, exist_ok=True)
    _atomic_parquet(result.jobs, out / f"{run['id']}.jobs.parquet")
    summary = {**run, **result.metrics, "run_s": time.perf_counter() - t0, "worker": os.getpid()}
    _atomic_write(out / f"{run['id']}.json", json.dumps(summary, indent=1))
    return summary


def run_eamc_grid(
    out: str | Path,
    *,
    data_dir: str | None = None,
    mixes: list[str] | None = None,
    policies: list[str] | None = None,
    t_weights: list[float] | None = None,
    seeds: list[int] | None = None,
    n_jobs: int = 5000,
    executor: str = "local",
    workers: int = 1,
    address: str | None = None,
    threshold_mode: str = "relative",
    load: float = 1.0,
    progress: Any = None,
) -> tuple[int, int, float]:
    """Run every grid run not done yet in ``out``; returns (runs, executed now, seconds). ``progress`` wraps the
    iterator of finished runs (a progress bar: ``progress(iterable, total)``)."""
    t0 = time.perf_counter()
    out = Path(out)
    runs = grid_runs(
        mixes or ["W13", "W33", "W50"],
        policies or list(EAMC_POLICIES),
        t_weights or [1.0, 1.5],
        seeds or [0],
        n_jobs,
        threshold_mode=threshold_mode,
        load=load,
    )
    bad = [r["policy"] for r in runs if r["policy"] not in EAMC_POLICIES]
    if bad:
        raise ValueError(f"unknown EAMC policy {bad[0]!r}; choose from {', '.join(EAMC_POLICIES)}")
    out.mkdir(parents=True, exist_ok=True)
    done = done_ids(out)
    todo = [r for r in runs if r["id"] not in done]
    fn = partial(execute_eamc_run, out_dir=str(out.resolve()), data_dir=data_dir)
    done_runs = map_tasks(
        fn,
        todo,
        executor=executor,
        workers=workers,
        address=address,
        ordered=False,
        keys=[f"eamc-{r['id']}" for r in todo],
    )
    for _ in progress(done_runs, len(todo)) if progress is not None else done_runs:
        pass
    return len(runs), len(todo), time.perf_counter() - t0


def load_eamc_results(out: str | Path) -> pl.DataFrame:
    files = sorted((Path(out) / "results").glob("*.json"))
    if not files:
        raise ValueError(f"{out}: no finished EAMC runs")
    return pl.DataFrame([json.loads(f.read_text()) for f in files], infer_schema_length=None)


def improvement(results: pl.DataFrame, baseline: str, metrics: tuple[str, ...] = METRICS) -> pl.DataFrame:
    """Per run: the improvement (%) of each metric over ``baseline`` on the same (mix, t_weight, seed):
    positive is better (shorter, or less energy)."""
    key = ["mix", "t_weight", "seed"]
    base = results.filter(pl.col("policy") == baseline).select(*key, *(pl.col(m).alias(f"{m}_base") for m in metrics))
    joined = results.join(base, on=key, how="inner")
    return joined.select(*key, "policy", *((100.0 * (1 - pl.col(m) / pl.col(f"{m}_base"))).alias(m) for m in metrics))


#: One colour and one label per policy, the same in every figure.
POLICY_STYLE = {
    "base-slurm": ("#7f7f7f", "Base Slurm"),
    "min-runtime": ("#1f77b4", "Min runtime"),
    "min-energy": ("#2ca02c", "Min energy"),
    "eamc-reorder": ("#ff7f0e", "Reorder"),
    "eamc-priorityinc": ("#9467bd", "PriorityInc"),
    "eamc-priorityinc-v": ("#d62728", "PriorityInc-V"),
}
METRIC_LABELS = {
    "makespan": "makespan",
    "mean_response": "response",
    "sum_energy": "energy",
    "sum_runtime": "runtime",
    "mean_response_p1": "response p1",
    "mean_response_p2": "response p2",
    "share_optimal": "both partitions",
    "share_optimal_p2": "jobs run on p2",
}


def _bars(ax: Any, frame: pl.DataFrame, groups: list[str], policies: list[str], floor: float | None = None) -> None:
    """Grouped bars: x = ``groups`` (metric columns of ``frame``), one bar per policy: the mean over the rows
    (seeds) with a min–max whisker. Bars below ``floor`` are cut there and labelled with their value."""
    width = 0.8 / max(len(policies), 1)
    for i, pol in enumerate(policies):
        sub = frame.filter(pl.col("policy") == pol)
        if not sub.height:
            continue
        colour, label = POLICY_STYLE[pol]
        x = np.arange(len(groups)) + (i - (len(policies) - 1) / 2) * width
        mean = np.array([sub[g].mean() for g in groups], dtype=float)
        lo = np.array([sub[g].min() for g in groups], dtype=float)
        hi = np.array([sub[g].max() for g in groups], dtype=float)
        shown = mean if floor is None else np.maximum(mean, floor)
        ax.bar(x, shown, width, color=colour, label=label)
        whisk = np.isfinite(lo) & (floor is None or lo > floor)
        ax.errorbar(
            x[whisk],
            mean[whisk],
            yerr=[mean[whisk] - lo[whisk], hi[whisk] - mean[whisk]],
            fmt="none",
            ecolor="black",
            elinewidth=0.7,
            capsize=1.5,
        )
        if floor is not None:
            for xx, m in zip(x, mean, strict=True):
                if m < floor:
                    ax.text(xx, floor, f"{m:.0f}", rotation=90, ha="center", va="bottom", fontsize=6.5, color="white")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(np.arange(len(groups)), [METRIC_LABELS.get(g, g) for g in groups])
    ax.grid(axis="y", lw=0.3, alpha=0.6)


def _legend(fig: Figure, policies: list[str]) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=POLICY_STYLE[p][0], label=POLICY_STYLE[p][1]) for p in policies]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False, fontsize=8)


def draw_eamc_figures(results: pl.DataFrame, report: str | Path) -> list[Path]:
    """Figs. 3–5 equivalents (PNG, SVG) from a grid's results (one row per run): bars are means over seeds with
    min–max whiskers; each policy has one colour in every figure; facets wrap (rows = mixes, columns =
    t_weight); a bar far below the others (Base Slurm's response) is cut at the axis floor and labelled."""
    report = Path(report)
    report.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    policies = [p for p in EAMC_POLICIES if p in set(results["policy"])]
    mixes = sorted(set(results["mix"]))
    tws = sorted(set(results["t_weight"]))

    def save(fig: Figure, name: str) -> None:
        for ext in ("png", "svg"):
            fig.savefig(report / f"{name}.{ext}", dpi=130, bbox_inches="tight")
            paths.append(report / f"{name}.{ext}")

    def faceted(
        frame: pl.DataFrame,
        shown: list[str],
        groups: list[str],
        rows: list[str],
        title: str,
        ylabel: str,
        name: str,
        floor: float | None = None,
    ) -> None:
        fig = Figure(figsize=(4.6 * len(tws), 2.9 * len(rows) + 0.5), layout="constrained")
        axes = fig.subplots(len(rows), len(tws), squeeze=False, sharey=True)
        for r, mix in enumerate(rows):
            for c, tw in enumerate(tws):
                ax = axes[r][c]
                _bars(ax, frame.filter((pl.col("mix") == mix) & (pl.col("t_weight") == tw)), groups, shown, floor)
                ax.set_title(f"{mix}, t_weight {tw:g}", fontsize=9)
                if c == 0:
                    ax.set_ylabel(ylabel, fontsize=8)
        if floor is not None:
            axes[0][0].set_ylim(bottom=floor)
        _legend(fig, shown)
        fig.suptitle(title)
        save(fig, name)

    if "base-slurm" in policies and "W13" in mixes:
        vs_base = improvement(results, "base-slurm").filter(pl.col("mix") == "W13")
        faceted(
            vs_base,
            [p for p in policies if p != "base-slurm"],
            list(METRICS),
            ["W13"],
            "Savings over Base Slurm, W13 (paper Fig. 3)",
            "improvement over Base Slurm (%)",
            "fig3_vs_base_slurm",
        )
    if "min-runtime" in policies:
        vs_rt = improvement(results, "min-runtime", (*METRICS, "mean_response_p1", "mean_response_p2"))
        shown = [p for p in policies if p != "min-runtime"]
        low = float(vs_rt.filter(pl.col("policy") != "base-slurm").select(METRICS).min().min_horizontal()[0])
        floor = min(-60.0, 10 * np.floor(low / 10) - 10)
        faceted(
            vs_rt,
            shown,
            list(METRICS),
            mixes,
            "Improvement over Min runtime (paper Fig. 4)",
            "improvement over Min runtime (%)",
            "fig4_vs_min_runtime",
            floor,
        )
        faceted(
            vs_rt,
            [p for p in shown if p != "base-slurm"],
            ["mean_response", "mean_response_p1", "mean_response_p2"],
            mixes,
            "Response time per partition against Min runtime",
            "improvement over Min runtime (%)",
            "fig4b_response_per_partition",
            floor,
        )
    share = results.with_columns(pl.col("share_optimal", "share_optimal_p2") * 100)
    faceted(
        share,
        policies,
        ["share_optimal", "share_optimal_p2"],
        mixes,
        "Jobs on their optimal partition (paper Fig. 5)",
        "% of jobs on their optimal partition",
        "fig5_optimal_partition",
    )
    return paths


def write_eamc_figures(out: str | Path, report: str | Path) -> list[Path]:
    """Figs. 3–5 (:func:`draw_eamc_figures`) and ``summary.csv`` (means over seeds) of the grid in ``out``."""
    results = load_eamc_results(out)
    paths = draw_eamc_figures(results, report)
    summary = (
        results.group_by("mix", "t_weight", "policy")
        .agg(
            pl.col(m).mean()
            for m in (*METRICS, "mean_frequency", "mean_frequency_p1", "mean_frequency_p2", "share_optimal", "run_s")
        )
        .sort("mix", "t_weight", "policy")
    )
    summary.write_csv(Path(report) / "summary.csv")
    paths.append(Path(report) / "summary.csv")
    return paths
