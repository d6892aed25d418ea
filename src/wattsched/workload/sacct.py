"""Slurm ``sacct`` reader: ``--parsable2`` (``-P``) text or ``--json`` output into the canonical job table.

sacct is the one history every Slurm site has, so this reader lets the toolkit run on a site's own jobs. Both forms
give the same columns; the JSON form is preferred (epoch times, no delimiter or time-zone traps).

Conventions (each is also recorded in ``provenance.conventions``):

* Form: a file whose first non-blank character is ``{`` is ``--json`` (the ``jobs`` array); anything else is
  ``-P`` text whose first non-blank line is the header. Header names are case-insensitive, in any order and subset;
  ``delimiter`` may be several characters (``--delimiter='^|^'``). ``.gz`` is read transparently.
* Times: ``YYYY-MM-DDTHH:MM:SS`` is the sacct client's local time in ``timezone`` (default UTC) and becomes epoch
  seconds; an ISO time with an offset (``SLURM_TIME_FORMAT=%FT%T%z``) uses its offset; bare digits
  (``SLURM_TIME_FORMAT=%s``) are epoch seconds; ``Unknown``, ``None`` and empty are null (JSON: 0 is null).
  A local time in the DST fall-back hour is ambiguous: it is read as the ``ambiguous`` occurrence (default the
  earlier) and counted; a time in the spring-forward gap (sacct never prints one) uses the pre-transition offset
  and is counted.
* ``job_id`` = ``JobIDRaw`` (integer; array tasks and het-job components have their own raw ids), else ``JobID``
  where ``123+0`` (het leader) is 123, while ``123+1``, ``123_4`` and ``123_[1-5]`` are rejected (no integer id:
  export ``JobIDRaw``). ``JobID`` is kept as ``sacct_job_id`` when present. Any other non-integer id is a reject.
* Steps (``123.batch``, ``123.0``, ``123.extern``) fold into their job line and are only counted. A job with steps
  but no allocation line is built from its steps: earliest Submit/Start, latest End, largest Elapsed, NNodes, NCPUS
  and energy (the extern step spans the allocation), the other fields from its first step.
* ``submit_time`` = Submit (epoch s; ``provenance.unix_start_time`` 0 and ``timezone`` "UTC", as for PM100).
  ``trace_start_time`` / ``trace_end_time`` = Start / End (epoch s), ``sacct_eligible_time`` = Eligible.
* ``walltime`` = ``TimelimitRaw`` × 60 (minutes), else ``Timelimit`` (``[D-]HH:MM:SS``); ``UNLIMITED``,
  ``Partition_Limit`` or empty are unknown: rejected ("walltime unknown") unless ``walltime_fallback`` is a number
  of seconds or ``"runtime"``. JSON ``time.limit`` is minutes, plain or ``{"set", "infinite", "number"}``.
* ``runtime`` = ``ElapsedRaw`` (s), else ``Elapsed``, else End − Start.
* Never-started jobs (no Start: cancelled while pending) are rejected, like SWF's unknown run time; started jobs
  with no End (still running) are rejected as "not ended". Both name the field and the state.
* ``size`` = ``NNodes`` (``size_unit="nodes"``) or ``NCPUS`` (``"processors"``), falling back on AllocTRES
  ``node=`` / ``cpu=``. ``cores`` = NCPUS (or AllocCPUS, or TRES ``cpu=``). ``gpus`` = AllocTRES, else ReqTRES,
  ``gres/gpu=N`` (typed ``gres/gpu:<type>=N`` summed when the untyped one is absent). ``mem`` (GB, base 1024) =
  TRES ``mem=`` (unit suffix, MB when bare), else ``ReqMem`` (``16G`` total, or the older ``4000Mc`` per CPU ×
  NCPUS and ``16Gn`` per node × NNodes). ``energy`` (J) = ``ConsumedEnergyRaw``, else TRES ``energy=``; 0 (no
  energy plugin) and NO_VAL sentinels are null.
* ``user_id`` = ``UID``, else a stable code of ``User`` (48-bit BLAKE2b, the same in every file); ``group_id`` =
  ``GID``, else a code of ``Group``. ``name`` = JobName, ``queue`` = ``partition`` = Partition, ``state`` = State
  with ``by <uid>`` and a trailing ``+`` removed (JSON: the first entry of ``state.current``).
* Kept with a ``sacct_`` prefix: job_id (JobID text), user, qos, account, exit_code, nodelist, eligible_time.
* Free text (JobName, Comment, WorkDir, …) may hold the delimiter or newlines. A record with too many fields is
  re-joined into the free-text column when the header has exactly one free-text field; otherwise it is rejected. A
  physical line starts a new record when it alone has at least as many fields as the header; otherwise it continues
  a record that is still short of fields, and after a complete record it continues it unless its id field looks
  like a job id (a newline in a last-column free text). Blank lines are kept only inside a record. So a truncated
  line followed by a short line is joined with it; put free text in the middle of the header, not last, if it may
  hold newlines followed by digits.
* Rejects (one row per record; ``line`` = first physical line of the record, JSON: 1-based index in ``jobs``;
  ``raw`` = the record text): field count, unparsable value (names the header field), id rules above, never
  started, not ended, walltime unknown, then the canonical rules of ``schema.validate_jobs`` (with ``-D``, a
  requeued job's later records are duplicates).
* Jobs come back in queue order (submit time, job id).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from wattsched.core.schema import (
    Provenance,
    ReadResult,
    WorkloadError,
    coerce_columns,
    make_rejects,
    raise_if_strict,
    sort_queue_order,
    validate_jobs,
)

__all__ = ["FREE_TEXT_FIELDS", "is_sacct_file", "read_sacct", "user_code"]

#: sacct fields (lower case) that hold user text and may contain the delimiter or newlines (Constraints uses ``|``
#: for OR). Account, QOS, WCKey and the like are admin-made identifiers and are not counted.
FREE_TEXT_FIELDS: frozenset[str] = frozenset(
    {"jobname", "comment", "admincomment", "systemcomment", "extra", "submitline", "workdir", "stdout", "stderr",
     "stdin", "constraints"}
)  # fmt: skip

_NULL_TIMES = frozenset({"", "unknown", "none", "n/a", "invalid"})
_UNLIMITED = frozenset({"unlimited", "partition_limit", "infinite", "", "none", "unknown"})
_ID_RE = re.compile(r"(\d+)(?:([_+])(\d+|\[[^\]]*\]))?(?:\.([\w-]+))?")
_DIGITS = re.compile(r"-?\d+")
_MEM_UNITS = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_NO_VAL_MIN = 2**63  # Slurm's NO_VAL64 / INFINITE64 sentinels are larger

_STRING_COLUMNS = ("name", "queue", "partition", "state", "sacct_job_id", "sacct_user", "sacct_qos",
                   "sacct_account", "sacct_exit_code", "sacct_nodelist")  # fmt: skip
_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(), "submit_time": pl.Float64(), "walltime": pl.Float64(), "runtime": pl.Float64(),
    "size": pl.Int64(), "user_id": pl.Int64(), "group_id": pl.Int64(), "name": pl.Utf8(), "queue": pl.Utf8(),
    "partition": pl.Utf8(), "state": pl.Utf8(), "cores": pl.Int64(), "gpus": pl.Int64(), "mem": pl.Float64(),
    "energy": pl.Float64(), "trace_start_time": pl.Float64(), "trace_end_time": pl.Float64(),
    "sacct_eligible_time": pl.Float64(), "sacct_job_id": pl.Utf8(), "sacct_user": pl.Utf8(),
    "sacct_qos": pl.Utf8(), "sacct_account": pl.Utf8(), "sacct_exit_code": pl.Utf8(), "sacct_nodelist": pl.Utf8(),
    "__line": pl.Int64(),
}  # fmt: skip


class _Reject(Exception):
    """A record that cannot become a job: carries the field and the reason."""

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def user_code(name: str) -> int:
    """Stable non-negative 48-bit code of a user or group name, so ids agree across files without a UID column."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=6).digest(), "big")


