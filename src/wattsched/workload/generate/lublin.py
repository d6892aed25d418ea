"""Synthetic rigid-job workloads from the Lublin–Feitelson (2003) model, plus user and walltime models.

The model: U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the
characteristics of rigid jobs", J. Parallel Distrib. Comput. 63(11):1105–1122, 2003. Parameter VALUES are
those of the authors' reference implementation ``m_lublin99.c`` (Parallel Workloads Archive,
https://www.cs.huji.ac.il/labs/parallel/workload/m_lublin99/), fitted for a 128-node machine. This is an
independent, vectorised re-implementation; no code was taken from it.

Model structure and parameter groups (defaults in :class:`LublinParams`):

* **Job class** — batch and interactive jobs come from two independent arrival streams; a job's class is
  the class of the stream that delivers it next (reference implementation). The class mix is therefore a
  property of the two arrival processes (≈ 15 % batch with the defaults), not a separate probability.
* **Size** (m_lublin99.c ``SERIAL_PROB_*``, ``POW2_PROB_*``, ``ULOW/UMED/UHI/UPROB_*``) — with probability
  ``serial_prob`` the job is serial; otherwise ``x`` is drawn from a two-stage uniform in log2 space
  (``U(ulow, umed)`` with probability ``uprob``, else ``U(umed, uhi)``); with probability ``pow2_prob``
  (of all jobs) ``x`` is rounded to an integer first; size = round(2**x), clipped to [1, machine_size].
  ``uhi`` is log2(machine_size) for batch and log2(machine_size) − 1.5 for interactive jobs, ``umed`` is
  uhi − 2 (batch) and uhi − 2.5 (interactive): the reference values 7, 5, 5.5, 3 for 128 nodes,
  re-anchored to the machine size.
* **Runtime** (``A1, B1, A2, B2, PA, PB`` per class) — log(runtime) follows a hyper-gamma:
  gamma(a1, scale b1) with probability ``p``, else gamma(a2, scale b2), with ``p = pa·n + pb`` clipped to
  [0, 1]. In the reference implementation ``n`` is the number of nodes (``p_size_metric="nodes"``,
  default); ``"log2"`` uses log2(size) and ``"scaled"`` uses size·128/machine_size (the fit's own
  machine) so large machines keep the fitted size–runtime correlation. Draws with log(runtime) > 12
  (≈ 45 h) are redrawn; runtime = floor(exp(x)) seconds (≥ 1 s), then capped at ``max_walltime``.
* **Arrivals** (``AARR, BARR, ARAR, ANUM, BNUM``, 48 half-hour buckets, ``CYCLIC_DAY_START`` = 11) —
  log(inter-arrival) at rush hours is gamma(aarr·arar, scale barr), redrawn above 13 (≈ 5 days). Daily
  cycle: bucket ``i`` (i = 11 … 58, placed at half-hour (i − 1) mod 48 of the day) gets the
  gamma(anum, scale bnum) mass of [i − 0.5, i + 0.5]; weights are normalised to mean 1. Inter-arrival
  seconds are spent in "operational time" whose rate is the bucket weight: real arrival times are the
  inverse of the time warp W(t) = ∫ weight dt applied to cumulative sums of inter-arrival draws — the
  reference's "pay points to buckets" scheme, vectorised. The clock starts at midnight;
  ``provenance.header["clock_offset"]`` is the time of day (s) of submit_time 0.

Extensions needed by a scheduler study (documented choices, not part of the 2003 model):

* **target_load** — offered load = Σ size·runtime / (machine_size · (last submit − first submit)). When
  given, inter-arrival times (never runtimes) are scaled by one factor in the operational time of the
  merged daily profile (class-share-weighted bucket weights) and mapped back, so the load matches to
  floating-point precision while the daily cycle keeps its 24 h period. ``None`` keeps native arrivals.
* **Walltime** (user estimate) — ``"tsafrir"``: estimates cluster on a few round "popular" values
  (Tsafrir, Etsion & Feitelson, "Modeling user runtime estimates", JSSPP 2005, LNCS 3834): walltime is
  the smallest popular value ≥ runtime/A, where the accuracy A = runtime/estimate ~ U(accuracy_low, 1]
  (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001, found accuracy roughly uniform); above the largest
  popular value the walltime is ``max_walltime``. ``"exact"``: walltime = runtime. Both keep
  runtime ≤ walltime ≤ max_walltime.
* **Users** — each job gets ``user_id`` in 1..n_users with P(k) ∝ k**−zipf_exponent (Zipf-like user
  activity, Feitelson, "Workload Modeling for Computer Systems Performance Evaluation", 2015),
  independent of the job's other attributes. ``group_id`` is unknown (null).

Each component (arrivals, sizes, runtimes, walltimes, users) draws from its own child of
``SeedSequence(seed)``, so changing one option leaves the other columns unchanged.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl

from wattsched.core.bounds import check_fits
from wattsched.core.scalars import as_number
from wattsched.core.schema import (
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    Provenance,
    ReadResult,
    canonical_order,
    empty_rejects,
    sort_queue_order,
)
from wattsched.workload.generate.footprint import LUBLIN_BYTES_PER_JOB

__all__ = [
    "LublinClassParams",
    "LublinParams",
    "daily_weights",
    "generate_lublin",
    "hyper_gamma_p",
    "offered_load",
]

SECONDS_PER_DAY = 86400.0

#: Popular round walltimes (s): 5/10/15/30 min, 1/2/4/8/12/18/24/36/48 h (Tsafrir, Etsion & Feitelson 2005).
POPULAR_WALLTIMES: tuple[float, ...] = (
    300.0,
    600.0,
    900.0,
    1800.0,
    3600.0,
    7200.0,
    14400.0,
    28800.0,
    43200.0,
    64800.0,
    86400.0,
    129600.0,
    172800.0,
)

WALLTIME_MODELS = ("tsafrir", "exact")
P_SIZE_METRICS = ("nodes", "log2", "scaled")


@dataclass(frozen=True)
class LublinClassParams:
    """Model parameters of one job class (batch or interactive); names follow m_lublin99.c."""

    serial_prob: float
    pow2_prob: float
    ulow: float
    #: log2(machine_size) − uhi (0 for batch, 1.5 for interactive: UHI 7 and 5.5 on the 128-node fit).
    uhi_offset: float
    #: uhi − umed (2 for batch, 2.5 for interactive: UMED 5 and 3 on the 128-node fit).
    umed_offset: float
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    arar: float
    anum: float
    bnum: float


def _batch_defaults() -> LublinClassParams:
    return LublinClassParams(
        serial_prob=0.2927,
        pow2_prob=0.6686,
        ulow=1.2,
        uhi_offset=0.0,
        umed_offset=2.0,
        uprob=0.875,
        a1=6.57,
        b1=0.823,
        a2=639.1,
        b2=0.0156,
        pa=-0.003,
        pb=0.6986,
        aarr=6.0415,
        barr=0.8531,
        arar=1.0519,
        anum=6.1271,
        bnum=5.2740,
    )


def _interactive_defaults() -> LublinClassParams:
    return LublinClassParams(
        serial_prob=0.1541,
        pow2_prob=0.625,
        ulow=1.0,
        uhi_offset=1.5,
        umed_offset=2.5,
        uprob=0.705,
        a1=3.8351,
        b1=0.6605,
        a2=7.073,
        b2=0.6856,
        pa=-0.0118,
        pb=0.9156,
        aarr=6.5510,
        barr=0.6621,
        arar=0.9797,
        anum=8.9186,
        bnum=3.6680,
    )


@dataclass(frozen=True)
class LublinParams:
    """Every parameter of the generator; defaults are the published model values (see module docstring)."""

    batch: LublinClassParams = field(default_factory=_batch_defaults)
    interactive: LublinClassParams = field(default_factory=_interactive_defaults)
    #: Redraw log(runtime) above this (m_lublin99.c TOO_MUCH_TIME: exp(12) s ≈ 45 h).
    max_log_runtime: float = 12.0
    #: Redraw log(inter-arrival) above this (TOO_MUCH_ARRIVE_TIME: exp(13) s ≈ 5 days).
    max_log_interarrival: float = 13.0
    #: Daily-cycle resolution (48 half-hour buckets) and cyclic shift of the fitted day (11 buckets).
    buckets: int = 48
    cyclic_day_start: int = 11
    #: Hour of day at the model clock's origin (reference START = midnight).
    start_hour: float = 0.0
    #: What ``n`` is in p = pa·n + pb: "nodes" (reference), "log2" (log2 size), "scaled" (size·128/machine).
    p_size_metric: str = "nodes"
    #: Machine size the runtime fit was made on (used by ``p_size_metric="scaled"``).
    reference_machine_size: int = 128
    # --- extensions (not part of the 2003 model) ---
    #: Zipf exponent of user activity: P(user k) ∝ k**−zipf_exponent.
    zipf_exponent: float = 1.0
    #: Lower bound of the uniform accuracy runtime/estimate of the "tsafrir" walltime model.
    accuracy_low: float = 0.05
    #: Candidate round walltimes (s) of the "tsafrir" model; values above max_walltime are dropped.
    popular_walltimes: tuple[float, ...] = POPULAR_WALLTIMES
    #: Grid (s) submit times are rounded to (0 keeps full float64). A time then carries only the digits it
    #: means, so an SWF of it is short and reads on the exact fast path (issue 18: 16–17 digit times).
    submit_resolution: float = 0.001

    def __post_init__(self) -> None:
        if self.p_size_metric not in P_SIZE_METRICS:
            raise ValueError(f"p_size_metric must be one of {P_SIZE_METRICS}, got {self.p_size_metric!r}")
        if self.buckets < 1 or self.cyclic_day_start < 1:
            raise ValueError("buckets and cyclic_day_start must be ≥ 1 (the gamma day profile starts at 0.5)")
        if not 0.0 < self.accuracy_low <= 1.0:
            raise ValueError(f"accuracy_low must be in (0, 1], got {self.accuracy_low}")
        if self.reference_machine_size < 1:
            raise ValueError("reference_machine_size must be ≥ 1")
        if not (math.isfinite(self.submit_resolution) and self.submit_resolution >= 0.0):
            raise ValueError(f"submit_resolution must be a finite number of seconds ≥ 0, got {self.submit_resolution}")
        for name, cls in (("batch", self.batch), ("interactive", self.interactive)):
            if min(cls.serial_prob, cls.pow2_prob) < 0.0 or cls.serial_prob + cls.pow2_prob > 1.0:
                raise ValueError(f"{name}: serial_prob and pow2_prob must be ≥ 0 and sum to ≤ 1")
            if min(cls.a1, cls.b1, cls.a2, cls.b2, cls.aarr, cls.barr, cls.arar, cls.anum, cls.bnum) <= 0:
                raise ValueError(f"{name}: gamma shape/scale parameters must be > 0")


# --------------------------------------------------------------------------------------------- daily cycle

_GL_X, _GL_W = np.polynomial.legendre.leggauss(32)


def _gamma_interval_mass(lo: np.ndarray, hi: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """Mass of gamma(shape, scale) on each [lo, hi] (lo > 0) by 32-point Gauss–Legendre on the log-pdf."""
    half = (hi - lo)[:, None] / 2.0
    x = (lo + hi)[:, None] / 2.0 + half * _GL_X[None, :]
    logpdf = (shape - 1.0) * np.log(x) - x / scale - math.lgamma(shape) - shape * math.log(scale)
    return (np.exp(logpdf) * _GL_W[None, :]).sum(axis=1) * half[:, 0]


def daily_weights(cls: LublinClassParams, buckets: int = 48, cyclic_day_start: int = 11) -> np.ndarray:
    """Relative arrival rate of each time-of-day bucket (mean 1); index 0 is the bucket starting at midnight.

    Bucket i = cyclic_day_start … cyclic_day_start + buckets − 1 of the fitted (shifted) day gets the
    gamma(anum, bnum) mass of [i − 0.5, i + 0.5] and lands at position (i − 1) mod buckets.
    """
    i = np.arange(cyclic_day_start, cyclic_day_start + buckets, dtype=np.float64)
    mass = _gamma_interval_mass(i - 0.5, i + 0.5, cls.anum, cls.bnum)
    weights = np.empty(buckets)
    weights[(i.astype(np.int64) - 1) % buckets] = mass
    weights = np.maximum(weights, 1e-12 * weights.max())  # keep the time warp strictly increasing
    return weights / weights.mean()


class _Warp:
    """Operational time W(t) = ∫₀ᵗ weight(time of day) dt for a mean-1 bucket profile, and its inverse."""

    def __init__(self, weights: np.ndarray) -> None:
        width = SECONDS_PER_DAY / weights.size
        self.edges = np.arange(weights.size + 1) * width
        self.cum = np.concatenate(([0.0], np.cumsum(weights) * width))
        self.cum[-1] = SECONDS_PER_DAY  # mean-1 weights: one real day is one operational day

    def forward(self, t: np.ndarray) -> np.ndarray:
        day = np.floor(t / SECONDS_PER_DAY)
        return day * SECONDS_PER_DAY + np.interp(t - day * SECONDS_PER_DAY, self.edges, self.cum)

    def inverse(self, u: np.ndarray) -> np.ndarray:
        day = np.floor(u / SECONDS_PER_DAY)
        return day * SECONDS_PER_DAY + np.interp(u - day * SECONDS_PER_DAY, self.cum, self.edges)


# ------------------------------------------------------------------------------------------------ sampling


def _truncated_gamma(rng: np.random.Generator, shape: float, scale: float, n: int, cap: float) -> np.ndarray:
    """gamma(shape, scale) draws redrawn while above ``cap`` (the reference's rejection loop)."""
    x = rng.gamma(shape, scale, n)
    bad = np.flatnonzero(x > cap)
    while bad.size:
        x[bad] = rng.gamma(shape, scale, bad.size)
        bad = bad[x[bad] > cap]
    return x


def _stream_arrivals(
    rng: np.random.Generator, cls: LublinClassParams, n: int, warp: _Warp, origin: float, cap: float
) -> np.ndarray:
    """Real (model-clock) arrival times of the first ``n`` jobs of one class stream."""
    gaps = np.exp(_truncated_gamma(rng, cls.aarr * cls.arar, cls.barr, n, cap))
    return warp.inverse(warp.forward(np.array([origin]))[0] + np.cumsum(gaps))


def _sizes(rng: np.random.Generator, cls: LublinClassParams, n: int, machine_size: int) -> np.ndarray:
    """Serial / power-of-two / two-stage-uniform-in-log2 job sizes, clipped to the machine."""
    log_p = math.log2(machine_size)
    hi = max(log_p - cls.uhi_offset, 0.0)
    low = min(cls.ulow, hi)
    med = min(max(hi - cls.umed_offset, low), hi)
    u = rng.random(n)
    first = rng.random(n) <= cls.uprob
    v = rng.random(n)
    x = np.where(first, low + v * (med - low), med + v * (hi - med))
    x = np.where(u <= cls.serial_prob + cls.pow2_prob, np.floor(x + 0.5), x)
    size = np.floor(np.exp2(x) + 0.5)
    size = np.where(u <= cls.serial_prob, 1.0, size)
    return np.clip(size, 1, machine_size).astype(np.int64)


def hyper_gamma_p(cls: LublinClassParams, size: np.ndarray, params: LublinParams, machine_size: int) -> np.ndarray:
    """Probability of the first (short) gamma for each job size: clip(pa·n + pb, 0, 1)."""
    size = np.asarray(size, dtype=np.float64)
    if params.p_size_metric == "nodes":
        metric = size
    elif params.p_size_metric == "log2":
        metric = np.log2(size)
    else:
        metric = size * params.reference_machine_size / machine_size
    return np.clip(cls.pa * metric + cls.pb, 0.0, 1.0)


def _log_runtimes(rng: np.random.Generator, cls: LublinClassParams, p: np.ndarray, cap: float) -> np.ndarray:
    """Hyper-gamma log-runtimes; a draw above ``cap`` is redrawn from scratch (component choice included)."""

    def draw(pp: np.ndarray) -> np.ndarray:
        first = rng.random(pp.size) <= pp
        out = np.empty(pp.size)
        out[first] = rng.gamma(cls.a1, cls.b1, int(first.sum()))
        out[~first] = rng.gamma(cls.a2, cls.b2, int((~first).sum()))
        return out

    x = draw(p)
    bad = np.flatnonzero(x > cap)
    while bad.size:
        x[bad] = draw(p[bad])
        bad = bad[x[bad] > cap]
    return x


def _walltimes(
    rng: np.random.Generator, runtime: np.ndarray, model: str, max_walltime: float, params: LublinParams
) -> np.ndarray:
    if model == "exact":
        return runtime.copy()
    popular = np.array(sorted({v for v in params.popular_walltimes if 0 < v < max_walltime} | {max_walltime}))
    # accuracy = runtime / estimate ~ U(accuracy_low, 1]
    accuracy = params.accuracy_low + (1.0 - params.accuracy_low) * (1.0 - rng.random(runtime.size))
    wanted = runtime / accuracy
    idx = np.searchsorted(popular, wanted, side="left")
    return np.maximum(popular[np.minimum(idx, popular.size - 1)], runtime)


def _rescale_to_load(times: np.ndarray, work: float, target_load: float, warp: _Warp) -> tuple[np.ndarray, float]:
    """Scale gaps in ``warp``'s operational time so work/(last − first) hits the target; return (times, c)."""
    span_target = work / target_load
    u = warp.forward(times)
    u0, span_u = u[0], u[-1] - u[0]
    if span_u <= 0:
        raise ValueError("all generated jobs arrive at the same instant; target_load cannot be met")
    c = float((warp.forward(np.array([times[0] + span_target]))[0] - u0) / span_u)
    out = warp.inverse(u0 + c * (u - u0))
    out[0] = times[0]
    out[-1] = times[0] + span_target  # exact span despite rounding in the warp round trip
    return np.maximum.accumulate(out), c


def _on_grid(t: np.ndarray, resolution: float) -> np.ndarray:
    """Times rounded to multiples of ``resolution`` as ``k / (1/resolution)`` when that is a whole number, so
    the double is the one nearest the short decimal (repr prints it back in ≤ 15 digits); order is kept."""
    if resolution == 0.0:
        return t
    per_second = 1.0 / resolution
    if per_second == round(per_second):
        return np.round(t * per_second) / per_second
    return np.round(t / resolution) * resolution


def offered_load(jobs: pl.DataFrame, machine_size: int) -> float:
    """Σ size·runtime / (machine_size · (last submit − first submit)): the load target_load refers to."""
    span = float(as_number(jobs["submit_time"].max()) - as_number(jobs["submit_time"].min()))
    work = float((jobs["size"].cast(pl.Float64) * jobs["runtime"]).sum())
    return work / (machine_size * span) if span > 0 else math.inf


# -------------------------------------------------------------------------------------------------- public


def generate_lublin(
    n_jobs: int,
    machine_size: int,
    *,
    seed: int = 0,
    target_load: float | None = None,
    n_users: int = 100,
    walltime_model: str = "tsafrir",
    max_walltime: float = 172800.0,
    params: LublinParams | None = None,
) -> ReadResult:
    """Generate ``n_jobs`` rigid jobs for a ``machine_size``-processor machine (Lublin–Feitelson model).

    Deterministic per ``seed`` (numpy ``default_rng``). ``target_load`` rescales inter-arrival times only (the
    daily cycle keeps its 24 h period); ``None`` keeps the model's native arrivals. Returns a canonical
    :class:`ReadResult` with no rejects; see the module docstring for every modelling choice.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs <= 0:
        raise ValueError(f"n_jobs must be a positive integer, got {n_jobs!r}")
    if isinstance(machine_size, bool) or not isinstance(machine_size, int | np.integer) or machine_size <= 0:
        raise ValueError(f"machine_size must be a positive integer, got {machine_size!r}")
    if target_load is not None:
        if not (isinstance(target_load, int | float) and math.isfinite(target_load) and target_load > 0):
            raise ValueError(f"target_load must be a finite number > 0 (or None), got {target_load!r}")
        if n_jobs < 2:
            raise ValueError("target_load needs n_jobs ≥ 2 (the load is defined over the submit-time span)")
    if isinstance(n_users, bool) or not isinstance(n_users, int | np.integer) or n_users <= 0:
        raise ValueError(f"n_users must be a positive integer, got {n_users!r}")
    if walltime_model not in WALLTIME_MODELS:
        raise ValueError(f"walltime_model must be one of {WALLTIME_MODELS}, got {walltime_model!r}")
    if not (math.isfinite(max_walltime) and max_walltime >= 1.0):
        raise ValueError(f"max_walltime must be a finite number of seconds ≥ 1, got {max_walltime!r}")
    check_fits("n_jobs", int(n_jobs), LUBLIN_BYTES_PER_JOB, "the lublin generator")
    params = params if params is not None else LublinParams()
    n_jobs, machine_size = int(n_jobs), int(machine_size)
    # One independent stream per model component (common random numbers: the walltime model or the runtime
    # metric can change without changing arrivals or sizes).
    rng_arrival, rng_size, rng_runtime, rng_wall, rng_user = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
    )

    classes = (params.batch, params.interactive)  # class code 0 = batch, 1 = interactive
    names = np.array(["batch", "interactive"])
    weights = [daily_weights(c, params.buckets, params.cyclic_day_start) for c in classes]
    origin = (params.start_hour % 24.0) * 3600.0

    # Arrivals: two independent class streams, merged; the first n_jobs of the merge are the jobs.
    streams = [
        _stream_arrivals(rng_arrival, c, n_jobs, _Warp(w), origin, params.max_log_interarrival)
        for c, w in zip(classes, weights, strict=True)
    ]
    times = np.concatenate(streams)
    kind = np.repeat(np.array([0, 1], dtype=np.int8), n_jobs)
    order = np.argsort(times, kind="stable")[:n_jobs]
    times, kind = times[order], kind[order]

    size = np.empty(n_jobs, dtype=np.int64)
    log_rt = np.empty(n_jobs)
    masks = [kind == code for code in range(len(classes))]
    for cls, mask in zip(classes, masks, strict=True):
        size[mask] = _sizes(rng_size, cls, int(mask.sum()), machine_size)
    for cls, mask in zip(classes, masks, strict=True):
        p = hyper_gamma_p(cls, size[mask], params, machine_size)
        log_rt[mask] = _log_runtimes(rng_runtime, cls, p, params.max_log_runtime)
    runtime = np.minimum(np.maximum(np.floor(np.exp(log_rt)), 1.0), math.floor(max_walltime))
    walltime = _walltimes(rng_wall, runtime, walltime_model, float(max_walltime), params)

    ranks = np.arange(1, n_users + 1, dtype=np.float64)
    popularity = ranks**-params.zipf_exponent
    user_id = rng_user.choice(n_users, size=n_jobs, p=popularity / popularity.sum()).astype(np.int64) + 1

    work = float((size.astype(np.float64) * runtime).sum()) / machine_size
    native_span = float(times[-1] - times[0])
    native_load = work / native_span if native_span > 0 else math.inf
    scale = 1.0
    if target_load is not None:
        share_b = float((kind == 0).mean())
        merged = _Warp(share_b * weights[0] + (1.0 - share_b) * weights[1])
        times, scale = _rescale_to_load(times, work, float(target_load), merged)
    clock_offset = float(times[0] % SECONDS_PER_DAY)
    submit = _on_grid(times - times[0], params.submit_resolution)

    jobs = pl.DataFrame(
        {
            "job_id": np.arange(1, n_jobs + 1, dtype=np.int64),
            "submit_time": submit,
            "walltime": walltime,
            "runtime": runtime,
            "size": size,
            "user_id": user_id,
            "group_id": pl.Series("group_id", [None] * n_jobs, dtype=pl.Int64),
            "queue": names[kind],
        }
    )
    schema = {**REQUIRED_COLUMNS, **OPTIONAL_COLUMNS}
    jobs = sort_queue_order(canonical_order(jobs.cast({c: schema[c] for c in jobs.columns})))

    achieved = work / float(submit[-1]) if submit[-1] > 0 else math.inf
    provenance = Provenance(
        source=f"lublin:seed={seed}",
        format="lublin",
        machine_size=machine_size,
        size_unit="processors",
        header={
            "model": "Lublin & Feitelson 2003 (JPDC 63(11)); parameter values from m_lublin99.c",
            "seed": seed,
            "clock_offset": clock_offset,
            "native_load": native_load,
            "offered_load": achieved,
            "target_load": target_load,
            "interarrival_scale": scale,
            "batch_share": float((kind == 0).mean()),
            "walltime_model": walltime_model,
            "max_walltime": float(max_walltime),
            "n_users": n_users,
            "params": asdict(params),
        },
        n_records=n_jobs,
        n_jobs=n_jobs,
        n_rejected=0,
        conventions=_conventions(params, machine_size, target_load, walltime_model, max_walltime, n_users),
    )
    return ReadResult(jobs, empty_rejects(), provenance)


def _conventions(
    params: LublinParams,
    machine_size: int,
    target_load: float | None,
    walltime_model: str,
    max_walltime: float,
    n_users: int,
) -> list[str]:
    b, i = params.batch, params.interactive
    log_p = math.log2(machine_size)
    sizes = (
        f"size: serial_prob {b.serial_prob}/{i.serial_prob}, pow2_prob {b.pow2_prob}/{i.pow2_prob}, "
        f"two-stage uniform in log2: ulow {b.ulow}/{i.ulow}, "
        f"uhi {log_p - b.uhi_offset:.3f}/{log_p - i.uhi_offset:.3f} "
        f"(log2 {machine_size} − {b.uhi_offset}/{i.uhi_offset}), "
        f"umed = uhi − {b.umed_offset}/{i.umed_offset}, uprob {b.uprob}/{i.uprob} (batch/interactive); "
        f"size = round(2**x) clipped to [1, {machine_size}]"
    )
    runtimes = (
        f"runtime = floor(exp(hyper-gamma)) s, log-runtime ≤ {params.max_log_runtime} (redrawn); "
        f"gammas (shape, scale) ({b.a1}, {b.b1}) | ({b.a2}, {b.b2}) batch, "
        f"({i.a1}, {i.b1}) | ({i.a2}, {i.b2}) interactive; p = pa·n + pb with n = {params.p_size_metric}, "
        f"pa/pb {b.pa}/{b.pb} batch, {i.pa}/{i.pb} interactive"
    )
    arrivals = (
        f"arrivals: log inter-arrival ~ gamma(aarr·arar, barr) ≤ {params.max_log_interarrival} (redrawn); "
        f"daily cycle of {params.buckets} buckets from gamma(anum, bnum) shifted by "
        f"{params.cyclic_day_start} buckets; clock starts at hour {params.start_hour:g}; "
        "header clock_offset = time of day of submit_time 0"
    )
    load = (
        "target_load: none (native arrivals)"
        if target_load is None
        else f"target_load {target_load}: inter-arrival times scaled by one factor in the merged daily "
        "profile's operational time (daily cycle kept at 24 h); runtimes untouched"
    )
    walltimes = f"walltime_model {walltime_model}: " + (
        "walltime = runtime"
        if walltime_model == "exact"
        else f"smallest popular value ≥ runtime/A, A ~ U({params.accuracy_low}, 1], else max_walltime"
    )
    out = [
        "synthetic: Lublin & Feitelson 2003 rigid-job model, parameter values of m_lublin99.c",
        "job class = stream (batch or interactive) whose next arrival comes first; queue column holds it",
        sizes,
        runtimes,
        f"runtime capped at max_walltime = {max_walltime:g} s",
        arrivals,
        "submit_time is relative to the first arrival (first job at 0)"
        + (f", rounded to {params.submit_resolution:g} s" if params.submit_resolution else ""),
        load,
        walltimes,
        f"user_id: Zipf-like, P(k) ∝ k^-{params.zipf_exponent} over {n_users} users; group_id unknown (null)",
    ]
    return out
