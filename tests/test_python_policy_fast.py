"""The Python-policy hand-off from inside the compiled loop (engine/python_pass.py, issue 32 item 3) gives the
schedules of the built-ins, with the view and the decisions exactly as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given

from conftest import require_data
from test_engine_properties import MACHINE, PROFILE, workloads
from test_python_policy import PyEasy, PyFcfs
from wattsched.core.policy import View
from wattsched.engine.python_pass import _view
from wattsched.engine.simulate import SimulationError, simulate
from wattsched.policies.loader import load_policy
from wattsched.workload.load import load_workload

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def EasyLists():
    return load_policy(f"{EXAMPLES / 'easy_lists.py'}:EasyLists")


def StrictFcfs():
    return load_policy(f"{EXAMPLES / 'strict_fcfs.py'}:StrictFcfs")


def _compare(a: pl.DataFrame, b: pl.DataFrame) -> None:
    # first_reservation is the built-ins' bookkeeping; a Python policy reports none
    assert a.drop("first_reservation").equals(b.drop("first_reservation"))


@pytest.fixture(scope="module")
def kth_slice():
    read = load_workload(require_data("swf/KTH-SP2/log.swf"))
    return read.jobs.head(4000), read.provenance.machine_size


@pytest.mark.parametrize(
    ("policy", "builtin"),
    [(PyEasy, "easy"), (EasyLists, "easy"), (PyFcfs, "fcfs"), (StrictFcfs, "fcfs")],
)
def test_python_policies_give_the_builtins_schedule_on_a_real_trace(kth_slice, policy, builtin) -> None:
    jobs, size = kth_slice
    python = simulate(jobs, policy(), size)
    compiled = simulate(jobs, builtin, size)
    _compare(python.schedule, compiled.schedule)
    assert python.passes == compiled.passes


@PROFILE
@given(workloads(with_estimates=True))
def test_the_list_idiom_easy_reproduces_easy(jobs: pl.DataFrame) -> None:
    a = simulate(jobs, EasyLists(), MACHINE).schedule
    _compare(a, simulate(jobs, "easy", MACHINE).schedule)
    b = simulate(jobs, EasyLists(), MACHINE, runtime_estimate="pred").schedule
    _compare(b, simulate(jobs, "easy", MACHINE, runtime_estimate="pred").schedule)


def test_the_fast_view_is_the_dataclass_view() -> None:
    fields = {f.name: i for i, f in enumerate(dataclasses.fields(View))}
    assert _view(**fields) == View(**fields)  # type: ignore[arg-type]
    assert vars(_view(**fields)).keys() == fields.keys()


@pytest.mark.parametrize(
    "convert",
    [list, tuple, lambda c: np.array(c, dtype=np.int64), lambda c: [np.int64(x) for x in c], lambda c: iter(c)],
)
def test_every_accepted_return_type_gives_the_same_schedule(kth_slice, convert) -> None:
    class Returns(PyFcfs):
        def schedule(self, view: View):
            return convert(super().schedule(view))

    jobs, size = kth_slice
    _compare(simulate(jobs.head(500), Returns(), size).schedule, simulate(jobs.head(500), "fcfs", size).schedule)


def test_views_are_snapshots_and_read_only(kth_slice) -> None:
    seen: list[tuple[View, list, list, list, list, list]] = []

    class Keep(PyEasy):
        def schedule(self, view: View) -> list[int]:
            seen.append(
                (
                    view,
                    view.queue.tolist(),
                    view.running.tolist(),
                    view.running_expected_end.tolist(),
                    view.running_start.tolist(),
                    view.finished.tolist(),
                )
            )
            return super().schedule(view)

    jobs, size = kth_slice
    simulate(jobs.head(300), Keep(), size)
    for view, *copies in seen:  # what a kept view holds did not change after its pass
        arrays = (view.queue, view.running, view.running_expected_end, view.running_start, view.finished)
        assert [a.tolist() for a in arrays] == copies
        for a in arrays:
            with pytest.raises(ValueError):
                a[:1] = 0


def test_a_policy_may_run_a_simulation_in_its_pass() -> None:
    jobs = pl.DataFrame({"job_id": [1, 2], "submit_time": [0.0, 1.0], "size": [4, 4], "walltime": [5.0, 5.0]})
    jobs = jobs.with_columns(runtime=pl.col("walltime"))

    class Nested(PyFcfs):
        def schedule(self, view: View) -> list[int]:
            inner = simulate(jobs, PyFcfs(), MACHINE)  # a what-if run inside the pass
            assert inner.schedule.height == 2
            return super().schedule(view)

    _compare(simulate(jobs, Nested(), MACHINE).schedule, simulate(jobs, "fcfs", MACHINE).schedule)


def test_an_exception_in_the_policy_reaches_the_caller() -> None:
    class Broken(PyFcfs):
        def schedule(self, view: View) -> list[int]:
            raise KeyError("from the policy")

    jobs = pl.DataFrame({"job_id": [1], "submit_time": [0.0], "size": [1], "walltime": [1.0], "runtime": [1.0]})
    with pytest.raises(KeyError, match="from the policy"):
        simulate(jobs, Broken(), MACHINE)
    # and the next run is unaffected (the pass handler was popped)
    _compare(simulate(jobs, PyFcfs(), MACHINE).schedule, simulate(jobs, "fcfs", MACHINE).schedule)
    with pytest.raises(SimulationError, match="returned None"):

        class Nothing(PyFcfs):
            def schedule(self, view: View):  # type: ignore[override]
                return None

        simulate(jobs, Nothing(), MACHINE)
