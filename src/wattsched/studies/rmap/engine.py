"""Simulation of an overprovisioned cluster under a global power bound with paper 004's RMAP policies
(paper 004; docs/rmap.md; policies in :mod:`wattsched.studies.rmap.policies`).

Events are submissions and completions; at each instant the queue is walked once in FIFO order with EASY
backfilling in nodes and power. A started job runs its configuration's **measured** time and draws its measured
power; the policy plans with its own data (measured or model-predicted), and the power it allocates is its data's
power for the configuration. A job's deadline is ``max(t_req, actual time)`` (paper 004 §3.4.2), so no job is killed;
its planned end, used by reservations, is ``start + max(t_req, planned time)``.

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
from wattsched.studies.rmap.policies import RMAPPolicy, decide, fair_share, reservation_config


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
    plan = model if policy.data == "model" else oracle
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

    def begin(j: int, idx: int, now: float, avail: float | None = None) -> None:
        nonlocal free_nodes, free_power
        # Adaptive below its fair share (P_job > P_avail) started through power-aware backfilling (Algorithm 1)
        avail = free_power if avail is None else avail
        via[j] = "power-aware" if policy.kind == "adaptive" and p_job[j] > avail + 1e-6 else "request"
        table_plan, table_true = plan[apps[j]], oracle[apps[j]]
        cfg[j], start[j] = idx, now
        actual = float(table_true.time[idx])
        end[j] = now + actual
        planned_end[j] = now + max(t_req[j], float(table_plan.time[idx]))
        alloc[j] = float(table_plan.power[idx])
        free_nodes -= int(table_plan.nodes[idx])
        free_power -= alloc[j]
        running.add(j)
        heapq.heappush(completions, (end[j], j))
        actual_power = sum(float(oracle[apps[r]].power[cfg[r]]) for r in running)
        log.append((now, j, p_cluster - free_power, actual_power))

    while i < n or completions:
        now = min(submit[i] if i < n else math.inf, completions[0][0] if completions else math.inf)
        while completions and completions[0][0] <= now:
            _, j = heapq.heappop(completions)
            running.discard(j)
            free_nodes += int(plan[apps[j]].nodes[cfg[j]])
            # re-summed, not incremented: repeated += / -= drifts below the bound and can block a job for ever
            free_power = p_cluster - math.fsum(alloc[r] for r in running)
        while i < n and submit[i] <= now:
            queue.append(i)
            i += 1
        shadow, extra_nodes, extra_power = math.inf, 0, 0.0
        blocked = False
        for j in list(queue):
            table = plan[apps[j]]
            idx = decide(
                policy, table, int(n_req[j]), float(t_req[j]), float(p_job[j]), free_power, free_nodes, p_cluster
            )
            if policy.kind == "adaptive" and p_job[j] > free_power + 1e-6:
                for best, nodes in ((offered, free_nodes), (offered_any_nodes, None)):
                    k = table.fastest(free_power + 1e-6, nodes)
                    if k is not None:
                        best[j] = min(best[j], float(table.time[k]) / float(t_req[j]))
            if not blocked:
                if idx is not None:
                    begin(j, idx, now)
                    queue.remove(j)
                    continue
                blocked = True
                res = reservation_config(policy, table, int(n_req[j]), float(p_job[j]), p_cluster)
                shadow, extra_nodes, extra_power = _reserve(
                    now,
                    running,
                    planned_end,
                    plan,
                    apps,
                    cfg,
                    alloc,
                    free_nodes,
                    free_power,
                    int(table.nodes[res]),
                    float(table.power[res]),
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
                begin(j, idx, now, avail)
                queue.remove(j)
                if ends > shadow:
                    extra_nodes -= nodes_needed
                    extra_power -= power_needed
        if i >= n and not completions and queue:
            stuck = ", ".join(
                f"job {int(jobs['job_id'][j])} ({apps[j]}, n_req {int(n_req[j])}, P_job {p_job[j]:.0f} W)"
                for j in queue
            )
            raise RuntimeError(f"{policy.name}: {len(queue)} job(s) can never start within {p_cluster:g} W: {stuck}")
    tables = [plan[a] for a in apps]
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


def _reserve(
    now: float,
    running: set[int],
    planned_end: np.ndarray,
    plan: JobDetails,
    apps: list[str],
    cfg: np.ndarray,
    alloc: np.ndarray,
    free_nodes: int,
    free_power: float,
    need_nodes: int,
    need_power: float,
) -> tuple[float, int, float]:
    """``(shadow time, extra nodes, extra power)`` of the head job's reservation: running jobs release their
    nodes and power at their planned ends until both suffice."""
    nodes, power = free_nodes, free_power
    if nodes >= need_nodes and power >= need_power - 1e-9:
        return now, nodes - need_nodes, power - need_power
    for j in sorted(running, key=lambda r: (planned_end[r], r)):
        nodes += int(plan[apps[j]].nodes[cfg[j]])
        power += alloc[j]
        if nodes >= need_nodes and power >= need_power - 1e-9:
            return max(now, float(planned_end[j])), nodes - need_nodes, power - need_power
    return math.inf, 0, 0.0
