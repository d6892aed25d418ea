"""Workload files: converting one format into another, as ``wattsched data convert`` does it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattsched.core.schema import ReadResult, WorkloadError
from wattsched.workload.load import load_workload

__all__ = ["CONVERT_ENDINGS", "Conversion", "EmptyWorkloadError", "conversion_rejects_path", "convert_workload"]

#: The endings ``data convert`` writes: the workload formats of ``save_workload``, and Batsim's JSON.
CONVERT_ENDINGS = (".parquet", ".csv", ".csv.gz", ".swf", ".swf.gz", ".json")


class EmptyWorkloadError(WorkloadError):
    """A workload with no job record at all: nothing to write (a command that wrote nothing fails)."""


@dataclass
class Conversion:
    """What a conversion read and wrote: the workload (its rejects included) and the list columns a CSV could
    not hold and so left out."""

    read: ReadResult
    output: Path
    left_out: list[str]


def conversion_rejects_path(output: str | Path) -> Path:
    """Where the input's rejects go: OUTPUT's stem + ``.rejects.parquet`` (``.rejects.csv`` for a CSV output)."""
    from wattsched.core.rejects import rejects_path

    out = Path(output)
    return rejects_path(out, "csv" if ".csv" in out.name.lower() else "parquet")


def convert_workload(
    workload: str | Path,
    output: str | Path,
    *,
    machine_size: int | None = None,
    **read_options: Any,
) -> Conversion:
    """Read ``workload`` (any supported format) and write it to ``output`` in the format its name asks for
    (:data:`CONVERT_ENDINGS`; ``.json`` is Batsim's workload), through a renamed temporary. ``machine_size``
    overrides the declared size (Batsim needs one). A ValueError for an output name of no format, an
    :class:`EmptyWorkloadError` for a workload without jobs, and ``AllRejectedError`` (with the rejects) when every
    record was rejected. ``read_options`` go to ``load_workload`` (``strict``, ``timezone``, ``columns``)."""
    from wattsched.workload.batsim import write_batsim
    from wattsched.workload.save import save_workload

    out = Path(output)
    if not out.name.lower().endswith(CONVERT_ENDINGS):
        raise ValueError(f"--output must end in {', '.join(CONVERT_ENDINGS)}, got {out.name}")
    read = load_workload(workload, machine_size=machine_size, **read_options)
    if machine_size is not None:
        read = read._replace(provenance=dataclasses.replace(read.provenance, machine_size=machine_size))
    if read.jobs.is_empty():
        raise EmptyWorkloadError(f"{workload}: no job to write (the workload has no job records)")
    left_out: list[str] = []
    if out.name.lower().endswith(".json"):
        out.parent.mkdir(parents=True, exist_ok=True)
        write_batsim(read.jobs, out, provenance=read.provenance)
    else:
        left_out = save_workload(read, out)
    return Conversion(read, out, left_out)
