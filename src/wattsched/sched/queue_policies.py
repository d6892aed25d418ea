"""Queue-ordering policies with optional backfilling, as numba kernels over the policy's *view*.

A pass receives only what a real resource manager knows: the queue (in policy order), each job's size, walltime
and runtime estimate, the running jobs' start times and expected ends (start + estimate), and the free units.
It never receives true runtimes: those arrays are not among its parameters (see ``wattsched.sim.kernel``).

One pass = the decisions at one instant. It writes the indices of the jobs to start now into ``out`` and returns
how many it wrote; the engine validates and applies them. Semantics (see docs/semantics.md):

* ``none`` (FCFS/SJF/LJF): start queue jobs in order while they fit; stop at the first that does not.
* ``easy``: the same, then the first job that does not fit (the priority job) gets a reservation at the shadow
  time; later jobs are backfilled if they fit now and either end (by estimate) no later than the shadow time or
  use no more than the ``extra`` units (which then shrink).
* ``conservative``: every queued job holds a reservation in an availability profile; reservations are never
  moved later (early completions compress them), new jobs are placed after all earlier reservations.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

BACKFILL_NONE = 0
BACKFILL_EASY = 1
BACKFILL_CONSERVATIVE = 2

ORDER_FCFS = 0
ORDER_SJF = 1
ORDER_LJF = 2
ORDER_SAF = 3


def order_keys(order: int, estimate: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Static sort key per job; the queue is kept sorted by (key, queue rank). Ties fall back to (submit, id)."""
    if order == ORDER_FCFS:
        return np.zeros(len(estimate), dtype=np.float64)
    if order == ORDER_SJF:
        return estimate.astype(np.float64)
    if order == ORDER_LJF:
        return -estimate.astype(np.float64)
    if order == ORDER_SAF:
        return estimate.astype(np.float64) * size.astype(np.float64)
    raise ValueError(f"unknown queue order code {order}")


@njit(cache=True)
def _expected_end(now, j, run_end_j, job_start, walltime):
    """Expected end of running job j: start + estimate, or start + walltime once the estimate is overdue."""
    if run_end_j > now:
        return run_end_j
    return job_start[j] + walltime[j]


@njit(cache=True)
def _sort_pairs(ends, sizes, count):
    """Insertion sort of the (usually tiny) side list of phase-1 starts and overdue jobs, by end time."""
    for a in range(1, count):
        e = ends[a]
        s = sizes[a]
        b = a - 1
        while b >= 0 and ends[b] > e:
            ends[b + 1] = ends[b]
            sizes[b + 1] = sizes[b]
            b -= 1
        ends[b + 1] = e
        sizes[b + 1] = s


@njit(cache=True)
def _collect_side(now, run_end, run_job, rc, job_start, walltime, size, side_end, side_size, sc):
    """Append overdue running jobs (re-dated to their walltime end) to the side list; return (first, sc).

    ``first`` is the index of the first non-overdue entry of the sorted running list.
    """
    first = 0
    while first < rc and run_end[first] <= now:
        j = run_job[first]
        side_end[sc] = job_start[j] + walltime[j]
        side_size[sc] = size[j]
        sc += 1
        first += 1
    return first, sc


@njit(cache=True)
def shadow_and_extra(now, need, free, run_end, run_job, rc, first, side_end, side_size, sc, size):
    """Earliest expected end at which ``need`` units are free, and the units free then beyond ``need``.

    Walks the running jobs (sorted list from ``first``) merged with the sorted side list. All jobs whose
    expected end equals the shadow time count towards ``extra``.
    """
    avail = free
    if avail >= need:
        return now, avail - need
    a = first
    b = 0
    shadow = math.inf
    while a < rc or b < sc:
        if b >= sc or (a < rc and run_end[a] <= side_end[b]):
            e = run_end[a]
            s = size[run_job[a]]
            a += 1
        else:
            e = side_end[b]
            s = side_size[b]
            b += 1
        if shadow < math.inf and e > shadow:
            break
        avail += s
        if shadow == math.inf and avail >= need:
            shadow = e
    if shadow == math.inf:
        return math.inf, 0
    return shadow, avail - need


