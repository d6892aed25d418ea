"""Node power telemetry as a stream of Arrow record batches over a time range, whatever its layout.

Layouts (paper 003 §2–§3; docs/dataset.md):

- **ExaData** (Marconi100): a directory with ``ps0_input_power/`` and ``ps1_input_power/``, each holding Parquet
  partitions of ``timestamp, value, node`` (any sub-directory nesting, e.g. ``year_month=20-09/``);
- **generic**: Parquet or CSV, a file or a directory of partitions, with ``node, timestamp`` and either the two
  PSU columns ``ps0, ps1`` or a node total ``watts``;
- an in-memory Polars or Arrow table in the generic form.

Nothing is loaded whole: :meth:`TelemetrySource.batches` scans with a timestamp filter, so Parquet row groups and
files whose statistics fall outside the time range are skipped, and yields bounded batches. Node names are
dictionary-encoded on read, so mapping them to the build's node numbers costs one lookup per distinct name per
batch. Timestamps may be epoch seconds (any numeric type) or datetimes (any unit; naive ones are UTC).

A source is a small picklable description (paths and layout), so the windows of a build can be read in other
processes or on a Dask cluster.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

#: Metric directories of the M100 ExaData layout (IPMI plugin), one per PSU.
EXADATA_METRICS = ("ps0_input_power", "ps1_input_power")

_UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@dataclass(frozen=True)
class TelemetryStream:
    """One scannable table: files (``fmt`` parquet or csv) or an in-memory Arrow table, and which of its value
    columns feeds which PSU slot (0 or 1)."""

    files: tuple[str, ...]
    fmt: str
    values: tuple[tuple[str, int], ...]
    table: pa.Table | None = None

    def dataset(self) -> ds.Dataset:
        if self.table is not None:
            return ds.dataset(self.table)
        if self.fmt == "parquet":
            fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns={"node"}))
            return ds.dataset(list(self.files), format=fmt)
        return ds.dataset(list(self.files), format="csv")


@dataclass(frozen=True)
class TelemetryBatch:
    """Rows of one batch: node number (-1 for a node no job of the build uses), time (epoch s) and, per PSU slot,
    the value (NaN where null)."""

    node: np.ndarray
    seconds: np.ndarray
    slots: tuple[tuple[int, np.ndarray], ...]


@dataclass(frozen=True)
class TelemetrySource:
    """Telemetry streams and whether they give the two PSUs separately (``two_psu``) or a node total."""

    streams: tuple[TelemetryStream, ...]
    two_psu: bool
    description: str

    def batches(
        self, node_names: list[str], t_lo: float, t_hi: float, batch_rows: int = 1 << 20
    ) -> Iterator[TelemetryBatch]:
        """The rows with ``t_lo ≤ timestamp ≤ t_hi``, batch by batch, nodes numbered by ``node_names``."""
        names = pa.array(node_names, type=pa.string())
        for stream in self.streams:
            data = stream.dataset()
            ts_type = data.schema.field("timestamp").type
            flt = (ds.field("timestamp") >= _bound(t_lo, ts_type)) & (ds.field("timestamp") <= _bound(t_hi, ts_type))
            columns = ["node", "timestamp", *(c for c, _ in stream.values)]
            for batch in data.to_batches(columns=columns, filter=flt, batch_size=batch_rows):
                if batch.num_rows == 0:
                    continue
                yield TelemetryBatch(
                    node=_node_numbers(batch.column("node"), names),
                    seconds=_seconds(batch.column("timestamp")),
                    slots=tuple((slot, _floats(batch.column(c))) for c, slot in stream.values),
                )


def _bound(t: float, ts_type: pa.DataType) -> pa.Scalar:
    """``t`` (s) in the column's type; integer units are floored (the kernels drop rows outside the window)."""
    if pa.types.is_timestamp(ts_type):
        return pa.scalar(math.floor(t * _UNIT_PER_SECOND[ts_type.unit]), type=pa.int64()).cast(ts_type)
    if pa.types.is_integer(ts_type):
        return pa.scalar(math.floor(t), type=ts_type)
    return pa.scalar(t, type=ts_type)


