"""EAMC's Energy-prediction Priority Module (paper 002 §4; docs/eamc.md, EPM): per job and partition, the
optimal frequency (Eq. 4) and the partition efficiency ``part_eff`` (Eq. 5) that orders a job's partitions.

Everything here is a pure function of arrays, and :func:`evaluate` reads only the :class:`AppDB` (knowledge), never
a job's true runtime or power. It is vectorised over jobs × partitions × frequencies: 5,000 jobs on two partitions
with 15 frequencies each take about 20 ms.

Eq. 4, for one job-partition jp over its available frequencies f (E_min, t_min: minima over f within jp)::

    dist(f) = sqrt( (E(f)/E_min)² + t_weight · (t(f)/t_min)² )        f_opt = argmin_f dist(f)

Eq. 5, for each partition p of job j at its own f_opt (minima over the job's partitions)::

    part_eff_p = sqrt( (E_p/E_min,j)² + t_weight · (t_p/t_min,j)² )    lower is better

Named options (defaults: the resolutions of docs/decisions.md, Ambiguities of the papers):

* [AMBIG-2.2] ``weight_placement``: ``"paper"`` puts t_weight outside the square as above; ``"code"`` inside,
  ``(t_weight · t/t_min)²``, as the EAMC code does. They agree at t_weight = 1. The choice applies to Eq. 4 and
  to the Euclidean Eq. 5.
* [AMBIG-2.3] ``score``: ``"euclidean"`` is Eq. 5 with a correct total order over any number of partitions;
  ``"code_linear"`` is the code's ``E/E_min + t_weight · T/T_min`` with T = the predicted time rounded up to whole
  minutes (its ``best_time``). The code's comparator only orders two partitions correctly; we sort properly, which
  is the same for two.
* [AMBIG-2.4] ``threshold_mode`` (PriorityInc-V demotion): ``"relative"`` demotes an entry whose part_eff is at
  least 35 % above the job's best (paper text), ``"absolute"`` one at least 0.35 above it (code). ``tiering``:
  ``"strict"`` gives tiers (rank 0, 1, …; demoted entries in a last tier), ``"slurm_offsets"`` the code's
  +1 / 0 / −1 added to Slurm's multifactor priority (a tie-breaker, not tiers).
* ``rule`` picks the frequency: ``"epm"`` (Eq. 4), or the baselines ``"min_time"`` (Min runtime), ``"min_energy"``
  (Min energy) and ``"nominal"`` (Base Slurm: the highest available frequency). Ties go to the lowest frequency.
* [AMBIG-2.5] job energy is nodes × P(p, f) × t: the node multiplier is applied (the code omits it in one branch).

Unknown apps: an (app, partition) entry the AppDB lacks (or whose primary-partition signature is missing, since
times are scaled from the primary) is ``known=False``: f_opt = the nominal frequency (what a first run uses, paper
§3.2), time = the requested time on the primary partition and NaN elsewhere, power/energy/part_eff NaN, ranked
after the known partitions; a job known nowhere ranks its primary partition first.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from wattsched.studies.eamc.dvfs import DVFSPlatform
from wattsched.studies.eamc.energy_model import EAMC_APP_NAMES, AppDB, AppDBView, project

__all__ = [
    "DEFAULT_THRESHOLD",
    "EPMResult",
    "FrequencyRule",
    "ScoreForm",
    "ThresholdMode",
    "Tiering",
    "WeightPlacement",
    "demoted",
    "epm_table",
    "evaluate",
    "optimal_frequency_index",
    "partition_efficiency",
    "partition_priority",
    "rank_partitions",
    "tradeoff_distance",
]

WeightPlacement = Literal["paper", "code"]
ScoreForm = Literal["euclidean", "code_linear"]
ThresholdMode = Literal["relative", "absolute"]
Tiering = Literal["strict", "slurm_offsets"]
FrequencyRule = Literal["epm", "min_time", "min_energy", "nominal"]

#: PriorityInc-V threshold (paper: "35% from the optimal part_eff").
DEFAULT_THRESHOLD = 0.35


def _check(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")


def _check_weight(t_weight: float) -> float:
    t_weight = float(t_weight)
    if not (np.isfinite(t_weight) and t_weight >= 0):
        raise ValueError(f"t_weight must be finite and ≥ 0, got {t_weight!r}")
    return t_weight


def tradeoff_distance(
    energy: np.ndarray,
    time: np.ndarray,
    e_min: np.ndarray,
    t_min: np.ndarray,
    *,
    t_weight: float = 1.0,
    weight_placement: WeightPlacement = "paper",
) -> np.ndarray:
    """The Euclidean energy-time distance of Eq. 4/5 (see the module docstring); NaN inputs give NaN."""
    _check("weight_placement", weight_placement, ("paper", "code"))
    t_weight = _check_weight(t_weight)
    e = np.asarray(energy, dtype=np.float64) / e_min
    t = np.asarray(time, dtype=np.float64) / t_min
    if weight_placement == "paper":
        return np.sqrt(e * e + t_weight * t * t)
    return np.sqrt(e * e + (t_weight * t) ** 2)


def _nanargmin(values: np.ndarray) -> np.ndarray:
    """argmin over the last axis ignoring NaN (first index on ties); −1 where a row is all NaN."""
    filled = np.where(np.isnan(values), np.inf, values)
    idx = np.argmin(filled, axis=-1)
    empty = np.all(np.isnan(values), axis=-1)
    return np.where(empty, -1, idx)


def optimal_frequency_index(
    energy: np.ndarray,
    time: np.ndarray,
    *,
    t_weight: float = 1.0,
    weight_placement: WeightPlacement = "paper",
    rule: FrequencyRule = "epm",
) -> np.ndarray:
    """Index of the chosen frequency along the last axis of ``energy``/``time`` (shape (..., n_f), ascending
    frequencies, NaN where a frequency is unavailable or the entry unknown); −1 for all-NaN rows."""
    _check("rule", rule, ("epm", "min_time", "min_energy", "nominal"))
    energy = np.asarray(energy, dtype=np.float64)
    time = np.asarray(time, dtype=np.float64)
    if energy.shape != time.shape:
        raise ValueError(f"energy and time must have the same shape, got {energy.shape} and {time.shape}")
    if rule == "min_time":
        return _nanargmin(time)
    if rule == "min_energy":
        return _nanargmin(energy)
    if rule == "nominal":
        valid = ~(np.isnan(energy) | np.isnan(time))
        last = energy.shape[-1] - 1 - np.argmax(valid[..., ::-1], axis=-1)
        return np.where(valid.any(axis=-1), last, -1)
    with np.errstate(invalid="ignore", divide="ignore"), _quiet_nan():
        e_min = np.nanmin(energy, axis=-1, keepdims=True)
        t_min = np.nanmin(time, axis=-1, keepdims=True)
    dist = tradeoff_distance(energy, time, e_min, t_min, t_weight=t_weight, weight_placement=weight_placement)
    return _nanargmin(dist)


@contextmanager
def _quiet_nan() -> Iterator[None]:
    """Silence numpy's "All-NaN slice" warnings: all-NaN rows are unknown entries, handled explicitly."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="All-NaN slice encountered", category=RuntimeWarning)
        yield