@njit(cache=True)
def queue_pass(
    backfill, now, queue, qlen, free, run_end, run_job, rc, job_start,
    size, estimate, walltime, reservation, side_end, side_size, out,
):
    """One scheduling pass for ``none`` and ``easy`` backfilling; returns the number of jobs written to ``out``.

    ``reservation[j]`` receives the shadow time the first time job j becomes the EASY priority job.
    """
    ns = 0
    sc = 0
    i = 0
    while i < qlen:
        j = queue[i]
        if size[j] <= free:
            out[ns] = j
            ns += 1
            free -= size[j]
            side_end[sc] = now + estimate[j]
            side_size[sc] = size[j]
            sc += 1
            i += 1
        else:
            break
    if i >= qlen or backfill == BACKFILL_NONE or free == 0:
        if i < qlen and backfill == BACKFILL_EASY and math.isnan(reservation[queue[i]]):
            # The priority job's reservation is still defined when nothing can be backfilled.
            first, sc = _collect_side(now, run_end, run_job, rc, job_start, walltime, size, side_end, side_size, sc)
            _sort_pairs(side_end, side_size, sc)
            shadow, _ = shadow_and_extra(
                now, size[queue[i]], free, run_end, run_job, rc, first, side_end, side_size, sc, size
            )
            reservation[queue[i]] = shadow
        return ns
    pj = queue[i]
    first, sc = _collect_side(now, run_end, run_job, rc, job_start, walltime, size, side_end, side_size, sc)
    _sort_pairs(side_end, side_size, sc)
    shadow, extra = shadow_and_extra(now, size[pj], free, run_end, run_job, rc, first, side_end, side_size, sc, size)
    if math.isnan(reservation[pj]):
        reservation[pj] = shadow
    for k in range(i + 1, qlen):
        if free == 0:
            break
        j = queue[k]
        s = size[j]
        if s > free:
            continue
        ends_in_time = now + estimate[j] <= shadow
        if ends_in_time or s <= extra:
            out[ns] = j
            ns += 1
            free -= s
            if not ends_in_time:
                extra -= s
    return ns


@njit(cache=True)
def _earliest_fit(pt, pa, pn, need, dur):
    """Index of the first profile breakpoint at which ``need`` units stay free for ``dur`` seconds."""
    k = 0
    while True:
        if pa[k] < need:
            k += 1
            continue
        s = pt[k]
        m = k + 1
        ok = True
        while m < pn and pt[m] < s + dur:
            if pa[m] < need:
                ok = False
                break
            m += 1
        if ok:
            return k
        k = m + 1


@njit(cache=True)
def _reserve(pt, pa, pn, k, need, dur):
    """Subtract ``need`` units from the profile over [pt[k], pt[k] + dur); return the new breakpoint count."""
    if dur <= 0.0:
        return pn
    end = pt[k] + dur
    m = k + 1
    while m < pn and pt[m] < end:
        m += 1
    if m == pn or pt[m] != end:
        # split: a new breakpoint at `end` carrying the availability of the segment it cuts
        for x in range(pn, m, -1):
            pt[x] = pt[x - 1]
            pa[x] = pa[x - 1]
        pt[m] = end
        pa[m] = pa[m - 1]
        pn += 1
    for x in range(k, m):
        pa[x] -= need
    return pn


@njit(cache=True)
def conservative_pass(
    now, queue, qlen, free, run_end, run_job, rc, job_start,
    size, estimate, walltime, reservation, first_reservation, side_end, side_size, out,
):
    """Conservative backfilling: compress existing reservations (in order of their current start), place new
    jobs in queue order at their earliest fit, and start those whose reservation is now.

    Reservations are re-made from the running jobs' expected ends on every pass, in order of the old reservation
    times: each job's old slot stays feasible, so no reservation moves later while estimates are upper bounds.
    """
    first, sc = _collect_side(now, run_end, run_job, rc, job_start, walltime, size, side_end, side_size, 0)
    _sort_pairs(side_end, side_size, sc)
    cap = rc + 2 * qlen + 2
    pt = np.empty(cap, dtype=np.float64)
    pa = np.empty(cap, dtype=np.int64)
    pt[0] = now
    pa[0] = free
    pn = 1
    a = first
    b = 0
    while a < rc or b < sc:
        if b >= sc or (a < rc and run_end[a] <= side_end[b]):
            e = run_end[a]
            s = size[run_job[a]]
            a += 1
        else:
            e = side_end[b]
            s = side_size[b]
            b += 1
        if e == pt[pn - 1]:
            pa[pn - 1] += s
        else:
            pt[pn] = e
            pa[pn] = pa[pn - 1] + s
            pn += 1
    # jobs already holding a reservation, by (reservation time, queue position); then the new ones in queue order
    held = np.empty(qlen, dtype=np.int64)
    held_times = np.empty(qlen, dtype=np.float64)
    fresh = np.empty(qlen, dtype=np.int64)
    hc = 0
    fc = 0
    for i in range(qlen):
        r = reservation[queue[i]]
        if math.isnan(r):
            fresh[fc] = queue[i]
            fc += 1
        else:
            held[hc] = queue[i]
            held_times[hc] = r
            hc += 1
    order = np.argsort(held_times[:hc], kind="mergesort")  # stable: ties keep queue order
    ns = 0
    for step in range(qlen):
        j = held[order[step]] if step < hc else fresh[step - hc]
        dur = estimate[j]
        k = _earliest_fit(pt, pa, pn, size[j], dur)
        if math.isnan(first_reservation[j]):
            first_reservation[j] = pt[k]
        reservation[j] = pt[k]
        pn = _reserve(pt, pa, pn, k, size[j], dur)
        if k == 0:
            out[ns] = j
            ns += 1
    return ns