def _seconds(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    kind = column.type
    if pa.types.is_timestamp(kind):
        raw = pc.cast(column, pa.int64()).to_numpy(zero_copy_only=False)
        return raw.astype(np.float64) / _UNIT_PER_SECOND[kind.unit]
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
    raise ValueError(f"telemetry timestamp must be a datetime or epoch seconds, got type {kind}")


def _floats(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return pc.cast(column, pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)


def _node_numbers(column: pa.Array | pa.ChunkedArray, names: pa.Array) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        lookup = pc.index_in(pc.cast(column.dictionary, pa.string()), value_set=names).fill_null(-1)
        codes = column.indices.fill_null(len(column.dictionary)).to_numpy(zero_copy_only=False)
        table = np.append(lookup.to_numpy(zero_copy_only=False).astype(np.int32), np.int32(-1))
        return table[codes]
    found = pc.index_in(pc.cast(column, pa.string()), value_set=names).fill_null(-1)
    return found.to_numpy(zero_copy_only=False).astype(np.int32)


def _files(path: Path, where: str) -> tuple[tuple[str, ...], str]:
    if path.is_dir():
        files = sorted(str(p) for p in path.rglob("*.parquet"))
        if files:
            return tuple(files), "parquet"
        files = sorted(str(p) for p in path.rglob("*.csv"))
        if files:
            return tuple(files), "csv"
        raise FileNotFoundError(f"{path}: no Parquet or CSV files in the {where} directory")
    if path.exists():
        return (str(path),), "csv" if path.suffix in (".csv", ".gz") else "parquet"
    raise FileNotFoundError(f"{path}: {where} file or directory does not exist")


def _generic(columns: list[str], where: str) -> tuple[tuple[tuple[str, int], ...], bool]:
    missing = [c for c in ("node", "timestamp") if c not in columns]
    if not missing and {"ps0", "ps1"} <= set(columns):
        return (("ps0", 0), ("ps1", 1)), True
    if not missing and "watts" in columns:
        return (("watts", 0),), False
    raise ValueError(f"{where}: telemetry needs columns node, timestamp and ps0+ps1 or watts; it has {columns}")


def _check_types(stream: TelemetryStream, where: str) -> TelemetryStream:
    """Refuse a stream whose timestamp is not a time or whose power column is not numeric, naming the column and
    its type (read from the schema: nothing is scanned), instead of an Arrow cast error in the middle of a build."""
    schema = stream.dataset().schema
    kind = schema.field("timestamp").type
    if not (pa.types.is_timestamp(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        raise ValueError(f"{where}: column timestamp is {kind}, not a datetime or epoch seconds")
    for column, _ in stream.values:
        kind = schema.field(column).type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)):
            raise ValueError(f"{where}: column {column} is {kind}, not a power in W (a number)")
    return stream


def open_telemetry(source: str | Path | pl.DataFrame | pl.LazyFrame | pa.Table | TelemetrySource) -> TelemetrySource:
    """Recognise the layout of ``source`` (see the module docstring); errors name the path and what is missing."""
    if isinstance(source, TelemetrySource):
        return source
    if isinstance(source, pl.LazyFrame):
        source = source.collect()
    if isinstance(source, pl.DataFrame):
        source = source.with_columns(pl.col("node").cast(pl.Utf8)).to_arrow()
    if isinstance(source, pa.Table):
        values, two = _generic(source.column_names, "in-memory telemetry")
        stream = _check_types(TelemetryStream((), "memory", values, source), "in-memory telemetry")
        return TelemetrySource((stream,), two, "in-memory table")
    path = Path(source)
    if path.is_dir() and all((path / m).is_dir() for m in EXADATA_METRICS):
        streams = []
        for slot, metric in enumerate(EXADATA_METRICS):
            files, fmt = _files(path / metric, f"ExaData {metric}")
            stream = TelemetryStream(files, fmt, (("value", slot),))
            names = stream.dataset().schema.names
            if not {"node", "timestamp", "value"} <= set(names):
                raise ValueError(f"{path / metric}: ExaData partitions need timestamp, value, node; they have {names}")
            streams.append(_check_types(stream, str(path / metric)))
        return TelemetrySource(tuple(streams), True, f"ExaData layout in {path}")
    files, fmt = _files(path, "telemetry")
    stream = TelemetryStream(files, fmt, ())
    values, two = _generic(stream.dataset().schema.names, str(path))
    stream = _check_types(TelemetryStream(files, fmt, values), str(path))
    return TelemetrySource((stream,), two, f"{len(files)} {fmt} file(s) in {path}")