def partition_efficiency(
    energy: np.ndarray,
    time: np.ndarray,
    *,
    t_weight: float = 1.0,
    weight_placement: WeightPlacement = "paper",
    score: ScoreForm = "euclidean",
) -> np.ndarray:
    """Eq. 5 for each partition of each job: ``energy``/``time`` have shape (jobs, partitions), taken at each
    partition's chosen frequency (seconds for time; NaN = unknown). Minima are over the job's known partitions."""
    _check("score", score, ("euclidean", "code_linear"))
    t_weight = _check_weight(t_weight)
    energy = np.asarray(energy, dtype=np.float64)
    time = np.asarray(time, dtype=np.float64)
    if score == "code_linear":
        time = np.ceil(time / 60.0)  # the code compares whole minutes (best_time)
    with np.errstate(invalid="ignore", divide="ignore"), _quiet_nan():
        e_min = np.nanmin(energy, axis=-1, keepdims=True)
        t_min = np.nanmin(time, axis=-1, keepdims=True)
        if score == "code_linear":
            return energy / e_min + t_weight * time / t_min
        return tradeoff_distance(energy, time, e_min, t_min, t_weight=t_weight, weight_placement=weight_placement)


def rank_partitions(part_eff: np.ndarray, primary: np.ndarray | int | None = None) -> np.ndarray:
    """Partition indices per job, best (lowest part_eff) first; ties and unknown (NaN) entries keep partition
    order, unknown ones last. Rows with no known partition put ``primary`` first (default: partition 0)."""
    part_eff = np.atleast_2d(np.asarray(part_eff, dtype=np.float64))
    key = np.where(np.isnan(part_eff), np.inf, part_eff)
    order = np.argsort(key, axis=-1, kind="stable")
    if primary is not None:
        none_known = np.all(np.isnan(part_eff), axis=-1)
        if none_known.any():
            n_part = part_eff.shape[-1]
            prim = np.broadcast_to(np.asarray(primary, dtype=np.int64), none_known.shape)
            base = np.arange(n_part)[None, :]
            fallback = np.where(base == prim[:, None], -1, base)  # primary sorts first, the rest keep their order
            fallback = np.argsort(fallback, axis=-1, kind="stable")
            order = np.where(none_known[:, None], fallback, order)
    return order


