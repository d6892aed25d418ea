"""Per-node power series of the Marconi100-like generator: generated chunk by chunk, sample-major, and reduced
to each job's summed profile and per-node statistics (the hot path: ≈ 300 M node samples for a PM100-sized run).
The model is documented in :mod:`wattsched.workload.generate.m100like`."""

from __future__ import annotations

import math
from functools import cache
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from wattsched.workload.generate.m100like_params import M100LikeParams

#: Per-node elements generated per chunk (bounds peak memory; a larger job is generated alone).
_CHUNK_ELEMENTS = 1 << 22
#: Centre subtracted from per-node watts before squaring, for accurate float32 sums of squares.
_CENTRE = np.float32(700.0)


@cache
def _normal_table() -> np.ndarray:
    """N(0, 1) quantiles at (i + 0.5) / 65536: indexed by uniform uint16, an exact discretised normal."""
    nd = NormalDist()
    return np.array([nd.inv_cdf((i + 0.5) / 65536.0) for i in range(65536)], dtype=np.float32)


def _fast_normal(rng: np.random.Generator, n: int) -> np.ndarray:
    """float32 N(0, 1) deviates by quantile-table lookup (the hot path: hundreds of millions of node samples)."""
    return _normal_table()[rng.integers(0, 65536, n, dtype=np.uint16)]


class _PowerStats(NamedTuple):
    profile: np.ndarray  # float32, all jobs' samples concatenated
    offsets: np.ndarray  # int64, n_jobs + 1
    psum: np.ndarray  # Σ profile per job (float64)
    ysum: np.ndarray  # Σ (x − centre) over per-node samples
    ysq: np.ndarray  # Σ (x − centre)² over per-node samples
    ymax: np.ndarray  # max (x − centre)


def _power(
    rng_sample: np.random.Generator,
    rng_node: np.random.Generator,
    n_samples: np.ndarray,
    nodes: np.ndarray,
    job: dict[str, np.ndarray],
    p: M100LikeParams,
) -> _PowerStats:
    """Per-node series of every job, generated chunk by chunk, reduced to the summed profile and per-node stats."""
    n = n_samples.size
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_samples, out=offsets[1:])
    profile = np.empty(int(offsets[-1]), dtype=np.float32)
    psum, ysum, ysq = np.zeros(n), np.zeros(n), np.zeros(n)
    ymax = np.full(n, np.nan)
    active = np.flatnonzero(n_samples > 0)
    elements = nodes[active] * n_samples[active]
    cum_el = np.concatenate(([0], np.cumsum(elements)))
    lo, hi = np.float32(p.min_node_watts) - _CENTRE, np.float32(p.max_node_watts) - _CENTRE
    two_pi = np.float32(2.0 * math.pi)
    f32 = {k: v.astype(np.float32) for k, v in job.items()}
    a = 0
    while a < active.size:
        b = max(int(np.searchsorted(cum_el, cum_el[a] + _CHUNK_ELEMENTS, side="right")) - 1, a + 1)
        jobs = active[a:b]
        lens = n_samples[jobs]
        jn = nodes[jobs]
        g0, g1 = int(offsets[jobs[0]]), int(offsets[jobs[-1] + 1])
        s_tot = g1 - g0
        starts = np.zeros(jobs.size, dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        loc = np.repeat(np.arange(jobs.size), lens)  # chunk-local job of each sample
        sj = jobs[loc]
        s_idx = (np.arange(s_tot, dtype=np.int64) - np.repeat(starts, lens)).astype(np.float32)

        dyn = f32["dynamic"][sj]
        x = s_idx / f32["period"][sj] + f32["phase"][sj]
        wave = np.tanh(f32["sharpness"][sj] * np.sin(two_pi * x)) / f32["tanh_k"][sj]
        level = dyn * (np.float32(1.0) + f32["amplitude"][sj] * wave)
        ramp = f32["ramp"][sj]
        in_ramp = s_idx < ramp
        if in_ramp.any():
            r0 = np.float32(p.ramp_start_fraction) * dyn[in_ramp]
            frac = (s_idx[in_ramp] + np.float32(1.0)) / (ramp[in_ramp] + np.float32(1.0))
            level[in_ramp] = r0 + (level[in_ramp] - r0) * frac
        level += f32["common_sd"][sj] * dyn * _fast_normal(rng_sample, s_tot)
        spikes = np.flatnonzero(rng_sample.random(s_tot, dtype=np.float32) < f32["spike_prob"][sj])
        if spikes.size:
            size = np.float32(p.spike_size) * (np.float32(0.5) + rng_sample.random(spikes.size, dtype=np.float32))
            level[spikes] += size * dyn[spikes]
        np.minimum(level, f32["bound"][sj], out=level)
        level += np.float32(p.idle_watts) - _CENTRE

        # Per-node elements, sample-major: (job, sample, node).
        nps = np.repeat(jn, lens)
        e_start = np.zeros(s_tot, dtype=np.int64)
        np.cumsum(nps[:-1], out=e_start[1:])
        n_el = int(e_start[-1] + nps[-1])
        y = np.repeat(level, nps)
        noise = _fast_normal(rng_node, n_el)
        noise *= np.repeat(f32["node_sd"][sj], nps)
        y += noise
        node_base = np.zeros(jobs.size, dtype=np.int64)
        np.cumsum(jn[:-1], out=node_base[1:])
        node_off = _fast_normal(rng_node, int(jn.sum())) * np.repeat(f32["offset_sd"][jobs], jn)
        idx = np.repeat(node_base[loc] - e_start, nps)  # element → its node's offset
        idx += np.arange(n_el, dtype=np.int64)
        y += node_off[idx]
        del noise, idx
        np.clip(y, lo, hi, out=y)

        s_sum = np.add.reduceat(y, e_start, dtype=np.float64)
        s_max = np.maximum.reduceat(y, e_start)
        np.square(y, out=y)
        s_sq = np.add.reduceat(y, e_start, dtype=np.float64)
        del y
        prof = (s_sum + nps * float(_CENTRE)).astype(np.float32)
        profile[g0:g1] = prof
        psum[jobs] = np.add.reduceat(prof.astype(np.float64), starts)
        ysum[jobs] = np.add.reduceat(s_sum, starts)
        ysq[jobs] = np.add.reduceat(s_sq, starts)
        ymax[jobs] = np.maximum.reduceat(s_max, starts)
        a = b
    return _PowerStats(profile, offsets, psum, ysum, ysq, ymax)
