"""Offline what-if (``wattsched advise --replay DUMP``): the advisor's own learning and license sizing, run in
simulation on a recorded sacct history, against the cap and without it, so an operator can choose a cap before
enforcing it.

Same code path as the live advisor: :class:`~wattsched.advise.learn.KeyedPowerPredictor` learns from the
*simulated* completions (the engine's online-predictor hook) and :func:`~wattsched.advise.decide.license_for`
sizes each job at its submission; the simulator's power-capped EASY (``engine.simulate`` with the ``max`` power
check: Σ licenses of the running jobs + this job's ≤ budget, which is exactly how Slurm checks a license) then
plays the role of slurmctld. The uncapped run is the same EASY without a power check. No new simulator.

What is measured: each job's true power is its recorded energy over its elapsed time (``energy / runtime``), so
the power over time of both schedules, their peaks on the cap's basis (``net``: the whole cluster, every node's
idle power included; ``gross``: the running jobs' sum), the energy, and the waits (mean, median, p95) with the
increase the cap costs, and how many jobs start later than without the cap.

Differences from the live advisor, stated: a job's license is fixed at its submission (live, it is re-sized every
cycle while pending), and it is bounded by the lowest positive budget of the replayed period, so that no job waits
for ever for a cap that never comes back (live, it is bounded by the budget of the moment). Jobs without recorded
energy are simulated (they hold nodes) and count in the power at their license (``jobs_without_energy`` says how
many). The sacct dump carries no idle node power, so the ``net`` definition needs ``power.idle_watts_per_node``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wattsched.advise.config import AdvisorConfig
from wattsched.advise.decide import license_for
from wattsched.advise.domain_replay import DomainEasy, domain_power
from wattsched.advise.domains import Domain, domain_budgets, domains_of
from wattsched.advise.learn import KEY_COLUMN, TARGET_COLUMN, KeyedPowerPredictor, key_of
from wattsched.core.scalars import as_float, as_int, as_number
from wattsched.core.schema import Provenance
from wattsched.core.store import atomic_file, atomic_write
from wattsched.dataset.hostlist import expand_hostlist
from wattsched.engine.simulate import OnlineEstimates, simulate
from wattsched.policies.powercheck import PowerCheck
from wattsched.power.platform import PowerCapSchedule
from wattsched.workload.load import load_workload

__all__ = ["ReplayError", "ReplayResult", "replay"]


class ReplayError(ValueError):
    """A dump or configuration the replay cannot use: one line naming the file and why."""


@dataclass
class ReplayResult:
    """The two schedules, the power over time and the summary (:meth:`to_dict` for ``--json``)."""

    summary: dict[str, Any]
    capped: pl.DataFrame  # job_id, submit_time, start_time, end_time, wait, license, true_watts, has_history
    uncapped: pl.DataFrame
    power: pl.DataFrame  # time (epoch), capped_watts, uncapped_watts, cap_watts (the cap's basis)
    rejects: pl.DataFrame
    provenance: Provenance

    def to_dict(self) -> dict[str, Any]:
        return self.summary

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """``capped.csv``, ``uncapped.csv``, ``power.csv``, ``rejects.csv`` and ``summary.json`` in ``out_dir``,
        each through a new temporary renamed over its name (``core.store.atomic_file``: nothing planted at a name
        in a shared folder is written through, when run as root)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {name: out / f"{name}.csv" for name in ("capped", "uncapped", "power", "rejects")}
        for name, frame in (
            ("capped", self.capped),
            ("uncapped", self.uncapped),
            ("power", self.power),
            ("rejects", self.rejects),
        ):
            with atomic_file(paths[name], binary=True) as f:
                frame.write_csv(f)
        paths["summary"] = out / "summary.json"
        atomic_write(paths["summary"], json.dumps(self.summary, indent=2, default=str) + "\n")
        return paths


