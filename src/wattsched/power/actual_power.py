"""The platform's actual power over a simulated run, from the jobs' measured profiles (docs/semantics.md §3.5,
[AMBIG-0.10]).

A job's ``power_profile`` holds its power summed over its nodes, one sample per ``period`` seconds. Sample ``k``
holds on ``[start + k·period, start + (k+1)·period)`` (sample-and-hold) and the profile is cut at the job's
``end_time``, so a job killed at its walltime loses its tail. A profile shorter than the run holds its last
sample until the end; an empty or null profile contributes 0 dynamic W (its nodes count as idle): the run
still happened, only its power is unknown. The job's dynamic power is ``sample − nodes·idle``, negative values
kept (no clipping: a node measured below the nominal idle power lowers the sum, as it did on the machine).

The timeline is an exact step function: one row per instant at which the dynamic power or the cap changes,
each row holding until the next, the last forever. It is built from ± deltas at the change points, never by
resampling, so no sub-period event is lost. Sorting the ~65 M change points of a Marconi100 campaign is the
cost that matters; it is done in O(n) (see ``_two_level_bucket_sort``).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
import polars as pl

from wattsched.core.memory import populated_empty
from wattsched.policies.sorted_pairs import insertion_sort_pairs
from wattsched.power.cap_metrics_compiled import energy_pass
from wattsched.power.compact_timeline import PowerSteps
from wattsched.power.platform import Platform, PowerCapSchedule

#: Points per block of the two-level bucket sort: its two arrays (16 bytes a point) stay in a core's L2 cache.
_BLOCK_POINTS = 4096

#: Above this many buckets per change point the bucket sort would waste memory; fall back to a comparison sort.
_MAX_BUCKETS_PER_POINT = 8


@nb.njit(cache=True)
def _active_samples(start: np.ndarray, end: np.ndarray, length: np.ndarray, period: float) -> np.ndarray:
    """Number of samples of each job that start before its end: ``|{k < len : start + k·period < end}|``.

    Computed on the very floats the timeline uses (``start + k·period``), so a boundary that rounds onto the
    end is dropped consistently.
    """
    n = np.zeros(start.size, np.int64)
    for j in range(start.size):
        s = start[j]
        e = end[j]
        if length[j] == 0 or not e > s:
            continue
        m = max(math.ceil((e - s) / period), 1)
        while m > 1 and s + (m - 1) * period >= e:
            m -= 1
        while s + m * period < e:
            m += 1
        n[j] = min(m, length[j])
    return n


@nb.njit(cache=True)
def _item_span(it: int, njobs: int, base: np.ndarray, n: np.ndarray, pt_base: np.ndarray, bmin: int) -> tuple:
    """The buckets ``[b0, b1)`` an item's points fall in (a job's samples, or one single point)."""
    if it < njobs:
        b0 = base[it] - bmin
        return b0, b0 + n[it]
    b0 = pt_base[it - njobs] - bmin
    return b0, b0 + 1


@nb.njit(cache=True)
def _block_sizes(
    order: np.ndarray, base: np.ndarray, n: np.ndarray, pt_base: np.ndarray, bmin: int, nblocks: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of each block's points and runs (one run per item and block it touches), as exclusive sums."""
    njobs = base.size
    points = np.zeros(nblocks + 1, np.int64)
    runs = np.zeros(nblocks + 1, np.int64)
    for it in order:
        b0, b1 = _item_span(it, njobs, base, n, pt_base, bmin)
        c = b0 // width
        while c * width < b1:
            points[c + 1] += min(b1, (c + 1) * width) - max(b0, c * width)
            runs[c + 1] += 1
            c += 1
    for c in range(nblocks):
        points[c + 1] += points[c]
        runs[c + 1] += runs[c]
    return points, runs


