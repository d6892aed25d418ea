"""Paper 004's experiment (paper 004 §6–§7; docs/rmap.md): four 30-job traces × five global power bounds × the
RMAP policies, with the oracle and the model as configuration data, and the equivalents of Figs. 8–15.

As a campaign of kind ``rmap`` (:class:`RMAPSpec`, :class:`RMAPExperiment`; ``wattsched campaign run`` or its
alias ``wattsched rmap grid``), the oracle data are drawn (or read) and the model fitted once, when the campaign
is planned (``oracle.parquet``, ``model.parquet``, ``model_errors.parquet``), and each run is one (trace, bound)
cell with every policy: ``results/<id>.jobs.parquet`` (every job, tagged), ``.decisions.parquet`` (system power
at each start) and its summary. :func:`run_rmap_grid` is the same grid in memory, for callers that sweep samples.
The report: ``summary.csv`` (mean turnaround, normalised to Traditional on the same trace and bound; jobs better
than, equal to and worse than under Traditional; mean wait and allocated power) and the figures
(:mod:`wattsched.studies.rmap.figures`, :mod:`wattsched.studies.rmap.model_figures`).

```toml
kind = "rmap"
name = "p4"
traces = ["small", "large", "random1", "random2"]
bounds = [6500, 8000, 10000, 12000, 14000]
seed = 0                  # the traces, the synthetic Cab data and the model's sample
sample_share = 0.1        # share of each app's points the model trains on
cab_data = "calibrated"   # or "synthetic-v1"; or details = "measured.parquet"
t_req = "random-config"   # or "packed" ([AMBIG-4.2], studies/rmap/traces.py)
```
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import polars as pl
from pydantic import AfterValidator, Field, field_validator

from wattsched.core.atomic import atomic_table
from wattsched.core.experiment import Experiment, Run, no_log
from wattsched.core.spec import BoundedSpec, known_names
from wattsched.core.store import CampaignLayout, atomic_parquet, read_manifest, result_path, run_id, write_result
from wattsched.studies.rmap.engine import simulate_rmap
from wattsched.studies.rmap.machine import CAB_DATA, DEFAULT_CAB_DATA, JobDetails, fit_config_model, rmap_cab_details
from wattsched.studies.rmap.policies import parse_rmap_policy
from wattsched.studies.rmap.results import rmap_summary
from wattsched.studies.rmap.traces import (
    DEFAULT_T_REQ,
    TRACES,
    ArrivalReference,
    TReq,
    generate_rmap_trace,
)

BOUNDS = (6500.0, 8000.0, 10000.0, 12000.0, 14000.0)
POLICIES = (
    "rmap-traditional",
    "rmap-naive",
    "rmap-adaptive-0",
    "rmap-adaptive-10",
    "rmap-adaptive-20",
    "rmap-adaptive-30",
    "rmap-adaptive-unbounded",
)


def run_rmap_cell(
    oracle: JobDetails,
    model: JobDetails,
    workload: pl.DataFrame,
    trace: str,
    bound: float,
    *,
    policies: tuple[str, ...] = POLICIES,
    other_sources: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(jobs, decisions)`` of one trace under one bound: each policy with its default data source, and (with
    ``other_sources``) traditional, naive and adaptive-0 also with the other source (for the model-versus-oracle
    comparison, Fig. 8); rows tagged with the trace, bound, policy and data source."""
    runs: list[tuple[str, str | None]] = [(name, None) for name in policies]
    runs += [
        (name, other)
        for name in ("rmap-traditional", "rmap-naive", "rmap-adaptive-0")
        if name in policies and other_sources
        for other in (("model",) if parse_rmap_policy(name).data == "oracle" else ("oracle",))
    ]
    jobs, decisions = [], []
    for name, source in runs:
        policy = parse_rmap_policy(name, source)
        result = simulate_rmap(workload, policy, oracle, model=model, p_cluster=bound)
        tag = [
            pl.lit(trace).alias("trace"),
            pl.lit(bound).alias("bound"),
            pl.lit(name).alias("policy"),
            pl.lit(policy.data).alias("data"),
            pl.lit(source is None).alias("default_data"),
        ]
        jobs.append(result.jobs.with_columns(tag))
        decisions.append(result.decisions.with_columns(tag))
    return pl.concat(jobs), pl.concat(decisions)


