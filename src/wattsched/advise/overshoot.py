"""Overshoots: measured power above the cap, caught every cycle and, when configured, acted on.

Licenses bound what Slurm starts on *predicted* power; a job that draws more than its prediction (a user whose
jobs jump to 3× their history), or a cap lowered under running jobs, still puts the measured power above the cap.
Every cycle compares the measured cluster power (on the cap's basis, ``decide.measured_power``) with the cap:

- **caught**: each spell above the cap is logged when it starts and ends, counted
  (``wattsched_over_cap_seconds_total``, the ``wattsched_over_cap`` gauge), kept in the store (``overshoots``) and
  in the status file, and ``alert_command`` runs at its start and its end (:class:`Alerter`);
- **acted on** (``on_overshoot``): ``suspend`` or ``requeue`` the most recently started jobs, newest first, until
  the measured power less what they draw is under the cap (:func:`respond`); jobs of ``admin_users`` are never
  touched. A job the advisor suspended is resumed, oldest start first, once the measured power plus what it drew
  fits under the cap (:func:`resumes`); a requeued job goes back to the queue, where it is sized again with what it
  was measured drawing.

Pure functions over records (tested without a cluster); the loop applies their actions like any other, so shadow
mode reports what it *would* have suspended. What a job draws is read from its nodes' CurrentWatts (less idle
under ``net``): the nodes that run only this job. A job whose nodes are shared or unread counts at its license.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wattsched.advise.config import AdvisorConfig
from wattsched.advise.records import RUNNING, SUSPENDED, Action, Observation, QueuedJob

__all__ = ["Alerter", "Scope", "SpellTracker", "job_draws", "over_line", "respond", "resumes"]

log = logging.getLogger(__name__)

#: Seconds an alert command may run before it is killed (it must never pile up behind a stuck receiver).
ALERT_TIMEOUT_S = 30.0


def job_draws(obs: Observation, config: AdvisorConfig, idle: float | None) -> dict[int, float]:
    """What each running job draws now on the cap's basis (``net``: its nodes' CurrentWatts less idle; ``gross``:
    its nodes' CurrentWatts), for jobs whose nodes run no other job and all report a positive reading."""
    owners: dict[str, int] = {}
    for job in obs.queue:
        if job.state in (RUNNING, SUSPENDED):
            for name in job.node_names:
                owners[name] = owners.get(name, 0) + 1
    watts = {n.name: n.current_watts for n in obs.nodes}
    out: dict[int, float] = {}
    for job in obs.queue:
        if job.state != RUNNING or not job.node_names:
            continue
        readings = [watts.get(name) for name in job.node_names]
        if any(owners.get(name, 0) != 1 for name in job.node_names) or any(not w for w in readings):
            continue
        total = float(sum(w for w in readings if w))
        if config.power.definition == "net":
            if idle is None:
                continue
            total -= idle * len(job.node_names)
        out[job.job_id] = max(total, 0.0)
    return out


@dataclass(frozen=True)
class Scope:
    """Where a cap applies: the whole cluster (``nodes`` None) or a power domain's nodes."""

    name: str
    cap: float | None
    measured: float | None
    nodes: frozenset[str] | None = None

    def share(self, job: QueuedJob) -> float:
        """The part of a job's power drawn in this scope (its nodes here over all its nodes)."""
        if self.nodes is None or not job.node_names:
            return 1.0
        return len(self.nodes & set(job.node_names)) / len(job.node_names)

    @property
    def over(self) -> bool:
        return self.cap is not None and self.measured is not None and self.measured > self.cap + 1e-6


def respond(
    obs: Observation,
    config: AdvisorConfig,
    *,
    scope: Scope,
    draws: Mapping[int, float],
    spared: Iterable[int] = (),
) -> list[Action]:
    """The suspensions (or requeues) that bring ``scope``'s measured power under its cap: the most recently
    started jobs with nodes in it first, never a job of ``admin_users`` nor one in ``spared`` (acted on already);
    each action carries what the job draws (``value``, W) and why."""
    kind = config.on_overshoot
    if kind == "none" or not scope.over:
        return []
    assert scope.cap is not None and scope.measured is not None
    protected, done = set(config.admin_users), set(spared)
    running = [
        j
        for j in obs.queue
        if j.state == RUNNING and j.user not in protected and j.job_id not in done and scope.share(j) > 0
    ]
    running.sort(key=lambda j: (j.start_time or 0.0, j.job_id), reverse=True)
    excess = scope.measured - scope.cap
    where = "" if scope.nodes is None else f" of domain {scope.name}"
    actions: list[Action] = []
    for job in running:
        if excess <= 0:
            break
        whole = draws.get(job.job_id, float(job.license_watts or 0))
        draw = whole * scope.share(job)
        if draw <= 0:
            continue
        actions.append(
            Action(
                kind,  # "suspend" or "requeue", checked by the config
                job.job_id,
                round(whole),
                f"measured {scope.measured:,.0f} W over the {scope.cap:,.0f} W cap{where}: {kind} the newest job "
                f"({draw:,.0f} W)",
                details={"measured": scope.measured, "cap": scope.cap, "draw": draw, "scope": scope.name},
            )
        )
        excess -= draw
    if excess > 0:
        log.warning("%s: over the cap by %.0f W after acting on every job it may act on", scope.name, excess)
    return actions


