"""The CP stage of paper 001's CPH dispatcher (paper 001 §4; docs/dispatch.md), on OR-Tools CP-SAT.

At each scheduling event CPH plans the queue on a *relaxed* machine — one pool per resource type holding the
system total — and starts now only the jobs the plan puts at offset 0 (the allocation stage, done by the
dispatcher, then places those with best-fit and skips failures). This module is that plan, as a pure function.

Model (spec): one fixed-duration interval per modelled job, start ∈ [0, H] with H = Σ running remaining + Σ
modelled durations; the running jobs are fixed intervals [0, remaining); one cumulative per resource type;
minimise Σ_j w_j·(start_j + now − queued_j) with w_j = ⌊max_ewt·10⁵/ewt_j⌋ ("head") or ⌊max_ewt/ewt_j⌋ ("2017"),
max_ewt over every queued job. Only the first ``max_jobs`` jobs in PRB order are modelled; the rest are postponed.

The paper's "custom search strategy guided by a branching heuristic using the scheduling policy of PRB" (a
schedule-or-postpone, SetTimes, search) has no CP-SAT counterpart. CP-SAT's own search replaces it: the PRB greedy
plan (serial schedule generation in PRB order) is the solution hint, and with one worker the search is CP-SAT's
fixed search on the starts — smallest earliest start first, ties always in PRB order, left branch start = EST —
which is the SetTimes left branch without the postponement (the right branch is start > EST). On 100-job Eurora-like
queues it improves on the greedy plan far more within 1 s than CP-SAT's default single-worker search. The greedy
plan is also the answer when the solver finds nothing better.

The greedy plan is checked as CP-SAT's first solution (every variable fixed to its hint), so a pass never ends
without one and the wall-clock ``time_limit_s`` is used once; the original's doubling while no solution is found
(cap ``max_time_s``) remains only for a check that cannot finish; ``deterministic_time`` replaces it with one
reproducible CP-SAT deterministic budget (for tests).

Transformations that do not change the optimal plans keep the model small and fast (the dispatcher calls this
thousands of times): durations and remaining times are whole seconds (rounded up, at least 1); demands are rounded
up and capacities down to integers, then each resource is divided by the gcd of its amounts; a resource whose
cumulative can never bind is left out; the weights are divided by their gcd; identical jobs (same duration, demand
and weight) start in PRB order.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import reduce

import numpy as np

from wattsched.studies.multires.priority_rules import prb_order

_INT_LIMIT = 2**62  # keep every model coefficient product far from int64 overflow


@dataclass(frozen=True)
class CPHOptions:
    """Budget and variant of the CP stage (defaults: the paper's 100 jobs, 1 s; 150 s caps the doubling
    left for a greedy hint CP-SAT cannot check).

    ``deterministic_time`` replaces the wall-clock limits (``max_time_s`` stays as a safety net); with one worker
    and a fixed seed the plan is then reproducible.
    """

    max_jobs: int = 100
    weights: str = "head"
    time_limit_s: float | None = 1.0
    max_time_s: float = 150.0
    deterministic_time: float | None = None
    workers: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.weights not in ("head", "2017"):
            raise ValueError(f"weights must be 'head' or '2017', got {self.weights!r}")
        if (self.time_limit_s is not None and self.time_limit_s <= 0) or self.max_time_s <= 0:
            raise ValueError("time limits must be positive (the first one is doubled until a solution is found)")
        if self.max_jobs < 0 or self.workers < 1:
            raise ValueError("max_jobs must be >= 0 and workers >= 1")


@dataclass(frozen=True)
class CPHPlan:
    """The plan of one pass.

    ``status``: "optimal" (proved; also when every modelled job fits at offset 0, where the greedy plan attains
    the lower bound without a solver call), "feasible" (limit hit with a solution better than the greedy plan),
    "greedy" (the solver returned nothing better than its hint), "empty" (nothing to model), "skipped" (no
    modelled job fits at offset 0, so nothing can start now whatever the plan: no solver call, ``starts`` is the
    greedy plan).
    """

    start_now: np.ndarray
    starts: np.ndarray
    objective: float
    status: str
    solve_s: float
    modelled: int
    #: Whether CP-SAT's search returned a solution of its own (None: no solver call). False: the search ended
    #: without one and the greedy plan — already CP-SAT's checked first solution in wall-clock mode — is the plan.
    search_solution: bool | None = None


def cph_weights(ewt: np.ndarray, variant: str = "head") -> np.ndarray:
    """Objective weights: jobs of short-wait queues weigh more, so waiting costs them more."""
    if ewt.size == 0:
        return np.zeros(0, dtype=np.int64)
    if (ewt <= 0).any():
        raise ValueError("expected waiting times must be positive")
    scale = {"head": 1e5, "2017": 1.0}.get(variant)
    if scale is None:
        raise ValueError(f"weights must be 'head' or '2017', got {variant!r}")
    return np.floor(ewt.max() * scale / ewt).astype(np.int64)


def serial_sgs(
    order: np.ndarray,
    duration: np.ndarray,
    demand: np.ndarray,
    running_remaining: np.ndarray,
    running_demand: np.ndarray,
    capacity: np.ndarray,
) -> np.ndarray:
    """Serial schedule generation: each job in ``order`` at the earliest time the pool has room for it (integer
    durations and amounts; every job must fit the empty pool). Returns the start of each job (indexed like
    ``duration``), -1 for jobs not in ``order``.

    The pool is a step function: ``times[k]`` the breakpoints (0 first), ``usage[k]`` the amounts used on
    [times[k], times[k+1]); the last step is empty. A job's earliest start is always a breakpoint.
    """
    times = np.unique(np.concatenate(([0], running_remaining))).astype(np.int64)
    usage = ((running_remaining[None, :] > times[:, None]).astype(np.int64) @ running_demand).reshape(
        times.size, capacity.size
    )
    starts = np.full(duration.size, -1, dtype=np.int64)
    for j in order:
        d, dem = int(duration[j]), demand[j]
        ok = (usage + dem <= capacity).all(axis=1)
        bad = np.where(ok, np.iinfo(np.int64).max, times)
        next_bad = np.append(np.minimum.accumulate(bad[::-1])[::-1][1:], np.iinfo(np.int64).max)
        k = int(np.argmax(ok & (next_bad >= times + d)))
        t = int(times[k])
        starts[j] = t
        end = t + d
        i = int(np.searchsorted(times, end))
        if i == times.size or times[i] != end:
            times = np.insert(times, i, end)
            usage = np.insert(usage, i, usage[i - 1], axis=0)
        usage[k:i] += dem
    return starts


#: The least wall-clock time the hint check is given. The check (every variable fixed) ends in a few ms and stops
#: as soon as it has its answer, so the floor costs nothing; without it a 1 ms search limit made the check's answer
#: depend on the machine's load (it timed out at a load of 2.5 on 2 cores, and the limit was doubled again).
HINT_CHECK_FLOOR_S = 0.25


def _hint_is_a_solution(model, cp_model, time_limit: float) -> bool:
    """Solve ``model`` with every variable fixed to its (complete) hint: True when CP-SAT accepts the hint as a
    solution, False when it could not tell within ``time_limit`` (at least :data:`HINT_CHECK_FLOOR_S`); raise if
    it rejects it (a bug)."""
    check = cp_model.CpSolver()
    check.parameters.num_workers = 1
    check.parameters.max_time_in_seconds = max(time_limit, HINT_CHECK_FLOOR_S)
    check.parameters.fix_variables_to_their_hinted_value = True
    status = check.solve(model)
    if status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
        raise RuntimeError(f"CPH greedy plan rejected by CP-SAT ({check.status_name(status)}): a bug")
    return status in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def _gcd_scale(values: list[np.ndarray], cap: int) -> int:
    """Largest integer dividing the capacity and every amount of one resource (exact rescaling)."""
    g = reduce(math.gcd, (int(v) for arr in values for v in np.unique(arr)), cap)
    return max(g, 1)


def cph_plan(
    now: float,
    queued: np.ndarray,
    expected_duration: np.ndarray,
    demand: np.ndarray,
    ewt: np.ndarray,
    running_remaining: np.ndarray,
    running_demand: np.ndarray,
    capacity: np.ndarray,
    options: CPHOptions = CPHOptions(),
) -> CPHPlan:
    """Plan the queue on the relaxed pools; ``start_now`` (PRB order) are the jobs to hand to the allocation stage.

    ``queued``/``expected_duration``/``ewt`` per queued job (s), ``demand`` jobs × R (totals over the chunks),
    ``running_remaining`` (expected, s) and ``running_demand`` (running × R) of the running jobs, ``capacity`` the
    R system totals. A job whose demand exceeds the capacity of some resource can never run (the dispatcher will
    never start it either): it is left out of the model before the ``max_jobs`` cap, so it does not take a slot,
    and it is returned postponed (start -1) like the jobs beyond the cap. The objective covers the modelled jobs.
    """
    t0 = time.perf_counter()
    queued = np.asarray(queued, dtype=float)
    n = queued.size
    capacity = np.floor(np.asarray(capacity, dtype=float)).astype(np.int64)
    n_res = capacity.size
    demand = np.asarray(demand, dtype=float).reshape(n, n_res)
    running_demand = np.ceil(np.asarray(running_demand, dtype=float).reshape(-1, n_res)).astype(np.int64)
    running_remaining = np.maximum(np.ceil(np.asarray(running_remaining, dtype=float)), 1).astype(np.int64)
    if (running_demand.sum(axis=0) > capacity).any():
        raise ValueError("the running jobs use more than the capacity")
    starts = np.full(n, -1, dtype=np.int64)
    empty = np.empty(0, dtype=np.int64)
    if n == 0:
        return CPHPlan(empty, starts, 0.0, "empty", time.perf_counter() - t0, 0)
    duration = np.maximum(np.ceil(np.asarray(expected_duration, dtype=float)), 1).astype(np.int64)
    dem = np.ceil(demand).astype(np.int64)
    weight = cph_weights(np.asarray(ewt, dtype=float), options.weights)
    order = prb_order(now, queued, ewt, expected_duration, demand)
    possible = (dem <= capacity).all(axis=1)
    model_jobs = order[possible[order]][: options.max_jobs]  # PRB order
    m = model_jobs.size
    if m == 0:
        return CPHPlan(empty, starts, 0.0, "empty", time.perf_counter() - t0, 0)

    d, q, w = duration[model_jobs], dem[model_jobs], weight[model_jobs]
    constant = float(np.sum(w * (now - queued[model_jobs])))
    pos = np.arange(m)
    greedy = serial_sgs(pos, d, q, running_remaining, running_demand, capacity)

    def plan(local_starts: np.ndarray, status: str, found: bool | None = None) -> CPHPlan:
        out = starts.copy()
        out[model_jobs] = local_starts
        now_jobs = model_jobs[local_starts == 0]
        objective = float(np.sum(w * local_starts)) + constant
        return CPHPlan(now_jobs, out, objective, status, time.perf_counter() - t0, m, found)

    free0 = capacity - running_demand.sum(axis=0)
    if not (q <= free0).all(axis=1).any():
        return plan(greedy, "skipped")
    if (greedy == 0).all():  # lower bound attained: every start is 0
        return plan(greedy, "optimal")
    local, status, found = _solve(d, q, w, greedy, running_remaining, running_demand, capacity, options)
    return plan(local, status, found)


def _solve(
    d: np.ndarray,
    q: np.ndarray,
    w: np.ndarray,
    greedy: np.ndarray,
    running_remaining: np.ndarray,
    running_demand: np.ndarray,
    capacity: np.ndarray,
    options: CPHOptions,
) -> tuple[np.ndarray, str, bool]:
    """The CP-SAT model over the modelled jobs (PRB order), warm-started from the greedy plan; returns the plan,
    its status and whether the search found a solution of its own."""
    from ortools.sat.python import cp_model  # heavy (OR-Tools), only when CPH runs

    m = d.size
    horizon = int(running_remaining.sum() + d.sum())
    g = reduce(math.gcd, (int(x) for x in np.unique(w)))
    wg = w // g
    if int(wg.sum()) * horizon >= _INT_LIMIT:
        raise ValueError("objective too large for CP-SAT (weights × horizon overflow)")
    model = cp_model.CpModel()
    s = [model.new_int_var(0, horizon, f"s{i}") for i in range(m)]
    iv = [model.new_fixed_size_interval_var(s[i], int(d[i]), f"j{i}") for i in range(m)]
    run_iv = [model.new_fixed_size_interval_var(0, int(r), f"r{k}") for k, r in enumerate(running_remaining)]
    for r in range(capacity.size):
        jobs_r = np.flatnonzero(q[:, r] > 0)
        if jobs_r.size == 0 or running_demand[:, r].sum() + q[jobs_r, r].sum() <= capacity[r]:
            continue  # this pool can never be short
        run_r = np.flatnonzero(running_demand[:, r] > 0)
        scale = _gcd_scale([q[jobs_r, r], running_demand[run_r, r]], int(capacity[r]))
        model.add_cumulative(
            [iv[i] for i in jobs_r] + [run_iv[k] for k in run_r],
            [int(q[i, r]) // scale for i in jobs_r] + [int(running_demand[k, r]) // scale for k in run_r],
            int(capacity[r]) // scale,
        )
    # identical jobs are interchangeable: keep them in PRB order (removes symmetric plans)
    last: dict[tuple, int] = {}
    for i in range(m):
        key = (int(d[i]), int(wg[i]), *q[i].tolist())
        if key in last:
            model.add(s[last[key]] <= s[i])
        last[key] = i
    model.minimize(sum(int(wg[i]) * s[i] for i in range(m)))
    for i in range(m):
        model.add_hint(s[i], int(greedy[i]))
    model.add_decision_strategy(s, cp_model.CHOOSE_LOWEST_MIN, cp_model.SELECT_MIN_VALUE)

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = options.workers
    solver.parameters.random_seed = options.seed
    if options.workers == 1:  # follow the strategy above (with more workers, CP-SAT's "fixed" subsolver does)
        solver.parameters.search_branching = cp_model.SatParameters.FIXED_SEARCH
    if options.deterministic_time is not None:
        limits = [options.max_time_s]  # wall-clock only as a safety net
        solver.parameters.max_deterministic_time = options.deterministic_time
    elif options.time_limit_s is None:
        limits = [options.max_time_s]
    else:
        limits = [min(options.time_limit_s, options.max_time_s)]
        while limits[-1] < options.max_time_s:
            limits.append(min(2 * limits[-1], options.max_time_s))
    if options.deterministic_time is None and _hint_is_a_solution(model, cp_model, limits[0]):
        # The greedy plan is CP-SAT's first solution: solved with every variable fixed to its hint (a check that
        # the plan satisfies the model, a few ms). So no pass ends without a solution and the limit is no longer
        # doubled (issue 18: at 1 s, 2 of 9 passes had ended with none and doubled); only if that check cannot
        # finish is the limit doubled as before. The deterministic budget keeps its single solve and its plans.
        limits = limits[:1]
    for limit in limits:
        solver.parameters.max_time_in_seconds = limit
        status = solver.solve(model)
        if status != cp_model.UNKNOWN:
            break
    if status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
        raise RuntimeError(f"CPH model is {solver.status_name(status)} (the greedy plan is feasible: a bug)")
    if status == cp_model.UNKNOWN:
        return greedy, "greedy", False
    local = np.array([solver.value(x) for x in s], dtype=np.int64)
    if status == cp_model.OPTIMAL:
        return local, "optimal", True
    if int(np.sum(wg * local)) >= int(np.sum(wg * greedy)):
        return greedy, "greedy", True
    return local, "feasible", True
