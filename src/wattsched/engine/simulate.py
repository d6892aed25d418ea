"""``simulate``: run a policy on a canonical job table and return the schedule.

The job table is turned into struct-of-arrays in queue order; the compiled loop (``wattsched.engine.kernel``) does
the rest. The runtime estimate a policy sees is the walltime unless ``runtime_estimate`` names a column of
estimates (e.g. ``pred_runtime`` from a predictor); estimates are capped at the walltime, since a job never runs
longer than that.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from wattsched.core.policy import Policy, PolicyBase, is_compiled_policy
from wattsched.core.protocols import optional_member
from wattsched.core.schema import REQUIRED_COLUMNS, ReadResult, WorkloadError, coerce_columns, sort_queue_order
from wattsched.core.stopping import compiled_section
from wattsched.engine.compiled_pass import CompiledPass
from wattsched.engine.kernel import run_kernel
from wattsched.engine.kernel_state import (
    ERR_NO_ROOM,
    ERR_NOT_QUEUED,
    ERR_POLICY_FAILED,
    ERR_PRESTART_NO_ROOM,
    EXTERNAL,
    EXTERNAL_COMPILED,
    ST_DONE,
    ST_ERROR,
    ST_ERROR_JOB,
    ST_MAX_QLEN,
    ST_NEXT_SUB,
    ST_PASSES,
    ST_PENDING,
    ST_PRED_PENDING,
    ST_PREDICT,
    KernelState,
)
from wattsched.engine.python_pass import PythonPass, SimulationError, handing_passes_to, job_attributes
from wattsched.policies.knapsack_cpsat import CpSatKnapsack
from wattsched.policies.powercheck import CheckRule, PowerCheck
from wattsched.policies.queue_policies import (
    BACKFILL_CONSERVATIVE,
    KNAPSACK_EXACT_WAIT,
    ORDER_FCFS,
    PF_A,
    PF_B,
    PF_K,
    PF_KEY_IS_ESTIMATE,
    PF_KNAPSACK_END,
    PF_SIZE,
    PF_STRICT,
    order_keys,
)
from wattsched.policies.registry import QueuePolicy, get_policy

#: Columns of the schedule table, in order (``runtime`` is the simulated duration, end − start).
SCHEDULE_COLUMNS = (
    "job_id",
    "user_id",
    "submit_time",
    "start_time",
    "end_time",
    "wait",
    "size",
    "walltime",
    "runtime",
    "trace_runtime",
    "estimate",
    "killed",
    "first_reservation",
)


@dataclass
class OnlineEstimates:
    """An online predictor run inside the simulation (``wattsched.core.predictor.OnlinePredictor``).

    It learns from the completions the simulator produces and, at every instant with submissions, predicts the
    jobs about to be submitted; its predictions become their estimates before any policy sees them.
    ``runtime`` names the output used as the runtime estimate (capped at the walltime; a missing or negative
    value falls back to the walltime); ``power`` maps ``(rows, outputs)`` to the job-level dynamic
    (mean, max, std) estimates in watts that the power check reads.
    """

    predictor: Any
    runtime: str | None = None
    power: Callable[[np.ndarray, dict[str, np.ndarray]], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None


@dataclass
class SimulationResult:
    """The schedule (one row per job) and facts about the run."""

    schedule: pl.DataFrame
    policy: str
    machine_size: int
    runtime_estimate: str
    passes: int
    max_queue_length: int
    elapsed_s: float
    notes: list[str] = field(default_factory=list)
    policy_stats: dict[str, Any] = field(default_factory=dict)  # e.g. the exact knapsack's cost per pass
    #: The online predictor's outputs, one row per schedule row (None without ``online``).
    predictions: pl.DataFrame | None = None
    #: Seconds a job ran past its walltime before it was killed.
    kill_grace: float = 0.0

    def info(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "machine_size": self.machine_size,
            "runtime_estimate": self.runtime_estimate,
            "kill_grace": self.kill_grace,
            "jobs": self.schedule.height,
            "scheduling_passes": self.passes,
            "max_queue_length": self.max_queue_length,
            "simulation_seconds": self.elapsed_s,
            "notes": self.notes,
            "policy_stats": self.policy_stats,
        }


def _estimates(jobs: pl.DataFrame, column: str | None, walltime: np.ndarray, notes: list[str]) -> np.ndarray:
    if column is None or column == "walltime":
        return walltime.copy()
    if column not in jobs.columns:
        raise SimulationError(
            f"runtime estimate column {column!r} is not in the workload (columns: {', '.join(jobs.columns)})"
        )
    est = jobs[column].cast(pl.Float64).to_numpy().astype(np.float64, copy=True)
    bad = ~np.isfinite(est) | (est < 0)
    if bad.any():
        est[bad] = walltime[bad]
        notes.append(f"{int(bad.sum())} jobs had no usable {column!r} estimate; their walltime was used")
    over = est > walltime
    if over.any():
        notes.append(f"{int(over.sum())} estimates exceeded the walltime and were capped at it")
        np.minimum(est, walltime, out=est)
    return est


def simulate(
    jobs: pl.DataFrame | ReadResult,
    policy: str | QueuePolicy | Policy,
    machine_size: int | None = None,
    *,
    runtime_estimate: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    chunks: int = 50,
    power_check: PowerCheck | None = None,
    power_estimates: tuple[str, str, str] = ("est_dyn_mean", "est_dyn_max", "est_dyn_std"),
    cap: Any = None,
    knapsack_until: float | None = None,
    solver: dict[str, Any] | None = None,
    online: OnlineEstimates | None = None,
    kill_grace: float = 0.0,
    compiled: bool = True,
) -> SimulationResult:
    """Simulate ``policy`` on ``jobs`` (a canonical job table, or what ``load_workload`` returns) on a machine of
    ``machine_size`` units (default: the size the workload declares, when it is a ``ReadResult``).

    ``policy`` is a built-in policy's name, a ``QueuePolicy``, or any object with a ``name`` and a
    ``schedule(view)`` method (``wattsched.core.policy.Policy``), which is then called at every pass.
    ``progress(done, total)`` is called between chunks of submissions when given.

    Power: ``power_check`` applies to every start; ``power_estimates`` names the job-level dynamic estimate
    columns (mean, max, std; watts) it reads; ``cap`` is a piecewise-constant cap on dynamic power with
    ``times`` (ascending) and ``caps`` arrays (``inf`` = no cap), whose changes are timer events.
    ``knapsack_until``: where the knapsack policies' window ends (default: the cap's first change).
    ``solver``: options of the exact knapsack (``CpSatKnapsack``: time_limit, work_limit, max_jobs, seed).
    ``online``: a predictor learning from the simulated completions supplies the runtime and/or power
    estimates at submission (then ``runtime_estimate`` / ``power_estimates`` are not read).
    ``kill_grace``: seconds a job may run past its walltime before it is killed (Slurm's OverTimeLimit; traces
    record runtimes a little past the limit, accounting slack); policies still plan with the walltime.
    ``compiled``: a policy with ``schedule_into(view, out)`` (``wattsched.core.policy.CompiledPolicy``) is
    compiled and called from the loop; False runs its ``schedule(view)`` in Python instead.
    """
    external = None
    compiled_function = None
    if isinstance(policy, str):
        pol = get_policy(policy)
    elif isinstance(policy, QueuePolicy):
        pol = policy
    elif compiled and is_compiled_policy(policy):
        external = policy
        compiled_function = _compiled_function(policy)
        pol = QueuePolicy(str(getattr(policy, "name", "")), ORDER_FCFS, EXTERNAL_COMPILED, "compiled Python policy")
    elif isinstance(policy, Policy):
        external = policy
        pol = QueuePolicy(str(policy.name), ORDER_FCFS, EXTERNAL, "Python policy")
    else:
        raise SimulationError(
            f"policy must be a name, a QueuePolicy or an object with name and schedule(view); got {policy!r}"
        )
    if isinstance(jobs, ReadResult):
        if machine_size is None:
            machine_size = jobs.provenance.machine_size
        jobs = jobs.jobs
    if machine_size is None:
        raise SimulationError("give machine_size: the workload declares no machine size")
    if machine_size <= 0:
        raise SimulationError(f"machine size must be positive, got {machine_size}")
    if not (math.isfinite(kill_grace) and kill_grace >= 0):
        raise SimulationError(f"kill_grace must be a finite number of seconds >= 0, got {kill_grace}")
    jobs = sort_queue_order(coerce_columns(jobs))
    n = jobs.height
    if n == 0:
        raise SimulationError("the workload has no jobs to simulate")
    nulls = {c: jobs[c].null_count() for c in REQUIRED_COLUMNS if jobs[c].null_count()}
    if nulls:
        raise WorkloadError(f"required columns have null values: {nulls}; read the workload through a reader")
    submit = jobs["submit_time"].to_numpy().astype(np.float64)
    size = jobs["size"].to_numpy().astype(np.int64)
    walltime = jobs["walltime"].to_numpy().astype(np.float64)
    runtime = jobs["runtime"].to_numpy().astype(np.float64)
    if (size <= 0).any() or (size > machine_size).any():
        worst = jobs.filter((pl.col("size") <= 0) | (pl.col("size") > machine_size)).row(0, named=True)
        raise SimulationError(
            f"job {worst['job_id']} has size {worst['size']}, outside 1..{machine_size}; "
            "readers reject such jobs, pass the machine size when reading"
        )
    if (runtime < 0).any() or (walltime < 0).any() or not np.isfinite(submit).all():
        raise SimulationError("negative runtime/walltime or non-finite submit time; read through a reader")
    notes: list[str] = []
    prestart = _prestart(jobs, pol)
    online_runtime = online is not None and online.runtime is not None
    estimate = _estimates(jobs, None if online_runtime else runtime_estimate, walltime, notes)
    key = order_keys(pol.order, estimate, size)
    online_power = online is not None and online.power is not None
    pcfg, rule, est_m, est_max, est_s, cap_t, cap_v = _power_inputs(
        jobs, power_check, power_estimates, cap, pol, placeholders=online_power
    )
    if knapsack_until is None:
        knapsack_until = float(cap_t[1]) if cap_t.size > 1 else np.inf
    a, b, k, strict = rule.kernel_parameters()
    pf = np.zeros(PF_SIZE)
    pf[PF_K], pf[PF_KNAPSACK_END], pf[PF_KEY_IS_ESTIMATE] = k, knapsack_until, float(np.array_equal(key, estimate))
    pf[PF_A], pf[PF_B], pf[PF_STRICT] = a, b, strict
    state = KernelState(n, machine_size)
    if pol.backfill >= KNAPSACK_EXACT_WAIT:
        external = CpSatKnapsack(
            "wait" if pol.backfill == KNAPSACK_EXACT_WAIT else "stretch", power_check or PowerCheck(), **(solver or {})
        )
    compiled_pass = None  # kept until the run ends: the kernel reads through the addresses it wrote
    handler = None
    if external is not None:
        attributes = job_attributes(jobs, submit, size, walltime, estimate, est_m, est_max, est_s)
        if compiled_function is not None:
            compiled_pass = CompiledPass(compiled_function, pol.name, state.ext, machine_size, attributes)
        else:
            handler = PythonPass(external, state, attributes, machine_size, pol.name, cap_t, cap_v)
    feed = None
    if online is not None:
        feed = _OnlineFeed(online, jobs, submit, size, walltime, estimate, key, pol.order, est_m, est_max, est_s)
        state.st[ST_PREDICT] = 1
    kill_limit = walltime + kill_grace if kill_grace else walltime  # the kernel kills a job at its limit
    # the kernel's three bundles, in the orders engine.kernel.JOB_ARRAYS, KernelState.arrays and POWER_ARRAYS
    job_arrays = (submit, size, kill_limit, estimate, runtime, key, prestart)
    state_arrays = state.arrays()
    power_arrays = (pcfg, pf, state.sums, state.shadow_sums, est_m, est_max, est_s, cap_t, cap_v)
    t0 = time.perf_counter()
    step = max(1, -(-n // max(1, chunks))) if progress is not None else n
    target = min(n, step)
    while True:
        # Ctrl-C stops a long pass at once under the CLI (core/stopping.py), a Python policy's pass included
        with compiled_section(n), handing_passes_to(handler):
            done = run_kernel(pol.backfill, job_arrays, target, state_arrays, power_arrays)
        if state.st[ST_ERROR]:
            _raise_decision_error(state, jobs, pol.name)
        if state.st[ST_PRED_PENDING]:  # an instant with submissions: the predictor goes first
            assert feed is not None  # the kernel stops for predictions only with ST_PREDICT set, i.e. with a feed
            feed.step(state)
            continue
        if state.st[ST_PENDING]:  # a pass for the exact knapsack (CP-SAT); the chunk goes on after it
            assert handler is not None  # only the knapsacks stop for a pass
            handler.pending(float(state.now[0]))
            continue
        if progress is not None:
            progress(int(state.st[ST_NEXT_SUB]), n)
        if done:
            break
        target = min(n, target + step)
    elapsed = time.perf_counter() - t0
    del compiled_pass  # the kernel is done with the addresses
    stuck = np.isnan(state.start)
    if stuck.any():
        first = jobs["job_id"][int(np.flatnonzero(stuck)[0])]
        hint = "; its estimated power may exceed the cap for good" if pcfg[0] != 0 else ""
        raise SimulationError(
            f"policy {pol.name!r} left {int(stuck.sum())} job(s) queued with nothing running (first: job {first})"
            + hint
        )
    schedule = _schedule_table(jobs, state, estimate, kill_grace)
    return SimulationResult(
        schedule=schedule,
        policy=pol.name,
        machine_size=machine_size,
        runtime_estimate=runtime_estimate or "walltime",
        passes=int(state.st[ST_PASSES]),
        max_queue_length=int(state.st[ST_MAX_QLEN]),
        elapsed_s=elapsed,
        notes=notes,
        policy_stats=optional_member(external, PolicyBase, "summary")() if external is not None else {},
        predictions=feed.frame() if feed is not None else None,
        kill_grace=kill_grace,
    )


def _compiled_function(policy: object) -> Any:
    """A compiled policy's ``schedule_into`` as a plain function of (view, out), or a SimulationError saying why
    it is not one (a method taking ``self`` cannot be compiled)."""
    raw = inspect.getattr_static(type(policy), "schedule_into")
    if not isinstance(raw, staticmethod):
        name = getattr(policy, "name", type(policy).__name__)
        raise SimulationError(
            f"policy {name!r}: schedule_into must be a @staticmethod taking (view, out) to be compiled; "
            "or run its schedule(view) with compiled=False"
        )
    return raw.__func__


def _prestart(jobs: pl.DataFrame, pol: QueuePolicy) -> np.ndarray:
    """The ``prestarted`` column (jobs already running when a workload window opens), all False without it."""
    if "prestarted" not in jobs.columns:
        return np.zeros(jobs.height, dtype=np.bool_)
    flags = jobs["prestarted"].fill_null(False).cast(pl.Boolean).to_numpy().astype(np.bool_)
    if flags.any() and pol.backfill == BACKFILL_CONSERVATIVE:
        raise SimulationError("prestarted jobs (window pre-state) are not supported with conservative backfilling")
    return flags


def _power_inputs(
    jobs: pl.DataFrame,
    check: PowerCheck | None,
    columns: tuple[str, str, str],
    cap: Any,
    pol: QueuePolicy,
    *,
    placeholders: bool = False,
) -> tuple[np.ndarray, CheckRule, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Arrays for the kernel's power bookkeeping (all zeros and no cap when there is no power check;
    ``placeholders``: zeros an online predictor fills in at submission)."""
    n = jobs.height
    check = check or PowerCheck()
    pcfg = np.array(check.codes(), dtype=np.int64)
    if cap is None:
        cap_t = np.empty(0)
        cap_v = np.empty(0)
    else:
        cap_t = np.asarray(cap.times, dtype=np.float64)
        cap_v = np.asarray(cap.caps, dtype=np.float64)
        if cap_t.ndim != 1 or cap_t.shape != cap_v.shape or (np.diff(cap_t) <= 0).any():
            raise SimulationError("cap schedule: times must be strictly ascending and match the caps")
        cap_v = np.where(np.isnan(cap_v), np.inf, cap_v)
    if not check.active:
        zeros = np.zeros(n)
        return pcfg, check.rule, zeros, zeros, zeros, cap_t, cap_v
    if pol.backfill == BACKFILL_CONSERVATIVE:
        raise SimulationError("power checks are not available with conservative backfilling yet")
    if placeholders:
        return pcfg, check.rule, np.zeros(n), np.zeros(n), np.zeros(n), cap_t, cap_v
    missing = [c for c in columns if c not in jobs.columns]
    if missing:
        raise SimulationError(
            f"power check {check.name!r} needs job-level dynamic estimate columns {missing} "
            f"(watts: mean, max, std), e.g. from wattsched.power.platform.job_dynamic_estimates"
        )
    arrays = []
    for c in columns:
        a = jobs[c].cast(pl.Float64).to_numpy().astype(np.float64, copy=True)
        if not np.isfinite(a).all():
            bad = jobs["job_id"][int(np.flatnonzero(~np.isfinite(a))[0])]
            raise SimulationError(f"power estimate column {c!r} is missing or not finite for job {bad}")
        arrays.append(a)
    return pcfg, check.rule, arrays[0], arrays[1], arrays[2], cap_t, cap_v


