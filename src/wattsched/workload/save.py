"""One writer for every workload format that :func:`~wattsched.workload.load.load_workload` reads back.

The format follows the file name, as when reading: ``.parquet`` (the internal format: every column, list columns
such as power profiles included, with provenance and machine size in the schema metadata), ``.csv`` /
``.csv.gz`` (for people and tools: flat columns only, no provenance) and ``.swf`` / ``.swf.gz`` (the Standard
Workload Format's 18 fields, the machine size in the header). Export formats that ``load_workload`` cannot read
back, such as Batsim's JSON (:func:`wattsched.workload.batsim.write_batsim`), are not written here.
"""

from __future__ import annotations

from pathlib import Path

from wattsched.core.schema import ReadResult, WorkloadError
from wattsched.workload.swf import write_swf
from wattsched.workload.tableio import write_table

__all__ = ["SAVE_FORMATS", "save_workload", "workload_format"]

#: Format name → the file name endings it is written under (matched case-insensitively).
SAVE_FORMATS: dict[str, tuple[str, ...]] = {
    "parquet": (".parquet",),
    "csv": (".csv", ".csv.gz"),
    "swf": (".swf", ".swf.gz"),
}


def workload_format(path: str | Path) -> str:
    """The format a workload file name asks for (``parquet``, ``csv`` or ``swf``); a :class:`WorkloadError`
    listing the endings otherwise."""
    name = Path(path).name.lower()
    for fmt, endings in SAVE_FORMATS.items():
        if name.endswith(endings):
            return fmt
    endings = ", ".join(e for es in SAVE_FORMATS.values() for e in es)
    raise WorkloadError(f"{path}: cannot write a workload there; its name must end in {endings}")


def save_workload(result: ReadResult, path: str | Path, format: str | None = None) -> list[str]:
    """Write a workload (``result``: jobs and provenance, as :func:`load_workload` or a generator returns them)
    so that :func:`load_workload` reads the same jobs back; the parent directory is created.

    ``format`` (``parquet``, ``csv`` or ``swf``) defaults to the one the file name asks for; when given, it must
    agree with the name, since the name is how ``load_workload`` picks the reader. CSV cannot hold list columns
    (power profiles): they are left out, and their names returned, so that a caller can say so. The rejects are
    not written (they are the input's story, kept in the provenance's counts).
    """
    path = Path(path)
    by_name = workload_format(path)
    if format is not None and format != by_name:
        if format not in SAVE_FORMATS:
            raise WorkloadError(f"unknown workload format {format!r}; choose one of {', '.join(SAVE_FORMATS)}")
        raise WorkloadError(
            f"{path}: a {format} workload must be named *{SAVE_FORMATS[format][0]} (load_workload reads by name)"
        )
    jobs, provenance = result.jobs, result.provenance
    left_out: list[str] = []
    if by_name == "csv":
        left_out = [c for c, dtype in jobs.schema.items() if dtype.is_nested()]
        jobs = jobs.drop(left_out)
    path.parent.mkdir(parents=True, exist_ok=True)
    if by_name == "swf":
        write_swf(jobs, path, provenance=provenance)
    else:
        write_table(jobs, path, provenance=provenance)
    return left_out
