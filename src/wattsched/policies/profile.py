"""Availability profiles: breakpoint times ``pt[:pn]`` (ascending, ``pt[0]`` = now) and the units free from each
breakpoint to the next, ``pa[:pn]`` (the last segment is open-ended). Shared by conservative backfilling and the
multi-partition priority backfilling of paper 002; compiled with numba, edited in place."""

from __future__ import annotations

import numpy as np
from numba import njit

from wattsched.policies.sorted_pairs import lower_bound


@njit(cache=True)
def slot_end(t, dur):
    """End of a reservation slot. A zero-length job still needs its units at its start instant, so its slot is
    [t, nextafter(t)): nothing else can hold those units at t, and a job placed right after it is due at t."""
    return t + dur if dur > 0.0 else np.nextafter(t, np.inf)


@njit(cache=True)
def earliest_fit(pt, pa, pn, need, dur):
    """Index of the first profile breakpoint at which ``need`` units stay free for ``dur`` seconds."""
    return earliest_fit_scanned(pt, pa, pn, need, dur)[0]


@njit(cache=True)
def earliest_fit_scanned(pt, pa, pn, need, dur):
    """:func:`earliest_fit` and the breakpoint where its search stopped (the count of breakpoints visited, an
    operation counter of conservative backfilling)."""
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
            return k, m
        k = m + 1


@njit(cache=True)
def profile_breakpoint(pt, pa, pn, t):
    """Index of a breakpoint at time t (inserted, carrying the availability of the segment it splits, if
    absent); returns (index, new count). t must be ≥ pt[0]."""
    lo = lower_bound(pt, pn, t)
    if lo < pn and pt[lo] == t:
        return lo, pn
    for x in range(pn, lo, -1):
        pt[x] = pt[x - 1]
        pa[x] = pa[x - 1]
    pt[lo] = t
    pa[lo] = pa[lo - 1]
    return lo, pn + 1


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