def resumes(obs: Observation, scopes: Sequence[Scope], suspended: Mapping[int, float]) -> list[Action]:
    """Resume the jobs the advisor suspended (``suspended``: job → what it drew), oldest start first, while in
    every scope the job has nodes in (the cluster, its domains) the measured power plus its share fits the cap.
    No scope may be over its cap now."""
    if any(s.over for s in scopes) or any(s.cap is not None and s.measured is None for s in scopes):
        return []
    jobs = sorted(
        (j for j in obs.queue if j.state == SUSPENDED and j.job_id in suspended),
        key=lambda j: (j.start_time or 0.0, j.job_id),
    )
    levels = {s.name: float(s.measured or 0.0) for s in scopes}
    actions: list[Action] = []
    for job in jobs:
        need = float(suspended[job.job_id])
        shares = {s.name: need * s.share(job) for s in scopes}
        if any(s.cap is not None and levels[s.name] + shares[s.name] > s.cap for s in scopes if shares[s.name] > 0):
            break  # in start order: a later job does not overtake an earlier one
        for name, w in shares.items():
            levels[name] += w
        cluster = scopes[0]
        actions.append(
            Action(
                "resume",
                job.job_id,
                round(need),
                "no cap"
                if cluster.cap is None
                else f"fits again: {levels[cluster.name]:,.0f} W of the {cluster.cap:,.0f} W cap with it",
            )
        )
    return actions


class SpellTracker:
    """The spells above the cap of each scope: when each began, its peak, its seconds (half the interval before
    the first cycle that saw it and half after the last: it crossed somewhere in between) and the jobs acted on."""

    def __init__(self) -> None:
        self.open: dict[str, dict[str, Any]] = {}
        self.last: float | None = None  # the previous cycle's time

    def update(self, scope: Scope, now: float) -> tuple[str | None, dict[str, Any] | None, float]:
        """Record this cycle for ``scope``: returns the event (``start``, ``end`` or None), the spell, and the
        seconds above the cap this cycle adds."""
        half = 0.0 if self.last is None else (now - self.last) / 2
        spell = self.open.get(scope.name)
        if scope.over:
            assert scope.measured is not None
            if spell is None:
                spell = self.open[scope.name] = {
                    "scope": scope.name, "start": now, "peak": scope.measured, "seconds": half, "cycles": 1,
                    "acted": [], "cap": scope.cap,
                }  # fmt: skip
                return "start", spell, half
            added = 2 * half
            spell["seconds"] += added
            spell["cycles"] += 1
            spell["peak"] = max(spell["peak"], scope.measured)
            spell["cap"] = scope.cap
            return None, spell, added
        if spell is not None:
            del self.open[scope.name]
            spell["seconds"] += half
            spell["end"] = now
            return "end", spell, half
        return None, None, 0.0


class Alerter:
    """Runs ``alert_command`` (no shell) at an overshoot's start and end with its details in the environment
    (``WATTSCHED_OVERSHOOT`` = start | end, ``WATTSCHED_MEASURED_WATTS``, ``WATTSCHED_CAP_WATTS``,
    ``WATTSCHED_OVER_SECONDS``, ``WATTSCHED_OVER_SCOPE`` = cluster or a domain's name); never waits for it,
    kills it after :data:`ALERT_TIMEOUT_S`."""

    def __init__(self, command: Sequence[str] | None) -> None:
        self.command = list(command or [])
        self.running: list[tuple[subprocess.Popen[bytes], float]] = []

    def fire(self, event: str, *, measured: float, cap: float, seconds: float, scope: str = "cluster") -> str | None:
        """Start the command for ``event``; returns an error line when it could not start."""
        self.reap()
        if not self.command:
            return None
        env = os.environ | {
            "WATTSCHED_OVERSHOOT": event,
            "WATTSCHED_MEASURED_WATTS": f"{measured:.0f}",
            "WATTSCHED_CAP_WATTS": f"{cap:.0f}",
            "WATTSCHED_OVER_SECONDS": f"{seconds:.1f}",
            "WATTSCHED_OVER_SCOPE": scope,
        }
        try:
            proc = subprocess.Popen(
                self.command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            return f"alert_command {self.command[0]}: cannot start: {exc.strerror or exc}"
        self.running.append((proc, time.monotonic()))
        return None

    def reap(self, *, kill_all: bool = False) -> None:
        """Forget the finished commands; kill those past their time (or all, when the advisor stops)."""
        left = []
        for proc, began in self.running:
            if proc.poll() is not None:
                continue
            if kill_all or time.monotonic() - began > ALERT_TIMEOUT_S:
                proc.kill()
                proc.wait()
                continue
            left.append((proc, began))
        self.running = left


def over_line(event: str, *, measured: float, cap: float, seconds: float, acted: Sequence[int]) -> str:
    """The log line of an overshoot's start or end."""
    if event == "start":
        what = f"; acting on job(s) {', '.join(map(str, acted))}" if acted else ""
        return f"over the cap: measured {measured:,.0f} W, cap {cap:,.0f} W{what}"
    return f"back under the cap after {seconds:,.0f} s over it (measured {measured:,.0f} W, cap {cap:,.0f} W)"
