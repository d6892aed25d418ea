"""The sacct reader: either form of sacct output → the rules common to both (never started, not ended, walltime
unknown) → :func:`~wattsched.core.schema.finish_read`. The conventions are in :mod:`wattsched.workload.sacct`."""

from __future__ import annotations

import gzip
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import polars as pl

from wattsched.core.bounded_input import read_input_bytes
from wattsched.core.errors import InputWarning
from wattsched.core.schema import Provenance, ReadResult, WorkloadError, finish_read, replace_raw
from wattsched.workload.sacct.clock import Clock
from wattsched.workload.sacct.json import read_json
from wattsched.workload.sacct.parsable import read_parsable
from wattsched.workload.sacct.record import Reject, reject_row

#: The candidate job frame: canonical columns, the kept ``sacct_*`` ones and the record's line.
_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(), "submit_time": pl.Float64(), "walltime": pl.Float64(), "runtime": pl.Float64(),
    "size": pl.Int64(), "user_id": pl.Int64(), "group_id": pl.Int64(), "name": pl.Utf8(), "queue": pl.Utf8(),
    "partition": pl.Utf8(), "state": pl.Utf8(), "cores": pl.Int64(), "gpus": pl.Int64(), "mem": pl.Float64(),
    "energy": pl.Float64(), "trace_start_time": pl.Float64(), "trace_end_time": pl.Float64(),
    "sacct_eligible_time": pl.Float64(), "sacct_job_id": pl.Utf8(), "sacct_user": pl.Utf8(),
    "sacct_qos": pl.Utf8(), "sacct_account": pl.Utf8(), "sacct_exit_code": pl.Utf8(), "sacct_nodelist": pl.Utf8(),
    "__line": pl.Int64(),
}  # fmt: skip


def is_sacct_file(path: str | Path, delimiter: str = "|") -> bool:
    """True when ``path`` looks like sacct output: a JSON object with a ``jobs`` key near the start, or a
    delimited header with a JobID/JobIDRaw field and Submit (for ``load_workload``'s dispatch)."""
    try:
        with Path(path).open("rb") as fh:
            magic = fh.read(2)
        opener: Callable[..., Any] = gzip.open if magic == b"\x1f\x8b" else open
        with opener(Path(path), "rb") as fh:
            head = fh.read(65536).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return False
    stripped = head.lstrip()
    if stripped.startswith("{"):
        return '"jobs"' in stripped
    first = stripped.split("\n", 1)[0].rstrip("\r")
    names = {n.strip().lower() for n in first.split(delimiter)}
    return bool(names & {"jobid", "jobidraw"}) and "submit" in names


def _read_text(path: Path) -> str:
    """The file as text (gunzipped by its magic bytes, undecodable bytes replaced)."""
    return read_input_bytes(path).decode("utf-8", errors="replace")  # bounded: core.bounded_input


