"""Slurm 22.05 answers → the advisor's records (:mod:`wattsched.advise.records`): pure functions shared by the
command-line and the slurmrestd backends.

Why one parser for both: in 22.05, ``squeue --json`` and ``sacct --json`` are produced by the same OpenAPI plugins
as slurmrestd (their ``meta.plugin`` says ``openapi/v0.0.38`` and ``openapi/dbv0.0.38``), so the job shapes are
identical; only node power and licenses differ (the CLI has no JSON for them: ``scontrol show node|licenses -o``
text, parsed here too). Anything that cannot be trusted raises :class:`SlurmAnswerError` with one line naming the
source, the record, the field and why; a KeyError or TypeError never escapes. The job comment is never read (the
testbed keeps the true power there).
"""

from __future__ import annotations

import re
from typing import Any

from wattsched.advise.records import (
    PENDING,
    RUNNING,
    SUSPENDED,
    FinishedJob,
    LicenseState,
    NodePower,
    QueuedJob,
    SlurmAnswerError,
)
from wattsched.core.structured_input import load_json as load_guarded_json
from wattsched.dataset.hostlist import expand_hostlist
from wattsched.workload.sacct.json import json_number as _number
from wattsched.workload.sacct.json import json_tres as _json_tres
from wattsched.workload.sacct.record import Reject
from wattsched.workload.sacct.units import limit_or_none

