"""``sacct -P`` (``--parsable2``) text: records re-joined across newlines in free text, split into fields by the
header, steps folded into their jobs. The conventions are in :mod:`wattsched.workload.sacct`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from wattsched.core.schema import WorkloadError, shorten
from wattsched.workload.sacct.clock import Clock
from wattsched.workload.sacct.record import ParsedJob, Reject, job_state, reject_row, user_code
from wattsched.workload.sacct.units import (
    MAX_INT,
    UNLIMITED,
    energy_or_none,
    limit_or_none,
    parse_duration,
    parse_int,
    parse_tres,
    reqmem_gb,
    tres_count,
    tres_gpus,
    tres_mem_gb,
)

#: sacct fields (lower case) that hold user text and may contain the delimiter or newlines (Constraints uses ``|``
#: for OR). Account, QOS, WCKey and the like are admin-made identifiers and are not counted.
FREE_TEXT_FIELDS: frozenset[str] = frozenset(
    {"jobname", "comment", "admincomment", "systemcomment", "extra", "submitline", "workdir", "stdout", "stderr",
     "stdin", "constraints"}
)  # fmt: skip

_ID_RE = re.compile(r"(\d+)(?:([_+])(\d+|\[[^\]]*\]))?(?:\.([\w-]+))?")


class _Record:
    """One logical -P record: its first physical line, its text and (when well-formed) its fields by name."""

    __slots__ = ("fields", "line", "reject", "text")

    def __init__(self, line: int, text: str) -> None:
        self.line, self.text = line, text
        self.fields: dict[str, str] = {}
        self.reject: Reject | None = None


def _records(lines: list[str], first_line: int, names: list[str], delim: str) -> tuple[list[_Record], int]:
    """Group physical lines into records (re-joining newlines in free text) and split them into fields."""
    n = len(names)
    id_index = next((i for i, k in enumerate(names) if k in ("jobidraw", "jobid")), 0)

    def starts_record(line: str, pending: int) -> bool:
        """A line alone with a full field count starts a record; a short one continues a short pending record,
        and after a complete one starts a record only if its id field looks like a job id."""
        parts = line.split(delim)
        if len(parts) >= n:
            return True
        if pending < n:
            return False
        return len(parts) > id_index and _ID_RE.fullmatch(parts[id_index].strip()) is not None

    groups: list[tuple[int, list[str]]] = []
    blanks: list[str] = []
    n_blank = 0
    pending = 0  # fields in the record being built
    for k, line in enumerate(lines):
        lineno = first_line + k
        if not line.strip():
            blanks.append(line)
            continue
        if groups and not starts_record(line, pending):
            groups[-1][1].extend([*blanks, line])
            pending += len(line.split(delim)) - 1 + sum(len(b.split(delim)) - 1 for b in blanks)
        else:
            n_blank += len(blanks)
            groups.append((lineno, [line]))
            pending = len(line.split(delim))
        blanks = []
    n_blank += len(blanks)

    free = [i for i, k in enumerate(names) if k in FREE_TEXT_FIELDS]
    out = []
    for lineno, parts in groups:
        rec = _Record(lineno, "\n".join(parts))
        values = rec.text.split(delim)
        extra = len(values) - n
        if extra > 0 and len(free) == 1:
            i = free[0]
            values = [*values[:i], delim.join(values[i : i + extra + 1]), *values[i + extra + 1 :]]
        elif extra > 0:
            why = "no free-text field" if not free else f"{len(free)} free-text fields, so the split is ambiguous"
            rec.reject = Reject(None, f"{len(values)} fields but the header has {n} ({why})")
        elif extra < 0:
            rec.reject = Reject(None, f"{len(values)} fields but the header has {n} (truncated record?)")
        if rec.reject is None:
            rec.fields = dict(zip(names, values, strict=True))
        out.append(rec)
    return out, n_blank


def _parse_text(rec: _Record, clock: Clock, size_unit: str, header_names: dict[str, str]) -> dict[str, Any]:
    """Typed values of one well-formed -P record (raises :class:`Reject` naming the header field)."""
    f = rec.fields

    def get(key: str) -> str | None:
        v = f.get(key)
        return None if v is None or v.strip() == "" else v.strip()

    def time(key: str) -> float | None:
        v = f.get(key)
        if v is None:
            return None
        try:
            return clock.epoch(v)
        except Reject as exc:
            raise Reject(header_names[key], exc.reason) from None

    def integer(key: str) -> int | None:
        v = f.get(key)
        return None if v is None else parse_int(v, header_names[key])

    alloc = parse_tres(f.get("alloctres", ""))
    req = parse_tres(f.get("reqtres", ""))
    if "timelimitraw" in f:
        raw = f["timelimitraw"].strip()
        walltime = None if raw.lower() in UNLIMITED else parse_duration(raw, header_names["timelimitraw"], 60.0)
    elif "timelimit" in f:
        walltime = parse_duration(f["timelimit"], header_names["timelimit"], 60.0)
    else:
        walltime = None
    if walltime is not None:  # NO_VAL / INFINITE minutes: no limit
        walltime = None if limit_or_none(walltime / 60.0) is None else walltime
    if get("elapsedraw") is not None:
        elapsed: float | None = float(integer("elapsedraw") or 0)
    elif get("elapsed") is not None:
        elapsed = parse_duration(f["elapsed"], header_names["elapsed"], 1.0)
    else:
        elapsed = None
    nnodes = integer("nnodes")
    ncpus = integer("ncpus") if "ncpus" in f else integer("alloccpus")
    alloc_name, req_name = header_names.get("alloctres", "AllocTRES"), header_names.get("reqtres", "ReqTRES")
    if nnodes is None:
        nnodes = tres_count(alloc, "node", alloc_name)
    if ncpus is None:
        ncpus = tres_count(alloc, "cpu", alloc_name)
    energy_raw = integer("consumedenergyraw")
    if energy_raw is None:
        energy_raw = tres_count(alloc, "energy", alloc_name)
    gpus = tres_gpus(alloc, alloc_name)
    gpus = gpus if gpus is not None else tres_gpus(req, req_name)
    mem_alloc = tres_mem_gb(alloc.get("mem"), alloc_name)
    mem_req = tres_mem_gb(req.get("mem"), req_name)
    user, group = get("user"), get("group")
    uid, gid = integer("uid"), integer("gid")
    return {
        "submit": time("submit"), "start": time("start"), "end": time("end"), "eligible": time("eligible"),
        "elapsed": elapsed, "walltime": walltime, "nnodes": nnodes, "ncpus": ncpus,
        "size": nnodes if size_unit == "nodes" else ncpus,
        "user_id": uid if uid is not None else (user_code(user) if user else None),
        "group_id": gid if gid is not None else (user_code(group) if group else None),
        "name": f.get("jobname"), "partition": get("partition"), "state": job_state(get("state")),
        "gpus": gpus, "energy": energy_or_none(energy_raw),
        "mem": (mem_alloc if mem_alloc is not None else mem_req)
        or reqmem_gb(get("reqmem"), ncpus, nnodes, header_names.get("reqmem", "ReqMem")),
        "sacct_job_id": get("jobid"), "sacct_user": user, "sacct_qos": get("qos"), "sacct_account": get("account"),
        "sacct_exit_code": get("exitcode"), "sacct_nodelist": get("nodelist"),
    }  # fmt: skip


def _job_id(text: str, from_raw: bool, field: str) -> tuple[str, int | None, str | None]:
    """``(job key, integer id or None when a step, step name)`` of an id; raises :class:`Reject`."""
    text = text.strip()
    m = _ID_RE.fullmatch(text)
    if m is None:
        raise Reject(field, f"job id {text!r} is not an integer")
    base, sep, sub, step = m.groups()
    key = text.split(".", 1)[0]
    if step is not None:
        return key, None, step
    if int(base) > MAX_INT:
        raise Reject(field, f"job id {text[:40]!r} is beyond the Int64 range")
    if sep is None:
        return key, int(base), None
    if sep == "+" and sub == "0":
        return key, int(base), None
    kind = "pending array job summary" if sub.startswith("[") else "array task" if sep == "_" else "het-job component"
    hint = "" if from_raw else "; export JobIDRaw"
    raise Reject(field, f"{kind} {text!r} has no integer job id{hint}")


def _fold_steps(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A job rebuilt from its steps (no allocation line): span of times, largest sizes and energy."""
    job = dict(steps[0])

    def pick(key: str, fn: Callable[..., Any]) -> Any:
        values = [s[key] for s in steps if s[key] is not None]
        return fn(values) if values else None

    for key, fn in (("submit", min), ("start", min), ("elapsed", max), ("nnodes", max), ("ncpus", max),
                    ("size", max), ("energy", max), ("eligible", min), ("walltime", max)):  # fmt: skip
        job[key] = pick(key, fn)
    ends = [s["end"] for s in steps]
    job["end"] = None if any(e is None for e in ends) else max(ends)
    return job


