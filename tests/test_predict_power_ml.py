"""The weekly online ML power predictor (docs/prediction.md §3): its scikit-learn estimator, the features and their
freedom from leakage, the week protocol and its history fallbacks, sweep == incremental, and accuracy."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LinearRegression, SGDRegressor
from sklearn.utils.estimator_checks import (
    check_fit_idempotent,
    check_methods_subset_invariance,
    check_n_features_in_after_fitting,
    parametrize_with_checks,
)

from wattsched.predict.online import completion_times, predict_online
from wattsched.predict.power_history import GlobalMeanPowerPredictor, HistoryConfig, history_sweep
from wattsched.predict.power_ml import (
    FEATURE_NAMES,
    MLPowerConfig,
    RFECVGridRegressor,
    WeeklyMLPowerPredictor,
    mae_summary,
    ml_features,
    predict_power,
)
from wattsched.workload.generate import generate_m100like

PRED = ("pred_power_mean", "pred_power_max", "pred_power_std")
# A cheap model for protocol tests: plain least squares, no feature elimination, no grid.
CHEAP = {"select_features": False, "grid": {}, "min_train_rows": 3}


def _jobs(submit, user, mean, *, runtime=None, size=None, walltime=None) -> pl.DataFrame:
    n = len(submit)
    mean = np.asarray(mean, dtype=float)
    return pl.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_time": np.asarray(submit, dtype=float),
            "walltime": np.asarray(walltime if walltime is not None else [3600.0] * n, dtype=float),
            "runtime": np.asarray(runtime if runtime is not None else [100.0] * n, dtype=float),
            "size": np.asarray(size if size is not None else [1] * n, dtype=np.int64),
            "user_id": pl.Series(user, dtype=pl.Int64),
            "power_mean": mean,
            "power_max": mean * 1.3,
            "power_std": mean * 0.1,
        }
    )


@pytest.fixture(scope="module")
def m100() -> tuple[pl.DataFrame, np.ndarray, float]:
    """≈ 4 weeks of Marconi100-like jobs (the rate compressed: 5,000 jobs), completions from an EASY replay."""
    read = generate_m100like(5_000, seed=11, span_days=28.0)
    completion, _ = completion_times(read.jobs, "replay", machine_size=980)
    return read.jobs.drop("power_profile"), completion, float(read.provenance.header["clock_offset"])


# ------------------------------------------------------------------------------------------------ estimator


@parametrize_with_checks(
    [
        RFECVGridRegressor(),
        RFECVGridRegressor(SGDRegressor(), {"alpha": [1e-4, 1e-3]}, cv_kind="timeseries", random_state=0),
    ]
)
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)


@pytest.mark.parametrize(
    "check", [check_fit_idempotent, check_methods_subset_invariance, check_n_features_in_after_fitting]
)
def test_sklearn_checks_with_a_forest(check) -> None:
    est = RFECVGridRegressor(RandomForestRegressor(n_estimators=5), {"max_depth": [2, None]}, cv=3, random_state=0)
    check(type(est).__name__, est)


def test_estimator_selects_tunes_and_predicts_batch_invariantly() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) * [1.0, 100.0, 0.01, 5.0]
    y = 3.0 * X[:, 0] + 0.02 * X[:, 1] + rng.normal(scale=0.1, size=300)
    est = RFECVGridRegressor(SGDRegressor(), {"alpha": [1e-5, 1e-2]}, random_state=3).fit(X, y)
    assert est.n_features_in_ == 4 and est.support_[0] and est.support_[1]
    assert set(est.best_params_) == {"alpha"} and est.best_score_ < 0
    again = clone(est).fit(X, y)  # deterministic given random_state
    assert np.array_equal(est.predict(X), again.predict(X)) and again.support_.tolist() == est.support_.tolist()
    whole = est.predict(X)
    assert all(est.predict(X[i : i + 1])[0] == whole[i] for i in range(0, 300, 7))  # bit for bit
    assert est.score(X, y) > 0.99
    tiny = RFECVGridRegressor(LinearRegression(), {"fit_intercept": [True, False]}).fit(X[:1], y[:1])
    assert tiny.best_params_ == {} and tiny.support_.all()  # too few rows for two folds: fitted as given


def test_estimator_rejects_bad_options() -> None:
    X, y = np.ones((10, 2)), np.arange(10.0)
    with pytest.raises(ValueError, match="cv_kind"):
        RFECVGridRegressor(cv_kind="shuffle").fit(X, y)
    with pytest.raises(ValueError, match="cv must be"):
        RFECVGridRegressor(cv=1).fit(X, y)
    with pytest.raises(ValueError, match="max_train_rows"):
        MLPowerConfig(max_train_rows=0)
    with pytest.raises(ValueError, match="model must be"):
        WeeklyMLPowerPredictor("ml-gbm")
    with pytest.raises(ValueError, match="method must be"):
        predict_power(_jobs([0.0], [1], [500.0]), "ml-gbm", np.array([100.0]))


# ------------------------------------------------------------------------------------------------ features


def test_static_features() -> None:
    jobs = _jobs(
        [0.0, 3600.0 * 5 + 10, 86_400.0 * 3 + 3600.0 * 23],
        [1, 1, 2],
        [500.0] * 3,
        size=[1, 4, 2],
        walltime=[60.0, 7200.0, 600.0],
    )
    completion = np.array([100.0, 20_000.0, 300_000.0])
    feats = ml_features(jobs, completion, MLPowerConfig(clock_offset=3600.0))
    assert feats["hour"].to_list() == [1.0, 6.0, 0.0]  # hour of (submit + clock_offset), integer
    assert feats["processors"].to_list() == [1.0, 4.0, 2.0]  # size when the table has no cores
    assert feats["nodes"].to_list() == [1.0, 4.0, 2.0]
    assert feats["walltime"].to_list() == [60.0, 7200.0, 600.0]
    cores = jobs.with_columns(pl.Series("cores", [48, None, 8]))
    assert ml_features(cores, completion)["processors"].to_list() == [48.0, 4.0, 8.0]  # a null core count → size
    pm100 = cores.with_columns(pl.Series("pm100_num_cores_req", [4, 4, 4]))
    assert ml_features(pm100, completion)["processors"].to_list() == [4.0, 4.0, 4.0]  # requested cores first
    hist = history_sweep(jobs, completion)
    assert feats["hist_power_mean"].equals(hist["pred_power_mean"].alias("hist_power_mean"))
    assert feats["last_power_mean"].to_list() == [None, 500.0, None]


def _random_workload(draw) -> tuple[pl.DataFrame, np.ndarray]:
    n = draw(st.integers(8, 40))
    submit = np.sort(np.array(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)), dtype=float)) * 600.0
    user = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    mean = draw(st.lists(st.floats(250.0, 1500.0), min_size=n, max_size=n))
    size = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    wait_run = np.array(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)), dtype=float) * 450.0
    runtime = draw(st.lists(st.sampled_from([10.0, 100.0, 1000.0]), min_size=n, max_size=n))
    return _jobs(submit, user, mean, runtime=runtime, size=size), submit + wait_run


@settings(deadline=None, max_examples=25)
@given(data=st.data())
def test_no_leakage_from_jobs_completing_after_submission(data) -> None:
    """Changing or deleting jobs that complete after r changes neither the features nor the ML prediction of a job
    submitted at or before r (t0 fixed: the default t0, the first submit time, moves with the first job)."""
    jobs, completion = _random_workload(data.draw)
    cut = float(jobs["submit_time"][data.draw(st.integers(0, jobs.height - 1))])
    later = np.flatnonzero(completion > cut)
    cfg = MLPowerConfig(t0=0.0, week=3600.0, **CHEAP)
    delete = data.draw(st.booleans())
    if delete:
        gone = data.draw(st.lists(st.sampled_from(later.tolist()), unique=True)) if later.size else []
        keep = np.setdiff1d(np.arange(jobs.height), gone)
        other, other_c = jobs[keep], completion[keep]
    else:
        other, other_c = jobs, completion
        if later.size:
            rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
            k = later.size
            other = jobs.with_columns(
                pl.Series("power_mean", jobs["power_mean"].to_numpy().copy()).scatter(later, rng.uniform(0, 2e3, k)),
                pl.Series("power_max", jobs["power_max"].to_numpy().copy()).scatter(later, rng.uniform(0, 2e3, k)),
                pl.Series("size", jobs["size"].to_numpy().copy()).scatter(later, rng.integers(1, 9, k)),
                pl.Series("user_id", jobs["user_id"].to_numpy().copy()).scatter(later, rng.integers(1, 6, k)),
            )
    changed = np.isin(np.arange(jobs.height), gone) if delete else completion > cut
    # a job's own attributes are its features: compare the jobs submitted by r that were left as they were
    ids = jobs.filter(pl.Series((jobs["submit_time"].to_numpy() <= cut) & ~changed))["job_id"]
    pick = pl.col("job_id").is_in(ids.implode())
    a = ml_features(jobs, completion, cfg).with_columns(jobs["job_id"]).filter(pick)
    b = ml_features(other, other_c, cfg).with_columns(other["job_id"]).filter(pick)
    assert a.equals(b)
    pa = predict_online(WeeklyMLPowerPredictor("ml-linear", cfg), jobs, completion).with_columns(jobs["job_id"])
    pb = predict_online(WeeklyMLPowerPredictor("ml-linear", cfg), other, other_c).with_columns(other["job_id"])
    assert pa.filter(pick).equals(pb.filter(pick))


# ------------------------------------------------------------------------------------------------ protocol


def _two_weeks() -> tuple[pl.DataFrame, np.ndarray]:
    """Week = 100 s, t0 = 0. Rows 0–9 (r < 10) finish at 15 with no lag features; rows 10–29 (users 1 and 2,
    r = 20…39) finish at 50…69 and form the week-0 training set; row 30 finishes exactly at t(0) = 100; then
    rows 31 (r = 99.5), 32 (100), 33 (150, user 9: no history), 34 (199.9), 35 (200), 36 (210)."""
    rng = np.random.default_rng(4)
    user = [1, 2] * 15 + [1, 2, 1, 9, 2, 1, 2]
    submit = [*range(10), *range(20, 40), 40, 99.5, 100, 150, 199.9, 200, 210]
    completion = [15.0] * 10 + [r + 30.0 for r in range(20, 40)] + [100, 150, 140, 190, 230, 260, 280]
    size = [1 if u == 1 else int(rng.integers(2, 5)) for u in user]
    mean = [(350.0 if u == 1 else 850.0) + 20.0 * s + rng.normal(0, 20) for u, s in zip(user, size, strict=True)]
    return _jobs(submit, user, mean, size=size), np.array(completion, dtype=float)


def test_week_boundaries_and_history_fallbacks() -> None:
    jobs, completion = _two_weeks()
    cfg = MLPowerConfig(t0=0.0, week=100.0, **CHEAP)
    ml = WeeklyMLPowerPredictor("ml-linear", cfg)
    out = predict_online(ml, jobs, completion)
    hist = history_sweep(jobs, completion)
    report = ml.report
    # the week-0 model (trained at t(0) = 100) learns from C < 100 with lag features: rows 10–29, not row 30
    week0 = report.filter(pl.col("week") == 0, pl.col("metric") == "power_mean")
    assert week0["week_end"].item() == 100.0 and week0["n_train"].item() == 20
    week1 = report.filter(pl.col("week") == 1, pl.col("metric") == "power_mean")
    assert week1["week_end"].item() == 200.0 and week1["n_train"].item() == 23  # + rows 30, 31, 32
    assert report["week"].unique().sort().to_list() == [0, 1]
    assert report["features"][0].to_list() == list(FEATURE_NAMES)
    mean, hmean = out["pred_power_mean"].to_numpy(), hist["pred_power_mean"].to_numpy()
    submit = jobs["submit_time"].to_numpy()
    # week 0 (r < 100, up to 99.5) keeps the history value exactly, for every metric
    for col in PRED:
        assert np.array_equal(out[col].to_numpy()[submit < 100], hist[col].to_numpy()[submit < 100])
    # user 9 has no finished job (no lag features): the history value (here its global fallback)
    assert mean[33] == hmean[33] and not out["has_user_history"][33]
    # from r = t(0) = 100 on (half-open weeks), the model: it differs from the history value
    assert all(mean[i] != hmean[i] for i in (32, 34, 35, 36))
    assert out["has_user_history"].equals(hist["has_user_history"])
    # a model trained on fewer than min_train_rows rows is not used: week 0 has 20, week 1 has 23
    few = MLPowerConfig(t0=0.0, week=100.0, **{**CHEAP, "min_train_rows": 21})
    few_out = predict_online(WeeklyMLPowerPredictor("ml-linear", few), jobs, completion)["pred_power_mean"].to_numpy()
    assert np.array_equal(few_out[submit < 200], hmean[submit < 200]) and few_out[35] != hmean[35]
    # nothing before t0 + one week is predicted by a model
    late = predict_online(
        WeeklyMLPowerPredictor("ml-linear", MLPowerConfig(t0=150.0, week=100.0, **CHEAP)), jobs, completion
    )
    assert late.equals(hist.select(out.columns))


def test_clip_to_training_range() -> None:
    jobs, completion = _two_weeks()
    cfg = MLPowerConfig(t0=0.0, week=100.0, **CHEAP)
    out = predict_online(WeeklyMLPowerPredictor("ml-linear", cfg), jobs, completion)["pred_power_mean"].to_numpy()
    target = jobs["power_mean"].to_numpy()
    assert out[32:].min() >= target[10:30].min() and out[32:].max() <= target[10:33].max()


@pytest.mark.parametrize(
    ("model", "options"),
    [
        ("ml-linear", {}),
        ("ml-sgd", {"grid": {"alpha": [1e-4, 1e-3]}, "cv_kind": "timeseries", "max_train_rows": 800}),
        ("ml-linear", {"per_user": True, "select_features": False, "min_train_rows": 30}),
        ("ml-forest", {"grid": {}, "base_params": {"n_estimators": 5, "max_depth": 4}, "max_train_rows": 300, "cv": 3}),
    ],
)
def test_sweep_equals_incremental_driver(model, options) -> None:
    read = generate_m100like(1_200, seed=5, span_days=20.0)
    jobs = read.jobs.drop("power_profile")
    completion, _ = completion_times(read.jobs, "replay", machine_size=980)
    cfg = MLPowerConfig(clock_offset=float(read.provenance.header["clock_offset"]), **options)
    swept, stepped = WeeklyMLPowerPredictor(model, cfg), WeeklyMLPowerPredictor(model, cfg)
    a = predict_online(swept, jobs, completion, use_sweep=True)
    b = predict_online(stepped, jobs, completion, use_sweep=False)
    assert a.equals(b)
    assert swept.report.drop("fit_s").equals(stepped.report.drop("fit_s"))
    assert swept.report.height >= 6  # two weeks or more, three metrics
    if options.get("per_user"):
        assert swept.report["user"].null_count() == 0
        assert set(swept.report["user"].to_list()) <= set(jobs["user_id"].to_list())  # the users' own ids
    params = [json.loads(p) for p in swept.report["params"]]
    assert all(set(p) == set(options.get("grid", {})) for p in params)


def test_global_mean_baseline() -> None:
    jobs, completion = _two_weeks()
    swept = predict_online(GlobalMeanPowerPredictor(), jobs, completion)
    assert swept.equals(predict_online(GlobalMeanPowerPredictor(), jobs, completion, use_sweep=False))
    mean = swept["pred_power_mean"].to_numpy()
    assert mean[0] == 2100.0  # nothing completed yet: the node maximum
    assert mean[32] == pytest.approx(jobs["power_mean"].to_numpy()[completion <= 100.0].mean())  # C ≤ r = 100
    assert swept["has_user_history"].equals(history_sweep(jobs, completion)["has_user_history"])


def test_predict_power_aligns_with_any_row_order() -> None:
    jobs, completion = _two_weeks()
    order = np.random.default_rng(1).permutation(jobs.height)
    for method, options in (("history", {}), ("ml-linear", {"t0": 0.0, "week": 100.0, **CHEAP})):
        straight = predict_power(jobs, method, completion, **options)
        shuffled = predict_power(jobs[order], method, completion[order], **options)
        assert shuffled.equals(straight[order])
    assert predict_power(jobs, "history", "no-wait").height == jobs.height


def test_mae_summary() -> None:
    jobs = _jobs([0.0, 1.0, 2.0], [1, 1, 2], [100.0, 200.0, 300.0], runtime=[100.0, 10.0, 100.0])
    pred = pl.DataFrame(
        {
            "pred_power_mean": [110.0, 180.0, 300.0],
            "pred_power_max": [0.0] * 3,
            "pred_power_std": [0.0] * 3,
            "has_user_history": [False, True, True],
        }
    )
    s = mae_summary(jobs, pred, HistoryConfig(sample_period=20.0))
    assert s["power_mean"]["all"] == pytest.approx(10.0)
    assert s["power_mean"]["with_history"] == pytest.approx(10.0)
    assert s["power_mean"]["median_user"] == pytest.approx(7.5)  # users: 15 and 0
    assert s["power_std"]["n_all"] == 2  # the 10-s job has a single sample


# ------------------------------------------------------------------------------------------------ accuracy


def test_ml_and_history_beat_the_global_mean(m100) -> None:
    jobs, completion, offset = m100
    mae = {}
    runs = {
        "global-mean": {},
        "history": {},
        "ml-linear": {"clock_offset": offset},
        "ml-forest": {
            "clock_offset": offset,
            "grid": {"max_depth": [8]},
            "base_params": {"n_estimators": 10},
            "max_train_rows": 1_000,
            "cv": 3,
        },
    }
    for method, options in runs.items():
        pred = predict_power(jobs, method, completion, **options)
        mae[method] = mae_summary(jobs, pred)["power_mean"]["with_history"]
    baseline = mae.pop("global-mean")
    for method, value in mae.items():
        assert value < 0.75 * baseline, (method, value, baseline)
