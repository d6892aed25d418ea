"""``sacct --json``: the ``jobs`` array into parsed jobs (epoch times, minutes, TRES lists, nested steps counted).
The conventions are in :mod:`wattsched.workload.sacct`."""

from __future__ import annotations

import json
from typing import Any

from wattsched.core.schema import WorkloadError
from wattsched.core.structured_input import load_json
from wattsched.workload.sacct.record import ParsedJob, Reject, job_state, reject_row, user_code
from wattsched.workload.sacct.units import (
    MAX_INT,
    energy_or_none,
    limit_or_none,
    parse_tres,
    tres_count,
    tres_gpus,
    tres_mem_gb,
)


def _number(value: Any) -> float | None:
    """A JSON number or a ``{"set", "infinite", "number"}`` wrapper; unset or infinite is null."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, int | float):
        raise Reject(None, f"{str(value)[:40]!r} is not a number")
    return float(value)


def _dict(value: Any, where: str) -> dict[str, Any]:
    """An object member (missing or null is empty); any other JSON type is a reject naming it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Reject(where, f"{where} is a {type(value).__name__}, expected an object")
    return value


def _text(value: Any, where: str) -> str | None:
    """A string member (missing or empty is null); a number is taken as its text, anything else a reject."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise Reject(where, f"{where} is a {type(value).__name__}, expected text")


def _json_tres(items: Any, where: str) -> dict[str, str]:
    """TRES as ``{key: count text}``: a list of ``{type, name, count}`` objects (Slurm ≥ 20.11), or the
    ``cpu=4,mem=16G`` text older exports and ``sacct -P`` share; anything else is a reject naming ``where``."""
    if items is None:
        return {}
    if isinstance(items, str):
        return parse_tres(items)
    if not isinstance(items, list):
        raise Reject(where, f"{where} is a {type(items).__name__}, expected a list of TRES objects")
    out: dict[str, str] = {}
    for t in items:
        if not isinstance(t, dict):
            raise Reject(where, f"{where} entry {str(t)[:40]!r} is not a TRES object")
        kind, name = str(t.get("type", "")).lower(), t.get("name") or ""
        key = f"{kind}/{str(name).lower()}" if name else kind
        count = t.get("count")
        if count is not None:
            out[key] = str(count)
    return out


def _parse_json_job(job: dict[str, Any], size_unit: str) -> tuple[int, dict[str, Any]]:
    """One ``jobs`` entry → typed values. Reads the layouts of Slurm 20.11 to 24.x: ``time.limit`` and
    ``exit_code.return_code`` plain or ``{set, infinite, number}``; ``state.current`` text or a list; ``exit_code``
    ``signal.id`` or ``signal.signal_id``; TRES lists or text. A member of another JSON type is a reject."""
    jid = job.get("job_id")
    if isinstance(jid, bool) or not isinstance(jid, int):
        raise Reject("job_id", f"job id {str(jid)[:40]!r} is not an integer")
    if not 0 < jid <= MAX_INT:
        raise Reject("job_id", f"job id {jid} is not a positive Int64")
    t = _dict(job.get("time"), "time")

    def epoch(key: str) -> float | None:
        try:
            v = _number(t.get(key))
        except Reject as exc:
            raise Reject(f"time.{key}", exc.reason) from None
        return v if v else None

    try:
        limit = limit_or_none(_number(t.get("limit")))
    except Reject as exc:
        raise Reject("time.limit", exc.reason) from None
    tres = _dict(job.get("tres"), "tres")
    alloc, req = (
        _json_tres(tres.get("allocated"), "tres.allocated"),
        _json_tres(tres.get("requested"), "tres.requested"),
    )
    nnodes = job.get("allocation_nodes")
    nnodes = nnodes if isinstance(nnodes, int) and not isinstance(nnodes, bool) and 0 < nnodes <= MAX_INT else None
    if nnodes is None:
        nnodes = tres_count(alloc, "node", "tres.allocated")
    ncpus = tres_count(alloc, "cpu", "tres.allocated")
    if ncpus is None:
        try:
            cpus = _number(_dict(job.get("required"), "required").get("CPUs"))
        except Reject as exc:
            raise Reject("required.CPUs", exc.reason) from None
        ncpus = int(cpus) if cpus and cpus == int(cpus) and 0 < cpus <= MAX_INT else None
    state = _dict(job.get("state"), "state").get("current")
    if isinstance(state, list):
        state = state[0] if state else None
    state = _text(state, "state.current")
    user, group = _text(job.get("user"), "user"), _text(job.get("group"), "group")
    elapsed = t.get("elapsed")
    energy = tres_count(alloc, "energy", "tres.allocated")
    gpus = tres_gpus(alloc, "tres.allocated")
    mem = tres_mem_gb(alloc.get("mem"), "tres.allocated")
    return jid, {
        "submit": epoch("submission"), "start": epoch("start"), "end": epoch("end"), "eligible": epoch("eligible"),
        "elapsed": float(elapsed) if isinstance(elapsed, int | float) and not isinstance(elapsed, bool) else None,
        "walltime": None if limit is None else limit * 60.0, "nnodes": nnodes, "ncpus": ncpus,
        "size": nnodes if size_unit == "nodes" else ncpus,
        "user_id": user_code(user) if user else None, "group_id": user_code(group) if group else None,
        "name": _text(job.get("name"), "name"), "partition": _text(job.get("partition"), "partition"),
        "state": job_state(state),
        "gpus": gpus if gpus is not None else tres_gpus(req, "tres.requested"),
        "mem": mem if mem is not None else tres_mem_gb(req.get("mem"), "tres.requested"),
        "energy": energy_or_none(None if energy is None else float(energy)),
        "sacct_job_id": None, "sacct_user": user, "sacct_qos": _text(job.get("qos"), "qos"),
        "sacct_account": _text(job.get("account"), "account"), "sacct_exit_code": _exit_code(job.get("exit_code")),
        "sacct_nodelist": _text(job.get("nodes"), "nodes"),
    }  # fmt: skip


def _exit_code(value: Any) -> str | None:
    """``rc:signal`` of an ``exit_code`` object (``signal.id`` from 23.02, ``signal.signal_id`` in 22.05), or the
    text of a plain value."""
    if not isinstance(value, dict):
        return None if value is None else str(value)[:40]
    try:
        rc = _number(value.get("return_code"))
        signal = value.get("signal")
        sig = signal.get("id", signal.get("signal_id")) if isinstance(signal, dict) else signal
        sig_num = _number(sig)
    except Reject as exc:
        raise Reject("exit_code", exc.reason) from None
    return f"{int(rc or 0)}:{int(sig_num or 0)}"


def read_json(
    text: str, source: str, size_unit: str
) -> tuple[list[ParsedJob], list[dict[str, Any]], dict[str, Any], list[str]]:
    """``--json`` text → ``(parsed jobs, rejected entries as rows, provenance header, convention notes)``."""
    try:
        doc = load_json(text, source, error=WorkloadError)  # nested at most MAX_DEPTH
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise WorkloadError(f"{source}: JSON has no 'jobs' array (not sacct --json output)")
    jobs, rejects = [], []
    n_steps = 0
    for k, job in enumerate(doc["jobs"], start=1):
        raw = json.dumps(job, separators=(",", ":"))[:2000]
        if not isinstance(job, dict):
            rejects.append(reject_row(source, k, None, Reject(None, "jobs entry is not an object"), raw))
            continue
        steps = job.get("steps")
        n_steps += len(steps) if isinstance(steps, list) else 0
        try:
            jid, values = _parse_json_job(job, size_unit)
        except (AttributeError, TypeError, ValueError, OverflowError) as exc:  # a layout not foreseen above
            why = f"unrecognised sacct --json layout ({type(exc).__name__}: {str(exc)[:60]})"
            rejects.append(reject_row(source, k, None, Reject(None, why), raw))
            continue
        except Reject as exc:
            jid_raw = job.get("job_id")
            jid_ok = (
                jid_raw
                if isinstance(jid_raw, int) and not isinstance(jid_raw, bool) and 0 < jid_raw <= MAX_INT
                else None
            )
            rejects.append(reject_row(source, k, jid_ok, exc, raw))
            continue
        jobs.append((k, jid, raw, values))
    meta = doc.get("meta") or {}
    header = {"form": "json", "meta": meta, "records": len(doc["jobs"])}
    notes = [
        "form: sacct --json ('jobs' array); line = 1-based index in 'jobs'; times are epoch seconds (0 = unknown)",
        "time.limit in minutes, plain or {set, infinite, number}; unset or infinite = unknown",
        "user_id / group_id = stable codes of user / group names (the JSON has no numeric ids)",
        f"{n_steps} nested step record(s) folded into their jobs (not rejects)",
    ]
    return jobs, rejects, header, notes


#: The number-wrapper and TRES readers under public names: the advisor parses live 22.05 answers with them
#: (wattsched.advise.backends.parse).
json_number = _number
json_tres = _json_tres