def demoted(
    part_eff: np.ndarray,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    threshold_mode: ThresholdMode = "relative",
) -> np.ndarray:
    """PriorityInc-V's test: entries whose part_eff is worse than the job's best by ≥ ``threshold`` (relative:
    a fraction of the best; absolute: score units). The best entry and unknown (NaN) ones are never demoted."""
    _check("threshold_mode", threshold_mode, ("relative", "absolute"))
    if not (np.isfinite(threshold) and threshold >= 0):
        raise ValueError(f"threshold must be finite and ≥ 0, got {threshold!r}")
    part_eff = np.atleast_2d(np.asarray(part_eff, dtype=np.float64))
    with np.errstate(invalid="ignore"), _quiet_nan():
        best = np.nanmin(part_eff, axis=-1, keepdims=True)
        gap = part_eff - best
        if threshold_mode == "relative":
            gap = gap / best
        # a small tolerance so that a gap of exactly the threshold counts despite rounding
        out = gap >= threshold - 1e-12
    return out & ~np.isnan(part_eff) & (part_eff > best)


def partition_priority(
    part_eff: np.ndarray,
    *,
    tiering: Tiering = "strict",
    threshold: float | None = None,
    threshold_mode: ThresholdMode = "relative",
    primary: np.ndarray | int | None = None,
) -> np.ndarray:
    """The priority component of each (job, partition) entry for the PriorityInc policies (int, (jobs, partitions)).

    * ``tiering="strict"``: the tier, lower first — the entry's rank (0 = best partition), and with a
      ``threshold`` (PriorityInc-V) demoted entries go to tier ``n_partitions``. The queue is ordered by
      (tier, the job's base order).
    * ``tiering="slurm_offsets"``: the code's offset added to the job's multifactor priority, higher first — +1
      for the best partition, 0 for the others, −1 for demoted ones.

    ``threshold=None`` is plain PriorityInc (no demotion). Unknown entries rank last (see :func:`rank_partitions`).
    """
    _check("tiering", tiering, ("strict", "slurm_offsets"))
    part_eff = np.atleast_2d(np.asarray(part_eff, dtype=np.float64))
    n_part = part_eff.shape[1]
    order = rank_partitions(part_eff, primary)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n_part), order.shape), axis=-1)
    low = (
        demoted(part_eff, threshold=threshold, threshold_mode=threshold_mode)
        if threshold is not None
        else np.zeros_like(part_eff, dtype=bool)
    )
    if tiering == "strict":
        return np.where(low, n_part, rank).astype(np.int64)
    return np.where(low, -1, np.where(rank == 0, 1, 0)).astype(np.int64)


