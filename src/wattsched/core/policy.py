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
