"""Paper 004's RMAP policies on an overprovisioned cluster under a global power bound (paper 004 §3.4; docs/rmap.md).

A job asks for ``n_req`` nodes and ``t_req`` seconds; the policy picks a *configuration* (nodes × cores per node,
socket power cap) from the job's application table (:class:`~wattsched.studies.rmap.machine.ConfigTable`, measured or
model-predicted) and starts it when its nodes and its power are both available
(``P_avail = P_cluster − Σ_running P_alloc``, with P_alloc the configuration's table power).

- **traditional** (worst-case provisioning): ``(n_req × 16, 115 W)``; if that draws more than ``P_cluster``, the
  largest packed ``n`` that does not;
- **naive**: the fastest configuration within the fair-share bound ``P_job = w · (n_req / N) · P_cluster``
  (any n, c, p: jobs are moldable; ties: fewer nodes, then less power);
- **adaptive** (Algorithm 1, threshold ``th``): if ``P_job ≤ P_avail``, as naive; otherwise the fastest
  configuration within the available power *and nodes* ([AMBIG-4.3]), started now if its time is within
  ``(1 + th) · t_req``. ``th = inf`` is the unbounded variant.

When no configuration of the table fits ``P_job`` (a bound below the app's least power), naive and adaptive fall
back on the app's least-power configuration: the job can still run, alone, rather than never.

Every policy backfills EASY-style ([AMBIG-4.4]): the first job that cannot start gets a reservation in nodes
**and** power for its reservation configuration (its own for traditional and naive, the ``P_job``-bounded naive
one for adaptive), at the earliest expected end of running jobs that frees both; later jobs start in queue order
if they fit now and either end by then or stay within the nodes and power the reservation leaves over.
Adaptive's power-aware backfilling is its fallback configuration applied to each queued job in turn.
:func:`easy_pass` is that pass; the engine (:mod:`wattsched.studies.rmap.engine`) calls it at every instant and
applies its starts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from wattsched.studies.rmap.machine import ConfigTable

KINDS = ("traditional", "naive", "adaptive")
#: Watts below which a power difference is rounding (sums of allocations drift by ~1e-12 W).
_EPS = 1e-6


@dataclass(frozen=True)
class RMAPPolicy:
    """A policy and where its configuration data come from: ``oracle`` (measured) or ``model`` (predicted).
    The paper uses the oracle for traditional and naive and the model for adaptive (its conservative view)."""

    kind: str
    threshold: float = 0.0
    source: str | None = None
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"RMAP policy must be one of {KINDS}, got {self.kind!r}")
        if not self.threshold >= 0:
            raise ValueError(f"the adaptive threshold must be ≥ 0 (inf: unbounded), got {self.threshold}")
        if self.source not in (None, "oracle", "model"):
            raise ValueError(f"source must be oracle or model, got {self.source!r}")

    @property
    def data(self) -> str:
        return self.source or ("model" if self.kind == "adaptive" else "oracle")

    @property
    def name(self) -> str:
        if self.kind != "adaptive":
            return f"rmap-{self.kind}"
        th = "unbounded" if math.isinf(self.threshold) else f"{round(self.threshold * 100):d}"
        return f"rmap-adaptive-{th}"


def parse_rmap_policy(name: str, source: str | None = None) -> RMAPPolicy:
    """``rmap-traditional``, ``rmap-naive``, ``rmap-adaptive`` (th 0), ``rmap-adaptive-20`` (th 20%),
    ``rmap-adaptive-unbounded``."""
    parts = name.removeprefix("rmap-").split("-")
    if parts[0] not in KINDS or (parts[0] != "adaptive" and len(parts) > 1) or len(parts) > 2:
        raise ValueError(f"unknown RMAP policy {name!r}: rmap-traditional, rmap-naive, rmap-adaptive[-TH|-unbounded]")
    th = 0.0
    if len(parts) == 2:
        th = math.inf if parts[1] == "unbounded" else float(parts[1]) / 100.0
    return RMAPPolicy(parts[0], th, source)


def fair_share(n_req: int, n_nodes: int, p_cluster: float, weight: float = 1.0) -> float:
    """The job-level power bound ``P_job = w · (n_req / N) · P_cluster``."""
    return weight * n_req / n_nodes * p_cluster


def traditional_config(table: ConfigTable, n_req: int, p_cluster: float) -> int:
    """``(n_req × 16, 115)``, else the largest packed configuration within ``P_cluster``."""
    idx = table.packed(n_req)
    if idx is not None and table.power[idx] <= p_cluster:
        return idx
    fits = [
        i
        for n in sorted(set(table.nodes.tolist()), reverse=True)
        if (i := table.packed(n)) is not None and table.power[i] <= p_cluster
    ]
    if not fits:
        raise ValueError(f"{table.app}: no packed configuration fits the global bound {p_cluster:g} W")
    return fits[0]


def naive_config(table: ConfigTable, p_job: float) -> int:
    """The fastest configuration within ``p_job``, else the least-power one (see the module docstring)."""
    idx = table.fastest(p_job)
    if idx is not None:
        return idx
    least = min(range(table.power.size), key=lambda i: (table.power[i], table.time[i], table.nodes[i]))
    return least


def decide(
    policy: RMAPPolicy,
    table: ConfigTable,
    n_req: int,
    t_req: float,
    p_job: float,
    p_avail: float,
    nodes_avail: int,
    p_cluster: float,
) -> int | None:
    """The configuration to start **now**, or None if the job must wait."""
    if policy.kind == "traditional":
        idx = traditional_config(table, n_req, p_cluster)
    elif policy.kind == "naive" or p_job <= p_avail + _EPS:
        idx = naive_config(table, p_job)
    else:
        fallback = table.fastest(p_avail + _EPS, nodes_avail)
        if fallback is None or table.time[fallback] > (1.0 + policy.threshold) * t_req:
            return None
        return fallback
    return idx if table.nodes[idx] <= nodes_avail and table.power[idx] <= p_avail + _EPS else None


def reservation_config(policy: RMAPPolicy, table: ConfigTable, n_req: int, p_job: float, p_cluster: float) -> int:
    """The configuration the head job's reservation is made for."""
    if policy.kind == "traditional":
        return traditional_config(table, n_req, p_cluster)
    return naive_config(table, p_job)


