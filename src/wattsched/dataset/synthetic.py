"""Synthetic node telemetry for tests and benchmarks of the PM100 method: jobs placed on a machine's nodes (a
chosen share of them overlapping another job on one node), and per-PSU node power every θ seconds with idle
periods, per-sample noise, missing samples and node outages — in memory, or streamed to disk in the M100 ExaData
layout chunk by chunk, so a month of a 980-node machine (262 M samples) is written in bounded memory.

Seeded and vectorised: the node power of one chunk of instants is a (nodes × instants) matrix, each job adding
its per-node level (with noise) on its nodes over its instants; PSU 0 carries ``psu_split`` of a node's power,
PSU 1 the rest. Each chunk draws from its own generator (seed, chunk number), so the in-memory and on-disk forms
hold the same samples.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from wattsched.core.bounds import check_fits

#: Instants per generated chunk (one day at θ = 20 s).
CHUNK_INSTANTS = 4320


@dataclass(frozen=True)
class SyntheticTelemetry:
    """The job table (``job_id, start_time, end_time, nodes, tres_alloc_str``) and the telemetry
    (``node, timestamp, ps0, ps1``; missing samples are absent rows)."""

    jobs: pl.DataFrame
    telemetry: pl.DataFrame


@dataclass(frozen=True)
class Machine:
    """A generated machine: node names, the jobs and their placement (CSR node numbers, grid instants, level),
    node outages, and the power model."""

    names: np.ndarray
    jobs: pl.DataFrame
    ptr: np.ndarray
    nodes: np.ndarray
    first: np.ndarray
    last: np.ndarray
    level: np.ndarray
    outages: np.ndarray  # rows (node, first instant, last instant)
    instants: int
    t0: float
    period: float
    idle_watts: float
    psu_split: float
    missing_share: float
    seed: int


#: Peak memory per placed job (bytes) of :func:`place_jobs`, for the size bound of ``generate telemetry``: measured
#: as the growth of the peak RSS from 20,000 to 200,000 jobs (25.7 → 184.7 MiB, 926 B a job), rounded up.
BYTES_PER_JOB = 1_000
#: Disk per PSU sample written by :func:`write_synthetic_exadata` (bytes): 42.5 MB for the 8.46 million samples of
#: one day of 980 nodes at 20 s (5.0 B a sample), rounded up; for the disk bound of ``generate telemetry``.
DISK_BYTES_PER_SAMPLE = 5.5


def place_jobs(
    n_jobs: int,
    *,
    n_nodes: int = 980,
    hours: float = 24.0,
    period: float = 20.0,
    t0: float = 1_590_969_600.0,  # 2020-06-01 00:00 UTC, inside the M100 period
    shared_share: float = 0.05,
    missing_share: float = 0.0005,
    outages: int = 0,
    median_seconds: float = 1800.0,
    idle_watts: float = 240.0,
    psu_split: float = 0.5,
    seed: int = 0,
) -> Machine:
    """Place ``n_jobs`` jobs (72% single-node, lognormal durations around ``median_seconds``) on the
    least-recently-freed nodes; ``shared_share`` of them also take a node another job holds; ``outages`` node
    outages of 1–6 h with no telemetry at all."""
    if t0 % period:
        raise ValueError(f"t0 must be on the {period:g}-s grid, got {t0}")
    check_fits("n_jobs", n_jobs, BYTES_PER_JOB, "job placement")
    rng = np.random.default_rng(seed)
    horizon = hours * 3600.0
    instants = int(horizon // period) + 1
    names = np.array([f"r{n // 20:03d}n{n % 20 + 1:02d}" for n in range(n_nodes)])
    free_at = np.zeros(n_nodes)
    submit = np.sort(rng.uniform(0.0, horizon * 0.9, n_jobs))
    sizes = np.where(rng.random(n_jobs) < 0.72, 1, rng.choice([2, 4, 8, 16], n_jobs, p=[0.5, 0.3, 0.15, 0.05]))
    durations = np.minimum(rng.lognormal(np.log(median_seconds), 1.2, n_jobs), horizon)
    rows: list[tuple[int, float, float, list[str], str]] = []
    ptr, flat, first, last, level = [0], [], [], [], []
    for j in range(n_jobs):
        q = int(min(sizes[j], n_nodes))
        nodes = np.argpartition(free_at, q - 1)[:q] if q < n_nodes else np.arange(n_nodes)
        start = max(submit[j], float(free_at[nodes].max())) + float(rng.uniform(0, 60))
        end = min(start + durations[j], horizon)
        if end <= start:
            continue
        free_at[nodes] = end
        node_list = [int(n) for n in nodes]
        if rng.random() < shared_share:  # also runs on a node some other job holds now: not exclusive
            busy = np.flatnonzero(free_at > start)
            busy = busy[~np.isin(busy, nodes)]
            if busy.size:
                node_list.append(int(rng.choice(busy)))
        flat.extend(node_list)
        ptr.append(len(flat))
        first.append(int(np.ceil(start / period)))
        last.append(min(int(np.floor(end / period)), instants - 1))
        level.append(rng.uniform(250.0, 1500.0))
        n = len(node_list)
        rows.append(
            (
                len(rows) + 1,
                t0 + start,
                t0 + end,
                [str(names[i]) for i in node_list],
                f"cpu={128 * n},mem={256 * n}G,node={n},gres/gpu={4 * n}",
            )
        )
    jobs = pl.DataFrame(
        rows,
        schema={
            "job_id": pl.Int64,
            "start_time": pl.Float64,
            "end_time": pl.Float64,
            "nodes": pl.List(pl.Utf8),
            "tres_alloc_str": pl.Utf8,
        },
        orient="row",
    )
    out_first = rng.integers(0, instants, outages)
    out = (
        np.column_stack([rng.integers(0, n_nodes, outages), out_first, out_first + rng.integers(180, 1080, outages)])
        if outages
        else np.zeros((0, 3), np.int64)
    )
    return Machine(
        names,
        jobs,
        np.array(ptr),
        np.array(flat, np.int64),
        np.array(first, np.int64),
        np.array(last, np.int64),
        np.array(level),
        out,
        instants,
        t0,
        period,
        idle_watts,
        psu_split,
        missing_share,
        seed,
    )


def power_chunks(machine: Machine, chunk: int = CHUNK_INSTANTS) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(first instant, node power matrix (nodes × instants), present mask)`` chunk by chunk."""
    m = machine
    for number, ka in enumerate(range(0, m.instants, chunk)):
        kb = min(ka + chunk, m.instants)
        rng = np.random.default_rng([m.seed, number])
        power = m.idle_watts + rng.normal(0.0, 5.0, size=(m.names.size, kb - ka))
        for j in np.flatnonzero((m.first < kb) & (m.last >= ka) & (m.first <= m.last)):
            a, b = max(m.first[j], ka), min(m.last[j], kb - 1)
            nodes = m.nodes[m.ptr[j] : m.ptr[j + 1]]
            power[nodes, a - ka : b - ka + 1] += m.level[j] * (1.0 + rng.normal(0.0, 0.05, (nodes.size, b - a + 1)))
        present = rng.random(power.shape) >= m.missing_share
        for node, a, b in m.outages:
            if a < kb and b >= ka:
                present[node, max(a, ka) - ka : min(b, kb - 1) - ka + 1] = False
        yield ka, power, present