def run_rmap_grid(
    oracle: JobDetails,
    model: JobDetails,
    *,
    traces: tuple[str, ...] = TRACES,
    bounds: tuple[float, ...] = BOUNDS,
    policies: tuple[str, ...] = POLICIES,
    seed: int = 0,
    overestimate: float = 0.0,
    arrival_scale: float = 1.0,
    other_sources: bool = True,
    t_req: TReq = DEFAULT_T_REQ,
    arrival_reference: ArrivalReference = "packed",
) -> tuple[pl.DataFrame, pl.DataFrame, float]:
    """``(jobs, decisions, seconds)`` of every (trace, bound) cell (:func:`run_rmap_cell`), in memory. ``seed``
    draws the traces; ``arrival_scale`` makes them sparser ([AMBIG-4.5]); ``t_req`` is the reading of the
    requested time and ``arrival_reference`` the mean the arrival gaps scale ([AMBIG-4.2],
    :func:`~wattsched.studies.rmap.traces.generate_rmap_trace`)."""
    t0 = time.perf_counter()
    jobs, decisions = [], []
    for trace in traces:
        workload = generate_rmap_trace(
            oracle,
            trace,
            seed=seed,
            overestimate=overestimate,
            arrival_scale=arrival_scale,
            t_req=t_req,
            arrival_reference=arrival_reference,
        )
        for bound in bounds:
            j, d = run_rmap_cell(oracle, model, workload, trace, bound, policies=policies, other_sources=other_sources)
            jobs.append(j)
            decisions.append(d)
    return pl.concat(jobs), pl.concat(decisions), time.perf_counter() - t0


