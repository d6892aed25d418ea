"""Per-job power series from node telemetry (the PM100 method, paper 003 §3, [AMBIG-3.2]; docs/dataset.md).

For an exclusive job with grid instants ``t = start', start' + θ, …, end'`` the series is
``p(t) = Σ_{n ∈ nodes} (ps0_{n,t} + ps1_{n,t})``. The two PSU series are aligned on the timestamp (a node's
sample at t needs both PSUs), and a job's sample at t needs every one of its nodes: otherwise the sample is
missing. A job whose share of missing samples exceeds ``max_missing`` (default 0: strict) is rejected with the
reason; with a tolerance, missing samples are left out of the series and of the statistics, and counted.
Duplicate telemetry rows for one (node, PSU, instant) are averaged, so they never double-count.

Per job: the series (watts summed over nodes, one value per instant), the per-node mean, max and std (ddof 0)
over all (node, instant) values, and the energy Σ p(t)·θ (sample-and-hold over the instants).

**Out of core.** The jobs' time span is cut into windows of instants small enough that a dense
(node × instant) matrix per PSU fits ``memory_gb``. Each window is one task: scan the telemetry of that time
range batch by batch (files and row groups outside it are skipped by their statistics), scatter it into the
matrices, then a compiled kernel reads every job's cells in the window. A task returns only the jobs' series
segments, with each instant's spread of the node values (Σ (w − p/n)², two-pass over its n nodes) and per-job
maxima; tasks can run one after another, on a process pool or on a Dask cluster with the same result. Peak memory
is the window matrices (per worker) plus the output itself.

**The same bits for any window length.** The per-node mean and variance are folded in this process, instant by
instant in time order (Chan's pairwise update of (count, mean, M2) with each instant's n values), as the windows
arrive in order. Every instant lies in one window and its values do not depend on the window, so the sequence of
floating-point operations, hence every bit of ``power_mean`` and ``power_std``, is the same whatever the window
length (``memory_gb``) or the number of workers. Before, each window folded its own instants and the windows'
partial statistics were merged: the rounding depended on where windows began, and two memory settings differed in
the last bits (1 against 139 windows of a 200-job synthetic machine: ``power_std`` on 101 jobs, by up to 3.4e-15
relative).

Timestamps must be on the grid (multiples of θ since the epoch) to within ``snap`` seconds (default: 1 ms, i.e.
exact, as the reference aligns on the timestamp index); rows off the grid are counted and reported, not used.
Physically impossible readings (negative, infinite, or above :data:`MAX_READING_WATTS`) are counted and reported,
not used: their (node, instant) is missing, so a job relying on them is rejected with the missing-sample reason
(or keeps the gap under ``max_missing``). NaN and null readings are missing as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numba as nb
import numpy as np
import polars as pl
import pyarrow as pa

from wattsched.core.executors import check_executor, map_tasks
from wattsched.dataset.telemetry import TelemetrySource, open_telemetry

#: Default tolerance (s) of "on the grid" when no ``snap`` is given.
EXACT_TOLERANCE = 1e-3

#: Largest plausible telemetry reading (W, one PSU or one node total): no HPC node draws 100 kW; 1e30 W and
#: sign errors are data faults, not power.
MAX_READING_WATTS = 100_000.0

#: Bytes per (node, instant) cell and PSU slot: a float64 sum and a uint16 count.
_CELL_BYTES = 10


@dataclass
class ExtractionStats:
    """What the telemetry scan saw, for the build report."""

    windows: int = 0
    telemetry_rows: int = 0
    off_grid_rows: int = 0
    implausible_values: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WindowTask:
    """One window of instants ``[k0, k0 + width)`` (instant k is time k·θ) and the jobs that overlap it, with
    their nodes in CSR form (numbers into ``node_names``). Picklable, so it can run in another process."""

    source: TelemetrySource
    node_names: list[str]
    period: float
    tolerance: float
    k0: int
    width: int
    jobs: np.ndarray
    first: np.ndarray
    last: np.ndarray
    ptr: np.ndarray
    nodes: np.ndarray


@dataclass(frozen=True)
class WindowResult:
    """The window's series segments (instants ``max(first, k0) … min(last, k0 + width − 1)`` per job, back to
    back), which of them had every node reporting, each such instant's spread of the node values (sum of squared
    deviations from their mean), and per job the largest node value and the fewest nodes reporting."""

    k0: int
    jobs: np.ndarray
    seg_ptr: np.ndarray
    values: np.ndarray
    complete: np.ndarray
    spread: np.ndarray
    vmax: np.ndarray
    least: np.ndarray
    rows: int
    off_grid: int
    implausible: int = 0


@nb.njit(cache=True, nogil=True)
def _scatter(node, seconds, values, period, tolerance, k0, width, sums, counts, top):  # pragma: no cover
    off = 0
    bad = 0
    for i in range(node.size):
        n = node[i]
        v = values[i]
        if n < 0 or np.isnan(v):
            continue
        k = np.floor(seconds[i] / period + 0.5)
        c = int(k) - k0
        if c < 0 or c >= width:
            continue
        if abs(seconds[i] - k * period) > tolerance:
            off += 1
            continue
        if not (0.0 <= v <= top):  # negative, infinite or beyond any node: a fault, not power
            bad += 1
            continue
        if counts[n, c] < 65535:
            sums[n, c] += v
            counts[n, c] += 1
    return off, bad


@nb.njit(cache=True, nogil=True)
def _extract(
    first, last, ptr, nodes, k0, width, s0, c0, s1, c1, two, seg_ptr, values, complete, spread, vmax, least
):  # pragma: no cover - compiled
    for j in range(first.size):
        a = max(first[j], k0)
        b = min(last[j], k0 + width - 1)
        nn = ptr[j + 1] - ptr[j]
        top = -np.inf
        low = nn
        for k in range(a, b + 1):
            c = k - k0
            present = 0
            for q in range(ptr[j], ptr[j + 1]):
                n = nodes[q]
                if c0[n, c] > 0 and (not two or c1[n, c] > 0):
                    present += 1
            pos = seg_ptr[j] + k - a
            if present < nn:
                values[pos] = np.nan
                complete[pos] = False
                low = min(low, present)
                continue
            p = 0.0
            for q in range(ptr[j], ptr[j + 1]):
                n = nodes[q]
                w = s0[n, c] / c0[n, c]
                if two:
                    w += s1[n, c] / c1[n, c]
                p += w
                top = max(top, w)
            values[pos] = p
            complete[pos] = True
            mu = p / nn
            sq = 0.0
            for q in range(ptr[j], ptr[j + 1]):  # second pass: the spread around the instant's exact-order mean
                n = nodes[q]
                w = s0[n, c] / c0[n, c]
                if two:
                    w += s1[n, c] / c1[n, c]
                sq += (w - mu) * (w - mu)
            spread[pos] = sq
        vmax[j] = top
        least[j] = low


@nb.njit(cache=True, nogil=True)
def _fold(jobs, seg_ptr, values, complete, spread, n_nodes, count, mean, m2):  # pragma: no cover - compiled
    """Fold a window's complete instants into each job's (count, mean, M2), instant by instant in time order:
    Chan's update with the instant's ``n`` node values (mean ``p / n``, M2 its spread)."""
    for i in range(jobs.size):
        j = jobs[i]
        nb_ = float(n_nodes[j])
        na = count[j]
        mu = mean[j]
        sq = m2[j]
        for pos in range(seg_ptr[i], seg_ptr[i + 1]):
            if not complete[pos]:
                continue
            n = na + nb_
            d = values[pos] / nb_ - mu
            mu += d * (nb_ / n)
            sq += spread[pos] + d * d * (na * nb_ / n)
            na = n
        count[j] = na
        mean[j] = mu
        m2[j] = sq


def run_window(task: WindowTask) -> WindowResult:
    """Scan the window's telemetry into dense matrices and read every job's cells (one task of the build)."""
    n_nodes = len(task.node_names)
    two = task.source.two_psu
    shape = (n_nodes, task.width) if n_nodes else (1, 1)
    sums = [np.zeros(shape), np.zeros(shape) if two else np.zeros((1, 1))]
    counts = [np.zeros(shape, np.uint16), np.zeros(shape, np.uint16) if two else np.zeros((1, 1), np.uint16)]
    # every row whose nearest instant is in the window (so off-grid rows are seen, and counted once)
    lo = (task.k0 - 0.5) * task.period
    hi = (task.k0 + task.width - 0.5) * task.period
    rows = off = bad = 0
    for batch in task.source.batches(task.node_names, lo, hi):
        rows += batch.node.size
        for i, (slot, vals) in enumerate(batch.slots):
            o, b = _scatter(
                batch.node,
                batch.seconds,
                vals,
                task.period,
                task.tolerance,
                task.k0,
                task.width,
                sums[slot],
                counts[slot],
                MAX_READING_WATTS,
            )
            off += o if i == 0 else 0  # count rows, not PSU values
            bad += b
    a = np.maximum(task.first, task.k0)
    b = np.minimum(task.last, task.k0 + task.width - 1)
    seg_ptr = np.zeros(task.jobs.size + 1, np.int64)
    np.cumsum(b - a + 1, out=seg_ptr[1:])
    m = task.jobs.size
    values = np.empty(seg_ptr[-1])
    complete = np.empty(seg_ptr[-1], np.bool_)
    spread = np.zeros(seg_ptr[-1])
    vmax = np.empty(m)
    least = np.empty(m, np.int64)
    _extract(
        task.first,
        task.last,
        task.ptr,
        task.nodes,
        task.k0,
        task.width,
        sums[0],
        counts[0],
        sums[1],
        counts[1],
        two,
        seg_ptr,
        values,
        complete,
        spread,
        vmax,
        least,
    )
    return WindowResult(task.k0, task.jobs, seg_ptr, values, complete, spread, vmax, least, rows, off, bad)


class _Accumulator:
    """The whole output: series of every job back to back, and running statistics folded instant by instant as
    the windows arrive (in time order: the builder's fan-out is ordered)."""

    def __init__(self, first: np.ndarray, last: np.ndarray, n_nodes: np.ndarray) -> None:
        self.first = first
        self.samples = last - first + 1
        self.offsets = np.zeros(first.size + 1, np.int64)
        np.cumsum(self.samples, out=self.offsets[1:])
        self.values = np.full(self.offsets[-1], np.nan)
        self.complete = np.zeros(self.offsets[-1], np.bool_)
        self.count = np.zeros(first.size)
        self.mean = np.zeros(first.size)
        self.m2 = np.zeros(first.size)
        self.vmax = np.full(first.size, -np.inf)
        self.n_nodes = n_nodes.astype(np.int64)
        self.least = self.n_nodes.copy()

    def merge(self, r: WindowResult) -> None:
        g = r.jobs
        lens = np.diff(r.seg_ptr)
        start = self.offsets[g] + np.maximum(self.first[g], r.k0) - self.first[g]
        dst = np.repeat(start - r.seg_ptr[:-1], lens) + np.arange(r.seg_ptr[-1])
        self.values[dst] = r.values
        self.complete[dst] = r.complete
        _fold(g, r.seg_ptr, r.values, r.complete, r.spread, self.n_nodes, self.count, self.mean, self.m2)
        self.vmax[g] = np.maximum(self.vmax[g], r.vmax)
        self.least[g] = np.minimum(self.least[g], r.least)


def _window_width(n_nodes: int, two_psu: bool, memory_gb: float, span: int) -> int:
    per_instant = max(n_nodes, 1) * _CELL_BYTES * (2 if two_psu else 1)
    return int(max(1, min(span, memory_gb * 2**30 // per_instant)))


def _tasks(
    source: TelemetrySource,
    names: list[str],
    period: float,
    tolerance: float,
    first: np.ndarray,
    last: np.ndarray,
    ptr: np.ndarray,
    nodes: np.ndarray,
    width: int,
) -> Iterator[WindowTask]:
    if first.size == 0:
        return
    lo, hi = int(first.min()), int(last.max())
    order = np.argsort(first, kind="stable")
    k0 = lo
    while k0 <= hi:
        k1 = k0 + width - 1
        sel = np.flatnonzero((first <= k1) & (last >= k0))
        if sel.size:
            lens = ptr[sel + 1] - ptr[sel]
            sub_ptr = np.zeros(sel.size + 1, np.int64)
            np.cumsum(lens, out=sub_ptr[1:])
            pos = np.repeat(ptr[sel] - sub_ptr[:-1], lens) + np.arange(sub_ptr[-1])
            yield WindowTask(
                source, names, period, tolerance, k0, width, sel, first[sel], last[sel], sub_ptr, nodes[pos]
            )
            k0 += width
        else:  # a gap with no job: jump to the next job's first instant
            later = first[order][first[order] > k1]
            k0 = int(later[0]) if later.size else hi + 1


def extract_series(
    jobs: pl.DataFrame,
    telemetry: pl.DataFrame | pl.LazyFrame | TelemetrySource | str | Path,
    *,
    period: float = 20.0,
    max_missing: float = 0.0,
    nodes_column: str = "nodes",
    snap: float = 0.0,
    memory_gb: float = 1.0,
    executor: str = "local",
    workers: int = 1,
    address: str | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    stats: ExtractionStats | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(series, rejects)`` for ``jobs`` (``job_id, grid_start, grid_end`` and the node list; typically the
    exclusive rows of :func:`~wattsched.dataset.exclusive.classify_exclusive` joined with the node lists).

    ``series``: ``job_id, power_consumption`` (list of W), ``samples``, ``missing_samples``, ``power_mean``,
    ``power_max``, ``power_std`` (per node, W) and ``energy`` (J). ``rejects``: ``job_id, reason``.
    ``memory_gb`` bounds the window matrices of each worker; ``executor`` (``local`` or ``dask``) and ``workers``
    fan the windows out; ``progress(windows_done, windows, telemetry_rows)`` is called after each window.
    """
    if not 0.0 <= max_missing <= 1.0:
        raise ValueError(f"max_missing is a share of samples in [0, 1], got {max_missing}")
    if not period > 0:
        raise ValueError(f"the sample period must be positive, got {period}")
    if not 0.0 <= snap < period / 2:
        raise ValueError(f"snap must be in [0, θ/2) = [0, {period / 2:g}) s, got {snap}")
    if not memory_gb > 0:
        raise ValueError(f"memory_gb must be positive, got {memory_gb}")
    needed = [c for c in ("job_id", "grid_start", "grid_end", nodes_column) if c not in jobs.columns]
    if needed:
        raise ValueError(f"extraction needs job column(s) {needed}")
    check_executor(executor)
    source = open_telemetry(telemetry)
    stats = stats if stats is not None else ExtractionStats()
    jobs = jobs.select(
        "job_id",
        "grid_start",
        "grid_end",
        pl.col(nodes_column).list.drop_nulls().list.unique(maintain_order=True).alias("__nodes"),
    )
    pairs = jobs.select(pl.col("__nodes").explode().drop_nulls())["__nodes"]
    names = sorted(pairs.unique().to_list())
    ptr = np.zeros(jobs.height + 1, np.int64)
    np.cumsum(jobs["__nodes"].list.len().fill_null(0).to_numpy(), out=ptr[1:])
    nodes = pairs.replace_strict(names, list(range(len(names))), return_dtype=pl.Int64).to_numpy()
    first = np.rint(jobs["grid_start"].to_numpy() / period).astype(np.int64)
    last = np.rint(jobs["grid_end"].to_numpy() / period).astype(np.int64)
    if (last < first).any() or (ptr[1:] == ptr[:-1]).any():
        raise ValueError("extraction needs jobs with at least one grid instant and one node (classify them first)")
    span = int(last.max() - first.min() + 1) if jobs.height else 1
    width = _window_width(len(names), source.two_psu, memory_gb / max(workers, 1), span)
    tolerance = snap if snap > 0 else EXACT_TOLERANCE
    tasks = list(_tasks(source, names, period, tolerance, first, last, ptr, nodes, width))
    acc = _Accumulator(first, last, np.diff(ptr))
    stats.windows = len(tasks)
    results = map_tasks(
        run_window,
        tasks,
        executor=executor,
        workers=workers,
        address=address,
        ordered=True,
        keys=[f"window-{t.k0}" for t in tasks],
    )
    for i, result in enumerate(results):
        acc.merge(result)
        stats.telemetry_rows += result.rows
        stats.off_grid_rows += result.off_grid
        stats.implausible_values += result.implausible
        if progress is not None:
            progress(i + 1, len(tasks), stats.telemetry_rows)
    if stats.off_grid_rows:
        stats.notes.append(
            f"{stats.off_grid_rows:,} telemetry rows in the jobs' span are off the {period:g}-s grid "
            f"by more than {tolerance:g} s and were not used (see the snap option)"
        )
    if stats.implausible_values:
        stats.notes.append(
            f"{stats.implausible_values:,} telemetry readings in the jobs' span are negative, infinite or above "
            f"{MAX_READING_WATTS:,.0f} W and were not used (their samples count as missing)"
        )
    return _assemble(jobs["job_id"], acc, period, max_missing)


def _assemble(
    job_id: pl.Series, acc: _Accumulator, period: float, max_missing: float
) -> tuple[pl.DataFrame, pl.DataFrame]:
    jobs_of_sample = np.repeat(np.arange(job_id.len()), acc.samples)
    present = np.bincount(jobs_of_sample, weights=acc.complete, minlength=job_id.len()).astype(np.int64)
    missing = acc.samples - present
    bad = (missing > max_missing * acc.samples) | (present == 0)
    rejects = pl.DataFrame(
        {
            "job_id": job_id.filter(pl.Series(bad)),
            "reason": [
                f"{m} of {s} samples missing (some instants have {lo} of {n} nodes reporting)"
                for m, s, lo, n in zip(missing[bad], acc.samples[bad], acc.least[bad], acc.n_nodes[bad], strict=True)
            ],
        },
        schema={"job_id": job_id.dtype, "reason": pl.Utf8},
    )
    good = ~bad
    keep = acc.complete & np.repeat(good, acc.samples)
    offsets = np.zeros(int(good.sum()) + 1, np.int64)
    np.cumsum(present[good], out=offsets[1:])
    power = pl.from_arrow(pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(acc.values[keep])))
    count = acc.count[good]
    series = pl.DataFrame(
        {
            "job_id": job_id.filter(pl.Series(good)),
            "power_consumption": power.cast(pl.List(pl.Float64)),
            "samples": acc.samples[good],
            "missing_samples": missing[good],
            "power_mean": acc.mean[good],
            "power_max": acc.vmax[good],
            "power_std": np.sqrt(np.maximum(acc.m2[good], 0.0) / count),
        }
    ).with_columns((pl.col("power_consumption").list.sum() * period).alias("energy"))
    return series, rejects