def read_parsable(
    text: str, source: str, delim: str, clock: Clock, size_unit: str
) -> tuple[list[ParsedJob], list[dict[str, Any]], dict[str, Any], list[str]]:
    """``-P`` text → ``(parsed jobs, rejected records as rows, provenance header, convention notes)``."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        raise WorkloadError(f"{source}: file is empty")
    crlf = lines[start].endswith("\r")
    if crlf:
        lines = [line.removesuffix("\r") for line in lines]
    header_raw = [h.strip() for h in lines[start].split(delim)]
    names = [h.lower() for h in header_raw]
    header_names = dict(zip(names, header_raw, strict=True))
    if not {"jobidraw", "jobid"} & set(names):
        raise WorkloadError(
            f"{source}: first line is not a sacct header with JobIDRaw or JobID (delimiter {delim!r}):"
            f" {shorten(lines[start])!r}"
        )
    wanted = {"submit": "Submit", "size": "NNodes" if size_unit == "nodes" else "NCPUS"}
    has_size = (
        ("nnodes" in names or "alloctres" in names)
        if size_unit == "nodes"
        else bool({"ncpus", "alloccpus", "alloctres"} & set(names))
    )
    missing = [v for k, v in wanted.items() if (k == "size" and not has_size) or (k == "submit" and k not in names)]
    if missing:
        raise WorkloadError(f"{source}: sacct header lacks {missing} (header: {shorten(header_raw, 200)})")
    while lines and not lines[-1].strip():
        lines.pop()
    records, n_blank = _records(lines[start + 1 :], start + 2, names, delim)
    id_key = "jobidraw" if "jobidraw" in names else "jobid"

    rejects: list[dict[str, Any]] = []
    jobs: list[ParsedJob] = []  # (line, id, raw text, values)
    classified: list[tuple[_Record, str, int | None, str | None]] = []
    for rec in records:
        if rec.reject is None:
            try:
                key, jid, step = _job_id(rec.fields[id_key], id_key == "jobidraw", header_names[id_key])
                classified.append((rec, key, jid, step))
                continue
            except Reject as exc:
                rec.reject = exc
        jid = _leading_int(rec.fields.get(id_key) if rec.fields else rec.text.split(delim)[0])
        rejects.append(reject_row(source, rec.line, jid, rec.reject, rec.text))
    allocations = {key for _, key, _, step in classified if step is None}
    orphan_steps: dict[str, list[tuple[_Record, dict[str, Any]]]] = {}
    n_steps = 0
    for rec, key, jid, step in classified:
        if step is not None and key in allocations:
            n_steps += 1
            continue
        try:
            values = _parse_text(rec, clock, size_unit, header_names)
        except Reject as exc:
            rejects.append(reject_row(source, rec.line, jid or _leading_int(key), exc, rec.text))
            continue
        if step is None:
            assert jid is not None  # _job_id gives None only with a step
            jobs.append((rec.line, jid, rec.text, values))
        else:
            orphan_steps.setdefault(key, []).append((rec, values))
    n_built = 0
    for key, steps in orphan_steps.items():
        rec = steps[0][0]
        try:
            _, jid, _ = _job_id(key, id_key == "jobidraw", header_names[id_key])
        except Reject as exc:
            rejects.append(reject_row(source, rec.line, _leading_int(key), exc, rec.text))
            continue
        n_built += 1
        values = _fold_steps([v for _, v in steps])
        assert jid is not None  # a job key has no .step, and _job_id gives None only with a step
        jobs.append((rec.line, jid, "\n".join(r.text for r, _ in steps), values))
    header = {"fields": header_raw, "delimiter": delim, "records": len(records)}
    notes = [f"form: sacct -P text, delimiter {delim!r}, fields {header_raw}"]
    free = [header_names[k] for k in names if k in FREE_TEXT_FIELDS]
    notes.append(
        f"free-text fields in the header: {free or 'none'}; records with too many fields are "
        + ("re-joined into " + free[0] if len(free) == 1 else "rejected")
    )
    multi = sum(1 for r in records if "\n" in r.text)
    if multi:
        notes.append(f"{multi} record(s) spanned several lines (newline in free text) and were re-joined")
    notes.append(f"{n_steps} step record(s) folded into their job line (not rejects)")
    if n_built:
        notes.append(f"{n_built} job(s) had only step records and were built from their steps")
    if n_blank:
        notes.append(f"{n_blank} blank line(s) skipped")
    if crlf:
        notes.append("CRLF line endings")
    return jobs, rejects, header, notes


def _leading_int(text: str | None) -> int | None:
    """The integer job id of a rejected record for the rejects table (steps count as their job), else None."""
    m = _ID_RE.fullmatch((text or "").strip())
    return int(m.group(1)) if m and m.group(2) is None and len(m.group(1)) < 19 else None
