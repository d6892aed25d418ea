"""Priority backfilling over several node-exclusive partitions, with jobs submitted as job-partition entries
(paper 002's EAMCS scheduler; docs/eamc.md, Scheduler).

Each job is queued as one *entry* per candidate partition, each with its own node count, time limit, duration
and power (they follow the partition and the frequency the policy chose). Entries are walked in priority order
at every scheduling instant (after that instant's completions and submissions):

- an entry whose job has already started in this pass is skipped;
- if its partition has the nodes free now for the entry's time limit, without overlapping any reservation made
  earlier in the pass, it starts, and the job's other entries are dropped (a reservation one of them held in
  this pass is given back);
- otherwise it reserves the earliest such slot in its partition, so lower-priority entries cannot use that hole
  (Slurm-style backfilling, conservative across entries). Entries of one job sit in different partitions, so they
  never block each other.

At most ``queue_limit`` entries are walked per pass (Slurm's ``bf_queue_limit``, 1,000). Plans use time limits;
a running job ends at ``start + min(duration, limit)``. The pass is compiled with numba over per-partition
availability profiles (:mod:`wattsched.policies.profile`, shared with conservative backfilling), so 5,000-job
workloads simulate in seconds.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any

import numba as nb
import numpy as np

from wattsched.policies.profile import earliest_fit, profile_add, slot_end
from wattsched.studies.eamc.policies import Entries

__all__ = ["Entries", "PartitionedResult", "simulate_partitioned"]


@dataclass
class PartitionedResult:
    """Per job: start, end, chosen entry (partition, frequency, power, duration), and run statistics."""

    start: np.ndarray
    end: np.ndarray
    entry: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)


@nb.njit(cache=True)
def _pass(
    now, order, e_job, e_part, e_nodes, e_limit, run_part, run_nodes, run_end, part_nodes, queue_limit, started_job
):  # pragma: no cover - compiled
    """Entries (indices in ``order``, priority order) that start now."""
    k = part_nodes.size
    cap = run_part.size + min(order.size, queue_limit) * 2 + 4
    times = np.empty((k, cap))
    free = np.empty((k, cap), dtype=np.int64)
    count = np.ones(k, dtype=np.int64)
    for p in range(k):
        times[p, 0] = now
        free[p, 0] = part_nodes[p]
    for r in range(run_part.size):
        p = run_part[r]
        count[p] = profile_add(times[p], free[p], count[p], now, run_end[r], -run_nodes[r])
    res_t = np.full((started_job.size, k), np.nan)  # reservation held by a job's entry in each partition
    res_end = np.zeros((started_job.size, k))
    res_n = np.zeros((started_job.size, k), dtype=np.int64)
    out = np.empty(order.size, dtype=np.int64)
    n_out = 0
    walked = 0
    for idx in range(order.size):
        if walked >= queue_limit:
            break
        e = order[idx]
        j = e_job[e]
        if started_job[j]:
            continue
        walked += 1
        p = e_part[e]
        if e_nodes[e] > part_nodes[p]:
            continue
        t = times[p, earliest_fit(times[p], free[p], count[p], e_nodes[e], e_limit[e])]
        end = slot_end(t, e_limit[e])
        count[p] = profile_add(times[p], free[p], count[p], t, end, -e_nodes[e])
        if t <= now:
            started_job[j] = True
            out[n_out] = e
            n_out += 1
            for q in range(k):  # give back the reservations its other entries made in this pass
                if not np.isnan(res_t[j, q]):
                    count[q] = profile_add(times[q], free[q], count[q], res_t[j, q], res_end[j, q], res_n[j, q])
                    res_t[j, q] = np.nan
        else:
            res_t[j, p], res_end[j, p], res_n[j, p] = t, end, e_nodes[e]
    return out[:n_out]


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
            begun = _pass(
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
