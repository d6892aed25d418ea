"""Availability profiles: breakpoint times ``pt[:pn]`` (ascending, ``pt[0]`` = now) and the units free from each
breakpoint to the next, ``pa[:pn]`` (the last segment is open-ended). Shared by conservative backfilling and the
multi-partition priority backfilling of paper 002; compiled with numba, edited in place.

The scans (``first_at_least_units``, ``first_short``, ``last_short``) check chunks by their min or max before
single breakpoints, the lookups gallop from a known index (``gallop_forward``, ``gallop_back``,
``lower_bound_near``) and insertions shift with ``memmove`` (``insert_at``): conservative backfilling on RICC went
from 104 to 19 CPU s with them (issue 18). ``tests/test_profile_scans.py`` checks each against a plain loop."""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.core.intrinsics import shift_up
from wattsched.policies.sorted_pairs import lower_bound, lower_bound_in


@njit(cache=True)
def slot_end(t, dur):
    """End of a reservation slot. A zero-length job still needs its units at its start instant, so its slot is
    [t, nextafter(t)): nothing else can hold those units at t, and a job placed right after it is due at t."""
    return t + dur if dur > 0.0 else np.nextafter(t, np.inf)


@njit(cache=True)
def earliest_fit(pt, pa, pn, need, dur):
    """Index of the first profile breakpoint at which ``need`` units stay free for ``dur`` seconds."""
    return earliest_fit_scanned(pt, pa, pn, need, dur)[0]


#: Breakpoints checked per step of a scan. The profile's scans check a chunk's min or max (and, times being
#: sorted, the chunk's last time) before its elements: the reduction vectorises, the element loop with its early
#: exit does not (0.18 against 0.47-0.91 ns per breakpoint in a micro-benchmark). Conservative backfilling on
#: RICC took 19.0, 19.4 and 19.6 CPU s with chunks of 16, 32 and 64 (issue 18, int32 availabilities).
CHUNK = 16
SCALAR = 8  # breakpoints checked one by one before the chunks


@njit(cache=True, inline="always")
def _chunk_max(pa, k):
    base = np.uint64(k)  # unsigned indices: no negative-index wraparound, so the loop vectorises
    m = pa[base]
    for x in range(1, CHUNK):
        v = pa[base + np.uint64(x)]
        m = v if v > m else m
    return m


@njit(cache=True, inline="always")
def _chunk_min(pa, k):
    base = np.uint64(k)
    m = pa[base]
    for x in range(1, CHUNK):
        v = pa[base + np.uint64(x)]
        m = v if v < m else m
    return m


@njit(cache=True, inline="always")
def first_at_least_units(pa, k, hi, need):
    """First index in [k, hi) with at least ``need`` units free (``hi`` if none). Most answers are near k, so
    the first breakpoints are checked one by one, then by chunks."""
    stop = min(k + SCALAR, hi)
    while k < stop:
        if pa[k] >= need:
            return k
        k += 1
    while k + CHUNK <= hi:
        if _chunk_max(pa, k) >= need:
            break
        k += CHUNK
    while k < hi and pa[k] < need:
        k += 1
    return k


@njit(cache=True, inline="always")
def first_short(pt, pa, k, hi, need, end):
    """First index in [k, hi) that has fewer than ``need`` units free or a time at or after ``end`` (``hi`` if
    none): the breakpoint that blocks a window ending at ``end``, or the window's end."""
    stop = min(k + SCALAR, hi)
    while k < stop:
        if pa[k] < need or pt[k] >= end:
            return k
        k += 1
    while k + CHUNK <= hi:
        if _chunk_min(pa, k) < need or pt[k + CHUNK - 1] >= end:
            break
        k += CHUNK
    while k < hi and pt[k] < end and pa[k] >= need:
        k += 1
    return k