def _dump_nodes(jobs: pl.DataFrame) -> set[str]:
    """The node names the dump's jobs ran on (empty without a node list)."""
    names: set[str] = set()
    if "sacct_nodelist" in jobs.columns:
        for text in jobs["sacct_nodelist"].drop_nulls().unique().to_list():
            try:
                names.update(expand_hostlist(text))
            except ValueError:
                continue
    names.discard("None assigned")
    return names


def _machine_size(jobs: pl.DataFrame, provenance: Provenance, given: int | None, names: set[str]) -> tuple[int, str]:
    if given is not None:
        return int(given), "given"
    if provenance.machine_size:
        return int(provenance.machine_size), "declared by the dump"
    if names:
        return max(len(names), as_int(jobs["size"].max() or 1)), "the nodes the dump's jobs ran on"
    return as_int(jobs["size"].max() or 1), "the largest job (no node list in the dump)"


def _check_domains(dump: str | Path, domains: tuple[Domain, ...], size: int, policy: str, seen: set[str]) -> int:
    """The nodes of the machine in no domain (none used with domains, as live), after the checks a layout
    must pass: domains only with EASY, and no more domain nodes than the machine has."""
    if not domains:
        return 0
    if policy != "easy":
        raise ReplayError(f"{dump}: power domains are replayed with EASY only (the policy given is {policy!r})")
    inside = sum(len(d.nodes) for d in domains)
    if inside > size:
        raise ReplayError(
            f"{dump}: the domains hold {inside} nodes, more than the {size} of the replayed machine "
            "(give --machine-size or check the domains' node lists)"
        )
    named = set().union(*(d.nodes for d in domains))
    if seen and not named & seen:
        raise ReplayError(
            f"{dump}: no node of the domains ({', '.join(d.name for d in domains)}) appears in the dump's "
            "node lists: the domains name another cluster's nodes"
        )
    return size - inside


def _stats(wait: np.ndarray) -> dict[str, float]:
    if wait.size == 0:
        return {"mean": 0.0, "median": 0.0, "p95": 0.0}
    return {"mean": float(wait.mean()), "median": float(np.median(wait)), "p95": float(np.percentile(wait, 95))}


def _power_steps(start: np.ndarray, end: np.ndarray, watts: np.ndarray, base: float) -> tuple[np.ndarray, np.ndarray]:
    """Power after each event time (a step function): ``base`` + the watts of the jobs running then."""
    if start.size == 0:  # no job ran (every one held): the idle level throughout
        return np.zeros(1), np.full(1, base)
    times = np.concatenate([start, end])
    delta = np.concatenate([watts, -watts])
    order = np.lexsort((delta, times))  # at one instant, ends (negative) before starts
    t, d = times[order], delta[order]
    level = base + np.cumsum(d)
    last = np.r_[t[1:] != t[:-1], True]  # the level once every event of the instant is applied
    return t[last], level[last]


def _energy(t: np.ndarray, level: np.ndarray) -> float:
    return float(np.sum(level[:-1] * np.diff(t))) if t.size > 1 else 0.0


@dataclass
class _NoRun:
    """The capped run when every job is held: an empty schedule, no predictions."""

    schedule: pl.DataFrame
    predictions: pl.DataFrame | None = None


#: At most this many capped runs: each one holds the jobs the previous found above the whole budget (a held job
#: never completes, so it teaches nothing and the next run may size others differently; two runs are the norm).
MAX_HOLD_ROUNDS = 6


