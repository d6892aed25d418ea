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

Estimates no user can talk down (docs/advisor-model.md, "Floors"), applied after the estimate above, in order:

1. **Evidence by size**: a completed job of m nodes is evidence for jobs of up to ``scale_up × m`` nodes. A key
   whose evidence for a job of n nodes is below ``min_history`` gets the default (the worst case): thirty idle
   1-node jobs say nothing about a 4-node job, so a user cannot train a low estimate on small jobs and then
   submit large ones (the poisoned replay of issue 28).
2. **A gradual fall**: from the worst case to the learned value over ``fall_jobs`` jobs of evidence
   (``est = w·learned + (1 − w)·worst``, ``w = min(1, evidence / fall_jobs)``).
3. **A floor per node**: ``floor_watts_per_node``, else ``floor_share`` × the worst case.
4. **What the key was last measured drawing**: never below the key's most recent completed job, nor below what
   its running jobs draw now (``running``: each key's highest current reading).

The worst case: the configured one (``default_watts_per_node``, else ``power.max_watts_per_node``), else the
highest per-node power observed (the nodes' CurrentWatts kept by the live advisor, the completed jobs' per-node
power in both), used once :data:`WORST_MIN_JOBS` jobs have completed; before that it is unknown and a job without
evidence is sized at the whole budget.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import polars as pl

from wattsched.advise.config import AdvisorConfig
from wattsched.advise.records import QueuedJob
from wattsched.core.scalars import as_int
from wattsched.predict.power_history import HistoryConfig
from wattsched.predict.registry import make_power_predictor

__all__ = [
    "KEY_COLUMN",
    "TARGET_COLUMN",
    "WORST_MIN_JOBS",
    "Estimate",
    "KeyedPowerPredictor",
    "PowerLearner",
    "default_watts",
    "key_of",
]

#: Completed jobs before an observed (not configured) worst case is trusted: with fewer, the highest power seen may
#: be the idle power of a cluster that has run nothing yet, and a new key's job would be sized at nearly 0 W.
WORST_MIN_JOBS = 3

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


def default_watts(
    config: AdvisorConfig, idle_watts: float | None, observed_worst: float | None = None
) -> tuple[float, str]:
    """The per-node estimate of a job without history, and its source: ``learning.default_watts_per_node``, else
    the worst case ``power.max_watts_per_node`` (minus idle under ``net``; the full figure when idle is unknown,
    which is more conservative), else ``observed_worst`` (gross, the highest node power seen; net of idle under
    ``net``), else ``inf``: the job is sized at the whole budget."""
    if config.learning.default_watts_per_node is not None:
        return float(config.learning.default_watts_per_node), "default:configured"
    peak = config.power.max_watts_per_node
    source = "default:worst-case"
    if peak is None and observed_worst is not None:
        peak, source = observed_worst, "default:observed-worst"
    if peak is not None:
        if config.power.definition == "net" and idle_watts is not None:
            return max(float(peak) - idle_watts, 0.0), source
        return float(peak), source
    return math.inf, "default:budget"


class KeyedPowerPredictor:
    """A registered power predictor learning per learning key (module docstring). Binds a frame with
    ``submit_time``, ``runtime``, ``size``, :data:`KEY_COLUMN` and :data:`TARGET_COLUMN` (NaN/null = not
    learnable). ``observed_worst``: the highest gross node power seen (live: CurrentWatts); ``running``: per learning
    key, the highest per-node power its running jobs draw now (same definition as the targets)."""

    name = "advisor"
    outputs: tuple[str, ...] = ("watts_per_node", "has_history", "pred_mean", "sigma", "key_max", "at", "evidence")

    def __init__(
        self,
        config: AdvisorConfig,
        idle_watts: float | None = None,
        *,
        observed_worst: float | None = None,
        running: Mapping[str, float] | None = None,
    ) -> None:
        self.config = config
        self.idle = idle_watts
        self.observed_worst = observed_worst
        self.running = dict(running or {})
        configured, _ = default_watts(config, idle_watts)
        fallback = configured if math.isfinite(configured) and configured > 0 else 2100.0
        # fallback only feeds the inner predictor before any completion; the default decides for keyless jobs
        self.inner = make_power_predictor(config.learning.predictor, history=HistoryConfig(fallback_watts=fallback))
        self.z = NormalDist().inv_cdf(config.learning.quantile)

    def bind(self, jobs: pl.DataFrame) -> None:
        keys = jobs[KEY_COLUMN].cast(pl.Utf8).fill_null("")
        codes = keys.rank("dense").cast(pl.Int64)
        self.codes_ = codes.to_numpy() - 1
        k = as_int(codes.max() or 0)
        self.code_of_ = dict(zip(keys.to_list(), self.codes_.tolist(), strict=True))
        target = jobs[TARGET_COLUMN].cast(pl.Float64).fill_null(np.nan).to_numpy()
        self.target_ = target
        self.size_ = (
            jobs["size"].cast(pl.Int64).to_numpy() if "size" in jobs.columns else np.ones(jobs.height, dtype=np.int64)
        )
        inner = pl.DataFrame(
            {
                "job_id": jobs["job_id"] if "job_id" in jobs.columns else np.arange(jobs.height),
                "submit_time": jobs["submit_time"].cast(pl.Float64),
                "runtime": jobs["runtime"].cast(pl.Float64),
                "size": self.size_,
                "user_id": codes,
                "power_mean": pl.Series(target, nan_to_null=True),
                "power_max": pl.Series(target, nan_to_null=True),
                "power_std": pl.Series(np.full(jobs.height, np.nan), nan_to_null=True),
            }
        ).hstack([jobs[c] for c in _PASSED if c in jobs.columns])
        self.inner.bind(inner)
        n = max(k, 1)
        self.count_ = np.zeros(n)
        self.sum_ = np.zeros(n)
        self.sum2_ = np.zeros(n)
        self.max_ = np.full(n, -np.inf)
        self.last_ = np.full(n, -np.inf)  # the key's most recent completed job's per-node power
        self.sizes_: list[list[int]] = [[] for _ in range(n)]  # node counts of the key's usable jobs, sorted
        self.seen_ = 0  # usable completed jobs of every key
        self.seen_max_ = -np.inf  # the highest per-node power of any of them

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
                self.last_[c] = v
                bisect.insort(self.sizes_[c], int(self.size_[r]))
                self.seen_ += 1
                self.seen_max_ = max(self.seen_max_, v)

    def worst(self) -> tuple[float, str]:
        """The per-node worst case now and its source (module docstring): configured, else observed once
        :data:`WORST_MIN_JOBS` jobs have completed, else ``inf``."""
        configured = default_watts(self.config, self.idle)
        if math.isfinite(configured[0]) or self.seen_ < WORST_MIN_JOBS:
            return configured
        observed = default_watts(self.config, self.idle, self.observed_worst)[0] if self.observed_worst else 0.0
        return max(observed, float(self.seen_max_)), "default:observed-worst"

    def evidence(self, code: int, nodes: int) -> int:
        """The key's usable jobs of at least ``nodes / scale_up`` nodes (evidence by size, module docstring)."""
        sizes = self.sizes_[code]
        return len(sizes) - bisect.bisect_left(sizes, math.ceil(nodes / self.config.learning.scale_up - 1e-9))

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        rows = np.asarray(rows, dtype=np.int64)
        learning = self.config.learning
        out = self.inner.predict(rows, now)
        mean = np.asarray(out["pred_power_mean"], dtype=np.float64)
        c = self.codes_[rows]
        n = self.count_[c]
        safe = np.maximum(n, 1)
        sigma = np.sqrt(np.maximum(self.sum2_[c] / safe - (self.sum_[c] / safe) ** 2, 0.0))
        top = self.max_[c]
        if learning.estimate == "mean":
            est = mean
        elif learning.estimate == "max":
            est = top
        else:
            est = np.minimum(mean + self.z * sigma, top)
        est = np.maximum(est, 0.0)
        worst, _ = self.worst()
        floor = (
            float(learning.floor_watts_per_node)
            if learning.floor_watts_per_node is not None
            else (learning.floor_share * worst if math.isfinite(worst) else 0.0)
        )
        evidence = np.array([self.evidence(int(code), int(self.size_[r])) for code, r in zip(c, rows, strict=True)])
        has = evidence >= learning.min_history
        if math.isfinite(worst):  # the gradual fall from the worst case
            w = np.minimum(evidence / learning.fall_jobs, 1.0)
            est = np.where(est < worst, w * est + (1.0 - w) * worst, est)
        est = np.maximum(est, floor)
        est = np.maximum(est, np.where(np.isfinite(self.last_[c]), self.last_[c], 0.0))
        if self.running:  # what the key's running jobs draw now
            drawn = {self.code_of_[k]: w_ for k, w_ in self.running.items() if k in self.code_of_}
            est = np.maximum(est, np.array([drawn.get(int(code), 0.0) for code in c]))
        est = np.where(has, est, worst)
        return {
            "watts_per_node": est,
            "has_history": has,
            "pred_mean": np.where(has, mean, np.nan),
            "sigma": np.where(has, sigma, np.nan),
            "key_max": np.where(has, top, np.nan),
            "at": np.full(rows.size, float(now)),
            "evidence": evidence,
        }


class PowerLearner:
    """The live advisor's learning: ``estimate(history, pending, now)`` from the store's history frame."""

    def __init__(self, config: AdvisorConfig) -> None:
        self.config = config

    def targets(self, history: pl.DataFrame, idle_watts: float | None, correction: float = 1.0) -> pl.Series:
        """Each completed job's per-node power under the configured definition (null = not learnable); sacct's
        gross figure times ``correction`` (``AdvisorStore.sacct_correction``: how far sacct under-reads)."""
        usable = pl.col("usable").fill_null(False) if "usable" in history.columns else pl.lit(True)
        if self.config.power.definition == "gross":
            value = pl.col("watts_gross") * correction
        elif idle_watts is not None:
            value = pl.col("watts_gross") * correction - idle_watts
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
        observed_worst: float | None = None,
        running: Mapping[str, float] | None = None,
        correction: float = 1.0,
    ) -> dict[int, Estimate]:
        """Each pending job's estimate from the completed jobs of ``history`` (``AdvisorStore.history_frame``)
        that ended at or before ``now``. ``idle_watts``: the measured idle power of a node (the configured one
        wins); ``observed_worst``: the highest gross node power seen; ``running``: per learning key, what its running
        jobs draw per node now (the target's definition); ``correction``: sacct's under-read factor."""
        if not pending:
            return {}
        idle = self.config.power.idle_watts_per_node
        idle = idle_watts if idle is None else float(idle)
        fields = self.config.learning.key
        done = history.filter(pl.col("end") <= now).sort("end", "job_id") if history.height else history
        done_keys = [key_of(fields, row) for row in done.select(fields).iter_rows(named=True)] if done.height else []
        target = self.targets(done, idle, correction) if done.height else pl.Series(TARGET_COLUMN, [], dtype=pl.Float64)
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
        predictor = KeyedPowerPredictor(self.config, idle, observed_worst=observed_worst, running=running)
        predictor.bind(frame)
        if done.height:
            predictor.observe(np.arange(done.height), done["end"].to_numpy())
        rows = np.arange(done.height, frame.height)
        out = predictor.predict(rows, now)
        name = self.config.learning.predictor
        result: dict[int, Estimate] = {}
        worst_source = predictor.worst()[1]
        for i, job in enumerate(pending):
            has = bool(out["has_history"][i])
            source = f"history:{name}:{self.config.learning.estimate}" if has else worst_source
            result[job.job_id] = Estimate(float(out["watts_per_node"][i]), has, source)
        return result
