"""Online predictors inside the simulation: they learn from simulated completions only, predict every job once at
its submission, and their predictions are what the policy sees."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.core.schema import sort_queue_order
from wattsched.engine.simulate import OnlineEstimates, SimulationError, simulate
from wattsched.policies.powercheck import PowerCheck
from wattsched.power.platform import PowerCapSchedule, job_dynamic_estimates, load_platform
from wattsched.predict.online import predict_online
from wattsched.predict.power_history import HistoryPowerPredictor
from wattsched.workload.generate import generate_m100like

M100 = load_platform("marconi100")


class Spy:
    """Checks the protocol while predicting a constant, or the truth when ``truth`` is set."""

    name = "spy"
    outputs = ("pred_runtime",)

    def __init__(self, truth: bool = False) -> None:
        self.truth = truth

    def bind(self, jobs: pl.DataFrame) -> None:
        self.submit = jobs["submit_time"].to_numpy()
        self.runtime = jobs["runtime"].to_numpy()
        self.predicted = np.zeros(jobs.height, dtype=bool)
        self.observed = np.zeros(jobs.height, dtype=bool)
        self.clock = -np.inf
        self.last_end = -np.inf

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        assert self.predicted[rows].all(), "a job completed before it was predicted"
        assert not self.observed[rows].any(), "a completion was reported twice"
        assert np.all(np.diff(end_times) >= 0) and end_times[0] >= self.last_end, "completions out of order"
        self.observed[rows] = True
        self.last_end = end_times[-1]

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        assert now > self.clock, "one call per submission instant, in time order"
        assert self.last_end <= now, "a completion from the future was seen"
        assert np.all(self.submit[rows] == now) and not self.predicted[rows].any()
        self.clock = now
        self.predicted[rows] = True
        return {"pred_runtime": self.runtime[rows] if self.truth else np.full(rows.size, 60.0)}


def _workload(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit_time": np.sort(rng.integers(0, 2000, n)).astype(float),
            "size": rng.integers(1, 9, n),
            "walltime": np.full(n, 500.0),
            "runtime": rng.integers(1, 500, n).astype(float),
            "user_id": rng.integers(0, 5, n),
        }
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 120), st.integers(0, 10_000), st.sampled_from(["easy", "sjf", "easy-sjf", "fcfs"]))
def test_the_protocol_holds_and_every_job_is_predicted_once(n, seed, policy) -> None:
    jobs = _workload(n, seed)
    spy = Spy()
    res = simulate(jobs, policy, 16, online=OnlineEstimates(spy, runtime="pred_runtime"))
    assert spy.predicted.all()
    np.testing.assert_array_equal(res.schedule["estimate"].to_numpy(), np.full(n, 60.0))
    np.testing.assert_array_equal(res.predictions["pred_runtime"].to_numpy(), np.full(n, 60.0))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 120), st.integers(0, 10_000), st.sampled_from(["easy", "sjf", "easy-sjf"]))
def test_predicting_the_truth_online_equals_the_truth_column(n, seed, policy) -> None:
    jobs = _workload(n, seed)
    online = simulate(jobs, policy, 16, online=OnlineEstimates(Spy(truth=True), runtime="pred_runtime"))
    column = simulate(jobs, policy, 16, runtime_estimate="runtime")
    assert online.schedule.equals(column.schedule)


def _power_converter(jobs: pl.DataFrame):
    size = sort_queue_order(jobs)["size"].to_numpy().astype(float)

    def convert(rows: np.ndarray, out: dict[str, np.ndarray]):
        return job_dynamic_estimates(
            size[rows], out["pred_power_mean"], out["pred_power_max"], out["pred_power_std"], M100.idle_watts
        )

    return convert


@pytest.mark.parametrize("seed", [3, 11])
def test_in_simulation_history_equals_the_trace_protocol_on_the_simulated_completions(seed) -> None:
    """The history predictor fed by the simulator predicts exactly what the trace protocol predicts when the
    trace's completion times are the simulated ones: the same online semantics in both drivers."""
    jobs = generate_m100like(2000, seed=seed).jobs
    cap = PowerCapSchedule.window(0.5, M100, window_end=10_800.0, post_window_cap="dynamic_range")
    res = simulate(
        jobs,
        "easy-pc",
        980,
        power_check=PowerCheck.named("gaussian99"),
        cap=cap,
        online=OnlineEstimates(HistoryPowerPredictor(), power=_power_converter(jobs)),
    )
    ordered = sort_queue_order(jobs)
    trace = predict_online(HistoryPowerPredictor(), ordered, res.schedule["end_time"].to_numpy())
    assert trace.equals(res.predictions)
    assert res.predictions["has_user_history"].sum() > 1000


def test_a_predictor_without_finite_power_is_refused() -> None:
    jobs = generate_m100like(50, seed=1).jobs

    def nan_power(rows, out):
        return (np.full(rows.size, np.nan),) * 3

    with pytest.raises(SimulationError, match="no finite estimate"):
        simulate(
            jobs,
            "easy-pc",
            980,
            power_check=PowerCheck.named("mean"),
            cap=PowerCapSchedule.constant(1e5),
            online=OnlineEstimates(HistoryPowerPredictor(), power=nan_power),
        )
