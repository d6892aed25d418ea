"""Synthetic node telemetry for tests and benchmarks of the PM100 method: jobs placed on a machine's nodes (a
chosen share of them overlapping another job on one node), and per-PSU node power every θ seconds with idle
periods, per-sample noise and missing samples — written in the M100 ExaData layout if asked.

Seeded and vectorised: the node power is a (nodes × instants) matrix, each job adding its per-node level (with
noise) on its nodes over its grid instants; PSU 0 carries ``psu_split`` of a node's power, PSU 1 the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl


@dataclass(frozen=True)
class SyntheticTelemetry:
    """The job table (``job_id, start_time, end_time, nodes, tres_alloc_str``) and the telemetry
    (``node, timestamp, ps0, ps1``; missing samples are absent rows)."""

    jobs: pl.DataFrame
    telemetry: pl.DataFrame


def generate_telemetry(
    n_jobs: int,
    *,
    n_nodes: int = 980,
    hours: float = 24.0,
    period: float = 20.0,
    t0: float = 1_590_969_600.0,  # 2020-06-01 00:00 UTC, inside the M100 period
    shared_share: float = 0.05,
    missing_share: float = 0.0005,
    idle_watts: float = 240.0,
    psu_split: float = 0.5,
    seed: int = 0,
) -> SyntheticTelemetry:
    """``n_jobs`` jobs over ``hours`` on ``n_nodes`` nodes; see the module docstring."""
    rng = np.random.default_rng(seed)
    k_max = int(hours * 3600 // period) + 1
    names = np.array([f"r{n // 20:03d}n{n % 20 + 1:02d}" for n in range(n_nodes)])
    power = np.full((n_nodes, k_max), idle_watts, dtype=np.float64)
    power += rng.normal(0.0, 5.0, size=power.shape)
    free_at = np.zeros(n_nodes)
    submit = np.sort(rng.uniform(0.0, hours * 3600 * 0.9, n_jobs))
    sizes = np.where(rng.random(n_jobs) < 0.72, 1, rng.choice([2, 4, 8, 16], n_jobs, p=[0.5, 0.3, 0.15, 0.05]))
    durations = np.minimum(rng.lognormal(np.log(1800.0), 1.2, n_jobs), hours * 3600.0)
    rows = []
    for j in range(n_jobs):
        q = int(min(sizes[j], n_nodes))
        nodes = np.argpartition(free_at, q - 1)[:q] if q < n_nodes else np.arange(n_nodes)
        start = max(submit[j], float(free_at[nodes].max())) + float(rng.uniform(0, 60))
        end = min(start + durations[j], hours * 3600.0)
        if end <= start:
            continue
        free_at[nodes] = end
        node_list = list(nodes)
        if rng.random() < shared_share:  # also runs on a node some other job holds now: not exclusive
            busy = np.flatnonzero(free_at > start)
            busy = busy[~np.isin(busy, nodes)]
            if busy.size:
                node_list.append(int(rng.choice(busy)))
        k0 = int(np.ceil(start / period))
        k1 = min(int(np.floor(end / period)), k_max - 1)
        if k1 >= k0:
            level = rng.uniform(250.0, 1500.0)
            power[node_list, k0 : k1 + 1] += level * (1.0 + rng.normal(0.0, 0.05, (len(node_list), k1 - k0 + 1)))
        gpus = 4 * len(node_list)
        rows.append((j + 1, t0 + start, t0 + end, [str(names[n]) for n in node_list],
                     f"cpu={128 * len(node_list)},mem={256 * len(node_list)}G,node={len(node_list)},gres/gpu={gpus}"))
    jobs = pl.DataFrame(rows, schema={"job_id": pl.Int64, "start_time": pl.Float64, "end_time": pl.Float64,
                                      "nodes": pl.List(pl.Utf8), "tres_alloc_str": pl.Utf8}, orient="row")
    keep = rng.random(power.shape) >= missing_share
    n_idx, k_idx = np.nonzero(keep)
    watts = power[n_idx, k_idx]
    telemetry = pl.DataFrame({
        "node": names[n_idx],
        "timestamp": t0 + k_idx * period,
        "ps0": (watts * psu_split).astype(np.float32),
        "ps1": (watts * (1.0 - psu_split)).astype(np.float32),
    })
    return SyntheticTelemetry(jobs, telemetry)


def write_exadata(telemetry: pl.DataFrame, directory: str | Path, *, rows_per_file: int = 5_000_000) -> Path:
    """Write ``node, timestamp, ps0, ps1`` as the M100 ExaData layout: ``ps0_input_power/`` and
    ``ps1_input_power/``, each with Parquet parts of ``timestamp`` (UTC datetime), ``value``, ``node``."""
    directory = Path(directory)
    stamp = pl.from_epoch(pl.col("timestamp").cast(pl.Float64).mul(1000).cast(pl.Int64), time_unit="ms")
    for metric, col in (("ps0_input_power", "ps0"), ("ps1_input_power", "ps1")):
        out = directory / metric
        out.mkdir(parents=True, exist_ok=True)
        frame = telemetry.select(stamp.dt.replace_time_zone("UTC").alias("timestamp"), pl.col(col).alias("value"),
                                 "node")
        for part, start in enumerate(range(0, frame.height, rows_per_file)):
            frame.slice(start, rows_per_file).write_parquet(out / f"part-{part:05d}.parquet")
    return directory