@nb.njit(cache=True)
def _fill_blocks(
    order: np.ndarray,
    start: np.ndarray,
    base: np.ndarray,
    n: np.ndarray,
    offset: np.ndarray,
    flat: np.ndarray,
    idle_job: np.ndarray,
    pt_time: np.ndarray,
    pt_base: np.ndarray,
    pt_delta: np.ndarray,
    period: float,
    bmin: int,
    width: int,
    block_points: np.ndarray,
    block_runs: np.ndarray,
    times: np.ndarray,
    deltas: np.ndarray,
    run_item: np.ndarray,
    run_bucket: np.ndarray,
    run_len: np.ndarray,
    run_at: np.ndarray,
) -> None:
    """Pass 1: append each item's points (time, delta) to the blocks it spans, one contiguous run per block."""
    njobs = start.size
    nblocks = block_points.size - 1
    point_cursor = block_points[:nblocks].copy()
    run_cursor = block_runs[:nblocks].copy()
    for it in order:
        b0, b1 = _item_span(it, njobs, base, n, pt_base, bmin)
        is_job = it < njobs
        if is_job:
            s = start[it]
            o = offset[it]
            prev = idle_job[it]
        b = b0
        c = b0 // width
        while b < b1:
            hi = min(b1, (c + 1) * width)
            i = point_cursor[c]
            r = run_cursor[c]
            run_item[r] = it
            run_bucket[r] = b - c * width
            run_len[r] = hi - b
            run_at[r] = i
            if is_job:
                for k in range(b - b0, hi - b0):
                    v = np.float64(flat[o + k])
                    times[i] = s + k * period
                    deltas[i] = v - prev
                    prev = v
                    i += 1
            else:
                times[i] = pt_time[it - njobs]
                deltas[i] = pt_delta[it - njobs]
                i += 1
            point_cursor[c] = i
            run_cursor[c] = r + 1
            b = hi
            c += 1


@nb.njit(cache=True)
def _sort_blocks(
    phase: np.ndarray,
    width: int,
    block_points: np.ndarray,
    block_runs: np.ndarray,
    times: np.ndarray,
    deltas: np.ndarray,
    run_item: np.ndarray,
    run_bucket: np.ndarray,
    run_len: np.ndarray,
    run_at: np.ndarray,
) -> None:
    """Pass 2: counting-sort each block on the bucket, in cache, feeding its runs in phase order."""
    nblocks = block_points.size - 1
    biggest = 0
    for c in range(nblocks):
        biggest = max(biggest, block_points[c + 1] - block_points[c])
    scratch_t = np.empty(biggest, np.float64)
    scratch_d = np.empty(biggest, np.float64)
    pos = np.empty(width + 1, np.int64)
    for c in range(nblocks):
        r0 = block_runs[c]
        r1 = block_runs[c + 1]
        if r1 == r0:
            continue
        pos[:] = 0
        for r in range(r0, r1):
            pos[run_bucket[r]] += 1
            pos[run_bucket[r] + run_len[r]] -= 1
        active = 0
        acc = 0
        for b in range(width):
            active += pos[b]
            pos[b] = acc
            acc += active
        ranks = np.empty(r1 - r0, np.float64)
        for r in range(r0, r1):
            ranks[r - r0] = phase[run_item[r]]
        for q in np.argsort(ranks, kind="mergesort"):
            r = r0 + q
            src = run_at[r]
            b = run_bucket[r]
            for k in range(run_len[r]):
                dst = pos[b + k]
                pos[b + k] = dst + 1
                scratch_t[dst] = times[src + k]
                scratch_d[dst] = deltas[src + k]
        lo = block_points[c]
        for i in range(block_points[c + 1] - lo):
            times[lo + i] = scratch_t[i]
            deltas[lo + i] = scratch_d[i]


