"""Event-driven simulation of a multi-resource machine whose nodes several jobs share (paper 001 §4;
docs/dispatch.md), for the dispatchers of :mod:`wattsched.studies.multires.dispatchers`.

At each instant the engine applies the completions, then the submissions (each new job gets its runtime
estimate, from a column or an online predictor fed with the completions so far), then runs the dispatcher once
and validates every decision: the job is queued, its chunks are all placed, and no node resource goes negative.
A job runs ``min(runtime, walltime)`` (killed at its walltime) and a zero-length job completes as a new event at
the same instant. A dispatcher may ask to be woken at a time (EBF's reservation time) with ``wake_at``, an optional
member of the protocol declared on :class:`~wattsched.studies.multires.dispatchers.DispatcherBase`.

The dispatcher sees a :class:`~wattsched.studies.multires.dispatchers.ClusterView`: estimates only, never the true
runtimes. Jobs that cannot fit even on the empty machine are rejected up front with the resource that is short.

This engine is pure Python and NumPy, sized for the Eurora instances (50–1000 jobs) and traces of tens of
thousands of jobs; the node-exclusive engine (:mod:`wattsched.engine.simulate`) stays the fast path for whole-node
workloads.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import polars as pl

from wattsched.core.predictor import OnlinePredictor
from wattsched.core.protocols import optional_member
from wattsched.core.schema import sort_queue_order
from wattsched.studies.multires.allocators import chunks_that_fit
from wattsched.studies.multires.dispatchers import ClusterView, Dispatcher, DispatcherBase
from wattsched.studies.multires.nodes import NodePool, queue_ewt


class DispatchError(RuntimeError):
    """A dispatcher decision the engine refuses (with the job and why)."""


@dataclass
class MultiResult:
    """Per-job outcome, the queue timeline (after each pass) and run statistics."""

    jobs: pl.DataFrame
    timeline: pl.DataFrame
    rejects: pl.DataFrame
    stats: dict[str, Any] = field(default_factory=dict)


def _read_only(a: np.ndarray) -> np.ndarray:
    a = a.view()
    a.flags.writeable = False
    return a


def simulate_multires(
    jobs: pl.DataFrame,
    pool: NodePool,
    dispatcher: Dispatcher,
    *,
    estimate: str | OnlinePredictor = "walltime",
    default_ewt: float | None = None,
) -> MultiResult:
    """Simulate ``jobs`` (``job_id, submit_time, runtime, walltime, chunks, chunk_<resource>…``, optional
    ``queue``) on ``pool`` with ``dispatcher``. ``estimate`` is the column the dispatcher sees as expected duration
    (``walltime``, ``runtime`` for the real-duration baseline, or a prediction column) or an online predictor run
    in simulation (its ``pred_runtime`` output). A queue missing from ``pool.queues`` gets ``default_ewt``
    (None: the pool's ``default`` entry, else 1800 s)."""
    t_start = time.perf_counter()
    chunk_cols = list(pool.chunk_columns())
    needed = ["job_id", "submit_time", "runtime", "walltime", "chunks", *chunk_cols]
    missing = [c for c in needed if c not in jobs.columns]
    if missing:
        raise ValueError(f"a multi-resource workload needs column(s) {missing} for pool {pool.name!r}")
    jobs = sort_queue_order(jobs)
    capacity = pool.usable()
    req = jobs.select([pl.col(c).cast(pl.Int64) for c in chunk_cols]).to_numpy().astype(np.int64)
    chunks = jobs["chunks"].cast(pl.Int64).to_numpy().astype(np.int64)
    fits = _fits_empty(capacity, chunks, req, _mask(pool))
    rejects = _rejects(jobs, fits, chunks, req, capacity, pool)
    jobs = jobs.filter(pl.Series(fits))
    req, chunks = req[fits], chunks[fits]
    n = jobs.height
    submit = jobs["submit_time"].cast(pl.Float64).to_numpy()
    walltime = jobs["walltime"].cast(pl.Float64).to_numpy()
    true_runtime = jobs["runtime"].cast(pl.Float64).to_numpy()
    run_for = np.minimum(true_runtime, walltime)
    queues = jobs["queue"].to_list() if "queue" in jobs.columns else [None] * n
    ewt = queue_ewt(pool, queues, default_ewt)
    predictor: OnlinePredictor | None = None
    given: np.ndarray | None = None
    if isinstance(estimate, str):
        if estimate not in jobs.columns:
            raise ValueError(f"estimate column {estimate!r} is not in the workload")
        given = jobs[estimate].cast(pl.Float64).to_numpy()
    else:
        predictor = estimate
        predictor.bind(jobs)
    expected = np.full(n, np.nan)  # set at each job's submission
    necessary = _mask(pool)
    free = capacity.copy()
    started = np.full(n, np.nan)
    ended = np.full(n, np.nan)
    allocations: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    queued: list[int] = []
    running: set[int] = set()
    completions: list[tuple[float, int]] = []
    wakeups: list[float] = []
    times: list[float] = []
    queue_len: list[int] = []
    running_len: list[int] = []
    dispatcher.reset()
    passes = 0
    dispatch_s = 0.0
    i = 0
    while i < n or completions or wakeups:
        now = min(
            submit[i] if i < n else np.inf,
            completions[0][0] if completions else np.inf,
            wakeups[0] if wakeups else np.inf,
        )
        while wakeups and wakeups[0] <= now:
            heapq.heappop(wakeups)
        done = []
        while completions and completions[0][0] <= now:
            _, j = heapq.heappop(completions)
            nodes, counts = allocations[j]
            free[nodes] += counts[:, None] * req[j][None, :]
            running.discard(j)
            ended[j] = now
            done.append(j)
        if predictor is not None and done:
            predictor.observe(np.array(done, dtype=np.int64), np.full(len(done), now))
        first = i
        while i < n and submit[i] <= now:
            i += 1
        if i > first:
            rows = np.arange(first, i)
            if predictor is not None:
                expected[rows] = predictor.predict(rows, now)["pred_runtime"]
            else:
                assert given is not None  # no predictor: estimate named a column
                expected[rows] = given[rows]
            queued.extend(rows.tolist())
        view = ClusterView(
            now=now,
            queue=_read_only(np.array(queued, dtype=np.int64)),
            entered=_read_only(submit),
            expected=_read_only(expected),
            walltime=_read_only(walltime),
            chunks=_read_only(chunks),
            chunk_req=_read_only(req),
            ewt=_read_only(ewt),
            running=_read_only(np.array(sorted(running), dtype=np.int64)),
            started=_read_only(started),
            allocations=MappingProxyType(allocations),
            free=_read_only(free),
            capacity=_read_only(capacity),
            necessary=_read_only(necessary),
        )
        t = time.perf_counter()
        decisions = dispatcher.dispatch(view) if queued else []
        dispatch_s += time.perf_counter() - t
        passes += 1
        in_queue = set(queued)
        for j, alloc in decisions:
            _validate(j, alloc, in_queue, chunks, req, free, dispatcher.name)
            nodes, counts = np.asarray(alloc[0], dtype=np.int64), np.asarray(alloc[1], dtype=np.int64)
            free[nodes] -= counts[:, None] * req[j][None, :]
            allocations[j] = (nodes, counts)
            started[j] = now
            in_queue.discard(j)
            running.add(j)
            heapq.heappush(completions, (now + run_for[j], j))
        if decisions:
            queued = [j for j in queued if j in in_queue]
        wake = optional_member(dispatcher, DispatcherBase, "wake_at")
        if wake is not None and wake > now and queued:
            heapq.heappush(wakeups, float(wake))
        times.append(now)
        queue_len.append(len(queued))
        running_len.append(len(running))
        if not completions and not wakeups and i >= n and queued:
            raise DispatchError(
                f"{dispatcher.name}: {len(queued)} job(s) left queued on an idle machine at t={now} "
                f"(first: job {jobs['job_id'][queued[0]]})"
            )
    keep = ["job_id", "submit_time", "walltime", *(["queue"] if "queue" in jobs.columns else [])]
    out = (
        jobs.select(keep)
        .with_columns(
            pl.Series("start_time", started),
            pl.Series("end_time", ended),
            pl.Series("runtime", run_for),
            pl.Series("true_runtime", true_runtime),
            pl.Series("expected_runtime", expected),
            pl.Series("killed", true_runtime > walltime),
            pl.Series(
                "alloc_nodes", [pool.node_ids[allocations[j][0]].tolist() for j in range(n)], dtype=pl.List(pl.Int64)
            ),
            pl.Series("alloc_chunks", [allocations[j][1].tolist() for j in range(n)], dtype=pl.List(pl.Int64)),
        )
        .with_columns((pl.col("start_time") - pl.col("submit_time")).alias("wait"))
    )
    timeline = pl.DataFrame(
        {"time": times, "queued": queue_len, "running": running_len},
        schema={"time": pl.Float64, "queued": pl.Int64, "running": pl.Int64},
    )
    stats = {
        "passes": passes,
        "dispatch_s": dispatch_s,
        "elapsed_s": time.perf_counter() - t_start,
        "dispatcher": dispatcher.name,
        "jobs": n,
        "rejected": rejects.height,
    }
    stats.update(optional_member(dispatcher, DispatcherBase, "summary")())
    return MultiResult(out, timeline, rejects, stats)


def _fits_empty(capacity: np.ndarray, chunks: np.ndarray, req: np.ndarray, necessary: np.ndarray) -> np.ndarray:
    """Whether each job's chunks fit on the empty machine (so some dispatcher can ever start it)."""
    usable = (capacity[:, necessary] > 0).all(axis=1)
    return np.array(
        [c > 0 and chunks_that_fit(capacity[usable], r).sum() >= c for c, r in zip(chunks, req, strict=True)],
        dtype=bool,
    )


def _mask(pool: NodePool) -> np.ndarray:
    return np.array([r in pool.necessary for r in pool.resources], dtype=bool)


def _rejects(
    jobs: pl.DataFrame, fits: np.ndarray, chunks: np.ndarray, req: np.ndarray, capacity: np.ndarray, pool: NodePool
) -> pl.DataFrame:
    rows = []
    for j in np.flatnonzero(~fits):
        if chunks[j] <= 0:
            why = f"chunks must be positive, got {chunks[j]}"
        else:
            short = [r for k, r in enumerate(pool.resources) if req[j, k] * chunks[j] > capacity[:, k].sum()]
            what = f" ({', '.join(short)} short)" if short else ""
            why = (
                f"{chunks[j]} chunk(s) of {dict(zip(pool.resources, req[j].tolist(), strict=True))} do not fit "
                f"on the empty {pool.name} machine{what}"
            )
        rows.append((int(jobs["job_id"][int(j)]), why))
    return pl.DataFrame(rows, schema={"job_id": pl.Int64, "reason": pl.Utf8}, orient="row")


def _validate(
    job: int, alloc: Any, queued: set[int], chunks: np.ndarray, req: np.ndarray, free: np.ndarray, name: str
) -> None:
    if job not in queued:
        raise DispatchError(f"{name}: job number {job} is not queued (started twice or unknown)")
    nodes, counts = np.asarray(alloc[0]), np.asarray(alloc[1])
    if nodes.shape != counts.shape or nodes.ndim != 1 or nodes.size == 0:
        raise DispatchError(f"{name}: job number {job}: an allocation is (nodes, counts) of equal length")
    if np.unique(nodes).size != nodes.size or (counts <= 0).any() or nodes.min() < 0 or nodes.max() >= free.shape[0]:
        raise DispatchError(f"{name}: job number {job}: nodes must be distinct valid indices with positive counts")
    if counts.sum() != chunks[job]:
        raise DispatchError(f"{name}: job number {job}: {counts.sum()} chunks placed, {chunks[job]} requested")
    after = free[nodes] - counts[:, None] * req[job][None, :]
    if (after < 0).any():
        bad = int(nodes[np.flatnonzero((after < 0).any(axis=1))[0]])
        raise DispatchError(f"{name}: job number {job}: over-allocates node index {bad}")
