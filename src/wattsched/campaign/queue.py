"""Plain queue-policy comparisons as an experiment (kind ``queue``): queue policies (FCFS, SJF, EASY, conservative
backfilling...) over windows of an SWF trace, a job table or a generated workload, compared on the job and system
metrics of :mod:`wattsched.metrics` (wait, turnaround, bounded slowdown, utilisation, queue length). No power.

```toml
kind = "queue"
name = "ricc-policies"
policies = ["fcfs", "easy", "conservative"]
seeds = [0]                        # each seed re-draws the windows (and a generated workload)

[[workloads]]
name = "ricc"
path = "RICC-2010-2.swf"           # or: generate = { model = "lublin", jobs = 20000, machine_size = 256 }
windows = { count = 4, hours = 168, seed = 0, prestate = "requeue" }
```

Runs are window × policy; every run's row holds its parameters and the metrics (``m_<metric>``). It lives in
``campaign/`` beside the power campaign, whose workload and window specs it shares.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import Field, field_validator, model_validator

from wattsched.campaign.spec import WorkloadSpec, variants
from wattsched.campaign.workloads import load_workload_spec, rejected_count, store_windows, window_path
from wattsched.core.experiment import Experiment, Run, no_log
from wattsched.core.spec import BoundedSpec
from wattsched.core.store import atomic_table, run_id, write_result
from wattsched.policies.registry import CORE_POLICIES, POLICIES
from wattsched.runs import run_policy
from wattsched.workload.load import load_workload

#: The metrics the summary averages over windows, in the order it prints them.
SUMMARY_METRICS = (
    "m_wait_mean",
    "m_wait_p90",
    "m_turnaround_mean",
    "m_bounded_slowdown_mean",
    "m_utilisation",
    "m_queue_length_mean",
)


class QueueSpec(BoundedSpec):
    """A queue-policy comparison; see the module docstring."""

    kind: Literal["queue"]
    name: str = Field(default="queue", min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    workloads: list[WorkloadSpec] = Field(min_length=1)
    policies: list[str] = Field(default_factory=lambda: ["fcfs", "easy", "conservative"], min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    runtime_estimate: Literal["walltime", "runtime"] | None = None

    @field_validator("policies")
    @classmethod
    def _policies(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if p not in POLICIES]
        if bad:
            raise ValueError(f"unknown policies {bad}; see `wattsched policies`")
        power = [p for p in v if p not in CORE_POLICIES]
        if power:
            raise ValueError(f"{power} need a power check and a cap: use a power campaign (kind = 'power')")
        return v

    @model_validator(mode="after")
    def _unique_names(self) -> QueueSpec:
        names = [w.name for w in self.workloads]
        if len(set(names)) != len(names):
            raise ValueError(f"workload names must be unique, got {names}")
        return self


def execute_queue_run(run: Run, out_dir: str, runtime_estimate: str | None) -> dict[str, Any]:
    """Simulate one window under one policy; write and return its result row (parameters and metrics)."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    read = load_workload(window_path(out, run["workload"]))
    result = run_policy(read, run["policy"], runtime_estimate=runtime_estimate)
    window = read.provenance.header.get("window") or {}
    row: dict[str, Any] = {
        **run,
        "jobs": result.jobs.height,
        "rejected": rejected_count(read, result.rejects.height),
        "prestate": window.get("prestate", "none") if isinstance(window, dict) else "none",
        **{f"m_{k}": v for k, v in result.summary["metrics"].items() if isinstance(v, int | float) or v is None},
        "simulation_s": result.result.elapsed_s,
        "elapsed_s": time.perf_counter() - t0,
        "worker": os.getpid(),
    }
    write_result(out, row)
    return row