def is_sacct_file(path: str | Path, delimiter: str = "|") -> bool:
    """True when ``path`` looks like sacct output: a JSON object with a ``jobs`` key near the start, or a
    delimited header with a JobID/JobIDRaw field and Submit (for ``load_workload``'s dispatch)."""
    try:
        with Path(path).open("rb") as fh:
            magic = fh.read(2)
        opener: Callable[..., Any] = gzip.open if magic == b"\x1f\x8b" else open
        with opener(Path(path), "rb") as fh:
            head = fh.read(65536).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return False
    stripped = head.lstrip()
    if stripped.startswith("{"):
        return '"jobs"' in stripped
    first = stripped.split("\n", 1)[0].rstrip("\r")
    names = {n.strip().lower() for n in first.split(delimiter)}
    return bool(names & {"jobid", "jobidraw"}) and "submit" in names


# ------------------------------------------------------------------------------------------------------------
# Values
# ------------------------------------------------------------------------------------------------------------


class _Clock:
    """Local sacct times → epoch seconds in one zone, counting DST-ambiguous and nonexistent local times."""

    def __init__(self, timezone: str, ambiguous: str) -> None:
        try:
            self.zone = UTC if timezone.upper() in {"UTC", "Z", "ETC/UTC"} else ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise WorkloadError(f"unknown time zone {timezone!r}: {exc}") from exc
        self.fold = 1 if ambiguous == "later" else 0
        self.n_ambiguous = 0
        self.n_gap = 0
        self._cache: dict[str, tuple[float, int]] = {}

    def epoch(self, text: str) -> float | None:
        text = text.strip()
        if text.lower() in _NULL_TIMES:
            return None
        if _DIGITS.fullmatch(text):
            return float(int(text))
        hit = self._cache.get(text)
        if hit is None:
            try:
                dt = datetime.fromisoformat(text)
            except ValueError as exc:
                raise _Reject(None, f"time {text!r} is neither YYYY-MM-DDTHH:MM:SS nor epoch seconds") from exc
            hit = self._localize(dt)
            self._cache[text] = hit
        value, kind = hit
        self.n_ambiguous += kind == 1
        self.n_gap += kind == 2
        return value

    def _localize(self, dt: datetime) -> tuple[float, int]:
        if dt.tzinfo is not None:
            return dt.timestamp(), 0
        if self.zone is UTC:
            return dt.replace(tzinfo=UTC).timestamp(), 0
        first, second = dt.replace(tzinfo=self.zone, fold=0), dt.replace(tzinfo=self.zone, fold=1)
        if first.utcoffset() == second.utcoffset():
            return first.timestamp(), 0
        back = first.astimezone(UTC).astimezone(self.zone).replace(tzinfo=None)
        if back == dt:  # both instants exist: the fall-back hour
            return dt.replace(tzinfo=self.zone, fold=self.fold).timestamp(), 1
        return first.timestamp(), 2  # the spring-forward gap


