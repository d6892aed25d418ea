"""``read_swf``: the file's bytes → tokenizer → canonical and ``swf_*`` columns → :func:`finish_read`.
The conventions are in :mod:`wattsched.workload.swf`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wattsched.core.bounded_input import read_input_bytes
from wattsched.core.schema import Check, Provenance, ReadResult, WorkloadError, finish_read, replace_raw
from wattsched.workload.swf.dialect import is_semicolon_swf, restore_labels, rewrite_semicolon_swf
from wattsched.workload.swf.fields import STATUS_TO_STATE, SWF_EXTRA, SWF_FIELDS
from wattsched.workload.swf.header import header_machine_size, header_number, parse_header
from wattsched.workload.swf.tokenizer import IS_INT, LINE_OK, POW10, parse_line_slow, scan, strtod_usable

#: Negative submit times are SWF-specific (relative times, -1 = unknown): judged before the canonical rules.
_NEGATIVE_SUBMIT: Check = (
    "submit_time",
    pl.col("submit_time") < 0,
    "submit time is negative (-1 means unknown in SWF)",
)


def _read_bytes(path: Path) -> bytes:
    """File bytes, gunzipped when the name ends in ``.gz`` (at most the decompressed-input limit of
    ``core.bounded_input``); WorkloadError when missing, unreadable or too large."""
    return read_input_bytes(path, gzip_by_name=True)


def _decode(raw: bytes) -> str:
    return raw.rstrip(b"\r").decode("utf-8", errors="replace")


def _conventions(machine_size: int | None, machine_from: str) -> list[str]:
    out = [
        "size = requested processors (SWF field 8) if > 0, else allocated processors (field 5)",
        "walltime = requested time (field 9); when it is missing (<= 0) walltime = run time (field 4)",
        "runtime = run time (field 4); -1 (unknown) becomes null and the job is rejected",
        "submit_time kept as given (seconds); absolute time = UnixStartTime + submit_time",
        "user_id, group_id, app_id, queue, partition = fields 12-16, null for -1; the last three as strings",
        "state from status (field 11): 1 COMPLETED, 0 FAILED, 5 CANCELLED, anything else null",
        "swf_* columns keep raw fields 3,5,6,7,8,9,10,11,17,18 with -1 (unknown) as null",
        "rejected: < 18 fields, non-numeric or non-integer field value, negative submit time, unknown or"
        " negative run time, size <= 0 or unknown, size > machine size, duplicate job id",
        "comment lines (';') and blank lines skipped; fields after the 18th ignored",
        "jobs sorted in queue order (submit_time, job_id)",
    ]
    if machine_size is None:
        out.append("machine size unknown (no argument, no MaxProcs/MaxNodes): no size-vs-machine rejects")
    else:
        out.append(f"machine size {machine_size} from {machine_from}")
    return out


def read_swf(path: str | Path, *, machine_size: int | None = None, strict: bool = False) -> ReadResult:
    """Read an SWF v2.2 file (``.gz`` transparently) into the canonical job table, rejecting unusable lines.

    ``machine_size`` overrides the header's MaxProcs/MaxNodes. ``strict=True`` raises :class:`WorkloadError`
    naming the first reject instead of returning them. See :mod:`wattsched.workload.swf` for every convention.
    """
    path = Path(path)
    source = str(path)
    data = _read_bytes(path)
    labels: dict[str, dict[int, str]] | None = None
    if is_semicolon_swf(data):  # the EAMC module traces: ';' between fields, names in the text fields
        data, labels = rewrite_semicolon_swf(data)
    buf = np.frombuffer(data, dtype=np.uint8)
    scanned = scan(buf, POW10, IS_INT, strtod_usable())
    vals, d_line, d_start, d_end, d_status, d_extra, c_line, c_start, c_end, n_blank = scanned
    n_records = int(d_line.size)
    if n_records == 0 and c_line.size == 0:
        raise WorkloadError(f"{path}: file is empty (no data lines, no header)")
    spans = zip(c_start.tolist(), c_end.tolist(), strict=True)
    header = parse_header([_decode(data[s:e]) for s, e in spans])
    if n_records == 0:
        raise WorkloadError(f"{path}: no data lines (only {c_line.size} comment/header lines)")
    machine, machine_from = header_machine_size(machine_size, header)

    # Python path for the few flagged lines (it is authoritative for them).
    parse_rejects: list[dict[str, Any]] = []
    keep = np.ones(n_records, dtype=bool)
    for k in np.flatnonzero(d_status != LINE_OK).tolist():
        raw = data[int(d_start[k]) : int(d_end[k])]
        values, field_, reason, job_id = parse_line_slow(raw)
        if values is None:
            keep[k] = False
            line = int(d_line[k])
            row = {"source": source, "line": line, "job_id": job_id, "field": field_, "reason": reason}
            parse_rejects.append(row | {"raw": _decode(raw)})
        else:
            vals[:, k] = values

    raw_df = pl.DataFrame({name: vals[j] for j, name in enumerate(SWF_FIELDS)} | {"__line": d_line})
    if not keep.all():
        raw_df = raw_df.filter(pl.Series(keep))
    jobs = raw_df.select(_canonical_exprs())
    if labels is not None:
        jobs = restore_labels(jobs, labels)

    def line_text(line: int) -> str:
        k = int(np.searchsorted(d_line, line))
        return _decode(data[int(d_start[k]) : int(d_end[k])])

    n_extra = int(d_extra.sum())
    conventions = _conventions(machine, machine_from)
    if labels is not None:
        conventions.append(
            "fields separated by ';' (EAMC module traces): read as SWF; text users and groups numbered by first "
            "appearance, text application, queue and partition (module) fields kept by name"
        )
    if n_extra:
        conventions.append(f"{n_extra} data lines had extra fields after the 18th (ignored)")
    if n_blank:
        conventions.append(f"{n_blank} blank lines skipped")
    start = header_number(header, "UnixStartTime")
    tz = header.get("TimeZoneString")
    provenance = Provenance(
        source=source,
        format="swf",
        machine_size=machine,
        size_unit="processors",
        unix_start_time=start,
        timezone=tz if isinstance(tz, str) and tz else None,
        header=header,
        n_records=n_records,
        conventions=conventions,
    )
    return finish_read(
        jobs,
        parse_rejects,
        provenance,
        strict=strict,
        line_column="__line",
        checks=[_NEGATIVE_SUBMIT],
        locate=lambda rejects: replace_raw(rejects, line_text),
    )


def _unknown(name: str) -> pl.Expr:
    col = pl.col(name)
    return pl.when(col == -1).then(None).otherwise(col)


def _canonical_exprs() -> list[pl.Expr]:
    """Expressions mapping the 18 raw float columns to canonical and swf_* columns (vectorised)."""
    run = _unknown("run")
    exprs = [
        pl.col("job").cast(pl.Int64).alias("job_id"),
        pl.col("submit").alias("submit_time"),
        pl.when(pl.col("req_time") > 0).then(pl.col("req_time")).otherwise(run).alias("walltime"),
        run.alias("runtime"),
        pl.when(pl.col("req_procs") > 0)
        .then(pl.col("req_procs"))
        .otherwise(_unknown("alloc_procs"))
        .cast(pl.Int64)
        .alias("size"),
        _unknown("user").cast(pl.Int64).alias("user_id"),
        _unknown("group").cast(pl.Int64).alias("group_id"),
        _unknown("executable").cast(pl.Int64).cast(pl.Utf8).alias("app_id"),
        _unknown("queue").cast(pl.Int64).cast(pl.Utf8).alias("queue"),
        _unknown("partition").cast(pl.Int64).cast(pl.Utf8).alias("partition"),
        pl.col("status")
        .cast(pl.Int64)
        .replace_strict(STATUS_TO_STATE, default=None, return_dtype=pl.Utf8)
        .alias("state"),
    ]
    exprs += [_unknown(name).cast(dtype).alias(f"swf_{name}") for name, dtype in SWF_EXTRA.items()]
    exprs.append(pl.col("__line"))
    return exprs
