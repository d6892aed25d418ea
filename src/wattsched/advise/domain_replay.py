"""Power domains in the replay (``wattsched advise --replay`` with ``[[domains]]``): the simulator places each job
on the domains' nodes and keeps every domain under its own cap, as the live advisor does in gate mode, so an
operator can evaluate a domain layout before enforcing it.

The core engine counts nodes, not node identities, so placement lives in a Python policy on that engine
(:class:`DomainEasy`): EASY backfilling with the ``max`` power check, the same decisions as the built-in ``easy``
with ``PowerCheck.named("max")`` (reservation on nodes, a priority job blocked by power alone reserved now;
``tests/test_advise_domain_replay.py`` compares the two on random workloads), plus, for every start, a placement
by :func:`wattsched.advise.domains.choose` — the live advisor's rule — on the free nodes of each domain and its
power room (its budget minus its running jobs' licenses per node × their nodes in it). Nodes are interchangeable
inside a domain, so a placement is a node count per domain. Nodes outside every domain are not used (live, the
released job's ``ExcNodeList`` excludes them).

A job that could not be placed even on empty domains (larger than their nodes, or a license above what the
domains allow) is started anyway on any free nodes so that the run goes on, and reported in
:attr:`DomainEasy.never_fits`: the replay holds it and runs again without it (live: held with its reason).

What is measured afterwards (:func:`domain_power`): each domain's power over time from the jobs' true power per
node × their nodes in it, on the cluster cap's basis (``net`` adds the domain's idle nodes), against its cap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from wattsched.advise.domains import Domain, choose
from wattsched.core.policy import PolicyBase, View

__all__ = ["DomainEasy", "domain_power"]

#: The group of the nodes outside every domain (and, without domains, of the whole machine).
REST = ""


class DomainEasy(PolicyBase):
    """EASY + ``max`` check + per-domain placement (module docstring). ``budgets``: each domain's budget for
    jobs (W; None: no cap), as :func:`wattsched.advise.domains.domain_budgets` gives it. Without domains it is
    the built-in EASY with the ``max`` check on the whole machine."""

    name = "easy-domains"

    def __init__(self, domains: Sequence[Domain], budgets: Mapping[str, int | float | None], machine_size: int):
        self.domains = tuple(domains)
        inside = sum(len(d.nodes) for d in self.domains)
        if inside > machine_size:
            raise ValueError(f"the domains hold {inside} nodes, more than the machine's {machine_size}")
        self.size = {d.name: len(d.nodes) for d in self.domains}
        self.size[REST] = machine_size - inside
        self.usable = [d.name for d in self.domains] if self.domains else [REST]
        self.budget = {d.name: math.inf if budgets.get(d.name) is None else float(budgets[d.name]) for d in domains}  # type: ignore[arg-type]
        self.free = dict(self.size)
        self.committed = dict.fromkeys(self.size, 0.0)
        self.running: dict[int, tuple[dict[str, int], float]] = {}  # position -> (nodes per group, W per node)
        self.placements: dict[int, dict[str, int]] = {}  # position -> nodes per group, every job started
        self.never_fits: set[int] = set()  # positions
        self._checked: dict[int, bool] = {}

    # -- bookkeeping ---------------------------------------------------------------------------------------------
    def _release_finished(self, view: View) -> None:
        still = set(view.running.tolist())
        for pos in [p for p in self.running if p not in still]:
            counts, per_node = self.running.pop(pos)
            for g, k in counts.items():
                self.free[g] += k
                self.committed[g] -= per_node * k

    def _start(self, pos: int, counts: dict[str, int], per_node: float) -> None:
        for g, k in counts.items():
            self.free[g] -= k
            self.committed[g] += per_node * k
        self.running[pos] = (counts, per_node)
        self.placements[pos] = counts

    def _room(self) -> dict[str, float]:
        return {d.name: self.budget[d.name] - self.committed[d.name] for d in self.domains}

    def _fits_ever(self, nodes: int, need: float) -> bool:
        if not self.domains:
            return True
        avail = {d.name: min(nodes, len(d.nodes)) for d in self.domains}
        return choose(nodes, need, self.domains, avail, dict(self.budget))[0] is not None

    def _placement(self, nodes: int, need: float) -> dict[str, int] | None:
        """Nodes per group for a job starting now, or None when no placement has the nodes and the room."""
        if not self.domains:
            return {REST: nodes} if self.free[REST] >= nodes else None
        avail = {d.name: min(nodes, self.free[d.name]) for d in self.domains}
        chosen, _ = choose(nodes, need, self.domains, avail, self._room())
        if chosen is None:
            return None
        counts, left = {}, nodes
        for name in chosen:  # the nodes Slurm picks inside the released domains: in the rule's order
            k = min(self.free[name], left)
            if k:
                counts[name] = k
                left -= k
        return counts if left == 0 else None

    def _anywhere(self, nodes: int) -> dict[str, int] | None:
        """Any free nodes, domains first (a job that never fits, started so that the run goes on)."""
        counts, left = {}, nodes
        for g in [*self.usable, *([REST] if self.domains else [])]:
            k = min(self.free[g], left)
            if k:
                counts[g] = k
                left -= k
        return counts if left == 0 else None

    # -- the pass ------------------------------------------------------------------------------------------------
    def schedule(self, view: View) -> list[int]:
        self._release_finished(view)
        jobs, now, cap = view.jobs, view.now, view.cap
        smax = view.power_sums[1]
        free = self._usable_free()
        chosen: list[int] = []
        queue = [int(p) for p in view.queue]

        def fits_power(pos: int) -> bool:
            return cap == math.inf or smax + float(jobs.est_dyn_max[pos]) <= cap

        def try_start(pos: int) -> bool:
            nodes, need = int(jobs.size[pos]), float(jobs.est_dyn_max[pos])
            if pos not in self._checked:
                self._checked[pos] = self._fits_ever(nodes, need)
            if self._checked[pos]:
                counts = self._placement(nodes, need) if nodes <= free else None
            else:  # started anywhere so that the run goes on; held in the next run
                counts = self._anywhere(nodes)
                if counts is not None:
                    self.never_fits.add(pos)
            if counts is None:
                return False
            self._start(pos, counts, need / max(nodes, 1))
            chosen.append(pos)
            return True

        i = 0
        while i < len(queue):
            pos = queue[i]
            if fits_power(pos) and try_start(pos):
                free = self._usable_free()
                smax += float(jobs.est_dyn_max[pos])
                i += 1
            else:
                break
        if i >= len(queue):
            return chosen
        head = queue[i]
        shadow, extra = self._reservation(view, head, free, chosen)
        for pos in queue[i + 1 :]:
            if free <= 0:
                break
            q = int(jobs.size[pos])
            if q > free:
                continue
            in_time = now + float(jobs.estimate[pos]) <= shadow
            if not in_time and q > extra:
                continue
            if not fits_power(pos) or not try_start(pos):
                continue
            free = self._usable_free()
            smax += float(jobs.est_dyn_max[pos])
            if not in_time:
                extra -= q
        return chosen

    def _usable_free(self) -> int:
        return sum(self.free[g] for g in self.usable)

    def _reservation(self, view: View, head: int, free: int, chosen: list[int]) -> tuple[float, int]:
        """The priority job's shadow time and extra nodes, on nodes only (the built-in EASY's default): now when
        its nodes are free (blocked by power or a domain), else the first expected end at which they are."""
        jobs, now = view.jobs, view.now
        need = int(jobs.size[head])
        if need <= free:
            return now, free - need
        ends: list[tuple[float, int]] = []
        for pos, end, start in zip(view.running, view.running_expected_end, view.running_start, strict=True):
            e = float(end) if end > now else float(start) + float(jobs.walltime[pos])  # overdue: its walltime
            ends.append((e, self._usable_nodes(int(pos))))
        ends += [(now + float(jobs.estimate[p]), self._usable_nodes(p)) for p in chosen]
        ends.sort()
        avail, k = free, 0
        while k < len(ends):
            e = ends[k][0]
            while k < len(ends) and ends[k][0] <= e:
                avail += ends[k][1]
                k += 1
            if avail >= need:
                return e, avail - need
        return math.inf, 0

    def _usable_nodes(self, pos: int) -> int:
        counts = self.placements.get(pos, {})
        return sum(counts.get(g, 0) for g in self.usable)

    def summary(self) -> dict[str, Any]:
        return {"never_fits": len(self.never_fits)}


def domain_power(
    schedule: pl.DataFrame,
    placements: Mapping[int, Mapping[str, int]],
    domains: Sequence[Domain],
    idle: float,
    definition: str,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each domain's power as a step function ``(times, watts after each time)``, on the cluster cap's basis:
    its jobs' true power per node × their nodes in it (``schedule``: job_id, start_time, end_time, true_watts,
    size; ``placements`` by job id), plus ``idle`` × its nodes under ``net``."""
    ids = schedule["job_id"].to_list()
    start, end = schedule["start_time"].to_numpy(), schedule["end_time"].to_numpy()
    per_node = (schedule["true_watts"] / schedule["size"]).to_numpy()
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for d in domains:
        k = np.array([placements.get(int(j), {}).get(d.name, 0) for j in ids], dtype=np.float64)
        on = k > 0
        base = idle * len(d.nodes) if definition == "net" else 0.0
        if not on.any():  # no job ran there: its idle level throughout (no instant of its own)
            out[d.name] = (np.empty(0), np.empty(0))
            continue
        t = np.concatenate([start[on], end[on]])
        delta = np.concatenate([per_node[on] * k[on], -per_node[on] * k[on]])
        order = np.lexsort((delta, t))  # at one instant, ends before starts
        t, level = t[order], base + np.cumsum(delta[order])
        last = np.r_[t[1:] != t[:-1], True]
        out[d.name] = (t[last], level[last])
    return out
