"""Paper 002's policies (docs/eamc.md, Policies): how each job becomes job-partition entries, at which frequency,
and in which priority order, for the scheduler of :mod:`wattsched.studies.eamc.engine`.

The base priority is the queue order (submit time, then job order: FCFS by age).

- ``eamc-reorder``: an entry per partition at that partition's optimal frequency (Eq. 4); a job's entries share
  its base priority, its best partition's entry (by part_eff, Eq. 5) first;
- ``eamc-priorityinc``: the entries form tiers by partition rank — every job's best entry (in base order), then
  every second-best entry, …;
- ``eamc-priorityinc-v``: as priorityinc, but an entry whose part_eff is worse than the job's best by ≥ 35% is
  demoted to a last tier ([AMBIG-2.4] options: ``threshold_mode``, ``tiering``);
- ``base-slurm``: one entry, on the job's optimal partition, at the nominal frequency;
- ``min-runtime`` / ``min-energy``: an entry per partition at the frequency that minimises the time / the
  energy, equal priority, tried in the platform's partition order.

What a policy reads is the EPM's prediction from the application database (the job's app id, node count and
requested time on its primary partition) — never the job's true duration. The job's true duration on a
partition at a frequency is its primary-partition duration × the same model's time factor (the paper's
simulator, and docs/eamc.md, Model: the model is the ground truth of these experiments).

Every policy schedules its entries with the same priority backfilling (:func:`priority_backfill_pass`). Entries
are walked in priority order at every scheduling instant:

- an entry whose job has already started in this pass is skipped;
- if its partition has the nodes free now for the entry's time limit, without overlapping any reservation made
  earlier in the pass, it starts, and the job's other entries are dropped (a reservation one of them held in
  this pass is given back);
- otherwise it reserves the earliest such slot in its partition, so lower-priority entries cannot use that hole
  (Slurm-style backfilling, conservative across entries). Entries of one job sit in different partitions, so they
  never block each other.

At most ``queue_limit`` entries are walked per pass (Slurm's ``bf_queue_limit``, 1,000). The pass is compiled
with numba over per-partition availability profiles (:mod:`wattsched.policies.profile`, shared with
conservative backfilling).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numba as nb
import numpy as np

from wattsched.policies.profile import earliest_fit, profile_add, slot_end
from wattsched.studies.eamc.dvfs import DVFSPlatform
from wattsched.studies.eamc.energy_model import AppDB, AppDBView
from wattsched.studies.eamc.epm import (
    EPMResult,
    FrequencyRule,
    ThresholdMode,
    Tiering,
    evaluate,
    partition_priority,
)

#: Policy names.
EAMC_POLICIES = ("base-slurm", "min-runtime", "min-energy", "eamc-reorder", "eamc-priorityinc", "eamc-priorityinc-v")


@dataclass(frozen=True)
class Entries:
    """The job-partition entries of a workload, in **priority order** (entry i is walked before entry i + 1).

    Per entry: the job number, partition index, nodes, planning time limit (s), true duration (s), power per
    node (W) and frequency (GHz)."""

    job: np.ndarray
    partition: np.ndarray
    nodes: np.ndarray
    limit: np.ndarray
    duration: np.ndarray
    power: np.ndarray
    frequency: np.ndarray


@dataclass(frozen=True)
class EAMCOptions:
    """The EPM's options and the PriorityInc-V threshold (defaults: the resolutions of docs/decisions.md)."""

    t_weight: float = 1.0
    weight_placement: str = "paper"
    score: str = "euclidean"
    threshold: float = 0.35
    threshold_mode: str = "relative"
    tiering: str = "strict"


