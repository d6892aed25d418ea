"""``sacct --json``: the ``jobs`` array into parsed jobs (epoch times, minutes, TRES lists, nested steps counted).
The conventions are in :mod:`wattsched.workload.sacct`."""

from __future__ import annotations

import json
from typing import Any

from wattsched.core.schema import WorkloadError
from wattsched.workload.sacct.record import ParsedJob, Reject, job_state, reject_row, user_code
from wattsched.workload.sacct.units import energy_or_none, tres_gpus, tres_mem_gb


def _number(value: Any) -> float | None:
    """A JSON number or a ``{"set", "infinite", "number"}`` wrapper; unset or infinite is null."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, int | float):
        raise Reject(None, f"{value!r} is not a number")
    return float(value)


def _json_tres(items: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in items or []:
        kind, name = str(t.get("type", "")).lower(), t.get("name") or ""
        key = f"{kind}/{name.lower()}" if name else kind
        count = t.get("count")
        if count is not None:
            out[key] = str(count)
    return out


def _parse_json_job(job: dict[str, Any], size_unit: str) -> tuple[int, dict[str, Any]]:
    jid = job.get("job_id")
    if isinstance(jid, bool) or not isinstance(jid, int):
        raise Reject("job_id", f"job id {jid!r} is not an integer")
    t = job.get("time") or {}

    def epoch(key: str) -> float | None:
        try:
            v = _number(t.get(key))
        except Reject as exc:
            raise Reject(f"time.{key}", exc.reason) from None
        return v if v else None

    try:
        limit = _number(t.get("limit"))
    except Reject as exc:
        raise Reject("time.limit", exc.reason) from None
    tres = job.get("tres") or {}
    alloc, req = _json_tres(tres.get("allocated")), _json_tres(tres.get("requested"))
    nnodes = job.get("allocation_nodes")
    nnodes = int(nnodes) if isinstance(nnodes, int) and nnodes > 0 else None
    if nnodes is None and "node" in alloc:
        nnodes = int(float(alloc["node"]))
    ncpus = int(float(alloc["cpu"])) if "cpu" in alloc else None
    if ncpus is None:
        cpus = _number((job.get("required") or {}).get("CPUs"))
        ncpus = int(cpus) if cpus else None
    state = (job.get("state") or {}).get("current")
    if isinstance(state, list):
        state = state[0] if state else None
    user, group = job.get("user"), job.get("group")
    elapsed = t.get("elapsed")
    energy = alloc.get("energy")
    return jid, {
        "submit": epoch("submission"), "start": epoch("start"), "end": epoch("end"), "eligible": epoch("eligible"),
        "elapsed": float(elapsed) if isinstance(elapsed, int | float) and not isinstance(elapsed, bool) else None,
        "walltime": None if limit is None else limit * 60.0, "nnodes": nnodes, "ncpus": ncpus,
        "size": nnodes if size_unit == "nodes" else ncpus,
        "user_id": user_code(user) if user else None, "group_id": user_code(group) if group else None,
        "name": job.get("name"), "partition": job.get("partition") or None, "state": job_state(state),
        "gpus": tres_gpus(alloc) if tres_gpus(alloc) is not None else tres_gpus(req),
        "mem": tres_mem_gb(alloc.get("mem") or req.get("mem")), "energy": energy_or_none(_number_or_none(energy)),
        "sacct_job_id": None, "sacct_user": user, "sacct_qos": job.get("qos") or None,
        "sacct_account": job.get("account") or None, "sacct_exit_code": _exit_code(job.get("exit_code")),
        "sacct_nodelist": job.get("nodes") or None,
    }  # fmt: skip


def _number_or_none(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:
        return None


def _exit_code(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None if value is None else str(value)
    rc = value.get("return_code")
    rc_num = _number(rc) if rc is not None else None
    sig = (value.get("signal") or {}).get("id")
    sig_num = _number(sig) if sig is not None else None
    return f"{int(rc_num or 0)}:{int(sig_num or 0)}"


def read_json(
    text: str, source: str, size_unit: str
) -> tuple[list[ParsedJob], list[dict[str, Any]], dict[str, Any], list[str]]:
    """``--json`` text → ``(parsed jobs, rejected entries as rows, provenance header, convention notes)``."""
    try:
        doc = json.loads(text)
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
        n_steps += len(job.get("steps") or [])
        try:
            jid, values = _parse_json_job(job, size_unit)
        except Reject as exc:
            jid_raw = job.get("job_id")
            jid_ok = jid_raw if isinstance(jid_raw, int) and not isinstance(jid_raw, bool) else None
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