@dataclass(frozen=True, eq=False)
class EPMResult:
    """The EPM's view of a batch of jobs: arrays of shape (jobs, partitions) in ``partitions`` order.

    ``time`` is the predicted runtime (s) at ``f_opt``, ``power`` W per node, ``energy`` J for the whole job;
    ``time_factor`` multiplies the job's primary-partition time (requested or actual) to give its time on the
    partition at ``f_opt``; ``rank[j]`` lists partition indices best first and ``best`` is ``rank[:, 0]``.
    """

    partitions: tuple[str, ...]
    app_id: np.ndarray
    known: np.ndarray
    f_index: np.ndarray
    f_opt: np.ndarray
    time: np.ndarray
    power: np.ndarray
    energy: np.ndarray
    time_factor: np.ndarray
    part_eff: np.ndarray
    rank: np.ndarray
    best: np.ndarray

    @property
    def n_jobs(self) -> int:
        return int(self.known.shape[0])

    def to_frame(self) -> pl.DataFrame:
        """One row per (job, partition): job (position), app_id, partition, known, f_opt_ghz, time_s, power_w,
        energy_j, time_factor, part_eff, rank (0 = best), best."""
        m, k = self.known.shape
        position = np.empty((m, k), dtype=np.int64)
        np.put_along_axis(position, self.rank, np.broadcast_to(np.arange(k), (m, k)), axis=1)
        return pl.DataFrame(
            {
                "job": np.repeat(np.arange(m), k),
                "app_id": np.repeat(self.app_id.astype(str), k),
                "partition": np.tile(np.asarray(self.partitions, dtype=object), m).astype(str),
                "known": self.known.ravel(),
                "f_opt_ghz": self.f_opt.ravel(),
                "time_s": self.time.ravel(),
                "power_w": self.power.ravel(),
                "energy_j": self.energy.ravel(),
                "time_factor": self.time_factor.ravel(),
                "part_eff": self.part_eff.ravel(),
                "rank": position.ravel(),
                "best": (position == 0).ravel(),
            }
        )


def _per_job(values: object, m: int, name: str, default: float) -> np.ndarray:
    if values is None:
        return np.full(m, default, dtype=np.float64)
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(m, float(arr))
    if arr.shape != (m,):
        raise ValueError(f"{name} must be a scalar or have one value per job ({m}), got shape {arr.shape}")
    if np.any(~np.isfinite(arr) | (arr <= 0)):
        raise ValueError(f"{name} must be positive and finite")
    return arr


