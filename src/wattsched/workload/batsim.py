"""Batsim (v4) workloads: JSON with ``nb_res``, ``jobs`` and ``profiles``, written and read back.

Writing: each job becomes ``{"id": "<job_id>", "subtime", "walltime", "res", "profile"}`` with a ``delay``
profile of its true runtime (Batsim kills a job at its walltime itself, as wattsched does). Jobs with the same
runtime share one profile, so a large trace stays compact. ``user_id`` and the per-node power summaries, when
present, are added as extra job fields, which Batsim keeps and forwards to the scheduler.

Reading (:func:`read_batsim`): ``id`` is kept as text in ``batsim_id`` (Batsim's ids are strings: ``"1"``,
``"w0!1"``, ``"abc"``), so a run's evalys ``jobs.csv`` and a Batsim JSON written back carry the ids Batsim uses;
``job_id`` is the integer the id holds (the part after ``!``) when every job's is one and they are distinct, else
the job's 1-based position in ``jobs`` (``"w0!1"`` and ``"w1!1"`` are two jobs); an id given twice is a reject.
``subtime`` → ``submit_time``, ``walltime`` → ``walltime`` (missing or ≤ 0: the
run time, as for SWF), ``res`` → ``size``, the ``delay`` of the job's profile → ``runtime``, and the extra fields
written above back as columns. ``nb_res`` is the workload's declared machine size, as an SWF header's MaxProcs.
A job whose profile is missing or not a ``delay`` profile (``parallel``, ``parallel_homogeneous``, ``composed``,
SMPI traces…: their run time depends on the platform model Batsim simulates) is a reject saying so, as is a
negative ``subtime`` (Batsim's times start at 0); ``line`` of a reject is the job's 1-based position in ``jobs``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.bounded_input import read_input_bytes
from wattsched.core.schema import (
    Provenance,
    ReadResult,
    WorkloadError,
    coerce_columns,
    finish_read,
    replace_raw,
    sort_queue_order,
)
from wattsched.core.store import atomic_write
from wattsched.core.structured_input import load_json

#: Optional columns carried as extra job fields (when present and not null).
EXTRA_FIELDS = ("user_id", "power_mean", "power_max", "power_std")


def batsim_workload(jobs: pl.DataFrame, machine_size: int, *, description: str = "") -> dict[str, Any]:
    """The Batsim workload as a dict (queue order; ids as strings, times in seconds)."""
    if machine_size <= 0:
        raise WorkloadError(f"Batsim needs a positive number of resources, got {machine_size}")
    jobs = sort_queue_order(coerce_columns(jobs))
    too_big = jobs.filter(pl.col("size") > machine_size)
    if too_big.height:
        raise WorkloadError(
            f"{too_big.height} job(s) need more than the {machine_size} resources, e.g. job {too_big['job_id'][0]}"
        )
    extras = [c for c in EXTRA_FIELDS if c in jobs.columns]
    profiles: dict[str, dict[str, Any]] = {}
    out = []
    ids = ["batsim_id"] if "batsim_id" in jobs.columns else []
    columns = ("job_id", *ids, "submit_time", "walltime", "runtime", "size", *extras)
    for row in jobs.select(columns).iter_rows(named=True):
        delay = float(row["runtime"])
        name = f"delay_{delay!r}"  # exact: one profile per distinct runtime
        profiles.setdefault(name, {"type": "delay", "delay": delay})
        job = {
            "id": str(row["batsim_id"]) if row.get("batsim_id") is not None else str(row["job_id"]),
            "subtime": float(row["submit_time"]),
            "walltime": float(row["walltime"]) if math.isfinite(row["walltime"]) else -1.0,
            "res": int(row["size"]),
            "profile": name,
        }
        job |= {c: row[c] for c in extras if row[c] is not None}
        out.append(job)
    return {"nb_res": int(machine_size), "description": description, "jobs": out, "profiles": profiles}


def write_batsim(
    jobs: pl.DataFrame, path: str | Path, *, machine_size: int | None = None, provenance: Provenance | None = None
) -> None:
    """Write the Batsim workload JSON; the machine size comes from ``machine_size`` or the provenance."""
    size = machine_size or (provenance.machine_size if provenance is not None else None)
    if not size:
        raise WorkloadError("a Batsim workload needs the machine size (nb_res); pass --machine-size")
    source = provenance.source if provenance is not None else "a canonical job table"
    workload = batsim_workload(jobs, int(size), description=f"exported by wattsched from {source}")
    atomic_write(Path(path), json.dumps(workload, indent=1) + "\n")  # a kill leaves the former file whole


def is_batsim_doc(doc: Any) -> bool:
    """True when a parsed JSON document is a Batsim workload: an object with ``nb_res``, or a ``jobs`` array
    whose first entry has ``subtime``."""
    if not isinstance(doc, dict):
        return False
    jobs = doc.get("jobs")
    first = jobs[0] if isinstance(jobs, list) and jobs else None
    return "nb_res" in doc or (isinstance(first, dict) and "subtime" in first)


def _job_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.rsplit("!", 1)[-1].strip()  # "w0!12": Batsim's workload-prefixed id
        value = int(text) if text.lstrip("-").isdigit() else None
    if isinstance(value, int) and abs(value) < 2**63:
        return value
    return None


def _batsim_id(value: Any) -> str | None:
    """A job's id as Batsim reads it: a non-empty string, or an integer written as one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _parse_job(job: Any, profiles: dict[str, Any]) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """``(row, None)`` for a usable job, ``(None, (field, reason))`` otherwise."""
    if not isinstance(job, dict):
        return None, ("jobs", "jobs entry is not an object")
    sid = _batsim_id(job.get("id"))
    if sid is None:
        return None, ("id", f"job id {job.get('id')!r} is not a string or an integer")
    for key in ("subtime", "res"):
        if key not in job:
            return None, (key, f"'{key}' is missing")
    subtime, res = _number(job["subtime"]), job["res"]
    if subtime is None:
        return None, ("subtime", f"subtime {job['subtime']!r} is not a number")
    if subtime < 0:  # Batsim's times are seconds from the simulation's start
        return None, ("subtime", f"subtime {subtime!r} is negative (Batsim times start at 0)")
    integral = isinstance(res, int | float) and math.isfinite(res) and float(res).is_integer() and abs(res) < 2**63
    if isinstance(res, bool) or not integral:
        return None, ("res", f"res {res!r} is not an integer")
    name = job.get("profile")
    profile = profiles.get(name) if isinstance(name, str) else None
    if profile is None:
        return None, ("profile", f"profile {name!r} is not in 'profiles'")
    kind = profile.get("type") if isinstance(profile, dict) else None
    if kind != "delay":
        why = f"profile {name!r} has type {kind!r}: only delay profiles give a run time"
        return None, ("profile", why)
    delay = _number(profile.get("delay"))
    if delay is None:
        return None, ("profile", f"profile {name!r} has no numeric 'delay'")
    wall = _number(job.get("walltime", -1))
    if "walltime" in job and (wall is None or math.isnan(wall)):
        return None, ("walltime", f"walltime {job['walltime']!r} is not a number")
    row: dict[str, Any] = {
        "job_id": _job_id(sid),
        "batsim_id": sid,
        "submit_time": subtime,
        "walltime": wall if wall is not None and wall > 0 else delay,
        "runtime": delay,
        "size": int(res),
    }
    for extra in EXTRA_FIELDS:
        value = job.get(extra)
        if extra == "user_id" and value is not None and _job_id(value) is None:
            return None, ("user_id", f"user_id {value!r} is not an integer")
        number = _job_id(value) if extra == "user_id" else _number(value)
        row[extra] = number
    return row, None


