"""``read_eurora``: instances → distinct lines → candidate jobs and Eurora's rejects →
:func:`~wattsched.core.schema.finish_read`; then what the accepted jobs say goes into the provenance header.
The conventions are in :mod:`wattsched.workload.eurora`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.scalars import as_int
from wattsched.core.schema import REJECTS_SCHEMA, Provenance, ReadResult, WorkloadError, finish_read, make_rejects
from wattsched.workload.eurora.fields import ROW, parse_lines
from wattsched.workload.eurora.instances import InstanceLines, instance_files
from wattsched.workload.eurora.predictions import read_eurora_power_predictions


def read_eurora(
    paths: str | Path | Sequence[str | Path],
    *,
    predictions: str | Path | pl.DataFrame | None = None,
    walltime_defaults: Mapping[str, float] | None = None,
    machine_size: int | None = None,
    strict: bool = False,
    timezone: str | None = None,
) -> ReadResult:
    """Read Eurora job instances into the canonical job table with PBS chunks (one row per job over all files).

    ``predictions``: a ``power_predictions`` file or its frame, joined as ``pred_power``. ``walltime_defaults``:
    seconds per queue for jobs without a walltime (else they are rejected). ``machine_size`` (chunks) bounds
    ``size`` when given. ``strict=True`` raises :class:`WorkloadError` naming the first reject. See
    :mod:`wattsched.workload.eurora` for every convention; ``provenance.header`` has the duplicate, chunk and
    prediction counts. ``timezone`` (IANA name): the zone of the naive date-times (the trace's is Europe/Rome);
    None reads them as UTC, so that wall-clock hours stay local (the default, as paper 001's data is used).
    """
    if timezone is not None:
        _check_zone(timezone)
    if machine_size is not None and int(machine_size) < 1:
        raise WorkloadError(f"machine_size must be a positive number of chunks, got {machine_size!r}")
    for queue, seconds in (walltime_defaults or {}).items():
        if not (isinstance(seconds, int | float) and seconds > 0 and seconds != float("inf")):
            raise WorkloadError(f"walltime_defaults[{queue!r}] must be positive seconds, got {seconds!r}")
    files = instance_files(paths)
    if isinstance(paths, str | Path):
        source = str(paths)
    else:
        source = files[0].as_posix() if len(files) == 1 else f"{os.path.commonpath(files)} ({len(files)} files)"
    lines = InstanceLines(files)
    if lines.n_records == 0:
        raise WorkloadError(f"{source}: no job lines")

    jobs, own = parse_lines(lines, walltime_defaults, timezone)
    n_heterogeneous = int(jobs["__heterogeneous"].sum())
    jobs = jobs.drop("__heterogeneous")
    where = pl.DataFrame(
        {ROW: range(len(lines.text)), "source": lines.src, "line": lines.line, "raw": lines.text},
        schema={ROW: pl.Int64, "source": pl.Utf8, "line": pl.Int64, "raw": pl.Utf8},
    )

    def locate(rejects: pl.DataFrame) -> pl.DataFrame:
        """Rejects keyed by distinct-line index → the file, line and text they came from."""
        return rejects.join(where, on=ROW, how="left").drop(ROW).select(list(REJECTS_SCHEMA))

    header: dict[str, Any] = {
        "input_timezone": (
            "naive Eurora local time (Europe/Rome) read as UTC"
            if timezone is None
            else f"naive local time read in {timezone}"
        ),
        "n_files": len(files),
        "files": lines.per_file,
        "duplicate_lines": lines.n_duplicates,
        "conflicting_duplicates": len(lines.conflicts),
        "blank_lines": lines.n_blank,
        "heterogeneous_chunks": n_heterogeneous,
    }
    if predictions is not None:
        table = predictions if isinstance(predictions, pl.DataFrame) else read_eurora_power_predictions(predictions)
        if not {"job_id", "pred_power_eurora"} <= set(table.columns):
            raise WorkloadError(f"predictions need columns job_id and pred_power_eurora, got {table.columns}")
        table = table.select(pl.col("job_id").cast(pl.Int64), pl.col("pred_power_eurora").alias("pred_power"))
        jobs = jobs.join(table.unique("job_id", keep="first"), on="job_id", how="left", maintain_order="left")
    provenance = Provenance(
        source=source,
        format="eurora",
        machine_size=machine_size,
        size_unit="chunks",
        unix_start_time=0.0,
        timezone="UTC",
        header=header,
        n_records=lines.n_records,
        conventions=_conventions(walltime_defaults, machine_size, predictions is not None),
    )
    result = finish_read(
        jobs,
        pl.concat([locate(own), make_rejects(lines.conflicts)]),
        provenance,
        strict=strict,
        line_column=ROW,
        locate=lambda sem: locate(sem.select(pl.col("line").alias(ROW), "job_id", "field", "reason")),
        sources=[str(f) for f in files],
    )
    _describe(header, result.jobs, walltime_defaults, predictions)
    return result


def _check_zone(timezone: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise WorkloadError(f"unknown time zone {timezone!r}: {exc}") from None


def _describe(
    header: dict[str, Any],
    good: pl.DataFrame,
    walltime_defaults: Mapping[str, float] | None,
    predictions: str | Path | pl.DataFrame | None,
) -> None:
    """Add what the accepted jobs say to the provenance header: chunk/request mismatches, predictions matched."""
    if good.height:
        header["chunks_not_req_nodes"] = int((good["chunks"] != good["nodes"]).sum())
        header["cores_not_req_cores"] = int((good["cores"] != good["req_cores"]).sum())
        header["trace_node_ids"] = [
            as_int(good["eurora_nodes"].list.min().min()),
            as_int(good["eurora_nodes"].list.max().max()),
        ]
    if walltime_defaults:
        header["walltime_defaults"] = dict(walltime_defaults)
    if predictions is not None:
        matched = int(good["pred_power"].is_not_null().sum())
        header["predictions"] = str(predictions) if not isinstance(predictions, pl.DataFrame) else "<DataFrame>"
        header["predictions_matched"] = matched
        header["predictions_unmatched"] = good.height - matched


def _conventions(defaults: Mapping[str, float] | None, machine_size: int | None, predicted: bool) -> list[str]:
    out = [
        "one row per job id over all files (first occurrence kept); identical repeats counted as duplicate_lines,"
        " repeats with different content rejected",
        "date-times are naive Eurora local time (Europe/Rome) read as UTC; output epoch seconds (unix_start_time 0)",
        "submit_time = arrival; trace_start_time / trace_end_time = start / end; runtime = end − start",
        "walltime = hh:mm × 60 s; "
        + (
            f"missing or zero → walltime_defaults per queue {dict(defaults)}"
            if defaults
            else "missing or zero rejected (no walltime_defaults)"
        ),
        "chunks = number of used-node entries; chunk_cores/gpus/mics/mem = element-wise max over the entries"
        " (chunk_mem in KiB); size = chunks (unit: chunks; chunks may share a node)",
        "cores, gpus, mics = chunks × per chunk; mem = chunks × chunk_mem in GB (base 1024)",
        "nodes = requested nodes; req_cores = requested cores (total); req_mem_gb = the request field as given"
        " (labelled GB, unit unreliable); app_type as given (synthetic); state = status",
        "name = executable; user_id = BLAKE2b-48 code of the user name; eurora_job_id = id text",
        "eurora_nodes = used node ids as the trace numbers them (1–64; the node files number them 0–63)",
        "rejected: malformed sections/fields/entries, walltime not hh:mm or missing without default, start before"
        " arrival; then the canonical rules of schema.validate_jobs",
        "rejected: a used-node entry beyond Eurora (node id, cores, GPUs, MICs or memory above the eurora preset's"
        " nodes) or chunks needing more than the whole machine",
        f"machine size {machine_size} chunks" if machine_size else "machine size unknown: no size-vs-machine rejects",
        "jobs sorted in queue order (submit_time, job_id)",
    ]
    if predicted:
        out.append("pred_power = Eurora ML power prediction (W per job) joined on job_id; null where absent")
    return out
