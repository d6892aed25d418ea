"""The weekly online ML power predictor of paper 000 (§4.2, §6.2; docs/prediction.md §3).

Protocol. Weeks end at t(w) = t0 + 7 days·(w + 1). At each week end a model is trained, per metric (per-node
``power_mean``, ``power_max``, ``power_std``), on the jobs that completed strictly before t(w); it predicts the jobs
submitted in [t(w), t(w+1)) (half-open, where a closed interval would give a job submitted exactly at
t(w+1) to two weeks: it goes to the newer model). Week 0 (r < t(0)), jobs without lag features (the user has no
finished job with that metric) and weeks with fewer than ``min_train_rows`` training rows use the history
predictor's value (Eq. 1 with its [AMBIG-0.4] fallbacks).

Features (Table 2), all known at submission r from finished jobs only: (1) submission hour of day (integer hour of
``submit_time + clock_offset``), (2) processors requested (``pm100_num_cores_req``, else ``cores``, else ``size``),
(3) nodes (``size``), (4) requested time (``walltime``, s), (5) the history prediction of the metric, (6) the
unweighted std of the metric over the history window, (7) the metric of the user's last finished job. Features 5–7
come from :func:`~wattsched.predict.power_history.history_sweep`, so they are computed once per job, at r.

Training rows: jobs with C < t(w), lag features present and a known target (σ only from jobs with more than one
power sample, as in the history predictor), ordered by (completion, queue position) — the order the folds cut —
and optionally only the ``max_train_rows`` most recent. Model per week and metric (:class:`RFECVGridRegressor`):
StandardScaler + regressor in a Pipeline; RFECV (step 1, 5 folds, MSE) picks the features, then GridSearchCV
(5 folds, MSE) the hyper-parameters, then a refit on every training row. Predictions are clipped to the training
targets' range (``clip``), since an extrapolating linear model can otherwise predict negative watts.

Clocks. ``t0`` and ``submit_time`` share one clock. PM100 tables have epoch seconds (UTC): pass
``t0=PM100_T0`` (2022-01-01 00:00 UTC, the PM100 default of [AMBIG-0.5]) and ``clock_offset=0``. Generated workloads
start at 0: the default ``t0`` (the first submit time) fits, and ``clock_offset`` should be the provenance's
``header["clock_offset"]`` (time of day of submit 0) for the hour feature to be a time of day.

Two drivers give identical predictions: :meth:`WeeklyMLPowerPredictor.sweep` (the trace protocol: features once,
then one fit per week and metric) and ``bind``/``observe``/``predict`` (retrains when ``now`` enters a new week,
from the completions observed so far; for the simulator).
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.ensemble import RandomForestRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import RFECV
from sklearn.linear_model import LinearRegression, SGDRegressor
from sklearn.model_selection import GridSearchCV, KFold, TimeSeriesSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVR
from sklearn.utils.validation import check_is_fitted, validate_data

from wattsched.predict.online import completion_times, predict_online
from wattsched.predict.power_history import (
    METRICS,
    OUTPUTS,
    HistoryConfig,
    HistoryPowerPredictor,
    _inputs,
    history_sweep,
)
from wattsched.predict.registry import POWER_PREDICTORS, make_power_predictor

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

__all__ = [
    "DEFAULT_BASE_PARAMS",
    "DEFAULT_GRIDS",
    "FEATURE_NAMES",
    "METHODS",
    "ML_MODELS",
    "PM100_T0",
    "MLPowerConfig",
    "RFECVGridRegressor",
    "WeeklyMLPowerPredictor",
    "mae_summary",
    "ml_features",
    "predict_power",
]

#: Start of the PM100 period (2022-01-01 00:00 UTC, epoch s): the t0 for PM100 tables ([AMBIG-0.5]).
PM100_T0 = 1_640_995_200.0
WEEK = 7 * 86_400.0
#: Table 2 in order; the report names the features RFECV kept with these.
FEATURE_NAMES = ("hour", "processors", "nodes", "walltime", "history", "window_std", "last")
_STATIC = ("hour", "processors", "nodes", "walltime")

ML_MODELS: dict[str, type] = {
    "ml-linear": LinearRegression,
    "ml-forest": RandomForestRegressor,
    "ml-svr": LinearSVR,
    "ml-sgd": SGDRegressor,
}
#: The default grids ([AMBIG-0.5b], docs/prediction.md §3); epsilon is in watts (targets are not scaled).
DEFAULT_GRIDS: dict[str, dict[str, list[Any]]] = {
    "ml-linear": {},
    "ml-forest": {"n_estimators": [50, 100], "max_depth": [None, 10, 20]},
    "ml-svr": {"C": [0.1, 1.0, 10.0], "epsilon": [0.0, 10.0]},
    "ml-sgd": {"alpha": [1e-5, 1e-4, 1e-3], "penalty": ["l2", "elasticnet"]},
}
#: Constructor arguments of the estimator RFECV ranks features with (and the grid starts from): scikit-learn's
#: defaults, except the forest's size, set to the grid's smallest so that feature elimination stays affordable.
DEFAULT_BASE_PARAMS: dict[str, dict[str, Any]] = {"ml-forest": {"n_estimators": 50}}
#: ``predict_power`` methods: every power predictor of the registry (the two baselines and the weekly ML models).
METHODS = POWER_PREDICTORS


# ------------------------------------------------------------------------------------------------ estimator


def _importance(pipeline: Any) -> np.ndarray:
    """RFECV ranking: |coefficients| of a linear model (standardised features) or impurity importances."""
    model = pipeline[-1] if isinstance(pipeline, Pipeline) else pipeline
    if hasattr(model, "coef_"):
        return np.abs(np.ravel(model.coef_))
    if hasattr(model, "feature_importances_"):
        return np.asarray(model.feature_importances_)
    raise ValueError(f"{type(model).__name__} exposes neither coef_ nor feature_importances_ to rank features")


#: Final models whose prediction is ``X @ coef_ + intercept_`` (predicted row by row, see ``_predict_rows``).
_LINEAR = (LinearRegression, LinearSVR, SGDRegressor)


class RFECVGridRegressor(RegressorMixin, BaseEstimator):
    """Standardise, select features by RFECV, tune by GridSearchCV, refit: the paper's per-week model as one
    scikit-learn regressor, so it can be cloned, pickled, cross-validated or put in a pipeline like any other.

    ``param_grid`` names the parameters of ``estimator`` itself (e.g. ``{"C": [0.1, 1]}``). ``cv`` folds of kind
    ``cv_kind`` ("kfold": ``KFold(cv, shuffle=False)``, the faithful default; "timeseries": ``TimeSeriesSplit``)
    serve both steps; with too few rows for two folds the estimator is fitted as given on every feature.
    ``random_state`` is passed to ``estimator`` when it takes one, so fits are deterministic.

    Fitted attributes: ``support_`` (features kept), ``n_features_``, ``best_params_`` (chosen grid point, ``{}``
    without a grid), ``best_score_`` (mean CV score of the final choice, NaN without CV), ``estimator_`` (the
    refitted pipeline, on the kept features) and ``n_features_in_``. A row's prediction does not depend on the
    other rows of the batch, bit for bit.
    """

    def __init__(
        self,
        estimator: Any = None,
        param_grid: Mapping[str, Sequence[Any]] | None = None,
        *,
        cv: int = 5,
        cv_kind: str = "kfold",
        select: bool = True,
        scale: bool = True,
        scoring: str = "neg_mean_squared_error",
        n_jobs: int | None = None,
        random_state: int | None = None,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.cv = cv
        self.cv_kind = cv_kind
        self.select = select
        self.scale = scale
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _pipeline(self) -> Pipeline:
        model = clone(self.estimator) if self.estimator is not None else LinearRegression()
        if self.random_state is not None and "random_state" in model.get_params():
            model.set_params(random_state=self.random_state)
        steps = [("scale", StandardScaler())] if self.scale else []
        return Pipeline([*steps, ("model", model)])

    def _splitter(self, n: int) -> KFold | TimeSeriesSplit | None:
        if isinstance(self.cv, bool) or not isinstance(self.cv, int | np.integer) or self.cv < 2:
            raise ValueError(f"cv must be an integer ≥ 2, got {self.cv!r}")
        if self.cv_kind == "kfold":
            k = min(int(self.cv), n)
            return KFold(k, shuffle=False) if k >= 2 else None
        if self.cv_kind == "timeseries":
            k = min(int(self.cv), n - 1)
            return TimeSeriesSplit(k) if k >= 2 else None
        raise ValueError(f"cv_kind must be 'kfold' or 'timeseries', got {self.cv_kind!r}")

    def fit(self, X: Any, y: Any) -> RFECVGridRegressor:
        """Select, tune, refit (deterministic given ``random_state``)."""
        X, y = validate_data(self, X, y, y_numeric=True)
        n, d = X.shape
        splitter = self._splitter(n)
        pipe = self._pipeline()
        support = np.ones(d, dtype=bool)
        score = math.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if self.select and splitter is not None and d > 1:
                rfe = RFECV(
                    pipe,
                    step=1,
                    min_features_to_select=1,
                    cv=splitter,
                    scoring=self.scoring,
                    n_jobs=self.n_jobs,
                    importance_getter=_importance,
                ).fit(X, y)
                support = np.asarray(rfe.support_, dtype=bool).copy()
                score = float(rfe.cv_results_["mean_test_score"][int(support.sum()) - 1])
            grid = {f"model__{k}": list(v) for k, v in (self.param_grid or {}).items()}
            if grid and splitter is not None:
                search = GridSearchCV(pipe, grid, cv=splitter, scoring=self.scoring, n_jobs=self.n_jobs, refit=True)
                search.fit(X[:, support], y)
                self.estimator_ = search.best_estimator_
                self.best_params_ = {k.removeprefix("model__"): v for k, v in search.best_params_.items()}
                score = float(search.best_score_)
            else:
                self.estimator_ = pipe.fit(X[:, support], y)
                self.best_params_ = {}
        self.support_ = support
        self.n_features_ = int(support.sum())
        self.best_score_ = score
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predict with the refitted pipeline on the kept features."""
        check_is_fitted(self, "estimator_")
        return self._predict_rows(validate_data(self, X, reset=False))

    def _predict_rows(self, X: np.ndarray) -> np.ndarray:
        """``predict`` on a validated float array, row by row in effect and without per-call validation.

        BLAS matrix-vector products round differently with the batch size; a sum in feature order makes a row's
        prediction independent of the rows predicted with it (the simulator predicts a few rows at a
        time, the trace sweep a whole week: both must agree exactly). Skipping scikit-learn's input checks keeps
        the simulator's many small calls cheap.
        """
        z = np.asarray(X, dtype=np.float64)[:, self.support_]
        *steps, (_, model) = self.estimator_.steps
        for _, step in steps:
            if isinstance(step, StandardScaler):
                z = z - step.mean_ if step.with_mean else z
                z = z / step.scale_ if step.with_std else z
            else:
                z = step.transform(z)
        if isinstance(model, _LINEAR):
            out = np.full(z.shape[0], float(np.ravel(model.intercept_)[0]))
            for j, c in enumerate(np.ravel(model.coef_)):  # one column at a time: the same sum order on every row
                out += z[:, j] * c
            return out
        if isinstance(model, RandomForestRegressor) and model.n_outputs_ == 1:
            z32 = np.ascontiguousarray(z, dtype=np.float32)
            out = np.zeros(z.shape[0])
            for tree in model.estimators_:
                out += tree.predict(z32, check_input=False)
            return out / len(model.estimators_)
        return model.predict(z)


