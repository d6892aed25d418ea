"""Canonical job tables on disk: Parquet (internal format, keeps provenance) and CSV (for people and tools).

Reading applies the same contract as every other reader: aliases renamed (``nodes`` → ``size``), canonical
dtypes enforced, unusable rows returned as rejects with a line number, never dropped silently.

* CSV: ``line`` in rejects is the file line (header = line 1, so data row *i* (1-based) is line *i* + 1,
  assuming no quoted field spans lines). A value that cannot be read as its column's dtype is a reject naming
  the column (a fractional value in an integer column too), not an error for the whole file.
* Parquet: ``line`` is the 1-based row number. Machine size and provenance are restored from the schema
  metadata keys ``wattsched.machine_size`` / ``wattsched.provenance`` that :func:`write_table` stores.
* Every known column's dtype is checked against the schema before any value is cast
  (``core.schema.dtype_problem``): a Boolean number, a list or struct in any column, and a date-time where the
  schema does not read one are an error naming the file and the column, since every value of it would be cast by
  accident (true as 1). A Datetime ``submit_time`` becomes epoch seconds (naive: read as UTC), a Duration
  ``submit_time`` seconds from the trace's origin; Duration ``walltime`` / ``runtime`` become seconds; a Datetime
  run time, a Date or a Time is refused. The provenance says which columns were converted.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from wattsched.core.bounded_input import is_gzip, read_input_bytes
from wattsched.core.schema import (
    COLUMN_ALIASES,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    Provenance,
    ReadResult,
    TimeRole,
    WorkloadError,
    dtype_problem,
    finish_read,
    replace_raw,
    shorten,
    time_role,
)
from wattsched.core.store import atomic_path, atomic_write_bytes
from wattsched.core.structured_input import load_json
from wattsched.workload.columns import ColumnMap, apply_columns, describe_columns
from wattsched.workload.swf import SWF_EXTRA_COLUMNS

__all__ = ["METADATA_MACHINE_SIZE", "METADATA_PROVENANCE", "parse_column", "read_table", "write_table"]

#: Parquet schema-metadata keys written by :func:`write_table`.
METADATA_PROVENANCE = "wattsched.provenance"
METADATA_MACHINE_SIZE = "wattsched.machine_size"

#: Columns whose dtype is fixed: canonical ones, plus the SWF reader's raw ``swf_*`` columns (so that a CSV
#: round trip keeps them typed even when a column is all null).
_KNOWN: dict[str, pl.DataType] = {**REQUIRED_COLUMNS, **OPTIONAL_COLUMNS, **SWF_EXTRA_COLUMNS}
_ROW = "__row"
#: A non-integer text (``3.0``, ``1e3``) is an integer only below 2^53, where float64 is exact.
_MAX_EXACT = 2.0**53


def _kind(path: Path) -> str:
    name = path.name.lower()
    for suffix in (".parquet", ".csv.gz", ".csv"):
        if name.endswith(suffix):
            return suffix
    raise WorkloadError(f"{path}: not a canonical table (supported: .parquet, .csv, .csv.gz)")


def parse_column(s: pl.Series, dtype: pl.DataType, role: TimeRole = None) -> tuple[pl.Series, pl.Series, str]:
    """``(values, bad_mask, why)``: the column in ``dtype`` and which non-null values could not be read.

    The column's own dtype is judged first (:func:`~wattsched.core.schema.dtype_problem`): a Boolean, nested or
    temporal column that ``role`` does not read is a :class:`WorkloadError` ``column 'name' …`` for the caller to
    prefix with its file, since every value of it would be cast by accident. ``role`` ``"instant"`` turns a
    Datetime into epoch seconds (UTC for a naive one) and a Duration into seconds; ``"duration"`` a Duration into
    seconds. Categorical text is read as text."""
    why_not = dtype_problem(s.dtype, dtype, role)
    if why_not is not None:
        raise WorkloadError(f"column {s.name!r} {why_not}")
    if isinstance(s.dtype, pl.Categorical | pl.Enum):
        s = s.cast(pl.Utf8)
    present = s.is_not_null()
    if dtype == pl.Utf8:
        return s.cast(pl.Utf8), pl.Series([False] * s.len()), ""
    src = s
    if src.dtype == pl.Utf8:
        src = src.str.strip_chars()
        present = present & (src != "")
        src = src.zip_with(present, pl.Series([None] * s.len(), dtype=pl.Utf8))
    if isinstance(src.dtype, pl.Duration):
        src = src.dt.total_microseconds() / 1e6
    elif isinstance(src.dtype, pl.Datetime):
        src = src.dt.epoch("us") / 1e6
    as_float = src.cast(pl.Float64, strict=False)
    if dtype == pl.Int64:
        if src.dtype.is_integer():
            values = src.cast(pl.Int64, strict=False)
            bad = present & values.is_null()
            return values, bad, "is not an integer in the Int64 range"
        # Text is parsed as an exact integer first, so ids above 2^53 never go through float64 (two ids one
        # apart would collide there); only what is not plain integer text ("3.0", "1e3") takes the float path.
        exact = (
            src.cast(pl.Int64, strict=False) if src.dtype == pl.Utf8 else pl.Series([None] * s.len(), dtype=pl.Int64)
        )
        integral = as_float.is_finite() & (as_float == as_float.floor()) & (as_float.abs() < _MAX_EXACT)
        via_float = as_float.zip_with(integral.fill_null(False), pl.Series([None] * s.len(), dtype=pl.Float64))
        values = exact.fill_null(via_float.cast(pl.Int64))
        bad = present & values.is_null()
        why = "is not an integer (or beyond the exact range of an Int64)"
        return values.alias(s.name), bad, why
    bad = present & as_float.is_null()
    return as_float.alias(s.name), bad, "is not a number"


Rows = list[dict[str, Any]]

#: The SWF reader's raw columns that are lengths of time (a Duration there becomes seconds, as in ``runtime``).
_SWF_DURATIONS = ("swf_wait", "swf_req_time", "swf_think_time")


def _role(name: str) -> TimeRole:
    """How a date-time or duration in column ``name`` is read (``core.schema.INSTANT_COLUMNS``)."""
    return "duration" if name in _SWF_DURATIONS else time_role(name)


def _temporal_conventions(frame: pl.DataFrame) -> list[str]:
    """One provenance line per known column converted from a date-time or a duration, saying how (a naive
    date-time is read as UTC: the table says no zone, and the job table reader takes no --timezone)."""
    lines = []
    for name, dtype in frame.schema.items():
        if name not in _KNOWN or not dtype.is_temporal():
            continue
        if isinstance(dtype, pl.Datetime):
            zone = f"time zone {dtype.time_zone}" if dtype.time_zone else "no time zone: read as UTC"
            lines.append(f"{name}: date-times ({zone}) converted to epoch seconds")
        elif isinstance(dtype, pl.Duration):
            origin = " from the trace's origin" if _role(name) == "instant" else ""
            lines.append(f"{name}: durations converted to seconds{origin}")
    return lines


def _parse_known(frame: pl.DataFrame, source: str, line_offset: int) -> tuple[pl.DataFrame, Rows]:
    """Cast every known column, collecting one reject per row whose value cannot be read."""
    rejects: list[dict[str, Any]] = []
    bad_any = pl.Series([False] * frame.height)
    columns: dict[str, pl.Series] = {}
    for name in frame.columns:
        if name not in _KNOWN:
            continue
        try:
            values, bad, why = parse_column(frame[name], _KNOWN[name], _role(name))
        except WorkloadError as exc:  # the column's dtype: refused whole, naming the file
            raise WorkloadError(f"{source}: {exc}") from None
        except pl.exceptions.PolarsError as exc:
            why = f"column {name!r} ({frame[name].dtype}) cannot be read as {_KNOWN[name]}"
            raise WorkloadError(f"{source}: {why}: {_first_line(exc)}") from exc
        columns[name] = values
        fresh = bad & ~bad_any
        if fresh.any():
            original = frame[name].cast(pl.Utf8)
            for i in fresh.arg_true().to_list():
                reason = f"value {original[i]!r} in column {name!r} {why}"
                rejects.append({"source": source, "line": i + line_offset, "field": name, "reason": reason})
        bad_any = bad_any | bad
    parsed = frame.with_columns(list(columns.values()))
    if rejects:
        job_ids = parsed["job_id"].to_list()
        for row in rejects:
            row["job_id"] = job_ids[row["line"] - line_offset]
    return parsed.filter(~bad_any), rejects


def _row_text(frame: pl.DataFrame, index: int) -> str:
    """One row's original values joined by commas: the ``raw`` of a reject. Row by row in Python, so list and
    struct columns (``power_profile``, written by ``generate m100`` and ``predict power``) print as their values
    instead of failing a string cast of the whole column; only rejected rows are ever formatted."""
    values = frame.row(index)
    names = frame.columns
    return ",".join(_cell_text(v) for n, v in zip(names, values, strict=True) if n != _ROW)


def _cell_text(value: object) -> str:
    """A value as reject text; a long list (a power profile of thousands of samples) shows its first 8 values
    and its length, so a reject row stays readable."""
    if value is None:
        return ""
    if isinstance(value, list) and len(value) > 8:
        return "[" + ", ".join(map(str, value[:8])) + f", … ({len(value)} values)]"
    return str(value)


def _first_line(exc: Exception) -> str:
    """The first paragraph of a polars error, shortened: the rest are hints about inference options that do not apply
    (every known column is read as text and parsed here)."""
    first = str(exc).strip().split("\n\n", 1)[0]  # polars puts its hints after a blank line
    return shorten(first or type(exc).__name__, 200)


def _duplicated_columns(path: Path, names: list[str]) -> None:
    """A header naming a column twice is an error naming both: polars would keep the first as is and rename the
    second ``<name>_duplicated_0``, so one of two values would be read silently."""
    for name in names:
        base, sep, k = name.rpartition("_duplicated_")
        if sep and k.isdigit() and base in names:
            position = [i + 1 for i, n in enumerate(names) if n in (base, name)]
            raise WorkloadError(
                f"{path}: line 1: column {base!r} appears twice in the header (columns {position[0]} and"
                f" {position[-1]}); rename or drop one"
            )


def _read_frame(path: Path, kind: str) -> tuple[pl.DataFrame, dict[bytes, bytes]]:
    if kind == ".parquet":
        try:
            meta = pq.read_schema(path).metadata or {}
            return pl.read_parquet(path), dict(meta)
        except (OSError, pa.ArrowException, pl.exceptions.PolarsError) as exc:
            raise WorkloadError(f"{path}: cannot read Parquet: {shorten(exc, 200)}") from exc
    # a .csv.gz is gunzipped here, within core.bounded_input's limit: polars' own decompression has none (a
    # 1 MB bomb ended in a Rust panic under a memory cap)
    source: Path | io.BytesIO = io.BytesIO(read_input_bytes(path)) if is_gzip(path) else path
    try:
        names = pl.read_csv(source, n_rows=0).columns
        _duplicated_columns(path, names)
        overrides = {c: pl.Utf8 for c in names if c in _KNOWN or c in COLUMN_ALIASES}
        if isinstance(source, io.BytesIO):
            source.seek(0)
        frame = pl.read_csv(source, schema_overrides=overrides, infer_schema_length=None)
    except pl.exceptions.NoDataError as exc:
        raise WorkloadError(f"{path}: file is empty") from exc
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise WorkloadError(f"{path}: cannot read CSV: {_first_line(exc)}") from exc
    return frame, {}


def read_table(
    path: str | Path, *, machine_size: int | None = None, strict: bool = False, columns: ColumnMap | None = None
) -> ReadResult:
    """Read a canonical job table from ``.parquet``, ``.csv`` or ``.csv.gz``.

    ``machine_size`` overrides the size stored in Parquet metadata; with neither, no size-vs-machine rejects.
    ``columns`` maps canonical columns to source columns or expressions (``workload/columns.py``), applied first.
    ``strict=True`` raises :class:`WorkloadError` naming the first reject.
    """
    path = Path(path)
    source = str(path)
    kind = _kind(path)
    if machine_size is not None and int(machine_size) < 1:
        raise WorkloadError(f"machine_size must be a positive number of units, got {machine_size!r}")
    if not path.exists():
        raise WorkloadError(f"{path}: file does not exist")
    if not path.is_file():
        raise WorkloadError(f"{path}: not a regular file")
    if path.stat().st_size == 0:
        raise WorkloadError(f"{path}: file is empty")
    frame, meta = _read_frame(path, kind)
    if frame.height == 0:
        raise WorkloadError(f"{path}: no data rows (columns: {shorten(frame.columns, 200)})")

    stored = _stored_provenance(meta)
    conventions: list[str] = []
    if columns:
        frame = apply_columns(frame, columns, source)
        conventions.append(describe_columns(columns))
    machine = machine_size
    machine_from = "the machine_size argument"
    if machine is None and METADATA_MACHINE_SIZE.encode() in meta:
        raw_size = meta[METADATA_MACHINE_SIZE.encode()].decode()
        machine = int(raw_size) if raw_size.strip().lstrip("-").isdigit() else None
        machine_from = f"Parquet metadata {METADATA_MACHINE_SIZE}"

    renames = {a: c for a, c in COLUMN_ALIASES.items() if a in frame.columns and c not in frame.columns}
    if renames:
        frame = frame.rename(renames)
        conventions.append(f"columns renamed from aliases: {renames}")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise WorkloadError(
            f"{path}: job table lacks required column(s) {missing}; required: {list(REQUIRED_COLUMNS)}"
            f" (alias accepted: {COLUMN_ALIASES}); found: {shorten(frame.columns, 200)}; map them with --columns"
            " (docs/formats.md)"
        )

    line_offset = 2 if kind != ".parquet" else 1
    original = frame.with_row_index(_ROW)
    parsed, parse_rejects = _parse_known(original, source, line_offset)
    parsed = parsed.with_columns((pl.col(_ROW) + line_offset).cast(pl.Int64))

    def row_text(line: int) -> str:
        return _row_text(original, line - line_offset)

    for row in parse_rejects:
        row["raw"] = row_text(row["line"])

    if kind == ".parquet":
        conventions.append("reject 'line' is the 1-based Parquet row number")
    else:
        conventions.append("reject 'line' is the CSV file line (header is line 1, data row i is line i + 1)")
    conventions.extend(_temporal_conventions(frame))
    conventions.append("rejected: unreadable values and the canonical rules of schema.validate_jobs")
    conventions.append("jobs sorted in queue order (submit_time, job_id)")
    if machine is None:
        conventions.append("machine size unknown: no size-vs-machine rejects")
    else:
        conventions.append(f"machine size {machine} from {machine_from}")
    if stored is not None:
        conventions.append(f"provenance restored from Parquet metadata (original source {stored.source})")
        conventions.extend(f"[original] {c}" for c in stored.conventions)

    provenance = Provenance(
        source=source,
        format=kind.lstrip(".").replace(".gz", ""),
        machine_size=machine,
        size_unit=stored.size_unit if stored else ("nodes" if "nodes" in renames else "processors"),
        unix_start_time=stored.unix_start_time if stored else None,
        timezone=stored.timezone if stored else None,
        header=stored.header if stored else {},
        n_records=frame.height,
        conventions=conventions,
    )
    return finish_read(
        parsed,
        parse_rejects,
        provenance,
        strict=strict,
        line_column=_ROW,
        locate=lambda rejects: replace_raw(rejects, row_text),
        unit="row",
    )


def _stored_provenance(meta: dict[bytes, bytes]) -> Provenance | None:
    blob = meta.get(METADATA_PROVENANCE.encode())
    if not blob:
        return None
    try:
        data = load_json(blob, METADATA_PROVENANCE)  # too deep: a ValueError, ignored as any bad blob
        fields = set(Provenance.__dataclass_fields__)
        return Provenance(**{k: v for k, v in data.items() if k in fields})
    except (ValueError, TypeError):
        return None


def write_table(jobs: pl.DataFrame, path: str | Path, *, provenance: Provenance | None = None) -> None:
    """Write a job table as ``.parquet`` (provenance and machine size in schema metadata) or ``.csv[.gz]``.

    CSV keeps no provenance; reading it back restores canonical dtypes from the schema, not from the file. A
    workload sized in nodes writes its size column as ``nodes``, so that the CSV still says its unit.
    """
    path = Path(path)
    kind = _kind(path)
    if kind == ".parquet":
        table = jobs.to_arrow()
        meta = dict(table.schema.metadata or {})
        if provenance is not None:
            meta[METADATA_PROVENANCE.encode()] = provenance.to_json().encode()
            if provenance.machine_size is not None:
                meta[METADATA_MACHINE_SIZE.encode()] = str(int(provenance.machine_size)).encode()
        with atomic_path(path, keep_suffix=True) as tmp:  # a kill leaves the former file, never half a table
            pq.write_table(table.replace_schema_metadata(meta), tmp)
        return
    if provenance is not None and provenance.size_unit == "nodes" and "nodes" not in jobs.columns:
        jobs = jobs.rename({"size": "nodes"})  # the column says the unit; read back through the `nodes` alias
    buffer = io.BytesIO()
    jobs.write_csv(buffer)
    data = gzip.compress(buffer.getvalue(), compresslevel=6, mtime=0) if kind == ".csv.gz" else buffer.getvalue()
    atomic_write_bytes(path, data)
