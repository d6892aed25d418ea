"""The 18 SWF v2.2 fields and the raw columns the reader keeps: the vocabulary the reader and writer share."""

from __future__ import annotations

import polars as pl

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
N_FIELDS = len(SWF_FIELDS)

#: Fields that must hold integers (a fractional value there is a reject, not silently truncated).
INT_FIELDS: tuple[str, ...] = (
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
SWF_EXTRA: dict[str, pl.DataType] = {
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
SWF_EXTRA_COLUMNS: dict[str, pl.DataType] = {f"swf_{name}": dtype for name, dtype in SWF_EXTRA.items()}

STATUS_TO_STATE: dict[int, str] = {1: "COMPLETED", 0: "FAILED", 5: "CANCELLED"}
STATE_TO_STATUS: dict[str, int] = {v: k for k, v in STATUS_TO_STATE.items()}