# ------------------------------------------------------------------------------------------------------ the pass


class Running(NamedTuple):
    """A running job as a pass sees it: its planned end (``start + max(t_req, planned time)``), its index, and
    the nodes and power it holds. (Named tuples: a pass makes many, and they are cheap to build.)"""

    planned_end: float
    job: int
    nodes: int
    power: float


class Start(NamedTuple):
    """A start decided by a pass: the job, its configuration (index in its table), its planned end and the free
    power the decision was made against (Adaptive below its fair share, ``P_job > avail``, started power-aware)."""

    job: int
    config: int
    planned_end: float
    avail: float


@dataclass
class PassResult:
    """The starts of a pass, in order, and Adaptive's fallback offers (job → the best planned time / t_req of
    the fastest configuration within the free power, on the free nodes and on any nodes), for diagnostics."""

    starts: list[Start]
    offers: dict[int, tuple[float, float]]


def easy_pass(
    policy: RMAPPolicy,
    now: float,
    queue: Sequence[int],
    tables: Sequence[ConfigTable],
    n_req: np.ndarray,
    t_req: np.ndarray,
    p_job: np.ndarray,
    running: Iterable[Running],
    free_nodes: int,
    free_power: float,
    p_cluster: float,
) -> PassResult:
    """One scheduling pass at ``now``: walk ``queue`` (FIFO) with EASY backfilling in nodes and power.

    ``tables[j]`` is job j's configuration data as the policy plans with it (measured or model); ``running`` the
    running jobs; ``free_nodes``/``free_power`` what they leave (``P_avail``). The jobs started in the pass take
    their nodes and power at once, so each later decision sees what is left. See the module docstring.
    """
    holding = list(running)
    starts: list[Start] = []
    offers: dict[int, tuple[float, float]] = {}
    shadow, extra_nodes, extra_power = math.inf, 0, 0.0
    blocked = False

    def start(j: int, idx: int, avail: float) -> None:
        nonlocal free_nodes, free_power
        table = tables[j]
        planned_end = now + max(float(t_req[j]), float(table.time[idx]))
        power = float(table.power[idx])
        starts.append(Start(j, idx, planned_end, avail))
        holding.append(Running(planned_end, j, int(table.nodes[idx]), power))
        free_nodes -= int(table.nodes[idx])
        free_power -= power

    for j in queue:
        table = tables[j]
        idx = decide(policy, table, int(n_req[j]), float(t_req[j]), float(p_job[j]), free_power, free_nodes, p_cluster)
        if policy.kind == "adaptive" and p_job[j] > free_power + _EPS:
            best = list(offers.get(j, (math.inf, math.inf)))
            for slot, nodes in ((0, free_nodes), (1, None)):
                k = table.fastest(free_power + _EPS, nodes)
                if k is not None:
                    best[slot] = min(best[slot], float(table.time[k]) / float(t_req[j]))
            offers[j] = (best[0], best[1])
        if not blocked:
            if idx is not None:
                start(j, idx, free_power)
                continue
            blocked = True
            res = reservation_config(policy, table, int(n_req[j]), float(p_job[j]), p_cluster)
            shadow, extra_nodes, extra_power = reserve(
                now, holding, free_nodes, free_power, int(table.nodes[res]), float(table.power[res])
            )
            continue
        if idx is None:
            continue
        ends = now + max(float(t_req[j]), float(table.time[idx]))
        fits = int(table.nodes[idx]) <= extra_nodes and float(table.power[idx]) <= extra_power + 1e-9
        avail = free_power
        if ends > shadow and not fits and policy.kind == "adaptive":
            # power-aware backfilling within what the reservation leaves: the best configuration that fits
            # the extra nodes and power (Algorithm 1 with P_avail = the extra power), if the threshold allows
            alt = decide(
                policy, table, int(n_req[j]), float(t_req[j]), float(p_job[j]), extra_power, extra_nodes, p_cluster
            )
            if alt is not None:
                idx, avail, fits = alt, extra_power, True
                ends = now + max(float(t_req[j]), float(table.time[idx]))
        nodes_needed, power_needed = int(table.nodes[idx]), float(table.power[idx])
        if ends <= shadow or fits:
            start(j, idx, avail)
            if ends > shadow:
                extra_nodes -= nodes_needed
                extra_power -= power_needed
    return PassResult(starts, offers)


def reserve(
    now: float, running: Sequence[Running], free_nodes: int, free_power: float, need_nodes: int, need_power: float
) -> tuple[float, int, float]:
    """``(shadow time, extra nodes, extra power)`` of the head job's reservation: running jobs release their
    nodes and power at their planned ends until both suffice. Every job that ends at the shadow time releases
    its share, not only the first that makes them suffice (docs/semantics.md §3.1, as the core's EASY: the
    extra nodes are those free at the shadow time; tests/test_study_engines_oracles.py found the difference)."""
    nodes, power = free_nodes, free_power
    if nodes >= need_nodes and power >= need_power - 1e-9:
        return now, nodes - need_nodes, power - need_power
    ordered = sorted(running, key=lambda r: (r.planned_end, r.job))
    for k, r in enumerate(ordered):
        nodes += r.nodes
        power += r.power
        if nodes >= need_nodes and power >= need_power - 1e-9:
            shadow = max(now, r.planned_end)
            for tied in ordered[k + 1 :]:
                if max(now, tied.planned_end) != shadow:
                    break
                nodes += tied.nodes
                power += tied.power
            return shadow, nodes - need_nodes, power - need_power
    return math.inf, 0, 0.0