def _int(text: str, what: str) -> int | None:
    text = text.strip()
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise _Reject(what, f"{what} {text!r} is not an integer") from None


def _duration(text: str, what: str, bare_unit: float) -> float | None:
    """``[D-]HH:MM:SS`` / ``MM:SS`` (a bare number counts ``bare_unit`` seconds); sentinels are null."""
    text = text.strip()
    if text.lower() in _UNLIMITED:
        return None
    try:
        days = 0.0
        if "-" in text:
            d, text = text.split("-", 1)
            days = float(d)
        parts = [float(p) for p in text.split(":")]
    except ValueError:
        raise _Reject(what, f"{what} {text!r} is not a duration [D-]HH:MM:SS") from None
    if len(parts) == 1:
        return days * 86400 + parts[0] * bare_unit
    if len(parts) > 3:
        raise _Reject(what, f"{what} {text!r} is not a duration [D-]HH:MM:SS")
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    return days * 86400 + seconds


def _tres(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def _mem_gb(text: str | None) -> float | None:
    """A TRES memory amount (MB when bare, K/M/G/T/P suffix base 1024) in GB."""
    if not text:
        return None
    m = re.fullmatch(r"([\d.]+)([KMGTP]?)", text.strip(), re.IGNORECASE)
    if not m:
        return None
    return float(m.group(1)) * _MEM_UNITS[m.group(2).upper()] / 1024.0


def _reqmem_gb(text: str | None, ncpus: int | None, nnodes: int | None, field: str) -> float | None:
    """``ReqMem`` in GB: ``16G`` (the job's total, Slurm ≥ 21.08), ``4000Mc`` per CPU or ``16Gn`` per node (older
    Slurm), MB when bare; per-CPU/per-node amounts need NCPUS/NNodes, else unknown. ``0``/empty is unknown."""
    if not text or not text.strip():
        return None
    m = re.fullmatch(r"([\d.]+)([KMGTP]?)([cn]?)", text.strip(), re.IGNORECASE)
    if not m:
        raise _Reject(field, f"{text!r} is not a memory amount such as 16G, 4000Mc or 16Gn")
    amount = float(m.group(1)) * _MEM_UNITS[m.group(2).upper()] / 1024.0
    per = m.group(3).lower()
    factor = ncpus if per == "c" else nnodes if per == "n" else 1
    return None if amount == 0 or factor is None else amount * factor


def _tres_gpus(tres: dict[str, str]) -> int | None:
    if "gres/gpu" in tres:
        return int(float(tres["gres/gpu"]))
    typed = [int(float(v)) for k, v in tres.items() if k.startswith("gres/gpu:")]
    return sum(typed) if typed else None


def _energy(value: float | None) -> float | None:
    if value is None or value <= 0 or value >= _NO_VAL_MIN:
        return None
    return float(value)


def _state(text: str | None) -> str | None:
    if text is None or not text.strip():
        return None
    return text.strip().split(" by ", 1)[0].strip().rstrip("+") or None


# ------------------------------------------------------------------------------------------------------------
# -P text
# ------------------------------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    if not path.exists():
        raise WorkloadError(f"{path}: file does not exist")
    if not path.is_file():
        raise WorkloadError(f"{path}: not a regular file")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise WorkloadError(f"{path}: corrupt gzip: {exc}") from exc
    return data.decode("utf-8", errors="replace")


class _Record:
    """One logical -P record: its first physical line, its text and (when well-formed) its fields by name."""

    __slots__ = ("fields", "line", "reject", "text")

    def __init__(self, line: int, text: str) -> None:
        self.line, self.text = line, text
        self.fields: dict[str, str] = {}
        self.reject: _Reject | None = None


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
            rec.reject = _Reject(None, f"{len(values)} fields but the header has {n} ({why})")
        elif extra < 0:
            rec.reject = _Reject(None, f"{len(values)} fields but the header has {n} (truncated record?)")
        if rec.reject is None:
            rec.fields = dict(zip(names, values, strict=True))
        out.append(rec)
    return out, n_blank


def _parse_text(rec: _Record, clock: _Clock, size_unit: str, header_names: dict[str, str]) -> dict[str, Any]:
    """Typed values of one well-formed -P record (raises :class:`_Reject` naming the header field)."""
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
        except _Reject as exc:
            raise _Reject(header_names[key], exc.reason) from None

    def integer(key: str) -> int | None:
        v = f.get(key)
        return None if v is None else _int(v, header_names[key])

    alloc = _tres(f.get("alloctres", ""))
    req = _tres(f.get("reqtres", ""))
    if "timelimitraw" in f:
        raw = f["timelimitraw"].strip()
        walltime = None if raw.lower() in _UNLIMITED else _duration(raw, header_names["timelimitraw"], 60.0)
    elif "timelimit" in f:
        walltime = _duration(f["timelimit"], header_names["timelimit"], 60.0)
    else:
        walltime = None
    if get("elapsedraw") is not None:
        elapsed = float(integer("elapsedraw") or 0)
    elif get("elapsed") is not None:
        elapsed = _duration(f["elapsed"], header_names["elapsed"], 1.0)
    else:
        elapsed = None
    nnodes = integer("nnodes")
    ncpus = integer("ncpus") if "ncpus" in f else integer("alloccpus")
    if nnodes is None and "node" in alloc:
        nnodes = _int(alloc["node"], "AllocTRES node")
    if ncpus is None and "cpu" in alloc:
        ncpus = _int(alloc["cpu"], "AllocTRES cpu")
    energy_raw = integer("consumedenergyraw")
    if energy_raw is None and "energy" in alloc:
        energy_raw = _int(alloc["energy"], "AllocTRES energy")
    gpus = _tres_gpus(alloc) if _tres_gpus(alloc) is not None else _tres_gpus(req)
    user, group = get("user"), get("group")
    uid, gid = integer("uid"), integer("gid")
    return {
        "submit": time("submit"), "start": time("start"), "end": time("end"), "eligible": time("eligible"),
        "elapsed": elapsed, "walltime": walltime, "nnodes": nnodes, "ncpus": ncpus,
        "size": nnodes if size_unit == "nodes" else ncpus,
        "user_id": uid if uid is not None else (user_code(user) if user else None),
        "group_id": gid if gid is not None else (user_code(group) if group else None),
        "name": f.get("jobname"), "partition": get("partition"), "state": _state(get("state")),
        "gpus": gpus, "energy": _energy(energy_raw),
        "mem": _mem_gb(alloc.get("mem") or req.get("mem"))
        or _reqmem_gb(get("reqmem"), ncpus, nnodes, header_names.get("reqmem", "ReqMem")),
        "sacct_job_id": get("jobid"), "sacct_user": user, "sacct_qos": get("qos"), "sacct_account": get("account"),
        "sacct_exit_code": get("exitcode"), "sacct_nodelist": get("nodelist"),
    }  # fmt: skip


def _job_id(text: str, from_raw: bool, field: str) -> tuple[str, int | None, str | None]:
    """``(job key, integer id or None when a step, step name)`` of an id; raises :class:`_Reject`."""
    text = text.strip()
    m = _ID_RE.fullmatch(text)
    if m is None:
        raise _Reject(field, f"job id {text!r} is not an integer")
    base, sep, sub, step = m.groups()
    key = text.split(".", 1)[0]
    if step is not None:
        return key, None, step
    if sep is None:
        return key, int(base), None
    if sep == "+" and sub == "0":
        return key, int(base), None
    kind = "pending array job summary" if sub.startswith("[") else "array task" if sep == "_" else "het-job component"
    hint = "" if from_raw else "; export JobIDRaw"
    raise _Reject(field, f"{kind} {text!r} has no integer job id{hint}")


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


def _read_psv(
    text: str, source: str, delim: str, clock: _Clock, size_unit: str
) -> tuple[list[tuple[int, int, str, dict[str, Any]]], list[dict[str, Any]], dict[str, Any], list[str]]:
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
            f"{source}: first line is not a sacct header with JobIDRaw or JobID (delimiter {delim!r}): {lines[start]!r}"
        )
    wanted = {"submit": "Submit", "size": "NNodes" if size_unit == "nodes" else "NCPUS"}
    has_size = (
        ("nnodes" in names or "alloctres" in names)
        if size_unit == "nodes"
        else bool({"ncpus", "alloccpus", "alloctres"} & set(names))
    )
    missing = [v for k, v in wanted.items() if (k == "size" and not has_size) or (k == "submit" and k not in names)]
    if missing:
        raise WorkloadError(f"{source}: sacct header lacks {missing} (header: {header_raw})")
    while lines and not lines[-1].strip():
        lines.pop()
    records, n_blank = _records(lines[start + 1 :], start + 2, names, delim)
    id_key = "jobidraw" if "jobidraw" in names else "jobid"

    rejects: list[dict[str, Any]] = []
    jobs: list[tuple[int, int, str, dict[str, Any]]] = []  # (line, id, raw text, values)
    classified: list[tuple[_Record, str, int | None, str | None]] = []
    for rec in records:
        if rec.reject is None:
            try:
                key, jid, step = _job_id(rec.fields[id_key], id_key == "jobidraw", header_names[id_key])
                classified.append((rec, key, jid, step))
                continue
            except _Reject as exc:
                rec.reject = exc
        jid = _leading_int(rec.fields.get(id_key) if rec.fields else rec.text.split(delim)[0])
        rejects.append(_reject_row(source, rec.line, jid, rec.reject, rec.text))
    allocations = {key for _, key, _, step in classified if step is None}
    orphan_steps: dict[str, list[tuple[_Record, dict[str, Any]]]] = {}
    n_steps = 0
    for rec, key, jid, step in classified:
        if step is not None and key in allocations:
            n_steps += 1
            continue
        try:
            values = _parse_text(rec, clock, size_unit, header_names)
        except _Reject as exc:
            rejects.append(_reject_row(source, rec.line, jid or _leading_int(key), exc, rec.text))
            continue
        if step is None:
            jobs.append((rec.line, jid, rec.text, values))
        else:
            orphan_steps.setdefault(key, []).append((rec, values))
    n_built = 0
    for key, steps in orphan_steps.items():
        rec = steps[0][0]
        try:
            _, jid, _ = _job_id(key, id_key == "jobidraw", header_names[id_key])
        except _Reject as exc:
            rejects.append(_reject_row(source, rec.line, _leading_int(key), exc, rec.text))
            continue
        n_built += 1
        values = _fold_steps([v for _, v in steps])
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


