"""A deliberately naive pure-Python simulator of the documented semantics, used only as a test oracle.

It shares no code with wattsched's engine: plain lists, full re-sorts and brute-force availability checks, so
that agreement between the two on random workloads means the semantics in docs/semantics.md are implemented,
not just self-consistent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class RefJob:
    idx: int
    submit: float
    size: int
    walltime: float
    runtime: float
    estimate: float


def _key(order: str, j: RefJob) -> float:
    return {"fcfs": 0.0, "sjf": j.estimate, "ljf": -j.estimate, "saf": j.estimate * j.size}[order]


def _expected_end(now: float, j: RefJob, start: float) -> float:
    e = start + j.estimate
    return e if e > now else start + j.walltime


def simulate_reference(jobs: list[RefJob], machine: int, order: str, backfill: str) -> dict[int, float]:
    """Start time per job index, for ``backfill`` in {"none", "easy", "conservative"}."""
    jobs = sorted(jobs, key=lambda j: (j.submit, j.idx))
    start: dict[int, float] = {}
    running: dict[int, float] = {}  # idx -> true end
    queue: list[RefJob] = []
    reservations: dict[int, float] = {}
    pending_finished: list[int] = []
    assumed: dict[int, float] = {}  # conservative: the end each running job's slot was assumed to have
    free = machine
    nxt = 0
    by_idx = {j.idx: j for j in jobs}
    while nxt < len(jobs) or running:
        now = min([e for e in running.values()] + ([jobs[nxt].submit] if nxt < len(jobs) else []))
        for i in [i for i, e in running.items() if e == now]:
            del running[i]
            free += by_idx[i].size
            pending_finished.append(i)
        while nxt < len(jobs) and jobs[nxt].submit == now:
            queue.append(jobs[nxt])
            nxt += 1
        if not queue:
            continue
        queue.sort(key=lambda j: (_key(order, j), j.submit, j.idx))
        run_view = {i: start[i] for i in running}
        if backfill == "conservative":
            chosen = _conservative(now, queue, run_view, by_idx, free, reservations, pending_finished, assumed)
        else:
            chosen = _queue_pass(now, queue, run_view, by_idx, free, backfill)
        pending_finished = []
        for j in chosen:
            assert j.size <= free
            free -= j.size
            start[j.idx] = now
            running[j.idx] = now + min(j.runtime, j.walltime)
            queue.remove(j)
    return start


def _queue_pass(now, queue, run_view, by_idx, free, backfill):
    chosen = []
    k = 0
    while k < len(queue) and queue[k].size <= free:
        chosen.append(queue[k])
        free -= queue[k].size
        k += 1
    if k == len(queue) or backfill == "none":
        return chosen
    head = queue[k]
    ends = sorted(
        [(_expected_end(now, by_idx[i], s), by_idx[i].size) for i, s in run_view.items()]
        + [(now + j.estimate, j.size) for j in chosen]
    )
    avail = free
    shadow = math.inf
    for e, s in ends:
        if shadow < math.inf and e > shadow:
            break
        avail += s
        if shadow == math.inf and avail >= head.size:
            shadow = e
    extra = avail - head.size
    for j in queue[k + 1 :]:
        if free == 0:
            break
        if j.size > free:
            continue
        in_time = now + j.estimate <= shadow
        if in_time or j.size <= extra:
            chosen.append(j)
            free -= j.size
            if not in_time:
                extra -= j.size
    return chosen


def _slot_end(r: float, estimate: float) -> float:
    """A zero-length reservation holds its units over [r, nextafter(r))."""
    return r + estimate if estimate > 0 else math.nextafter(r, math.inf)


def _avail(t, running_ends, free_now, now, reservations, by_idx, skip=None):
    """Units free at instant t ≥ now given running jobs' expected ends and the reservations."""
    a = free_now + sum(s for e, s in running_ends if e <= t)
    for i, r in reservations.items():
        if i == skip:
            continue
        j = by_idx[i]
        if r <= t < _slot_end(r, j.estimate):
            a -= j.size
    return a


def _fits(t, j, running_ends, free_now, now, reservations, by_idx):
    points = {t} | {e for e, _ in running_ends if t < e < t + j.estimate}
    points |= {r for i, r in reservations.items() if t < r < t + j.estimate and i != j.idx}
    points |= {
        _slot_end(r, by_idx[i].estimate)
        for i, r in reservations.items()
        if t < _slot_end(r, by_idx[i].estimate) < t + j.estimate and i != j.idx
    }
    return all(_avail(p, running_ends, free_now, now, reservations, by_idx, skip=j.idx) >= j.size for p in points)


def _earliest(j, running_ends, free_now, now, reservations, by_idx):
    candidates = sorted(
        {now}
        | {e for e, _ in running_ends if e > now}
        | {
            _slot_end(r, by_idx[i].estimate)
            for i, r in reservations.items()
            if i != j.idx and _slot_end(r, by_idx[i].estimate) > now
        }
    )
    for t in candidates:
        if _fits(t, j, running_ends, free_now, now, reservations, by_idx):
            return t
    raise AssertionError("no fit found")


def _conservative(now, queue, run_view, by_idx, free, reservations, finished, assumed):
    running_ends = [(_expected_end(now, by_idx[i], s), by_idx[i].size) for i, s in run_view.items()]
    overdue = any(s + by_idx[i].estimate <= now for i, s in run_view.items())
    queued = {j.idx for j in queue}
    held = sorted(((r, i) for i, r in reservations.items() if i in queued))
    for i in list(reservations):
        if i not in queued:
            del reservations[i]
    if overdue or not held or held[0][0] < now:
        for i, s in run_view.items():
            assumed[i] = _expected_end(now, by_idx[i], s)
        reservations.clear()
        for _, i in held:
            reservations[i] = _earliest(by_idx[i], running_ends, free, now, reservations, by_idx)
    elif any(assumed.get(f, -math.inf) > now for f in finished):
        for _, i in held:
            old = reservations.pop(i)
            t = _earliest(by_idx[i], running_ends, free, now, reservations, by_idx)
            assert t <= old
            reservations[i] = t
    for j in queue:
        if j.idx not in reservations:
            reservations[j.idx] = _earliest(j, running_ends, free, now, reservations, by_idx)
    due_by = math.nextafter(now, math.inf)
    chosen = []
    left = free
    for r, i in sorted((r, i) for i, r in reservations.items()):
        if r <= due_by and by_idx[i].size <= left:
            chosen.append(by_idx[i])
            left -= by_idx[i].size
    for j in chosen:
        assumed[j.idx] = _slot_end(now, j.estimate)
    return chosen