# ------------------------------------------------------------------------------------------------ config


@dataclass(frozen=True)
class MLPowerConfig:
    """Options of the weekly ML predictor; defaults as docs/prediction.md §3 and [AMBIG-0.5] state them.

    - ``t0``: start of week 0 on the ``submit_time`` clock; None = the table's first submit time (PM100: pass
      :data:`PM100_T0`). A derived t0 moves when the first job is removed, so fix it to compare tables.
    - ``week``: week length (s). ``clock_offset``: seconds added to ``submit_time`` before taking the hour of day.
    - ``processors_column``: feature 2; None = ``pm100_num_cores_req``, else ``cores``, else ``size``.
    - ``grid`` / ``base_params``: None = :data:`DEFAULT_GRIDS` / :data:`DEFAULT_BASE_PARAMS` of the model.
    - ``cv`` folds of kind ``cv_kind`` ("kfold" faithful, "timeseries" leak-free in time); ``select_features``
      turns RFECV off when False.
    - ``max_train_rows``: train on the most recent rows (by completion) only; None = all. ``min_train_rows``:
      fewer rows than this → the history value.
    - ``per_user``: one model per user (users with fewer than ``min_train_rows`` rows keep the history value)
      instead of one global model — the reading of the labbook's ``run_prediction_per_user.py``; costly.
    - ``n_jobs``: joblib workers of the CV loops (processes: liblinear's seed is global, threads would race).
    - ``random_state``: seed of the randomised models (forest, SVR, SGD): same data, same predictions.
    - ``clip``: clip predictions to the range of the training targets.
    - ``history``: the history predictor behind features 5–7 and the fallbacks.
    """

    t0: float | None = None
    week: float = WEEK
    clock_offset: float = 0.0
    processors_column: str | None = None
    grid: Mapping[str, Sequence[Any]] | None = None
    base_params: Mapping[str, Any] | None = None
    cv: int = 5
    cv_kind: Literal["kfold", "timeseries"] = "kfold"
    select_features: bool = True
    max_train_rows: int | None = None
    min_train_rows: int = 20
    per_user: bool = False
    n_jobs: int | None = None
    random_state: int = 0
    clip: bool = True
    history: HistoryConfig = field(default_factory=HistoryConfig)

    def __post_init__(self) -> None:
        if self.t0 is not None and not math.isfinite(self.t0):
            raise ValueError(f"t0 must be finite, got {self.t0}")
        if not (math.isfinite(self.week) and self.week > 0):
            raise ValueError(f"week must be a positive number of seconds, got {self.week}")
        if not math.isfinite(self.clock_offset):
            raise ValueError(f"clock_offset must be finite, got {self.clock_offset}")
        if self.cv < 2:
            raise ValueError(f"cv must be ≥ 2, got {self.cv}")
        if self.cv_kind not in ("kfold", "timeseries"):
            raise ValueError(f"cv_kind must be 'kfold' or 'timeseries', got {self.cv_kind!r}")
        if self.max_train_rows is not None and self.max_train_rows < 1:
            raise ValueError(f"max_train_rows must be ≥ 1 or None, got {self.max_train_rows}")
        if self.min_train_rows < 1:
            raise ValueError(f"min_train_rows must be ≥ 1, got {self.min_train_rows}")
        if not isinstance(self.history, HistoryConfig):
            raise ValueError(f"history must be a HistoryConfig, got {type(self.history).__name__}")