def _reject_row(source: str, line: int, job_id: int | None, exc: _Reject, raw: str) -> dict[str, Any]:
    return {"source": source, "line": line, "job_id": job_id, "field": exc.field, "reason": exc.reason, "raw": raw}


# ------------------------------------------------------------------------------------------------------------
# --json
# ------------------------------------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    """A JSON number or a ``{"set", "infinite", "number"}`` wrapper; unset or infinite is null."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, int | float):
        raise _Reject(None, f"{value!r} is not a number")
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
        raise _Reject("job_id", f"job id {jid!r} is not an integer")
    t = job.get("time") or {}

    def epoch(key: str) -> float | None:
        try:
            v = _number(t.get(key))
        except _Reject as exc:
            raise _Reject(f"time.{key}", exc.reason) from None
        return v if v else None

    try:
        limit = _number(t.get("limit"))
    except _Reject as exc:
        raise _Reject("time.limit", exc.reason) from None
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
        "name": job.get("name"), "partition": job.get("partition") or None, "state": _state(state),
        "gpus": _tres_gpus(alloc) if _tres_gpus(alloc) is not None else _tres_gpus(req),
        "mem": _mem_gb(alloc.get("mem") or req.get("mem")), "energy": _energy(_number_or_none(energy)),
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


def _read_json(
    text: str, source: str, size_unit: str
) -> tuple[list[tuple[int, int, str, dict[str, Any]]], list[dict[str, Any]], dict[str, Any], list[str]]:
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
            rejects.append(_reject_row(source, k, None, _Reject(None, "jobs entry is not an object"), raw))
            continue
        n_steps += len(job.get("steps") or [])
        try:
            jid, values = _parse_json_job(job, size_unit)
        except _Reject as exc:
            jid_raw = job.get("job_id")
            jid_ok = jid_raw if isinstance(jid_raw, int) and not isinstance(jid_raw, bool) else None
            rejects.append(_reject_row(source, k, jid_ok, exc, raw))
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


