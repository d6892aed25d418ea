"""Parameters of the Marconi100-like generator (:mod:`wattsched.workload.generate.m100like`, whose docstring
documents the model; docs/m100like.md the platform calibration): every number of the model, with PM100-calibrated
defaults and their validation."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: PM100 node counts 1–256: power-of-two sizes dominate; a few common non-powers keep the tail realistic.
NODE_COUNTS: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 100, 128, 200, 256)
NODE_COUNT_WEIGHTS: tuple[float, ...] = (
    0.721,
    0.088,
    0.008,
    0.045,
    0.004,
    0.040,
    0.003,
    0.003,
    0.0486,
    0.004,
    0.002,
    0.018,
    0.001,
    0.009,
    0.0005,
    0.004,
    0.0002,
    0.0011,
)
#: Discrete Slurm time limits (minutes), up to the 24 h limit of M100's production partition.
TIME_LIMITS_MINUTES: tuple[int, ...] = (
    5,
    10,
    15,
    20,
    30,
    45,
    60,
    90,
    120,
    180,
    240,
    300,
    360,
    480,
    600,
    720,
    900,
    1080,
    1200,
    1440,
)


@dataclass(frozen=True)
class M100LikeParams:
    """Every parameter of the generator; defaults reproduce the PM100 facts (module docstring)."""

    # --- users and templates
    #: User activity P(user k) ∝ k**−zipf_exponent.
    zipf_exponent: float = 1.0
    #: Mean number of templates per user beyond the first (Poisson).
    templates_per_user_mean: float = 2.0
    #: Upper bound on templates per user.
    max_templates_per_user: int = 8
    #: Dirichlet concentration of a user's template weights (< 1: one template usually dominates).
    template_weight_concentration: float = 0.7
    # --- nodes, cores, GPUs
    #: Template node counts and their job-weighted probabilities (normalised).
    node_counts: tuple[int, ...] = NODE_COUNTS
    node_count_weights: tuple[float, ...] = NODE_COUNT_WEIGHTS
    #: Probability that a multi-node job doubles or halves its template's node count (never to 1 node).
    node_jitter_prob: float = 0.15
    #: P(0..gpus_per_node GPUs) of single-node templates.
    single_node_gpu_weights: tuple[float, ...] = (0.05, 0.30, 0.15, 0.02, 0.48)
    cores_per_node: int = 32
    gpus_per_node: int = 4
    #: Dynamic-power factor of a single-node job with no GPU, rising linearly to 1 at gpus_per_node GPUs
    #: (then normalised to mean 1 over single-node jobs).
    partial_node_power_floor: float = 0.6
    # --- run time, time limit, state
    #: Median template run-time scale (s) and its log-sd across templates.
    runtime_median: float = 200.0
    runtime_template_sigma: float = 3.2
    #: Log-sd of a job's natural run time around its template's scale.
    runtime_job_sigma: float = 0.7
    #: Allowed time limits (minutes); the largest is the maximum walltime.
    time_limits_minutes: tuple[int, ...] = TIME_LIMITS_MINUTES
    #: Users ask for time limit ≥ run-time scale × headroom, headroom log-uniform in [low, high].
    walltime_headroom_low: float = 3.0
    walltime_headroom_high: float = 40.0
    #: Job-state probabilities (normalised; PM100 shares).
    p_completed: float = 0.7798
    p_failed: float = 0.1290
    p_cancelled: float = 0.0485
    p_timeout: float = 0.0376
    p_out_of_memory: float = 0.0044
    p_node_fail: float = 0.0007
    #: P(TIMEOUT) ∝ walltime**this (0: independent of the limit).
    timeout_walltime_exponent: float = 0.2
    #: Failed jobs run natural × U**this (median 2**−this of the natural run time).
    fail_fraction_exponent: float = 1.5
    #: Cancelled jobs run natural × lognormal(mean, sigma).
    cancel_log_mean: float = 0.6
    cancel_log_sigma: float = 1.0
    #: Probability that a non-TIMEOUT job has runtime 0 (empty profile).
    zero_runtime_prob: float = 3e-4
    # --- arrivals
    #: Offered load when neither span_days nor target_load is given (None: PM100's arrival rate, jobs_per_day).
    default_target_load: float | None = 0.95
    #: Arrival rate with default_target_load = None and no span (PM100: 231,238 jobs in 160.5 days).
    jobs_per_day: float = 1440.5
    #: Daily cycle: rate ∝ 1 + daily_amplitude · cos(2π(hour − peak_hour)/24); weekends × weekend_factor.
    daily_amplitude: float = 0.5
    peak_hour: float = 14.0
    weekend_factor: float = 0.6
    #: Weekday (0 = Monday) and hour of the model clock's origin.
    start_weekday: int = 0
    start_hour: float = 0.0
    # --- power (W per node)
    idle_watts: float = 240.0
    min_node_watts: float = 200.0
    max_node_watts: float = 2100.0
    #: Median template dynamic power (above idle) and its log-sd across templates.
    dynamic_median: float = 570.0
    dynamic_template_sigma: float = 0.4
    #: Share of the log-variance of template power levels that is common to a user's templates.
    dynamic_user_share: float = 0.7
    #: Log-sd of a job's dynamic level around its (drifting) template level.
    dynamic_job_sigma: float = 0.07
    #: Slow drift of a template's level: total sd (fraction of the level) and period range (days).
    drift_sd: float = 0.08
    drift_period_min_days: float = 7.0
    drift_period_max_days: float = 90.0
    #: Log-sd of a template's variability multiplier (scales phase amplitude and noise).
    variability_sigma: float = 0.5
    #: Share of templates with flat profiles (no phases).
    flat_prob: float = 0.3
    #: Median phase amplitude (fraction of dynamic power), capped at 0.6.
    phase_amplitude: float = 0.2
    #: Phase period range (samples, log-uniform) and wave sharpness range (log-uniform).
    phase_period_min_samples: float = 3.0
    phase_period_max_samples: float = 180.0
    phase_sharpness_min: float = 0.5
    phase_sharpness_max: float = 8.0
    #: Startup ramp length (0..ramp_max_samples samples) and its starting level (fraction of dynamic).
    ramp_max_samples: int = 3
    ramp_start_fraction: float = 0.15
    #: Job-wide sample noise (fraction of dynamic), per-node noise (fraction + watts), per-node fixed offset.
    common_noise: float = 0.04
    node_noise: float = 0.05
    node_noise_watts: float = 5.0
    node_offset: float = 0.03
    #: Median per-sample spike probability (lognormal across templates, ≤ 0.2) and spike size (fraction).
    spike_prob: float = 0.01
    spike_size: float = 0.4
    #: Platform bound (docs/m100like.md). platform_node_dynamic_watts: the highest machine-average dynamic power
    #: per node (M100, 2022: 719,880 W / 980 nodes). A job's common level (its phases, noise and spikes, before
    #: the per-node noise) is clipped at b + (max_node_watts − idle_watts − b) / √q_eff per node, with
    #: b = bound_fraction · platform_node_dynamic_watts and q_eff = max(job nodes, its template's mean concurrent
    #: nodes): one node may reach its physical maximum, while the excess over b of what many nodes draw together
    #: (one big job, or many jobs of one template, which share its level) shrinks like 1/√q_eff. The level is
    #: scaled down so that its phase peak meets the bound. None: no bound.
    platform_node_dynamic_watts: float | None = 719_880.0 / 980.0
    bound_fraction: float = 0.8

    def __post_init__(self) -> None:
        if len(self.node_counts) != len(self.node_count_weights) or not self.node_counts:
            raise ValueError("node_counts and node_count_weights must be non-empty and of equal length")
        if min(self.node_counts) < 1 or min(self.node_count_weights) < 0 or sum(self.node_count_weights) <= 0:
            raise ValueError("node_counts must be ≥ 1 and node_count_weights ≥ 0 with a positive sum")
        if len(self.single_node_gpu_weights) != self.gpus_per_node + 1:
            raise ValueError("single_node_gpu_weights needs gpus_per_node + 1 entries (0..gpus_per_node GPUs)")
        if min(self.single_node_gpu_weights) < 0 or sum(self.single_node_gpu_weights) <= 0:
            raise ValueError("single_node_gpu_weights must be ≥ 0 with a positive sum")
        if self.cores_per_node < 1 or self.gpus_per_node < 1:
            raise ValueError("cores_per_node and gpus_per_node must be ≥ 1")
        if not self.time_limits_minutes or min(self.time_limits_minutes) <= 0:
            raise ValueError("time_limits_minutes must be non-empty and positive")
        if not 1.0 <= self.walltime_headroom_low <= self.walltime_headroom_high:
            raise ValueError("need 1 ≤ walltime_headroom_low ≤ walltime_headroom_high")
        states = (
            self.p_completed,
            self.p_failed,
            self.p_cancelled,
            self.p_timeout,
            self.p_out_of_memory,
            self.p_node_fail,
        )
        if min(states) < 0 or sum(states) <= 0 or self.p_timeout >= sum(states):
            raise ValueError("state probabilities must be ≥ 0, sum > 0, and not all TIMEOUT")
        if not (self.min_node_watts <= self.idle_watts < self.max_node_watts):
            raise ValueError("need min_node_watts ≤ idle_watts < max_node_watts")
        if self.max_templates_per_user < 1 or self.ramp_max_samples < 0:
            raise ValueError("max_templates_per_user must be ≥ 1 and ramp_max_samples ≥ 0")
        if self.phase_period_min_samples <= 0 or self.phase_period_max_samples < self.phase_period_min_samples:
            raise ValueError("need 0 < phase_period_min_samples ≤ phase_period_max_samples")
        if self.phase_sharpness_min <= 0 or self.phase_sharpness_max < self.phase_sharpness_min:
            raise ValueError("need 0 < phase_sharpness_min ≤ phase_sharpness_max")
        if self.drift_period_min_days <= 0 or self.drift_period_max_days < self.drift_period_min_days:
            raise ValueError("need 0 < drift_period_min_days ≤ drift_period_max_days")
        if not 0 <= self.start_weekday <= 6:
            raise ValueError("start_weekday must be in 0..6")
        for name in (
            "bound_fraction",
            "flat_prob",
            "node_jitter_prob",
            "zero_runtime_prob",
            "partial_node_power_floor",
            "weekend_factor",
            "dynamic_user_share",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        positive = (
            "zipf_exponent",
            "template_weight_concentration",
            "runtime_median",
            "jobs_per_day",
            "dynamic_median",
            "fail_fraction_exponent",
        )
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        non_negative = (
            "templates_per_user_mean",
            "runtime_template_sigma",
            "runtime_job_sigma",
            "timeout_walltime_exponent",
            "cancel_log_sigma",
            "daily_amplitude",
            "dynamic_template_sigma",
            "dynamic_job_sigma",
            "drift_sd",
            "variability_sigma",
            "phase_amplitude",
            "ramp_start_fraction",
            "common_noise",
            "node_noise",
            "node_noise_watts",
            "node_offset",
            "spike_prob",
            "spike_size",
        )
        for name in non_negative:
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be ≥ 0")
        if self.default_target_load is not None and not (
            math.isfinite(self.default_target_load) and self.default_target_load > 0
        ):
            raise ValueError("default_target_load must be None or a finite number > 0")
        if self.platform_node_dynamic_watts is not None and not (
            0 < self.platform_node_dynamic_watts <= self.max_node_watts - self.idle_watts
        ):
            raise ValueError("platform_node_dynamic_watts must be None or in (0, max_node_watts − idle_watts]")
        if self.daily_amplitude >= 1.0:
            raise ValueError("daily_amplitude must be < 1 (arrival rate stays positive)")
