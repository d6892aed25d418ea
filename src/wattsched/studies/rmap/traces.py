"""Paper 004's job traces (paper 004 §6, [AMBIG-4.2], [AMBIG-4.5]; docs/rmap.md): 30 jobs each, Poisson arrivals,
drawn from the configuration data — the app uniformly, ``n_req`` uniformly among the node counts of the table
within the trace's range:

- ``small``: n_req ≤ 24; ``large``: n_req ≥ 40; ``random1`` and ``random2``: any n_req. ``random1`` has most of
  its jobs arriving early (its first two thirds arrive at three times the rate), ``random2`` arrives uniformly.

``t_req`` is the measured time of the packed configuration ``(n_req × 16, 115 W)`` rounded up to a 10-s grid,
times an optional overestimate factor drawn uniformly in ``[1, 1 + overestimate]`` (the paper: users overestimate
by up to 20%; default 0). The arrival rate is "sparse" ([AMBIG-4.5]): the mean inter-arrival time equals
``arrival_scale`` × the mean ``t_req`` (default 1, [AMBIG-4.5]; larger is sparser).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from wattsched.studies.rmap.machine import JobDetails

TRACES = ("small", "large", "random1", "random2")


def generate_rmap_trace(
    details: JobDetails,
    kind: str,
    *,
    n_jobs: int = 30,
    seed: int = 0,
    overestimate: float = 0.0,
    n_nodes: int = 64,
    arrival_scale: float = 1.0,
) -> pl.DataFrame:
    """``job_id, submit_time, app, n_req, t_req``; see the module docstring."""
    if kind not in TRACES:
        raise ValueError(f"unknown RMAP trace {kind!r}; choose from {', '.join(TRACES)}")
    if not arrival_scale > 0:
        raise ValueError(f"arrival_scale must be > 0, got {arrival_scale}")
    if overestimate < 0:
        raise ValueError(f"overestimate must be ≥ 0, got {overestimate}")
    rng = np.random.default_rng([seed, TRACES.index(kind)])
    apps = sorted(details.apps)
    rows = []
    for j in range(n_jobs):
        app = apps[int(rng.integers(len(apps)))]
        table = details[app]
        sizes = sorted({int(n) for n in table.nodes.tolist() if table.packed(int(n)) is not None})
        if kind == "small":
            sizes = [s for s in sizes if s <= 24]
        elif kind == "large":
            sizes = [s for s in sizes if s >= 40]
        sizes = [s for s in sizes if s <= n_nodes]
        if not sizes:
            raise ValueError(f"{app}: no packed configuration in the {kind!r} range")
        n_req = sizes[int(rng.integers(len(sizes)))]
        t_packed = float(table.time[table.packed(n_req)])
        t_req = math.ceil(t_packed * float(rng.uniform(1.0, 1.0 + overestimate)) / 10.0 - 1e-9) * 10.0
        rows.append((j + 1, app, n_req, t_req))
    frame = pl.DataFrame(
        rows, schema={"job_id": pl.Int64, "app": pl.Utf8, "n_req": pl.Int64, "t_req": pl.Float64}, orient="row"
    )
    mean_gap = arrival_scale * float(frame["t_req"].mean())
    gaps = rng.exponential(mean_gap, n_jobs)
    gaps[0] = 0.0
    if kind == "random1":
        gaps[: 2 * n_jobs // 3] /= 3.0
    return frame.with_columns(pl.Series("submit_time", np.cumsum(gaps))).select(
        "job_id", "submit_time", "app", "n_req", "t_req"
    )
