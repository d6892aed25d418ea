"""Dispatchers for multi-resource machines (paper 001 §4; docs/dispatch.md): FIFO, SJF, LJF, EBF (EASY
backfilling, AccaSim-2017 flavour), classic EASY, PRB and CPH.

A dispatcher sees a :class:`ClusterView` — declared job attributes, the runtime **estimates** (never the true
durations), running jobs' starts and allocations, the free resources — and returns decisions ``(job, allocation)``
that the engine validates and applies in order. Every pass plans on its own copy of the free resources.

- **fifo / sjf / ljf**: queue order / expected duration ascending / descending (ties: queue order); allocate in
  that order and **stop at the first job that does not fit**.
- **ebf** (AccaSim 2017): FIFO until the first failure, which becomes the *blocked* job. Its reservation is
  computed **once**: running jobs (and those started in this pass) release their resources in order of expected
  end; the first expected end at which the blocked job fits gives ``res_time`` and the concrete nodes
  ``res_nodes``. While blocked, the job is retried only at passes with ``now ≥ res_time`` (it stays blocked if it
  still does not fit: durations were underestimated); other jobs backfill in FIFO order with skipping, a job that
  would run past ``res_time`` (``now + expected > res_time``) keeping off ``res_nodes``. Passes happen at
  submissions and completions only, as in AccaSim: no timer wakes the blocked job at ``res_time``.
- **easy** (classic, §1.8.1 semantics): the same, but the head's reservation is recomputed at every pass and the
  head starts as soon as it fits.
- **prb**: PRB order (:mod:`wattsched.studies.multires.priority_rules`), best fit, skipping jobs that do not fit.
- **cph**: the CP stage (:mod:`wattsched.studies.multires.cph`) plans the first 100 jobs in PRB order on a relaxed
  pool per resource type; the jobs it starts now are allocated with best fit in PRB order, skipping failures.

Allocators default to the paper's: first fit for fifo, sjf, ljf, ebf and easy; consolidate for prb and cph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from wattsched.studies.multires.allocators import Allocation, Allocator, apply
from wattsched.studies.multires.cph import CPHOptions, cph_plan
from wattsched.studies.multires.priority_rules import prb_order

#: Dispatcher names.
DISPATCHERS = ("fifo", "sjf", "ljf", "ebf", "easy", "prb", "cph")

Decision = tuple[int, Allocation]


@dataclass(frozen=True)
class ClusterView:
    """What a dispatcher may see at ``now``. Per-job arrays are indexed by job number; ``queue`` lists the queued
    jobs in queue order (entry time, then job number). Arrays are read-only."""

    now: float
    queue: np.ndarray
    entered: np.ndarray
    expected: np.ndarray
    walltime: np.ndarray
    chunks: np.ndarray
    chunk_req: np.ndarray
    ewt: np.ndarray
    running: np.ndarray
    started: np.ndarray
    allocations: Mapping[int, Allocation]
    free: np.ndarray
    capacity: np.ndarray
    necessary: np.ndarray


class Dispatcher(Protocol):
    """What the multi-resource engine calls at each pass. The required members; the optional ones and their
    defaults are on :class:`DispatcherBase`."""

    name: str

    def reset(self) -> None:
        """Forget any state kept between passes (a new simulation)."""

    def dispatch(self, view: ClusterView) -> list[Decision]:
        """Decisions for this pass, applied in order."""


class DispatcherBase(Dispatcher):
    """A base class for dispatchers that declares the optional members of :class:`Dispatcher` with their
    defaults. The engine reads them with :func:`wattsched.core.protocols.optional_member`, so a dispatcher that
    does not inherit this class gets the same defaults."""

    @property
    def wake_at(self) -> float | None:
        """A time (s) at which to run another pass even if nothing happens then (EBF retries its reservation at
        its time), read after each pass; the engine ignores it unless it is later than now and jobs are queued.
        Default: ``None``, no wake-up."""
        return None

    def summary(self) -> dict[str, Any]:
        """Statistics of the run added to ``MultiResult.stats`` (CPH's CP-SAT passes). Default: none."""
        return {}


class _Planner:
    """A pass's working copy of the free resources and its decisions."""

    def __init__(self, view: ClusterView, allocator: Allocator) -> None:
        self.view = view
        self.allocator = allocator
        self.free = view.free.copy()
        self.decisions: list[Decision] = []

    def try_start(self, job: int, forbidden: np.ndarray | None = None) -> bool:
        v = self.view
        alloc = self.allocator.place(
            self.free, v.capacity, int(v.chunks[job]), v.chunk_req[job], v.necessary, forbidden
        )
        if alloc is None:
            return False
        apply(self.free, alloc, v.chunk_req[job])
        self.decisions.append((job, alloc))
        return True


@dataclass
class OrderedDispatcher(DispatcherBase):
    """fifo, sjf or ljf: allocate in order, stop at the first failure."""

    name: str = "fifo"
    allocator: Allocator = field(default_factory=Allocator)

    def reset(self) -> None:
        pass

    def dispatch(self, view: ClusterView) -> list[Decision]:
        plan = _Planner(view, self.allocator)
        for job in _ordered(view, self.name):
            if not plan.try_start(int(job)):
                break
        return plan.decisions


def _ordered(view: ClusterView, kind: str) -> np.ndarray:
    q = view.queue
    if kind == "fifo":
        return q
    key = view.expected[q] if kind == "sjf" else -view.expected[q]
    return q[np.argsort(key, kind="stable")]


def _reservation(view: ClusterView, plan: _Planner, job: int) -> tuple[float, np.ndarray]:
    """``(res_time, res_nodes mask)``: the first expected end at which ``job`` fits once running jobs (and this
    pass's starts) release their resources in expected-end order."""
    v = view
    free = plan.free.copy()
    started = {j: a for j, a in plan.decisions}
    holders = [(max(v.now, float(v.started[j] + v.expected[j])), int(j), v.allocations[int(j)]) for j in v.running]
    holders += [(v.now + float(v.expected[j]), j, a) for j, a in started.items()]
    holders.sort(key=lambda h: (h[0], h[1]))
    for end, j, alloc in holders:
        apply(free, alloc, v.chunk_req[j], sign=+1)
        placed = plan.allocator.place(free, v.capacity, int(v.chunks[job]), v.chunk_req[job], v.necessary)
        if placed is not None:
            mask = np.zeros(free.shape[0], dtype=bool)
            mask[placed[0]] = True
            return end, mask
    raise RuntimeError(f"job {job} does not fit even on the empty machine (the engine should have rejected it)")


@dataclass
class EasyDispatcher(DispatcherBase):
    """EASY backfilling: ``flavour="accasim2017"`` (ebf: fixed reservation, retried at its time) or ``"classic"``
    (easy: recomputed every pass)."""

    name: str = "ebf"
    flavour: str = "accasim2017"
    allocator: Allocator = field(default_factory=Allocator)
    blocked: int | None = None
    res_time: float = 0.0
    res_nodes: np.ndarray | None = None

    def reset(self) -> None:
        self.blocked, self.res_time, self.res_nodes = None, 0.0, None

    @property
    def wake_at(self) -> float | None:
        """EBF retries its blocked job at the reservation time: the engine runs a pass then."""
        return self.res_time if self.blocked is not None and self.flavour == "accasim2017" else None

    def dispatch(self, view: ClusterView) -> list[Decision]:
        plan = _Planner(view, self.allocator)
        queue = [int(j) for j in view.queue]
        if self.flavour == "classic":
            self.blocked = None
        if self.blocked is not None and self.blocked in queue:
            if view.now >= self.res_time and plan.try_start(self.blocked):
                self.reset()
        elif self.blocked is not None:  # started or gone: nothing to hold
            self.reset()
        if self.blocked is None:
            begun = {j for j, _ in plan.decisions}
            for job in queue:
                if job in begun:
                    continue
                if not plan.try_start(job):
                    self.blocked = job
                    self.res_time, self.res_nodes = _reservation(view, plan, job)
                    break
        if self.blocked is None:
            return plan.decisions
        done = {j for j, _ in plan.decisions}
        for job in queue:
            if job == self.blocked or job in done:
                continue
            runs_past = view.now + float(view.expected[job]) > self.res_time
            plan.try_start(job, self.res_nodes if runs_past else None)
        return plan.decisions


@dataclass
class PRBDispatcher(DispatcherBase):
    """PRB: urgency order, best fit, skipping."""

    name: str = "prb"
    allocator: Allocator = field(default_factory=lambda: Allocator("consolidate"))

    def reset(self) -> None:
        pass

    def dispatch(self, view: ClusterView) -> list[Decision]:
        plan = _Planner(view, self.allocator)
        for job in view.queue[_prb(view)]:
            plan.try_start(int(job))
        return plan.decisions


def _prb(view: ClusterView) -> np.ndarray:
    q = view.queue
    demand = view.chunks[q, None] * view.chunk_req[q]
    return prb_order(view.now, view.entered[q], view.ewt[q], view.expected[q], demand)


@dataclass
class CPHDispatcher(DispatcherBase):
    """CPH: CP stage on the relaxed pool, then best-fit allocation of the jobs planned to start now."""

    name: str = "cph"
    allocator: Allocator = field(default_factory=lambda: Allocator("consolidate"))
    options: Any = None
    passes: list[dict[str, Any]] = field(default_factory=list)

    def reset(self) -> None:
        self.passes = []

    def summary(self) -> dict[str, Any]:
        """The CP stage's passes: how many, how many solved, and their solve times (s)."""
        if not self.passes:
            return {}
        solve = np.array([p["solve_s"] for p in self.passes])
        return {
            "cp_passes": len(self.passes),
            "cp_solved": int(sum(p["status"] not in ("skipped", "empty") for p in self.passes)),
            "cp_total_s": float(solve.sum()),
            "cp_mean_s": float(solve.mean()),
            "cp_max_s": float(solve.max()),
        }

    def dispatch(self, view: ClusterView) -> list[Decision]:
        q = view.queue
        if q.size == 0:
            return []
        run = view.running
        plan = cph_plan(
            view.now,
            view.entered[q],
            view.expected[q],
            view.chunks[q, None] * view.chunk_req[q],
            view.ewt[q],
            np.maximum(view.started[run] + view.expected[run] - view.now, 1.0),
            view.chunks[run, None] * view.chunk_req[run],
            view.capacity.sum(axis=0),
            self.options if self.options is not None else CPHOptions(),
        )
        self.passes.append(
            {
                "now": view.now,
                "queued": int(q.size),
                "modelled": plan.modelled,
                "status": plan.status,
                "solve_s": plan.solve_s,
            }
        )
        planner = _Planner(view, self.allocator)
        for i in plan.start_now:
            planner.try_start(int(q[i]))
        return planner.decisions


def make_dispatcher(
    name: str, *, allocator: str | None = None, normalise: bool = False, cph_options: Any = None
) -> Dispatcher:
    """A dispatcher by name, with the paper's allocator unless ``allocator`` overrides it."""
    if name not in DISPATCHERS:
        raise ValueError(f"unknown dispatcher {name!r}; choose from {', '.join(DISPATCHERS)}")
    default = "consolidate" if name in ("prb", "cph") else "first-fit"
    alloc = Allocator(allocator or default, normalise)
    if name in ("fifo", "sjf", "ljf"):
        return OrderedDispatcher(name, alloc)
    if name in ("ebf", "easy"):
        return EasyDispatcher(name, "accasim2017" if name == "ebf" else "classic", alloc)
    if name == "prb":
        return PRBDispatcher(name, alloc)
    return CPHDispatcher(name, alloc, cph_options)