# ------------------------------------------------------------------------------------------------ features


def _static_features(jobs: pl.DataFrame, cfg: MLPowerConfig) -> np.ndarray:
    """Features 1–4 (known at submission from the job's own request)."""
    submit = jobs["submit_time"].cast(pl.Float64).to_numpy()
    hour = np.floor(np.mod(submit + cfg.clock_offset, 86_400.0) / 3600.0)
    size = jobs["size"].cast(pl.Float64)
    name = cfg.processors_column
    if name is None:
        name = next((c for c in ("pm100_num_cores_req", "cores") if c in jobs.columns), "size")
    elif name not in jobs.columns:
        raise ValueError(f"processors column {name!r} is not in the job table")
    procs = jobs[name].cast(pl.Float64).fill_null(size).to_numpy()
    walltime = jobs["walltime"].cast(pl.Float64).to_numpy()
    return np.column_stack([hour, procs, size.to_numpy(), walltime]).astype(np.float64)


def _history_columns(metric: str) -> tuple[str, str, str]:
    return f"hist_{metric}", f"hist_std_{metric}", f"last_{metric}"


def ml_features(jobs: pl.DataFrame, completion: np.ndarray, cfg: MLPowerConfig | None = None) -> pl.DataFrame:
    """Table 2 for every job at its submission (trace protocol; ``jobs`` in queue order, ``completion`` aligned).

    Columns: ``hour``, ``processors``, ``nodes``, ``walltime``; per metric ``hist_<m>`` (history prediction),
    ``hist_std_<m>`` and ``last_<m>`` (null when the user has no finished job with that metric); and
    ``has_user_history``.
    """
    cfg = cfg or MLPowerConfig()
    hist = history_sweep(jobs, np.asarray(completion, dtype=np.float64), cfg.history)
    static = _static_features(jobs, cfg)
    cols = [pl.Series(name, static[:, k]) for k, name in enumerate(_STATIC)]
    for m in METRICS:
        h, s, last = _history_columns(m)
        cols += [hist[f"pred_{m}"].alias(h), hist[f"hist_std_{m}"].alias(s), hist[f"last_{m}"].alias(last)]
    cols.append(hist["has_user_history"])
    return pl.DataFrame(cols)


