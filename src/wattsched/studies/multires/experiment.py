"""Paper 001's experiment as a campaign of kind ``dispatch``: dispatchers × runtime estimates over workload
instances on a multi-resource machine (paper 001 §5; docs/dispatch.md; run by ``wattsched campaign run``).

```toml
kind = "dispatch"
name = "p1"
instances = ["../shared/data/eurora/historical_traces"]   # files or directories of Eurora instances
dispatchers = ["sjf", "ljf", "ebf", "prb", "cph"]
estimates = ["walltime", "rules", "real"]
[cph]
time_limit_s = 1.0            # or deterministic_time = 0.5 for reproducible runs
```

Each run simulates one instance with one dispatcher and one estimate: ``walltime``; ``rules`` (the data-driven
rule cascade, online in the simulation: predicted at submission from the jobs completed so far); ``real`` (the
true durations: an explicit oracle baseline). ``history`` (files or folders of instances) warm-starts ``rules``
with their jobs that ended before the instance's first submission, as one continuous simulation of the trace
would (:class:`WarmStart`). A run writes its jobs (with slowdown and class), its queue timeline
and last, atomically, its summary JSON, which marks it done (:mod:`wattsched.core.store`): an interrupted campaign
resumes where it stopped. :class:`DispatchExperiment` is the kind's :class:`~wattsched.core.experiment.Experiment`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import polars as pl
from pydantic import AfterValidator, Field

from wattsched.core.experiment import Experiment, Run, no_log
from wattsched.core.file_memo import FileMemo
from wattsched.core.scalars import as_float
from wattsched.core.spec import BoundedSpec, StrictModel, known_names
from wattsched.core.store import RESULTS, CampaignError, CampaignLayout, atomic_parquet, run_id, write_result
from wattsched.predict.registry import make_runtime_predictor
from wattsched.studies.multires.cph import CPHOptions
from wattsched.studies.multires.dispatchers import DISPATCHERS, make_dispatcher
from wattsched.studies.multires.engine import simulate_multires
from wattsched.studies.multires.eurora import eurora_pool
from wattsched.studies.multires.metrics import (
    CLASSES,
    add_slowdown,
)
from wattsched.studies.multires.results import ESTIMATES, dispatch_summary, load_dispatch_results
from wattsched.workload.eurora import read_eurora


class CPHSpec(StrictModel):
    max_jobs: int = Field(default=100, ge=1)
    time_limit_s: float = Field(default=1.0, gt=0)
    max_time_s: float = Field(default=150.0, gt=0)
    deterministic_time: float | None = Field(default=None, gt=0)
    weights: Literal["head", "2017"] = "head"


class DispatchSpec(BoundedSpec):
    """A dispatch experiment; see the module docstring."""

    kind: Literal["dispatch"]
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    instances: list[str] = Field(min_length=1)
    platform: Literal["eurora"] = "eurora"
    config_dir: str | None = None
    nodes: int = 64
    #: [AMBIG-1.5]: the queue table's own waits (Eurora's system_queues) by default; "constant" gives every queue
    #: ``default_ewt`` (docs/decisions.md).
    ewt: Literal["constant", "queues-file"] = "queues-file"
    default_ewt: float = Field(default=1800.0, gt=0)
    dispatchers: Annotated[list[str], AfterValidator(known_names(DISPATCHERS, "dispatcher(s)"))] = Field(
        default_factory=lambda: ["sjf", "ljf", "ebf", "prb", "cph"], min_length=1
    )
    estimates: list[Literal["walltime", "rules", "real"]] = Field(default_factory=lambda: list(ESTIMATES), min_length=1)
    allocator: Literal["first-fit", "consolidate"] | None = None
    normalise: bool = False
    slowdown_floor: float = Field(default=1.0, gt=0)
    history: list[str] = Field(default_factory=list)
    cph: CPHSpec = CPHSpec()


def instance_files(spec: DispatchSpec, base: Path | None = None) -> list[Path]:
    """The instance files, sorted: files as given, directories searched for ``*.log_crypt`` recursively."""
    files: list[Path] = []
    for entry in spec.instances:
        path = Path(entry) if base is None or Path(entry).is_absolute() else base / entry
        if path.is_dir():
            found = sorted(path.rglob("*.log_crypt"))
            if not found:
                raise CampaignError(f"{path}: no instance files (*.log_crypt) in this directory")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise CampaignError(f"{path}: instance file or directory does not exist")
    return files


def expand_dispatch_runs(spec: DispatchSpec, files: list[Path]) -> list[dict[str, Any]]:
    runs = []
    for f in files:
        for d in spec.dispatchers:
            for e in spec.estimates:
                params = {"instance": str(f.resolve()), "dispatcher": d, "estimate": e}
                runs.append(
                    {
                        "id": run_id({**params, "spec": spec.model_dump(exclude={"instances", "name"})}),
                        "instance_name": f.stem,
                        **params,
                    }
                )
    return runs


def _read_jobs_and_rejects(path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    jobs, rejects, _ = read_eurora(path)
    return jobs, rejects


#: The instances this worker process read last (:class:`~wattsched.core.file_memo.FileMemo`): an instance's
#: runs (dispatchers × estimates: 15 in ``reproduce 001``) are listed together, and reading it was a third of a
#: non-CP run (74 of about 200 ms).
read_instance: FileMemo[tuple[pl.DataFrame, pl.DataFrame]] = FileMemo(_read_jobs_and_rejects)


def execute_dispatch_run(run: dict[str, Any], out_dir: str, spec_data: dict[str, Any]) -> dict[str, Any]:
    """One run: simulate, write jobs, timeline and (last) the summary; returns the summary."""
    spec = DispatchSpec.model_validate(spec_data)
    t0 = time.perf_counter()
    jobs, rejects = read_instance(Path(run["instance"]))
    pool = eurora_pool(spec.config_dir, nodes=spec.nodes, ewt=spec.ewt, default_ewt=spec.default_ewt)
    cph = spec.cph
    options = CPHOptions(
        max_jobs=cph.max_jobs,
        weights=cph.weights,
        time_limit_s=cph.time_limit_s,
        max_time_s=cph.max_time_s,
        deterministic_time=cph.deterministic_time,
    )
    dispatcher = make_dispatcher(
        run["dispatcher"], allocator=spec.allocator, normalise=spec.normalise, cph_options=options
    )
    estimate: Any = {"walltime": "walltime", "real": "runtime"}.get(run["estimate"])
    if estimate is None:
        estimate = make_runtime_predictor("rules")
        if spec.history:
            estimate = WarmStart(estimate, _history(tuple(spec.history)))
    result = simulate_multires(jobs, pool, dispatcher, estimate=estimate, default_ewt=spec.default_ewt)
    layout = CampaignLayout(Path(out_dir))
    layout.make((RESULTS,))
    tag = {"instance": run["instance_name"], "dispatcher": run["dispatcher"], "estimate": run["estimate"]}
    done = add_slowdown(result.jobs, floor=spec.slowdown_floor).with_columns(
        *(pl.lit(v).alias(k) for k, v in tag.items())
    )
    atomic_parquet(done, layout.run_table(run["id"], "jobs"))
    atomic_parquet(result.timeline, layout.run_table(run["id"], "timeline"))
    sd = done["slowdown"]
    summary = {
        "id": run["id"],
        **tag,
        "jobs": done.height,
        "input_rejects": rejects.height,
        "sim_rejects": result.rejects.height,
        "mean_slowdown": as_float(sd.mean()) if done.height else None,
        "median_slowdown": as_float(sd.median()) if done.height else None,
        "mean_wait": as_float(done["wait"].mean()) if done.height else None,
        "killed": int(done["killed"].sum()),
        **{f"mean_slowdown_{c}": _mean(done.filter(pl.col("job_class") == c)["slowdown"]) for c in CLASSES},
        **{k: v for k, v in result.stats.items() if k not in ("dispatcher", "jobs")},
        "run_s": time.perf_counter() - t0,
        "worker": os.getpid(),
    }
    write_result(Path(out_dir), summary)
    return summary


class WarmStart:
    """An online predictor that starts from a history instead of nothing: the jobs of ``history`` that ended
    (their real end time) before the simulated instance's first submission, observed in end order before the
    simulation starts. One continuous simulation of the trace, as the paper ran, gives its predictor this
    knowledge; an instance simulated on its own would otherwise start every user's history empty. Nothing of the
    instance itself is known ahead: its jobs are still learnt from their simulated completions only."""

    def __init__(self, inner: Any, history: pl.DataFrame) -> None:
        self.inner = inner
        self.history = history
        self.name = inner.name
        self.outputs = inner.outputs
        self.offset = 0

    def bind(self, jobs: pl.DataFrame) -> None:
        first = as_float(jobs["submit_time"].min()) if jobs.height else 0.0
        h = self.history.filter((pl.col("trace_end_time") < first) & ~pl.col("job_id").is_in(jobs["job_id"].implode()))
        h = h.sort("trace_end_time", "job_id")
        cols = [c for c in jobs.columns if c in h.columns]
        self.offset = h.height
        self.inner.bind(pl.concat([h.select(cols), jobs.select(cols)], how="vertical_relaxed"))
        if h.height:
            self.inner.observe(np.arange(h.height, dtype=np.int64), h["trace_end_time"].cast(pl.Float64).to_numpy())

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        self.inner.observe(np.asarray(rows, dtype=np.int64) + self.offset, end_times)

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        return self.inner.predict(np.asarray(rows, dtype=np.int64) + self.offset, now)


@lru_cache(maxsize=2)
def _history(paths: tuple[str, ...]) -> pl.DataFrame:
    """The distinct jobs of the history instances (read once per worker process)."""
    jobs, _, _ = read_eurora(list(paths))
    return jobs


def _mean(s: pl.Series) -> float | None:
    return as_float(s.mean()) if s.len() else None


class DispatchExperiment(Experiment):
    """Paper 001's dispatch campaign (see the module docstring). Relative instance paths are relative to ``base``
    (the spec file's directory)."""

    kind: ClassVar[str] = "dispatch"
    spec_model = DispatchSpec
    status_keys = ("dispatcher", "estimate")
    timing_fields = ("dispatch_s", "elapsed_s", "run_s", "worker", "cp_total_s", "cp_mean_s", "cp_max_s")
    spec: DispatchSpec

    def count_runs(self) -> int:
        """Instance files (directories listed, nothing read) × dispatchers × estimates."""
        return len(instance_files(self.spec, self.base)) * len(self.spec.dispatchers) * len(self.spec.estimates)

    def plan(self, out: Path, log: Callable[[str], None] = no_log) -> list[Run]:
        return expand_dispatch_runs(self.spec, instance_files(self.spec, self.base))

    def task(self, out: Path) -> Callable[[Run], dict[str, Any]]:
        return partial(execute_dispatch_run, out_dir=str(out.resolve()), spec_data=self.spec.model_dump())

    def results(self, out: Path) -> pl.DataFrame:
        """One row per finished run (its summary), by run id; a :class:`CampaignError` when none has finished."""
        return load_dispatch_results(out)

    def report(self, out: Path, dest: Path, **options: Any) -> list[Path]:
        """Figs. 2–5 of the paper and ``summary.csv`` (:func:`dispatch_summary`)."""
        from wattsched.studies.multires.figures import write_dispatch_figures  # deferred: matplotlib

        return write_dispatch_figures(out, dest)

    def summary(self, out: Path, **options: Any) -> list[tuple[str, pl.DataFrame]]:
        return [("dispatch campaign: per dispatcher × runtime estimate", dispatch_summary(out))]
