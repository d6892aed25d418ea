"""Policies written in Python on the compiled loop: the pass the kernel hands over, its view and its decisions.

The kernel calls a Python policy from *inside* its loop (``engine/kernel.py``, a numba ``objmode`` block calling
:func:`external_pass`) instead of returning to Python at every pass: re-entering the kernel cost 8 µs a pass in
numba's dispatch and argument unboxing alone (39 arrays), the call from the loop about 4 µs (issue 32, item 3).
``simulate`` makes a :class:`PythonPass` for the run and :func:`handing_passes_to` makes it the one
:func:`external_pass` calls (a stack per thread, so a policy may itself run a simulation).

What a pass costs besides the policy's own work is kept to the copies a view snapshots (made by the kernel into
two fresh arrays, ``engine.kernel._python_pass``) and a check of the returned positions in O(decisions): the check
against the whole queue (``np.isin``) had cost more than the policy itself (issue 32). Positions that fail the
quick check (another type, not queued) go through :func:`decisions`, which accepts or explains them as before.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import polars as pl

from wattsched.core.policy import JobAttributes, Policy, View, live_read_only, read_only
from wattsched.engine.kernel_state import ST_DECISIONS, ST_FINISHED, ST_FREE, ST_QLEN, ST_RUNNING, KernelState


class SimulationError(RuntimeError):
    """A policy made an illegal decision, or the inputs cannot be simulated."""


_POSITIONS_HINT = (
    "schedule(view) returns the positions of the jobs to start, taken from view.queue (view.jobs.job_id[pos] is a "
    "position's job id), [] to start none"
)


def job_attributes(
    jobs: pl.DataFrame,
    submit: np.ndarray,
    size: np.ndarray,
    walltime: np.ndarray,
    estimate: np.ndarray,
    est_m: np.ndarray,
    est_max: np.ndarray,
    est_s: np.ndarray,
) -> JobAttributes:
    """The declared attributes every view shares (built once a run: the arrays never change, or are live views)."""
    user = jobs["user_id"].fill_null(-1).to_numpy() if "user_id" in jobs.columns else np.full(jobs.height, -1)
    return JobAttributes(
        job_id=read_only(jobs["job_id"].to_numpy()),
        user_id=read_only(user),
        submit_time=read_only(submit),
        size=read_only(size),
        walltime=read_only(walltime),
        # views, not copies: an online predictor writes these at each submission, after this is built
        estimate=live_read_only(estimate),
        est_dyn_mean=live_read_only(est_m),
        est_dyn_max=live_read_only(est_max),
        est_dyn_std=live_read_only(est_s),
    )


def _view(**fields: object) -> View:
    """A :class:`View` without the frozen dataclass's ``__init__`` (one ``object.__setattr__`` a field: 5 µs of a
    pass, as much as the rest of the hand-off); tests check it equals ``View(**fields)``."""
    view = View.__new__(View)
    view.__dict__.update(fields)
    return view


class PythonPass:
    """One run's hand-off to a Python policy: builds the view of a pass, calls ``schedule`` and writes the checked
    positions to ``state.out``, where the kernel validates and applies them as it does a built-in policy's."""

    def __init__(
        self,
        policy: Policy,
        state: KernelState,
        jobs: JobAttributes,
        machine_size: int,
        name: str,
        cap_t: np.ndarray,
        cap_v: np.ndarray,
    ) -> None:
        self.schedule = policy.schedule
        self.state = state
        self.jobs = jobs
        self.machine_size = machine_size
        self.name = name
        self.n = state.out.size
        self.cap_t = cap_t.tolist()
        self.cap_v = cap_v.tolist()

    def __call__(
        self,
        now: float,
        free: int,
        qlen: int,
        rc: int,
        ints: np.ndarray,
        times: np.ndarray,
        power_sums: tuple[float, float, float],
    ) -> int:
        """The pass at ``now`` with ``qlen`` jobs queued and ``rc`` running; ``ints`` holds the positions queued,
        running and finished since the previous pass, ``times`` the running jobs' expected ends and starts (fresh
        arrays the kernel filled: the view's snapshots). Returns the number of decisions written to ``state.out``."""
        state = self.state
        ints.setflags(write=False)
        times.setflags(write=False)
        cap = float("inf")
        if self.cap_t:
            i = bisect.bisect_right(self.cap_t, now)  # the breakpoint in force (policies.queue_policies.cap_at)
            cap = self.cap_v[i - 1] if i > 0 else cap
        view = _view(
            now=now,
            free=free,
            machine_size=self.machine_size,
            jobs=self.jobs,
            queue=ints[:qlen],
            running=ints[qlen : qlen + rc],
            running_expected_end=times[:rc],
            running_start=times[rc:],
            finished=ints[qlen + rc :],
            cap=cap,
            power_sums=power_sums,
        )
        returned = self.schedule(view)
        values = _fast_positions(returned, state.queued, self.n)
        if values is None:
            values = decisions(returned, view, self.name).tolist()
        k = len(values)
        if k > self.n:
            raise SimulationError(f"policy {self.name!r} returned {k} decisions for {self.n} jobs")
        if k:
            state.out[:k] = values
        return k

    def pending(self, now: float) -> None:
        """The pass of a run the kernel left at a pass (``ST_PENDING``: the knapsack's), the queue at its front."""
        state = self.state
        st = state.st
        qlen, rc, fc = int(st[ST_QLEN]), int(st[ST_RUNNING]), int(st[ST_FINISHED])
        running = state.run_job[:rc]
        ints = np.concatenate((state.queue[:qlen], running, state.finished[:fc]))
        times = np.concatenate((state.run_end[:rc], state.start[running]))
        sums = (float(state.sums[0]), float(state.sums[1]), float(state.sums[2]))
        st[ST_DECISIONS] = self(now, int(st[ST_FREE]), qlen, rc, ints, times, sums)