def _week_index(t: np.ndarray | float, t0: float, week: float) -> np.ndarray:
    """k with t0 + k·week ≤ t < t0 + (k+1)·week (robust to rounding). Jobs with k ≥ 1 use the model trained at
    t0 + k·week, i.e. the end of week w = k − 1."""
    t = np.asarray(t, dtype=np.float64)
    k = np.floor((t - t0) / week)
    k = np.where(t < t0 + k * week, k - 1, k)
    k = np.where(t >= t0 + (k + 1) * week, k + 1, k)
    return k.astype(np.int64)


# ------------------------------------------------------------------------------------------------ predictor


@dataclass
class _Fitted:
    model: RFECVGridRegressor
    lo: float
    hi: float


class _Table:
    """What training and inference read, per job row: features, targets, completions (NaN = not seen)."""

    def __init__(self, jobs: pl.DataFrame, cfg: MLPowerConfig) -> None:
        n = jobs.height
        users, _, vals, multi = _inputs(jobs, cfg.history)
        self.users = users
        ids = jobs["user_id"] if "user_id" in jobs.columns else pl.Series([None] * n, dtype=pl.Int64)
        self.user_ids = ids.cast(pl.Int64).fill_null(-1).to_numpy()  # for the report
        targets = vals.copy()
        targets[~multi, 2] = np.nan  # σ only from jobs with more than one power sample
        self.targets = targets
        self.static = _static_features(jobs, cfg)
        self.lag = np.full((n, 3, 3), np.nan)  # [row, metric, (history, window std, last)]
        self.completion = np.full(n, np.nan)


