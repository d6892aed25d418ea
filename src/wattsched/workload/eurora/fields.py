"""An Eurora job line → candidate job columns: its three ``__`` sections and ``;`` fields, the PBS chunks of its
used-node entries, and Eurora's own rules (first failing one wins), all as vectorised polars expressions."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import polars as pl

from wattsched.workload.eurora.instances import InstanceLines
from wattsched.workload.sacct import user_code

#: Column of the candidate jobs holding the index of their distinct line (see :class:`InstanceLines`).
ROW = "__row"

_HEAD = ("job_id", "executable", "user", "queue", "arrival")
_TAIL = ("start", "end", "req_nodes", "req_cores", "req_mem", "walltime", "na1", "na2", "status", "app_type")
_ENTRY = ("node", "cores", "gpus", "mics", "mem")
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_MISSING_WALLTIME = ("", "na", "n/a", "-", "none", "null")
_KIB_PER_GB = 1024.0**2
_TEXT = "__text"


def _datetime(name: str) -> pl.Expr:
    return pl.col(name).str.to_datetime(_TIME_FORMAT, strict=False, time_unit="us")


def _epoch(name: str, timezone: str | None = None) -> pl.Expr:
    """Epoch seconds of a naive date-time: read as UTC (None), or as local time in ``timezone`` (the DST
    fall-back hour read as its first instant, a time in the spring-forward gap as missing: rejected)."""
    stamp = _datetime(name)
    if timezone is not None:
        stamp = stamp.dt.replace_time_zone(timezone, ambiguous="earliest", non_existent="null")
    return (stamp.dt.epoch("ms").cast(pl.Float64) / 1000.0).alias(name)


@functools.cache
def machine_limits() -> dict[str, int]:
    """What Eurora's largest node holds of each resource (``cores``, ``gpus``, ``mics``, ``mem`` in KiB), its
    machine totals (``total_<resource>``) and its node count (``nodes``), from the Eurora preset
    (``studies/multires/platforms/eurora.toml``, the machine the traces ran on): a used-node entry above them is a
    corrupt field (10^12 cores), not a job. The preset is read as a platform file, so the reader imports no study."""
    from wattsched.core.platform_file import read_platform_file  # deferred: pydantic and YAML, for Eurora files only

    groups = read_platform_file("eurora", "multires").data["groups"]
    limits = {"nodes": sum(int(g["count"]) for g in groups)}
    for r in _ENTRY[1:]:
        limits[r] = max(int(g["capacity"][r]) for g in groups)
        limits[f"total_{r}"] = sum(int(g["count"]) * int(g["capacity"][r]) for g in groups)
    return limits


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
            ROW,
            (pl.col("__nodes").str.strip_chars() == "").alias("__none"),
            pl.col("__nodes").str.strip_chars().str.replace(r"#$", "").str.split("#").alias("__entry"),
        )
        .explode("__entry")
        .with_columns(pl.int_range(1, pl.len() + 1).over(ROW).alias("__k"))
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
    limits = machine_limits()
    reason = reason.when(pl.col("node") > limits["nodes"]).then(
        pl.format("{}: node id {} is beyond Eurora's {} nodes", shown, pl.col("node"), pl.lit(limits["nodes"]))
    )
    for r in _ENTRY[1:]:
        unit = " KiB of memory" if r == "mem" else f" {r}"
        reason = reason.when(pl.col(r) > limits[r]).then(
            pl.format("{}: {}{} on one node, more than a Eurora node has ({})", shown, pl.col(r), pl.lit(unit),
                      pl.lit(limits[r]))
        )  # fmt: skip
    vector = pl.struct("cores", "gpus", "mics", "mem")
    return (
        entries.with_columns(reason.alias("__reason"))
        .group_by(ROW)
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
        *_total_checks(),
        ("start", pl.col("trace_start_time") < pl.col("submit_time"),
         pl.format("job started before it arrived (start {} < arrival {})", "f_start", "f_arrival")),
    ]  # fmt: skip
    return checks


def _total_checks() -> list[tuple[str, pl.Expr, pl.Expr]]:
    """A job whose chunks use more of a resource than the whole of Eurora has (each entry fits a node, but too
    many entries): it could never be placed."""
    limits = machine_limits()
    checks = []
    for r in _ENTRY[1:]:
        total = pl.col("chunks") * pl.col(f"chunk_{r}")
        unit = " KiB of memory" if r == "mem" else f" {r}"
        why = pl.format("the job's {} chunks use {}{} in all, more than Eurora has ({})", pl.col("chunks"), total,
                        pl.lit(unit), pl.lit(limits[f"total_{r}"]))  # fmt: skip
        checks.append(("nodes", total > limits[f"total_{r}"], why))
    return checks


def parse_lines(
    lines: InstanceLines, defaults: Mapping[str, float] | None, timezone: str | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Parse the distinct lines: (candidate jobs with ``__row``, Eurora-rule rejects); naive times in
    ``timezone`` (None: read as UTC)."""
    frame = pl.DataFrame(
        {ROW: pl.int_range(len(lines.text), eager=True, dtype=pl.Int64), _TEXT: lines.text},
        schema={ROW: pl.Int64, _TEXT: pl.Utf8},
    )
    frame = _split_fields(frame)
    frame = frame.join(_chunks(frame), on=ROW, how="left")
    walltime, _, _ = _walltime(defaults)
    frame = frame.with_columns(
        _nonneg_int("f_job_id").alias("job_id"),
        _epoch("f_arrival", timezone).alias("submit_time"),
        _epoch("f_start", timezone).alias("trace_start_time"),
        _epoch("f_end", timezone).alias("trace_end_time"),
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
        ROW,
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
        ROW,
    )
    return jobs, own