def _fast_positions(returned: object, queued: np.ndarray, n: int) -> list[int] | None:
    """The positions as a list of ints when ``returned`` is a list, tuple or 1-D integer array of queued
    positions (the common case, checked in O(decisions)); None for anything else, which :func:`decisions` then
    accepts or explains. A repeated position passes here: the kernel refuses its second start, as before."""
    if isinstance(returned, np.ndarray):
        if returned.ndim != 1 or returned.dtype.kind not in "iu":
            return None
        values = returned.tolist()
    elif type(returned) is list or type(returned) is tuple:
        values = list(returned)
    else:
        return None
    for x in values:
        # positions taken from view.queue are numpy int64; any other type (bool, float…) gets the full check
        if (type(x) is not int and type(x) is not np.int64) or not 0 <= x < n or not queued[x]:
            return None
    return values


def decisions(returned: object, view: View, name: str) -> np.ndarray:
    """A Python policy's decisions as positions, or a SimulationError saying what was returned and what is
    expected: None, non-integers, and values that are no queued position (job ids, typically) are refused here, with
    the hint, rather than failing as a TypeError or as a job the kernel cannot find."""
    if returned is None:
        raise SimulationError(f"policy {name!r} returned None at t = {view.now:g}; {_POSITIONS_HINT}")
    try:
        values = list(returned)  # type: ignore[call-overload]
        positions = np.asarray(values, dtype=np.int64)
        exact = len(values) == 0 or np.array_equal(positions, np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError, OverflowError):
        exact = False
    if not exact or positions.ndim != 1:
        raise SimulationError(
            f"policy {name!r} returned {_preview(returned)} at t = {view.now:g}, not a list of integer positions; "
            + _POSITIONS_HINT
        )
    unknown = positions[~np.isin(positions, view.queue)]
    if unknown.size:
        ids = view.jobs.job_id
        looks_like_ids = bool(np.isin(unknown, ids[view.queue]).all()) if view.queue.size else False
        raise SimulationError(
            f"policy {name!r} returned {int(unknown[0])}, which is not a position in view.queue at t = {view.now:g}"
            + (" (it is a queued job's id)" if looks_like_ids else "")
            + f"; {_POSITIONS_HINT}"
        )
    return positions


def _preview(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_local = threading.local()


@contextmanager
def handing_passes_to(handler: PythonPass | None) -> Iterator[None]:
    """Within the block, the kernel's Python passes go to ``handler`` (nothing changes for ``None``)."""
    if handler is None:
        yield
        return
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(handler)
    try:
        yield
    finally:
        stack.pop()


def external_pass(
    now: float,
    free: int,
    qlen: int,
    rc: int,
    ints: np.ndarray,
    times: np.ndarray,
    power_sums: tuple[float, float, float],
) -> int:
    """What the kernel calls at a Python policy's pass (from an ``objmode`` block: a module-level function, so
    that numba's cache can refer to it by name); the run's :class:`PythonPass` does the work. The lookup is tried
    rather than checked first: it runs at every pass, and an error from the policy itself is raised again as is."""
    try:
        return _local.stack[-1](now, free, qlen, rc, ints, times, power_sums)
    except (AttributeError, IndexError):
        if getattr(_local, "stack", None):
            raise
        raise SimulationError("a Python policy's pass outside simulate(): no policy to hand it to") from None