class _OnlineFeed:
    """Hands the simulated completions to an online predictor and writes its predictions into the estimates."""

    def __init__(
        self,
        online: OnlineEstimates,
        jobs: pl.DataFrame,
        submit: np.ndarray,
        size: np.ndarray,
        walltime: np.ndarray,
        estimate: np.ndarray,
        key: np.ndarray,
        order: int,
        est_m: np.ndarray,
        est_max: np.ndarray,
        est_s: np.ndarray,
    ) -> None:
        self.online = online
        self.predictor = online.predictor
        self.predictor.bind(jobs)
        self.submit, self.size, self.walltime, self.estimate, self.key, self.order = (
            submit,
            size,
            walltime,
            estimate,
            key,
            order,
        )
        self.est = (est_m, est_max, est_s)
        self.job_id = jobs["job_id"]
        self.seen = 0
        self.n = jobs.height
        self.out: dict[str, np.ndarray] = {}  # each output with the dtype of its first values; unset = missing
        self.set = np.zeros(jobs.height, dtype=bool)

    def step(self, state: KernelState) -> None:
        now = float(state.now[0])
        done = int(state.st[ST_DONE])
        if done > self.seen:
            rows = state.done_log[self.seen : done]
            ends = state.end[rows]
            # same order as the trace protocol: by completion time, then queue order (the heap pops equal
            # times in its own order)
            rows = rows[np.lexsort((rows, ends))]
            self.predictor.observe(rows, state.end[rows])
            self.seen = done
        lo = int(state.st[ST_NEXT_SUB])
        hi = int(np.searchsorted(self.submit, now, side="right"))
        rows = np.arange(lo, hi)
        predictions = self.predictor.predict(rows, now)
        for name, values in predictions.items():
            if name not in self.out:
                self.out[name] = np.zeros(self.n, dtype=np.asarray(values).dtype)
            self.out[name][rows] = values
        self.set[rows] = True
        if self.online.runtime is not None:
            value = np.asarray(predictions[self.online.runtime], dtype=np.float64)
            wall = self.walltime[rows]
            value = np.where(np.isfinite(value) & (value >= 0), np.minimum(value, wall), wall)
            self.estimate[rows] = value
            self.key[rows] = order_keys(self.order, value, self.size[rows])
        if self.online.power is not None:
            for target, values in zip(self.est, self.online.power(rows, predictions), strict=True):
                values = np.asarray(values, dtype=np.float64)
                if not np.isfinite(values).all():
                    bad = self.job_id[int(rows[np.flatnonzero(~np.isfinite(values))[0]])]
                    raise SimulationError(f"the online power predictor gave no finite estimate for job {bad}")
                target[rows] = values

    def frame(self) -> pl.DataFrame:
        cols = []
        for name in self.predictor.outputs:
            values = self.out.get(name, np.zeros(self.n))
            series = pl.Series(name, values, nan_to_null=values.dtype.kind == "f")
            cols.append(series.set(pl.Series(~self.set), None) if not self.set.all() else series)
        return pl.DataFrame(cols)


