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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wattsched.studies.eamc.dvfs import DVFSPlatform
from wattsched.studies.eamc.energy_model import AppDB, AppDBView
from wattsched.studies.eamc.epm import EPMResult, evaluate, partition_priority

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
    common = dict(
        requested_time=walltime,
        nodes=nodes,
        t_weight=options.t_weight,
        weight_placement=options.weight_placement,
        score=options.score,
    )
    epm = evaluate(platform, view, app_id, rule="epm", **common)
    rule = {"base-slurm": "nominal", "min-runtime": "min_time", "min-energy": "min_energy"}.get(policy, "epm")
    chosen = epm if rule == "epm" else evaluate(platform, view, app_id, rule=rule, **common)
    m, k = epm.known.shape
    base = np.empty(m, dtype=np.int64)
    base[np.lexsort((np.arange(m), submit))] = np.arange(m)  # queue position
    position = np.empty((m, k), dtype=np.int64)  # rank position of each partition (0 = best)
    np.put_along_axis(position, epm.rank, np.broadcast_to(np.arange(k), (m, k)), axis=1)
    jobs = np.repeat(np.arange(m), k)
    parts = np.tile(np.arange(k), m)
    keep = np.ones(m * k, dtype=bool)
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
            tiering=options.tiering,
            threshold=options.threshold if policy == "eamc-priorityinc-v" else None,
            threshold_mode=options.threshold_mode,
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
