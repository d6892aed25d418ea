"""One entry point for every workload file, so the CLI and notebooks need not know which reader to call."""

from __future__ import annotations

from pathlib import Path

from wattsched.core.schema import ReadResult, WorkloadError
from wattsched.workload.eurora import EURORA_SUFFIX, is_eurora_dir, read_eurora
from wattsched.workload.pm100 import is_pm100_parquet, read_pm100
from wattsched.workload.sacct import is_sacct_file, read_sacct
from wattsched.workload.swf import read_swf
from wattsched.workload.tableio import read_table

__all__ = ["SUPPORTED_SUFFIXES", "load_workload"]

#: File name endings :func:`load_workload` understands (matched case-insensitively).
SUPPORTED_SUFFIXES: tuple[str, ...] = (
    ".swf",
    ".swf.gz",
    ".parquet",
    ".csv",
    ".csv.gz",
    ".sacct",
    ".sacct.gz",
    ".psv",
    ".psv.gz",
    ".json",
    ".txt",
    EURORA_SUFFIX,
)
_SACCT_SUFFIXES = (".sacct", ".sacct.gz", ".psv", ".psv.gz")


def load_workload(
    path: str | Path, *, machine_size: int | None = None, strict: bool = False, timezone: str | None = None
) -> ReadResult:
    """Read a workload by file name: SWF (``.swf``, ``.swf.gz``) or a canonical table (``.parquet``, ``.csv``,
    ``.csv.gz``); anything else is a :class:`WorkloadError` listing the supported formats.

    A Parquet file with PM100's schema (``node_power_consumption`` and ``num_nodes_alloc``) goes to
    :func:`read_pm100` (machine size 980 nodes unless given). Slurm ``sacct`` output (``-P`` text or ``--json``)
    goes to :func:`read_sacct`: by the endings ``.sacct``/``.psv`` (optionally gzipped), or by content for
    ``.json``, ``.txt`` and other endings; ``timezone`` (IANA name, default UTC) is the zone of its naive local
    times and is not used by the other formats.
    Eurora instances (``.log_crypt``, or a directory holding them) go to :func:`read_eurora`.
    """
    path = Path(path)
    name = path.name.lower()
    if name.endswith(EURORA_SUFFIX) or is_eurora_dir(path):
        return read_eurora(path, machine_size=machine_size, strict=strict)
    if name.endswith((".swf", ".swf.gz")):
        return read_swf(path, machine_size=machine_size, strict=strict)
    if name.endswith(".parquet") and is_pm100_parquet(path):
        if machine_size is None:
            return read_pm100(path, strict=strict)
        return read_pm100(path, machine_size=machine_size, strict=strict)
    if name.endswith((".parquet", ".csv", ".csv.gz")):
        return read_table(path, machine_size=machine_size, strict=strict)
    if name.endswith(_SACCT_SUFFIXES) or (path.exists() and is_sacct_file(path)):
        return read_sacct(path, machine_size=machine_size, strict=strict, timezone=timezone or "UTC")
    supported = ", ".join(SUPPORTED_SUFFIXES)
    raise WorkloadError(f"{path}: unsupported workload format; supported file endings: {supported}")
