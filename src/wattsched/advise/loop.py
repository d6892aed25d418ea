"""The advisor's reconcile loop: observe, learn, decide, apply only the differences, record everything.

One cycle is idempotent: the current license of every job is read back from Slurm (``QueuedJob.license_watts``),
so a cycle that was killed after applying but before recording simply finds nothing left to change. The store
records completed jobs and advances its sacct cursor in one transaction, so a restart never counts a job twice.
When Slurm does not answer, the cycle acts on nothing and the loop backs off (the interval doubles up to
``MAX_BACKOFF``); an answer that cannot be trusted (:class:`SlurmAnswerError`) also leads to no action. Data are
*fresh* only when this cycle's observation succeeded and the history is no older than two intervals: on stale
data :func:`decide` never lowers a license.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from wattsched.advise.config import AdvisorConfig
from wattsched.advise.decide import Plan, budget_for, decide, plain_idle, plain_up
from wattsched.advise.domains import domain_budgets, domain_power, domains_of
from wattsched.advise.learn import PowerLearner, key_of
from wattsched.advise.overshoot import Alerter, Scope, SpellTracker, job_draws, over_line, respond, resumes
from wattsched.advise.records import (
    PENDING,
    RUNNING,
    SUSPENDED,
    Action,
    Observation,
    SlurmAnswerError,
    SlurmUnavailable,
)
from wattsched.advise.store import AdvisorStore
from wattsched.core.safe_files import UnsafeFileError, append_line
from wattsched.core.store import atomic_file

if TYPE_CHECKING:
    from wattsched.advise.backends import Backend

log = logging.getLogger(__name__)

#: The longest wait between two cycles while Slurm does not answer, in seconds.
MAX_BACKOFF = 300.0
#: Consecutive cycles a node must be seen idle before its CurrentWatts counts as the idle power.
SETTLED_CYCLES = 3
#: Seconds a job must have run before its nodes' CurrentWatts count as what it draws (Slurm samples the meter
#: every AcctGatherNodeFreq, 1 s on the testbed: the first reading may still be the idle one).
RUN_SETTLE_S = 3.0
#: Consecutive cycles a vanished node reading makes a cycle untrusted; after them the reading is taken as gone
#: (a dead meter must not stop the advisor for good: its nodes then count at no power, and the status says so).
LOST_CYCLES = 3
#: How far ahead a time-varying cap is compiled into license reservations (seconds): the cap holds this long
#: while the advisor is down.
WINDOW_HORIZON = 7 * 86_400.0


class Sleeper(Protocol):
    """Waits between cycles; returns True when the loop must stop (a test or a signal handler sets it)."""

    def __call__(self, seconds: float) -> bool: ...


@dataclass
class CycleResult:
    """What one cycle saw and did (the status file, the metrics and ``--once``'s output are made from it)."""

    cycle: int
    time: float
    ok: bool
    error: str | None = None
    mode: str = "licenses"
    cap_watts: float | None = None
    budget: int | None = None
    predicted_running_watts: float | None = None
    measured_watts: float | None = None
    pending: int = 0
    running: int = 0
    new_history: int = 0
    actions: list[dict[str, Any]] = field(default_factory=list)
    failed_actions: int = 0
    slurm_version: str = ""
    suspended: int = 0
    over_cap: bool = False  # measured power above the cap this cycle
    over_cap_watts: float = 0.0  # by how much
    over_cap_since: float | None = None  # when the overshoot under way began
    over_cap_seconds: float = 0.0  # seconds above the cap counted in this cycle (the counter's increment)
    over_cap_seconds_total: float = 0.0  # over the state's whole life
    over_license: list[dict[str, Any]] = field(default_factory=list)  # running jobs drawing above their license
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)  # each power domain: cap, measured, room, over
    domain_over_seconds: dict[str, float] = field(default_factory=dict)  # seconds above a domain's cap this cycle
    jobs: list[dict[str, Any]] = field(default_factory=list)  # each pending job: license, and why it waits

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class Advisor:
    """The controller: ``cycle()`` once, or ``run()`` until stopped. The backend and the store are injected so
    the same loop drives a real cluster, a recorded one (tests) and shadow mode."""

    def __init__(
        self,
        config: AdvisorConfig,
        backend: Backend,
        store: AdvisorStore,
        *,
        clock: Callable[[], float] = time.time,
        actions_log: Path | None = None,
        on_cycle: Callable[[CycleResult], None] | None = None,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.backend = backend
        self.store = store
        self.clock = clock
        self.learner = PowerLearner(config)
        self.actions_log = actions_log
        self.on_cycle = on_cycle
        self.on_note = on_note
        self.version = ""
        self.last_time: float | None = None  # the previous cycle's time (shadow mode's "would delay" window)
        self.cycles = 0
        self._idle_streak: dict[str, int] = {}  # node -> consecutive cycles seen idle
        self._scheduled: tuple[object, ...] | None = None  # the budgets last compiled into reservations
        self._readings: dict[str, float | None] = {}  # node -> the CurrentWatts of the last trusted cycle
        self._lost_streak = 0  # consecutive cycles doubted because a node's reading vanished
        self.spells = SpellTracker()  # the overshoots under way, of the cluster and of each power domain
        self.alerter = Alerter(config.alert_command)

    # -- one cycle -------------------------------------------------------------------------------------------
    def cycle(self) -> CycleResult:
        """Observe, learn, decide, apply; one cycle row and one audit row per action in the store."""
        now = self.clock()
        mode = self.config.mode
        result = CycleResult(cycle=0, time=now, ok=False, mode=mode)
        try:
            if not self.version:
                self.version = self.backend.probe()
            result.slurm_version = self.version
            obs = self.backend.observe(self.store.cursor())
        except (SlurmUnavailable, SlurmAnswerError) as exc:
            return self._untrusted(result, now, str(exc))
        now = obs.time or now
        result.time = now
        doubt = self._doubt(obs)
        if doubt is not None:  # e.g. right after a slurmctld restart: act on nothing, learn nothing
            return self._untrusted(result, now, f"untrusted observation: {doubt}")
        idle = self._idle_watts(obs)
        result.new_history = self.store.record_finished(obs.finished, idle, now=now)
        pending = [j for j in obs.queue if j.state == PENDING]
        running = [j for j in obs.queue if j.state == RUNNING]
        result.pending, result.running = len(pending), len(running)
        result.suspended = sum(j.state == SUSPENDED for j in obs.queue)
        draws = job_draws(obs, self.config, idle)
        live = self._learn_running(obs, draws, idle, now, result)
        correction, _ = self.store.sacct_correction()
        # running jobs too: the predicted running power is the sum of their estimates
        estimates = self.learner.estimate(
            self.store.history_frame(),
            pending + running,
            now,
            idle_watts=idle,
            observed_worst=self.store.worst_watts(),
            running=live,
            correction=correction,
        )
        applied = self.store.applied_licenses()
        plan = decide(
            obs,
            estimates,
            self.config,
            applied=applied,
            idle_watts=idle,
            fresh=True,  # a failed observation ends the cycle above: decisions only ever see this cycle's data
            now=now,
            since=self.last_time,
        )
        self.last_time = now
        result.cap_watts = plan.cap
        result.budget = plan.budget
        result.predicted_running_watts = plan.predicted_power
        result.measured_watts = plan.measured_power
        result.cycle = self.store.record_cycle(
            now,
            mode=mode,
            cap=plan.cap,
            budget=plan.budget,
            predicted_running=plan.predicted_running,
            predicted_power=plan.predicted_power,
            measured_power=result.measured_watts,
            n_pending=len(pending),
            n_running=len(running),
            delayed=plan.delayed,
            advanced=plan.advanced,
            over_license=[int(row["job_id"]) for row in result.over_license],
        )
        self._overshoot(obs, plan, draws, idle, now, result)
        result.jobs = [
            {k: row.get(k) for k in ("job_id", "user", "nodes", "current", "license", "reason", "note")}
            for row in plan.rows
        ]
        if self._compiles_windows(obs):
            self._schedule_windows(obs, plan, idle, now, result)
        self.store.record_predictions(plan.rows, now)
        self.store.forget(set(applied) - {j.job_id for j in pending})
        result.failed_actions += self._apply(plan, now, result)
        result.ok = result.failed_actions == 0
        return self._finish(result)

    # -- trust, running jobs and overshoots ----------------------------------------------------------------------
    def _untrusted(self, result: CycleResult, now: float, error: str) -> CycleResult:
        """A cycle that acts on nothing (Slurm did not answer, or answered what cannot be trusted): numbered like
        any other (a ``cycles`` row with fresh = 0) and explained in the audit log."""
        result.error = error
        self.store.record_failure(now, mode=self.config.mode, error=error)
        result.cycle = self.store.record_cycle(
            now, mode=self.config.mode, cap=self.config.cap.at(now), budget=None, predicted_running=0.0,
            measured_power=None, n_pending=0, n_running=0, fresh=False,
        )  # fmt: skip
        return self._finish(result)

    def _doubt(self, obs: Observation) -> str | None:
        """Why this observation cannot be trusted, or None. After a slurmctld restart the tools answer before the
        controller has its nodes' readings and jobs back: every node at 0 W, a node that read power a cycle ago
        now reading none, or no job listed while nodes are allocated. Acting on it would loosen the cap."""
        readings = {n.name: n.current_watts for n in obs.nodes}
        previous = self._readings  # of the last trusted cycle
        if not obs.nodes:
            return "no node listed"
        if not any(readings.values()):
            return "every node reads 0 W or no power"
        states = {n.name: n.state for n in obs.nodes}
        lost = sorted(name for name in previous if not readings.get(name) and plain_up(states.get(name, "")))
        if lost and self._lost_streak < LOST_CYCLES:
            self._lost_streak += 1  # a restart's gap closes within a cycle or two; a meter that died stays dark
            return f"{len(lost)} node(s) that read power a cycle ago read none now ({', '.join(lost[:3])})"
        self._lost_streak = 0
        busy = [n.name for n in obs.nodes if n.state.upper().split("+")[0] in ("ALLOCATED", "MIXED")]
        if busy and not any(j.state in (RUNNING, SUSPENDED) for j in obs.queue):
            return f"no running job listed while {len(busy)} node(s) are allocated"
        self._readings = {k: v for k, v in readings.items() if v}
        return None

    def _learn_running(
        self, obs: Observation, draws: dict[int, float], idle: float | None, now: float, result: CycleResult
    ) -> dict[str, float]:
        """Running jobs as evidence: each measured job's per-node power (kept in the store, and the highest node
        reading as the observed worst case); per learning key, the most its running jobs draw per node now (the
        learner never estimates the key below it). A job drawing more than its license is reported."""
        top = max((n.current_watts or 0.0 for n in obs.nodes), default=0.0)
        if top > 0:
            self.store.raise_worst_watts(top)
        jobs = {j.job_id: j for j in obs.queue}
        settled = [
            (jobs[job_id], draw)
            for job_id, draw in draws.items()
            if (jobs[job_id].start_time or now) <= now - RUN_SETTLE_S
        ]
        offset = idle if self.config.power.definition == "net" and idle is not None else 0.0
        self.store.record_running([(job, draw / job.nodes + offset) for job, draw in settled], now)
        live: dict[str, float] = {}
        for job, draw in settled:
            key = key_of(self.config.learning.key, vars(job))
            live[key] = max(live.get(key, 0.0), draw / job.nodes)
            if job.license_watts is not None and draw > job.license_watts * 1.0 + 1.0:
                result.over_license.append({"job_id": job.job_id, "draws": round(draw), "license": job.license_watts})
                if self.on_note is not None:
                    self.on_note(
                        f"job {job.job_id} ({job.user}) draws {draw:,.0f} W, above its {job.license_watts:,} W "
                        "license: its key's estimate is raised now"
                    )
        return live if self.config.learning.running else {}

    def _overshoot(
        self, obs: Observation, plan: Plan, draws: dict[int, float], idle: float | None, now: float, result: CycleResult
    ) -> None:
        """Catch a measured power above the cap, of the cluster and of each power domain (count it, log it,
        alert), and add the configured response and the resumptions to the plan (module overshoot)."""
        scopes = [Scope("cluster", plan.cap, plan.measured_power)]
        domains = domains_of(self.config.domains)
        if domains:
            powers = domain_power(obs, domains, self.config.power.definition)
            scopes += [Scope(d.name, d.watts, powers[d.name], d.nodes) for d in domains]
            budgets = domain_budgets(domains, self.config.power.definition, idle)
            result.domains = {
                d.name: {
                    "cap_watts": d.watts,
                    "measured_watts": powers[d.name],
                    "budget": budgets[d.name],
                    "room_watts": plan.domain_room.get(d.name),
                    "over_cap": scopes[i + 1].over,
                }
                for i, d in enumerate(domains)
            }
        suspended = {j: w for j, w in self.store.suspended_jobs().items() if any(q.job_id == j for q in obs.queue)}
        acted: set[int] = set()
        for scope in scopes:
            event, spell, added = self.spells.update(scope, now)
            if spell is None:
                continue
            if scope.over:
                response = respond(obs, self.config, scope=scope, draws=draws, spared=acted)
                acted |= {a.job_id for a in response if a.job_id is not None}
                spell["acted"] = sorted(set(spell["acted"]) | {a.job_id for a in response if a.job_id is not None})
                plan.actions += response
                if plan.apply:
                    suspended |= {a.job_id: float(a.value or 0) for a in response if a.kind == "suspend" and a.job_id}
            if scope.name == "cluster":
                result.over_cap_seconds += added
            else:
                result.domain_over_seconds[scope.name] = added
            if event is not None:
                where = "" if scope.nodes is None else f"domain {scope.name}: "
                line = over_line(
                    event, measured=scope.measured or 0.0, cap=scope.cap or 0.0, seconds=spell["seconds"],
                    acted=spell["acted"],
                )  # fmt: skip
                self._note(where + line)
                self._alert(event, scope, spell["seconds"])
            self.store.record_overshoot(
                spell["start"], spell.get("end"), float(spell["cap"] or 0.0), spell["peak"], spell["seconds"],
                spell["cycles"], spell["acted"], scope=scope.name,
            )  # fmt: skip
        if suspended and not any(s.over for s in scopes):
            back = resumes(obs, scopes, suspended)
            plan.actions += back
            if plan.apply:
                for a in back:
                    suspended.pop(a.job_id or 0, None)
        if plan.apply:
            self.store.set_suspended_jobs(suspended)
        self.spells.last = now
        cluster = scopes[0]
        result.over_cap = cluster.over
        result.over_cap_watts = (cluster.measured or 0.0) - (cluster.cap or 0.0) if cluster.over else 0.0
        spell = self.spells.open.get("cluster")
        result.over_cap_since = None if spell is None else spell["start"]
        result.over_cap_seconds_total = self.store.over_cap_seconds()

    def _note(self, line: str) -> None:
        if self.on_note is not None:
            self.on_note(line)
        else:
            log.warning(line)

    def _alert(self, event: str, scope: Scope, seconds: float) -> None:
        error = self.alerter.fire(
            event, measured=scope.measured or 0.0, cap=scope.cap or 0.0, seconds=seconds, scope=scope.name
        )
        if error is not None:
            self._note(error)

    def _compiles_windows(self, obs: Observation) -> bool:
        """A time-varying cap on a local license is held by reservations made ahead (``schedule_budget``), so it
        holds while the advisor is down; a constant cap or a remote license is set cycle by cycle."""
        lic = obs.license
        return self.config.mode == "licenses" and self.config.cap.watts is None and lic is not None and not lic.remote

    def _schedule_windows(
        self, obs: Observation, plan: Plan, idle: float | None, now: float, result: CycleResult
    ) -> None:
        """Replace the plan's ``set_budget`` by the reservations of the cap's changes over the next
        ``WINDOW_HORIZON``, reconciled every cycle and logged when they change."""
        assert obs.license is not None
        plan.actions = [a for a in plan.actions if a.kind != "set_budget"]
        total = obs.license.total
        steps = [(now, self.config.cap.at(now)), *self.config.cap.changes(now, now + WINDOW_HORIZON)]
        budgets: list[tuple[float, int]] = []
        for t, cap in steps:
            budget = budget_for(cap, obs, self.config, idle)
            if cap is not None and budget is None:
                return  # the idle power is unknown (net): decide already noted it; nothing is loosened
            budgets.append((t, total if budget is None else min(budget, total)))
        key = tuple(budgets[1:]) + ((budgets[0][1],) if budgets else ())
        try:
            self.backend.schedule_budget(budgets)
        except (SlurmUnavailable, SlurmAnswerError) as exc:
            result.failed_actions += 1
            self.store.record_failure(now, mode=self.config.mode, error=f"cap windows: {exc}")
            return
        if key != self._scheduled:
            self._scheduled = key
            action = Action(
                "set_budget",
                None,
                budgets[0][1],
                f"cap windows compiled into license reservations ({len(budgets)} budget(s) over the next "
                f"{WINDOW_HORIZON / 86_400:g} days)",
                previous=obs.license.budget,
                details={"changes": [[t, w] for t, w in budgets]},
            )
            self.store.audit([action], cycle=result.cycle, mode=self.config.mode, applied=True, t=now)
            row = _action_row(action, now, self.config.mode, True, None)
            result.actions.append(row)
            self._log_action(row)

    def _idle_watts(self, obs: Observation) -> float | None:
        """The idle power of one node: the configured value, else measured on idle nodes and kept in the store."""
        configured = self.config.power.idle_watts_per_node
        if configured is not None:
            return float(configured)
        idle_now = {n.name for n in obs.nodes if n.current_watts and n.current_watts > 0 and plain_idle(n.state)}
        self._idle_streak = {name: self._idle_streak.get(name, 0) + 1 for name in idle_now}
        stored = self.store.idle_watts()
        # settled: idle for SETTLED_CYCLES looks in a row. A node its job has just left reports the job's power
        # until Slurm's next meter sample; on the testbed a lone such node once set the idle power to 250 W of a
        # true 100 W, and every job's learned net power fell by 150 W. With nothing stored yet, one look will do.
        need = SETTLED_CYCLES if stored is not None else 1
        settled = [n.current_watts for n in obs.nodes if self._idle_streak.get(n.name, 0) >= need and n.current_watts]
        if settled:
            measured = float(min(settled))
            self.store.set_idle_watts(measured)
            return measured
        return stored

    def _apply(self, plan: Plan, now: float, result: CycleResult) -> int:
        """Apply the plan's actions (not in shadow mode), one audit row each; returns how many failed."""
        mode = self.config.mode
        failed = 0
        if plan.notes and self.on_note is not None:
            for note in plan.notes:
                self.on_note(note)
        for action in plan.actions:
            error: str | None = None
            applied = False
            if plan.apply:
                try:
                    self.backend.apply(action)
                    applied = True
                    if action.kind == "set_license" and action.job_id is not None and action.value is not None:
                        self.store.set_applied(action.job_id, action.value, now)
                except (SlurmUnavailable, SlurmAnswerError) as exc:
                    error = str(exc)
                    failed += 1
            self.store.audit([action], cycle=result.cycle, mode=mode, applied=applied, error=error, t=now)
            row = _action_row(action, now, mode, applied, error)
            result.actions.append(row)
            self._log_action(row)
        return failed

    def _log_action(self, row: dict[str, Any]) -> None:
        """Append ``row`` to the actions log, opened in place as core/safe_files.py says (no symlink, ours, one
        link). A log refused after the start (the CLI refuses an unsafe one before) costs a note, not the cycle:
        the action is in the store's audit table already."""
        if self.actions_log is None:
            return
        self.actions_log.parent.mkdir(parents=True, exist_ok=True)
        try:
            append_line(self.actions_log, json.dumps(row, sort_keys=True), "actions log")
        except UnsafeFileError as exc:
            if self.on_note is not None:
                self.on_note(f"action not logged: {exc}")

    def _finish(self, result: CycleResult) -> CycleResult:
        self.cycles += 1
        status = self.config.status_file
        if status is not None:
            write_status(Path(status), result)
        if self.on_cycle is not None:
            self.on_cycle(result)
        return result

    def close(self) -> None:
        """Stop what the advisor started: alert commands still running are killed (nothing is left behind)."""
        self.alerter.reap(kill_all=True)

    # -- the loop --------------------------------------------------------------------------------------------
    def run(self, sleep: Sleeper, *, once: bool = False) -> CycleResult:
        """Cycle every ``config.interval`` seconds until ``sleep`` says stop; back off while Slurm is down."""
        wait = float(self.config.interval)
        while True:
            started = time.monotonic()
            result = self.cycle()
            if once:
                return result
            if result.error is not None and not result.actions:
                wait = min(max(wait * 2, float(self.config.interval)), MAX_BACKOFF)
            else:
                wait = float(self.config.interval)
            if sleep(max(0.0, wait - (time.monotonic() - started))):
                return result


def _action_row(action: Action, now: float, mode: str, applied: bool, error: str | None) -> dict[str, Any]:
    """One JSON-lines record of an action (shadow mode's output, the audit log's shape)."""
    row = asdict(action)
    row |= {"time": now, "mode": mode, "applied": applied, "error": error}
    return row


def write_status(path: Path, result: CycleResult) -> None:
    """The JSON status file of the active advisor: the last cycle, its ``role`` and ``pid``. Written to a new
    temporary with an unpredictable name and renamed over ``path`` (``core.store.atomic_file``): a reader never
    sees half a file, and a file or symlink planted at any name in a shared folder is replaced, never written."""
    _write_json(path, {"role": "active", "pid": os.getpid(), **result.as_json()})


def write_standby_status(path: Path, *, state: Path, holder: int | None, mode: str) -> None:
    """The status file of a standby advisor (``advise.lock``): whom it waits for, on which state, since when."""
    status = {"role": "standby", "pid": os.getpid(), "holder_pid": holder, "state": str(state), "mode": mode}
    _write_json(path, status | {"time": time.time()})


def _write_json(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as out:
        out.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


class Metrics:
    """The last cycle as Prometheus gauges (prometheus_client, one registry per advisor), served over HTTP by
    :meth:`serve` for ``--metrics-port``."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.registry = CollectorRegistry()
        specs = {
            "cap_watts": "The power cap now, in watts.",
            "budget_watts": "The power license budget the cap implies, in watts.",
            "predicted_running_watts": "Predicted power of the running jobs, in watts.",
            "measured_watts": "Measured cluster power (sum of node CurrentWatts), in watts.",
            "pending_jobs": "Pending jobs seen in the last cycle.",
            "running_jobs": "Running jobs seen in the last cycle.",
            "last_cycle_ok": "1 when the last cycle observed Slurm and applied every action.",
            "last_cycle_time_seconds": "Epoch time of the last cycle.",
            "actions_last_cycle": "Actions decided in the last cycle.",
        }
        self.gauges = {
            name: Gauge(f"wattsched_advisor_{name}", text, registry=self.registry) for name, text in specs.items()
        }
        # overshoots: the names operators alert on (docs/advisor.md, "Overshoots")
        scope = ["scope"]  # "cluster", or a power domain's name
        self.over = Gauge(
            "wattsched_over_cap", "1 while the measured power is above the cap.", scope, registry=self.registry
        )
        self.over_watts = Gauge(
            "wattsched_over_cap_watts", "By how much the measured power is above the cap (0 under it).", scope,
            registry=self.registry,
        )  # fmt: skip
        self.over_seconds = Counter(
            "wattsched_over_cap_seconds", "Seconds the measured power spent above the cap.", scope,
            registry=self.registry,
        )  # fmt: skip

    def update(self, result: CycleResult) -> None:
        values = {
            "cap_watts": result.cap_watts,
            "budget_watts": result.budget,
            "predicted_running_watts": result.predicted_running_watts,
            "measured_watts": result.measured_watts,
            "pending_jobs": result.pending,
            "running_jobs": result.running,
            "last_cycle_ok": int(result.ok),
            "last_cycle_time_seconds": result.time,
            "actions_last_cycle": len(result.actions),
        }
        for name, value in values.items():
            self.gauges[name].set(float("nan") if value is None else float(value))
        self.over.labels("cluster").set(1.0 if result.over_cap else 0.0)
        self.over_watts.labels("cluster").set(result.over_cap_watts)
        self.over_seconds.labels("cluster").inc(result.over_cap_seconds)
        for name, d in result.domains.items():
            over = bool(d.get("over_cap"))
            self.over.labels(name).set(1.0 if over else 0.0)
            measured, cap = d.get("measured_watts"), d.get("cap_watts")
            self.over_watts.labels(name).set(float(measured) - float(cap) if over and measured and cap else 0.0)
            self.over_seconds.labels(name).inc(result.domain_over_seconds.get(name, 0.0))

    def text(self) -> str:
        from prometheus_client import generate_latest

        return generate_latest(self.registry).decode()

    def serve(self, port: int, address: str = "127.0.0.1") -> None:
        from prometheus_client import start_http_server

        start_http_server(port, addr=address, registry=self.registry)
