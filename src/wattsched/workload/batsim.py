"""Export a canonical job table as a Batsim (v4) workload: JSON with ``nb_res``, ``jobs`` and ``profiles``.

Each job becomes ``{"id": "<job_id>", "subtime", "walltime", "res", "profile"}`` with a ``delay`` profile of its
true runtime (Batsim kills a job at its walltime itself, as wattsched does). Jobs with the same runtime share one
profile, so a large trace stays compact. ``user_id`` and the per-node power summaries, when present, are added
as extra job fields, which Batsim keeps and forwards to the scheduler.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.schema import Provenance, WorkloadError, coerce_columns, sort_queue_order

#: Optional columns carried as extra job fields (when present and not null).
EXTRA_FIELDS = ("user_id", "power_mean", "power_max", "power_std")


def batsim_workload(jobs: pl.DataFrame, machine_size: int, *, description: str = "") -> dict[str, Any]:
    """The Batsim workload as a dict (queue order; ids as strings, times in seconds)."""
    if machine_size <= 0:
        raise WorkloadError(f"Batsim needs a positive number of resources, got {machine_size}")
    jobs = sort_queue_order(coerce_columns(jobs))
    too_big = jobs.filter(pl.col("size") > machine_size)
    if too_big.height:
        raise WorkloadError(
            f"{too_big.height} job(s) need more than the {machine_size} resources, e.g. job {too_big['job_id'][0]}"
        )
    extras = [c for c in EXTRA_FIELDS if c in jobs.columns]
    profiles: dict[str, dict[str, Any]] = {}
    out = []
    for row in jobs.select("job_id", "submit_time", "walltime", "runtime", "size", *extras).iter_rows(named=True):
        delay = float(row["runtime"])
        name = f"delay_{delay!r}"  # exact: one profile per distinct runtime
        profiles.setdefault(name, {"type": "delay", "delay": delay})
        job = {
            "id": str(row["job_id"]),
            "subtime": float(row["submit_time"]),
            "walltime": float(row["walltime"]) if math.isfinite(row["walltime"]) else -1.0,
            "res": int(row["size"]),
            "profile": name,
        }
        job |= {c: row[c] for c in extras if row[c] is not None}
        out.append(job)
    return {"nb_res": int(machine_size), "description": description, "jobs": out, "profiles": profiles}


def write_batsim(
    jobs: pl.DataFrame, path: str | Path, *, machine_size: int | None = None, provenance: Provenance | None = None
) -> None:
    """Write the Batsim workload JSON; the machine size comes from ``machine_size`` or the provenance."""
    size = machine_size or (provenance.machine_size if provenance is not None else None)
    if not size:
        raise WorkloadError("a Batsim workload needs the machine size (nb_res); pass --machine-size")
    source = provenance.source if provenance is not None else "a canonical job table"
    workload = batsim_workload(jobs, int(size), description=f"exported by wattsched from {source}")
    Path(path).write_text(json.dumps(workload, indent=1) + "\n")
