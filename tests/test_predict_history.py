"""The history power predictor (docs/prediction.md §2): golden values, edge cases, brute-force equality, leakage."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.predict.online import predict_online
from wattsched.predict.power_history import HistoryConfig, HistoryPowerPredictor, history_sweep


def _jobs(submit, user, mean, mx=None, std=None, runtime=None) -> pl.DataFrame:
    n = len(submit)
    return pl.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_time": np.asarray(submit, dtype=float),
            "walltime": np.full(n, 1e6),
            "runtime": np.asarray(runtime if runtime is not None else [100.0] * n, dtype=float),
            "size": np.ones(n, dtype=np.int64),
            "user_id": pl.Series(user, dtype=pl.Int64),
            "power_mean": pl.Series(mean, dtype=pl.Float64),
            "power_max": pl.Series(mx if mx is not None else mean, dtype=pl.Float64),
            "power_std": pl.Series(std if std is not None else mean, dtype=pl.Float64),
        }
    )


# A hand-computed example: the user's jobs finish at C = 0, 50, 80 with P = 100, 200, 300 W; a new job at r = 100.
SPEC_JOBS = _jobs([-10.0, -5.0, -1.0, 100.0], [7, 7, 7, 7], [100.0, 200.0, 300.0, 0.0])
SPEC_COMPLETION = np.array([0.0, 50.0, 80.0, 110.0])


@pytest.mark.parametrize(("alpha", "expected"), [(2.0, 271.91), (1.0, 261.54)])
def test_spec_golden_values(alpha, expected) -> None:
    """Exact paper definition (no ε): θ = (0, 0.25, 0.64) → 271.91 W; α = 1: θ = (0, 0.5, 0.8) → 261.54 W."""
    cfg = HistoryConfig(alpha=alpha, eps=0.0)
    for frame in (
        history_sweep(SPEC_JOBS, SPEC_COMPLETION, cfg),
        predict_online(HistoryPowerPredictor(cfg), SPEC_JOBS, SPEC_COMPLETION, use_sweep=False),
    ):
        assert frame["pred_power_mean"][3] == pytest.approx(expected, abs=0.005)
        assert frame["has_user_history"][3]


def test_fixed_window_of_the_spec_size_gives_the_same_value() -> None:
    cfg = HistoryConfig(alpha=2.0, eps=0.0, window=100.0)
    assert history_sweep(SPEC_JOBS, SPEC_COMPLETION, cfg)["pred_power_mean"][3] == pytest.approx(271.91, abs=0.005)


def test_epsilon_gives_the_oldest_job_a_small_weight() -> None:
    value = history_sweep(SPEC_JOBS, SPEC_COMPLETION)["pred_power_mean"][3]  # ε = 1 s by default
    weights = np.array([1.0, 51.0, 81.0]) ** 2
    assert value == pytest.approx(float(weights @ [100.0, 200.0, 300.0] / weights.sum()))


def test_edge_cases_and_fallbacks() -> None:
    jobs = _jobs([0.0, 10.0, 20.0, 30.0, 40.0], [1, 1, 2, None, 3], [400.0, 0.0, 0.0, 0.0, 0.0])
    completion = np.array([5.0, 50.0, 60.0, 70.0, 80.0])
    out = history_sweep(jobs, completion, HistoryConfig(eps=0.0, fallback_watts=2100.0))
    # job 1: nothing completed yet → the node maximum for mean and max, 0 for std
    assert out.row(0)[:4] == (2100.0, 2100.0, 0.0, False)
    # job 2: the user's single completed job has θ = 0 without ε → its unweighted mean
    assert out["pred_power_mean"][1] == 400.0 and out["has_user_history"][1]
    # job 3 (another user) and job 4 (no user): the mean over all completed jobs
    assert out["pred_power_mean"][2] == 400.0 and not out["has_user_history"][2]
    assert out["pred_power_mean"][3] == 400.0 and not out["has_user_history"][3]


def test_std_uses_only_jobs_with_more_than_one_sample() -> None:
    jobs = _jobs([0.0, 1.0, 100.0], [1, 1, 1], [10.0, 20.0, 0.0], std=[50.0, 5.0, 0.0], runtime=[15.0, 60.0, 1.0])
    out = history_sweep(jobs, np.array([20.0, 70.0, 200.0]), HistoryConfig(sample_period=20.0))
    assert out["pred_power_std"][2] == 5.0  # the 15-s job had a single sample
    profiles = jobs.with_columns(pl.Series("power_profile", [[1.0, 2.0], [1.0], []], dtype=pl.List(pl.Float32)))
    out = history_sweep(profiles, np.array([20.0, 70.0, 200.0]))
    assert out["pred_power_std"][2] == 50.0  # sample counts from the profiles when present


def test_lag_features() -> None:
    out = history_sweep(SPEC_JOBS, SPEC_COMPLETION)
    assert out["last_power_mean"][3] == 300.0
    assert out["hist_std_power_mean"][3] == pytest.approx(np.std([100.0, 200.0, 300.0]))
    assert out["last_power_mean"][0] is None


def test_a_job_is_not_predicted_from_its_own_completion() -> None:
    """Zero runtime, no wait: the job completes at its submit instant, but after its own prediction."""
    jobs = _jobs([0.0, 5.0, 9.0], [1, 1, 1], [100.0, 900.0, 0.0], runtime=[1.0, 0.0, 1.0])
    completion = np.array([1.0, 5.0, 10.0])
    slow = predict_online(HistoryPowerPredictor(), jobs, completion, use_sweep=False)
    for frame in (history_sweep(jobs, completion), slow):
        assert frame["pred_power_mean"][1] == 100.0
        assert frame["pred_power_mean"][2] != 100.0


def _brute(jobs: pl.DataFrame, completion: np.ndarray, cfg: HistoryConfig) -> np.ndarray:
    """Eq. 1–3 by rescanning the history of every job (completions strictly after their submission here)."""
    submit = jobs["submit_time"].to_numpy()
    users = jobs["user_id"].to_numpy()
    vals = jobs["power_mean"].to_numpy()
    out = np.empty(jobs.height)
    for i in range(jobs.height):
        r = submit[i]
        h = (completion <= r) & (users == users[i])
        if not h.any():
            seen = completion <= r
            out[i] = vals[seen].mean() if seen.any() else cfg.fallback_watts
            continue
        c, p = completion[h], vals[h]
        s = cfg.window if cfg.window is not None else r - c.min() + cfg.eps
        keep = c >= r - s
        if not keep.any():
            seen = completion <= r
            out[i] = vals[seen].mean()
            continue
        with np.errstate(invalid="ignore", divide="ignore"):  # s = 0 (ε = 0, r = C_first): θ = 0/0, see below
            theta = (1.0 - (r - c[keep]) / s) ** cfg.alpha
        out[i] = theta @ p[keep] / theta.sum() if np.nansum(theta) > 0 else p[keep].mean()
    return out


@st.composite
def histories(draw):
    n = draw(st.integers(1, 40))
    submit = np.sort(np.array(draw(st.lists(st.integers(0, 500), min_size=n, max_size=n)), dtype=float))
    runtime = np.array(draw(st.lists(st.integers(1, 300), min_size=n, max_size=n)), dtype=float)
    wait = np.array(draw(st.lists(st.integers(0, 100), min_size=n, max_size=n)), dtype=float)
    users = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    power = draw(st.lists(st.integers(100, 2000), min_size=n, max_size=n))
    jobs = _jobs(submit, users, [float(p) for p in power], runtime=runtime)
    return jobs, submit + wait + runtime


@settings(max_examples=60, deadline=None)
@given(histories(), st.sampled_from([1.0, 2.0, 3.0]), st.sampled_from([0.0, 1.0]), st.sampled_from([None, 50.0, 400.0]))
def test_equals_the_brute_force_rescan(history, alpha, eps, window) -> None:
    jobs, completion = history
    cfg = HistoryConfig(alpha=alpha, eps=eps, window=window)
    fast = history_sweep(jobs, completion, cfg)["pred_power_mean"].to_numpy()
    np.testing.assert_allclose(fast, _brute(jobs, completion, cfg), rtol=1e-7, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(histories(), st.sampled_from([None, 100.0]))
def test_sweep_equals_the_incremental_driver(history, window) -> None:
    jobs, completion = history
    cfg = HistoryConfig(window=window)
    fast = history_sweep(jobs, completion, cfg)
    slow = predict_online(HistoryPowerPredictor(cfg, features=True), jobs, completion, use_sweep=False)
    for col in slow.columns:
        a, b = fast[col].to_numpy(), slow[col].to_numpy()
        if a.dtype == np.bool_:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=1e-9, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(histories(), st.data())
def test_later_completions_never_change_a_prediction(history, data) -> None:
    """Leakage: change or delete any job completing after r; the predictions of jobs submitted at r stay."""
    jobs, completion = history
    i = data.draw(st.integers(0, jobs.height - 1))
    r = jobs["submit_time"][i]
    later = np.flatnonzero(completion > r)
    before = history_sweep(jobs, completion).row(i)
    if later.size == 0:
        return
    k = int(data.draw(st.sampled_from(later.tolist())))
    changed = jobs.with_columns(
        pl.when(pl.int_range(pl.len()) == k).then(pl.lit(9999.0)).otherwise(pl.col(c)).alias(c)
        for c in ("power_mean", "power_max", "power_std")
    )
    assert history_sweep(changed, completion).row(i) == before
    if k != i:
        keep = np.arange(jobs.height) != k
        dropped = history_sweep(jobs.filter(pl.Series(keep)), completion[keep])
        assert dropped.row(int(keep[:i].sum())) == before


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="integer alpha"):
        HistoryConfig(alpha=1.5, window=10.0)
    with pytest.raises(ValueError, match="window"):
        HistoryConfig(window=0.0)
    with pytest.raises(ValueError, match="power_mean"):
        history_sweep(SPEC_JOBS.drop("power_mean"), SPEC_COMPLETION)
