"""Paper 002's evaluation: EAMC and baseline policies on the two-partition DVFS machine (reference spec §3.5).

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
from wattsched.executors import map_tasks
from wattsched.platform.dvfs import DVFSPlatform
from wattsched.platform.energy_model import AppDB
from wattsched.sched.eamc import EAMC_POLICIES, EAMCOptions, build_entries
from wattsched.sim.partitioned import simulate_partitioned

METRICS = ("makespan", "mean_response", "sum_energy", "sum_runtime")


@dataclass
class EAMCRun:
    jobs: pl.DataFrame
    metrics: dict[str, Any]


def run_eamc(jobs: pl.DataFrame, platform: DVFSPlatform, appdb: AppDB, policy: str,
             options: EAMCOptions | None = None, *, queue_limit: int = 1000) -> EAMCRun:
    """Simulate ``jobs`` (``job_id, submit_time, nodes, runtime, walltime, app_id``; runtime and walltime on the
    primary partition at its highest frequency) under ``policy``."""
    needed = [c for c in ("job_id", "submit_time", "nodes", "runtime", "walltime", "app_id") if c not in jobs.columns]
    if needed:
        raise ValueError(f"an EAMC workload needs column(s) {needed}")
    options = options or EAMCOptions()
    submit = jobs["submit_time"].to_numpy().astype(np.float64)
    nodes = jobs["nodes"].to_numpy().astype(np.int64)
    entries, epm = build_entries(policy, platform, appdb, jobs["app_id"].to_numpy(), nodes,
                                 jobs["walltime"].to_numpy().astype(np.float64),
                                 jobs["runtime"].to_numpy().astype(np.float64), submit, options)
    part_nodes = np.array([p.nodes for p in platform], dtype=np.int64)
    result = simulate_partitioned(submit, entries, part_nodes, queue_limit=queue_limit)
    e = result.entry
    names = np.asarray(platform.names, dtype=object)
    duration = result.end - result.start
    energy = nodes * entries.power[e] * duration
    out = jobs.select("job_id", "submit_time", "nodes", "app_id").with_columns(
        pl.Series("start_time", result.start), pl.Series("end_time", result.end),
        pl.Series("runtime", duration), pl.Series("partition", names[entries.partition[e]].astype(str)),
        pl.Series("frequency", entries.frequency[e]), pl.Series("energy", energy),
        pl.Series("optimal_partition", names[epm.best].astype(str)),
    ).with_columns((pl.col("partition") == pl.col("optimal_partition")).alias("on_optimal"),
                   (pl.col("end_time") - pl.col("submit_time")).alias("response"))
    metrics: dict[str, Any] = {
        "jobs": out.height,
        "makespan": float(out["end_time"].max() - out["submit_time"].min()),
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
    return EAMCRun(out, metrics)


def grid_runs(mixes: list[str], policies: list[str], t_weights: list[float], seeds: list[int],
              n_jobs: int) -> list[dict[str, Any]]:
    runs = []
    for seed in seeds:
        for mix in mixes:
            for tw in t_weights:
                for policy in policies:
                    params = {"mix": mix, "policy": policy, "t_weight": tw, "seed": seed, "jobs": n_jobs}
                    runs.append({"id": run_id(params), **params})
    return runs


def execute_eamc_run(run: dict[str, Any], out_dir: str, data_dir: str | None) -> dict[str, Any]:
    """One grid run: generate the workload, simulate, write the jobs then (atomically, last) the summary."""
    from wattsched.platform.dvfs import eamc_p1p2
    from wattsched.platform.energy_model import eamc_appdb
    from wattsched.workload.generate.eamc import generate_eamc_workload

    t0 = time.perf_counter()
    platform = eamc_p1p2(data_dir)
    appdb = eamc_appdb(data_dir, platform)
    jobs = generate_eamc_workload(run["mix"], run["jobs"], seed=run["seed"])
    result = run_eamc(jobs, platform, appdb, run["policy"], EAMCOptions(t_weight=run["t_weight"]))
    out = Path(out_dir) / "results"
    out.mkdir(parents=True, exist_ok=True)
    _atomic_parquet(result.jobs, out / f"{run['id']}.jobs.parquet")
    summary = {**run, **result.metrics, "run_s": time.perf_counter() - t0, "worker": os.getpid()}
    _atomic_write(out / f"{run['id']}.json", json.dumps(summary, indent=1))
    return summary


def run_eamc_grid(out: str | Path, *, data_dir: str | None = None, mixes: list[str] | None = None,
                  policies: list[str] | None = None, t_weights: list[float] | None = None,
                  seeds: list[int] | None = None, n_jobs: int = 5000, executor: str = "local", workers: int = 1,
                  address: str | None = None) -> tuple[int, int, float]:
    """Run every grid run not done yet in ``out``; returns (runs, executed now, seconds)."""
    t0 = time.perf_counter()
    out = Path(out)
    runs = grid_runs(mixes or ["W13", "W33", "W50"], policies or list(EAMC_POLICIES), t_weights or [1.0, 1.5],
                     seeds or [0], n_jobs)
    bad = [r["policy"] for r in runs if r["policy"] not in EAMC_POLICIES]
    if bad:
        raise ValueError(f"unknown EAMC policy {bad[0]!r}; choose from {', '.join(EAMC_POLICIES)}")
    out.mkdir(parents=True, exist_ok=True)
    done = done_ids(out)
    todo = [r for r in runs if r["id"] not in done]
    fn = partial(execute_eamc_run, out_dir=str(out.resolve()), data_dir=data_dir)
    for _ in map_tasks(fn, todo, executor=executor, workers=workers, address=address, ordered=False,
                       keys=[f"eamc-{r['id']}" for r in todo]):
        pass
    return len(runs), len(todo), time.perf_counter() - t0


def load_eamc_results(out: str | Path) -> pl.DataFrame:
    files = sorted((Path(out) / "results").glob("*.json"))
    if not files:
        raise ValueError(f"{out}: no finished EAMC runs")
    return pl.DataFrame([json.loads(f.read_text()) for f in files], infer_schema_length=None)


def improvement(results: pl.DataFrame, baseline: str) -> pl.DataFrame:
    """Per run: the improvement (%) of each metric over ``baseline`` on the same (mix, t_weight, seed):
    positive is better (shorter, or less energy)."""
    key = ["mix", "t_weight", "seed"]
    base = results.filter(pl.col("policy") == baseline).select(*key, *(pl.col(m).alias(f"{m}_base") for m in METRICS))
    joined = results.join(base, on=key, how="inner")
    return joined.select(*key, "policy", *((100.0 * (1 - pl.col(m) / pl.col(f"{m}_base"))).alias(m)
                                           for m in METRICS))


def write_eamc_figures(out: str | Path, report: str | Path) -> list[Path]:
    """Figs. 3–5 equivalents (PNG, SVG) and ``summary.csv`` (means over seeds)."""
    results = load_eamc_results(out)
    report = Path(report)
    report.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    policies = [p for p in EAMC_POLICIES if p in set(results["policy"])]

    def save(fig: Figure, name: str) -> None:
        for ext in ("png", "svg"):
            fig.savefig(report / f"{name}.{ext}", dpi=120, bbox_inches="tight")
            paths.append(report / f"{name}.{ext}")

    def bars(frame: pl.DataFrame, title: str, name: str, shown: list[str]) -> None:
        groups = sorted(set(frame.select("mix", "t_weight").iter_rows()))
        fig = Figure(figsize=(4.2 * len(groups), 4))
        for g, (mix, tw) in enumerate(groups):
            ax = fig.add_subplot(1, len(groups), g + 1)
            sub = frame.filter((pl.col("mix") == mix) & (pl.col("t_weight") == tw)).group_by("policy").agg(
                pl.col(m).mean() for m in METRICS)
            width = 0.8 / max(len(shown), 1)
            for i, pol in enumerate(shown):
                row = sub.filter(pl.col("policy") == pol)
                if row.height:
                    ax.bar(np.arange(len(METRICS)) + i * width, [row[m][0] for m in METRICS], width, label=pol)
            ax.axhline(0, color="black", lw=0.8)
            ax.set_xticks(np.arange(len(METRICS)) + 0.4 - width / 2, ["makespan", "response", "energy", "runtime"],
                          rotation=30)
            ax.set(title=f"{mix}, t_weight {tw:g}", ylabel="improvement (%)" if g == 0 else "")
        fig.axes[0].legend(fontsize=7)
        fig.suptitle(title)
        save(fig, name)

    if "base-slurm" in policies:
        vs_base = improvement(results, "base-slurm").filter(pl.col("mix") == "W13")
        bars(vs_base, "savings over Base Slurm (paper Fig. 3)", "fig3_vs_base_slurm",
             [p for p in policies if p != "base-slurm"])
    if "min-runtime" in policies:
        bars(improvement(results, "min-runtime"), "improvement over Min runtime (paper Fig. 4)", "fig4_vs_min_runtime",
             [p for p in policies if p != "min-runtime"])
    fig = Figure(figsize=(8, 4))
    share = results.group_by("mix", "policy").agg(pl.col("share_optimal").mean(),
                                                  pl.col("share_optimal_p2").mean()).sort("mix", "policy")
    mixes = sorted(set(share["mix"]))
    for k, col in enumerate(("share_optimal", "share_optimal_p2")):
        ax = fig.add_subplot(1, 2, k + 1)
        width = 0.8 / max(len(policies), 1)
        for i, pol in enumerate(policies):
            vals = [share.filter((pl.col("mix") == m) & (pl.col("policy") == pol))[col].mean() or 0 for m in mixes]
            ax.bar(np.arange(len(mixes)) + i * width, [100 * v for v in vals], width, label=pol)
        ax.set_xticks(np.arange(len(mixes)) + 0.4 - width / 2, mixes)
        ax.set(ylabel="% of jobs on their optimal partition", title="both partitions" if k == 0 else "jobs run on p2")
    fig.axes[0].legend(fontsize=7)
    fig.suptitle("jobs on their optimal partition (paper Fig. 5)")
    save(fig, "fig5_optimal_partition")
    summary = results.group_by("mix", "t_weight", "policy").agg(
        pl.col(m).mean() for m in (*METRICS, "mean_frequency", "mean_frequency_p1", "mean_frequency_p2",
                                   "share_optimal", "run_s")).sort("mix", "t_weight", "policy")
    summary.write_csv(report / "summary.csv")
    paths.append(report / "summary.csv")
    return paths