# ------------------------------------------------------------------------------------------------------------
# Reader
# ------------------------------------------------------------------------------------------------------------


def read_sacct(
    path: str | Path,
    *,
    machine_size: int | None = None,
    timezone: str = "UTC",
    strict: bool = False,
    size_unit: Literal["nodes", "processors"] = "nodes",
    delimiter: str = "|",
    walltime_fallback: float | Literal["runtime"] | None = None,
    ambiguous: Literal["earlier", "later"] = "earlier",
) -> ReadResult:
    """Read ``sacct -P`` text or ``sacct --json`` output into the canonical job table, rejecting unusable records.

    ``timezone`` is the sacct client's zone for naive local times (IANA name). ``size_unit`` picks NNodes or NCPUS
    as ``size``. ``walltime_fallback`` replaces an unknown limit (seconds, or ``"runtime"``) instead of rejecting.
    ``ambiguous`` resolves DST fall-back local times. ``strict=True`` raises :class:`WorkloadError` naming the first
    reject. See the module docstring for every convention.
    """
    path = Path(path)
    source = str(path)
    if size_unit not in ("nodes", "processors"):
        raise WorkloadError(f"size_unit must be 'nodes' or 'processors', got {size_unit!r}")
    if machine_size is not None and int(machine_size) < 1:
        raise WorkloadError(f"machine_size must be positive, got {machine_size!r}")
    if not delimiter:
        raise WorkloadError("delimiter must not be empty")
    if ambiguous not in ("earlier", "later"):
        raise WorkloadError(f"ambiguous must be 'earlier' or 'later', got {ambiguous!r}")
    if not (walltime_fallback is None or walltime_fallback == "runtime" or isinstance(walltime_fallback, int | float)):
        raise WorkloadError(f"walltime_fallback must be seconds, 'runtime' or None, got {walltime_fallback!r}")
    clock = _Clock(timezone, ambiguous)
    text = _read_text(path)
    if not text.strip():
        raise WorkloadError(f"{source}: file is empty")
    is_json = text.lstrip().startswith("{")
    if is_json:
        parsed, rejects, header, notes = _read_json(text, source, size_unit)
    else:
        parsed, rejects, header, notes = _read_psv(text, source, delimiter, clock, size_unit)

    rows: list[dict[str, Any]] = []
    raw_by_line: dict[int, str] = {}
    n_fallback = 0
    for line, jid, raw, v in parsed:
        raw_by_line[line] = raw
        if v["start"] is None:
            why = f"job never started (Start unknown, state {v['state']}): run time unknown"
            rejects.append(_reject_row(source, line, jid, _Reject("Start", why), raw))
            continue
        if v["end"] is None:
            why = f"job has not ended (End unknown, state {v['state']}): run time not final"
            rejects.append(_reject_row(source, line, jid, _Reject("End", why), raw))
            continue
        runtime = v["elapsed"] if v["elapsed"] is not None else v["end"] - v["start"]
        walltime = v["walltime"]
        if walltime is None and walltime_fallback is not None:
            walltime = runtime if walltime_fallback == "runtime" else float(walltime_fallback)
            n_fallback += 1
        if walltime is None:
            field = "time.limit" if is_json else "TimelimitRaw"
            why = "walltime unknown (UNLIMITED, Partition_Limit or empty time limit)"
            rejects.append(_reject_row(source, line, jid, _Reject(field, why), raw))
            continue
        rows.append({
            "job_id": jid, "submit_time": v["submit"], "walltime": walltime, "runtime": runtime, "size": v["size"],
            "user_id": v["user_id"], "group_id": v["group_id"], "name": v["name"], "queue": v["partition"],
            "partition": v["partition"], "state": v["state"], "cores": v["ncpus"], "gpus": v["gpus"],
            "mem": v["mem"], "energy": v["energy"], "trace_start_time": v["start"], "trace_end_time": v["end"],
            "sacct_eligible_time": v["eligible"], "sacct_job_id": v["sacct_job_id"], "sacct_user": v["sacct_user"],
            "sacct_qos": v["sacct_qos"], "sacct_account": v["sacct_account"],
            "sacct_exit_code": v["sacct_exit_code"], "sacct_nodelist": v["sacct_nodelist"], "__line": line,
        })  # fmt: skip
    frame = pl.DataFrame(rows, schema=_SCHEMA) if rows else pl.DataFrame(schema=_SCHEMA)
    good, sem = validate_jobs(coerce_columns(frame), machine_size=machine_size, source=source, line_column="__line")
    if sem.height:
        sem = sem.with_columns(pl.Series("raw", [raw_by_line[line] for line in sem["line"].to_list()], dtype=pl.Utf8))
    all_rejects = pl.concat([make_rejects(rejects), sem]).sort("line", maintain_order=True)
    good = sort_queue_order(good)

    conventions = notes + _conventions(timezone, size_unit, walltime_fallback, ambiguous, machine_size)
    if clock.n_ambiguous:
        conventions.append(f"{clock.n_ambiguous} DST-ambiguous local time(s) read as the {ambiguous} occurrence")
    if clock.n_gap:
        conventions.append(f"{clock.n_gap} nonexistent local time(s) (DST gap) read with the pre-transition offset")
    if n_fallback:
        conventions.append(f"{n_fallback} job(s) with an unknown time limit got the walltime fallback")
    header["input_timezone"] = timezone
    provenance = Provenance(
        source=source,
        format="sacct-json" if is_json else "sacct",
        machine_size=machine_size,
        size_unit=size_unit,
        unix_start_time=0.0,
        timezone="UTC",
        header=header,
        n_records=int(header["records"]),
        n_jobs=good.height,
        n_rejected=all_rejects.height,
        conventions=conventions,
    )
    raise_if_strict(source, all_rejects, strict, "record")
    return ReadResult(good, all_rejects, provenance)