def read_batsim(
    path: str | Path, *, machine_size: int | None = None, strict: bool = False, doc: Any = None
) -> ReadResult:
    """Read a Batsim workload (see the module docstring); ``machine_size`` overrides ``nb_res``. ``doc`` is the
    parsed JSON when the caller has it already (format detection parses the file)."""
    path = Path(path)
    source = str(path)
    if doc is None:
        doc = _load_json(path)
    if not is_batsim_doc(doc) or not isinstance(doc.get("jobs"), list):
        raise WorkloadError(f"{path}: not a Batsim workload (expected an object with 'nb_res' and a 'jobs' array)")
    profiles = doc.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise WorkloadError(f"{path}: 'profiles' must be an object of named profiles")
    nb_res = doc.get("nb_res")
    declared = int(nb_res) if isinstance(nb_res, int) and not isinstance(nb_res, bool) and nb_res > 0 else None
    if nb_res is not None and declared is None:
        raise WorkloadError(f"{path}: nb_res {nb_res!r} is not a positive integer")
    rows: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    first_at: dict[str, int] = {}
    for k, job in enumerate(doc["jobs"], start=1):
        row, bad = _parse_job(job, profiles)
        sid = row["batsim_id"] if row is not None else None
        if sid is not None and sid in first_at:
            row, bad = None, ("id", f"job id {sid!r} is given twice (first at job {first_at[sid]})")
        if row is not None:
            first_at[row["batsim_id"]] = k
            rows.append({**row, "__line": k})
            continue
        assert bad is not None
        jid = _job_id(job.get("id")) if isinstance(job, dict) else None
        raw = json.dumps(job, default=str)[:500]
        rejects.append({"source": source, "line": k, "job_id": jid, "field": bad[0], "reason": bad[1], "raw": raw})
    numbers = [r["job_id"] for r in rows]
    by_position = any(n is None for n in numbers) or len(set(numbers)) != len(numbers)
    if by_position:  # ids that hold no integer, or the same integer under two workloads: number by position
        for r in rows:
            r["job_id"] = r["__line"]
    schema = {
        "job_id": pl.Int64,
        "batsim_id": pl.Utf8,
        "submit_time": pl.Float64,
        "walltime": pl.Float64,
        "runtime": pl.Float64,
        "size": pl.Int64,
        **{c: pl.Int64 if c == "user_id" else pl.Float64 for c in EXTRA_FIELDS},
        "__line": pl.Int64,
    }
    jobs = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    jobs = jobs.drop([c for c in EXTRA_FIELDS if jobs[c].null_count() == jobs.height])
    size = machine_size or declared
    conventions = [
        "Batsim v4 workload: id → batsim_id (text), subtime → submit_time, res → size, delay profile → runtime",
        "job_id: the 1-based position in 'jobs' (the ids do not all hold distinct integers)"
        if by_position
        else "job_id: the integer each id holds",
        "walltime missing or <= 0 (Batsim: no walltime): walltime = run time",
        "jobs with a non-delay or unknown profile rejected (their run time depends on Batsim's platform model)",
        "reject 'line' is the job's 1-based position in 'jobs'",
    ]
    if size is not None:
        origin = "the machine_size argument" if machine_size else "nb_res"
        conventions.append(f"machine size {size} from {origin}")
    provenance = Provenance(
        source=source,
        format="batsim",
        machine_size=size,
        size_unit="resources",
        header={k: v for k, v in doc.items() if k not in ("jobs", "profiles")},
        n_records=len(doc["jobs"]),
        conventions=conventions,
    )
    return finish_read(
        jobs,
        rejects,
        provenance,
        strict=strict,
        line_column="__line",
        locate=lambda refused: replace_raw(refused, lambda k: json.dumps(doc["jobs"][k - 1], default=str)[:500]),
        unit="record",
    )


def _load_json(path: Path) -> Any:
    if not path.exists():
        raise WorkloadError(f"{path}: file does not exist")
    try:
        # gunzipped within the limit of core.bounded_input; nested at most core.structured_input.MAX_DEPTH
        return load_json(read_input_bytes(path), path, error=WorkloadError)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkloadError(f"{path}: not readable JSON: {exc}") from exc
