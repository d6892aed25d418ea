"""Eurora reader: the historical job instances of the Eurora simulator data (CINECA, 2014; paper 001).

Each ``*.log_crypt`` instance holds one job per line::

    job_id;executable;user;queue;arrival__(node;cores;gpus;mics;mem_KiB#)+__start;end;req_nodes;req_cores;
    req_mem_GB;walltime_hh:mm;NA;NA;status;app_type

The instances overlap (one job is in many files), so reading several keeps one row per job. The used-node entries
are the job's PBS chunks, which is what the multi-resource dispatchers of :mod:`wattsched.studies.multires.nodes` place.

Conventions (each is also recorded in ``provenance.conventions``):

* ``paths``: a file, a directory (every ``*.log_crypt`` below it, in sorted path order) or a list of either.
  Lines are keyed by their job id text: a repeat of an earlier line is a duplicate (counted in
  ``provenance.header["duplicate_lines"]``, not a reject); a repeat with different content is rejected (field
  ``job_id``, naming where the kept line is) and the first occurrence is kept. Blank lines are skipped and counted.
* Times are naive Eurora local time (Europe/Rome, CEST over this trace) read as UTC: epoch seconds with
  ``provenance.timezone`` "UTC" and ``unix_start_time`` 0 like the other readers, so wall-clock hours are local.
  ``submit_time`` = arrival; ``trace_start_time`` / ``trace_end_time`` = start / end; ``runtime`` = end − start.
* ``walltime`` = the hh:mm field × 60 s; empty, ``NA`` or zero use ``walltime_defaults[queue]`` (s) when given,
  else the job is rejected.
* Chunks: ``chunks`` = number of used-node entries (two entries may name the same node: chunks share nodes);
  ``chunk_cores/gpus/mics/mem`` = element-wise max over the entries (they agree for every job of the real trace;
  jobs where they differ are counted as ``heterogeneous_chunks``). Memory stays in the trace's KiB, the unit of
  :func:`wattsched.studies.multires.eurora.eurora_pool`.
* ``size`` = ``chunks`` (``provenance.size_unit`` = "chunks"; chunks may share a node, so no machine size is
  implied). Totals ``cores``, ``gpus``, ``mics`` = chunks × per chunk; ``mem`` = chunks × chunk_mem in GB (base
  1024), the canonical unit of ``mem``.
* Kept as given: ``nodes`` (requested nodes), ``req_cores`` (total), ``req_mem_gb`` (the trace's request field,
  labelled GB; its unit is unreliable: jobs using 200 MiB chunks request "200"), ``app_type`` (0/1/2, synthetic),
  ``state`` (status), ``name`` (executable), ``queue``, ``eurora_job_id`` (id text) and ``eurora_nodes`` (node ids
  as the trace numbers them, 1–64; the node files number the same nodes 0–63).
* ``user_id`` = :func:`wattsched.workload.sacct.user_code` of the user name (names are masked in the public data,
  so every job has the same code).
* ``predictions``: a ``power_predictions`` file (or its frame from :func:`read_eurora_power_predictions`) joined on
  ``job_id`` as ``pred_power`` (W per job, an ML prediction, null where absent; counts in the header).
* Rejected (``source`` = file, ``line`` = 1-based line, ``raw`` = the line), first failing rule wins: section or
  field counts, a non-integer job id, an empty queue, unparsable date-times, malformed used-node entries (not five
  non-negative integers, no cores), malformed request fields or app type, walltime not hh:mm or missing without a
  default, start before arrival; then the canonical rules of ``schema.validate_jobs`` (negative run time, ...).
* Jobs come back in queue order (submit time, job id).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.schema import (
    REJECTS_SCHEMA,
    Provenance,
    ReadResult,
    WorkloadError,
    finish_read,
    make_rejects,
)
from wattsched.workload.sacct import user_code

__all__ = ["EURORA_SUFFIX", "is_eurora_dir", "read_eurora", "read_eurora_power_predictions"]

#: File name ending of an Eurora job instance.
EURORA_SUFFIX = ".log_crypt"

_HEAD = ("job_id", "executable", "user", "queue", "arrival")
_TAIL = ("start", "end", "req_nodes", "req_cores", "req_mem", "walltime", "na1", "na2", "status", "app_type")
_ENTRY = ("node", "cores", "gpus", "mics", "mem")
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_MISSING_WALLTIME = ("", "na", "n/a", "-", "none", "null")
_KIB_PER_GB = 1024.0**2
_ROW = "__row"
_TEXT = "__text"


def is_eurora_dir(path: str | Path) -> bool:
    """True when ``path`` is a directory with an Eurora instance below it (for ``load_workload``'s dispatch)."""
    path = Path(path)
    return path.is_dir() and next(path.rglob(f"*{EURORA_SUFFIX}"), None) is not None


def _files(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if not items:
        raise WorkloadError("no Eurora instance given")
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(path.rglob(f"*{EURORA_SUFFIX}"))
            if not found:
                raise WorkloadError(f"{path}: no *{EURORA_SUFFIX} instance below this directory")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise WorkloadError(f"{path}: no such file or directory")
    return files


class _Lines:
    """The distinct job lines of the instances (first occurrence of each job id), with where they came from."""

    def __init__(self, files: list[Path]) -> None:
        self.src: list[str] = []
        self.line: list[int] = []
        self.text: list[str] = []
        self.conflicts: list[dict[str, Any]] = []
        self.per_file: list[dict[str, Any]] = []
        self.n_records = self.n_duplicates = self.n_blank = 0
        first: dict[str, int] = {}
        for path in files:
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                raise WorkloadError(f"{path}: cannot read: {exc}") from None
            source = str(path)
            ids: set[str] = set()
            n_lines = 0
            for number, raw in enumerate(text.split("\n"), start=1):
                body = raw.strip()
                if not body:
                    self.n_blank += 1
                    continue
                n_lines += 1
                jid = body.split(";", 1)[0].strip()
                ids.add(jid)
                kept = first.get(jid) if jid else None
                if kept is None:
                    if jid:
                        first[jid] = len(self.text)
                    self.src.append(source)
                    self.line.append(number)
                    self.text.append(body)
                elif self.text[kept] == body:
                    self.n_duplicates += 1
                else:
                    why = (
                        f"job id {jid} was already read with different content at {self.src[kept]}:"
                        f"{self.line[kept]} (the first occurrence is the one used)"
                    )
                    self.conflicts.append(
                        {
                            "source": source,
                            "line": number,
                            "job_id": _int_or_none(jid),
                            "field": "job_id",
                            "reason": why,
                            "raw": body,
                        }
                    )
            self.n_blank -= text.endswith("\n")  # the empty string after the final newline is not a line
            self.n_records += n_lines
            self.per_file.append({"path": source, "lines": n_lines, "job_ids": len(ids)})


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) < 19 else None


def _datetime(name: str) -> pl.Expr:
    return pl.col(name).str.to_datetime(_TIME_FORMAT, strict=False, time_unit="us")


def _epoch(name: str) -> pl.Expr:
    return (_datetime(name).dt.epoch("ms").cast(pl.Float64) / 1000.0).alias(name)


def _nonneg_int(name: str) -> pl.Expr:
    """The field as Int64, null unless it is plain digits (no sign, no decimals)."""
    col = pl.col(name)
    return pl.when(col.str.contains(r"^\d{1,18}$")).then(col.cast(pl.Int64, strict=False))


def _split_fields(frame: pl.DataFrame) -> pl.DataFrame:
    """Cut each line into its three ``__`` sections and their ``;`` fields (as stripped text)."""
    sections = pl.col(_TEXT).str.split("__")
    frame = frame.with_columns(sections.alias("__sec"), sections.list.len().alias("__n_sec"))
    head = pl.col("__sec").list.get(0, null_on_oob=True).str.split(";")
    tail = pl.col("__sec").list.get(2, null_on_oob=True).str.split(";")
    frame = frame.with_columns(
        head.list.len().alias("__n_head"),
        tail.list.len().alias("__n_tail"),
        *[head.list.get(i, null_on_oob=True).str.strip_chars().alias(f"f_{n}") for i, n in enumerate(_HEAD)],
        *[tail.list.get(i, null_on_oob=True).str.strip_chars().alias(f"f_{n}") for i, n in enumerate(_TAIL)],
        pl.col("__sec").list.get(1, null_on_oob=True).alias("__nodes"),
    )
    return frame.drop("__sec")


def _chunks(frame: pl.DataFrame) -> pl.DataFrame:
    """Per line: the chunk vector (max over the used-node entries), entry count, node ids, and the first reason an
    entry is malformed (null when all are fine)."""
    entries = (
        frame.filter(pl.col("__nodes").is_not_null())
        .select(
            _ROW,
            (pl.col("__nodes").str.strip_chars() == "").alias("__none"),
            pl.col("__nodes").str.strip_chars().str.replace(r"#$", "").str.split("#").alias("__entry"),
        )
        .explode("__entry")
        .with_columns(pl.int_range(1, pl.len() + 1).over(_ROW).alias("__k"))
    )
    parts = pl.col("__entry").str.split(";")
    entries = entries.with_columns(
        parts.list.len().alias("__n"),
        *[parts.list.get(i, null_on_oob=True).str.strip_chars().alias(f"e_{n}") for i, n in enumerate(_ENTRY)],
    ).with_columns(*[_nonneg_int(f"e_{n}").alias(n) for n in _ENTRY])
    shown = pl.format("used-node entry {} {}", pl.col("__k"), pl.col("__entry").fill_null(""))
    reason = (
        pl.when(pl.col("__none"))
        .then(pl.lit("no used-node entries between the '__' separators"))
        .when(pl.col("__entry").str.strip_chars().fill_null("") == "")
        .then(pl.format("used-node entry {} is empty (expected node;cores;gpus;mics;mem_KiB#)", pl.col("__k")))
        .when(pl.col("__n") != len(_ENTRY))
        .then(pl.format("{} has {} fields, expected 5 (node;cores;gpus;mics;mem_KiB)", shown, pl.col("__n")))
        .when(pl.any_horizontal(*[pl.col(n).is_null() for n in _ENTRY]))
        .then(pl.format("{}: every field must be a non-negative integer", shown))
        .when(pl.col("cores") == 0)
        .then(pl.format("{} uses no cores", shown))
    )
    vector = pl.struct("cores", "gpus", "mics", "mem")
    return (
        entries.with_columns(reason.alias("__reason"))
        .group_by(_ROW)
        .agg(
            pl.col("__reason").drop_nulls().first().alias("__nodes_reason"),
            pl.len().cast(pl.Int64).alias("chunks"),
            *[pl.col(n).max().alias(f"chunk_{n}") for n in ("cores", "gpus", "mics", "mem")],
            (vector.n_unique() > 1).alias("__heterogeneous"),
            pl.col("node").alias("eurora_nodes"),
        )
    )


def _walltime(defaults: Mapping[str, float] | None) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(walltime seconds or null, "is malformed", "missing and no default")."""
    text = pl.col("f_walltime")
    match = text.str.extract_groups(r"^(?P<h>\d{1,6}):(?P<m>[0-5]\d)$")
    seconds = match.struct.field("h").cast(pl.Float64) * 3600 + match.struct.field("m").cast(pl.Float64) * 60
    missing = text.str.to_lowercase().is_in(list(_MISSING_WALLTIME)).fill_null(True) | (seconds == 0).fill_null(False)
    malformed = seconds.is_null() & ~missing
    if defaults:
        fallback = pl.col("f_queue").replace_strict(dict(defaults), default=None, return_dtype=pl.Float64)
    else:
        fallback = pl.lit(None, dtype=pl.Float64)
    value = pl.when(missing).then(fallback).otherwise(seconds)
    return value, malformed, missing & fallback.is_null()


def _checks(defaults: Mapping[str, float] | None) -> list[tuple[str, pl.Expr, pl.Expr]]:
    """Eurora's own rules, in order; each names the field and says why."""
    _, wt_malformed, wt_missing = _walltime(defaults)
    checks: list[tuple[str, pl.Expr, pl.Expr]] = [
        ("line", pl.col("__n_sec") != 3,
         pl.format("expected 3 sections separated by '__' (job, used nodes, times), found {}", pl.col("__n_sec"))),
        ("line", pl.col("__n_head") != len(_HEAD),
         pl.format("expected 5 ';'-separated fields before the first '__' (job_id;executable;user;queue;arrival),"
                   " found {}", pl.col("__n_head"))),
        ("line", pl.col("__n_tail") != len(_TAIL),
         pl.format("expected 10 ';'-separated fields after the last '__' (start;end;req_nodes;req_cores;req_mem;"
                   "walltime;NA;NA;status;app_type), found {}", pl.col("__n_tail"))),
        ("job_id", pl.col("job_id").is_null(), pl.format("job id {} is not a non-negative integer", "f_job_id")),
        ("queue", pl.col("f_queue") == "", pl.lit("queue is empty")),
        ("arrival", pl.col("submit_time").is_null(),
         pl.format("arrival {} is not a 'YYYY-MM-DD HH:MM:SS' date-time", "f_arrival")),
        ("nodes", pl.col("__nodes_reason").is_not_null(), pl.col("__nodes_reason")),
        ("start", pl.col("trace_start_time").is_null(),
         pl.format("start {} is not a 'YYYY-MM-DD HH:MM:SS' date-time", "f_start")),
        ("end", pl.col("trace_end_time").is_null(),
         pl.format("end {} is not a 'YYYY-MM-DD HH:MM:SS' date-time", "f_end")),
        ("req_nodes", pl.col("nodes").is_null(),
         pl.format("requested nodes {} is not a non-negative integer", "f_req_nodes")),
        ("req_cores", pl.col("req_cores").is_null(),
         pl.format("requested cores {} is not a non-negative integer", "f_req_cores")),
        ("req_mem", pl.col("req_mem_gb").is_null() | (pl.col("req_mem_gb") < 0) | ~pl.col("req_mem_gb").is_finite(),
         pl.format("requested memory {} is not a non-negative number", "f_req_mem")),
        ("walltime", wt_malformed, pl.format("walltime {} is not hh:mm", "f_walltime")),
        ("walltime", wt_missing,
         pl.format("walltime '{}' is missing or zero and walltime_defaults has no entry for queue '{}'",
                   "f_walltime", "f_queue")),
        ("app_type", pl.col("app_type").is_null(),
         pl.format("application type {} is not a non-negative integer", "f_app_type")),
        ("start", pl.col("trace_start_time") < pl.col("submit_time"),
         pl.format("job started before it arrived (start {} < arrival {})", "f_start", "f_arrival")),
    ]  # fmt: skip
    return checks


def _parse(lines: _Lines, defaults: Mapping[str, float] | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Parse the distinct lines: (candidate jobs with ``__row``, Eurora-rule rejects)."""
    frame = pl.DataFrame(
        {_ROW: pl.int_range(len(lines.text), eager=True, dtype=pl.Int64), _TEXT: lines.text},
        schema={_ROW: pl.Int64, _TEXT: pl.Utf8},
    )
    frame = _split_fields(frame)
    frame = frame.join(_chunks(frame), on=_ROW, how="left")
    walltime, _, _ = _walltime(defaults)
    frame = frame.with_columns(
        _nonneg_int("f_job_id").alias("job_id"),
        _epoch("f_arrival").alias("submit_time"),
        _epoch("f_start").alias("trace_start_time"),
        _epoch("f_end").alias("trace_end_time"),
        _nonneg_int("f_req_nodes").alias("nodes"),
        _nonneg_int("f_req_cores").alias("req_cores"),
        pl.col("f_req_mem").cast(pl.Float64, strict=False).alias("req_mem_gb"),
        _nonneg_int("f_app_type").alias("app_type"),
        walltime.alias("walltime"),
    )
    reason = pl.lit(None, dtype=pl.Utf8)
    field_ = pl.lit(None, dtype=pl.Utf8)
    for name, cond, why in reversed(_checks(defaults)):
        reason = pl.when(cond.fill_null(False)).then(why).otherwise(reason)
        field_ = pl.when(cond.fill_null(False)).then(pl.lit(name)).otherwise(field_)
    frame = frame.with_columns(reason.alias("__reason"), field_.alias("__field"))
    own = frame.filter(pl.col("__reason").is_not_null()).select(
        _ROW,
        "job_id",
        pl.col("__field").alias("field"),
        pl.col("__reason").alias("reason"),
    )
    good = frame.filter(pl.col("__reason").is_null())
    users = good["f_user"].unique().to_list()
    codes = {u: user_code(u) for u in users}
    chunks = pl.col("chunks")
    jobs = good.select(
        "job_id",
        "submit_time",
        "walltime",
        (pl.col("trace_end_time") - pl.col("trace_start_time")).alias("runtime"),
        chunks.alias("size"),
        pl.col("f_user").replace_strict(codes, return_dtype=pl.Int64).alias("user_id"),
        pl.col("f_executable").alias("name"),
        pl.col("f_queue").alias("queue"),
        pl.col("f_status").alias("state"),
        (chunks * pl.col("chunk_cores")).alias("cores"),
        (chunks * pl.col("chunk_gpus")).alias("gpus"),
        (chunks * pl.col("chunk_mem")).cast(pl.Float64).truediv(_KIB_PER_GB).alias("mem"),
        (chunks * pl.col("chunk_mics")).alias("mics"),
        "chunks",
        "chunk_cores",
        "chunk_gpus",
        "chunk_mics",
        "chunk_mem",
        "nodes",
        "req_cores",
        "req_mem_gb",
        "app_type",
        "trace_start_time",
        "trace_end_time",
        pl.col("f_job_id").alias("eurora_job_id"),
        "eurora_nodes",
        "__heterogeneous",
        _ROW,
    )
    return jobs, own


def read_eurora_power_predictions(path: str | Path) -> pl.DataFrame:
    """Read Eurora's ``power_predictions`` (``498459.node129;93.0`` per line: PBS id; predicted job power in W).

    Returns ``job_id`` (Int64, the PBS number) and ``pred_power_eurora`` (Float64, W). The values are the ISC16 ML
    model's predictions, not measurements. A malformed line, or one id with two different values, is an error
    naming the file and line (a repeated identical line is dropped).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot read: {exc}") from None
    raw = pl.Series(_TEXT, text.split("\n"), dtype=pl.Utf8)
    frame = pl.DataFrame({_TEXT: raw.str.strip_chars()}).with_row_index("line", offset=1).filter(pl.col(_TEXT) != "")
    if frame.height == 0:
        raise WorkloadError(f"{path}: no predictions")
    parts = frame[_TEXT].str.extract_groups(r"^(?P<id>\d{1,18})(?:\.[^;\s]*)?\s*;\s*(?P<w>[^;]+?)$")
    frame = frame.with_columns(
        parts.struct.field("id").cast(pl.Int64).alias("job_id"),
        parts.struct.field("w").cast(pl.Float64, strict=False).alias("pred_power_eurora"),
    )
    bad = frame.filter(
        pl.col("job_id").is_null()
        | pl.col("pred_power_eurora").is_null()
        | ~pl.col("pred_power_eurora").is_finite()
        | (pl.col("pred_power_eurora") < 0)
    )
    if bad.height:
        first = bad.row(0, named=True)
        raise WorkloadError(
            f"{path}:{first['line']}: expected '<job_id>[.<host>];<non-negative watts>', got {first[_TEXT]!r}"
            f" ({bad.height} malformed line(s))"
        )
    frame = frame.unique(["job_id", "pred_power_eurora"], keep="first", maintain_order=True)
    clash = frame.filter(pl.col("job_id").is_duplicated())
    if clash.height:
        first = clash.row(0, named=True)
        lines = clash.filter(pl.col("job_id") == first["job_id"])["line"].to_list()
        raise WorkloadError(f"{path}: job {first['job_id']} has different predictions on lines {lines}")
    return frame.select("job_id", "pred_power_eurora")


def read_eurora(
    paths: str | Path | Sequence[str | Path],
    *,
    predictions: str | Path | pl.DataFrame | None = None,
    walltime_defaults: Mapping[str, float] | None = None,
    machine_size: int | None = None,
    strict: bool = False,
) -> ReadResult:
    """Read Eurora job instances into the canonical job table with PBS chunks (one row per job over all files).

    ``predictions``: a ``power_predictions`` file or its frame, joined as ``pred_power``. ``walltime_defaults``:
    seconds per queue for jobs without a walltime (else they are rejected). ``machine_size`` (chunks) bounds
    ``size`` when given. ``strict=True`` raises :class:`WorkloadError` naming the first reject. See the module
    docstring for every convention; ``provenance.header`` has the duplicate, chunk and prediction counts.
    """
    if machine_size is not None and int(machine_size) < 1:
        raise WorkloadError(f"machine_size must be a positive number of chunks, got {machine_size!r}")
    for queue, seconds in (walltime_defaults or {}).items():
        if not (isinstance(seconds, int | float) and seconds > 0 and seconds != float("inf")):
            raise WorkloadError(f"walltime_defaults[{queue!r}] must be positive seconds, got {seconds!r}")
    files = _files(paths)
    if isinstance(paths, str | Path):
        source = str(paths)
    else:
        source = files[0].as_posix() if len(files) == 1 else f"{os.path.commonpath(files)} ({len(files)} files)"
    lines = _Lines(files)
    if lines.n_records == 0:
        raise WorkloadError(f"{source}: no job lines")

    jobs, own = _parse(lines, walltime_defaults)
    n_heterogeneous = int(jobs["__heterogeneous"].sum())
    jobs = jobs.drop("__heterogeneous")
    where = pl.DataFrame(
        {_ROW: range(len(lines.text)), "source": lines.src, "line": lines.line, "raw": lines.text},
        schema={_ROW: pl.Int64, "source": pl.Utf8, "line": pl.Int64, "raw": pl.Utf8},
    )

    def locate(rejects: pl.DataFrame) -> pl.DataFrame:
        """Rejects keyed by distinct-line index → the file, line and text they came from."""
        return rejects.join(where, on=_ROW, how="left").drop(_ROW).select(list(REJECTS_SCHEMA))

    header: dict[str, Any] = {
        "input_timezone": "naive Eurora local time (Europe/Rome) read as UTC",
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
        line_column=_ROW,
        locate=lambda sem: locate(sem.select(pl.col("line").alias(_ROW), "job_id", "field", "reason")),
        sources=[str(f) for f in files],
    )
    _describe(header, result.jobs, walltime_defaults, predictions)
    return result


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
            int(good["eurora_nodes"].list.min().min()),
            int(good["eurora_nodes"].list.max().max()),
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
        f"machine size {machine_size} chunks" if machine_size else "machine size unknown: no size-vs-machine rejects",
        "jobs sorted in queue order (submit_time, job_id)",
    ]
    if predicted:
        out.append("pred_power = Eurora ML power prediction (W per job) joined on job_id; null where absent")
    return out