def _conventions(
    timezone: str, size_unit: str, fallback: float | str | None, ambiguous: str, machine_size: int | None
) -> list[str]:
    size = "NNodes (AllocTRES node=)" if size_unit == "nodes" else "NCPUS (AllocCPUS, AllocTRES cpu=)"
    fb = "rejected (walltime unknown)" if fallback is None else f"replaced by {fallback!r}"
    return [
        f"local times read in {timezone}; output epoch seconds UTC (unix_start_time 0); %s digits are epoch;"
        " Unknown/None/empty are null",
        "job_id = JobIDRaw (else JobID: 123+0 → 123; array tasks, het components > 0, pending array summaries"
        " rejected); non-integer ids rejected",
        "submit_time = Submit; trace_start_time / trace_end_time = Start / End; sacct_eligible_time = Eligible",
        f"walltime = TimelimitRaw × 60 (else Timelimit); UNLIMITED / Partition_Limit / empty {fb}",
        "runtime = ElapsedRaw (else Elapsed, else End − Start)",
        "rejected: never started (no Start), not ended (no End)",
        f"size = {size} (unit: {size_unit}); cores = NCPUS; gpus = AllocTRES (else ReqTRES) gres/gpu;"
        " mem = TRES mem in GB (base 1024)",
        "energy = ConsumedEnergyRaw (J), else AllocTRES energy; 0 and NO_VAL are null",
        "user_id = UID else BLAKE2b-48 code of User; group_id = GID else code of Group",
        "queue = partition = Partition; state = State without 'by <uid>' and trailing '+'",
        f"DST fall-back local times read as the {ambiguous} occurrence",
        "kept: sacct_job_id (JobID), sacct_user, sacct_qos, sacct_account, sacct_exit_code, sacct_nodelist",
        "rejected: the canonical rules of schema.validate_jobs (-D requeue duplicates: the first record is kept)",
        f"machine size {machine_size}" if machine_size else "machine size unknown: no size-vs-machine rejects",
        "jobs sorted in queue order (submit_time, job_id)",
    ]