def read_sacct(
    path: str | Path,
    *,
    machine_size: int | None = None,
    timezone: str | None = None,
    strict: bool = False,
    size_unit: Literal["nodes", "processors"] = "nodes",
    delimiter: str = "|",
    walltime_fallback: float | Literal["runtime"] | None = None,
    ambiguous: Literal["earlier", "later"] = "earlier",
) -> ReadResult:
    """Read ``sacct -P`` text or ``sacct --json`` output into the canonical job table, rejecting unusable records.

    ``timezone`` is the sacct client's zone for naive local times (IANA name); None reads them as UTC and says so
    (an :class:`~wattsched.core.errors.InputWarning` when a run time is End − Start of such times, see
    :func:`_zone_warning`). ``size_unit`` picks NNodes or NCPUS as ``size``. ``walltime_fallback`` replaces an
    unknown limit (seconds, or ``"runtime"``) instead of rejecting. ``ambiguous`` resolves DST fall-back local
    times. ``strict=True`` raises :class:`WorkloadError` naming the first reject. See :mod:`wattsched.workload.sacct`
    for every convention.
    """
    path = Path(path)
    source = str(path)
    if size_unit not in ("nodes", "processors"):
        raise WorkloadError(f"size_unit must be 'nodes' or 'processors', got {size_unit!r}")
    if machine_size is not None and int(machine_size) < 1:
        raise WorkloadError(f"machine_size must be positive, got {machine_size!r}")
    if not delimiter:
        raise WorkloadError("delimiter must not be empty")
    if ambiguous not in ("earlier", "later"):
        raise WorkloadError(f"ambiguous must be 'earlier' or 'later', got {ambiguous!r}")
    if not (walltime_fallback is None or walltime_fallback == "runtime" or isinstance(walltime_fallback, int | float)):
        raise WorkloadError(f"walltime_fallback must be seconds, 'runtime' or None, got {walltime_fallback!r}")
    zone = timezone or "UTC"
    clock = Clock(zone, ambiguous)
    text = _read_text(path)
    if not text.strip():
        raise WorkloadError(f"{source}: file is empty")
    is_json = text.lstrip().startswith("{")
    if is_json:
        parsed, rejects, header, notes = read_json(text, source, size_unit)
    else:
        parsed, rejects, header, notes = read_parsable(text, source, delimiter, clock, size_unit)

    rows: list[dict[str, Any]] = []
    raw_by_line: dict[int, str] = {}
    n_fallback = 0
    n_derived = 0  # run times computed as End − Start (no Elapsed)
    for line, jid, raw, v in parsed:
        raw_by_line[line] = raw
        if v["start"] is None:
            why = f"job never started (Start unknown, state {v['state']}): run time unknown"
            rejects.append(reject_row(source, line, jid, Reject("Start", why), raw))
            continue
        if v["end"] is None:
            why = f"job has not ended (End unknown, state {v['state']}): run time not final"
            rejects.append(reject_row(source, line, jid, Reject("End", why), raw))
            continue
        submit_field = "time.submission" if is_json else "Submit"
        if v["submit"] is not None and v["submit"] > v["start"]:
            why = f"Submit ({v['submit']:.0f}) is after Start ({v['start']:.0f}): the record's times are inconsistent"
            rejects.append(reject_row(source, line, jid, Reject(submit_field, why), raw))
            continue
        if v["end"] < v["start"]:
            why = f"End ({v['end']:.0f}) is before Start ({v['start']:.0f}): the record's times are inconsistent"
            rejects.append(reject_row(source, line, jid, Reject("time.end" if is_json else "End", why), raw))
            continue
        runtime = v["elapsed"] if v["elapsed"] is not None else v["end"] - v["start"]
        n_derived += v["elapsed"] is None
        walltime = v["walltime"]
        if walltime is None and walltime_fallback is not None:
            walltime = runtime if walltime_fallback == "runtime" else float(walltime_fallback)
            n_fallback += 1
        if walltime is None:
            field = "time.limit" if is_json else "TimelimitRaw"
            why = (
                "walltime unknown (UNLIMITED, Partition_Limit, Slurm's 4294967295 'no limit' or an empty time"
                " limit); give walltime_fallback to keep such jobs"
            )
            rejects.append(reject_row(source, line, jid, Reject(field, why), raw))
            continue
        rows.append({
            "job_id": jid, "submit_time": v["submit"], "walltime": walltime, "runtime": runtime, "size": v["size"],
            "user_id": v["user_id"], "group_id": v["group_id"], "name": v["name"], "queue": v["partition"],
            "partition": v["partition"], "state": v["state"], "cores": v["ncpus"], "gpus": v["gpus"],
            "mem": v["mem"], "energy": v["energy"], "trace_start_time": v["start"], "trace_end_time": v["end"],
            "sacct_eligible_time": v["eligible"], "sacct_job_id": v["sacct_job_id"], "sacct_user": v["sacct_user"],
            "sacct_qos": v["sacct_qos"], "sacct_account": v["sacct_account"],
            "sacct_exit_code": v["sacct_exit_code"], "sacct_nodelist": v["sacct_nodelist"], "__line": line,
        })  # fmt: skip
    frame = pl.DataFrame(rows, schema=_SCHEMA) if rows else pl.DataFrame(schema=_SCHEMA)
    conventions = notes + _conventions(zone, size_unit, walltime_fallback, ambiguous, machine_size)
    if clock.n_ambiguous:
        conventions.append(f"{clock.n_ambiguous} DST-ambiguous local time(s) read as the {ambiguous} occurrence")
    if clock.n_gap:
        conventions.append(f"{clock.n_gap} nonexistent local time(s) (DST gap) read with the pre-transition offset")
    if n_fallback:
        conventions.append(f"{n_fallback} job(s) with an unknown time limit got the walltime fallback")
    header["input_timezone"] = zone
    warning = _zone_warning(source, timezone, n_derived if clock.n_local else 0)
    if warning:
        conventions.append(warning)
        warnings.warn(warning, InputWarning, stacklevel=2)
    provenance = Provenance(
        source=source,
        format="sacct-json" if is_json else "sacct",
        machine_size=machine_size,
        size_unit=size_unit,
        unix_start_time=0.0,
        timezone="UTC",
        header=header,
        n_records=int(header["records"]),
        conventions=conventions,
    )
    return finish_read(
        frame,
        rejects,
        provenance,
        strict=strict,
        line_column="__line",
        locate=lambda sem: replace_raw(sem, raw_by_line.__getitem__),
        unit="record",
    )


