"""One entry point for every workload file, so the CLI and notebooks need not know which reader to call.

The reader is chosen by the formats' registry (``workload/formats.py``, one declaration per format): by the
file's name and, where a name is shared or missing, by its content: a ``.json`` file is a Batsim workload when it
has ``nb_res`` or jobs with ``subtime``, and ``sacct --json`` output when its jobs have ``job_id`` (and ``time``);
a file with another ending is tried as JSON, sacct text or SWF by its first bytes. A workload of which every
record was rejected is an error that says why (``core/rejects.py``), not an empty table that a command would
later call "no jobs".
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wattsched.core.bounded_input import read_input_bytes
from wattsched.core.rejects import AllRejectedError
from wattsched.core.schema import ReadResult, WorkloadError
from wattsched.core.structured_input import load_json
from wattsched.workload.batsim import is_batsim_doc
from wattsched.workload.columns import parse_columns
from wattsched.workload.formats import FORMATS, ReadOptions, WorkloadFormat, supported_suffixes

__all__ = ["SUPPORTED_SUFFIXES", "TABLE_SUFFIXES", "check_file", "detect_json", "format_of", "load_workload"]

#: File name endings :func:`load_workload` understands (matched case-insensitively), from the registry.
SUPPORTED_SUFFIXES: tuple[str, ...] = supported_suffixes()
#: Job tables: the files a column mapping (``columns=``) applies to.
TABLE_SUFFIXES: tuple[str, ...] = tuple(s for f in FORMATS if f.table for s in f.suffixes)
#: Bytes of a file read to recognise it (a Batsim or sacct JSON names its keys in its first job).
_HEAD = 1 << 20


def load_workload(
    path: str | Path,
    *,
    machine_size: int | None = None,
    strict: bool = False,
    columns: str | Mapping[str, str] | None = None,
    timezone: str | None = None,
) -> ReadResult:
    """Read a workload in any registered format (docs/workloads.md's table; ``workload/formats.py``): SWF, a
    job table (``.parquet``, ``.csv``, ``.csv.gz``), a Batsim workload or ``sacct --json`` output (``.json``,
    told apart by content), sacct ``-P`` text, PM100's Parquet job table (by its power columns; 980 nodes unless
    given) or Eurora instances (``.log_crypt``, or a directory holding them). Anything else is a
    :class:`WorkloadError` naming the file and what was expected.

    ``columns`` maps canonical columns to a job table's own columns or expressions
    (:mod:`wattsched.workload.columns`: ``"runtime=run_time,size=nodes"``, a TOML file, or a dict); it makes the
    file a job table even when PM100's columns are present. ``timezone`` (IANA name) is the zone of the naive
    wall-clock times of the formats that read them (sacct, Eurora: the table's "time zone" column; default UTC)
    and is not used by the others. ``machine_size`` overrides what the file declares (an SWF header's MaxProcs,
    Parquet metadata, a Batsim ``nb_res``).
    """
    path = Path(path)
    mapping = parse_columns(columns)
    options = ReadOptions(machine_size, strict, timezone, mapping)
    if mapping is not None:
        table = next(f for f in FORMATS if f.table)
        if not path.name.lower().endswith(TABLE_SUFFIXES):
            raise WorkloadError(
                f"{path}: a column mapping applies to job tables ({', '.join(TABLE_SUFFIXES)}); this file's format"
                " has fixed fields"
            )
        read = table.read(path, options, None)
    else:
        fmt, hint = format_of(path)
        read = fmt.read(path, options, hint)
    if read.jobs.is_empty() and not read.rejects.is_empty():
        raise AllRejectedError(str(path), read.rejects, read.provenance.format)
    return read


def format_of(path: Path) -> tuple[WorkloadFormat, Any]:
    """The registered format of ``path``, by name, else by content, with what the content check found; a
    one-line :class:`WorkloadError` naming the file otherwise."""
    name = path.name.lower()
    for fmt in FORMATS:
        if fmt.claims_name(path, name):
            return fmt, None
    check_file(path)
    head = _head(path)
    for fmt in FORMATS:
        if fmt.claims_content is not None and fmt.claims_content(path, head):
            return fmt, None
    kinds = ", ".join(f.label for f in FORMATS if f.claims_content is not None)
    raise WorkloadError(
        f"{path}: unsupported workload format (its content is none of {kinds}); supported file endings: "
        f"{', '.join(SUPPORTED_SUFFIXES)}"
    )


def check_file(path: Path) -> None:
    """A one-line :class:`WorkloadError` unless ``path`` is a regular file."""
    if not path.exists():
        raise WorkloadError(f"{path}: file does not exist")
    if not path.is_file():
        raise WorkloadError(f"{path}: not a regular file (nor a folder of Eurora instances)")


def _head(path: Path) -> str:
    """The first bytes of ``path`` as text (gunzipped by its magic bytes)."""
    try:
        with path.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        with gzip.open(path, "rb") if gz else path.open("rb") as fh:
            return fh.read(_HEAD).decode("utf-8", errors="replace")
    except (OSError, EOFError) as exc:
        raise WorkloadError(f"{path}: cannot read: {exc}") from exc


def detect_json(path: Path, head: str | None = None) -> tuple[str, Any]:
    """``("batsim" | "sacct", parsed document or None)`` for a JSON workload, by content: Batsim's ``nb_res`` or
    ``subtime`` against sacct's ``job_id``. When the first megabyte does not settle it, the whole document is
    parsed and its first job looked at; an unknown layout is a one-line :class:`WorkloadError`."""
    head = _head(path) if head is None else head
    batsim = '"nb_res"' in head or '"subtime"' in head
    sacct = '"job_id"' in head
    if batsim != sacct:
        return ("batsim" if batsim else "sacct"), None
    try:
        # gunzipped within the limit of core.bounded_input; nested at most core.structured_input.MAX_DEPTH
        doc = load_json(read_input_bytes(path), path, error=WorkloadError)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkloadError(f"{path}: not readable JSON: {exc}") from exc
    if is_batsim_doc(doc):
        return "batsim", doc
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    first = jobs[0] if isinstance(jobs, list) and jobs else None
    if (isinstance(first, dict) and "job_id" in first) or jobs == []:
        return "sacct", None
    keys = sorted(doc)[:8] if isinstance(doc, dict) else type(doc).__name__
    raise WorkloadError(
        f"{path}: unknown JSON layout (top level: {keys}); expected a Batsim workload ('nb_res' and 'jobs' with "
        "'subtime') or sacct --json output ('jobs' with 'job_id' and 'time')"
    )
