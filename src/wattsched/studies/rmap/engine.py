"""Simulation of an overprovisioned cluster under a global power bound with paper 004's RMAP policies
(paper 004; docs/rmap.md; policies in :mod:`wattsched.studies.rmap.policies`).

Events are submissions and completions; at each instant the policy's pass
(:func:`~wattsched.studies.rmap.policies.easy_pass`) walks the queue once in FIFO order with EASY backfilling in
nodes and power, and the engine starts the jobs it chose. A started job runs its configuration's **measured**
time and draws its measured power; the policy plans with its own data (measured or model-predicted), and the
power it allocates is its data's power for the configuration. A job's deadline is ``max(t_req, actual time)``
(paper 004 §3.4.2), so no job is killed; its planned end, used by reservations, is ``start + max(t_req, planned time)``.

Per job: start, end, configuration (nodes, cores per node, cap), allocated power (policy data), actual power,
wait and turnaround, its fair-share bound and ``started_by`` (``power-aware`` when Adaptive started it below its
fair share, through Algorithm 1's fallback; ``request`` otherwise), and for Adaptive the best fallback it was
offered (``fallback_offer``: planned time / t_req of the fastest configuration within the free power and nodes,
the lowest over the instants at which P_job > P_avail; ``fallback_offer_any_nodes``: the same on any nodes; inf
when never offered); per scheduling decision: the allocated and actual system power (paper Fig. 14).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from wattsched.studies.rmap.machine import JobDetails
from wattsched.studies.rmap.policies import RMAPPolicy, Running, Start, easy_pass, fair_share


@dataclass
class RMAPResult:
    jobs: pl.DataFrame
    decisions: pl.DataFrame


def simulate_rmap(
    jobs: pl.DataFrame,
    policy: RMAPPolicy,
    oracle: JobDetails,
    *,
    model: JobDetails | None = None,
    p_cluster: float,
    n_nodes: int = 64,
) -> RMAPResult:
    """Simulate ``jobs`` (``job_id, submit_time, app, n_req, t_req``) under ``policy`` within ``p_cluster`` W on
    ``n_nodes`` nodes. ``oracle`` holds the measured configurations (the truth); ``model`` the predicted ones,
    used when the policy's data source is ``model``."""
    needed = [c for c in ("job_id", "submit_time", "app", "n_req", "t_req") if c not in jobs.columns]
    if needed:
        raise ValueError(f"an RMAP workload needs column(s) {needed}")
    if policy.data == "model" and model is None:
        raise ValueError(f"{policy.name} plans with the model: pass model= (see fit_config_model)")
    plan = model if policy.data == "model" and model is not None else oracle  # (a missing model raised above)
    jobs = jobs.sort("submit_time", "job_id", maintain_order=True)
    n = jobs.height
    submit = jobs["submit_time"].to_numpy().astype(np.float64)
    apps = jobs["app"].to_list()
    n_req = jobs["n_req"].to_numpy().astype(np.int64)
    t_req = jobs["t_req"].to_numpy().astype(np.float64)
    if (n_req > n_nodes).any() or (n_req <= 0).any():
        raise ValueError(f"n_req must be in 1..{n_nodes}")
    p_job = np.array([fair_share(int(k), n_nodes, p_cluster, policy.weight) for k in n_req])
    cfg = np.full(n, -1, dtype=np.int64)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    planned_end = np.full(n, np.nan)
    alloc = np.zeros(n)
    via = np.full(n, "", dtype=object)
    # Adaptive's fallback, each time P_job > P_avail: the best planned time / t_req it was offered, within the free
    # nodes and (diagnostic) on any nodes; the threshold decides whether the job takes it
    offered = np.full(n, math.inf)
    offered_any_nodes = np.full(n, math.inf)
    queue: list[int] = []
    running: set[int] = set()
    completions: list[tuple[float, int]] = []
    free_nodes, free_power = n_nodes, p_cluster
    log: list[tuple[float, int, float, float]] = []
    i = 0
    tables = [plan[a] for a in apps]  # the data the policy plans with, per job
    holding: dict[int, Running] = {}  # the running jobs as the policy's pass sees them

    def begin(s: Start, now: float) -> None:
        nonlocal free_nodes, free_power
        j, idx = s.job, s.config
        # Adaptive below its fair share (P_job > P_avail) started through power-aware backfilling (Algorithm 1)
        via[j] = "power-aware" if policy.kind == "adaptive" and p_job[j] > s.avail + 1e-6 else "request"
        cfg[j], start[j] = idx, now
        end[j] = now + float(oracle[apps[j]].time[idx])
        planned_end[j] = s.planned_end
        alloc[j] = float(tables[j].power[idx])
        free_nodes -= int(tables[j].nodes[idx])
        free_power -= alloc[j]
        running.add(j)
        holding[j] = Running(s.planned_end, j, int(tables[j].nodes[idx]), float(alloc[j]))
        heapq.heappush(completions, (end[j], j))
        actual_power = sum(float(oracle[apps[r]].power[cfg[r]]) for r in running)
        log.append((now, j, p_cluster - free_power, actual_power))

    while i < n or completions:
        now = min(submit[i] if i < n else math.inf, completions[0][0] if completions else math.inf)
        while completions and completions[0][0] <= now:
            _, j = heapq.heappop(completions)
            running.discard(j)
            del holding[j]
            free_nodes += int(plan[apps[j]].nodes[cfg[j]])
            # re-summed, not incremented: repeated += / -= drifts below the bound and can block a job for ever
            free_power = p_cluster - math.fsum(alloc[r] for r in running)
        while i < n and submit[i] <= now:
            queue.append(i)
            i += 1
        if not queue:
            continue
        decided = easy_pass(
            policy, now, queue, tables, n_req, t_req, p_job, holding.values(), free_nodes, free_power, p_cluster
        )
        for j, (free, any_nodes) in decided.offers.items():
            offered[j] = min(offered[j], free)
            offered_any_nodes[j] = min(offered_any_nodes[j], any_nodes)
        for s in decided.starts:
            begin(s, now)
            queue.remove(s.job)
        if i >= n and not completions and queue:
            stuck = ", ".join(
                f"job {int(jobs['job_id'][j])} ({apps[j]}, n_req {int(n_req[j])}, P_job {p_job[j]:.0f} W)"
                for j in queue
            )
            raise RuntimeError(f"{policy.name}: {len(queue)} job(s) can never start within {p_cluster:g} W: {stuck}")
    truth = [oracle[a] for a in apps]
    out = (
        jobs.select("job_id", "submit_time", "app", "n_req", "t_req")
        .with_columns(
            pl.Series("start_time", start),
            pl.Series("end_time", end),
            pl.Series("nodes", [int(t.nodes[c]) for t, c in zip(tables, cfg, strict=True)]),
            pl.Series("cores", [int(t.cores[c]) for t, c in zip(tables, cfg, strict=True)]),
            pl.Series("cap", [float(t.cap[c]) for t, c in zip(tables, cfg, strict=True)]),
            pl.Series("alloc_power", alloc),
            pl.Series("actual_power", [float(t.power[c]) for t, c in zip(truth, cfg, strict=True)]),
            pl.Series("planned_time", [float(t.time[c]) for t, c in zip(tables, cfg, strict=True)]),
            pl.Series("p_job", p_job),
            pl.Series("started_by", via.tolist(), dtype=pl.String),
            pl.Series("fallback_offer", offered),
            pl.Series("fallback_offer_any_nodes", offered_any_nodes),
        )
        .with_columns(
            (pl.col("end_time") - pl.col("start_time")).alias("runtime"),
            (pl.col("start_time") - pl.col("submit_time")).alias("wait"),
            (pl.col("end_time") - pl.col("submit_time")).alias("turnaround"),
        )
    )
    decisions = pl.DataFrame(
        log,
        schema={"time": pl.Float64, "job": pl.Int64, "allocated_power": pl.Float64, "actual_power": pl.Float64},
        orient="row",
    )
    return RMAPResult(out, decisions)
