"""Learning each pending job's power from completed jobs, with the simulator's own online predictors.

:class:`KeyedPowerPredictor` is an :class:`~wattsched.core.predictor.OnlinePredictor` that wraps a registered power
predictor (``predict.registry.make_power_predictor``, ``learning.predictor``): the learning key composed from the
configured fields (``user=alice|nodes=4``) plays the predictor's user, and the learning target is a completed job's
per-node power under the configured definition (``energy / (elapsed · nodes)``, minus the idle power of a node
under ``net``). The same class serves the live advisor (:meth:`PowerLearner.estimate`: bind one frame of completed
jobs ordered by end and the pending ones, observe the completions, predict the pending at ``now``) and the replay,
where the simulator feeds it the simulated completions — one code path for both.

The estimate (``learning.estimate``): ``mean`` is the predictor's estimate; ``max`` the highest per-node power the
key has shown; ``quantile`` the normal approximation ``mean + z_q·σ`` (σ: the spread, ddof 0, of the key's
completed jobs' per-node power; z_q = Φ⁻¹(q)), capped by that highest value. Sacct gives one energy per job, so σ
is the spread between jobs, which is what a new job's mean varies by. A key with fewer than ``min_history`` usable
jobs gets the default (config module docstring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import polars as pl

from wattsched.advise.config import AdvisorConfig
from wattsched.advise.records import QueuedJob
from wattsched.predict.power_history import HistoryConfig
from wattsched.predict.registry import make_power_predictor

__all__ = ["KEY_COLUMN", "TARGET_COLUMN", "Estimate", "KeyedPowerPredictor", "PowerLearner", "default_watts", "key_of"]

#: The columns a frame bound to :class:`KeyedPowerPredictor` carries: the learning key and the per-node target.
KEY_COLUMN = "advise_key"
#: Columns handed on to the wrapped predictor when the bound frame has them (the ML models' static features).
_PASSED = ("walltime", "cores")
TARGET_COLUMN = "advise_target"


@dataclass(frozen=True)
class Estimate:
    """A pending job's per-node power estimate (W, under the configured definition; ``inf`` = unknown, size it at
    the budget), whether its key had history, and where the figure comes from (``history:…`` or ``default:…``)."""

    watts_per_node: float
    has_history: bool
    source: str


def key_of(fields: Sequence[str], values: dict[str, object]) -> str:
    """The learning key: ``field=value`` joined by ``|`` in the configured order."""
    return "|".join(f"{f}={values.get(f)}" for f in fields)


def default_watts(config: AdvisorConfig, idle_watts: float | None) -> tuple[float, str]:
    """The per-node estimate of a job without history, and its source: ``learning.default_watts_per_node``, else
    the worst case ``power.max_watts_per_node`` (minus idle under ``net``; the full figure when idle is unknown,
    which is more conservative), else ``inf``: the job is sized at the whole budget."""
    if config.learning.default_watts_per_node is not None:
        return float(config.learning.default_watts_per_node), "default:configured"
    peak = config.power.max_watts_per_node
    if peak is not None:
        if config.power.definition == "net" and idle_watts is not None:
            return max(float(peak) - idle_watts, 0.0), "default:worst-case"
        return float(peak), "default:worst-case"
    return math.inf, "default:budget"


class KeyedPowerPredictor:
    """A registered power predictor learning per learning key (module docstring). Binds a frame with
    ``submit_time``, ``runtime``, :data:`KEY_COLUMN` and :data:`TARGET_COLUMN` (NaN/null = not learnable)."""

    name = "advisor"
    outputs: tuple[str, ...] = ("watts_per_node", "has_history", "pred_mean", "sigma", "key_max", "at")

    def __init__(self, config: AdvisorConfig, idle_watts: float | None = None) -> None:
        self.config = config
        self.default_, self.default_source_ = default_watts(config, idle_watts)
        fallback = self.default_ if math.isfinite(self.default_) and self.default_ > 0 else 2100.0
        # fallback only feeds the inner predictor before any completion; the default decides for keyless jobs
        self.inner = make_power_predictor(config.learning.predictor, history=HistoryConfig(fallback_watts=fallback))
        self.z = NormalDist().inv_cdf(config.learning.quantile)

    def bind(self, jobs: pl.DataFrame) -> None:
        codes = jobs[KEY_COLUMN].cast(pl.Utf8).fill_null("").rank("dense").cast(pl.Int64)
        self.codes_ = codes.to_numpy() - 1
        k = int(codes.max() or 0)
        target = jobs[TARGET_COLUMN].cast(pl.Float64).fill_null(np.nan).to_numpy()
        self.target_ = target
        inner = pl.DataFrame(
            {
                "job_id": jobs["job_id"] if "job_id" in jobs.columns else np.arange(jobs.height),
                "submit_time": jobs["submit_time"].cast(pl.Float64),
                "runtime": jobs["runtime"].cast(pl.Float64),
                "size": jobs["size"] if "size" in jobs.columns else np.ones(jobs.height, dtype=np.int64),
                "user_id": codes,
                "power_mean": pl.Series(target, nan_to_null=True),
                "power_max": pl.Series(target, nan_to_null=True),
                "power_std": pl.Series(np.full(jobs.height, np.nan), nan_to_null=True),
            }
        ).hstack([jobs[c] for c in _PASSED if c in jobs.columns])
        self.inner.bind(inner)
        self.count_ = np.zeros(max(k, 1))
        self.sum_ = np.zeros(max(k, 1))
        self.sum2_ = np.zeros(max(k, 1))
        self.max_ = np.full(max(k, 1), -np.inf)

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        self.inner.observe(rows, end_times)
        for r in rows:
            v = self.target_[r]
            if np.isfinite(v):
                c = self.codes_[r]
                self.count_[c] += 1
                self.sum_[c] += v
                self.sum2_[c] += v * v
                self.max_[c] = max(self.max_[c], v)

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        rows = np.asarray(rows, dtype=np.int64)
        out = self.inner.predict(rows, now)
        mean = np.asarray(out["pred_power_mean"], dtype=np.float64)
        c = self.codes_[rows]
        n = self.count_[c]
        has = n >= self.config.learning.min_history
        safe = np.maximum(n, 1)
        sigma = np.sqrt(np.maximum(self.sum2_[c] / safe - (self.sum_[c] / safe) ** 2, 0.0))
        top = self.max_[c]
        kind = self.config.learning.estimate
        if kind == "mean":
            est = mean
        elif kind == "max":
            est = top
        else:
            est = np.minimum(mean + self.z * sigma, top)
        est = np.where(has, np.maximum(est, 0.0), self.default_)
        return {
            "watts_per_node": est,
            "has_history": has,
            "pred_mean": np.where(has, mean, np.nan),
            "sigma": np.where(has, sigma, np.nan),
            "key_max": np.where(has, top, np.nan),
            "at": np.full(rows.size, float(now)),
        }


class PowerLearner:
    """The live advisor's learning: ``estimate(history, pending, now)`` from the store's history frame."""

    def __init__(self, config: AdvisorConfig) -> None:
        self.config = config

    def targets(self, history: pl.DataFrame, idle_watts: float | None) -> pl.Series:
        """Each completed job's per-node power under the configured definition (null = not learnable)."""
        usable = pl.col("usable").fill_null(False) if "usable" in history.columns else pl.lit(True)
        if self.config.power.definition == "gross":
            value = pl.col("watts_gross")
        elif idle_watts is not None:
            value = pl.col("watts_gross") - idle_watts
        else:
            value = pl.col("watts_net")
        return history.select(pl.when(usable).then(value).otherwise(None).alias(TARGET_COLUMN)).to_series()

    def estimate(
        self,
        history: pl.DataFrame,
        pending: Sequence[QueuedJob],
        now: float,
        *,
        idle_watts: float | None = None,
    ) -> dict[int, Estimate]:
        """Each pending job's estimate from the completed jobs of ``history`` (``AdvisorStore.history_frame``)
        that ended at or before ``now``. ``idle_watts``: the measured idle power of a node (the configured one wins)."""
        if not pending:
            return {}
        idle = self.config.power.idle_watts_per_node
        idle = idle_watts if idle is None else float(idle)
        fields = self.config.learning.key
        done = history.filter(pl.col("end") <= now).sort("end", "job_id") if history.height else history
        done_keys = [key_of(fields, row) for row in done.select(fields).iter_rows(named=True)] if done.height else []
        target = self.targets(done, idle) if done.height else pl.Series(TARGET_COLUMN, [], dtype=pl.Float64)
        elapsed = (done["end"] - done["start"].fill_null(done["end"])).to_list() if done.height else []
        longest = max(elapsed, default=0.0) or 86_400.0
        frame = pl.DataFrame(
            {
                "job_id": [*done["job_id"].to_list(), *(j.job_id for j in pending)]
                if done.height
                else [j.job_id for j in pending],
                "submit_time": [
                    *(done["submit"].fill_null(now).to_list() if done.height else []),
                    *[now] * len(pending),
                ],
                "runtime": [*elapsed, *[0.0] * len(pending)],
                "size": [*(done["nodes"].to_list() if done.height else []), *(j.nodes for j in pending)],
                # the ML models' walltime feature: a finished record carries no time limit, so its elapsed time
                # stands in; a pending job without a limit gets the longest elapsed time seen (or a day)
                "walltime": [*elapsed, *(longest if j.time_limit is None else j.time_limit for j in pending)],
                KEY_COLUMN: [*done_keys, *(key_of(fields, vars(j)) for j in pending)],
                TARGET_COLUMN: [*target.to_list(), *[None] * len(pending)],
            },
            schema={
                "job_id": pl.Int64,
                "submit_time": pl.Float64,
                "runtime": pl.Float64,
                "size": pl.Int64,
                "walltime": pl.Float64,
                KEY_COLUMN: pl.Utf8,
                TARGET_COLUMN: pl.Float64,
            },
        )
        predictor = KeyedPowerPredictor(self.config, idle)
        predictor.bind(frame)
        if done.height:
            predictor.observe(np.arange(done.height), done["end"].to_numpy())
        rows = np.arange(done.height, frame.height)
        out = predictor.predict(rows, now)
        name = self.config.learning.predictor
        result: dict[int, Estimate] = {}
        for i, job in enumerate(pending):
            has = bool(out["has_history"][i])
            source = f"history:{name}:{self.config.learning.estimate}" if has else predictor.default_source_
            result[job.job_id] = Estimate(float(out["watts_per_node"][i]), has, source)
        return result