#: sacct states of a job that has ended (the learning signal comes from these).
ENDED_STATES = frozenset(
    {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"}
)
#: Step ids that are not ``srun`` steps: their energy is partial (``batch`` counts the first node only).
_NON_SRUN_STEPS = frozenset({"batch", "extern", "interactive"})
_LICENSE_ITEM = re.compile(r"^(?P<name>[^:*]+)(?:[:*](?P<count>\d+))?$")  # a bare name counts 1, as in sbatch -L


def load_json(text: str | bytes, source: str) -> dict[str, Any]:
    """The JSON object of an answer; not JSON, truncated, not an object, or a non-empty ``errors`` list is a
    :class:`SlurmAnswerError` naming ``source``."""
    try:
        doc = load_guarded_json(text, source)  # nested at most MAX_DEPTH, else a ValueError as for bad JSON
    except (ValueError, UnicodeDecodeError) as exc:
        shown = text[:40] if isinstance(text, str) else text[:40].decode("utf-8", "replace")
        raise SlurmAnswerError(source, None, None, f"not JSON ({exc.__class__.__name__}: {exc}) in {shown!r}") from None
    if not isinstance(doc, dict):
        raise SlurmAnswerError(source, None, None, f"a JSON {type(doc).__name__}, expected an object")
    errors = doc.get("errors")
    if isinstance(errors, list):  # 22.05 sacct/slurmdbd: an empty answer is the "error" "Nothing found with query"
        errors = [
            e for e in errors if not (isinstance(e, dict) and str(e.get("error", "")).startswith("Nothing found"))
        ]
        doc.setdefault("jobs", [])
    if errors:
        first = errors[0] if isinstance(errors, list) else errors
        why = first.get("error") or first.get("description") if isinstance(first, dict) else first
        raise SlurmAnswerError(source, None, "errors", f"Slurm reported an error: {str(why)[:120]}")
    return doc


def answer_version(doc: dict[str, Any]) -> str | None:
    """``meta.Slurm.release`` (e.g. ``22.05.8``) of an OpenAPI answer, or None when absent."""
    meta = doc.get("meta")
    slurm = meta.get("Slurm") if isinstance(meta, dict) else None
    release = slurm.get("release") if isinstance(slurm, dict) else None
    return release if isinstance(release, str) else None


def _jobs(doc: dict[str, Any], source: str) -> list[Any]:
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        raise SlurmAnswerError(source, None, "jobs", f"is {type(jobs).__name__}, expected a list of jobs")
    return jobs


class _Job:
    """Typed access to one job object; every failure names the job and the field."""

    def __init__(self, job: Any, source: str, index: int) -> None:
        if not isinstance(job, dict):
            raise SlurmAnswerError(source, f"jobs[{index}]", None, f"is a {type(job).__name__}, expected an object")
        self.job, self.source = job, source
        jid = job.get("job_id")
        if isinstance(jid, bool) or not isinstance(jid, int) or jid <= 0:
            raise SlurmAnswerError(source, f"jobs[{index}]", "job_id", f"{str(jid)[:40]!r} is not a positive integer")
        self.job_id = jid

    def fail(self, field_name: str, why: str) -> SlurmAnswerError:
        return SlurmAnswerError(self.source, f"job {self.job_id}", field_name, why)

    def get(self, key: str, required: bool = True) -> Any:
        if key not in self.job:
            if required:
                raise self.fail(key, "missing")
            return None
        return self.job[key]

    def text(self, key: str, required: bool = True, node: dict[str, Any] | None = None) -> str:
        value = (node if node is not None else self.job).get(key)
        if value is None and not required:
            return ""
        if key not in (node if node is not None else self.job) and required:
            raise self.fail(key, "missing")
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(key, f"is a {type(value).__name__}, expected text")
        return value

    def number(self, key: str, required: bool = True, node: dict[str, Any] | None = None) -> float | None:
        where = node if node is not None else self.job
        if key not in where:
            if required:
                raise self.fail(key, "missing")
            return None
        try:
            return _number(where[key])
        except Reject as exc:
            raise self.fail(key, exc.reason) from None

    def epoch(self, key: str, required: bool = True, node: dict[str, Any] | None = None) -> float | None:
        value = self.number(key, required, node)
        return value if value else None  # Slurm writes 0 for "not yet"


def license_watts(text: str, name: str, source: str, record: str) -> int | None:
    """The count of license ``name`` in a ``power:400,other:2`` request (None when it asks for none)."""
    if not text:
        return None
    for item in text.split(","):
        m = _LICENSE_ITEM.match(item.strip())
        if not m:
            raise SlurmAnswerError(source, record, "licenses", f"{item[:40]!r} is not name:count")
        if m.group("name") == name:
            return int(m.group("count") or 1)
    return None


def queued_jobs(doc: dict[str, Any], source: str, license_name: str) -> tuple[QueuedJob, ...]:
    """Pending, running and suspended jobs of a ``squeue --json`` (or ``GET /slurm/v0.0.38/jobs``) answer. 22.05 ignores
    ``squeue -t``, so the state filter is applied here; other states are dropped."""
    out: list[QueuedJob] = []
    for i, raw in enumerate(_jobs(doc, source)):
        j = _Job(raw, source, i)
        state = j.text("job_state")
        if state not in (PENDING, RUNNING, SUSPENDED):
            continue
        nodes = j.number("node_count")
        if nodes is None or nodes != int(nodes) or nodes < 1:
            raise j.fail("node_count", f"{j.job.get('node_count')!r} is not a positive node count")
        priority = j.number("priority")
        limit = limit_or_none(j.number("time_limit", required=False))
        node_text = j.text("nodes", required=False) if state != PENDING else ""
        try:
            names = expand_hostlist(node_text) if node_text else ()
        except ValueError as exc:
            raise j.fail("nodes", str(exc)) from None
        out.append(
            QueuedJob(
                job_id=j.job_id,
                state=state,
                user=j.text("user_name", required=False) or str(j.job.get("user_id", "")),
                account=j.text("account", required=False),
                name=j.text("name", required=False),
                partition=j.text("partition", required=False),
                nodes=int(nodes),
                submit_time=j.epoch("submit_time") or 0.0,
                start_time=j.epoch("start_time") if state != PENDING else None,
                time_limit=None if limit is None else limit * 60.0,
                license_watts=license_watts(
                    j.text("licenses", required=False), license_name, source, f"job {j.job_id}"
                ),
                held=priority == 0,
                reason=j.text("state_reason", required=False),
                node_names=names,
                admin_comment=j.text("admin_comment", required=False),  # the job_submit.lua markers
                excluded_nodes=_node_list(j, "excluded_nodes"),
                required_nodes=_node_list(j, "required_nodes"),
            )
        )
    return tuple(out)


def _node_list(j: _Job, key: str) -> tuple[str, ...]:
    """A hostlist field of a job (``excluded_nodes``, ``required_nodes``) expanded; () when empty."""
    text = j.text(key, required=False)
    try:
        return expand_hostlist(text) if text else ()
    except ValueError as exc:
        raise j.fail(key, str(exc)) from None


def _tres(j: _Job, value: Any, field_name: str) -> dict[str, str]:
    try:
        return _json_tres(value, field_name)
    except Reject as exc:
        raise j.fail(field_name, exc.reason) from None


def _count(j: _Job, tres: dict[str, str], key: str, field_name: str) -> int | None:
    text = tres.get(key)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise j.fail(field_name, f"{key}={text[:40]!r} is not a count") from None
    if value != value or value < 0:
        raise j.fail(field_name, f"{key}={text[:40]!r} is not a non-negative count")
    return int(value)


def _step_energy(j: _Job, nodes: int) -> float | None:
    """Energy from the steps when the job level has none. Sum of the ``srun`` steps' energy (each
    covers all of its nodes); when there is no ``srun`` step, the ``batch`` step only for a one-node job (it
    measures the first node only, so for more nodes it would under-count: None, not accounted)."""
    steps = j.job.get("steps")
    if not isinstance(steps, list):
        return None
    srun_total, srun_seen, batch = 0.0, False, None
    for k, step in enumerate(steps):
        if not isinstance(step, dict):
            raise j.fail(f"steps[{k}]", f"is a {type(step).__name__}, expected an object")
        ident = step.get("step")
        sid = ident.get("name", ident.get("id")) if isinstance(ident, dict) else ident
        # 22.05 quirk (recorded): a step's energy is under tres.requested.total; tres.consumed holds other counts
        tres = step.get("tres")
        requested = tres.get("requested") if isinstance(tres, dict) else None
        where = f"steps[{k}].tres.requested.total"
        total = _tres(j, requested.get("total") if isinstance(requested, dict) else None, where)
        energy = _count(j, total, "energy", where)
        if not energy:
            continue
        if str(sid) in _NON_SRUN_STEPS:
            batch = float(energy) if str(sid) == "batch" else batch
        else:
            srun_total, srun_seen = srun_total + energy, True
    if srun_seen:
        return srun_total
    return batch if nodes == 1 else None


def finished_jobs(doc: dict[str, Any], source: str, since: float | None, license_name: str) -> tuple[FinishedJob, ...]:
    """Jobs of a ``sacct --json`` (or ``GET /slurmdb/v0.0.38/jobs``) answer that ended at or after ``since``
    (22.05 ``sacct -s CD --json`` returns nothing, so the state filter is applied here). Energy: the job's
    allocated TRES ``energy`` (Slurm's ConsumedEnergy); without it, :func:`_step_energy`."""
    out: list[FinishedJob] = []
    for i, raw in enumerate(_jobs(doc, source)):
        j = _Job(raw, source, i)
        state_obj = j.get("state")
        if not isinstance(state_obj, dict):
            raise j.fail("state", f"is a {type(state_obj).__name__}, expected an object")
        state = state_obj.get("current")
        if isinstance(state, list):
            state = state[0] if state else None
        if not isinstance(state, str):
            raise j.fail("state.current", f"{state!r} is not a state name")
        state = state.split()[0]  # "CANCELLED by 0" → CANCELLED
        if state not in ENDED_STATES:
            continue
        t = j.get("time")
        if not isinstance(t, dict):
            raise j.fail("time", f"is a {type(t).__name__}, expected an object")
        end = j.epoch("end", node=t)
        if end is None:
            raise j.fail("time.end", "an ended job without an end time")
        if since is not None and end < since:
            continue
        tres_obj = j.get("tres", required=False)
        if tres_obj is not None and not isinstance(tres_obj, dict):
            raise j.fail("tres", f"is a {type(tres_obj).__name__}, expected an object")
        alloc = _tres(j, (tres_obj or {}).get("allocated"), "tres.allocated")
        req = _tres(j, (tres_obj or {}).get("requested"), "tres.requested")
        nodes = j.number("allocation_nodes", required=False)
        if not nodes:
            nodes = _count(j, alloc, "node", "tres.allocated") or _count(j, req, "node", "tres.requested") or 0
        energy: float | None = _count(j, alloc, "energy", "tres.allocated")
        if not energy:
            energy = _step_energy(j, int(nodes))
        lic = _count(j, alloc, f"license/{license_name}", "tres.allocated")
        if lic is None:
            lic = _count(j, req, f"license/{license_name}", "tres.requested")
        out.append(
            FinishedJob(
                job_id=j.job_id,
                state=state,
                user=j.text("user", required=False),
                account=j.text("account", required=False),
                name=j.text("name", required=False),
                nodes=int(nodes),
                submit_time=j.epoch("submission", node=t) or 0.0,
                start_time=j.epoch("start", required=False, node=t),
                end_time=end,
                energy_joules=float(energy) if energy else None,
                license_watts=lic,
            )
        )
    return tuple(out)


def key_values(line: str) -> dict[str, str]:
    """``Key=Value Key2=Value with spaces`` of a one-line ``scontrol show -o`` record: a value runs to the next
    `` Key=`` (OS= and Reason= hold spaces)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"(?:^|\s)([A-Za-z_]+)=(.*?)(?=\s+[A-Za-z_]+=|\s*$)", line):
        out[m.group(1)] = m.group(2).strip()
    return out


def nodes_from_scontrol(text: str, source: str) -> tuple[NodePower, ...]:
    """``scontrol show node -o``: one node a line; ``CurrentWatts`` (``n/a`` or absent = no energy plugin)."""
    out: list[NodePower] = []
    for k, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("No nodes"):
            continue
        kv = key_values(line)
        name = kv.get("NodeName")
        if not name:
            raise SlurmAnswerError(source, f"line {k}", "NodeName", f"missing in {line[:40]!r}")
        state = kv.get("State")
        if state is None:
            raise SlurmAnswerError(source, f"node {name}", "State", "missing")
        out.append(NodePower(name, state, _watts(kv.get("CurrentWatts"), source, f"node {name}")))
    return tuple(out)


def _watts(value: Any, source: str, record: str) -> float | None:
    if value is None or value in ("n/a", "n/s", "N/A"):
        return None
    try:
        watts = float(value)
    except (TypeError, ValueError):
        raise SlurmAnswerError(source, record, "CurrentWatts", f"{str(value)[:40]!r} is not a number") from None
    if watts != watts or watts < 0:
        raise SlurmAnswerError(source, record, "CurrentWatts", f"{watts} is not a non-negative power")
    return watts


def nodes_from_rest(doc: dict[str, Any], source: str) -> tuple[NodePower, ...]:
    """``GET /slurm/v0.0.38/nodes``: ``nodes[].name``, ``state`` and the energy ``current_watts`` when the
    plugin reports it (22.05 sinfo/REST node JSON carries no energy block: then CurrentWatts is None)."""
    nodes = doc.get("nodes")
    if not isinstance(nodes, list):
        raise SlurmAnswerError(source, None, "nodes", f"is {type(nodes).__name__}, expected a list of nodes")
    out: list[NodePower] = []
    for k, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            raise SlurmAnswerError(source, f"nodes[{k}]", "name", "missing or not text")
        name = node["name"]
        state = node.get("state")
        state = state[0] if isinstance(state, list) and state else state
        if not isinstance(state, str):
            raise SlurmAnswerError(source, f"node {name}", "state", f"{state!r} is not a state name")
        energy = node.get("energy")
        watts = energy.get("current_watts") if isinstance(energy, dict) else node.get("current_watts")
        if isinstance(watts, dict):
            try:
                watts = _number(watts)
            except Reject as exc:
                raise SlurmAnswerError(source, f"node {name}", "current_watts", exc.reason) from None
        out.append(NodePower(name, state.upper(), _watts(watts, source, f"node {name}")))
    return tuple(out)


def licenses_from_scontrol(text: str, source: str) -> dict[str, LicenseState]:
    """``scontrol show licenses -o``: every license by name (Total, Used, Remote)."""
    out: dict[str, LicenseState] = {}
    for k, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        kv = key_values(line)
        name = kv.get("LicenseName")
        if not name:
            raise SlurmAnswerError(source, f"line {k}", "LicenseName", f"missing in {line[:40]!r}")
        values = {}
        for key in ("Total", "Used"):
            try:
                values[key] = int(kv[key])
            except KeyError:
                raise SlurmAnswerError(source, f"license {name}", key, "missing") from None
            except ValueError:
                raise SlurmAnswerError(source, f"license {name}", key, f"{kv[key][:40]!r} is not an integer") from None
        out[name] = LicenseState(name, values["Total"], values["Used"], kv.get("Remote", "no").lower() == "yes")
    return out


def licenses_from_rest(doc: dict[str, Any], source: str) -> dict[str, LicenseState]:
    """``GET /slurm/v0.0.38/licenses``: ``licenses[]`` with ``LicenseName``, ``Total``, ``Used``, ``Remote``."""
    items = doc.get("licenses")
    if not isinstance(items, list):
        raise SlurmAnswerError(source, None, "licenses", f"is {type(items).__name__}, expected a list")
    out: dict[str, LicenseState] = {}
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise SlurmAnswerError(source, f"licenses[{k}]", None, "is not an object")
        name = item.get("LicenseName", item.get("name"))
        if not isinstance(name, str):
            raise SlurmAnswerError(source, f"licenses[{k}]", "LicenseName", "missing or not text")
        counts = {}
        for key in ("Total", "Used"):
            value = item.get(key, item.get(key.lower()))
            if isinstance(value, bool) or not isinstance(value, int):
                raise SlurmAnswerError(source, f"license {name}", key, f"{value!r} is not an integer")
            counts[key] = value
        out[name] = LicenseState(name, counts["Total"], counts["Used"], bool(item.get("Remote", item.get("remote"))))
    return out


def power_license(licenses: dict[str, LicenseState], source: str, wanted: str | None = None) -> LicenseState:
    """The power license: ``wanted`` if named, else the one named ``power`` or ``power@<server>``. None found is a
    :class:`LookupError` whose one line says the slurm.conf line (or sacctmgr command) to add."""
    if wanted:
        if wanted in licenses:
            return licenses[wanted]
        raise LookupError(f"{source}: the cluster has no license {wanted!r} (it has: {', '.join(licenses) or 'none'})")
    found = [lic for name, lic in licenses.items() if name == "power" or name.startswith("power@")]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        names = ", ".join(lic.name for lic in found)
        raise LookupError(f"{source}: several power licenses ({names}): name one in the backend's license setting")
    raise LookupError(
        f"{source}: the cluster has no power license: add `Licenses=power:<total watts>` to slurm.conf (and "
        "`license/power` to AccountingStorageTRES), or a remote one with `sacctmgr add resource name=power "
        "server=<site> count=<watts> type=license cluster=<cluster> percentallowed=100`"
    )
