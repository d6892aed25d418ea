"""Synthetic Marconi100-like workload with per-job power profiles (PM100-calibrated).

No per-job power data is available offline, so every power test, benchmark and demo runs on this model. It is
calibrated on the published PM100 facts (paper 003 §4; docs/m100like.md): 980 nodes; ≈ 72 % single-node jobs,
node counts 1–256 clustered on 1, 2, 4, 8, 16, …; run-time median ≈ 190 s with a heavy tail up to the 24 h limit
(mean ≈ 280 samples of 20 s per job, i.e. ≈ 65 M samples for 231 k jobs); job states COMPLETED 78 % / FAILED 12.9 %
/ CANCELLED 4.9 % / TIMEOUT 3.8 % / OUT_OF_MEMORY 0.4 % / NODE_FAIL 0.1 %; ≈ 480 users; median power ≈ 700 W per
node at every node count.

Model (every number is a field of :class:`M100LikeParams`):

* **Users and templates** — user k (1..n_users) submits with Zipf-like activity P(k) ∝ k**−zipf_exponent. Each
  user owns 1 + Poisson(templates_per_user_mean) job *templates* (capped), used with Dirichlet weights. A template
  is a habit: node count, cores/GPUs, time limit, run-time scale, dynamic power level, variability, phase pattern,
  ramp length, spike rate and a slow power drift. A job picks its template (template mass = user activity ×
  user's weight) and draws small job-level deviations around it, so a user's jobs resemble each other and the
  per-user history of power is predictive.
* **Calibrated template quantiles** — the template attributes that carry a published marginal (node count, run-time
  scale, power level) take their quantile from a mass-stratified uniform: templates are put in random order and
  template i gets u = (midpoint of its cumulative job mass + one random shift) mod 1. Job-weighted, u is then
  uniform up to the largest template's mass, so heavy users cannot throw the job-level shares (e.g. 72 % single
  node) off calibration, while every template keeps one fixed value.
* **Nodes, cores, GPUs** — template node count from ``node_counts``/``node_count_weights`` (clipped to n_nodes);
  multi-node jobs change their template's count by ×2 or ÷2 (never to 1) with probability node_jitter_prob.
  Multi-node jobs get ``cores_per_node`` cores and ``gpus_per_node`` GPUs per node. Single-node templates use
  g GPUs with P(g) = single_node_gpu_weights and cores = cores_per_node · max(g, 1) / gpus_per_node (8 cores per
  GPU on M100); their dynamic power is scaled by partial_node_power_floor + (1 − floor) · g / gpus_per_node,
  divided by its job-weighted mean over single-node templates (PM100's median power per node is the same at
  every node count, so GPU count shifts power within single-node jobs only).
* **Run time, time limit, state** — template run-time scale is lognormal (median runtime_median, log-sd
  runtime_template_sigma); a job's natural run time is that scale × exp(runtime_job_sigma · N). The template's time
  limit is the smallest value of ``time_limits_minutes`` ≥ scale × headroom, headroom log-uniform in
  [walltime_headroom_low, walltime_headroom_high] (24 h at most); walltime = time limit (s). The state is drawn per
  job; P(TIMEOUT) ∝ walltime**timeout_walltime_exponent (normalised to p_timeout) so long-limit jobs time out more
  often. TIMEOUT: runtime = walltime exactly. COMPLETED: natural run time. FAILED/OUT_OF_MEMORY/NODE_FAIL: natural ×
  U**fail_fraction_exponent (they die early). CANCELLED: natural × lognormal(cancel_log_mean, cancel_log_sigma).
  A non-TIMEOUT run time that would reach the limit is redrawn as walltime × U(0.3, 0.99). Run times are whole
  seconds ≥ 1, except that a non-TIMEOUT job ends at start (runtime 0) with probability zero_runtime_prob (PM100
  has 66 jobs with end = start).
* **Arrivals** — non-homogeneous Poisson with an hourly weekly profile (cosine daily cycle peaking at peak_hour,
  weekends × weekend_factor), sampled in operational time and mapped back. The first job is submitted at 0 and the
  last one at the span: ``span_days`` if given, else span = Σ size·runtime / (n_nodes · target_load) so the
  offered load (``lublin.offered_load``) matches to floating-point precision, with target_load =
  params.default_target_load (0.95, docs/m100like.md) when none is given; with default_target_load = None,
  span = n_jobs / jobs_per_day (PM100's rate). The work is heavy-tailed (a few long many-node templates), so a
  fixed rate gives offered loads of 0.38–0.84 with the seed; a fixed load gives every seed the same one.
  ``provenance.header["clock_offset"]`` is the time of day of submit 0.
* **Power** (per node, W) — job dynamic level = template level × (1 + drift(t)) × exp(dynamic_job_sigma · N),
  drift(t) a sum of three slow sinusoids per template (periods log-uniform in [drift_period_min_days,
  drift_period_max_days], total sd drift_sd). The job pattern at sample s is idle + dynamic × (1 + A · wave(s)),
  wave = tanh(k·sin(2π(s/period + φ)))/tanh(k) (k small: sine-like, k large: square compute/IO phases; A = 0 for
  flat templates), preceded by a linear ramp of up to ramp_max_samples samples from idle + ramp_start_fraction ×
  dynamic; plus job-wide noise (common_noise × dynamic × N) and rare spikes (+spike_size × dynamic ×
  U(0.5, 1.5)). This common level is clipped at the platform bound (``platform_node_dynamic_watts``; below), then
  each node adds a fixed offset (node_offset × dynamic × N) and its own noise ((node_noise × dynamic +
  node_noise_watts) × N), and is clipped to [min_node_watts, max_node_watts] = [200, 2100] W.
* **Platform bound** — Marconi100's dynamic power never exceeded 719,880 W (734.6 W per node on average) in
  2022. Without a bound, a window's platform power is made of a few templates (a 256-node job, or one heavy
  user's many 32-node jobs, share one level), and a template from the upper tail of the level distribution with
  synchronous phases pushed uncapped windows to 1.2–1.45× that range. A job's common level is therefore at most
  b + (1860 − b)/√q_eff W per node, b = 0.8 × 734.6 W, q_eff = max(its nodes, its template's mean concurrent
  nodes): a single node keeps its full range, while what many nodes draw together stays near the platform's
  per-node average.
  Normal deviates come from a 65,536-point quantile table indexed by random 16-bit integers (exact N(0, 1)
  quantiles, ≈ 4× faster than ``standard_normal`` at the ≈ 300 M per-node samples of a PM100-sized run).

Outputs. Per-node series are generated internally, sample-major, in job chunks (bounded memory), reduced with
``np.add.reduceat``/``np.maximum.reduceat``, and only their sum over the job's nodes is stored:

* ``power_profile`` (List(Float32)) — job power summed over its nodes at each sample (like PM100's
  node_power_consumption); len = ceil(runtime / sample_period); empty for runtime 0.
* ``power_mean`` / ``power_max`` / ``power_std`` — per-node statistics over the concatenation of all per-node
  samples (as PM100's; std with ddof = 0). power_mean is computed from the stored profile, so
  mean(power_profile) / size == power_mean; null for runtime-0 jobs.
* ``energy`` (J, whole job) — sample-and-hold integral of the profile over [0, runtime]: each sample holds for
  sample_period, the last one only until runtime: Σ_s P_s · min(period, runtime − s · period). 0 for runtime 0.

Each component (templates, job attributes, states, arrivals, job power, sample-level pattern, node-level noise)
draws from its own child of ``SeedSequence(seed)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from statistics import NormalDist
from typing import NamedTuple, cast

import numpy as np
import polars as pl
import pyarrow as pa

from wattsched.core.bounds import check_fits
from wattsched.core.schema import (
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    Provenance,
    ReadResult,
    canonical_order,
    empty_rejects,
    sort_queue_order,
)
from wattsched.workload.generate.footprint import M100_BYTES_PER_JOB
from wattsched.workload.generate.m100like_params import (
    NODE_COUNT_WEIGHTS,
    NODE_COUNTS,
    TIME_LIMITS_MINUTES,
    M100LikeParams,
)
from wattsched.workload.generate.m100like_power import _CENTRE, _power

__all__ = ["NODE_COUNTS", "NODE_COUNT_WEIGHTS", "TIME_LIMITS_MINUTES", "M100LikeParams", "generate_m100like"]

SECONDS_PER_DAY = 86400.0
SECONDS_PER_WEEK = 7 * SECONDS_PER_DAY

#: State names in the order of the non-TIMEOUT categorical draw.
_OTHER_STATES = ("COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY", "NODE_FAIL")
_FAIL_LIKE = ("FAILED", "OUT_OF_MEMORY", "NODE_FAIL")

# ------------------------------------------------------------------------------------------------ helpers


def _stratified_uniform(rng: np.random.Generator, mass: np.ndarray, key: np.ndarray | None = None) -> np.ndarray:
    """One u ∈ (0, 1) per template whose job-mass-weighted distribution is uniform (see module docstring).

    Templates are ordered by ``key`` (random order if None) and get the midpoint of their cumulative mass, so a
    key that carries structure (a user-level habit) keeps its ranks while the marginal is calibrated.
    """
    order = rng.permutation(mass.size) if key is None else np.argsort(key, kind="stable")
    m = mass[order] / mass.sum()
    mid = np.cumsum(m) - m / 2.0
    u = np.empty(mass.size)
    u[order] = mid if key is not None else (mid + rng.random()) % 1.0
    return np.clip(u, 1e-9, 1.0 - 1e-9)


def _deficit_assign(rng: np.random.Generator, mass: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """A category per template, drawn heaviest template first with P ∝ the remaining deficit of each category's
    target job share, among categories the template does not overfill by more than half its mass: heavy
    templates are random, light ones fill the gaps, so the job-weighted shares are met up to the light
    templates' masses (a plain per-template draw misses them by a heavy user's whole mass)."""
    target = weights / weights.sum()
    m = mass / mass.sum()
    deficit = target.copy()
    out = np.empty(mass.size, dtype=np.int64)
    u = rng.random(mass.size)
    for i in np.argsort(-m, kind="stable"):
        pos = np.maximum(deficit - m[i] / 2.0, 0.0)
        prob = pos if pos.sum() > 0 else (deficit >= deficit.max()).astype(np.float64)
        k = min(int(np.searchsorted(np.cumsum(prob) / prob.sum(), u[i], side="right")), target.size - 1)
        out[i] = k
        deficit[k] -= m[i]
    return out


def _normal_ppf(u: np.ndarray) -> np.ndarray:
    nd = NormalDist()
    return np.array([nd.inv_cdf(float(x)) for x in u])


def _log_uniform(rng: np.random.Generator, low: float, high: float, size: int | tuple[int, ...]) -> np.ndarray:
    return np.exp(rng.uniform(math.log(low), math.log(high), size))


class _Templates(NamedTuple):
    user: np.ndarray  # 0-based user index
    mass: np.ndarray  # job probability
    nodes: np.ndarray
    cores: np.ndarray  # single-node templates only (multi-node jobs use per-node counts)
    gpus: np.ndarray
    runtime_scale: np.ndarray
    walltime: np.ndarray
    dynamic: np.ndarray
    variability: np.ndarray
    amplitude: np.ndarray
    period: np.ndarray
    sharpness: np.ndarray
    ramp: np.ndarray
    spike_prob: np.ndarray
    drift_period: np.ndarray  # (T, 3) seconds
    drift_phase: np.ndarray  # (T, 3) radians


def _templates(rng: np.random.Generator, p: M100LikeParams, n_users: int, n_nodes: int) -> _Templates:
    ranks = np.arange(1, n_users + 1, dtype=np.float64)
    user_p = ranks**-p.zipf_exponent
    user_p /= user_p.sum()
    n_tpl = 1 + np.minimum(rng.poisson(p.templates_per_user_mean, n_users), p.max_templates_per_user - 1)
    user = np.repeat(np.arange(n_users), n_tpl)
    t = user.size
    w = rng.gamma(p.template_weight_concentration, 1.0, t) + 1e-12
    w /= np.bincount(user, weights=w, minlength=n_users)[user]
    mass = user_p[user] * w
    mass /= mass.sum()

    cls = _deficit_assign(rng, mass, np.asarray(p.node_count_weights, dtype=np.float64))
    nodes = np.minimum(np.asarray(p.node_counts, dtype=np.int64)[cls], n_nodes)
    gw = np.asarray(p.single_node_gpu_weights, dtype=np.float64)
    gpus1 = rng.choice(gw.size, size=t, p=gw / gw.sum()).astype(np.int64)
    cores = np.maximum(p.cores_per_node * np.maximum(gpus1, 1) // p.gpus_per_node, 1)
    share = np.where(
        nodes == 1,
        p.partial_node_power_floor + (1.0 - p.partial_node_power_floor) * gpus1 / p.gpus_per_node,
        1.0,
    )

    limits = np.array(sorted(set(p.time_limits_minutes)), dtype=np.float64) * 60.0
    scale = p.runtime_median * np.exp(p.runtime_template_sigma * _normal_ppf(_stratified_uniform(rng, mass)))
    scale = np.clip(scale, 1.0, limits[-1])
    wanted = scale * _log_uniform(rng, p.walltime_headroom_low, p.walltime_headroom_high, t)
    walltime = limits[np.minimum(np.searchsorted(limits, wanted, side="left"), limits.size - 1)]

    # Power level: a user-level habit (stratified over users' job mass) plus a per-template deviation.
    # The combined score is rank-calibrated on job mass, so the job-weighted marginal stays lognormal.
    s = p.dynamic_user_share
    key = math.sqrt(s) * rng.standard_normal(n_users)[user] + math.sqrt(1.0 - s) * rng.standard_normal(t)
    z = _normal_ppf(_stratified_uniform(rng, mass, key))
    single = nodes == 1
    if single.any():  # GPU share relative to the job-weighted single-node average: node-count-free medians
        share[single] /= np.average(share[single], weights=mass[single])
    dynamic = p.dynamic_median * np.exp(p.dynamic_template_sigma * z)
    dynamic = np.minimum(dynamic * share, 0.9 * (p.max_node_watts - p.idle_watts))
    variability = np.exp(p.variability_sigma * rng.standard_normal(t))
    flat = rng.random(t) < p.flat_prob
    amplitude = np.where(flat, 0.0, np.minimum(p.phase_amplitude * variability * rng.uniform(0.5, 1.5, t), 0.6))
    period = _log_uniform(rng, p.phase_period_min_samples, p.phase_period_max_samples, t)
    sharpness = _log_uniform(rng, p.phase_sharpness_min, p.phase_sharpness_max, t)
    ramp = rng.integers(0, p.ramp_max_samples + 1, t)
    spike = np.minimum(p.spike_prob * np.exp(rng.standard_normal(t)), 0.2)
    drift_period = _log_uniform(rng, p.drift_period_min_days, p.drift_period_max_days, (t, 3)) * SECONDS_PER_DAY
    drift_phase = rng.uniform(0.0, 2.0 * math.pi, (t, 3))
    return _Templates(
        user,
        mass,
        nodes,
        cores,
        np.where(nodes == 1, gpus1, 0),
        scale,
        walltime,
        dynamic,
        variability,
        amplitude,
        period,
        sharpness,
        ramp,
        spike,
        drift_period,
        drift_phase,
    )


def _week_profile(p: M100LikeParams) -> np.ndarray:
    """Hourly arrival-rate weights over one week (mean 1), index 0 = Monday 00:00."""
    hours = np.arange(168)
    daily = 1.0 + p.daily_amplitude * np.cos(2.0 * math.pi * ((hours % 24) + 0.5 - p.peak_hour) / 24.0)
    daily *= np.where(hours // 24 >= 5, p.weekend_factor, 1.0)
    daily = np.maximum(daily, 1e-9)
    return daily / daily.mean()


def _arrivals(rng: np.random.Generator, n: int, span: float, p: M100LikeParams) -> tuple[np.ndarray, float]:
    """Sorted submit times on [0, span] (first 0, last span) following the weekly profile; and the clock origin."""
    weights = _week_profile(p)
    edges = np.arange(169) * 3600.0
    cum = np.concatenate(([0.0], np.cumsum(weights) * 3600.0))
    cum[-1] = SECONDS_PER_WEEK

    def forward(t: np.ndarray) -> np.ndarray:
        wk = np.floor(t / SECONDS_PER_WEEK)
        return wk * SECONDS_PER_WEEK + np.interp(t - wk * SECONDS_PER_WEEK, edges, cum)

    def inverse(u: np.ndarray) -> np.ndarray:
        wk = np.floor(u / SECONDS_PER_WEEK)
        return wk * SECONDS_PER_WEEK + np.interp(u - wk * SECONDS_PER_WEEK, cum, edges)

    origin = p.start_weekday * SECONDS_PER_DAY + (p.start_hour % 24.0) * 3600.0
    if n == 1:
        return np.zeros(1), origin
    c = np.cumsum(rng.exponential(1.0, n))
    v = (c - c[0]) / (c[-1] - c[0])
    u0, u1 = forward(np.array([origin, origin + span]))
    times = inverse(u0 + v * (u1 - u0)) - origin
    times[0], times[-1] = 0.0, span
    return np.maximum.accumulate(np.clip(times, 0.0, span)), origin


def _states(rng: np.random.Generator, walltime: np.ndarray, p: M100LikeParams) -> np.ndarray:
    """State names per job; P(TIMEOUT) ∝ walltime**exponent with mean p_timeout, the rest in fixed proportions."""
    probs = np.array([p.p_completed, p.p_failed, p.p_cancelled, p.p_out_of_memory, p.p_node_fail])
    total = probs.sum() + p.p_timeout
    p_to = p.p_timeout / total
    w = walltime**p.timeout_walltime_exponent
    p_job = np.clip(p_to * w / w.mean(), 0.0, 0.9)
    u = rng.random(walltime.size)
    other = np.minimum(
        np.searchsorted(np.cumsum(probs / probs.sum()), (u - p_job) / (1.0 - p_job), "right"), probs.size - 1
    )
    names = np.array([*_OTHER_STATES, "TIMEOUT"])
    return names[np.where(u < p_job, probs.size, other)]


# -------------------------------------------------------------------------------------------------- public


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_positive(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.floating | np.integer)
        or not (math.isfinite(value) and value > 0)
    ):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def generate_m100like(
    n_jobs: int,
    *,
    seed: int = 0,
    n_nodes: int = 980,
    n_users: int = 480,
    target_load: float | None = None,
    span_days: float | None = None,
    sample_period: float = 20.0,
    params: M100LikeParams | None = None,
) -> ReadResult:
    """Generate ``n_jobs`` Marconi100-like jobs with per-job power profiles (PM100-calibrated model).

    Deterministic per ``seed``. Give at most one of ``target_load`` (offered load on ``n_nodes``; sets the span)
    and ``span_days`` (submit-time span); with neither, the span follows PM100's arrival rate. Returns a canonical
    :class:`ReadResult` (size = nodes) with no rejects; the module docstring documents every modelling choice.
    """
    n_jobs = _check_int("n_jobs", n_jobs)
    check_fits("n_jobs", n_jobs, M100_BYTES_PER_JOB, "the m100 generator")
    n_nodes = _check_int("n_nodes", n_nodes)
    n_users = _check_int("n_users", n_users)
    sample_period = _check_positive("sample_period", sample_period)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if target_load is not None and span_days is not None:
        raise ValueError("give target_load or span_days, not both (target_load determines the span)")
    if target_load is not None:
        target_load = _check_positive("target_load", target_load)
        if n_jobs < 2:
            raise ValueError("target_load needs n_jobs ≥ 2 (the load is defined over the submit-time span)")
    if span_days is not None:
        span_days = _check_positive("span_days", span_days)
    if params is not None and not isinstance(params, M100LikeParams):
        raise ValueError(f"params must be an M100LikeParams, got {type(params).__name__}")
    p = params if params is not None else M100LikeParams()
    if target_load is None and span_days is None and p.default_target_load is not None and n_jobs >= 2:
        target_load = p.default_target_load

    rng_tpl, rng_job, rng_state, rng_arr, rng_power, rng_sample, rng_node = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(7)
    )
    tpl = _templates(rng_tpl, p, n_users, n_nodes)

    # Job attributes (independent of time; arrival order is assigned afterwards).
    t = rng_job.choice(tpl.mass.size, size=n_jobs, p=tpl.mass)
    nodes = tpl.nodes[t].copy()
    jitter = (nodes > 1) & (rng_job.random(n_jobs) < p.node_jitter_prob)
    up = rng_job.random(n_jobs) < 0.5
    nodes = np.where(jitter, np.where(up, nodes * 2, np.maximum(nodes // 2, 2)), nodes)
    nodes = np.minimum(nodes, min(max(p.node_counts), n_nodes))
    cores = np.where(nodes == 1, tpl.cores[t], p.cores_per_node * nodes)
    gpus = np.where(nodes == 1, tpl.gpus[t], p.gpus_per_node * nodes)
    walltime = tpl.walltime[t]
    natural = tpl.runtime_scale[t] * np.exp(p.runtime_job_sigma * rng_job.standard_normal(n_jobs))
    u_fail, z_cancel, u_over, u_zero = (
        rng_job.random(n_jobs),
        rng_job.standard_normal(n_jobs),
        rng_job.random(n_jobs),
        rng_job.random(n_jobs),
    )

    state = _states(rng_state, walltime, p)
    runtime = natural.copy()
    fail_like = np.isin(state, _FAIL_LIKE)
    runtime[fail_like] *= u_fail[fail_like] ** p.fail_fraction_exponent
    cancelled = state == "CANCELLED"
    runtime[cancelled] *= np.exp(p.cancel_log_mean + p.cancel_log_sigma * z_cancel[cancelled])
    timeout = state == "TIMEOUT"
    over = ~timeout & (runtime >= walltime)
    runtime[over] = walltime[over] * (0.3 + 0.69 * u_over[over])
    runtime = np.maximum(np.floor(runtime), 1.0)
    runtime[~timeout & (u_zero < p.zero_runtime_prob)] = 0.0
    runtime[timeout] = walltime[timeout]

    # Arrivals.
    work = float((nodes.astype(np.float64) * runtime).sum())
    if target_load is not None:
        if work <= 0:
            raise ValueError("all generated jobs have runtime 0; target_load cannot be met")
        span = work / (n_nodes * target_load)
    elif span_days is not None:
        span = span_days * SECONDS_PER_DAY
    else:
        span = n_jobs / p.jobs_per_day * SECONDS_PER_DAY
    submit, origin = _arrivals(rng_arr, n_jobs, span if n_jobs > 1 else 0.0, p)

    # Job-level power parameters (drift evaluated at the absolute model clock).
    clock = (submit + origin)[:, None]
    drift = (
        p.drift_sd
        * math.sqrt(2.0 / 3.0)
        * np.sin(2.0 * math.pi * clock / tpl.drift_period[t] + tpl.drift_phase[t]).sum(axis=1)
    )
    dynamic = (
        tpl.dynamic[t] * np.maximum(1.0 + drift, 0.3) * np.exp(p.dynamic_job_sigma * rng_power.standard_normal(n_jobs))
    )
    dynamic = np.minimum(dynamic, 0.95 * (p.max_node_watts - p.idle_watts))
    bound = np.full(n_jobs, np.inf)
    if p.platform_node_dynamic_watts is not None:
        # Jobs of one template share its level: what draws together is the template's mean concurrent nodes.
        span_s = float(submit[-1])
        concurrent = (
            np.bincount(t, weights=nodes * runtime, minlength=tpl.mass.size)[t] / span_s
            if span_s > 0
            else np.zeros(n_jobs)
        )
        b = p.bound_fraction * p.platform_node_dynamic_watts
        bound = b + (p.max_node_watts - p.idle_watts - b) / np.sqrt(np.maximum(nodes, concurrent))
    dynamic = np.minimum(dynamic, bound / (1.0 + tpl.amplitude[t]))
    variability = tpl.variability[t]
    sharp = tpl.sharpness[t]
    job_power = {
        "dynamic": dynamic,
        "period": tpl.period[t],
        "phase": rng_power.random(n_jobs),
        "sharpness": sharp,
        "tanh_k": np.tanh(sharp),
        "amplitude": tpl.amplitude[t],
        "ramp": tpl.ramp[t].astype(np.float64),
        "common_sd": p.common_noise * variability,
        "spike_prob": tpl.spike_prob[t],
        "node_sd": p.node_noise * variability * dynamic + p.node_noise_watts,
        "offset_sd": p.node_offset * dynamic,
        "bound": bound,
    }
    n_samples = np.ceil(runtime / sample_period).astype(np.int64)
    stats = _power(rng_sample, rng_node, n_samples, nodes, job_power, p)

    has = n_samples > 0
    n_el = np.where(has, nodes * n_samples, 1).astype(np.float64)
    centre = float(_CENTRE)
    mean_y = stats.ysum / n_el
    power_mean = np.where(has, stats.psum / n_el, np.nan)
    # Σy² comes from float32 squares (error ≈ 1e-7·y², i.e. ≲ 0.05 W on a std near 0); one sample has std 0.
    power_std = np.where(has, np.sqrt(np.maximum(stats.ysq / n_el - mean_y**2, 0.0)), np.nan)
    power_std[has & (n_el == 1)] = 0.0
    # Rounded like the profile's float32 samples, so a single-node job's max is exactly its profile's max.
    power_max = np.where(has, (stats.ymax + centre).astype(np.float32).astype(np.float64), np.nan)
    last = np.where(has, stats.profile[np.maximum(stats.offsets[1:] - 1, 0)], 0.0).astype(np.float64)
    energy = np.where(has, sample_period * stats.psum - last * (n_samples * sample_period - runtime), 0.0)

    # an Arrow array (not a table) gives a Series
    profile = cast(
        pl.Series, pl.from_arrow(pa.LargeListArray.from_arrays(pa.array(stats.offsets), pa.array(stats.profile)))
    )
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(1, n_jobs + 1, dtype=np.int64),
            "submit_time": submit,
            "walltime": walltime,
            "runtime": runtime,
            "size": nodes,
            "user_id": tpl.user[t] + 1,
            "state": state,
            "cores": cores,
            "gpus": gpus,
            "power_mean": power_mean,
            "power_max": power_max,
            "power_std": power_std,
            "energy": energy,
        },
        nan_to_null=True,
    ).with_columns(profile.alias("power_profile"))
    schema = {**REQUIRED_COLUMNS, **OPTIONAL_COLUMNS}
    jobs = sort_queue_order(canonical_order(jobs.cast({c: schema[c] for c in jobs.columns if c in schema})))

    achieved = work / (n_nodes * float(submit[-1])) if submit[-1] > 0 else math.inf
    provenance = Provenance(
        source=f"m100like:seed={seed}",
        format="m100like",
        machine_size=n_nodes,
        size_unit="nodes",
        header={
            "model": "Marconi100-like synthetic workload with per-job power profiles, calibrated on PM100 facts",
            "seed": seed,
            "sample_period": sample_period,
            "idle_watts": p.idle_watts,
            "min_node_watts": p.min_node_watts,
            "max_node_watts": p.max_node_watts,
            "clock_offset": origin % SECONDS_PER_DAY,
            "start_weekday": p.start_weekday,
            "span": float(submit[-1]),
            "target_load": target_load,
            "offered_load": achieved,
            "n_users": n_users,
            "n_templates": int(tpl.mass.size),
            "n_profile_samples": int(stats.offsets[-1]),
            "n_node_samples": int((nodes * n_samples).sum()),
            "params": asdict(p),
        },
        n_records=n_jobs,
        n_jobs=n_jobs,
        n_rejected=0,
        conventions=_conventions(p, sample_period, target_load, span_days),
    )
    return ReadResult(jobs, empty_rejects(), provenance)


def _conventions(
    p: M100LikeParams, sample_period: float, target_load: float | None, span_days: float | None
) -> list[str]:
    if target_load is not None:
        span = f"span = Σ size·runtime / (n_nodes · {target_load}) (offered load = target_load)"
    elif span_days is not None:
        span = f"span = {span_days} days"
    else:
        span = f"span = n_jobs / {p.jobs_per_day} jobs per day (PM100 rate)"
    bound = (
        "no platform bound on job power"
        if p.platform_node_dynamic_watts is None
        else "platform bound: a job's common per-node dynamic level ≤ b + (max − idle − b)/√q_eff, b ="
        f" {p.bound_fraction:g}·{p.platform_node_dynamic_watts:.1f} W (q_eff = max(nodes, its template's mean"
        " concurrent nodes))"
    )
    return [
        "synthetic: Marconi100-like jobs with per-user templates (habits) and slow power drift",
        "size = nodes (node-exclusive); cores = cores_per_node·nodes and gpus = gpus_per_node·nodes for multi-node"
        " jobs; single-node jobs may use fewer GPUs (cores = cores_per_node·max(gpus, 1)/gpus_per_node)",
        "walltime = Slurm time limit (s) from a discrete set of minutes; TIMEOUT jobs have runtime == walltime",
        "runtime in whole seconds; runtime 0 (ended at start) gives an empty power_profile and null power stats",
        f"submit_time from 0 to the span, weekly/daily-cycle Poisson arrivals; {span}",
        bound,
        f"power_profile: job power (W) summed over its nodes at each {sample_period:g} s sample,"
        " len = ceil(runtime / sample_period)",
        f"per-node samples clipped to [{p.min_node_watts:g}, {p.max_node_watts:g}] W; idle {p.idle_watts:g} W",
        "power_mean/max/std: per-node statistics over all per-node samples of the job (std ddof=0);"
        " power_mean = mean(power_profile) / size",
        "energy (J) = Σ_s profile[s] · min(sample_period, runtime − s·sample_period)"
        " (sample-and-hold over [0, runtime])",
    ]
