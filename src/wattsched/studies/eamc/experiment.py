"""Paper 002's evaluation: EAMC and baseline policies on the two-partition DVFS machine (docs/eamc.md).

:func:`run_eamc` simulates one workload under one policy and returns per-job outcomes and the paper's metrics:
makespan, mean response time, the sum of job energies (nodes × power × duration; idle nodes excluded), the sum of
runtimes, the mean chosen frequency (overall and per partition) and the share of jobs that ran on their optimal
partition (ranked first by part_eff at submission; overall and, per partition, among the jobs that ran there).

The paper's grid — mixes × policies × t_weight (× seeds) — is a campaign of kind ``eamc`` (:class:`EAMCSpec`,
:class:`EAMCExperiment`), run by the one campaign runner (``wattsched campaign run``, or its alias ``wattsched
eamc grid``): one result file per run, resumable, on local processes or Dask. :func:`write_eamc_figures` draws
the equivalents of Figs. 3–5 (:mod:`wattsched.studies.eamc.figures`).

```toml
kind = "eamc"
name = "p2"
data_dir = "../shared/data/eamc"     # the en_conf directory or above (default: $WATTSCHED_DATA, ../shared/data)
mixes = ["W13", "W33", "W50"]
policies = ["base-slurm", "min-runtime", "min-energy", "eamc-reorder", "eamc-priorityinc", "eamc-priorityinc-v"]
t_weights = [1.0, 1.5]
seeds = [0]
jobs = 5000
```
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import polars as pl
from pydantic import AfterValidator, Field

from wattsched.core.atomic import atomic_table
from wattsched.core.experiment import Experiment, Run, no_log
from wattsched.core.scalars import as_float, as_number
from wattsched.core.spec import BoundedSpec, known_names
from wattsched.core.store import CampaignLayout, atomic_parquet, run_id, write_result
from wattsched.studies.eamc.dvfs import DVFSPlatform, eamc_p1p2
from wattsched.studies.eamc.energy_model import AppDB, eamc_appdb
from wattsched.studies.eamc.engine import simulate_partitioned
from wattsched.studies.eamc.policies import EAMC_POLICIES, EAMCOptions, build_entries
from wattsched.studies.eamc.results import METRICS, load_eamc_results
from wattsched.studies.eamc.workloads import MIXES, generate_eamc_workload


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
        "makespan": float(as_number(out["end_time"].max()) - as_number(out["submit_time"].min())),
        "submit_span": float(as_number(out["submit_time"].max()) - as_number(out["submit_time"].min())),
        "mean_response": as_float(out["response"].mean()),
        "sum_energy": float(out["energy"].sum()),
        "sum_runtime": float(out["runtime"].sum()),
        "mean_frequency": as_float(out["frequency"].mean()),
        "share_optimal": as_float(out["on_optimal"].mean()),
        **result.stats,
    }
    for name in platform.names:
        part = out.filter(pl.col("partition") == name)
        metrics[f"jobs_{name}"] = part.height
        metrics[f"mean_frequency_{name}"] = as_float(part["frequency"].mean()) if part.height else None
        metrics[f"share_optimal_{name}"] = as_float(part["on_optimal"].mean()) if part.height else None
        metrics[f"mean_response_{name}"] = as_float(part["response"].mean()) if part.height else None
        favour = out.filter(pl.col("optimal_partition") == name)  # the jobs whose optimal partition this is
        metrics[f"share_placed_{name}"] = as_float(favour["on_optimal"].mean()) if favour.height else None
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
    t0 = time.perf_counter()
    platform = eamc_p1p2(data_dir)
    appdb = eamc_appdb(data_dir, platform)
    jobs = generate_eamc_workload(run["mix"], run["jobs"], seed=run["seed"], load=run.get("load", 1.0))
    options = EAMCOptions(t_weight=run["t_weight"], threshold_mode=run.get("threshold_mode", "relative"))
    result = run_eamc(jobs, platform, appdb, run["policy"], options)
    out = Path(out_dir)
    atomic_parquet(result.jobs, CampaignLayout(out).run_table(run["id"], "jobs"))
    summary = {**run, **result.metrics, "run_s": time.perf_counter() - t0, "worker": os.getpid()}
    write_result(out, summary)
    return summary


class EAMCSpec(BoundedSpec):
    """Paper 002's grid as a campaign; see the module docstring. ``threshold_mode`` is PriorityInc-V's threshold
    reading ([AMBIG-2.4]) and ``load`` the workload's offered load."""

    kind: Literal["eamc"]
    name: str = Field(default="eamc", min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    data_dir: str | None = None
    mixes: Annotated[list[str], AfterValidator(known_names(MIXES, "mix(es)"))] = Field(
        default_factory=lambda: ["W13", "W33", "W50"], min_length=1
    )
    policies: Annotated[list[str], AfterValidator(known_names(EAMC_POLICIES, "EAMC policy(ies)"))] = Field(
        default_factory=lambda: list(EAMC_POLICIES), min_length=1
    )
    t_weights: list[float] = Field(default_factory=lambda: [1.0, 1.5], min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    jobs: int = Field(default=5000, gt=0)
    threshold_mode: Literal["relative", "absolute"] = "relative"
    load: float = Field(default=1.0, gt=0)


class EAMCExperiment(Experiment):
    """Paper 002's grid (see the module docstring). The data directory is where inputs are, not what the
    experiment is: it is left out of the spec's hash, so a grid resumes after the data moved."""

    kind: ClassVar[str] = "eamc"
    spec_model = EAMCSpec
    status_keys = ("mix", "policy")
    timing_fields = ("pass_s", "elapsed_s", "run_s", "worker")
    hash_exclude = frozenset({"data_dir"})
    spec: EAMCSpec

    def data_dir(self) -> str | None:
        """The data directory, relative paths taken from ``base`` (the spec file's directory)."""
        d = self.spec.data_dir
        if d is None or self.base is None or Path(d).is_absolute():
            return d
        return str(self.base / d)

    def count_runs(self) -> int:
        """Seeds × mixes × t_weights × policies (:func:`grid_runs`)."""
        s = self.spec
        return len(s.seeds) * len(s.mixes) * len(s.t_weights) * len(s.policies)

    def plan(self, out: Path, log: Callable[[str], None] = no_log) -> list[Run]:
        s = self.spec
        eamc_appdb(self.data_dir(), eamc_p1p2(self.data_dir()))  # fail before any run when the data are missing
        return grid_runs(
            s.mixes, s.policies, s.t_weights, s.seeds, s.jobs, threshold_mode=s.threshold_mode, load=s.load
        )

    def task(self, out: Path) -> Callable[[Run], dict[str, Any]]:
        return partial(execute_eamc_run, out_dir=str(out.resolve()), data_dir=self.data_dir())

    def report(self, out: Path, dest: Path, **options: Any) -> list[Path]:
        """Figs. 3–5 and ``summary.csv`` (:func:`write_eamc_figures`)."""
        return write_eamc_figures(out, dest)


def write_eamc_figures(out: str | Path, report: str | Path) -> list[Path]:
    """Figs. 3–5 (:func:`wattsched.studies.eamc.figures.draw_eamc_figures`) and ``summary.csv`` (means over
    seeds) of the grid in ``out``."""
    from wattsched.studies.eamc.figures import draw_eamc_figures  # deferred: matplotlib

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
    atomic_table(summary, Path(report) / "summary.csv")
    paths.append(Path(report) / "summary.csv")
    return paths