def _zone_warning(source: str, timezone: str | None, n_local_runtimes: int) -> str | None:
    """The one line to show when run times depend on a time zone nobody gave: End − Start of naive local times
    read as UTC is the wall-clock difference, off by the real zone's shift for a run across one of its DST changes
    (an hour at each). Said rather than guessed: the sacct client's zone is not in the file, and the machine
    reading it may be elsewhere. Runtimes from Elapsed, epoch or offset-qualified times do not depend on it."""
    if timezone is not None or not n_local_runtimes:
        return None
    return (
        f"{source}: no time zone given (--timezone): local times read as UTC, and {n_local_runtimes:,} run time(s)"
        " computed as End − Start from them (no Elapsed/ElapsedRaw field); a run across a DST change of the"
        " cluster's zone is off by its shift: give --timezone"
    )


def _conventions(
    timezone: str, size_unit: str, fallback: float | str | None, ambiguous: str, machine_size: int | None
) -> list[str]:
    size = "NNodes (AllocTRES node=)" if size_unit == "nodes" else "NCPUS (AllocCPUS, AllocTRES cpu=)"
    fb = "rejected (walltime unknown)" if fallback is None else f"replaced by {fallback!r}"
    return [
        f"local times read in {timezone}; output epoch seconds UTC (unix_start_time 0); %s digits are epoch;"
        " Unknown/None/empty are null",
        "job_id = JobIDRaw (else JobID: 123+0 → 123; array tasks, het components > 0, pending array summaries"
        " rejected); non-integer ids rejected",
        "submit_time = Submit; trace_start_time / trace_end_time = Start / End; sacct_eligible_time = Eligible",
        f"walltime = TimelimitRaw × 60 (else Timelimit); UNLIMITED / Partition_Limit / 4294967294-5 / empty {fb}",
        "runtime = ElapsedRaw (else Elapsed, else End − Start)",
        "rejected: never started (no Start), not ended (no End), Submit after Start, End before Start",
        f"size = {size} (unit: {size_unit}); cores = NCPUS; gpus = AllocTRES (else ReqTRES) gres/gpu;"
        " mem = TRES mem in GB (base 1024)",
        "energy = ConsumedEnergyRaw (J), else AllocTRES energy; 0 and NO_VAL are null",
        "user_id = UID else BLAKE2b-48 code of User; group_id = GID else code of Group",
        "queue = partition = Partition; state = State without 'by <uid>' and trailing '+'",
        f"DST fall-back local times read as the {ambiguous} occurrence",
        "kept: sacct_job_id (JobID), sacct_user, sacct_qos, sacct_account, sacct_exit_code, sacct_nodelist",
        "rejected: the canonical rules of schema.validate_jobs (-D requeue duplicates: the first record is kept)",
        f"machine size {machine_size}" if machine_size else "machine size unknown: no size-vs-machine rejects",
        "jobs sorted in queue order (submit_time, job_id)",
    ]