class WeeklyMLPowerPredictor:
    """The weekly online ML predictor (``OnlinePredictor``) for one model of :data:`ML_MODELS`.

    ``sweep`` runs the trace protocol in one pass; ``bind``/``observe``/``predict`` retrain when ``now`` enters a
    new week. Both fill ``report`` (one row per fitted model: week, metric, training rows, kept features, chosen
    hyper-parameters, CV RMSE, fit time).

    Learned state (scikit-learn's trailing underscore, set by ``bind`` or ``sweep``): ``t0_`` (start of week 0),
    ``records_`` (the rows of ``report``); incrementally also ``table_`` (features, targets, completions),
    ``history_`` (the history predictor behind the lag features), ``week_`` and ``models_`` (the current week's
    fitted models) and ``out_`` (predictions so far).
    """

    outputs: tuple[str, ...] = OUTPUTS

    def __init__(self, model: str = "ml-linear", cfg: MLPowerConfig | None = None) -> None:
        if model not in ML_MODELS:
            raise ValueError(f"model must be one of {tuple(ML_MODELS)}, got {model!r}")
        self.name = model
        self.cfg = cfg or MLPowerConfig()

    # -- shared by both drivers

    def _estimator(self) -> RFECVGridRegressor:
        cfg = self.cfg
        params = dict(DEFAULT_BASE_PARAMS.get(self.name, {}) if cfg.base_params is None else cfg.base_params)
        grid = DEFAULT_GRIDS[self.name] if cfg.grid is None else cfg.grid
        return RFECVGridRegressor(
            ML_MODELS[self.name](**params),
            dict(grid),
            cv=cfg.cv,
            cv_kind=cfg.cv_kind,
            select=cfg.select_features,
            n_jobs=cfg.n_jobs,
            random_state=cfg.random_state,
        )

    def _design(self, table: _Table, rows: np.ndarray, m: int) -> np.ndarray:
        return np.column_stack([table.static[rows], table.lag[rows, m, :]])

    def _train(self, table: _Table, k: int) -> list[dict[int, _Fitted]]:
        """Models of the week ending at t0 + k·week, per metric (key −1 = global, else the user index)."""
        cfg = self.cfg
        end = self.t0_ + k * cfg.week
        done = table.completion < end  # NaN compares False
        lag_ok = np.isfinite(table.lag).all(axis=2)
        models: list[dict[int, _Fitted]] = []
        for m, metric in enumerate(METRICS):
            rows = np.flatnonzero(done & lag_ok[:, m] & np.isfinite(table.targets[:, m]))
            rows = rows[np.lexsort((rows, table.completion[rows]))]  # the order the folds cut
            groups = [(-1, rows)]
            if cfg.per_user:
                users = table.users[rows]
                groups = [(int(u), rows[users == u]) for u in np.unique(users[users >= 0])]
            fitted: dict[int, _Fitted] = {}
            for key, grows in groups:
                if cfg.max_train_rows is not None:
                    grows = grows[-cfg.max_train_rows :]
                if grows.size < cfg.min_train_rows:
                    continue
                y = table.targets[grows, m]
                start = time.perf_counter()
                est = self._estimator().fit(self._design(table, grows, m), y)
                fitted[key] = _Fitted(est, float(y.min()), float(y.max()))
                self.records_.append(
                    {
                        "model": self.name,
                        "week": k - 1,
                        "week_end": end,
                        "metric": metric,
                        "user": None if key < 0 else int(table.user_ids[grows[0]]),
                        "n_train": int(grows.size),
                        "features": [f for f, kept in zip(FEATURE_NAMES, est.support_, strict=True) if kept],
                        "params": json.dumps(est.best_params_, sort_keys=True),
                        "cv_rmse": math.sqrt(-est.best_score_) if est.best_score_ <= 0 else math.nan,
                        "fit_s": time.perf_counter() - start,
                    }
                )
            models.append(fitted)
        return models

    def _apply(self, table: _Table, models: list[dict[int, _Fitted]], rows: np.ndarray, out: np.ndarray) -> None:
        """Overwrite ``out[rows, m]`` (history values) with model predictions where the lag features exist."""
        for m, fitted in enumerate(models):
            if not fitted:
                continue
            ok = rows[np.isfinite(table.lag[rows, m, :]).all(axis=1)]
            if not ok.size:
                continue
            if self.cfg.per_user:
                keys = table.users[ok]
                parts = [(fitted.get(int(u)), ok[keys == u]) for u in np.unique(keys)]
            else:
                parts = [(fitted.get(-1), ok)]
            for f, sel in parts:
                if f is not None:
                    pred = f.model._predict_rows(self._design(table, sel, m))
                    out[sel, m] = np.clip(pred, f.lo, f.hi) if self.cfg.clip else pred

    def _t0_of(self, jobs: pl.DataFrame) -> float:
        if self.cfg.t0 is not None:
            return float(self.cfg.t0)
        return float(jobs["submit_time"][0]) if jobs.height else 0.0

    @property
    def report(self) -> pl.DataFrame:
        """One row per fitted model (``params`` as JSON; ``fit_s`` is wall time, the rest is deterministic)."""
        schema: dict[str, PolarsDataType] = {
            "model": pl.String,
            "week": pl.Int64,
            "week_end": pl.Float64,
            "metric": pl.String,
            "user": pl.Int64,
            "n_train": pl.Int64,
            "features": pl.List(pl.String),
            "params": pl.String,
            "cv_rmse": pl.Float64,
            "fit_s": pl.Float64,
        }
        # records_ exists once bound or swept; before, no model was fitted
        return pl.DataFrame(getattr(self, "records_", []), schema=schema)

    # -- trace protocol

    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame:
        """Every job's prediction under the trace protocol (``jobs`` in queue order, ``completion`` aligned)."""
        self.records_: list[dict[str, Any]] = []
        self.t0_ = self._t0_of(jobs)
        completion = np.asarray(completion, dtype=np.float64)
        feats = ml_features(jobs, completion, self.cfg)
        table = _Table(jobs, self.cfg)
        table.completion = completion.copy()
        for m, metric in enumerate(METRICS):
            for q, col in enumerate(_history_columns(metric)):
                table.lag[:, m, q] = feats[col].cast(pl.Float64).fill_null(np.nan).to_numpy()
        out = table.lag[:, :, 0].copy()
        weeks = _week_index(jobs["submit_time"].cast(pl.Float64).to_numpy(), self.t0_, self.cfg.week)
        for k in np.unique(weeks[weeks >= 1]):
            rows = np.flatnonzero(weeks == k)
            self._apply(table, self._train(table, int(k)), rows, out)
        cols = [pl.Series(name, out[:, m]) for m, name in enumerate(OUTPUTS[:3])]
        return pl.DataFrame([*cols, feats["has_user_history"]])

    # -- incremental (simulator)

    def bind(self, jobs: pl.DataFrame) -> None:
        self.records_ = []
        self.t0_ = self._t0_of(jobs)
        self.table_ = _Table(jobs, self.cfg)
        self.history_ = HistoryPowerPredictor(self.cfg.history, features=True)
        self.history_.bind(jobs)
        self.week_ = 0
        self.models_: list[dict[int, _Fitted]] = []
        self.out_ = np.empty((jobs.height, 3))

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        self.table_.completion[rows] = np.asarray(end_times, dtype=np.float64)
        self.history_.observe(rows, end_times)

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        rows = np.asarray(rows, dtype=np.int64)
        hist = self.history_.predict(rows, now)
        table = self.table_
        for m, metric in enumerate(METRICS):
            table.lag[rows, m, 0] = hist[f"pred_{metric}"]
            table.lag[rows, m, 1] = hist[f"hist_std_{metric}"]
            table.lag[rows, m, 2] = hist[f"last_{metric}"]
        self.out_[rows] = table.lag[rows, :, 0]
        k = int(_week_index(float(now), self.t0_, self.cfg.week))
        if k >= 1:
            if k != self.week_:
                self.models_ = self._train(table, k)
                self.week_ = k
            self._apply(table, self.models_, rows, self.out_)
        result = {name: self.out_[rows, m] for m, name in enumerate(OUTPUTS[:3])}
        result["has_user_history"] = hist["has_user_history"]
        return result


