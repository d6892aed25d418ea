"""One entry point for every workload file, so the CLI and notebooks need not know which reader to call."""

from __future__ import annotations

from pathlib import Path

from wattsched.workload.schema import ReadResult, WorkloadError
from wattsched.workload.swf import read_swf
from wattsched.workload.tableio import read_table

__all__ = ["SUPPORTED_SUFFIXES", "load_workload"]

#: File name endings :func:`load_workload` understands (matched case-insensitively).
SUPPORTED_SUFFIXES: tuple[str, ...] = (".swf", ".swf.gz", ".parquet", ".csv", ".csv.gz")


def load_workload(path: str | Path, *, machine_size: int | None = None, strict: bool = False) -> ReadResult:
    """Read a workload by file name: SWF (``.swf``, ``.swf.gz``) or a canonical table (``.parquet``, ``.csv``,
    ``.csv.gz``); anything else is a :class:`WorkloadError` listing the supported formats.
    """
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".swf", ".swf.gz")):
        return read_swf(path, machine_size=machine_size, strict=strict)
    if name.endswith((".parquet", ".csv", ".csv.gz")):
        return read_table(path, machine_size=machine_size, strict=strict)
    supported = ", ".join(SUPPORTED_SUFFIXES)
    raise WorkloadError(f"{path}: unsupported workload format; supported file endings: {supported}")