class RMAPSpec(BoundedSpec):
    """Paper 004's grid as a campaign; see the module docstring. ``details`` (a measured job details table,
    ``.parquet`` or ``.csv``) replaces the synthetic Cab data; ``arrival_scale`` is the mean inter-arrival time
    over the mean requested time ([AMBIG-4.5]; larger is sparser); users overestimate their requested time by up
    to ``overestimate``; ``t_req`` is the reading of the requested time ([AMBIG-4.2]: ``random-config`` or
    ``packed``)."""

    kind: Literal["rmap"]
    name: str = Field(default="rmap", min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    traces: Annotated[list[str], AfterValidator(known_names(TRACES, "trace(s)"))] = Field(
        default_factory=lambda: list(TRACES), min_length=1
    )
    bounds: list[float] = Field(default_factory=lambda: list(BOUNDS), min_length=1)
    policies: list[str] = Field(default_factory=lambda: list(POLICIES), min_length=1)
    other_sources: bool = True
    seed: int = 0
    sample_share: float = Field(default=0.1, gt=0, le=1)
    overestimate: float = Field(default=0.0, ge=0)
    arrival_scale: float = Field(default=1.0, gt=0)
    details: str | None = None
    cab_data: str = DEFAULT_CAB_DATA
    t_req: TReq = DEFAULT_T_REQ

    @field_validator("policies")
    @classmethod
    def _policies(cls, v: list[str]) -> list[str]:
        for name in v:
            parse_rmap_policy(name)  # raises with the valid names
        return v

    @field_validator("cab_data")
    @classmethod
    def _cab_data(cls, v: str) -> str:
        if v not in CAB_DATA:
            raise ValueError(f"unknown cab_data {v!r}; choose from {', '.join(CAB_DATA)}")
        return v


ORACLE, MODEL, MODEL_ERRORS = "oracle.parquet", "model.parquet", "model_errors.parquet"


def _planned_files(out: Path) -> tuple[tuple[str, int, int], ...]:
    """The planned oracle and model files with their identity (path, mtime, size): the key of the caches below, so
    a campaign planned again in the same folder is read afresh."""
    return tuple((str(path), (st := path.stat()).st_mtime_ns, st.st_size) for path in (out / ORACLE, out / MODEL))


# One worker runs many cells of the same campaign: reading the planned data and drawing each trace once per
# process, not once per cell, took the CLI grid from 7.0 s back to the in-memory grid's time (measured, one core).
@lru_cache(maxsize=4)
def _planned_details(planned: tuple[tuple[str, int, int], ...]) -> tuple[JobDetails, JobDetails]:
    oracle, model = (JobDetails.read(Path(path)) for path, _, _ in planned)
    return oracle, model


@lru_cache(maxsize=32)
def _trace(
    planned: tuple[tuple[str, int, int], ...],
    trace: str,
    seed: int,
    overestimate: float,
    arrival_scale: float,
    t_req: TReq = DEFAULT_T_REQ,
) -> pl.DataFrame:
    oracle, _ = _planned_details(planned)
    return generate_rmap_trace(
        oracle, trace, seed=seed, overestimate=overestimate, arrival_scale=arrival_scale, t_req=t_req
    )


def execute_rmap_run(run: Run, out_dir: str, spec_data: dict[str, Any]) -> dict[str, Any]:
    """One (trace, bound) cell with every policy, on the oracle and model fitted when the campaign was planned:
    writes the jobs and decisions, then (last) the summary."""
    t0 = time.perf_counter()
    spec = RMAPSpec.model_validate(spec_data)
    out = Path(out_dir)
    planned = _planned_files(out)
    oracle, model = _planned_details(planned)
    workload = _trace(planned, run["trace"], spec.seed, spec.overestimate, spec.arrival_scale, spec.t_req)
    jobs, decisions = run_rmap_cell(
        oracle,
        model,
        workload,
        run["trace"],
        run["bound"],
        policies=tuple(spec.policies),
        other_sources=spec.other_sources,
    )
    atomic_parquet(jobs, CampaignLayout(out).run_table(run["id"], "jobs"))
    atomic_parquet(decisions, CampaignLayout(out).run_table(run["id"], "decisions"))
    row = {
        **run,
        "jobs": jobs.height,
        "mean_turnaround": float(jobs["turnaround"].to_numpy().mean()),
        "run_s": time.perf_counter() - t0,
        "worker": os.getpid(),
    }
    write_result(out, row)
    return row


class RMAPExperiment(Experiment):
    """Paper 004's grid (see the module docstring)."""

    kind: ClassVar[str] = "rmap"
    spec_model = RMAPSpec
    status_keys = ("trace", "bound")
    timing_fields = ("run_s", "worker")
    spec: RMAPSpec

    def count_runs(self) -> int:
        """Traces × bounds (each run is one cell with every policy)."""
        return len(self.spec.traces) * len(self.spec.bounds)

    def plan(self, out: Path, log: Callable[[str], None] = no_log) -> list[Run]:
        """Draw (or read) the oracle data and fit the model once; one run per (trace, bound)."""
        s = self.spec
        if s.details is not None:
            path = Path(s.details)
            oracle = JobDetails.read(path if path.is_absolute() or self.base is None else self.base / path)
        else:
            oracle = rmap_cab_details(s.seed, cab_data=s.cab_data)
        model, errors = fit_config_model(oracle, s.sample_share, seed=s.seed)
        out.mkdir(parents=True, exist_ok=True)
        atomic_parquet(oracle.to_frame(), out / ORACLE)
        atomic_parquet(model.to_frame(), out / MODEL)
        atomic_parquet(errors, out / MODEL_ERRORS)
        log(f"fitted the configuration model on {s.sample_share:.0%} of each app's points")
        runs = []
        for trace in s.traces:
            for bound in s.bounds:
                params = {"trace": trace, "bound": bound}
                runs.append({"id": run_id({**params, "spec": self.spec_data()}), **params})
        return runs

    def task(self, out: Path) -> Callable[[Run], dict[str, Any]]:
        return partial(execute_rmap_run, out_dir=str(out.resolve()), spec_data=self.spec_data())

    def report(self, out: Path, dest: Path, **options: Any) -> list[Path]:
        """``summary.csv``, Figs. 8–15 (:func:`write_rmap_report`) and the model's Figs. 6–7 in ``dest``; every
        job and decision of the grid in ``out/jobs.parquet`` and ``out/decisions.parquet`` (whether the grid ran
        through ``rmap grid`` or ``campaign run``)."""
        from wattsched.studies.rmap.model_figures import write_model_figures  # deferred: matplotlib

        jobs, decisions = load_rmap_runs(out)
        atomic_parquet(jobs, out / GRID_JOBS)
        atomic_parquet(decisions, out / GRID_DECISIONS)
        paths = write_rmap_report(jobs, decisions, dest)
        return [
            out / GRID_JOBS,
            out / GRID_DECISIONS,
            *paths,
            *write_model_figures(pl.read_parquet(out / MODEL_ERRORS), dest),
        ]

    def summary(self, out: Path, **options: Any) -> list[tuple[str, pl.DataFrame]]:
        jobs, _ = load_rmap_runs(out)
        table = rmap_summary(jobs).filter(pl.col("default_data"))
        cols = ("trace", "bound", "policy", "mean_turnaround", "normalised_turnaround", "jobs_better", "jobs_worse")
        return [("RMAP grid: mean turnaround (s), normalised to Traditional", table.select(cols))]


#: The grid's jobs and decisions, all runs together, written with the report.
GRID_JOBS = "jobs.parquet"
GRID_DECISIONS = "decisions.parquet"


def load_rmap_runs(out: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(jobs, decisions)`` of the finished runs of an RMAP campaign, in the manifest's order (the order of
    :func:`run_rmap_grid`)."""
    out = Path(out)
    runs = [r for r in read_manifest(out)["runs"] if result_path(out, r["id"]).exists()]
    if not runs:
        raise ValueError(f"{out}: no finished RMAP runs")
    layout = CampaignLayout(out)
    jobs = [pl.read_parquet(layout.run_table(r["id"], "jobs")) for r in runs]
    decisions = [pl.read_parquet(layout.run_table(r["id"], "decisions")) for r in runs]
    return pl.concat(jobs), pl.concat(decisions)


def write_rmap_report(jobs: pl.DataFrame, decisions: pl.DataFrame, out: str | Path) -> list[Path]:
    """``summary.csv`` (:func:`~wattsched.studies.rmap.results.rmap_summary`) and the Figs. 8–15 equivalents (PNG
    and SVG, :func:`~wattsched.studies.rmap.figures.write_rmap_figures`).
    ``decisions`` is kept for callers; Fig. 14 is drawn from the jobs' starts and ends (a step function)."""
    from wattsched.studies.rmap.figures import write_rmap_figures  # deferred: matplotlib

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = rmap_summary(jobs)
    atomic_table(summary, out / "summary.csv")
    return [out / "summary.csv", *write_rmap_figures(jobs, out)]