class QueueExperiment(Experiment):
    """Queue policies over workload windows (see the module docstring)."""

    kind: ClassVar[str] = "queue"
    spec_model = QueueSpec
    status_keys = ("workload", "policy")
    spec: QueueSpec

    def count_runs(self) -> int:
        """Windows (each workload's count, one without windows) × seeds × policies."""
        windows = sum(w.windows.count if w.windows is not None else 1 for w in self.spec.workloads)
        return windows * len(self.spec.seeds) * len(self.spec.policies)

    def plan(self, out: Path, log: Callable[[str], None] = no_log) -> list[Run]:
        """Load or generate each workload once per seed, store its windows, and pair every window with every
        policy."""
        runs: list[Run] = []
        for wl, seed, name in variants(self.spec.workloads, self.spec.seeds):
            t = time.perf_counter()
            windows = store_windows(load_workload_spec(wl, seed), wl, seed, name, out, log)
            log(f"prepared workload {name}: {len(windows)} window(s) in {time.perf_counter() - t:.1f} s")
            for window in windows:
                for policy in self.spec.policies:
                    params = {"workload": window, "policy": policy, "seed": seed}
                    runs.append({"id": run_id({**params, "runtime_estimate": self.spec.runtime_estimate}), **params})
        return runs

    def task(self, out: Path) -> Callable[[Run], dict[str, Any]]:
        return partial(execute_queue_run, out_dir=str(out), runtime_estimate=self.spec.runtime_estimate)

    def workload_names(self) -> list[str]:
        """The spec's workloads, in its order (the ``workload`` column of the summary)."""
        return [w.name for w in self.spec.workloads]

    def named_results(self, out: Path) -> pl.DataFrame:
        """Every finished run, with ``workload_name``: the spec workload its window was cut from."""
        return with_workload_names(self.results(out), self.workload_names())

    def report(self, out: Path, dest: Path, **options: Any) -> list[Path]:
        """``results.csv`` (one row per run, with its ``workload_name``) and ``summary.csv``
        (:func:`queue_summary`, one row per workload and policy). The figures and the HTML report are drawn by
        ``wattsched.report.queue_report`` (``campaign report``)."""
        dest.mkdir(parents=True, exist_ok=True)
        results = self.named_results(out)
        atomic_table(results, dest / "results.csv")
        atomic_table(queue_summary(results, self.spec.policies, self.workload_names()), dest / "summary.csv")
        return [dest / "results.csv", dest / "summary.csv"]

    def summary(self, out: Path, **options: Any) -> list[tuple[str, pl.DataFrame]]:
        table = queue_summary(self.named_results(out), self.spec.policies, self.workload_names())
        return [("queue policies: means over the windows of each workload", table)]


def workload_name(window: str, names: list[str]) -> str:
    """The spec workload a window id was cut from: ids are ``NAME``, ``NAME-sSEED``, ``NAME-wNN`` or
    ``NAME-sSEED-wNN`` (:func:`wattsched.campaign.spec.variants`, ``store_windows``); the longest name that
    matches wins (``a`` and ``a-b`` may both be workloads)."""
    matches = [n for n in names if re.fullmatch(re.escape(n) + r"(-s\d+)?(-w\d+)?", window)]
    return max(matches, key=len) if matches else window


def with_workload_names(results: pl.DataFrame, names: list[str]) -> pl.DataFrame:
    """``results`` with a ``workload_name`` column after ``workload`` (the window id)."""
    if results.is_empty() or "workload" not in results.columns:
        return results.with_columns(pl.lit(None, pl.Utf8).alias("workload_name"))
    mapping = {w: workload_name(w, names) for w in results["workload"].unique().to_list()}
    named = results.with_columns(
        pl.col("workload").replace_strict(mapping, return_dtype=pl.Utf8).alias("workload_name")
    )
    columns = named.columns
    columns.remove("workload_name")
    columns.insert(columns.index("workload") + 1, "workload_name")
    return named.select(columns)


def queue_summary(results: pl.DataFrame, policies: list[str], workloads: list[str] | None = None) -> pl.DataFrame:
    """Per workload of the spec and policy, in the spec's orders: the windows run and the mean over them of
    :data:`SUMMARY_METRICS`. Different traces are never pooled (a trace of another machine is another
    experiment); within one, only the windows every policy finished count (a partial campaign would otherwise
    average unequal window sets)."""
    present = [m for m in SUMMARY_METRICS if m in results.columns]
    if results.is_empty():
        return pl.DataFrame(schema={"workload": pl.Utf8, "policy": pl.Utf8, "windows": pl.UInt32})
    if "workload_name" not in results.columns:
        results = with_workload_names(results, workloads or [])
    order = {p: k for k, p in enumerate(policies)}
    names = list(dict.fromkeys([*(workloads or []), *results["workload_name"].to_list()]))
    rank = {w: k for k, w in enumerate(names)}
    # a partial campaign: only the windows every policy finished, so that the means are over the same windows
    wanted = results["policy"].n_unique()
    full = results.group_by("workload").agg(pl.col("policy").n_unique().alias("_n")).filter(pl.col("_n") == wanted)
    results = results.join(full.select("workload"), on="workload", how="semi")
    return (
        results.group_by("workload_name", "policy")
        .agg(pl.len().alias("windows"), *(pl.col(m).cast(pl.Float64).mean().alias(m[2:]) for m in present))
        .rename({"workload_name": "workload"})
        .sort(
            pl.col("workload").replace_strict(rank, default=len(rank), return_dtype=pl.Int64),
            pl.col("policy").replace_strict(order, default=len(order), return_dtype=pl.Int64),
        )
    )
