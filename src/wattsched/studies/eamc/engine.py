"""Simulation of several node-exclusive partitions, with jobs submitted as job-partition entries (paper 002's
EAMCS scheduler; docs/eamc.md, Scheduler).

Each job is queued as one *entry* per candidate partition, each with its own node count, time limit, duration
and power (they follow the partition and the frequency the policy chose: :func:`~.policies.build_entries`). At
every scheduling instant, after that instant's completions and submissions, the policies' priority backfilling
pass (:func:`~wattsched.studies.eamc.policies.priority_backfill_pass`) walks the entries in priority order and
says which start now; the engine starts them and drops their jobs' other entries. Plans use time limits; a
running job ends at ``start + min(duration, limit)``. The pass is compiled with numba, so 5,000-job workloads
simulate in seconds.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wattsched.studies.eamc.policies import Entries, priority_backfill_pass

__all__ = ["Entries", "PartitionedResult", "simulate_partitioned"]


@dataclass
class PartitionedResult:
    """Per job: start, end, chosen entry (partition, frequency, power, duration), and run statistics."""

    start: np.ndarray
    end: np.ndarray
    entry: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)


def simulate_partitioned(
    submit: np.ndarray, entries: Entries, part_nodes: np.ndarray, *, queue_limit: int = 1000
) -> PartitionedResult:
    """Simulate jobs (``submit`` per job number) given their entries (priority order); see the module docstring."""
    t_start = time.perf_counter()
    n = submit.size
    part_nodes = np.asarray(part_nodes, dtype=np.int64)
    e = entries
    bad = np.flatnonzero(e.nodes > part_nodes[e.partition])
    too_big = np.ones(n, dtype=bool)
    too_big[e.job[e.nodes <= part_nodes[e.partition]]] = False
    if too_big.any():
        raise ValueError(
            f"job number {int(np.flatnonzero(too_big)[0])} has no entry, or none that fits its partition "
            f"({bad.size} entries ask for more nodes than their partition has)"
        )
    order_jobs = np.argsort(submit, kind="stable")
    alive = np.zeros(e.job.size, dtype=bool)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    chosen = np.full(n, -1, dtype=np.int64)
    by_job: list[list[int]] = [[] for _ in range(n)]
    for i, j in enumerate(e.job.tolist()):
        by_job[j].append(i)
    run_entries: set[int] = set()
    completions: list[tuple[float, int]] = []
    started_job = np.zeros(n, dtype=bool)
    i = 0
    passes = 0
    pass_s = 0.0
    run_for = np.minimum(e.duration, e.limit)
    while i < n or completions:
        now = min(submit[order_jobs[i]] if i < n else np.inf, completions[0][0] if completions else np.inf)
        while completions and completions[0][0] <= now:
            _, ent = heapq.heappop(completions)
            run_entries.discard(ent)
        while i < n and submit[order_jobs[i]] <= now:
            alive[by_job[order_jobs[i]]] = True
            i += 1
        order = np.flatnonzero(alive)
        if order.size:
            run = np.fromiter(run_entries, dtype=np.int64, count=len(run_entries))
            t = time.perf_counter()
            begun = priority_backfill_pass(
                now,
                order,
                e.job,
                e.partition,
                e.nodes,
                e.limit,
                e.partition[run],
                e.nodes[run],
                start[e.job[run]] + e.limit[run],
                part_nodes,
                queue_limit,
                started_job,
            )
            pass_s += time.perf_counter() - t
            passes += 1
            for ent in begun.tolist():
                j = int(e.job[ent])
                start[j] = now
                end[j] = now + run_for[ent]
                chosen[j] = ent
                alive[by_job[j]] = False
                run_entries.add(ent)
                heapq.heappush(completions, (end[j], ent))
        if i >= n and not completions and alive.any():
            raise RuntimeError(f"{int(alive.sum())} entries left queued on an idle machine at t={now}")
    return PartitionedResult(
        start, end, chosen, {"passes": passes, "pass_s": pass_s, "elapsed_s": time.perf_counter() - t_start}
    )
