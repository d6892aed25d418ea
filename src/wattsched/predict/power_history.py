"""The history power predictor of paper 000 (§4.1, Eq. 1–3; docs/prediction.md §2), online and O(1) per job.

For job j of user u submitted at r, and each metric (per-node ``power_mean``, ``power_max``, ``power_std``):
the user's jobs completed at or before r form the history H; with window size s, W = {C ≥ r − s} and

    θ = (1 − (r − C)/s)^α,        P̂ = Σ_W θ·P / Σ_W θ.

**Whole history** (the paper's setting, default): s = r − C_first + ε ([AMBIG-0.4]: ε = 1 s so that the
oldest job keeps a tiny weight). Then θ = ((C − C_first + ε)/s)^α and s cancels from the ratio: each job's
weight (C − C_first + ε)^α is fixed when it completes, so two running sums per user give P̂ in O(1) for any α.
**Fixed window** (``window=s``): the weights slide with r; for integer α the binomial expansion of
(C − (r − s))^α turns the ratio into α + 1 running power sums per user, kept over the window with a per-user
FIFO of completions (times centred on the first submission, so the sums stay well conditioned).

Edge cases ([AMBIG-0.4]): Σθ = 0 → the unweighted mean of W; no history (or an empty window) → the mean of
that metric over every job completed so far, all users; nothing completed yet → ``fallback_watts`` for mean and
max (the platform's maximum node power), 0 for std. σ uses only jobs with more than one power sample.
``has_user_history`` says whether the user had a completed job with a known ``power_mean``.

The sweep also yields the lag features of the weekly ML predictor (Table 2, features 5–7): P̂, the unweighted
standard deviation (ddof = 0) of the metric over W, and the metric of the user's last completed job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np
import polars as pl

from wattsched.core.scalars import as_int

METRICS = ("power_mean", "power_max", "power_std")
OUTPUTS = ("pred_power_mean", "pred_power_max", "pred_power_std", "has_user_history")
#: Lag feature columns (per metric): window std and last completed value.
FEATURES = tuple(f"{kind}_{m}" for kind in ("hist_std", "last") for m in METRICS)

# Per (user, metric) state columns.
_FIRST_C, _SW, _SWP, _CNT, _SP, _SP2, _LAST, _HEAD, _TAIL, _NSTATE = range(10)
_NONE = -1


@dataclass(frozen=True)
class HistoryConfig:
    """Options of the history predictor (defaults: the paper's setting with the [AMBIG-0.4] resolution)."""

    alpha: float = 2.0
    eps: float = 1.0
    window: float | None = None  # seconds; None = the whole history
    fallback_watts: float = 2100.0  # per-node max power (Marconi100) when nothing has completed yet
    sample_period: float = 20.0  # to count a job's power samples when it has no profile column

    def __post_init__(self) -> None:
        if not (math.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be a finite number ≥ 0, got {self.alpha}")
        if not (math.isfinite(self.eps) and self.eps >= 0):
            raise ValueError(f"eps must be a finite number ≥ 0, got {self.eps}")
        if self.window is not None:
            if not (math.isfinite(self.window) and self.window > 0):
                raise ValueError(f"window must be a positive number of seconds, got {self.window}")
            if self.alpha != int(self.alpha) or self.alpha > 8:
                raise ValueError(f"a fixed window needs an integer alpha ≤ 8 (running power sums), got {self.alpha}")


class _State:
    """Numpy state shared by the sweep and the incremental predictor."""

    def __init__(self, n: int, n_users: int, cfg: HistoryConfig) -> None:
        self.user = np.full((max(n_users, 1), 3, _NSTATE), 0.0)
        self.user[:, :, _FIRST_C] = np.nan
        self.user[:, :, _LAST] = np.nan
        self.user[:, :, _HEAD] = _NONE
        self.user[:, :, _TAIL] = _NONE
        order = int(cfg.alpha) if cfg.window is not None else 0
        self.powers = np.zeros((max(n_users, 1), 3, 2, order + 1))  # Σ x^k·P and Σ x^k over the window
        self.nxt = np.full((n, 3), _NONE, dtype=np.int64)  # per-user FIFO of completions in the window
        self.glob = np.zeros((3, 2))  # Σ P and count over all completed jobs


@nb.njit(cache=True)
def _observe(j, c, u, vals, multi, st, powers, nxt, glob, alpha, eps, windowed, origin):
    """Fold job j, completed at c, into its user's sums and the global mean."""
    for m in range(3):
        v = vals[j, m]
        if math.isnan(v) or (m == 2 and not multi[j]):
            continue
        glob[m, 0] += v
        glob[m, 1] += 1.0
        if u < 0:
            continue
        s = st[u, m]
        if math.isnan(s[_FIRST_C]):
            s[_FIRST_C] = c
        s[_CNT] += 1.0
        s[_SP] += v
        s[_SP2] += v * v
        s[_LAST] = v
        if windowed:
            x = c - origin
            xk = 1.0
            for k in range(powers.shape[3]):
                powers[u, m, 0, k] += xk * v
                powers[u, m, 1, k] += xk
                xk *= x
            if s[_TAIL] == _NONE:
                s[_HEAD] = j
            else:
                nxt[int(s[_TAIL]), m] = j
            s[_TAIL] = j
        else:
            w = (c - s[_FIRST_C] + eps) ** alpha
            s[_SW] += w
            s[_SWP] += w * v


@nb.njit(cache=True)
def _slide(u, r, window, completion, vals, st, powers, nxt, origin):
    """Drop the user's completions older than r − window from the window sums (FIFO, amortised O(1))."""
    for m in range(3):
        s = st[u, m]
        while s[_HEAD] != _NONE and completion[int(s[_HEAD])] < r - window:
            j = int(s[_HEAD])
            v = vals[j, m]
            s[_CNT] -= 1.0
            s[_SP] -= v
            s[_SP2] -= v * v
            x = completion[j] - origin
            xk = 1.0
            for k in range(powers.shape[3]):
                powers[u, m, 0, k] -= xk * v
                powers[u, m, 1, k] -= xk
                xk *= x
            s[_HEAD] = nxt[j, m]
            if s[_HEAD] == _NONE:
                s[_TAIL] = _NONE
                s[_CNT] = 0.0
                s[_SP] = 0.0
                s[_SP2] = 0.0
                for k in range(powers.shape[3]):
                    powers[u, m, 0, k] = 0.0
                    powers[u, m, 1, k] = 0.0


@nb.njit(cache=True)
def _binomial(n, k):
    out = 1.0
    for i in range(k):
        out = out * (n - i) / (i + 1)
    return out


@nb.njit(cache=True)
def _predict(i, r, u, st, powers, glob, fallback, window, origin, out, feats):
    """Write the three predictions, the history flag and the six lag features of job i submitted at r."""
    has = False
    for m in range(3):
        s = st[u, m] if u >= 0 else st[0, m]
        cnt = s[_CNT] if u >= 0 else 0.0
        pred = math.nan
        if cnt > 0:
            if m == 0:
                has = True
            if window > 0:
                b = r - window - origin  # θ·window^α = (x − b)^α with x = C − origin
                order = powers.shape[3] - 1
                num = 0.0
                den = 0.0
                for k in range(order + 1):
                    coef = _binomial(order, k) * (-b) ** (order - k)
                    num += coef * powers[u, m, 0, k]
                    den += coef * powers[u, m, 1, k]
            else:
                num = s[_SWP]
                den = s[_SW]
            pred = num / den if den > 0 else s[_SP] / cnt
            mean = s[_SP] / cnt
            feats[i, m] = math.sqrt(max(s[_SP2] / cnt - mean * mean, 0.0))
        else:
            feats[i, m] = math.nan
        feats[i, 3 + m] = s[_LAST] if u >= 0 else math.nan
        if math.isnan(pred):
            pred = glob[m, 0] / glob[m, 1] if glob[m, 1] > 0 else fallback if m < 2 else 0.0
        out[i, m] = pred
    return has


@nb.njit(cache=True)
def _sweep(
    submit,
    completion,
    done,
    users,
    vals,
    multi,
    st,
    powers,
    nxt,
    glob,
    alpha,
    eps,
    window,
    fallback,
    origin,
    out,
    feats,
    has,
):
    """The trace protocol in one pass (the semantics of ``predict_online``'s generic driver); ``done`` lists
    the jobs with a known completion time, in completion order."""
    n = submit.size
    m_done = done.size
    deferred = np.empty(n, np.int64)
    nd = 0
    ci = 0
    lo = 0
    windowed = window > 0
    while lo < n:
        now = submit[lo]
        hi = lo
        while hi < n and submit[hi] == now:
            hi += 1
        for q in range(nd):
            j = deferred[q]
            _observe(j, completion[j], users[j], vals, multi, st, powers, nxt, glob, alpha, eps, windowed, origin)
        nd = 0
        while ci < m_done and completion[done[ci]] <= now:
            j = done[ci]
            if j >= lo:
                deferred[nd] = j
                nd += 1
            else:
                _observe(j, completion[j], users[j], vals, multi, st, powers, nxt, glob, alpha, eps, windowed, origin)
            ci += 1
        for i in range(lo, hi):
            u = users[i]
            if windowed and u >= 0:
                _slide(u, now, window, completion, vals, st, powers, nxt, origin)
            has[i] = _predict(i, now, u, st, powers, glob, fallback, window, origin, out, feats)
        lo = hi


@nb.njit(cache=True)
def _observe_many(rows, ends, users, vals, multi, st, powers, nxt, glob, alpha, eps, windowed, origin):
    for q in range(rows.size):
        j = rows[q]
        _observe(j, ends[q], users[j], vals, multi, st, powers, nxt, glob, alpha, eps, windowed, origin)


@nb.njit(cache=True)
def _predict_many(rows, now, users, completion, vals, st, powers, nxt, glob, window, fallback, origin, out, feats, has):
    for q in range(rows.size):
        i = rows[q]
        u = users[i]
        if window > 0 and u >= 0:
            _slide(u, now, window, completion, vals, st, powers, nxt, origin)
        has[i] = _predict(i, now, u, st, powers, glob, fallback, window, origin, out, feats)


def _inputs(jobs: pl.DataFrame, cfg: HistoryConfig) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """Dense user indexes (−1 for null), the metric matrix (NaN = unknown) and the more-than-one-sample mask."""
    missing = [m for m in METRICS if m not in jobs.columns]
    if missing:
        raise ValueError(f"the history power predictor needs column(s) {missing} (per-node watts)")
    if "user_id" in jobs.columns:
        codes = jobs["user_id"].rank("dense")
        users = codes.fill_null(0).to_numpy().astype(np.int64) - 1
        n_users = as_int(codes.max() or 0)
    else:
        users = np.full(jobs.height, -1, dtype=np.int64)
        n_users = 0
    vals = np.column_stack([jobs[m].cast(pl.Float64).fill_null(np.nan).to_numpy() for m in METRICS])
    if "power_profile" in jobs.columns:
        multi = (jobs["power_profile"].list.len().fill_null(0) > 1).to_numpy()
    else:
        multi = (jobs["runtime"] > cfg.sample_period).to_numpy()
    return users, n_users, np.ascontiguousarray(vals), multi


def history_sweep(jobs: pl.DataFrame, completion: np.ndarray, cfg: HistoryConfig | None = None) -> pl.DataFrame:
    """Predictions (``OUTPUTS``) and lag features (``FEATURES``) of every job under the trace protocol.

    ``jobs`` is in queue order; ``completion`` holds each job's completion time (NaN = never seen completing).
    """
    cfg = cfg or HistoryConfig()
    n = jobs.height
    users, n_users, vals, multi = _inputs(jobs, cfg)
    submit = jobs["submit_time"].cast(pl.Float64).to_numpy()
    completion = np.ascontiguousarray(completion, dtype=np.float64)
    state = _State(n, n_users, cfg)
    out = np.empty((n, 3))
    feats = np.empty((n, 6))
    has = np.zeros(n, dtype=np.bool_)
    origin = float(submit[0]) if n else 0.0
    known = np.flatnonzero(np.isfinite(completion))
    done = known[np.argsort(completion[known], kind="stable")]
    if n:
        _sweep(
            submit,
            completion,
            done,
            users,
            vals,
            multi,
            state.user,
            state.powers,
            state.nxt,
            state.glob,
            float(cfg.alpha),
            float(cfg.eps),
            float(cfg.window or 0.0),
            float(cfg.fallback_watts),
            origin,
            out,
            feats,
            has,
        )
    return _frame(out, feats, has)


def _frame(out: np.ndarray, feats: np.ndarray, has: np.ndarray) -> pl.DataFrame:
    cols = [pl.Series(name, out[:, m]) for m, name in enumerate(OUTPUTS[:3])]
    cols.append(pl.Series("has_user_history", has))
    cols += [pl.Series(name, feats[:, k], nan_to_null=True) for k, name in enumerate(FEATURES)]
    return pl.DataFrame(cols)


class HistoryPowerPredictor:
    """Eq. 1–3 as an online predictor (``OnlinePredictor``): ``observe`` completions, ``predict`` submissions.

    ``sweep`` runs the whole trace protocol at compiled speed; the incremental methods serve the simulator.
    ``features=True`` adds the lag features to the outputs. ``bind`` sets the learned state (trailing underscore):
    ``state_`` (the per-user running sums), ``completion_``, and the job table's inputs and outputs.
    """

    name = "history"

    def __init__(self, cfg: HistoryConfig | None = None, *, features: bool = False) -> None:
        self.cfg = cfg or HistoryConfig()
        self.features = features
        self.outputs: tuple[str, ...] = OUTPUTS + (FEATURES if features else ())

    def bind(self, jobs: pl.DataFrame) -> None:
        self.users_, n_users, self.vals_, self.multi_ = _inputs(jobs, self.cfg)
        n = jobs.height
        self.state_ = _State(n, n_users, self.cfg)
        self.completion_ = np.full(n, np.nan)
        self.out_ = np.empty((n, 3))
        self.feats_ = np.empty((n, 6))
        self.has_ = np.zeros(n, dtype=np.bool_)
        self.origin_ = float(jobs["submit_time"][0]) if n else 0.0

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        ends = np.asarray(end_times, dtype=np.float64)
        self.completion_[rows] = ends
        s = self.state_
        _observe_many(
            rows,
            ends,
            self.users_,
            self.vals_,
            self.multi_,
            s.user,
            s.powers,
            s.nxt,
            s.glob,
            float(self.cfg.alpha),
            float(self.cfg.eps),
            self.cfg.window is not None,
            self.origin_,
        )

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        rows = np.asarray(rows, dtype=np.int64)
        s = self.state_
        _predict_many(
            rows,
            float(now),
            self.users_,
            self.completion_,
            self.vals_,
            s.user,
            s.powers,
            s.nxt,
            s.glob,
            float(self.cfg.window or 0.0),
            float(self.cfg.fallback_watts),
            self.origin_,
            self.out_,
            self.feats_,
            self.has_,
        )
        result = {name: self.out_[rows, m] for m, name in enumerate(OUTPUTS[:3])}
        result["has_user_history"] = self.has_[rows]
        if self.features:
            result |= {name: self.feats_[rows, k] for k, name in enumerate(FEATURES)}
        return result

    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame:
        frame = history_sweep(jobs, completion, self.cfg)
        return frame.select(self.outputs)


class GlobalMeanPowerPredictor:
    """Baseline: the mean of each metric over every job finished so far, all users (``OnlinePredictor``).

    It is the history predictor's own fallback, so it shares its conventions (σ from multi-sample jobs only,
    ``fallback_watts`` before any completion); ``has_user_history`` is the history predictor's flag, so that both
    can be scored over the same jobs.
    """

    name = "global-mean"
    outputs: tuple[str, ...] = OUTPUTS

    def __init__(self, cfg: HistoryConfig | None = None) -> None:
        self.cfg = cfg or HistoryConfig()

    @staticmethod
    def _anonymous(jobs: pl.DataFrame) -> pl.DataFrame:
        return jobs.drop("user_id", strict=False)

    def bind(self, jobs: pl.DataFrame) -> None:
        self.pooled_ = HistoryPowerPredictor(self.cfg)  # every user as one: the global mean
        self.pooled_.bind(self._anonymous(jobs))
        self.users_ = HistoryPowerPredictor(self.cfg)  # per user: the has_user_history flag
        self.users_.bind(jobs)

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        self.pooled_.observe(rows, end_times)
        self.users_.observe(rows, end_times)

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        out = self.pooled_.predict(rows, now)
        out["has_user_history"] = self.users_.predict(rows, now)["has_user_history"]
        return out

    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame:
        pooled = history_sweep(self._anonymous(jobs), completion, self.cfg).select(OUTPUTS[:3])
        flag = history_sweep(jobs, completion, self.cfg)["has_user_history"]
        return pooled.with_columns(flag)
