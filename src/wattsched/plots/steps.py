"""Step functions reduced for drawing: a power timeline of millions of samples becomes a few thousand bins
whose extremes are exact, so a cap break stays visible in the figure."""

from __future__ import annotations

import numpy as np

__all__ = ["resample_step"]


def resample_step(time: np.ndarray, value: np.ndarray, bins: int) -> tuple[np.ndarray, ...]:
    """Reduce a step function (``value[i]`` holds on ``[time[i], time[i+1])``) to ``bins`` equal bins: their left
    edges, time-weighted means, minima and maxima. The extremes are exact, so a cap break survives the
    reduction; the last sample only closes the last step."""
    t = np.asarray(time, dtype=np.float64)
    v = np.asarray(value, dtype=np.float64)
    if t.size < 2 or t[-1] <= t[0]:
        return t, v, v, v
    seg_t, seg_v = t[:-1], v[:-1]
    edges = np.linspace(t[0], t[-1], bins + 1)
    area = np.concatenate(([0.0], np.cumsum(seg_v * np.diff(t))))
    k = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, seg_t.size - 1)
    integral = area[k] + seg_v[k] * (edges - t[k])
    integral[-1] = area[-1]
    mean = np.diff(integral) / np.diff(edges)
    first = k[:-1]
    last = np.clip(np.searchsorted(seg_t, edges[1:], side="left") - 1, 0, seg_t.size - 1)
    # reduceat covers the segments from a bin's first up to the next bin's first (excluded); ``last`` adds the
    # segment that starts inside the bin and runs over its right edge
    vmax = np.maximum(np.maximum.reduceat(seg_v, first), seg_v[last])
    vmin = np.minimum(np.minimum.reduceat(seg_v, first), seg_v[last])
    return edges[:-1], mean, vmin, vmax
