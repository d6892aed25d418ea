"""Power domains: named node sets (a rack, a row, a PDU), each with its own cap, under the cluster cap
(docs/advisor.md, "Power domains"; as NVIDIA's Power Reservation Steering and EAR's global manager offer).

Configured as ``[[domains]] name = "rack1", nodes = "n[1-4]", watts = "1.2kW"``. A domain's cap is on its nodes'
metered power, on the cluster cap's basis: under ``net`` its budget for jobs is ``watts − idle × its nodes``;
under ``gross`` it is ``watts`` (the running jobs' nodes in it).

Enforced in gate mode (the configuration refuses domains in licenses mode): a held job is released only with an
``ExcNodeList`` that keeps it inside domains with room for it, chosen here (:func:`place`). Why not one license
per domain: Slurm ties a license to a job, not to where the job lands, so a job holding ``power_rack1`` could
start on rack 2; restricting the nodes at release is what makes the domain's accounting true. A job whose user
asked for nodes (``--nodelist``) or excluded some keeps them: the advisor only adds exclusions.

Pure functions over records; the loop and ``decide`` apply them. Measured power above a domain's cap is an
overshoot of that domain, caught and answered like the cluster's (``advise/overshoot.py``), on its nodes' jobs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import hostlist as _hostlist

from wattsched.advise.records import PENDING, RUNNING, SUSPENDED, NodePower, Observation, QueuedJob
from wattsched.dataset.hostlist import expand_hostlist

__all__ = [
    "Domain",
    "allowed",
    "choose",
    "committed",
    "domain_budgets",
    "domain_power",
    "domains_of",
    "exclusion",
    "place",
]


@dataclass(frozen=True)
class Domain:
    """One power domain: its name, its nodes and its cap (W, the cluster cap's basis)."""

    name: str
    nodes: frozenset[str]
    watts: float


@lru_cache(maxsize=64)
def _expand(text: str) -> frozenset[str]:
    return frozenset(expand_hostlist(text))


def domains_of(specs: Iterable[object]) -> tuple[Domain, ...]:
    """The configured domains (``AdvisorConfig.domains``) with their node lists expanded."""
    out = []
    for spec in specs:
        name, nodes, watts = spec.name, spec.nodes, spec.watts  # type: ignore[attr-defined]
        out.append(Domain(str(name), _expand(str(nodes)), float(watts)))
    return tuple(out)


def domain_budgets(domains: Sequence[Domain], definition: str, idle: float | None) -> dict[str, int | None]:
    """Each domain's license budget: ``watts − idle × nodes`` under ``net`` (None while idle is unknown),
    ``watts`` under ``gross``."""
    out: dict[str, int | None] = {}
    for d in domains:
        if definition == "gross":
            out[d.name] = max(math.floor(d.watts), 0)
        else:
            out[d.name] = None if idle is None else max(math.floor(d.watts - idle * len(d.nodes)), 0)
    return out


def domain_power(obs: Observation, domains: Sequence[Domain], definition: str) -> dict[str, float | None]:
    """Each domain's measured power on the cap's basis: ``net`` all its nodes' CurrentWatts, ``gross`` those of
    its nodes that run a job. None when none of them reports power."""
    busy = {n for j in obs.queue if j.state in (RUNNING, SUSPENDED) for n in j.node_names}
    watts: dict[str, NodePower] = {n.name: n for n in obs.nodes}
    out: dict[str, float | None] = {}
    for d in domains:
        names = d.nodes if definition == "net" else d.nodes & busy
        known = [watts[n].current_watts for n in names if n in watts and watts[n].current_watts is not None]
        out[d.name] = float(sum(w for w in known if w is not None)) if known else (0.0 if not names else None)
    return out


def allowed(job: QueuedJob, domain: Domain) -> int:
    """How many of the job's nodes may land in ``domain``: its node count, bounded by the domain's nodes the job
    has not excluded (and, when it asked for nodes, by those of them in the domain)."""
    room = domain.nodes - set(job.excluded_nodes)
    if job.required_nodes:
        room &= set(job.required_nodes)
    return min(job.nodes, len(room))


def committed(obs: Observation, domains: Sequence[Domain], predicted: Mapping[int, float]) -> dict[str, float]:
    """What each domain has committed: the running (and suspended) jobs' predicted power on their nodes in it
    (per node × nodes there), and each released, not yet started job's worst share of it (per node × the most
    of its nodes that may land there: Slurm picks the nodes)."""
    out = dict.fromkeys((d.name for d in domains), 0.0)
    for job in obs.queue:
        per_node = predicted.get(job.job_id, 0.0) / max(job.nodes, 1)
        if job.state in (RUNNING, SUSPENDED):
            for d in domains:
                out[d.name] += per_node * len(d.nodes & set(job.node_names))
        elif job.state == PENDING and not job.held:
            for d in domains:
                out[d.name] += per_node * allowed(job, d)
    return out


def choose(
    nodes: int, need: float, domains: Sequence[Domain], avail: Mapping[str, int], room: Mapping[str, float]
) -> tuple[list[str] | None, str]:
    """The placement rule, one definition for the live advisor (:func:`place`) and the replay
    (``advise/domain_replay.py``): the domains a job of ``nodes`` nodes and ``need`` W may go to, given how many
    of its nodes may land in each (``avail``) and each domain's power room. One domain when one has the nodes and
    the room (the one with the most room left); else, for a job larger than any domain, domains by room until
    they have its nodes, each with room for the most of its nodes that may land there. None when nothing fits."""
    per_node = need / max(nodes, 1)
    single = [d for d in domains if avail[d.name] >= nodes and room[d.name] >= need - 1e-9]
    if single:
        best = max(single, key=lambda d: (room[d.name], d.name))
        return [best.name], f"domain {best.name}: {room[best.name]:,.0f} W free"
    usable = sorted(
        (d for d in domains if avail[d.name] > 0 and room[d.name] >= per_node * avail[d.name] - 1e-9),
        key=lambda d: (-room[d.name], d.name),
    )
    chosen, count = [], 0
    for d in usable:
        chosen.append(d.name)
        count += avail[d.name]
        if count >= nodes:
            if len(chosen) == 1:
                break
            return chosen, "domains " + ", ".join(chosen)
    free = ", ".join(f"{d.name} {max(room[d.name], 0):,.0f} W" for d in domains)
    return None, f"needs {need:,.0f} W; no domain has room for it ({free} free)"


def place(
    job: QueuedJob, need: float, domains: Sequence[Domain], room: Mapping[str, float]
) -> tuple[list[str] | None, str]:
    """The domains ``job`` (``need`` W in all) may be released into, and why (:func:`choose`, with the most of its
    nodes that may land in each domain: Slurm picks the nodes inside them)."""
    return choose(job.nodes, need, domains, {d.name: allowed(job, d) for d in domains}, room)


def exclusion(job: QueuedJob, domains: Sequence[Domain], chosen: Sequence[str], all_nodes: Iterable[str]) -> str:
    """The ``ExcNodeList`` that keeps ``job`` inside ``chosen``: every node of the cluster outside them, with the
    nodes the job excluded itself; compressed as a Slurm hostlist."""
    inside = set().union(*(d.nodes for d in domains if d.name in chosen))
    outside = (set(all_nodes) - inside) | set(job.excluded_nodes)
    return str(_hostlist.collect_hostlist(sorted(outside))) if outside else ""
