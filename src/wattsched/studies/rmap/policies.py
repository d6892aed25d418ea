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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
        idx = table.fastest(p_avail + _EPS, nodes_avail)
        if idx is None or table.time[idx] > (1.0 + policy.threshold) * t_req:
            return None
        return idx
    return idx if table.nodes[idx] <= nodes_avail and table.power[idx] <= p_avail + _EPS else None


def reservation_config(policy: RMAPPolicy, table: ConfigTable, n_req: int, p_job: float, p_cluster: float) -> int:
    """The configuration the head job's reservation is made for."""
    if policy.kind == "traditional":
        return traditional_config(table, n_req, p_cluster)
    return naive_config(table, p_job)
