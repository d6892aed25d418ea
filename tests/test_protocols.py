"""Optional protocol members: declared with their defaults on a base class, read by one helper, so a user's
class that defines only the required members works, and one that defines an optional member is heard."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from test_multires import pool, starts, workload
from test_python_policy import PyFcfs
from wattsched.core.policy import Policy, PolicyBase, View
from wattsched.core.predictor import OnlinePredictor, PredictorBase
from wattsched.core.protocols import optional_member
from wattsched.engine.simulate import simulate
from wattsched.predict.online import predict_online
from wattsched.studies.multires.dispatchers import DispatcherBase, make_dispatcher
from wattsched.studies.multires.engine import simulate_multires

JOBS = pl.DataFrame(
    {
        "job_id": [1, 2, 3],
        "submit_time": [0.0, 1.0, 2.0],
        "size": [2, 2, 4],
        "walltime": [10.0, 10.0, 10.0],
        "runtime": [5.0, 3.0, 4.0],
    }
)


class CountingFcfs(PyFcfs):
    name = "counting-fcfs"

    def __init__(self) -> None:
        self.calls = 0

    def schedule(self, view: View) -> list[int]:
        self.calls += 1
        return super().schedule(view)

    def summary(self) -> dict[str, int]:
        return {"calls": self.calls}


class InheritingFcfs(PolicyBase):
    name = "inheriting-fcfs"

    def schedule(self, view: View) -> list[int]:
        return PyFcfs.schedule(self, view)


def test_policy_summary_is_optional() -> None:
    assert isinstance(PyFcfs(), Policy) and not hasattr(PyFcfs(), "summary")
    plain = simulate(JOBS, PyFcfs(), machine_size=4)
    assert plain.policy_stats == {}
    assert simulate(JOBS, InheritingFcfs(), machine_size=4).policy_stats == {}
    counting = simulate(JOBS, CountingFcfs(), machine_size=4)
    assert counting.policy_stats["calls"] > 0
    assert counting.schedule["start_time"].to_list() == plain.schedule["start_time"].to_list()


class BareDispatcher:
    """Only the required members: name, reset, dispatch (FIFO through the built-in one)."""

    name = "bare"

    def __init__(self) -> None:
        self.inner = make_dispatcher("fifo")

    def reset(self) -> None:
        self.inner.reset()

    def dispatch(self, view):
        return self.inner.dispatch(view)


def test_dispatcher_wake_at_and_summary_are_optional() -> None:
    jobs = workload([(1, 0, 10, 10, 1, 4, 0, 4), (2, 1, 5, 5, 1, 4, 0, 4), (3, 2, 5, 5, 1, 2, 0, 2)])
    machine = pool([[4, 0, 16]])
    bare = simulate_multires(jobs, machine, BareDispatcher())
    fifo = simulate_multires(jobs, machine, make_dispatcher("fifo"))
    assert starts(bare) == starts(fifo)
    assert not any(k.startswith("cp_") for k in bare.stats)
    assert optional_member(BareDispatcher(), DispatcherBase, "wake_at") is None
    assert optional_member(BareDispatcher(), DispatcherBase, "summary")() == {}


class MeanRuntime:
    """A predictor with only the required members: the mean runtime of the completed jobs (else the walltime)."""

    name = "mean"
    outputs = ("pred_runtime",)

    def bind(self, jobs: pl.DataFrame) -> None:
        self.runtime = jobs["runtime"].to_numpy()
        self.walltime = jobs["walltime"].to_numpy()
        self.seen: list[float] = []

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        self.seen += self.runtime[rows].tolist()

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        guess = np.mean(self.seen) if self.seen else np.nan
        return {"pred_runtime": np.where(np.isnan(guess), self.walltime[rows], guess)}


class SweptMeanRuntime(MeanRuntime, PredictorBase):
    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame:
        self.swept = True
        return predict_online(MeanRuntime(), jobs, completion)


def test_predictor_sweep_and_report_are_optional() -> None:
    completion = (JOBS["submit_time"] + JOBS["runtime"]).to_numpy()
    assert isinstance(MeanRuntime(), OnlinePredictor)
    generic = predict_online(MeanRuntime(), JOBS, completion)
    assert generic["pred_runtime"].to_list() == [10.0, 10.0, 10.0]  # nothing completed before t = 2
    swept = SweptMeanRuntime()
    assert predict_online(swept, JOBS, completion).equals(generic) and swept.swept
    assert optional_member(MeanRuntime(), PredictorBase, "report") is None
    assert optional_member(MeanRuntime(), PredictorBase, "sweep")(JOBS, completion) is None


def test_optional_member_refuses_undeclared_names_and_keeps_errors_of_the_member() -> None:
    with pytest.raises(AttributeError, match="PolicyBase declares no optional member 'stats'"):
        optional_member(PyFcfs(), PolicyBase, "stats")

    class Broken(PyFcfs):
        @property
        def summary(self):
            raise AttributeError("inside the user's property")

    with pytest.raises(AttributeError, match="inside the user's property"):
        optional_member(Broken(), PolicyBase, "summary")


def test_optional_member_sees_members_set_on_the_instance_after_its_class_was_looked_up() -> None:
    """The class's part of the lookup is kept per class (it runs at every pass of the multi-resource loop); an
    instance that sets the member itself, later, is still read, and another instance of the class is not."""
    first, second = BareDispatcher(), BareDispatcher()
    assert optional_member(first, DispatcherBase, "wake_at") is None
    first.wake_at = 42.0  # type: ignore[attr-defined]
    assert optional_member(first, DispatcherBase, "wake_at") == 42.0
    assert optional_member(second, DispatcherBase, "wake_at") is None
