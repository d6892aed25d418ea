"""Policies written in Python run on the compiled loop with the built-ins' exact semantics."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given

from test_engine_properties import MACHINE, PROFILE, workloads
from wattsched.core.policy import JobAttributes, View
from wattsched.engine.simulate import SimulationError, simulate


class PyFcfs:
    name = "py-fcfs"

    def schedule(self, view: View) -> list[int]:
        free, chosen = view.free, []
        for pos in view.queue:
            if view.jobs.size[pos] > free:
                break
            chosen.append(int(pos))
            free -= view.jobs.size[pos]
        return chosen


class PyEasy:
    """EASY as docs/semantics.md §3.1 states it, written only against the view."""

    name = "py-easy"

    def schedule(self, view: View) -> list[int]:
        jobs, now, free = view.jobs, view.now, view.free
        queue = list(view.queue)
        chosen, ends = [], []
        i = 0
        while i < len(queue) and jobs.size[queue[i]] <= free:
            pos = queue[i]
            chosen.append(int(pos))
            free -= jobs.size[pos]
            ends.append((now + jobs.estimate[pos], jobs.size[pos]))
            i += 1
        if i == len(queue):
            return chosen
        head = queue[i]
        for pos, end, start in zip(view.running, view.running_expected_end, view.running_start, strict=True):
            ends.append((end if end > now else start + jobs.walltime[pos], jobs.size[pos]))
        avail, shadow = free, math.inf
        for end, size in sorted(ends):
            if shadow < math.inf and end > shadow:
                break
            avail += size
            if shadow == math.inf and avail >= jobs.size[head]:
                shadow = end
        extra = avail - jobs.size[head]
        for pos in queue[i + 1 :]:
            if free == 0:
                break
            size = jobs.size[pos]
            if size > free:
                continue
            in_time = now + jobs.estimate[pos] <= shadow
            if in_time or size <= extra:
                chosen.append(int(pos))
                free -= size
                if not in_time:
                    extra -= size
        return chosen


def starts(jobs: pl.DataFrame, policy, **kw) -> list[float]:
    return simulate(jobs, policy, MACHINE, **kw).schedule.sort("job_id")["start_time"].to_list()


@PROFILE
@given(workloads(with_estimates=True))
def test_python_policies_reproduce_the_builtins(jobs: pl.DataFrame) -> None:
    assert starts(jobs, PyFcfs()) == starts(jobs, "fcfs")
    assert starts(jobs, PyEasy()) == starts(jobs, "easy")
    assert starts(jobs, PyEasy(), runtime_estimate="pred") == starts(jobs, "easy", runtime_estimate="pred")


def test_view_is_read_only_and_holds_no_true_runtime() -> None:
    names = {f.name for f in dataclasses.fields(JobAttributes)} | {f.name for f in dataclasses.fields(View)}
    assert not any("runtime" in n for n in names)
    seen: list[View] = []

    class Spy(PyFcfs):
        def schedule(self, view: View) -> list[int]:
            seen.append(view)
            return super().schedule(view)

    jobs = pl.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 0.0], "size": [8, 8], "walltime": [10.0, 10.0], "runtime": [3.0, 3.0]}
    )
    simulate(jobs, Spy(), MACHINE)
    with pytest.raises(ValueError):
        seen[0].jobs.size[0] = 1
    with pytest.raises(ValueError):
        seen[0].queue[0] = 1
    # the second pass happens at t=3, when job 1 ended early; the policy learns it from `finished`
    assert seen[1].now == 3.0 and seen[1].finished.tolist() == [0]
    assert seen[0].running.tolist() == [] and seen[1].queue.tolist() == [1]


def test_illegal_decisions_are_refused_with_the_job_id() -> None:
    jobs = pl.DataFrame(
        {
            "job_id": [10, 20],
            "submit_time": [0.0, 1.0],
            "size": [6, 6],
            "walltime": [10.0, 10.0],
            "runtime": [10.0, 10.0],
        }
    )

    class Greedy:
        name = "greedy"

        def schedule(self, view: View) -> list[int]:
            return list(view.queue)

    with pytest.raises(SimulationError, match="start job 20, refused: the job does not fit"):
        simulate(jobs, Greedy(), MACHINE)

    class Twice:
        name = "twice"

        def schedule(self, view: View) -> list[int]:
            return [0, 0] if 0 in view.queue else []

    with pytest.raises(SimulationError, match="start job 10, refused: the job is not in the queue"):
        simulate(jobs, Twice(), MACHINE)


def test_a_policy_that_starts_nothing_is_reported() -> None:
    class Idle:
        name = "idle"

        def schedule(self, view: View) -> list[int]:
            return []

    jobs = pl.DataFrame({"job_id": [1], "submit_time": [0.0], "size": [1], "walltime": [1.0], "runtime": [1.0]})
    with pytest.raises(SimulationError, match="left 1 job"):
        simulate(jobs, Idle(), MACHINE)


def test_not_a_policy() -> None:
    with pytest.raises(SimulationError, match="schedule"):
        simulate(
            pl.DataFrame({"job_id": [1], "submit_time": [0.0], "size": [1], "walltime": [1.0], "runtime": [1.0]}),
            object(),
            MACHINE,
        )


def test_progress_with_a_python_policy() -> None:
    rng = np.random.default_rng(0)
    n = 300
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit_time": np.sort(rng.uniform(0, 1000, n)),
            "size": rng.integers(1, MACHINE + 1, n),
            "walltime": rng.uniform(1, 50, n),
            "runtime": rng.uniform(0, 50, n),
        }
    )
    calls: list[int] = []
    a = simulate(jobs, PyEasy(), MACHINE, progress=lambda d, t: calls.append(d), chunks=10).schedule
    assert a.equals(simulate(jobs, "easy", MACHINE).schedule.with_columns(a["first_reservation"]))
    assert calls[-1] == n and len(calls) >= 10