def evaluate(
    platform: DVFSPlatform,
    appdb: AppDB | AppDBView,
    app_ids: Sequence[object] | np.ndarray,
    *,
    requested_time: float | Sequence[float] | np.ndarray | None = None,
    nodes: int | Sequence[int] | np.ndarray | None = None,
    primary: str | int | Sequence[str | int] | None = None,
    t_weight: float = 1.0,
    weight_placement: WeightPlacement = "paper",
    score: ScoreForm = "euclidean",
    rule: FrequencyRule = "epm",
) -> EPMResult:
    """Run the EPM for a batch of jobs on every partition of ``platform``.

    ``requested_time`` is each job's time on its ``primary`` partition (None: the app's reference time there, so
    times are the model's own seconds); ``nodes`` scales energy (None: 1, per-node energy); ``primary`` is a
    partition name/index for all jobs or one per job (None: the platform's primary). f_opt and the Euclidean
    part_eff do not depend on ``requested_time`` or ``nodes`` (they are ratios); the code's linear score does,
    through its whole-minute rounding.
    """
    t_weight = _check_weight(t_weight)
    _check("rule", rule, ("epm", "min_time", "min_energy", "nominal"))
    _check("score", score, ("euclidean", "code_linear"))
    _check("weight_placement", weight_placement, ("paper", "code"))
    apps = np.asarray([str(a) for a in app_ids], dtype=object)
    m, k = apps.size, len(platform)
    width = max(p.n_frequencies for p in platform)
    if primary is None or isinstance(primary, str | int | np.integer):
        prim = np.full(m, platform.index(platform.primary if primary is None else primary), dtype=np.int64)
    else:
        prim = np.asarray([platform.index(p) for p in primary], dtype=np.int64)
        if prim.shape != (m,):
            raise ValueError(f"primary must be one partition or one per job ({m}), got {prim.size}")
    node_counts = _per_job(nodes, m, "nodes", 1.0)

    time = np.full((m, k, width), np.nan)
    power = np.full((m, k, width), np.nan)
    freq = np.full((k, width), np.nan)
    t_ref = np.full((m, k), np.nan)
    known_p = np.zeros((m, k), dtype=bool)
    for p, part in enumerate(platform):
        t0, p0, c0, m0, known = appdb.arrays(apps, part.name)
        proj = project(part, t0, p0, c0, m0)
        n_f = part.n_frequencies
        time[:, p, :n_f] = proj.time
        power[:, p, :n_f] = proj.power
        freq[p, :n_f] = part.frequencies
        t_ref[:, p] = t0
        known_p[:, p] = known
    rows = np.arange(m)
    t_primary = t_ref[rows, prim]
    known = known_p & known_p[rows, prim][:, None]
    base = t_primary if requested_time is None else _per_job(requested_time, m, "requested_time", 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        factor_all = time / t_primary[:, None, None]
    factor_all[~known] = np.nan
    job_time = base[:, None, None] * factor_all
    power[~known] = np.nan
    energy = node_counts[:, None, None] * power * job_time

    idx = optimal_frequency_index(energy, job_time, t_weight=t_weight, weight_placement=weight_placement, rule=rule)
    nominal = np.array([p.n_frequencies - 1 for p in platform], dtype=np.int64)
    idx = np.where(known, idx, nominal[None, :])
    take = idx[..., None]
    t_opt = np.take_along_axis(job_time, take, axis=-1)[..., 0]
    p_opt = np.take_along_axis(power, take, axis=-1)[..., 0]
    e_opt = np.take_along_axis(energy, take, axis=-1)[..., 0]
    f_fac = np.take_along_axis(factor_all, take, axis=-1)[..., 0]
    f_opt = freq[np.arange(k)[None, :], idx]
    # what is known without the model: the requested time on the primary partition, at nominal frequency
    on_primary = np.arange(k)[None, :] == prim[:, None]
    fallback = ~known & on_primary
    if requested_time is not None:
        t_opt = np.where(fallback, base[:, None], t_opt)
        f_fac = np.where(fallback, 1.0, f_fac)
    part_eff = partition_efficiency(e_opt, t_opt, t_weight=t_weight, weight_placement=weight_placement, score=score)
    part_eff = np.where(known, part_eff, np.nan)
    rank = rank_partitions(part_eff, prim) if m else np.empty((0, k), dtype=np.int64)
    best = rank[:, 0] if m else np.empty(0, dtype=np.int64)
    out = {
        "known": known,
        "f_index": idx,
        "f_opt": f_opt,
        "time": t_opt,
        "power": p_opt,
        "energy": e_opt,
        "time_factor": f_fac,
        "part_eff": part_eff,
        "rank": rank,
        "best": best,
        "app_id": apps,
    }
    for arr in out.values():
        arr.flags.writeable = False
    return EPMResult(partitions=platform.names, **out)


def epm_table(
    platform: DVFSPlatform,
    appdb: AppDB | AppDBView,
    *,
    t_weight: float = 1.0,
    weight_placement: WeightPlacement = "paper",
    score: ScoreForm = "euclidean",
    app_names: dict[str, str] | None = None,
) -> pl.DataFrame:
    """Per app and partition: optimal frequency, time, power and energy at it, the same at the nominal frequency,
    part_eff and rank — the numbers behind the paper's "apps 1–7 prefer p1, STREAM prefers p2"."""
    names = EAMC_APP_NAMES if app_names is None else app_names
    apps = appdb.apps()
    res = evaluate(platform, appdb, apps, t_weight=t_weight, weight_placement=weight_placement, score=score)
    nom = evaluate(platform, appdb, apps, rule="nominal")
    frame = res.to_frame().drop("job")
    nominal = nom.to_frame().select(
        pl.col("f_opt_ghz").alias("f_nominal_ghz"),
        pl.col("time_s").alias("time_nominal_s"),
        pl.col("energy_j").alias("energy_nominal_j"),
    )
    frame = pl.concat([frame, nominal], how="horizontal")
    frame = frame.with_columns(pl.col("app_id").replace_strict(names, default="", return_dtype=pl.Utf8).alias("app"))
    return frame.select(
        "app_id",
        "app",
        "partition",
        "known",
        "f_opt_ghz",
        "time_s",
        "power_w",
        "energy_j",
        "part_eff",
        "rank",
        "best",
        "f_nominal_ghz",
        "time_nominal_s",
        "energy_nominal_j",
    )