def build_entries(
    policy: str,
    platform: DVFSPlatform,
    appdb: AppDB | AppDBView,
    app_id: np.ndarray,
    nodes: np.ndarray,
    walltime: np.ndarray,
    runtime: np.ndarray,
    submit: np.ndarray,
    options: EAMCOptions | None = None,
) -> tuple[Entries, EPMResult]:
    """The entries of every job under ``policy`` (priority order) and the EPM evaluation that ranks partitions
    (used for the share of jobs on their optimal partition)."""
    if policy not in EAMC_POLICIES:
        raise ValueError(f"unknown EAMC policy {policy!r}; choose from {', '.join(EAMC_POLICIES)}")
    options = options or EAMCOptions()
    view = appdb.view() if isinstance(appdb, AppDB) else appdb
    common: dict[str, Any] = dict(
        requested_time=walltime,
        nodes=nodes,
        t_weight=options.t_weight,
        weight_placement=options.weight_placement,
        score=options.score,
    )
    epm = evaluate(platform, view, app_id, rule="epm", **common)
    rule = cast(
        FrequencyRule,
        {"base-slurm": "nominal", "min-runtime": "min_time", "min-energy": "min_energy"}.get(policy, "epm"),
    )
    chosen = epm if rule == "epm" else evaluate(platform, view, app_id, rule=rule, **common)
    m, k = epm.known.shape
    base = np.empty(m, dtype=np.int64)
    base[np.lexsort((np.arange(m), submit))] = np.arange(m)  # queue position
    position = np.empty((m, k), dtype=np.int64)  # rank position of each partition (0 = best)
    np.put_along_axis(position, epm.rank, np.broadcast_to(np.arange(k), (m, k)), axis=1)
    jobs = np.repeat(np.arange(m), k)
    parts = np.tile(np.arange(k), m)
    keep = np.ones(m * k, dtype=bool)
    key: tuple[np.ndarray, ...]
    if policy == "base-slurm":
        keep = (position == 0).ravel()
        key = (base[jobs],)
    elif policy in ("min-runtime", "min-energy"):
        key = (base[jobs], parts)
    elif policy == "eamc-reorder":
        key = (base[jobs], position.ravel())
    else:
        tier = partition_priority(
            epm.part_eff,
            tiering=cast(Tiering, options.tiering),  # EAMCOptions holds plain strs
            threshold=options.threshold if policy == "eamc-priorityinc-v" else None,
            threshold_mode=cast(ThresholdMode, options.threshold_mode),
        )
        if options.tiering == "strict":
            key = (tier.ravel(), base[jobs], position.ravel())
        else:  # Slurm offsets: higher first, as a tie-breaker on the base order
            key = (base[jobs], -tier.ravel(), position.ravel())
    usable = (~np.isnan(chosen.time)).ravel()
    keep &= usable
    order = np.flatnonzero(keep)[np.lexsort(tuple(reversed([np.asarray(x)[keep] for x in key])))]
    factor = chosen.time_factor.ravel()[order]
    entries = Entries(
        job=jobs[order],
        partition=parts[order],
        nodes=np.asarray(nodes, dtype=np.int64)[jobs[order]],
        limit=np.asarray(walltime, dtype=np.float64)[jobs[order]] * factor,
        duration=np.asarray(runtime, dtype=np.float64)[jobs[order]] * factor,
        power=chosen.power.ravel()[order],
        frequency=chosen.f_opt.ravel()[order],
    )
    return entries, epm


@nb.njit(cache=True)
def priority_backfill_pass(
    now, order, e_job, e_part, e_nodes, e_limit, run_part, run_nodes, run_end, part_nodes, queue_limit, started_job
):  # pragma: no cover - compiled
    """The entries that start at ``now``, in the order they start (see the module docstring).

    ``order``: the queued entries, in priority order; ``e_job``/``e_part``/``e_nodes``/``e_limit``: every entry's
    job number, partition, nodes and time limit; ``run_part``/``run_nodes``/``run_end``: the running entries'
    partition, nodes and planned end; ``part_nodes``: nodes per partition; ``started_job`` (per job, updated in
    place): whether the job has started, so its other entries are skipped."""
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