def _raise_decision_error(state: KernelState, jobs: pl.DataFrame, policy: str) -> None:
    code = int(state.st[ST_ERROR])
    j = int(state.st[ST_ERROR_JOB])
    job = jobs["job_id"][j] if 0 <= j < jobs.height else j
    if code == ERR_PRESTART_NO_ROOM:
        raise SimulationError(
            f"job {job} was already running when the window opened (prestarted) but does not fit in the free "
            "units at its start: the machine is smaller than the one the workload ran on"
        )
    if code == ERR_POLICY_FAILED:
        now = float(state.now[0])
        if j == -1:
            raise SimulationError(
                f"policy {policy!r} raised an error in schedule_into at t = {now:g} (an index out of range, "
                "typically); run it with simulate(..., compiled=False) to see the Python traceback"
            )
        raise SimulationError(
            f"policy {policy!r}: schedule_into returned {j} at t = {now:g}, not a count of positions written to out "
            "(0 up to the queue's length)"
        )
    why = {ERR_NOT_QUEUED: "the job is not in the queue", ERR_NO_ROOM: "the job does not fit in the free units"}
    raise SimulationError(f"policy {policy!r} tried to start job {job}, refused: {why.get(code, code)}")


def _schedule_table(jobs: pl.DataFrame, state: KernelState, estimate: np.ndarray, kill_grace: float) -> pl.DataFrame:
    user = jobs["user_id"] if "user_id" in jobs.columns else pl.Series("user_id", [None] * jobs.height, pl.Int64)
    table = pl.DataFrame(
        {
            "job_id": jobs["job_id"],
            "user_id": user.cast(pl.Int64),
            "submit_time": jobs["submit_time"],
            "start_time": state.start,
            "end_time": state.end,
            "size": jobs["size"],
            "walltime": jobs["walltime"],
            "trace_runtime": jobs["runtime"],
            "estimate": estimate,
            "first_reservation": state.first_reservation,
        }
    )
    table = table.with_columns(
        (pl.col("start_time") - pl.col("submit_time")).alias("wait"),
        (pl.col("end_time") - pl.col("start_time")).alias("runtime"),
        (pl.col("trace_runtime") > pl.col("walltime") + kill_grace).alias("killed"),
    )
    return table.select(SCHEDULE_COLUMNS)
