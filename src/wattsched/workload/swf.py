"""Standard Workload Format (SWF v2.2) reader and writer.

SWF is the Parallel Workloads Archive's format: one job per line, 18 whitespace-separated numeric fields,
``-1`` for "unknown", header comments ``; Key: value``.
Spec: https://www.cs.huji.ac.il/labs/parallel/workload/swf.html.

Conventions that turn SWF fields into canonical columns (each is also recorded in ``provenance.conventions``):

* ``size`` = requested processors (field 8) if > 0, else allocated processors (field 5); the unit is
  "processors".
* ``walltime`` = requested time (field 9); when it is missing (≤ 0) the walltime is the job's run time
  (field 4).
* ``runtime`` = run time (field 4); ``-1`` (unknown) becomes null and is rejected. The engine runs
  ``min(runtime, walltime)``.
* machine size = the ``machine_size`` argument, else header ``MaxProcs``, else ``MaxNodes``; when none
  exists it stays None and no size-versus-machine rejects are made.
* Submit times are kept as given (float seconds, usually relative to the log start); absolute time =
  ``UnixStartTime`` + submit.
* ``user_id`` (12), ``group_id`` (13), ``app_id`` (14), ``queue`` (15), ``partition`` (16) are null for
  ``-1``; the last three are strings. ``state`` is COMPLETED / FAILED / CANCELLED for status 1 / 0 / 5,
  else null.
* The raw fields without a canonical home are kept as ``swf_*`` columns (wait, alloc_procs, avg_cpu,
  used_mem, req_procs, req_time, req_mem, status, preceding_job, think_time), with ``-1`` (unknown) as null.
* Rejected (one row each, with the 1-based file line, job id if parsable, field, reason and raw text):
  fewer than 18 fields; a non-numeric token in one of the 18 fields; a non-integer value in an integer
  field; negative submit time; unknown or negative run time; size ≤ 0 or unknown; size > machine size;
  duplicate job id.
* Comment lines (first non-blank character ``;``) and blank lines are skipped; fields after the 18th are
  ignored (the lines that had them are counted in the conventions).
* Jobs come back in queue order (submit time, job id) whatever the line order.

Speed: a numba tokenizer reads the whole byte buffer in one pass (the 448k-job RICC trace in well under a
second); only the few lines it flags (malformed, or numbers needing full float precision) go through Python.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import math
import re
from importlib import metadata as _metadata
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numba import njit

from wattsched.core.schema import Check, Provenance, ReadResult, WorkloadError, finish_read, replace_raw

__all__ = ["SWF_EXTRA_COLUMNS", "SWF_FIELDS", "read_swf", "write_swf"]

#: The 18 SWF v2.2 fields, in file order (names used in reject rows).
SWF_FIELDS: tuple[str, ...] = (
    "job",
    "submit",
    "wait",
    "run",
    "alloc_procs",
    "avg_cpu",
    "used_mem",
    "req_procs",
    "req_time",
    "req_mem",
    "status",
    "user",
    "group",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
_NF = len(SWF_FIELDS)

#: Fields that must hold integers (a fractional value there is a reject, not silently truncated).
_INT_FIELDS: tuple[str, ...] = (
    "job",
    "alloc_procs",
    "req_procs",
    "status",
    "user",
    "group",
    "executable",
    "queue",
    "partition",
    "preceding_job",
)

#: Raw SWF fields kept as ``swf_<name>`` columns, with their dtypes.
_SWF_EXTRA: dict[str, pl.DataType] = {
    "wait": pl.Float64(),
    "alloc_procs": pl.Int64(),
    "avg_cpu": pl.Float64(),
    "used_mem": pl.Float64(),
    "req_procs": pl.Int64(),
    "req_time": pl.Float64(),
    "req_mem": pl.Float64(),
    "status": pl.Int64(),
    "preceding_job": pl.Int64(),
    "think_time": pl.Float64(),
}

#: The ``swf_*`` columns the reader adds and their dtypes (other table readers use it to restore dtypes).
SWF_EXTRA_COLUMNS: dict[str, pl.DataType] = {f"swf_{name}": dtype for name, dtype in _SWF_EXTRA.items()}

_STATUS_TO_STATE: dict[int, str] = {1: "COMPLETED", 0: "FAILED", 5: "CANCELLED"}
_STATE_TO_STATUS: dict[str, int] = {v: k for k, v in _STATUS_TO_STATE.items()}

#: Header keys that may repeat; they are always stored as lists.
_LIST_KEYS = frozenset({"Queue", "Queues", "Partition", "Partitions", "Note"})

# A header key line: ``; Key: value`` with the key close to the ``;`` (continuation lines are indented
# further) and not a URL (``;   http://...`` continues the previous value).
_HEADER_RE = re.compile(r"^\s*;[ \t]{0,3}([A-Za-z][A-Za-z0-9_]*)[ \t]*:(?!//)(.*)$")
# The token grammar the numba tokenizer accepts; the Python path must agree with it exactly.
_NUMBER_RE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

# Line status codes from the tokenizer; anything non-zero goes through the Python path.
_OK, _SLOW, _BAD, _SHORT = 0, 1, 2, 3

# Exact powers of ten (10**22 is the largest exactly representable one).
_POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)
_IS_INT = np.array([name in _INT_FIELDS for name in SWF_FIELDS], dtype=np.bool_)


@njit(cache=True, inline="always")
def _is_ws(c: int) -> bool:
    # Same set as bytes.split(): space, \t, \r, \v, \f (\n ends the line).
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True, nogil=True)
def _scan(buf: np.ndarray, pow10: np.ndarray, is_int: np.ndarray) -> tuple:  # pragma: no cover - compiled
    """One pass over the bytes: classify lines, parse the first 18 fields of data lines as float64.

    Returns the values as an (18, n_data_lines) array plus per-line number, byte span, status and
    extra-field flag, and the comment lines' numbers and spans. Status: 0 parsed exactly; 1 needs Python's
    float(); 2 malformed or non-integer token; 3 fewer than 18 fields.
    """
    n = buf.size
    nl = 0
    for i in range(n):
        if buf[i] == 10:
            nl += 1
    cap = nl + 1
    vals = np.empty((18, cap), np.float64)
    d_line = np.empty(cap, np.int64)
    d_start = np.empty(cap, np.int64)
    d_end = np.empty(cap, np.int64)
    d_status = np.zeros(cap, np.int8)
    d_extra = np.zeros(cap, np.bool_)
    c_line = np.empty(cap, np.int64)
    c_start = np.empty(cap, np.int64)
    c_end = np.empty(cap, np.int64)
    nd = 0
    nc = 0
    nblank = 0
    pos = 0
    lineno = 0
    while pos < n:
        lineno += 1
        start = pos
        i = pos
        while i < n and buf[i] != 10 and _is_ws(buf[i]):
            i += 1
        if i >= n or buf[i] == 10:
            nblank += 1
            pos = i + 1
            continue
        if buf[i] == 59:  # ';' comment / header line
            j = i
            while j < n and buf[j] != 10:
                j += 1
            c_line[nc] = lineno
            c_start[nc] = start
            c_end[nc] = j
            nc += 1
            pos = j + 1
            continue
        k = nd
        nd += 1
        status = 0
        nf = 0
        while True:
            while i < n and buf[i] != 10 and _is_ws(buf[i]):
                i += 1
            if i >= n or buf[i] == 10:
                break
            if nf == 18:
                d_extra[k] = True
                while i < n and buf[i] != 10:
                    i += 1
                break
            # --- one numeric token: [+-]? digits [. digits] [(e|E) [+-]? digits] ---
            neg = False
            c = buf[i]
            if c == 45:
                neg = True
                i += 1
            elif c == 43:
                i += 1
            mant = 0
            ndig = 0
            exp10 = 0
            slow = False
            while i < n and buf[i] >= 48 and buf[i] <= 57:
                if mant < 100000000000000000:
                    mant = mant * 10 + (buf[i] - 48)
                else:
                    slow = True
                ndig += 1
                i += 1
            if i < n and buf[i] == 46:
                i += 1
                while i < n and buf[i] >= 48 and buf[i] <= 57:
                    if mant < 100000000000000000:
                        mant = mant * 10 + (buf[i] - 48)
                        exp10 -= 1
                    else:
                        slow = True
                    ndig += 1
                    i += 1
            ok = ndig > 0
            if ok and i < n and (buf[i] == 101 or buf[i] == 69):
                i += 1
                eneg = False
                if i < n and (buf[i] == 45 or buf[i] == 43):
                    eneg = buf[i] == 45
                    i += 1
                ev = 0
                ed = 0
                while i < n and buf[i] >= 48 and buf[i] <= 57:
                    if ev < 100000:
                        ev = ev * 10 + (buf[i] - 48)
                    ed += 1
                    i += 1
                if ed == 0:
                    ok = False
                exp10 += -ev if eneg else ev
            if i < n and buf[i] != 10 and not _is_ws(buf[i]):
                ok = False
                while i < n and buf[i] != 10 and not _is_ws(buf[i]):
                    i += 1
            v = 0.0
            if not ok:
                status = max(status, 2)
            elif mant == 0 and not slow:
                v = 0.0
            elif slow or mant > 9007199254740992 or exp10 > 22 or exp10 < -22:
                status = max(status, 1)
            elif exp10 >= 0:
                v = float(mant) * pow10[exp10]
            else:
                v = float(mant) / pow10[-exp10]
            if is_int[nf] and (v != np.floor(v) or abs(v) > 9007199254740992.0):
                status = max(status, 2)
            vals[nf, k] = -v if neg else v
            nf += 1
        if nf < 18:
            status = 3
        d_line[k] = lineno
        d_start[k] = start
        d_end[k] = i
        d_status[k] = status
        pos = i + 1
    return (
        vals[:, :nd],
        d_line[:nd],
        d_start[:nd],
        d_end[:nd],
        d_status[:nd],
        d_extra[:nd],
        c_line[:nc],
        c_start[:nc],
        c_end[:nc],
        nblank,
    )


def _read_bytes(path: Path) -> bytes:
    """File bytes, gunzipped when the name ends in ``.gz``; WorkloadError when missing or unreadable."""
    if not path.exists():
        raise WorkloadError(f"{path}: file does not exist")
    if not path.is_file():
        raise WorkloadError(f"{path}: not a regular file")
    data = path.read_bytes()
    if path.suffix.lower() == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise WorkloadError(f"{path}: cannot gunzip: {exc}") from exc
    return data


def _decode(raw: bytes) -> str:
    return raw.rstrip(b"\r").decode("utf-8", errors="replace")


def _parse_header(lines: list[str]) -> dict[str, Any]:
    """``; Key: value`` lines into a dict; repeatable keys become lists, indented lines continue a value."""
    header: dict[str, Any] = {}
    last: str | None = None
    for text in lines:
        m = _HEADER_RE.match(text)
        if m:
            key, value = m.group(1), m.group(2).strip()
            if key in _LIST_KEYS:
                header.setdefault(key, []).append(value)
            elif key in header:
                old = header[key]
                header[key] = [*old, value] if isinstance(old, list) else [old, value]
            else:
                header[key] = value
            last = key
            continue
        body = text.strip()[1:].strip()
        if not body:
            last = None  # a bare ';' ends a continued value
        elif last is not None:
            old = header[last]
            if isinstance(old, list):
                old[-1] = f"{old[-1]}\n{body}" if old[-1] else body
            else:
                header[last] = f"{old}\n{body}" if old else body
    return header


def _header_number(header: dict[str, Any], key: str) -> float | None:
    value = header.get(key)
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None:
        return None
    try:
        number = float(str(value).split()[0])
    except (ValueError, IndexError):
        return None
    return number if math.isfinite(number) else None


def _maybe_int(token: bytes) -> int | None:
    if not _NUMBER_RE.fullmatch(token):
        return None
    value = float(token)
    return int(value) if math.isfinite(value) and value == int(value) else None


def _parse_line_slow(raw: bytes) -> tuple[list[float] | None, str | None, str | None, int | None]:
    """Authoritative parse of a flagged line: ``(values, field, reason, job_id)``; values None if rejected."""
    tokens = raw.split()
    job_id = _maybe_int(tokens[0]) if tokens else None
    if len(tokens) < _NF:
        return None, "line", f"line has {len(tokens)} fields, SWF needs {_NF}", job_id
    values: list[float] = []
    for j in range(_NF):
        name = SWF_FIELDS[j]
        if not _NUMBER_RE.fullmatch(tokens[j]):
            text = tokens[j].decode("utf-8", errors="replace")
            return None, name, f"non-numeric value {text!r} in field {j + 1} ({name})", job_id
        value = float(tokens[j])
        if name in _INT_FIELDS and not (math.isfinite(value) and value == int(value) and abs(value) <= 2**53):
            text = tokens[j].decode("utf-8", errors="replace")
            return None, name, f"value {text!r} in field {j + 1} ({name}) is not an integer", job_id
        values.append(value)
    return values, None, None, job_id


def _machine_size(machine_size: int | None, header: dict[str, Any]) -> tuple[int | None, str]:
    """The machine size and where it came from: argument, else header MaxProcs, else MaxNodes, else None."""
    if machine_size is not None:
        if int(machine_size) < 1:
            raise WorkloadError(f"machine_size must be a positive number of processors, got {machine_size!r}")
        return int(machine_size), "the machine_size argument"
    for key in ("MaxProcs", "MaxNodes"):
        value = _header_number(header, key)
        if value is not None and value > 0:
            return int(value), f"header {key}"
    return None, ""


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
    naming the first reject instead of returning them. See the module docstring for every convention.
    """
    path = Path(path)
    source = str(path)
    data = _read_bytes(path)
    buf = np.frombuffer(data, dtype=np.uint8)
    scanned = _scan(buf, _POW10, _IS_INT)
    vals, d_line, d_start, d_end, d_status, d_extra, c_line, c_start, c_end, n_blank = scanned
    n_records = int(d_line.size)
    if n_records == 0 and c_line.size == 0:
        raise WorkloadError(f"{path}: file is empty (no data lines, no header)")
    spans = zip(c_start.tolist(), c_end.tolist(), strict=True)
    header = _parse_header([_decode(data[s:e]) for s, e in spans])
    if n_records == 0:
        raise WorkloadError(f"{path}: no data lines (only {c_line.size} comment/header lines)")
    machine, machine_from = _machine_size(machine_size, header)

    # Python path for the few flagged lines (it is authoritative for them).
    parse_rejects: list[dict[str, Any]] = []
    keep = np.ones(n_records, dtype=bool)
    for k in np.flatnonzero(d_status != _OK).tolist():
        raw = data[int(d_start[k]) : int(d_end[k])]
        values, field_, reason, job_id = _parse_line_slow(raw)
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

    def line_text(line: int) -> str:
        k = int(np.searchsorted(d_line, line))
        return _decode(data[int(d_start[k]) : int(d_end[k])])

    n_extra = int(d_extra.sum())
    conventions = _conventions(machine, machine_from)
    if n_extra:
        conventions.append(f"{n_extra} data lines had extra fields after the 18th (ignored)")
    if n_blank:
        conventions.append(f"{n_blank} blank lines skipped")
    start = _header_number(header, "UnixStartTime")
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


#: Negative submit times are SWF-specific (relative times, -1 = unknown): judged before the canonical rules.
_NEGATIVE_SUBMIT: Check = (
    "submit_time",
    pl.col("submit_time") < 0,
    "submit time is negative (-1 means unknown in SWF)",
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
        .replace_strict(_STATUS_TO_STATE, default=None, return_dtype=pl.Utf8)
        .alias("state"),
    ]
    exprs += [_unknown(name).cast(dtype).alias(f"swf_{name}") for name, dtype in _SWF_EXTRA.items()]
    exprs.append(pl.col("__line"))
    return exprs


# ------------------------------------------------------------------------------------------------------------
# Writer
# ------------------------------------------------------------------------------------------------------------

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
    from_state = state.replace_strict(_STATE_TO_STATUS, default=None, return_dtype=pl.Int64)
    status: pl.Expr = from_state
    if (st := raw("status")) is not None:
        state_of_raw = st.replace_strict(_STATUS_TO_STATE, default=None, return_dtype=pl.Utf8)
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
    path.write_bytes(text)


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
