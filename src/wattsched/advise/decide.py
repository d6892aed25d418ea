"""The advisor's decisions: from one observation and the jobs' power estimates, the license each pending job needs
under the cap and the actions that bring Slurm there. Pure: no I/O, so it is tested on records alone.

Rules (each one tested in tests/test_advise_decide.py):

1. **Sizing** (:func:`license_for`): ``license = ceil(nodes × estimate × (1 + margin))`` in the configured power
   definition, at least 1 W; never above the job's worst case ``nodes × max_watts_per_node`` (net of idle under
   ``net``); never above the budget — a job predicted above the whole budget gets the budget, so it runs alone
   (logged, and noted in its row).
2. **Budget**: the license total the cap implies now — ``net``: ``cap − Σ idle of every node`` (the idle power per
   node: the configured one, else the measured one, else the lowest CurrentWatts of the idle nodes of this
   observation; unknown → no budget, nothing is sized against it, no release in gate mode); ``gross``: the cap.
   A ``set_budget`` action when it differs from the license's total; never raised on stale data.
3. **Only pending, not-yet-started jobs** are changed; running jobs are never touched.
4. **Only differences**: a job whose license already equals its target gets no action.
5. **Stale data** (``fresh=False``: sacct or the node query failed this cycle): a license is never lowered, only
   raised or kept; no release in gate mode; the budget is not raised.
6. **Gate mode** (no license in slurm.conf): jobs held by the advisor's ``job_submit.lua`` gate (held, reason
   ``JobHeldUser`` (how 22.05 shows a priority-0 hold set at submit) or ``JobHeldAdmin``, AdminComment marker
   ``wattsched:gate``; an admin's own hold is never released) are released in submit order while predicted
   running power + the pending jobs already released + this job ≤ budget; the
   first that does not fit stops the releases, so no job overtakes a held one.
   It fails closed: without a budget (cap known, idle unknown) or on stale data, nothing is released.
7. **Shadow mode**: the licenses-mode actions, flagged not to be applied, plus per job "would delay" (a running job
   Slurm started since the previous cycle although its prediction, with the running jobs that started before it,
   exceeded the budget) and "would advance" (a pending job blocked by licenses whose license is larger than its
   prediction needs and whose target fits now).

A job's predicted power is ``nodes × estimate`` (no margin), bounded by the budget; the running total sums the
running jobs' predictions (their license when no estimate is given: pass running jobs to the learner too).
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

from wattsched.advise.config import AdvisorConfig
from wattsched.advise.domains import Domain, allowed, committed, domain_budgets, domains_of, exclusion, place
from wattsched.advise.learn import Estimate
from wattsched.advise.records import PENDING, RUNNING, Action, Observation, QueuedJob
from wattsched.advise.slurm import GATE_MARKER, OVERSIZE_MARKER  # the AdminComment markers (and the Lua's)
from wattsched.dataset.hostlist import expand_hostlist

__all__ = [
    "GATE_MARKER",
    "GATE_REASONS",
    "OVERSIZE_MARKER",
    "Plan",
    "budget_for",
    "comment_with",
    "decide",
    "idle_of",
    "license_for",
    "measured_power",
]

log = logging.getLogger(__name__)

#: The state reasons of jobs held by the advisor's gate: job_submit.lua sets priority 0 at submit, which 22.05
#: shows as JobHeldUser (JobHeldAdmin when an operator holds with the marker kept).
GATE_REASONS = frozenset({"JobHeldAdmin", "JobHeldUser"})
#: Where the advisor's reason starts in a job's AdminComment (the markers stay before it).
REASON_PREFIX = "power:"


@dataclass
class Plan:
    """What one cycle decided: the actions, the budget, the predicted power and one row per job."""

    actions: list[Action]
    budget: int | None  # the license total the cap implies now (None: no cap, or idle power unknown under net)
    predicted_running: float  # Σ running jobs' predicted power, budget basis (comparable with ``budget``)
    rows: list[dict[str, Any]]
    cap: float | None = None
    predicted_power: float | None = None  # the same on the cap's basis (net: + idle of every node)
    measured_power: float | None = None  # on the cap's basis (net: every node; gross: the running jobs' nodes)
    apply: bool = True  # False in shadow mode: the actions are logged, never applied
    delayed: list[int] = field(default_factory=list)
    advanced: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    domain_room: dict[str, float] = field(default_factory=dict)  # power domains: budget less committed, W


def idle_of(obs: Observation, config: AdvisorConfig, idle_watts: float | None) -> float | None:
    """The idle power of one node: configured, else measured (the store's), else the lowest CurrentWatts of the
    idle nodes of ``obs``; None when none is known.

    The lowest, not the median: a node its job has just left still reports the job's power for a second or two
    (Slurm samples the meter every ``AcctGatherNodeFreq``), and on the testbed the median of four nodes read 350 W
    of a true 100 W right after jobs ended, which would have cut the budget to nothing. Nodes powered down,
    drained or down, and zero readings, are left out."""
    if config.power.idle_watts_per_node is not None:
        return float(config.power.idle_watts_per_node)
    if idle_watts is not None:
        return idle_watts
    seen = [
        n.current_watts
        for n in obs.nodes
        if n.current_watts is not None and n.current_watts > 0 and plain_idle(n.state)
    ]
    return min(seen) if seen else None


def plain_idle(state: str) -> bool:
    """IDLE and nothing that changes its power (``IDLE+POWERED_DOWN``, ``IDLE+DRAIN``, ...)."""
    flags = state.upper().split("+")
    return flags[0] == "IDLE" and not any(f.startswith(("POWER", "DRAIN", "DOWN", "FAIL")) for f in flags[1:])


def plain_up(state: str) -> bool:
    """A node that should report power: not down, drained, failed or powered down."""
    flags = state.upper().split("+")
    return bool(flags[0]) and not any(f.startswith(("POWER", "DRAIN", "DOWN", "FAIL")) for f in flags)


def budget_for(cap: float | None, obs: Observation, config: AdvisorConfig, idle: float | None) -> int | None:
    """The license total ``cap`` implies (rule 2); None without a cap or, under ``net``, without the idle power."""
    if cap is None:
        return None
    if config.power.definition == "gross":
        return max(math.floor(cap), 0)
    if idle is None:
        return None
    return max(math.floor(cap - idle * len(obs.nodes)), 0)


def measured_power(obs: Observation, config: AdvisorConfig) -> float | None:
    """Measured power on the cap's basis: ``net`` every node's CurrentWatts; ``gross`` the running jobs' nodes."""
    if config.power.definition == "net":
        nodes = obs.nodes
    else:
        busy = {name for j in obs.queue if j.state == RUNNING for name in j.node_names}
        nodes = tuple(n for n in obs.nodes if n.name in busy)
    known = [n.current_watts for n in nodes if n.current_watts is not None]
    return float(sum(known)) if known else None


def license_for(
    nodes: int, watts_per_node: float, config: AdvisorConfig, *, budget: int | None, idle_watts: float | None
) -> tuple[int | None, str | None]:
    """Rule 1: the license a job of ``nodes`` nodes estimated at ``watts_per_node`` needs, and a note when it was
    bounded (worst case, budget). None when nothing bounds an unknown estimate (no cap, no worst case)."""
    note = None
    raw = nodes * watts_per_node * (1.0 + config.learning.margin)
    peak = config.power.max_watts_per_node
    if peak is not None:
        per_node = float(peak) - idle_watts if config.power.definition == "net" and idle_watts is not None else peak
        worst = nodes * max(per_node, 0.0)
        if raw > worst:
            raw, note = worst, "bounded by the worst case (nodes × max_watts_per_node)"
    if not math.isfinite(raw):
        if budget is None:
            return None, "no estimate, no worst case and no budget: left as it is"
        return budget, "no history and no worst case: sized at the whole budget (runs alone)"
    value = max(math.ceil(raw - 1e-9), 1)
    if budget is not None and value > budget:
        note = f"needs {value:,} W, more than the whole {budget:,} W budget: held until it fits"
    return value, note


def _predicted(job: QueuedJob, est: Estimate | None, budget: int | None) -> float:
    """A job's predicted power (budget basis): nodes × estimate, else its license; bounded by the budget."""
    if est is not None:
        value = job.nodes * est.watts_per_node
    elif job.license_watts is not None:
        value = float(job.license_watts)
    else:
        value = math.inf
    if budget is not None:
        value = min(value, float(budget))
    return value if math.isfinite(value) else 0.0


def decide(
    obs: Observation,
    estimates: dict[int, Estimate],
    config: AdvisorConfig,
    *,
    applied: dict[int, int],
    idle_watts: float | None,
    fresh: bool,
    now: float,
    since: float | None = None,
) -> Plan:
    """One cycle's plan (module docstring). ``applied``: the licenses the advisor last set (from the store), to
    flag licenses changed outside it; ``since``: the previous cycle's time (shadow's "would delay"; default
    ``now − interval``)."""
    mode = config.mode
    idle = idle_of(obs, config, idle_watts)
    cap = config.cap.at(now)
    budget = budget_for(cap, obs, config, idle)
    plan = Plan([], budget, 0.0, [], cap=cap, apply=mode != "shadow", measured_power=measured_power(obs, config))
    if cap is not None and budget is None:
        plan.notes.append("the idle power of a node is unknown (net definition): no budget this cycle")
    running = sorted((j for j in obs.queue if j.state == RUNNING), key=lambda j: (j.start_time or 0.0, j.job_id))
    pending = sorted(
        (j for j in obs.queue if j.state == PENDING and j.start_time is None), key=lambda j: (j.submit_time, j.job_id)
    )
    plan.predicted_running = sum(_predicted(j, estimates.get(j.job_id), budget) for j in running)
    offset = (idle or 0.0) * len(obs.nodes) if config.power.definition == "net" else 0.0
    plan.predicted_power = plan.predicted_running + offset if idle is not None or offset == 0.0 else None

    # the budget (licenses and shadow modes: gate sites have no license)
    lic = obs.license
    if mode != "gate" and lic is not None and budget is not None and budget != lic.budget:
        if not fresh and budget > lic.budget:
            plan.notes.append(f"stale data: budget not raised from {lic.budget} W to {budget} W")
        else:
            plan.actions.append(
                Action(
                    "set_budget",
                    None,
                    budget,
                    f"cap {cap:.0f} W implies a license total of {budget} W",
                    previous=lic.budget,
                    details={"license": lic.name, "remote": lic.remote},
                )
            )

    # sizing every pending job
    targets: dict[int, int | None] = {}
    for job in pending:
        est = estimates.get(job.job_id)
        row: dict[str, Any] = {
            "job_id": job.job_id,
            "state": job.state,
            "user": job.user,
            "nodes": job.nodes,
            "current": job.license_watts,
            "watts_per_node": None if est is None else est.watts_per_node,
            "source": None if est is None else est.source,
            "has_history": None if est is None else est.has_history,
        }
        plan.rows.append(row)
        if est is None:
            row["note"] = "no estimate: left as it is"
            targets[job.job_id] = None
            continue
        target, note = license_for(job.nodes, est.watts_per_node, config, budget=budget, idle_watts=idle)
        targets[job.job_id] = target
        row["license"] = target
        if note:
            row["note"] = note
            if "whole budget" in note:
                log.warning("job %s: %s", job.job_id, note)
        if job.job_id in applied and job.license_watts is not None and applied[job.job_id] != job.license_watts:
            row["note"] = (row.get("note", "") + "; " if row.get("note") else "") + (
                f"license changed outside the advisor ({applied[job.job_id]} W set, {job.license_watts} W now)"
            )
        if target is not None and budget is not None and target > budget:
            _hold_oversize(plan, job, target, budget, cap, row)
            continue
        if _oversize_held(job) and target is not None:
            row["release"] = True  # fits now: sized below, then released (after the license is right)
        if mode == "gate" or target is None or target == job.license_watts:
            if row.pop("release", False) and mode != "gate":
                _release_oversize(plan, job, target)
            continue
        if not fresh and job.license_watts is not None and target < job.license_watts:
            row["note"] = f"stale data: not lowered from {job.license_watts} W to {target} W"
            continue
        why = "raise" if job.license_watts is not None and target > job.license_watts else "size"
        if job.license_watts is not None and target < job.license_watts:
            why = "lower"
        plan.actions.append(
            Action(
                "set_license",
                job.job_id,
                target,
                f"{why}: {job.nodes} node(s) × {est.watts_per_node:.1f} W × (1 + {config.learning.margin}) "
                f"[{est.source}]" + (f"; {note}" if note else ""),
                prediction_watts=job.nodes * est.watts_per_node,
                previous=job.license_watts,
            )
        )
        if row.pop("release", False):
            _release_oversize(plan, job, target)

    if mode != "gate":
        _license_reasons(plan, pending, targets, budget, cap, obs)
    if mode == "gate":
        rooms = _domain_rooms(plan, obs, config, idle, pending, targets, estimates, budget)
        _gate(plan, pending, targets, estimates, budget, cap, fresh, rooms)
    if mode == "shadow":
        _shadow(plan, running, pending, targets, estimates, budget, now - config.interval if since is None else since)
    return plan


def _gate(
    plan: Plan,
    pending: list[QueuedJob],
    targets: dict[int, int | None],
    estimates: dict[int, Estimate],
    budget: int | None,
    cap: float | None,
    fresh: bool,
    rooms: _Rooms | None = None,
) -> None:
    """Rule 6: release held jobs in submit order while they fit (the cluster budget, and with power domains, a
    domain with room: the job is released with an ExcNodeList that keeps it there)."""
    held = [j for j in pending if j.held and j.reason in GATE_REASONS and GATE_MARKER in j.admin_comment]
    if not held:
        return
    if rooms is not None and rooms.room is None:
        plan.notes.append(f"a domain's budget is unknown (idle power): none of {len(held)} held job(s) released")
        return
    if not fresh:
        plan.notes.append(f"stale data: none of {len(held)} held job(s) released")
        return
    if cap is not None and budget is None:
        plan.notes.append(f"no budget (idle power unknown): none of {len(held)} held job(s) released (fails closed)")
        return
    committed = plan.predicted_running + sum(
        _predicted(j, estimates.get(j.job_id), budget)
        if targets.get(j.job_id) is None
        else float(targets[j.job_id] or 0)
        for j in pending
        if not j.held
    )
    stopped = False
    for job in held:
        need = targets.get(job.job_id)
        if stopped:
            if need is not None and budget is not None and need <= budget:
                _reason(plan, job, f"needs {need:,} W; waits behind an earlier job (jobs start in submit order)")
            continue
        if need is None and budget is not None:
            plan.notes.append(f"job {job.job_id}: no estimate; releases stop")
            stopped = True
            continue
        if need is not None and budget is not None and need > budget:
            continue  # can never fit: held with its reason (sizing above), and it does not block the others
        if budget is not None and committed + (need or 0) > budget:
            plan.notes.append(f"job {job.job_id}: {need} W does not fit ({committed:.0f} W of {budget} W committed)")
            _reason(plan, job, _free_text(need or 0, budget - committed, cap))
            stopped = True
            continue
        if rooms is not None and rooms.room is not None:
            chosen, why = place(job, float(need or 0), rooms.domains, rooms.room)
            if chosen is None:
                plan.notes.append(f"job {job.job_id}: {why}")
                _reason(plan, job, why)
                stopped = True
                continue
            per_node = float(need or 0) / max(job.nodes, 1)
            for d in rooms.domains:
                if d.name in chosen:
                    rooms.room[d.name] -= per_node * allowed(job, d)
            fence = exclusion(job, rooms.domains, chosen, rooms.nodes)
            if set(expand_hostlist(fence) if fence else ()) != set(job.excluded_nodes):
                plan.actions.append(Action("set_nodes", job.job_id, None, f"kept in {why}", text=fence))
        committed += need or 0
        _set_comment(plan, job, comment_with(job.admin_comment, drop=(OVERSIZE_MARKER,), reason=None), "released")
        est = estimates.get(job.job_id)
        plan.actions.append(
            Action(
                "release",
                job.job_id,
                need,
                "no cap" if budget is None else f"fits: {committed:.0f} W of {budget} W committed with it",
                prediction_watts=None if est is None else job.nodes * est.watts_per_node,
            )
        )


@dataclass
class _Rooms:
    """The power domains' room for jobs this cycle: budget less what is committed (None: a budget unknown)."""

    domains: tuple[Domain, ...]
    room: dict[str, float] | None
    nodes: tuple[str, ...]


def _domain_rooms(
    plan: Plan,
    obs: Observation,
    config: AdvisorConfig,
    idle: float | None,
    pending: list[QueuedJob],
    targets: dict[int, int | None],
    estimates: dict[int, Estimate],
    budget: int | None,
) -> _Rooms | None:
    """Each domain's budget less what its running and released jobs are predicted to draw in it."""
    if not config.domains:
        return None
    domains = domains_of(config.domains)
    budgets = domain_budgets(domains, config.power.definition, idle)
    nodes = tuple(n.name for n in obs.nodes)
    if any(b is None for b in budgets.values()):
        return _Rooms(domains, None, nodes)
    predicted = {
        j.job_id: (
            float(targets[j.job_id] or 0)
            if j.state == PENDING and targets.get(j.job_id) is not None
            else _predicted(j, estimates.get(j.job_id), budget)
        )
        for j in obs.queue
    }
    used = committed(obs, domains, predicted)
    room = {d.name: float(budgets[d.name] or 0) - used[d.name] for d in domains}
    plan.domain_room = dict(room)
    return _Rooms(domains, room, nodes)


def _shadow(
    plan: Plan,
    running: list[QueuedJob],
    pending: list[QueuedJob],
    targets: dict[int, int | None],
    estimates: dict[int, Estimate],
    budget: int | None,
    since: float,
) -> None:
    """Rule 7: which jobs the advisor would have delayed or advanced."""
    if budget is None:
        return
    total = 0.0
    for job in running:  # in start order: the jobs running when it started are the ones before it
        total += _predicted(job, estimates.get(job.job_id), budget)
        if job.start_time is not None and job.start_time >= since and total > budget + 1e-9:
            plan.delayed.append(job.job_id)
    committed = plan.predicted_running
    for job in pending:
        target = targets.get(job.job_id)
        if target is None or job.reason != "Licenses" or job.license_watts is None or job.license_watts <= target:
            continue
        if committed + target <= budget:
            committed += target
            plan.advanced.append(job.job_id)
    for row in plan.rows:
        if row["job_id"] in plan.advanced:
            row["would"] = "advance"


# -- oversize jobs and the reasons a job waits (docs/advisor.md, "Why a job waits") --------------------------------
def comment_with(existing: str, *, add: tuple[str, ...] = (), drop: tuple[str, ...] = (), reason: str | None) -> str:
    """A job's AdminComment with the advisor's markers added or dropped and its reason replaced: the words
    before the reason (job_submit.lua's markers, an operator's text) are kept, the reason comes last as
    ``power: …`` (None: no reason)."""
    head = existing.split(REASON_PREFIX, 1)[0].split()
    words = [w for w in head if w not in drop]
    words += [m for m in add if m not in words]
    text = " ".join(words)
    if reason:
        text = f"{text} {REASON_PREFIX} {reason}".strip()
    return text


def _oversize_held(job: QueuedJob) -> bool:
    return job.held and job.reason in GATE_REASONS and OVERSIZE_MARKER in job.admin_comment.split()


def _set_comment(plan: Plan, job: QueuedJob, text: str, why: str) -> None:
    if text != job.admin_comment:
        plan.actions.append(
            Action("set_comment", job.job_id, None, why, text=text, details={"previous": job.admin_comment})
        )


def _hold_oversize(
    plan: Plan, job: QueuedJob, target: int, budget: int, cap: float | None, row: dict[str, Any]
) -> None:
    """Rule 8: a job whose license would exceed the whole budget is held, with the marker and its reason, never
    sized at the budget (it would run alone above the cap)."""
    under = f" under the {cap:,.0f} W cap" if cap is not None else ""
    reason = f"needs {target:,} W, more than the whole {budget:,} W budget{under}: held until it fits"
    row["reason"] = reason
    # held already by an admin, the gate or the Lua's oversize hold (a user can release none of them): the marker
    # and the reason suffice
    words = job.admin_comment.split()
    if not (job.held and (job.reason == "JobHeldAdmin" or GATE_MARKER in words or OVERSIZE_MARKER in words)):
        plan.actions.append(Action("hold", job.job_id, target, reason, previous=job.license_watts))
        log.warning("job %s: %s", job.job_id, reason)
    _set_comment(plan, job, comment_with(job.admin_comment, add=(OVERSIZE_MARKER,), reason=reason), reason)


def _release_oversize(plan: Plan, job: QueuedJob, target: int | None) -> None:
    """A job the advisor held for its size whose license now fits the budget: marker off, released."""
    text = comment_with(job.admin_comment, drop=(OVERSIZE_MARKER,), reason=None)
    _set_comment(plan, job, text, "fits the budget now")
    plan.actions.append(Action("release", job.job_id, target, f"its {target} W license fits the budget now"))


def _free_text(need: int, free: float, cap: float | None) -> str:
    under = f" under the {cap:,.0f} W cap" if cap is not None else ""
    return f"needs {need:,} W, {max(free, 0):,.0f} W free{under}"


def _reason(plan: Plan, job: QueuedJob, reason: str | None) -> None:
    """Record why ``job`` waits (None: it does not wait for power) in its row and, when the text changes
    enough, in its AdminComment (``squeue -O AdminComment``)."""
    for row in plan.rows:
        if row["job_id"] == job.job_id:
            row["reason"] = reason
    current = job.admin_comment.split(REASON_PREFIX, 1)[1].strip() if REASON_PREFIX in job.admin_comment else None
    if reason == current or (reason is not None and current is not None and _same_but_free(reason, current)):
        return
    _set_comment(plan, job, comment_with(job.admin_comment, reason=reason), reason or "no longer waits for power")


def _same_but_free(a: str, b: str) -> bool:
    """Two reasons that differ only in the free watts by under 10 %: not worth an update every cycle."""
    number = re.compile(r"([\d,]+) W free")
    ma, mb = number.search(a), number.search(b)
    if ma is None or mb is None or number.sub("", a) != number.sub("", b):
        return False
    fa, fb = (float(m.group(1).replace(",", "")) for m in (ma, mb))
    return abs(fa - fb) <= 0.1 * max(fa, fb, 1.0)


def _license_reasons(
    plan: Plan,
    pending: list[QueuedJob],
    targets: dict[int, int | None],
    budget: int | None,
    cap: float | None,
    obs: Observation,
) -> None:
    """Licenses mode: a pending job Slurm holds back for the power license gets ``needs X W, Y W free under
    the cap`` (Y: the budget less the licenses in use); a job no longer waiting for it loses the reason."""
    if budget is None or obs.license is None:
        return
    free = budget - obs.license.used
    for job in pending:
        target = targets.get(job.job_id)
        if target is None or _oversize_held(job) or (target > budget):
            continue
        waits = job.reason == "Licenses"
        _reason(plan, job, _free_text(target, free, cap) if waits else None)