@nb.njit(cache=True)
def _job_order_events(
    start: np.ndarray,
    n: np.ndarray,
    offset: np.ndarray,
    flat: np.ndarray,
    idle_job: np.ndarray,
    pt_time: np.ndarray,
    pt_delta: np.ndarray,
    period: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The same points and deltas, unsorted (jobs' samples, then single points): the fallback's input."""
    total = pt_time.size
    for j in range(n.size):
        total += n[j]
    times = np.empty(total, np.float64)
    deltas = np.empty(total, np.float64)
    i = 0
    for j in range(n.size):
        prev = idle_job[j]
        for k in range(n[j]):
            v = np.float64(flat[offset[j] + k])
            times[i] = start[j] + k * period
            deltas[i] = v - prev
            prev = v
            i += 1
    for p in range(pt_time.size):
        times[i] = pt_time[p]
        deltas[i] = pt_delta[p]
        i += 1
    return times, deltas


@nb.njit(cache=True)
def _levels_in_place(times: np.ndarray, deltas: np.ndarray, forced: np.ndarray) -> int:
    """Turn time-sorted deltas into one row per changing instant, in place: ``times[:rows]`` and the dynamic
    level in ``deltas[:rows]``. An instant gets a row when its net delta is not 0, when it is the first, or
    when it is in ``forced`` (sorted cap-change times, present in the stream as zero deltas)."""
    rows = 0
    level = 0.0
    c = 0
    i = 0
    total = times.size
    while i < total:
        t = times[i]
        net = 0.0
        while i < total and times[i] == t:
            net += deltas[i]
            i += 1
        force = False
        while c < forced.size and forced[c] <= t:
            force = True
            c += 1
        level += net
        if rows == 0 or net != 0.0 or force:
            times[rows] = t
            deltas[rows] = level
            rows += 1
    return rows


def _profiles_for(schedule: pl.DataFrame, profiles: pl.DataFrame | pl.Series) -> pl.Series:
    """The profile of each schedule row, joined by ``job_id`` (a Series is taken as already row-aligned)."""
    if isinstance(profiles, pl.Series):
        if profiles.len() != schedule.height:
            raise ValueError(f"a profile Series must align with the schedule: {profiles.len()} ≠ {schedule.height}")
        return profiles
    for col in ("job_id", "power_profile"):
        if col not in profiles.columns:
            raise ValueError(f"profiles need columns 'job_id' and 'power_profile'; they have {profiles.columns}")
    if profiles["job_id"].n_unique() != profiles.height:
        raise ValueError("profiles have duplicate job_id values: which profile a job ran is ambiguous")
    if profiles.height == schedule.height and profiles["job_id"].equals(schedule["job_id"]):
        return profiles["power_profile"]  # already aligned (both in queue order): no join, no copy
    joined = schedule.select("job_id").join(
        profiles.select("job_id", "power_profile").with_columns(pl.lit(True).alias("__has")),
        on="job_id",
        how="left",
        maintain_order="left",
    )
    missing = joined.filter(pl.col("__has").is_null())["job_id"]
    if missing.len():
        example = missing.head(5).to_list()
        raise ValueError(f"{missing.len()} scheduled job(s) have no row in the profiles, e.g. {example}")
    return joined["power_profile"]


def _flat_values(prof: pl.Series) -> np.ndarray:
    """All samples, job after job, as one array (zero-copy from Arrow where the buffers allow it)."""
    arrow = prof.to_arrow()
    if hasattr(arrow, "combine_chunks"):
        arrow = arrow.combine_chunks()
    values = arrow.flatten()  # respects the array's offsets; null lists contribute nothing
    if values.null_count:
        raise ValueError("power profiles contain null samples")
    return values.to_numpy(zero_copy_only=False)


def _check_schedule(schedule: pl.DataFrame) -> None:
    cols = ("job_id", "start_time", "end_time", "size")
    missing = [c for c in cols if c not in schedule.columns]
    if missing:
        raise ValueError(f"schedule lacks column(s) {missing}; it has {schedule.columns}")
    nulls = [c for c in cols if schedule[c].null_count()]
    if nulls:
        raise ValueError(f"schedule column(s) {nulls} contain nulls (unscheduled jobs?)")


def power_timeline(
    schedule: pl.DataFrame,
    profiles: pl.DataFrame | pl.Series,
    platform: Platform,
    cap: PowerCapSchedule | None = None,
    *,
    period: float = 20.0,
) -> pl.DataFrame:
    """The run's power as a ``time, total, dynamic, cap`` table: :func:`power_steps` as a table (see there)."""
    return power_steps(schedule, profiles, platform, cap, period=period).frame()


def power_steps(
    schedule: pl.DataFrame,
    profiles: pl.DataFrame | pl.Series,
    platform: Platform,
    cap: PowerCapSchedule | None = None,
    *,
    period: float = 20.0,
) -> PowerSteps:
    """The run's power as an exact step function ``time, total, dynamic, cap`` (W; each row holds until the next),
    in its compact form (:class:`PowerSteps`: time and dynamic stored, total and cap derived).

    - ``dynamic(t) = Σ_running (profile sample at t − nodes·idle)``; ``total = dynamic + platform.nodes·idle``;
    - ``cap`` is the dynamic cap in force (null when uncapped, or when ``cap`` is None).

    ``profiles`` is the workload's ``job_id`` + ``power_profile`` (a ``pl.List`` of per-job watts summed over
    nodes), joined by ``job_id``; a bare Series is taken as aligned with the schedule's rows. ``size`` is the
    job's node count. The first row is at ``min(0, first start)`` (before it nothing runs) and there is always
    a row at 0, the cap schedule's origin. Levels are float64
    running sums of float64 deltas; for float32 watt samples these sums are exact, so the level is exactly 0
    again when the last job ends.
    """
    if not (math.isfinite(period) and period > 0):
        raise ValueError(f"period must be a positive number of seconds, got {period}")
    _check_schedule(schedule)
    start = schedule["start_time"].cast(pl.Float64).to_numpy()
    end = schedule["end_time"].cast(pl.Float64).to_numpy()
    size = schedule["size"].cast(pl.Float64).to_numpy()
    if not (np.all(np.isfinite(start)) and np.all(np.isfinite(end))):
        raise ValueError("schedule start/end times must be finite")
    if np.any(end < start):
        raise ValueError("schedule has end_time < start_time")
    if np.any(size < 0):
        raise ValueError("schedule has negative sizes")
    prof = _profiles_for(schedule, profiles)
    if not isinstance(prof.dtype, pl.List):
        raise ValueError(f"power_profile must be a list column, got {prof.dtype}")
    length = prof.list.len().fill_null(0).cast(pl.Int64).to_numpy()
    flat = _flat_values(prof)
    if flat.dtype not in (np.float32, np.float64):
        flat = flat.astype(np.float64)
    if not np.all(np.isfinite(flat)):
        raise ValueError("power profiles contain NaN or infinite samples")
    offset = np.cumsum(length) - length
    idle_job = size * platform.idle_watts

    n = _active_samples(start, end, length, float(period))
    ran = n > 0
    cap_sched = cap if cap is not None else PowerCapSchedule((0.0,), (None,))
    forced = np.array((0.0, *cap_sched.change_times()), dtype=np.float64)
    last = flat[offset[ran] + n[ran] - 1].astype(np.float64)
    pt_time = np.concatenate((end[ran], forced))
    pt_delta = np.concatenate((idle_job[ran] - last, np.zeros(forced.size)))
    times, levels = _sorted_events(start, n, offset, flat, idle_job, pt_time, pt_delta, float(period))
    rows = _levels_in_place(times, levels, forced)
    return PowerSteps(times[:rows], levels[:rows], float(platform.idle_platform_watts), cap_sched)


def _sorted_events(
    start: np.ndarray,
    n: np.ndarray,
    offset: np.ndarray,
    flat: np.ndarray,
    idle_job: np.ndarray,
    pt_time: np.ndarray,
    pt_delta: np.ndarray,
    period: float,
    method: str = "auto",
    width: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Time-sorted change points and deltas: the O(n) bucket sort, or a comparison sort when the run spans far
    more periods than it has points (a sparse trace over years would need a huge bucket array)."""
    ran = np.flatnonzero(n > 0)
    points = int(n.sum()) + pt_time.size
    base = np.floor(start / period).astype(np.int64)
    pt_base = np.floor(pt_time / period).astype(np.int64)
    bmin = int(min(base[ran].min(initial=pt_base.min()), pt_base.min()))
    bmax = int(max((base[ran] + n[ran]).max(initial=0), pt_base.max() + 1))
    nbuckets = bmax - bmin
    if method == "argsort" or (method == "auto" and nbuckets > _MAX_BUCKETS_PER_POINT * points + 1_000_000):
        times, deltas = _job_order_events(start, n, offset, flat, idle_job, pt_time, pt_delta, period)
        order = np.argsort(times, kind="stable")
        return times[order], deltas[order]
    phase = np.zeros(start.size + pt_time.size)
    phase[ran] = start[ran] - base[ran] * period
    phase[start.size :] = pt_time - pt_base * period
    order = np.concatenate((ran[np.argsort(start[ran], kind="stable")], start.size + np.arange(pt_time.size)))
    if width is None:
        width = _block_width(points, nbuckets)
    return _two_level_bucket_sort(
        order,
        start,
        base,
        n,
        offset,
        flat,
        idle_job,
        pt_time,
        pt_base,
        pt_delta,
        phase,
        period,
        bmin,
        nbuckets,
        width,
    )


def _two_level_bucket_sort(
    order: np.ndarray,
    start: np.ndarray,
    base: np.ndarray,
    n: np.ndarray,
    offset: np.ndarray,
    flat: np.ndarray,
    idle_job: np.ndarray,
    pt_time: np.ndarray,
    pt_base: np.ndarray,
    pt_delta: np.ndarray,
    phase: np.ndarray,
    period: float,
    bmin: int,
    nbuckets: int,
    width: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Every change point (sample boundaries of the jobs, then single points: job ends and cap changes) with its
    delta, sorted by time in O(points + buckets).

    A job starting at ``start = base·period + phase`` changes power at ``(base + k)·period + phase``: one point
    per period bucket, always at the same phase, so within a bucket the points are ordered by their items'
    phases (a single point is an item of length 1). Two passes keep the memory traffic sequential:

    1. items in ``order`` (start order, for locality) append their points to blocks of ``width`` buckets, one
       contiguous *run* per item and block (``_fill_blocks``);
    2. each block, small enough to stay in cache, is counting-sorted on the bucket with its runs fed in phase
       order, which emits its points in time order (``_sort_blocks``).

    Rounding can only swap points a few ulps apart; a final insertion pass, linear on nearly sorted input,
    restores the exact order of the computed floats. ``phase`` is per item (jobs, then single points). The big
    arrays are allocated here, their pages mapped at once (``populated_empty``), not page by page by numba.
    """
    nblocks = (nbuckets + width - 1) // width
    block_points, block_runs = _block_sizes(order, base, n, pt_base, bmin, nblocks, width)
    total = int(block_points[-1])
    nruns = int(block_runs[-1])
    times = populated_empty(total)
    deltas = populated_empty(total)
    run_item, run_bucket, run_len, run_at = (np.empty(nruns, np.int64) for _ in range(4))
    _fill_blocks(
        order,
        start,
        base,
        n,
        offset,
        flat,
        idle_job,
        pt_time,
        pt_base,
        pt_delta,
        period,
        bmin,
        width,
        block_points,
        block_runs,
        times,
        deltas,
        run_item,
        run_bucket,
        run_len,
        run_at,
    )
    _sort_blocks(phase, width, block_points, block_runs, times, deltas, run_item, run_bucket, run_len, run_at)
    insertion_sort_pairs(times, deltas, total)
    return times, deltas


def _block_width(points: int, nbuckets: int) -> int:
    """Buckets per block: a power of two giving blocks of about ``_BLOCK_POINTS`` points (cache-sized)."""
    per_bucket = max(points / max(nbuckets, 1), 1e-9)
    return int(min(max(2 ** round(math.log2(max(_BLOCK_POINTS / per_bucket, 1.0))), 1), 1 << 16))


def energy(timeline: pl.DataFrame, t0: float, t1: float, column: str = "total") -> float:
    """Energy in joules over ``[t0, t1)``: the integral of the step function ``column`` (``total`` or ``dynamic``).

    The timeline says nothing before its first row, so a window starting earlier is refused rather than guessed.
    Only the window's rows are visited, in compiled code, with the bits of ``np.sum`` over the whole timeline
    (``cap_metrics_compiled``).
    """
    if column not in ("total", "dynamic"):
        raise ValueError(f"column must be 'total' or 'dynamic', got {column!r}")
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 < t0:
        raise ValueError(f"energy needs a finite window with t0 ≤ t1, got [{t0}, {t1})")
    times = np.asarray(timeline["time"].to_numpy(), dtype=np.float64)
    if times.size == 0:
        raise ValueError("empty timeline")
    if t0 < times[0]:
        raise ValueError(f"window starts at {t0}, before the timeline's first row ({times[0]})")
    values = np.asarray(timeline[column].to_numpy(), dtype=np.float64)
    return float(energy_pass(times, values, values, 0.0, 0.0, np.array([t0], float), np.array([t1], float))[0, 0])