# ------------------------------------------------------------------------------------------------ conveniences


def predict_power(
    jobs: pl.DataFrame,
    method: str,
    completion: np.ndarray | str = "auto",
    *,
    machine_size: int | None = None,
    use_sweep: bool = True,
    **options: Any,
) -> pl.DataFrame:
    """Per-node power predictions (``OUTPUTS``) of ``method`` (one of :data:`METHODS`) under the trace protocol,
    aligned with the rows of ``jobs`` (any order; predicted in queue order).

    ``completion``: completion times aligned with ``jobs``, or a source for
    :func:`~wattsched.predict.online.completion_times` (an EASY replay needs ``machine_size``). ``options`` are
    :class:`HistoryConfig` fields for "history" and "global-mean", :class:`MLPowerConfig` fields for the ML models
    (the per-week report is on :class:`WeeklyMLPowerPredictor`).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(completion, str):
        completion, _ = completion_times(jobs, completion, machine_size=machine_size)
    completion = np.asarray(completion, dtype=np.float64)
    if completion.shape != (jobs.height,):
        raise ValueError(f"completion times must align with the {jobs.height} jobs, got shape {completion.shape}")
    if method in ML_MODELS:
        predictor = make_power_predictor(method, **options)  # MLPowerConfig fields, ``history`` among them
    else:
        predictor = make_power_predictor(method, history=HistoryConfig(**options))
    order = jobs.with_row_index("_row").sort(["submit_time", "job_id"], maintain_order=True)["_row"].to_numpy()
    if np.array_equal(order, np.arange(jobs.height)):
        return predict_online(predictor, jobs, completion, use_sweep=use_sweep)
    pred = predict_online(predictor, jobs[order], completion[order], use_sweep=use_sweep)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return pred[inverse]


def mae_summary(jobs: pl.DataFrame, predictions: pl.DataFrame, cfg: HistoryConfig | None = None) -> dict[str, Any]:
    """MAE (W per node) per metric over the jobs with a known target (σ: more than one sample): over all of them,
    over those with user history (``predictions["has_user_history"]``), and the median over users of each user's
    MAE (the paper's Fig. 3 statistic; all of the user's jobs)."""
    users, _, vals, multi = _inputs(jobs, cfg or HistoryConfig())
    has = predictions["has_user_history"].to_numpy()
    summary: dict[str, Any] = {}
    for m, metric in enumerate(METRICS):
        err = np.abs(predictions[f"pred_{metric}"].to_numpy() - vals[:, m])
        known = np.isfinite(err) & (multi if m == 2 else True)
        e, u = err[known], users[known]
        per_user = np.bincount(u[u >= 0], weights=e[u >= 0]) / np.maximum(np.bincount(u[u >= 0]), 1)
        counts = np.bincount(u[u >= 0])
        summary[metric] = {
            "all": float(e.mean()) if e.size else math.nan,
            "with_history": float(err[known & has].mean()) if np.any(known & has) else math.nan,
            "median_user": float(np.median(per_user[counts > 0])) if np.any(counts > 0) else math.nan,
            "n_all": int(e.size),
            "n_with_history": int(np.count_nonzero(known & has)),
        }
    return summary
