"""``write_swf``: a canonical job table → SWF v2.2 with a full header, keeping the raw ``swf_*`` fields that
still agree with the canonical columns (so read → write → read reproduces a trace)."""

from __future__ import annotations

import datetime as _dt
import gzip
from importlib import metadata as _metadata
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.schema import Provenance, WorkloadError
from wattsched.core.store import atomic_write_bytes
from wattsched.workload.swf.fields import STATE_TO_STATUS, STATUS_TO_STATE, SWF_FIELDS

_REGENERATED = frozenset(
    {"Version", "Conversion", "MaxJobs", "MaxRecords", "UnixStartTime", "TimeZoneString", "MaxNodes",
     "MaxProcs"}
)  # fmt: skip


def _fmt_column(s: pl.Series) -> pl.Series:
    """An SWF field as text: ``-1`` for unknown or non-finite; integers bare; other floats in shortest
    round-trip form (polars prints floats exactly as ``float()`` reads them back)."""
    if s.dtype.is_integer():
        return s.cast(pl.Int64).fill_null(-1).cast(pl.Utf8)
    x = s.cast(pl.Float64)
    frame = pl.DataFrame({"x": x})
    col = pl.col("x")
    text = (
        pl.when(col.is_null() | ~col.is_finite())
        .then(pl.lit("-1"))
        .when((col == col.floor()) & (col.abs() < 1e15))
        .then(col.cast(pl.Int64).cast(pl.Utf8))
        .otherwise(col.cast(pl.Utf8))
    )
    return frame.select(text.alias(s.name)).to_series()


