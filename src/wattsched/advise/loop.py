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
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from wattsched.advise.config import AdvisorConfig
from wattsched.advise.decide import Plan, budget_for, decide, plain_idle
from wattsched.advise.learn import PowerLearner
from wattsched.advise.records import (
    PENDING,
    RUNNING,
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

#: The longest wait between two cycles while Slurm does not answer, in seconds.
MAX_BACKOFF = 300.0
#: Consecutive cycles a node must be seen idle before its CurrentWatts counts as the idle power.
SETTLED_CYCLES = 3
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
            result.error = str(exc)
            self.store.record_failure(now, mode=mode, error=result.error)
            return self._finish(result)
        now = obs.time or now
        result.time = now
        idle = self._idle_watts(obs)
        result.new_history = self.store.record_finished(obs.finished, idle, now=now)
        pending = [j for j in obs.queue if j.state == PENDING]
        running = [j for j in obs.queue if j.state == RUNNING]
        result.pending, result.running = len(pending), len(running)
        # running jobs too: the predicted running power is the sum of their estimates
        estimates = self.learner.estimate(self.store.history_frame(), pending + running, now, idle_watts=idle)
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
        )
        if self._compiles_windows(obs):
            self._schedule_windows(obs, plan, idle, now, result)
        self.store.record_predictions(plan.rows, now)
        self.store.forget(set(applied) - {j.job_id for j in pending})
        result.failed_actions += self._apply(plan, now, result)
        result.ok = result.failed_actions == 0
        return self._finish(result)

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
        from prometheus_client import CollectorRegistry, Gauge

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

    def text(self) -> str:
        from prometheus_client import generate_latest

        return generate_latest(self.registry).decode()

    def serve(self, port: int, address: str = "127.0.0.1") -> None:
        from prometheus_client import start_http_server

        start_http_server(port, addr=address, registry=self.registry)
