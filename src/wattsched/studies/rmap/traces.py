"""Paper 004's job traces (paper 004 §6, [AMBIG-4.2], [AMBIG-4.5]; docs/rmap.md): 30 jobs each, Poisson arrivals,
drawn from the configuration data — the app uniformly, ``n_req`` uniformly among the node counts of the table
within the trace's range:

- ``small``: n_req ≤ 24; ``large``: n_req ≥ 40; ``random1`` and ``random2``: any n_req. ``random1`` has most of
  its jobs arriving early (its first two thirds arrive at three times the rate), ``random2`` arrives uniformly.

``t_req`` ([AMBIG-4.2], option ``t_req``, :data:`T_REQ_READINGS`):

- ``"random-config"`` (the default): the measured time of a configuration drawn uniformly among the table's
  configurations at ``n_req`` nodes (any cores per node, any cap). The paper (§6): "We generate job traces from a
  random selection of our recorded configuration data", and §3.1: users submit "a node count and an estimated
  runtime", so a job is one recorded run, and its time is what its user asks for;
- ``"packed"``: the measured time of the packed configuration ``(n_req × 16, 115 W)``, the fastest at ``n_req``
  nodes for most apps: the strictest request, which leaves Adaptive-0 the fewest fallbacks; the reading of
  earlier versions.

Either is rounded up to a 10-s grid (the paper's 447.9 s → 450 s) and multiplied by an optional overestimate
factor drawn uniformly in ``[1, 1 + overestimate]`` (the paper: users overestimate by up to 20%; default 0). The
configuration is drawn under both readings, so the two readings' traces have the same apps, node counts and
arrivals and differ in ``t_req`` alone.

The arrival rate is "sparse" ([AMBIG-4.5]): the mean inter-arrival time equals ``arrival_scale`` × the mean packed
time of the trace's jobs (on the same 10-s grid; default scale 1, larger is sparser), which is the mean ``t_req``
under the packed reading: the arrival rate is the workload's, whichever way its users state their requests, and
the rate keeps the evidence it was chosen on (docs/decisions.md, [AMBIG-4.5]). ``arrival_reference="t_req"``
scales the gaps with the mean ``t_req`` of the reading instead (sparser under ``random-config``): a sensitivity run
of ``reproduce 004``.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import polars as pl

from wattsched.studies.rmap.machine import JobDetails

TRACES = ("small", "large", "random1", "random2")
TReq = Literal["random-config", "packed"]
#: The readings of t_req ([AMBIG-4.2], docs/decisions.md); the first is the default.
T_REQ_READINGS: tuple[TReq, ...] = ("random-config", "packed")
DEFAULT_T_REQ: TReq = "random-config"
ArrivalReference = Literal["packed", "t_req"]


def generate_rmap_trace(
    details: JobDetails,
    kind: str,
    *,
    n_jobs: int = 30,
    seed: int = 0,
    overestimate: float = 0.0,
    n_nodes: int = 64,
    arrival_scale: float = 1.0,
    t_req: TReq = DEFAULT_T_REQ,
    arrival_reference: ArrivalReference = "packed",
) -> pl.DataFrame:
    """``job_id, submit_time, app, n_req, t_req``; see the module docstring."""
    if kind not in TRACES:
        raise ValueError(f"unknown RMAP trace {kind!r}; choose from {', '.join(TRACES)}")
    if t_req not in T_REQ_READINGS:
        raise ValueError(f"unknown t_req reading {t_req!r}; choose from {', '.join(T_REQ_READINGS)}")
    if arrival_reference not in ("packed", "t_req"):
        raise ValueError(f"arrival_reference must be 'packed' or 't_req', got {arrival_reference!r}")
    if not arrival_scale > 0:
        raise ValueError(f"arrival_scale must be > 0, got {arrival_scale}")
    if overestimate < 0:
        raise ValueError(f"overestimate must be ≥ 0, got {overestimate}")
    rng = np.random.default_rng([seed, TRACES.index(kind)])
    apps = sorted(details.apps)
    packed_sizes = {
        app: [int(n) for n in np.unique(details[app].nodes) if details[app].packed(int(n)) is not None] for app in apps
    }
    rows, packed_times = [], []
    for j in range(n_jobs):
        app = apps[int(rng.integers(len(apps)))]
        table = details[app]
        sizes = packed_sizes[app]
        if kind == "small":
            sizes = [s for s in sizes if s <= 24]
        elif kind == "large":
            sizes = [s for s in sizes if s >= 40]
        sizes = [s for s in sizes if s <= n_nodes]
        if not sizes:
            raise ValueError(f"{app}: no packed configuration in the {kind!r} range")
        n_req = sizes[int(rng.integers(len(sizes)))]
        t_packed = float(table.time[table.packed(n_req)])
        # drawn under both readings, so that the two readings' traces differ in t_req alone
        at_n = np.flatnonzero(table.nodes == n_req)
        t_drawn = float(table.time[at_n[int(rng.integers(len(at_n)))]])
        t_base = t_drawn if t_req == "random-config" else t_packed
        t = math.ceil(t_base * float(rng.uniform(1.0, 1.0 + overestimate)) / 10.0 - 1e-9) * 10.0
        rows.append((j + 1, app, n_req, t))
        packed_times.append(math.ceil(t_packed / 10.0 - 1e-9) * 10.0)
    frame = pl.DataFrame(
        rows, schema={"job_id": pl.Int64, "app": pl.Utf8, "n_req": pl.Int64, "t_req": pl.Float64}, orient="row"
    )
    reference = (
        float(frame["t_req"].to_numpy().mean()) if arrival_reference == "t_req" else float(np.mean(packed_times))
    )
    gaps = rng.exponential(arrival_scale * reference, n_jobs)
    gaps[0] = 0.0
    if kind == "random1":
        gaps[: 2 * n_jobs // 3] /= 3.0
    return frame.with_columns(pl.Series("submit_time", np.cumsum(gaps))).select(
        "job_id", "submit_time", "app", "n_req", "t_req"
    )
