"""Policies written in Python: the protocol and the read-only view they decide from.

A Python policy runs on the same compiled event loop as the built-in ones — same instants, same validation,
same information boundary — but the loop hands each pass to ``policy.schedule(view)``. The view carries what a
resource manager knows; there is no true runtime anywhere in it (``JobAttributes`` has no such field).

Jobs are referred to by *position*: their index in the workload sorted in queue order (submit time, job id).
``view.jobs.job_id[pos]`` gives the id. ``schedule`` returns the positions of the jobs to start now; the engine
starts them in that order and refuses, with an error, one that is not queued or does not fit.

Example — strict FCFS::

    class Fcfs:
        name = "my-fcfs"

        def schedule(self, view):
            free, chosen = view.free, []
            for pos in view.queue:
                if view.jobs.size[pos] > free:
                    break
                chosen.append(pos)
                free -= view.jobs.size[pos]
            return chosen

    simulate(jobs, Fcfs(), machine_size=128)

Optional members are declared with their defaults on :class:`PolicyBase` (inherit it to get them, or define
them yourself): ``summary()``, statistics of the run that ``SimulationResult.policy_stats`` reports (the exact
knapsack's solver times).

Compiled policies — a policy that also has ``schedule_into(view, out)`` (:class:`CompiledPolicy`, a static
method: a plain function of the view) is compiled by numba's nopython mode, with bounds checks, and called from
the compiled loop without returning to Python: 10-30× faster than ``schedule(view)`` (docs/performance.md). It
writes the positions to start into ``out`` and returns how many it wrote; the view has the same attributes, as
numbers and arrays (``view.power_sums`` a tuple). Inherit :class:`CompiledPolicyBase` to get a ``schedule(view)``
that runs the same function in plain Python (to debug it, or with a debugger's breakpoints)::

    class CompiledFcfs(CompiledPolicyBase):
        name = "my-compiled-fcfs"

        @staticmethod
        def schedule_into(view, out):
            free, k = view.free, 0
            for pos in view.queue:
                if view.jobs.size[pos] > free:
                    break
                out[k] = pos
                k += 1
                free -= view.jobs.size[pos]
            return k

The function sees only the view and what it closes over at compile time (module constants); it runs on its own
copies of the declared attributes and must not write into the arrays of estimates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class JobAttributes:
    """Declared attributes of every job of the workload, by position (read-only arrays)."""

    job_id: np.ndarray
    user_id: np.ndarray  # -1 where unknown
    submit_time: np.ndarray
    size: np.ndarray
    walltime: np.ndarray
    estimate: np.ndarray  # the runtime estimate the policy may use (walltime unless a predictor column is named)
    est_dyn_mean: np.ndarray  # job-level dynamic power estimates (W; zeros in power-free runs)
    est_dyn_max: np.ndarray
    est_dyn_std: np.ndarray


@dataclass(frozen=True)
class View:
    """What the policy knows at one pass. Arrays are read-only snapshots."""

    now: float
    free: int
    machine_size: int
    jobs: JobAttributes
    queue: np.ndarray  # positions of the queued jobs, in queue order
    running: np.ndarray  # positions of the running jobs, by ascending expected end
    running_expected_end: np.ndarray  # start + estimate, aligned with ``running``
    running_start: np.ndarray  # start times, aligned with ``running``
    finished: np.ndarray  # positions of the jobs that completed since the previous pass
    cap: float = float("inf")  # the dynamic power cap in force now (W)
    power_sums: tuple[float, float, float] = (0.0, 0.0, 0.0)  # Σ mean, Σ max, Σ σ² of the running jobs' estimates


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy in Python: ``schedule`` returns the positions of the jobs to start now.

    The required members; the optional ones and their defaults are on :class:`PolicyBase`."""

    name: str

    def schedule(self, view: View) -> Iterable[int]: ...


class PolicyBase(Policy):
    """A base class for Python policies that declares the optional members of :class:`Policy` with their
    defaults. Callers read them with :func:`wattsched.core.protocols.optional_member`, so a policy that does not
    inherit this class gets the same defaults."""

    def summary(self) -> dict[str, Any]:
        """Statistics of the run (counts, solver times), reported as ``SimulationResult.policy_stats``.
        Default: none."""
        return {}


@runtime_checkable
class CompiledPolicy(Protocol):
    """A policy whose pass is compiled: ``schedule_into(view, out)`` writes the positions of the jobs to start
    now into ``out`` (an int64 array as long as the workload) and returns how many it wrote. A static method, or
    any plain function of two arguments, that numba's nopython mode can compile (``engine/compiled_pass.py``)."""

    name: str

    @staticmethod
    def schedule_into(view: Any, out: np.ndarray) -> int: ...


class CompiledPolicyBase(PolicyBase):
    """A base class for compiled policies: ``schedule(view)`` runs the same ``schedule_into`` in plain Python,
    so the object is also an ordinary :class:`Policy` (for ``simulate(..., compiled=False)``, a debugger, or a
    test of the function itself)."""

    name: str
    _out: np.ndarray | None = None

    @staticmethod
    def schedule_into(view: Any, out: np.ndarray) -> int:
        """The pass: positions to start written into ``out``, their count returned. Override it."""
        raise NotImplementedError("a compiled policy defines schedule_into(view, out) as a static method")

    def schedule(self, view: View) -> Iterable[int]:
        """``schedule_into`` run in plain Python on the view."""
        n = view.jobs.size.shape[0]
        if self._out is None or self._out.shape[0] != n:
            self._out = np.empty(n, dtype=np.int64)
        k = int(self.schedule_into(view, self._out))
        return self._out[:k].tolist()


def is_compiled_policy(policy: object) -> bool:
    """Whether ``policy`` has a ``schedule_into`` of its own (not the base class's placeholder)."""
    function = getattr(type(policy), "schedule_into", None)
    return callable(function) and function is not CompiledPolicyBase.__dict__["schedule_into"].__func__


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only copy: a snapshot the engine may change afterwards without the policy seeing it."""
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


def live_read_only(a: np.ndarray) -> np.ndarray:
    """A read-only *view*: the policy cannot write through it, but sees what the engine writes later (the
    estimates an online predictor fills in at each submission)."""
    v = a.view()
    v.flags.writeable = False
    return v