def _chunk_arrays(machine: Machine, ka: int, power: np.ndarray, present: np.ndarray):
    """Time-major rows of a chunk: node numbers, timestamps (ms) and the two PSU values (float32)."""
    k_idx, n_idx = np.nonzero(present.T)
    watts = power[n_idx, k_idx]
    stamp_ms = np.rint((machine.t0 + (ka + k_idx) * machine.period) * 1000).astype(np.int64)
    ps0 = (watts * machine.psu_split).astype(np.float32)
    return n_idx.astype(np.int32), stamp_ms, ps0, (watts - ps0).astype(np.float32)


def generate_telemetry(n_jobs: int, **options) -> SyntheticTelemetry:
    """``n_jobs`` jobs and their telemetry in memory (for tests); ``options`` are those of :func:`place_jobs`."""
    machine = place_jobs(n_jobs, **options)
    parts = []
    for ka, power, present in power_chunks(machine):
        n_idx, stamp_ms, ps0, ps1 = _chunk_arrays(machine, ka, power, present)
        parts.append(
            pl.DataFrame({"node": machine.names[n_idx], "timestamp": stamp_ms / 1000.0, "ps0": ps0, "ps1": ps1})
        )
    return SyntheticTelemetry(machine.jobs, pl.concat(parts))


def write_synthetic_exadata(machine: Machine, directory: str | Path) -> int:
    """Stream ``machine``'s telemetry to ``directory`` in the ExaData layout, one Parquet file per chunk and PSU
    (``ps{0,1}_input_power/part-NNNNN.parquet`` with ``timestamp`` (UTC, ms), ``value`` (float32), ``node``
    (dictionary-encoded)); returns the number of rows per PSU."""
    directory = Path(directory)
    names = pa.array(machine.names.tolist(), type=pa.string())
    rows = 0
    for number, (ka, power, present) in enumerate(power_chunks(machine)):
        n_idx, stamp_ms, ps0, ps1 = _chunk_arrays(machine, ka, power, present)
        stamp = pa.array(stamp_ms, type=pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
        node = pa.DictionaryArray.from_arrays(pa.array(n_idx), names)
        for metric, values in (("ps0_input_power", ps0), ("ps1_input_power", ps1)):
            out = directory / metric
            out.mkdir(parents=True, exist_ok=True)
            table = pa.table({"timestamp": stamp, "value": pa.array(values), "node": node})
            pq.write_table(table, out / f"part-{number:05d}.parquet", row_group_size=1 << 20)
        rows += n_idx.size
    return rows


def write_exadata(telemetry: pl.DataFrame, directory: str | Path, *, rows_per_file: int = 5_000_000) -> Path:
    """Write an in-memory ``node, timestamp, ps0, ps1`` table as the M100 ExaData layout: ``ps0_input_power/``
    and ``ps1_input_power/``, each with Parquet parts of ``timestamp`` (UTC datetime), ``value``, ``node``."""
    directory = Path(directory)
    stamp = pl.from_epoch(pl.col("timestamp").cast(pl.Float64).mul(1000).round().cast(pl.Int64), time_unit="ms")
    for metric, col in (("ps0_input_power", "ps0"), ("ps1_input_power", "ps1")):
        out = directory / metric
        out.mkdir(parents=True, exist_ok=True)
        frame = telemetry.select(
            stamp.dt.replace_time_zone("UTC").alias("timestamp"), pl.col(col).alias("value"), "node"
        )
        for part, start in enumerate(range(0, frame.height, rows_per_file)):
            frame.slice(start, rows_per_file).write_parquet(out / f"part-{part:05d}.parquet")
    return directory