@njit(cache=True)
def earliest_fit_scanned(pt, pa, pn, need, dur):
    """:func:`earliest_fit` and the breakpoint where its search stopped (the count of breakpoints visited, an
    operation counter of conservative backfilling).

    A start k fails at the first later breakpoint m before its window's end with too few units; every start
    between k and m fails at m too, so the search resumes after m."""
    k = 0
    while True:
        k = first_at_least_units(pa, k, pn, need)
        end = pt[k] + dur
        m = first_short(pt, pa, k + 1, pn, need, end)
        if m == pn or pt[m] >= end:
            return k, m
        k = m + 1


@njit(cache=True)
def profile_breakpoint(pt, pa, pn, t):
    """Index of a breakpoint at time t (inserted, carrying the availability of the segment it splits, if
    absent); returns (index, new count). t must be ≥ pt[0]."""
    lo = lower_bound(pt, pn, t)
    return lo, insert_at(pt, pa, pn, lo, t)


@njit(cache=True)
def profile_add(pt, pa, pn, t0, t1, delta):
    """Add ``delta`` units of availability over [t0, t1); returns the new breakpoint count."""
    if t1 <= t0:
        return pn
    a, pn = profile_breakpoint(pt, pa, pn, t0)
    b, pn = profile_breakpoint(pt, pa, pn, t1)
    for x in range(a, b):
        pa[x] += delta
    return pn


@njit(cache=True, inline="always")
def gallop_forward(pt, lo, hi, t):
    """First index in [lo, hi) with pt >= t (``hi`` if none), searched from lo in doubling steps."""
    if lo >= hi or pt[lo] >= t:
        return lo
    a = lo  # pt[a] < t
    step = 1
    b = lo + 1
    while b < hi and pt[b] < t:
        a = b
        step *= 2
        b = a + step
    return lower_bound_in(pt, a + 1, b if b < hi else hi, t)


@njit(cache=True, inline="always")
def gallop_back(pt, hi, t):
    """First index i <= hi with pt[i] >= t, where the answer is known to lie at or before hi (hi is the count,
    or pt[hi] >= t): searched back from hi in doubling steps. The sweep's remembered failures usually lie close
    before the walk position (a binary search over the whole profile cost about 30 ns a search on RICC)."""
    step = 1
    lo = hi - 1
    while lo > 0 and pt[lo] >= t:
        hi = lo
        step *= 2
        lo = hi - step
    return lower_bound_in(pt, lo if lo > 0 else 0, hi, t)  # pt[lo] < t or lo <= 0: the answer is in [lo, hi]


@njit(cache=True, inline="always")
def lower_bound_near(pt, pn, hint, t):
    """First index with pt >= t (``pn`` if none), searched from ``hint`` in doubling steps either way: edits
    land near a breakpoint the sweep already holds (moves took 7.9 CPU s on RICC with binary searches over the
    whole profile, 5.8 s with these)."""
    if hint < pn and pt[hint] < t:
        return gallop_forward(pt, hint, pn, t)
    return gallop_back(pt, hint if hint < pn else pn, t)


@njit(cache=True, inline="always")
def insert_at(pt, pa, pn, lo, t):
    """Breakpoint t at index lo, the first with pt >= t: inserted (carrying the split segment's units) unless
    there, the tail shifted by memmove (9x faster than an element loop: core/intrinsics.py); returns the new
    count."""
    if lo < pn and pt[lo] == t:
        return pn
    shift_up(pt, lo, pn)
    shift_up(pa, lo, pn)
    pt[lo] = t
    pa[lo] = pa[lo - 1]
    return pn + 1


@njit(cache=True, inline="always")
def last_short(pa, lo, hi, need):
    """Last index in [lo, hi) with fewer than ``need`` units free; -1 if none. Checked backwards, by chunks
    once past the first few."""
    x = hi - 1
    stop = hi - SCALAR if hi - SCALAR > lo else lo
    while x >= stop:
        if pa[x] < need:
            return x
        x -= 1
    while x >= lo + CHUNK - 1:
        if _chunk_min(pa, x - CHUNK + 1) < need:
            break
        x -= CHUNK
    while x >= lo:
        if pa[x] < need:
            return x
        x -= 1
    return -1
