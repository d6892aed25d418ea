"""One entry point for every workload file, so the CLI and notebooks need not know which reader to call."""

from __future__ import annotations

from pathlib import Path

from wattsched.workload.pm100 import is_pm100_parquet, read_pm100
from wattsched.workload.schema import ReadResult, WorkloadError
from wattsched.workload.swf import read_swf
from wattsched.workload.tableio import read_table

__all__ = ["SUPPORTED_SUFFIXES", "load_workload"]

#: File name endings :func:`load_workload` understands (matched case-insensitively).
SUPPORTED_SUFFIXES: tuple[str, ...] = (".swf", ".swf.gz", ".parquet", ".csv", ".csv.gz")


def load_workload(path: str | Path, *, machine_size: int | None = None, strict: bool = False) -> ReadResult:
    """Read a workload by file name: SWF (``.swf``, ``.swf.gz``) or a canonical table (``.parquet``, ``.csv``,
    ``.csv.gz``); anything else is a :class:`WorkloadError` listing the supported formats.

    A Parquet file with PM100's schema (``node_power_consumption`` and ``num_nodes_alloc``) goes to
    :func:`read_pm100` (machine size 980 nodes unless given).
    """
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".swf", ".swf.gz")):
        return read_swf(path, machine_size=machine_size, strict=strict)
    if name.endswith(".parquet") and is_pm100_parquet(path):
        if machine_size is None:
            return read_pm100(path, strict=strict)
        return read_pm100(path, machine_size=machine_size, strict=strict)
    if name.endswith((".parquet", ".csv", ".csv.gz")):
        return read_table(path, machine_size=machine_size, strict=strict)
    supported = ", ".join(SUPPORTED_SUFFIXES)
    raise WorkloadError(f"{path}: unsupported workload format; supported file endings: {supported}")
