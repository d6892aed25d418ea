"""Exact knapsack for the power window (docs/semantics.md §3.4, the ``-exact`` variants), on OR-Tools CP-SAT.

At each pass in the window, choose the queued jobs to start now that maximise the total profit (wait, or
stretch (wait + p̃)/p̃) subject to the free units and the power check against the running jobs' estimates —
the 0/1 problem that paper 000's Algorithm 2 solves greedily. The Gaussian check μ + k·σ < P̄ is its exact
quadratic form: with slack = P̄ − μ ≥ 1, slack² > k²·σ², σ² linear in the choices (x binary).

The objective is lexicographic — total profit, then the number of jobs started — so that jobs with no profit
yet (just submitted) still start when they fit. Integer model, rounded conservatively (a solution never breaks
the real check): estimates rounded up, the cap down, k² rounded up at 1/100. Budgeted: ``time_limit``
seconds and an optional deterministic ``work_limit``, one worker and a fixed seed (reproducible with
``work_limit``); warm-started from the greedy choice (the same order and rule as Algorithm 2), which is also
the answer if the solver finds nothing better in time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from wattsched.core.policy import PolicyBase, View
from wattsched.policies.powercheck import PowerCheck

_K2_SCALE = 100  # k² is used as ceil(k²·100)/100


@dataclass
class SolverStats:
    """Per-pass cost and outcome of the exact knapsack (for benchmarks and reports)."""

    passes: int = 0
    seconds: list[float] = field(default_factory=list)
    optimal: int = 0
    feasible: int = 0
    greedy_fallback: int = 0
    improved_on_greedy: int = 0
    #: Solver calls whose search ended with no solution of its own (the greedy choice, a complete hint, is the
    #: answer then): counted apart so the benchmark can show no pass ends without a plan (issue 18).
    search_without_solution: int = 0
    solver_calls: int = 0
    #: Of those, calls where CP-SAT then took the greedy hint as its solution (every variable fixed to its hint),
    #: and calls ending with no CP-SAT solution at all (the greedy breaks the rounded model; still the answer).
    hint_solution: int = 0
    no_solution: int = 0
    #: Of ``no_solution``: CP-SAT proved the greedy choice breaks the rounded integer model (estimates rounded up,
    #: the cap down), though it passes the real check.
    hint_breaks_rounding: int = 0

    def summary(self) -> dict[str, float | int]:
        s = np.asarray(self.seconds) if self.seconds else np.zeros(1)
        return {
            "passes": self.passes,
            "mean_s": float(s.mean()),
            "max_s": float(s.max()),
            "p95_s": float(np.percentile(s, 95)),
            "optimal": self.optimal,
            "feasible": self.feasible,
            "greedy_fallback": self.greedy_fallback,
            "improved_on_greedy": self.improved_on_greedy,
            "search_without_solution": self.search_without_solution,
            "solver_calls": self.solver_calls,
            "hint_solution": self.hint_solution,
            "no_solution": self.no_solution,
            "hint_breaks_rounding": self.hint_breaks_rounding,
        }


class CpSatKnapsack(PolicyBase):
    """The exact knapsack as a Python policy: ``schedule(view)`` returns the jobs to start now; ``summary()``
    gives its solver statistics (:class:`SolverStats`)."""

    def __init__(
        self,
        profit: str,
        check: PowerCheck,
        *,
        time_limit: float = 1.0,
        work_limit: float | None = None,
        max_jobs: int | None = None,
        seed: int = 0,
    ) -> None:
        if profit not in ("wait", "stretch"):
            raise ValueError(f"profit must be 'wait' or 'stretch', got {profit!r}")
        self.name = f"knapsack-exact-{profit}"
        self.profit = profit
        self.check = check
        self.time_limit = time_limit
        self.work_limit = work_limit
        self.max_jobs = max_jobs
        self.seed = seed
        self.stats = SolverStats()

    def summary(self) -> dict[str, float | int]:
        """The solver statistics of the run, for ``SimulationResult.policy_stats``."""
        return self.stats.summary()

    # -- the pieces of Algorithm 2 ------------------------------------------------------------------------
    def _profits(self, view: View, queue: np.ndarray) -> np.ndarray:
        wait = view.now - view.jobs.submit_time[queue]
        if self.profit == "wait":
            return wait
        p = np.maximum(view.jobs.estimate[queue], 1.0)
        return (wait + p) / p

    def _weights(self, view: View, queue: np.ndarray) -> np.ndarray:
        return self.check.rule.weight(view.jobs.est_dyn_mean[queue], view.jobs.est_dyn_max[queue])

    def _fits(self, view: View, sums: list[float], j: int) -> bool:
        jobs = view.jobs
        return self.check.rule.fits(sums, jobs.est_dyn_mean[j], jobs.est_dyn_max[j], jobs.est_dyn_std[j], view.cap)

    def greedy(self, view: View) -> list[int]:
        """Algorithm 2: descending profit/weight, stop at the first job that does not fit (or skip it)."""
        queue = np.asarray(view.queue)
        order = queue[np.argsort(-self._profits(view, queue) / self._weights(view, queue), kind="stable")]
        free, sums, chosen = view.free, list(view.power_sums), []
        for j in order:
            j = int(j)
            if view.jobs.size[j] <= free and self._fits(view, sums, j):
                chosen.append(j)
                free -= int(view.jobs.size[j])
                sums[0] += view.jobs.est_dyn_mean[j]
                sums[1] += view.jobs.est_dyn_max[j]
                sums[2] += view.jobs.est_dyn_std[j] ** 2
            elif self.check.knapsack == "stop":
                break
        return chosen

    # -- the exact model ----------------------------------------------------------------------------------
    def schedule(self, view: View) -> list[int]:
        from ortools.sat.python import cp_model  # heavy (OR-Tools), only when this policy runs

        t0 = time.perf_counter()
        self.stats.passes += 1
        greedy = self.greedy(view)
        jobs = view.jobs
        queue = np.asarray(view.queue)
        # only jobs that fit alone can be chosen; the best profits first when the model is capped in size
        alone = [int(j) for j in queue if jobs.size[j] <= view.free and self._fits(view, list(view.power_sums), int(j))]
        if not alone:
            self.stats.seconds.append(time.perf_counter() - t0)
            return greedy
        cand = np.asarray(alone)
        profit = self._profits(view, cand)
        if self.max_jobs is not None and cand.size > self.max_jobs:
            keep = np.argsort(-profit, kind="stable")[: self.max_jobs]
            keep = np.union1d(keep, np.flatnonzero(np.isin(cand, greedy)))
            cand, profit = cand[keep], profit[keep]
        scale = 1.0 if self.profit == "wait" else 1000.0
        gain = np.maximum(np.round(profit * scale), 0).astype(np.int64)
        # lexicographic: the profit first, then as many jobs as possible (a zero-profit job still starts)
        gain = gain * (cand.size + 1) + 1
        model = cp_model.CpModel()
        x = [model.new_bool_var(f"x{j}") for j in cand]
        model.add(sum(int(jobs.size[j]) * xi for j, xi in zip(cand, x, strict=True)) <= int(view.free))
        self._power_constraint(model, view, cand, x)
        model.maximize(sum(int(g) * xi for g, xi in zip(gain, x, strict=True)))
        chosen_greedy = set(greedy)
        for j, xi in zip(cand, x, strict=True):
            model.add_hint(xi, int(j) in chosen_greedy)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = self.seed
        solver.parameters.max_time_in_seconds = self.time_limit
        if self.work_limit is not None:
            solver.parameters.max_deterministic_time = self.work_limit
        status = solver.solve(model)
        self.stats.seconds.append(time.perf_counter() - t0)
        self.stats.solver_calls += 1
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            # the greedy choice as CP-SAT's solution: the model solved with every variable fixed to its hint
            self.stats.greedy_fallback += 1
            self.stats.search_without_solution += 1
            check = cp_model.CpSolver()
            check.parameters.num_workers = 1
            check.parameters.max_time_in_seconds = 1.0  # all fixed: milliseconds; a safety net only
            check.parameters.fix_variables_to_their_hinted_value = True
            checked = check.solve(model)
            if checked in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                self.stats.hint_solution += 1
            else:
                self.stats.no_solution += 1
                self.stats.hint_breaks_rounding += checked == cp_model.INFEASIBLE
            self.stats.seconds[-1] = time.perf_counter() - t0
            return greedy
        self.stats.optimal += status == cp_model.OPTIMAL
        self.stats.feasible += status == cp_model.FEASIBLE
        chosen = [int(j) for j, xi in zip(cand, x, strict=True) if solver.value(xi)]
        greedy_gain = sum(int(g) for j, g in zip(cand, gain, strict=True) if int(j) in chosen_greedy)
        if solver.objective_value < greedy_gain:  # cannot happen with the hint, but never do worse
            self.stats.greedy_fallback += 1
            return greedy
        self.stats.improved_on_greedy += solver.objective_value > greedy_gain
        return chosen

    def _power_constraint(self, model, view: View, cand: np.ndarray, x: list) -> None:
        """The check's rule in integers (``CheckRule``: a·Σm + b·ΣM + k·σ against the cap), rounded so that a
        solution never breaks the real rule: each job's linear term rounded up, the room down."""
        rule, cap = self.check.rule, view.cap
        if not rule.active or math.isinf(cap):
            return
        jobs = view.jobs
        running = rule.level(view.power_sums[0], view.power_sums[1], 0.0)  # the linear part of the running jobs
        linear = [math.ceil(rule.level(float(jobs.est_dyn_mean[j]), float(jobs.est_dyn_max[j]), 0.0)) for j in cand]
        if rule.k == 0.0:
            # a·Σ + b·Σ ≤ P̄ (or < P̄ when strict: one watt less in integers)
            room = math.ceil(cap - running) - 1 if rule.strict else math.floor(cap - running)
            model.add(sum(w * xi for w, xi in zip(linear, x, strict=True)) <= room)
            return
        # with a σ term: slack = P̄ − linear ≥ 1 (0 if not strict) and slack² · 100 ≥ ceil(k²·100) · σ² (+ 1 strict)
        room = math.floor(cap - running)
        low = 1 if rule.strict else 0
        slack = model.new_int_var(low, max(room, low), "slack")
        model.add(slack == room - sum(w * xi for w, xi in zip(linear, x, strict=True)))
        square = model.new_int_var(low, max(room, low) ** 2, "square")
        model.add_multiplication_equality(square, [slack, slack])
        k2 = math.ceil(rule.k**2 * _K2_SCALE)
        var_running = math.ceil(view.power_sums[2])
        var_terms = [math.ceil(jobs.est_dyn_std[j] ** 2) for j in cand]
        model.add(
            _K2_SCALE * square
            >= k2 * (var_running + sum(v * xi for v, xi in zip(var_terms, x, strict=True))) + int(rule.strict)
        )
