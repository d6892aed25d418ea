"""One entry point for every workload file, so the CLI and notebooks need not know which reader to call.

The reader is chosen by the file's name and, where a name is shared or missing, by its content: a ``.json``
file is a Batsim workload when it has ``nb_res`` or jobs with ``subtime``, and ``sacct --json`` output when its
jobs have ``job_id`` (and ``time``); a file with another ending is tried as sacct text, SWF or JSON by its first
bytes. A workload of which every record was rejected is an error that says why (``core/rejects.py``), not an
empty table that a command would later call "no jobs".
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wattsched.core.rejects import AllRejectedError
from wattsched.core.schema import ReadResult, WorkloadError
from wattsched.workload.batsim import is_batsim_doc, read_batsim
from wattsched.workload.columns import parse_columns
from wattsched.workload.eurora import EURORA_SUFFIX, is_eurora_dir, read_eurora
from wattsched.workload.sacct import is_sacct_file, read_sacct
from wattsched.workload.swf import read_swf
from wattsched.workload.tableio import read_table

__all__ = ["SUPPORTED_SUFFIXES", "TABLE_SUFFIXES", "detect_json", "load_workload"]

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
    ".json.gz",
    ".txt",
    EURORA_SUFFIX,
)
#: Job tables: the files a column mapping (``columns=``) applies to.
TABLE_SUFFIXES = (".parquet", ".csv", ".csv.gz")
_SACCT_SUFFIXES = (".sacct", ".sacct.gz", ".psv", ".psv.gz")
_JSON_SUFFIXES = (".json", ".json.gz")
#: Bytes of a file read to recognise it (a Batsim or sacct JSON names its keys in its first job).
_HEAD = 1 << 20
_SWF_LINE = re.compile(r"^\s*(;|-?\d+(\.\d+)?(\s+-?\d+(\.\d+)?){17,})")


def load_workload(
    path: str | Path,
    *,
    machine_size: int | None = None,
    strict: bool = False,
    columns: str | Mapping[str, str] | None = None,
    timezone: str | None = None,
) -> ReadResult:
    """Read a workload: SWF (``.swf``, ``.swf.gz``), a job table (``.parquet``, ``.csv``, ``.csv.gz``), a
    Batsim workload or ``sacct --json`` output (``.json``, told apart by content), sacct ``-P`` text
    (``.sacct``/``.psv``, optionally gzipped, or by content for ``.txt`` and other endings), PM100's Parquet job
    table (by its ``node_power_consumption`` and ``num_nodes_alloc`` columns; 980 nodes unless given) or Eurora
    instances (``.log_crypt``, or a directory holding them). Anything else is a :class:`WorkloadError` naming
    the file and what was expected.

    ``columns`` maps canonical columns to a job table's own columns or expressions
    (:mod:`wattsched.workload.columns`: ``"runtime=run_time,size=nodes"``, a TOML file, or a dict); it makes the
    file a job table even when PM100's columns are present. ``timezone`` (IANA name, default UTC) is the zone of
    sacct's naive local times and is not used by the other formats. ``machine_size`` overrides what the file
    declares (an SWF header's MaxProcs, Parquet metadata, a Batsim ``nb_res``).
    """
    path = Path(path)
    mapping = parse_columns(columns)
    read = _dispatch(path, machine_size, strict, mapping, timezone or "UTC")
    if read.jobs.is_empty() and not read.rejects.is_empty():
        raise AllRejectedError(str(path), read.rejects, read.provenance.format)
    return read


def _dispatch(
    path: Path, machine_size: int | None, strict: bool, mapping: dict[str, str] | None, tz: str
) -> ReadResult:
    name = path.name.lower()
    if mapping is not None:
        if not name.endswith(TABLE_SUFFIXES):
            raise WorkloadError(
                f"{path}: a column mapping applies to job tables ({', '.join(TABLE_SUFFIXES)}); this file's format"
                " has fixed fields"
            )
        return read_table(path, machine_size=machine_size, strict=strict, columns=mapping)
    if name.endswith(EURORA_SUFFIX) or is_eurora_dir(path):
        return read_eurora(path, machine_size=machine_size, strict=strict)
    if name.endswith((".swf", ".swf.gz")):
        return read_swf(path, machine_size=machine_size, strict=strict)
    # deferred: the PM100 reader loads pyarrow (~30 ms), which an SWF or CSV run does not need
    from wattsched.workload.pm100 import is_pm100_parquet, read_pm100

    if name.endswith(".parquet") and is_pm100_parquet(path):
        if machine_size is None:
            return read_pm100(path, strict=strict)
        return read_pm100(path, machine_size=machine_size, strict=strict)
    if name.endswith(TABLE_SUFFIXES):
        return read_table(path, machine_size=machine_size, strict=strict)
    if name.endswith(_SACCT_SUFFIXES):
        return read_sacct(path, machine_size=machine_size, strict=strict, timezone=tz)
    if not path.exists():
        raise WorkloadError(f"{path}: file does not exist")
    if not path.is_file():
        raise WorkloadError(f"{path}: not a regular file (nor a folder of Eurora instances)")
    head = _head(path)
    if name.endswith(_JSON_SUFFIXES) or head.lstrip().startswith(("{", "[")):
        kind, doc = detect_json(path, head)
        if kind == "batsim":
            return read_batsim(path, machine_size=machine_size, strict=strict, doc=doc)
        return read_sacct(path, machine_size=machine_size, strict=strict, timezone=tz)
    if is_sacct_file(path):
        return read_sacct(path, machine_size=machine_size, strict=strict, timezone=tz)
    lines = [ln for ln in head.splitlines()[:20] if ln.strip()]
    if lines and all(_SWF_LINE.match(ln) for ln in lines):
        return read_swf(path, machine_size=machine_size, strict=strict)
    supported = ", ".join(SUPPORTED_SUFFIXES)
    raise WorkloadError(
        f"{path}: unsupported workload format (its content is neither SWF, sacct nor Batsim/sacct JSON); "
        f"supported file endings: {supported}"
    )


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
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
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
