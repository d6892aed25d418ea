"""Paper 002's workloads (docs/eamc.md, Workloads): a Lublin–Feitelson job stream calibrated to the paper's
5,000 jobs with a mean of 18.29 nodes and 3.65 h at the highest frequency, each job running one of the eight
applications of the EAR data in a mix: W13 (uniform over the eight, STREAM 12.5%), W33 (33% STREAM, the rest
uniform) or W50 (50% STREAM).

Calibration, all seeded: the Lublin model (on a 512-node partition) gives arrival order, sizes, runtimes and
Tsafrir walltimes; sizes are scaled to the target mean (rounded, at least 1, at most a partition), runtimes and
walltimes by one factor, found by bisection, so that the runtimes capped at ``max_runtime_h`` (48 h) have the
target mean; runtimes (with their walltimes) are paired with sizes by a seeded shuffle, since the paper's
totals imply no size-runtime correlation; and the submit times are stretched so that the offered
load on the whole machine is ``load`` (default 1.0: with 2 × 512 nodes the makespan lands in the paper's
10–15 days). Runtimes are the jobs' durations on the primary partition at its highest frequency.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from wattsched.workload.generate.lublin import generate_lublin

#: App mixes: the probability of STREAM (app 8); the other seven share the rest evenly.
MIXES = {"W13": 1 / 8, "W33": 0.33, "W50": 0.50}
STREAM_APP = 8
N_APPS = 8


def generate_eamc_workload(
    mix: str,
    n_jobs: int = 5000,
    *,
    seed: int = 0,
    mean_nodes: float = 18.29,
    mean_runtime_h: float = 3.65,
    partition_nodes: int = 512,
    total_nodes: int = 1024,
    load: float = 1.0,
    max_runtime_h: float = 48.0,
) -> pl.DataFrame:
    """``job_id, submit_time, nodes, runtime, walltime, app_id, user_id``; see the module docstring."""
    if mix not in MIXES:
        raise ValueError(f"unknown mix {mix!r}; choose from {', '.join(MIXES)}")
    if not load > 0:
        raise ValueError(f"load must be positive, got {load}")
    base = generate_lublin(n_jobs, partition_nodes, seed=seed).jobs
    size = base["size"].to_numpy().astype(np.float64)
    nodes = np.clip(np.rint(size * mean_nodes / size.mean()), 1, partition_nodes).astype(np.int64)
    # sizes and runtimes paired independently: the paper's figures (5,000 × 18.29 nodes × 3.65 h on 1,024
    # nodes, a 10–15 day makespan) imply no size-runtime correlation, while Lublin's doubles the work
    pairing = np.random.default_rng([seed, 1]).permutation(n_jobs)
    raw = base["runtime"].to_numpy().astype(np.float64)[pairing]
    scale = _runtime_scale(raw, mean_runtime_h * 3600.0, max_runtime_h * 3600.0)
    runtime = np.clip(raw * scale, 1.0, max_runtime_h * 3600.0)
    walltime = np.clip(base["walltime"].to_numpy()[pairing] * scale, runtime, max_runtime_h * 3600.0)
    submit = base["submit_time"].to_numpy().astype(np.float64)
    submit = submit - submit.min()
    span = float((nodes * runtime).sum()) / (load * total_nodes)
    if submit.max() > 0:
        submit = submit * span / submit.max()
    rng = np.random.default_rng([seed, 2])
    p_stream = MIXES[mix]
    others = rng.integers(1, N_APPS, n_jobs)  # 1..7
    app = np.where(rng.random(n_jobs) < p_stream, STREAM_APP, others)
    return pl.DataFrame(
        {
            "job_id": base["job_id"],
            "submit_time": submit,
            "nodes": nodes,
            "runtime": runtime,
            "walltime": walltime,
            "app_id": app.astype(np.int64),
            "user_id": base["user_id"],
        }
    )


def _runtime_scale(raw: np.ndarray, target: float, cap: float) -> float:
    """The factor s with mean(min(raw · s, cap)) = target (the capped mean grows with s)."""
    if target >= cap:
        raise ValueError(f"the mean runtime ({target / 3600:g} h) must be below the cap ({cap / 3600:g} h)")
    lo, hi = 0.0, cap / max(raw.min(), 1e-9)
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.minimum(raw * mid, cap).mean() < target:
            lo = mid
        else:
            hi = mid
    return hi


#: The columns an EAMC workload table holds (runtime and walltime on the primary partition at its highest
#: frequency, s); ``user_id`` is optional.
WORKLOAD_COLUMNS = ("job_id", "submit_time", "nodes", "runtime", "walltime", "app_id")


def read_eamc_workload(path: str | Path) -> pl.DataFrame:
    """An EAMC workload table (``.parquet`` or ``.csv``, the columns of :data:`WORKLOAD_COLUMNS`), checked: a
    one-line ValueError naming the file, and the row and column of the first bad value, for a table that cannot be
    read, lacks a column, or holds a missing, non-numeric or out-of-range value (``nodes`` and ``app_id`` ≥ 1,
    times ≥ 0, walltime ≥ runtime is not required: a job may be killed)."""
    path = Path(path)
    suffix = path.name.lower()
    if not suffix.endswith((".parquet", ".csv")):
        raise ValueError(f"{path}: an EAMC workload is a .parquet or .csv table, got {path.name!r}")
    try:
        table = pl.read_parquet(path) if suffix.endswith(".parquet") else pl.read_csv(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise ValueError(f"{path}: cannot be read as a table ({type(exc).__name__}: {exc})") from None
    missing = [c for c in WORKLOAD_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: an EAMC workload needs column(s) {', '.join(missing)}")
    lows = {"job_id": None, "submit_time": 0.0, "nodes": 1.0, "runtime": 0.0, "walltime": 0.0, "app_id": 1.0}
    for column, low in lows.items():
        values = table[column]
        if not values.dtype.is_numeric():
            raise ValueError(f"{path}: column {column!r} must hold numbers, got {values.dtype}")
        numbers = values.cast(pl.Float64).to_numpy()
        bad = ~np.isfinite(numbers) if low is None else ~(np.isfinite(numbers) & (numbers >= low))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            rule = "a number" if low is None else f"a number ≥ {low:g}"
            raise ValueError(
                f"{path}: row {row + 1} (job {table['job_id'][row]}), column {column!r}: {values[row]!r} is not {rule}"
            )
    return table
