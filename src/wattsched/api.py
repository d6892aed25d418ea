"""The verbs of the CLI as Python functions: read a workload, simulate a policy, write the results."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.metrics import add_job_metrics, summarise, system_timeline
from wattsched.sim.engine import SimulationResult, simulate
from wattsched.workload.load import load_workload
from wattsched.workload.schema import Provenance, ReadResult, WorkloadError

OUTPUT_FORMATS = ("parquet", "csv")


@dataclass
class RunOutput:
    """Everything one simulation produced: the schedule with per-job metrics, the summary and the inputs' story."""

    result: SimulationResult
    jobs: pl.DataFrame
    rejects: pl.DataFrame
    provenance: Provenance
    summary: dict[str, Any]


def resolve_machine_size(provenance: Provenance, machine_size: int | None) -> int:
    """The machine size: the explicit value, else the one the workload declares; a clear error otherwise."""
    if machine_size is not None:
        return machine_size
    if provenance.machine_size:
        return int(provenance.machine_size)
    raise WorkloadError(
        f"{provenance.source}: the workload does not declare a machine size (no MaxProcs/MaxNodes header or "
        "metadata); pass --machine-size"
    )


def run_policy(
    workload: str | Path | ReadResult,
    policy: str,
    *,
    machine_size: int | None = None,
    runtime_estimate: str | None = None,
    strict: bool = False,
    window: tuple[float, float] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RunOutput:
    """Read (or take) a workload, simulate ``policy`` and summarise the schedule."""
    read = workload if isinstance(workload, ReadResult) else load_workload(
        workload, machine_size=machine_size, strict=strict
    )
    size = resolve_machine_size(read.provenance, machine_size)
    result = simulate(read.jobs, policy, size, runtime_estimate=runtime_estimate, progress=progress)
    jobs = add_job_metrics(result.schedule)
    summary = {
        "run": result.info(),
        "workload": {
            "source": read.provenance.source,
            "format": read.provenance.format,
            "size_unit": read.provenance.size_unit,
            "jobs": read.jobs.height,
            "rejected": read.rejects.height,
        },
        "metrics": summarise(result.schedule, size, window=window),
    }
    return RunOutput(result, jobs, read.rejects, read.provenance, summary)


def write_run(run: RunOutput, output: str | Path, fmt: str = "parquet") -> dict[str, Path]:
    """Write ``jobs.<fmt>``, ``timeline.<fmt>`` (queue length, running jobs and busy units over time),
    ``rejects.parquet``, ``summary.json`` and ``provenance.json`` into ``output``."""
    if fmt not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {OUTPUT_FORMATS}")
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "jobs": out / f"jobs.{fmt}",
        "timeline": out / f"timeline.{fmt}",
        "rejects": out / "rejects.parquet",
        "summary": out / "summary.json",
        "provenance": out / "provenance.json",
    }
    timeline = system_timeline(run.jobs)
    if fmt == "parquet":
        run.jobs.write_parquet(paths["jobs"])
        timeline.write_parquet(paths["timeline"])
    else:
        run.jobs.write_csv(paths["jobs"])
        timeline.write_csv(paths["timeline"])
    run.rejects.write_parquet(paths["rejects"])
    paths["summary"].write_text(json.dumps(run.summary, indent=2, default=_json_default) + "\n")
    paths["provenance"].write_text(run.provenance.to_json() + "\n")
    return paths


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)