def _fmt_scalar(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _code_column(name: str, values: pl.Series) -> tuple[pl.Expr, dict[int, str]]:
    """Strings to SWF numbers: integer strings stay themselves (except "-1", which means unknown); if any
    value is not one, every distinct value is numbered 1.. in first-seen order and the names are returned."""
    text = values.cast(pl.Utf8)
    present = text.drop_nulls()
    if present.str.contains(r"^(0|-?[1-9][0-9]{0,17})$").all() and not (present == "-1").any():
        return pl.col(name).cast(pl.Utf8).cast(pl.Int64), {}
    names = present.unique(maintain_order=True).to_list()
    codes = {value: i + 1 for i, value in enumerate(names)}
    expr = pl.col(name).cast(pl.Utf8).replace_strict(codes, default=None, return_dtype=pl.Int64)
    return expr, {i: value for value, i in codes.items()}


def write_swf(
    jobs: pl.DataFrame,
    path: str | Path,
    *,
    provenance: Provenance | None = None,
    machine_size: int | None = None,
) -> None:
    """Write a canonical job table as SWF v2.2 with a full header (gzip when the name ends in ``.gz``).

    Raw ``swf_*`` columns are written back whenever they agree with the canonical columns, so read →
    write → read reproduces all 18 fields of valid jobs; otherwise the canonical value wins
    (req_procs=size, req_time=walltime, run=runtime, wait=-1 unless a ``start_time`` column exists).
    A walltime of 0 cannot be expressed (SWF treats a requested time ≤ 0 as missing). Non-integer
    app_id/queue/partition strings are numbered 1.. and the mapping is written to the header.
    """
    path = Path(path)
    missing = [c for c in ("job_id", "submit_time", "walltime", "runtime", "size") if c not in jobs.columns]
    if missing:
        raise WorkloadError(f"cannot write SWF to {path}: job table lacks required column(s) {missing}")
    machine = machine_size if machine_size is not None else (provenance.machine_size if provenance else None)
    cols = set(jobs.columns)
    null = pl.lit(None, dtype=pl.Float64)

    def raw(name: str) -> pl.Expr | None:
        return pl.col(f"swf_{name}") if f"swf_{name}" in cols else None

    def opt(name: str) -> pl.Expr:
        return pl.col(name) if name in cols else null

    size, walltime, runtime = pl.col("size"), pl.col("walltime"), pl.col("runtime")
    if (wait := raw("wait")) is None:
        wait = pl.col("start_time") - pl.col("submit_time") if "start_time" in cols else null
    alloc = raw("alloc_procs")
    alloc = size if alloc is None else alloc
    # Raw requested values are kept when the reader's rule still derives the canonical column from them.
    req_procs: pl.Expr = size
    if (rp := raw("req_procs")) is not None:
        derived = pl.when(rp > 0).then(rp).otherwise(alloc)
        req_procs = pl.when(derived == size).then(rp).otherwise(size)
    req_time: pl.Expr = walltime
    if (rt := raw("req_time")) is not None:
        derived = pl.when(rt > 0).then(rt).otherwise(runtime)
        req_time = pl.when(derived == walltime).then(rt).otherwise(walltime)
    state = opt("state").cast(pl.Utf8)
    from_state = state.replace_strict(STATE_TO_STATUS, default=None, return_dtype=pl.Int64)
    status: pl.Expr = from_state
    if (st := raw("status")) is not None:
        state_of_raw = st.replace_strict(STATUS_TO_STATE, default=None, return_dtype=pl.Utf8)
        consistent = state_of_raw.eq_missing(state)
        status = pl.when(consistent).then(st).otherwise(from_state)

    mapped_notes: list[str] = []
    coded: dict[str, pl.Expr] = {}
    for col, key in (("app_id", "Executable"), ("queue", "Queue"), ("partition", "Partition")):
        if col not in cols:
            coded[col] = null
            continue
        coded[col], names = _code_column(col, jobs[col])
        for num, name in names.items():
            note = f"Note: executable {num} is {name}" if key == "Executable" else f"{key}: {num} {name}"
            mapped_notes.append(note)

    fields = [
        pl.col("job_id"), pl.col("submit_time"), wait, runtime, alloc, raw("avg_cpu"), raw("used_mem"),
        req_procs, req_time, raw("req_mem"), status, opt("user_id"), opt("group_id"), coded["app_id"],
        coded["queue"], coded["partition"], raw("preceding_job"), raw("think_time"),
    ]  # fmt: skip
    named = zip(fields, SWF_FIELDS, strict=True)
    table = jobs.select([(null if f is None else f).alias(name) for f, name in named])
    body = pl.DataFrame([_fmt_column(table[name]) for name in SWF_FIELDS]).select(
        pl.concat_str(SWF_FIELDS, separator=" ").alias("line")
    )
    prov_header = dict(provenance.header) if provenance else {}
    lines = _header_lines(jobs, provenance, prov_header, machine, mapped_notes)
    head = "\n".join(lines) + "\n"
    text = head.encode("utf-8") + ("\n".join(body["line"].to_list()) + "\n").encode("ascii")
    if path.suffix.lower() == ".gz":
        text = gzip.compress(text, compresslevel=6, mtime=0)
    atomic_write_bytes(path, text)  # a kill leaves the former file, never half an SWF


def _header_lines(
    jobs: pl.DataFrame,
    provenance: Provenance | None,
    prov_header: dict[str, Any],
    machine: int | None,
    mapped_notes: list[str],
) -> list[str]:
    try:
        version = _metadata.version("wattsched")
    except _metadata.PackageNotFoundError:  # pragma: no cover - source checkout without install
        version = "unknown"
    today = _dt.date.today().isoformat()
    out = ["; Version: 2.2"]
    out.append(f"; Computer: {_first(prov_header.get('Computer')) or 'unknown'}")
    source = f" from {provenance.source} ({provenance.format})" if provenance else ""
    out.append(f"; Conversion: wattsched {version} write_swf{source} {today}")
    out.append(f"; MaxJobs: {jobs.height}")
    out.append(f"; MaxRecords: {jobs.height}")
    unix_start = provenance.unix_start_time if provenance else None
    if unix_start is not None:
        out.append(f"; UnixStartTime: {_fmt_scalar(unix_start)}")
    tz = provenance.timezone if provenance else None
    if tz:
        out.append(f"; TimeZoneString: {tz}")
    unit = provenance.size_unit if provenance else "processors"
    if machine is not None:
        if unit == "nodes":
            out.append(f"; MaxNodes: {machine}")
        else:
            nodes = _first(prov_header.get("MaxNodes"))
            if nodes:
                out.append(f"; MaxNodes: {nodes}")
            out.append(f"; MaxProcs: {machine}")
    for key, value in prov_header.items():
        if key in _REGENERATED or key == "Computer":
            continue
        for item in value if isinstance(value, list) else [value]:
            first, *rest = str(item).split("\n")
            out.append(f"; {key}: {first}".rstrip())
            out.extend(f";       {r}" for r in rest)
    if unit == "nodes":
        out.append("; Note: job sizes (fields 5 and 8) are nodes, not processors")
    out.extend(f"; {m}" for m in mapped_notes)
    out.append(";")
    return out


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return None if value is None else str(value)