def _capped_run(
    ordered: pl.DataFrame,
    config: AdvisorConfig,
    policy: str,
    size: int,
    budgets: PowerCapSchedule,
    bound: int | None,
    idle: float | None,
    domains: tuple[Domain, ...] = (),
) -> tuple[Any, dict[int, float], set[int], dict[int, dict[str, int]]]:
    """The capped simulation with the advisor's licenses, holding the jobs whose license would exceed the whole
    budget (``bound``) as the live advisor does: they never start, instead of running alone above the cap. Runs
    again without them until no new job is held. With power domains the policy is :class:`DomainEasy`, which
    also places each job in the domains (jobs it could never place are held the same way). Returns the result,
    every job's license, the held jobs and (with domains) each started job's nodes per domain."""
    held: set[int] = set()
    licenses: dict[int, float] = {}
    budgets_d = domain_budgets(domains, config.power.definition, idle) if domains else {}
    for _ in range(MAX_HOLD_ROUNDS):
        run = ordered.filter(~pl.col("job_id").is_in(sorted(held))) if held else ordered
        if run.is_empty():  # every job needs more than the whole budget: none runs under the cap
            empty = (
                ordered.head(0)
                .select("job_id", "submit_time")
                .with_columns(pl.lit(None, pl.Float64).alias("start_time"), pl.lit(None, pl.Float64).alias("end_time"))
            )
            return _NoRun(empty), licenses, held, {}
        ids, nodes = run["job_id"].to_numpy(), run["size"].to_numpy()
        above: set[int] = set()

        def convert(
            rows: np.ndarray,
            out: dict[str, np.ndarray],
            ids: np.ndarray = ids,
            nodes: np.ndarray = nodes,
            above: set[int] = above,
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            m = np.empty(rows.size)
            for i, r in enumerate(rows):
                value, _ = license_for(
                    int(nodes[r]), float(out["watts_per_node"][i]), config, budget=bound, idle_watts=idle
                )
                m[i] = 0.0 if value is None else float(value)
                licenses[int(ids[r])] = m[i]
                if bound is not None and m[i] > bound:
                    above.add(int(ids[r]))
                    m[i] = float(bound)  # so the run goes on; the job is held in the next run
            return m, m.copy(), np.zeros(rows.size)

        predictor = KeyedPowerPredictor(config, idle)
        placer = DomainEasy(domains, budgets_d, size) if domains else None
        capped = simulate(
            run,
            placer if placer is not None else policy,
            size,
            power_check=PowerCheck.named("max"),
            cap=budgets,
            online=OnlineEstimates(predictor, power=convert),
        )
        if placer is not None:  # positions in the run's queue order (submit time, job id: ``run`` is so sorted)
            above |= {int(ids[p]) for p in placer.never_fits}
            placements = {int(ids[p]): counts for p, counts in placer.placements.items()}
        else:
            placements = {}
        if not above - held:
            return capped, licenses, held, placements
        held |= above
    raise ReplayError(f"the jobs held above the budget did not settle in {MAX_HOLD_ROUNDS} runs")


def replay(
    dump: str | Path,
    config: AdvisorConfig,
    *,
    machine_size: int | None = None,
    policy: str = "easy",
    timezone: str | None = None,
) -> ReplayResult:
    """Replay ``dump`` (``sacct --json`` or ``sacct -P`` output) under ``config`` (module docstring)."""
    read = load_workload(dump, machine_size=machine_size, timezone=timezone)
    jobs = read.jobs
    if jobs.is_empty():
        raise ReplayError(f"{dump}: no job to replay")
    nodes_seen = _dump_nodes(jobs)
    size, size_source = _machine_size(jobs, read.provenance, machine_size, nodes_seen)
    definition = config.power.definition
    idle = config.power.idle_watts_per_node
    if definition == "net" and idle is None:
        raise ReplayError(
            f"{dump}: the net power definition needs power.idle_watts_per_node for a replay "
            "(a sacct dump records no idle node power)"
        )
    idle_w = float(idle or 0.0)
    t0 = float(jobs["submit_time"].min())  # type: ignore[arg-type]
    fields = config.learning.key
    values = jobs.select(
        pl.col("sacct_user").alias("user") if "sacct_user" in jobs.columns else pl.lit(None).alias("user"),
        pl.col("sacct_account").alias("account") if "sacct_account" in jobs.columns else pl.lit(None).alias("account"),
        pl.col("name") if "name" in jobs.columns else pl.lit(None).alias("name"),
        pl.col("size").alias("nodes"),
    )
    keys = [key_of(fields, row) for row in values.iter_rows(named=True)]
    energy = jobs["energy"] if "energy" in jobs.columns else pl.Series([None] * jobs.height, dtype=pl.Float64)
    gross = (energy / (jobs["runtime"] * jobs["size"])).cast(pl.Float64)
    gross = pl.select(pl.when(jobs["runtime"] > 0).then(gross).otherwise(None)).to_series()
    target = gross - idle_w if definition == "net" else gross
    sim = jobs.with_columns(
        (pl.col("submit_time") - t0).alias("submit_time"),
        pl.Series(KEY_COLUMN, keys, dtype=pl.Utf8),
        target.alias(TARGET_COLUMN),
        gross.alias("advise_true_gross"),
    ).drop([c for c in ("trace_start_time", "trace_end_time", "start_time", "end_time") if c in jobs.columns])

    horizon = float(sim["submit_time"].max()) + float(sim["runtime"].sum()) + 1.0  # type: ignore[arg-type]
    caps = config.cap.schedule(t0, t0 + horizon)
    offset = size * idle_w if definition == "net" else 0.0
    budgets = tuple(None if c is None else max(math.floor(c - offset), 0) for c in caps.caps)
    positive = [b for b in budgets if b is not None and b > 0]
    bound = min(positive) if positive else None
    if any(b == 0 for b in budgets) and not positive:
        raise ReplayError(f"{dump}: the cap leaves no budget above the idle power of {size} nodes: no job could run")
    budget_schedule = PowerCapSchedule(caps.times, tuple(None if b is None else float(b) for b in budgets))

    domains = domains_of(config.domains)
    outside = _check_domains(dump, domains, size, policy, nodes_seen)
    ordered = sim.sort("submit_time", "job_id")
    capped, licenses, held, placements = _capped_run(
        ordered, config, policy, size, budget_schedule, bound, idle, domains
    )
    free = simulate(ordered, policy, size)

    true_w = ordered.select(
        job_id="job_id",
        true_watts=(pl.col("advise_true_gross") - (idle_w if definition == "net" else 0.0)) * pl.col("size"),
    )
    lic = pl.DataFrame(
        {"job_id": list(licenses), "license": list(licenses.values())},
        schema={"job_id": pl.Int64, "license": pl.Float64},
    )
    frames = {}
    for name, result in (("capped", capped), ("uncapped", free)):
        s = result.schedule.select("job_id", "submit_time", "start_time", "end_time")
        s = s.join(true_w, on="job_id", how="left").join(lic, on="job_id", how="left")
        s = s.with_columns(
            pl.col("true_watts").fill_null(pl.col("license")).alias("true_watts"),
            (pl.col("start_time") - pl.col("submit_time")).alias("wait"),
            *(pl.col(c) + t0 for c in ("submit_time", "start_time", "end_time")),
        )
        if name == "capped" and result.predictions is not None:
            s = s.hstack(result.predictions.select("has_history", "watts_per_node"))
        frames[name] = s

    sizes = ordered.select("job_id", "size")
    per_domain = (
        domain_power(frames["capped"].join(sizes, on="job_id"), placements, domains, idle_w, definition)
        if domains
        else {}
    )
    steps = {}
    for name, s in frames.items():
        steps[name] = _power_steps(
            s["start_time"].to_numpy(), s["end_time"].to_numpy(), s["true_watts"].to_numpy(), offset
        )
    grid = np.unique(
        np.concatenate(
            [
                steps["capped"][0],
                steps["uncapped"][0],
                t0 + np.asarray(caps.times),
                *(t for t, _ in per_domain.values()),
            ]
        )
    )

    def level_at(t: np.ndarray, level: np.ndarray, before: float) -> np.ndarray:
        if t.size == 0:
            return np.full(grid.size, before)
        i = np.searchsorted(t, grid, side="right") - 1
        return np.where(i >= 0, level[np.clip(i, 0, None)], before)

    def at(name: str) -> np.ndarray:
        return level_at(*steps[name], offset)

    cap_now = caps.cap_at_many(grid - t0)
    power = pl.DataFrame(
        {
            "time": grid,
            "capped_watts": at("capped"),
            "uncapped_watts": at("uncapped"),
            "cap_watts": pl.Series(np.where(np.isfinite(cap_now), cap_now, np.nan), nan_to_null=True),
        }
    )
    domain_rows: dict[str, Any] = {}
    for d in domains:  # the capped run's power per domain, on the cluster cap's basis, against its cap
        base = idle_w * len(d.nodes) if definition == "net" else 0.0
        watts = level_at(*per_domain[d.name], base)
        power = power.with_columns(pl.Series(f"domain_{d.name}_watts", watts))
        above = watts > d.watts + 1e-6
        domain_rows[d.name] = {
            "nodes": len(d.nodes),
            "cap_watts": d.watts,
            "peak_watts": float(watts.max()),
            "instants_over_cap": int(above.sum()),
            "max_over_cap_watts": float((watts[above] - d.watts).max()) if above.any() else 0.0,
            "jobs": sum(1 for counts in placements.values() if counts.get(d.name)),
        }
    over = power.filter(pl.col("cap_watts").is_not_null() & (pl.col("capped_watts") > pl.col("cap_watts") + 1e-6))
    c = frames["capped"]
    jobs_energy = float((c["true_watts"] * (c["end_time"] - c["start_time"])).sum())
    waits = {n: _stats(frames[n]["wait"].to_numpy()) for n in frames}
    delayed = frames["capped"].join(
        frames["uncapped"].select("job_id", pl.col("start_time").alias("free")), on="job_id"
    )
    n_delayed = int(delayed.filter(pl.col("start_time") > pl.col("free") + 1.0).height)
    summary: dict[str, Any] = {
        "dump": str(dump),
        "jobs": ordered.height,
        "rejected": read.rejects.height,
        "jobs_without_energy": int(ordered[TARGET_COLUMN].is_null().sum()),
        "machine_size": size,
        "machine_size_source": size_source,
        "policy": policy,
        "definition": definition,
        "idle_watts_per_node": idle,
        "cap_watts": {
            "min": min((c for c in caps.caps if c is not None), default=None),
            "max": max((c for c in caps.caps if c is not None), default=None),
        },
        "license_bound": bound,
        "wait_s": {
            "capped": waits["capped"],
            "uncapped": waits["uncapped"],
            "increase": {k: waits["capped"][k] - waits["uncapped"][k] for k in waits["capped"]},
        },
        "peak_watts": {"capped": float(power["capped_watts"].max()), "uncapped": float(power["uncapped_watts"].max())},  # type: ignore[arg-type]
        "energy_j": {
            "jobs": jobs_energy,
            "capped": _energy(*steps["capped"]),
            "uncapped": _energy(*steps["uncapped"]),
        },
        "makespan_s": {
            n: float(as_number(frames[n]["end_time"].max()) - as_number(frames[n]["submit_time"].min()))
            if frames[n].height
            else 0.0
            for n in frames
        },
        "jobs_delayed": n_delayed,
        "instants_over_cap": over.height,
        "max_over_cap_watts": as_float((over["capped_watts"] - over["cap_watts"]).max() or 0.0) if over.height else 0.0,
        "learned_jobs": int(frames["capped"]["has_history"].sum()) if "has_history" in frames["capped"].columns else 0,
        # jobs whose license would exceed the whole budget: held, never started (live: held with their reason)
        "held_above_budget": len(held),
        "held_jobs": sorted(held)[:50],
        # power domains (gate mode): each one's capped peak against its own cap; the uncapped run places no job
        "domains": domain_rows,
        "nodes_outside_domains": outside,
    }
    summary["peak_watts"]["saved"] = summary["peak_watts"]["uncapped"] - summary["peak_watts"]["capped"]
    return ReplayResult(summary, frames["capped"], frames["uncapped"], power, read.rejects, read.provenance)
