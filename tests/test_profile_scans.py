"""The availability profile's fast paths against plain element loops (issue 18: same answers, faster).

``shift_up`` replaces the element-by-element tail shift of an insertion with LLVM's memmove; ``first_at_least_units``
and ``first_short`` replace the element scans of a fit search with chunked reductions; the fit searches built
on them (``earliest_fit_scanned``, conservative backfilling's ``_earlier_fit``) replace the original scans.
Each is checked here against the simple version it replaced, on random profiles that cross chunk borders.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from wattsched.core.intrinsics import shift_up
from wattsched.policies.conservative import _earlier_fit
from wattsched.policies.profile import (
    CHUNK,
    earliest_fit_scanned,
    first_at_least_units,
    first_short,
    gallop_back,
    gallop_forward,
    last_short,
)


@njit(cache=False)
def _shift(arr, lo, hi):
    shift_up(arr, lo, hi)


@given(st.integers(0, 150), st.data())
@settings(max_examples=200, deadline=None)
def test_shift_up_moves_a_stretch_one_slot_up(n: int, data: st.DataObject) -> None:
    lo = data.draw(st.integers(0, n))
    for dtype in (np.float64, np.int64):
        arr = np.arange(n + 1, dtype=dtype) * 3 + 1
        want = arr.copy()
        want[lo + 1 : n + 1] = arr[lo:n].copy()
        _shift(arr, lo, n)
        np.testing.assert_array_equal(arr, want)


@st.composite
def profiles(draw):
    """A profile long enough to use several chunks, availabilities clustered around the thresholds asked."""
    n = draw(st.integers(1, 4 * CHUNK + 7))
    gaps = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 7.0]), min_size=n, max_size=n))
    pt = np.cumsum(np.array(gaps)) - gaps[0]
    pa = np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), dtype=np.int64)
    pa[-1] = 6  # the open-ended last segment has room for every job
    return pt, pa


def _plain_first_at_least(pa, k, hi, need):
    while k < hi and pa[k] < need:
        k += 1
    return k


def _plain_first_short(pt, pa, k, hi, need, end):
    while k < hi and pt[k] < end and pa[k] >= need:
        k += 1
    return k


@given(profiles(), st.data())
@settings(max_examples=300, deadline=None)
def test_chunked_scans_match_the_element_loops(profile, data: st.DataObject) -> None:
    pt, pa = profile
    n = len(pt)
    k = data.draw(st.integers(0, n))
    need = data.draw(st.integers(0, 7))
    bound = data.draw(st.sampled_from([np.inf, float(pt[-1]), float(pt[n // 2]) + 0.25, float(pt[0])]))
    assert first_at_least_units(pa, k, n, need) == _plain_first_at_least(pa, k, n, need)
    assert first_short(pt, pa, k, n, need, bound) == _plain_first_short(pt, pa, k, n, need, bound)


def _plain_earliest_fit(pt, pa, pn, need, dur):
    """The search as it was written before issue 18's chunked scans."""
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


def _plain_earlier_fit(pt, pa, pn, k0, need, dur, own_start, own_end):
    """Conservative backfilling's own-slot search as it was written before issue 18's chunked scans."""
    k = k0
    while k < pn and pt[k] < own_start:
        s = pt[k]
        if pa[k] < need:
            k += 1
            continue
        m = k + 1
        ok = True
        while m < pn and pt[m] < s + dur:
            a = pa[m]
            if own_start <= pt[m] < own_end:
                a += need
            if a < need:
                ok = False
                break
            m += 1
        if ok:
            return k
        k = m + 1
    return -1


@given(profiles(), st.data())
@settings(max_examples=300, deadline=None)
def test_fit_searches_match_the_plain_searches(profile, data: st.DataObject) -> None:
    pt, pa = profile
    n = len(pt)
    need = data.draw(st.integers(1, 6))
    dur = data.draw(st.sampled_from([0.0, 0.5, 1.0, 3.0, 20.0, 200.0]))
    assert earliest_fit_scanned(pt, pa, n, need, dur)[0] == _plain_earliest_fit(pt, pa, n, need, dur)[0]
    # the own slot: a breakpoint s of the profile, its slot [s, s + dur) holding ``need`` units
    i = data.draw(st.integers(0, n - 1))
    own_start = float(pt[i])
    own_end = own_start + dur if dur > 0 else float(np.nextafter(own_start, np.inf))
    held = pa.copy()
    held[(pt >= own_start) & (pt < own_end)] -= need  # may go below 0: the search must still agree
    k0 = data.draw(st.integers(0, i))
    kl = int(np.searchsorted(pt, own_start))
    want = _plain_earlier_fit(pt, held, n, k0, need, dur, own_start, own_end)
    assert _earlier_fit(pt, held, n, k0, kl, need, dur, own_end, False)[0] == want
    if held.min() >= 0:  # the caller's promise that lets the search skip the own slot
        assert _earlier_fit(pt, held, n, k0, kl, need, dur, own_end, True)[0] == want


@given(profiles(), st.data())
@settings(max_examples=300, deadline=None)
def test_gallops_and_the_backward_scan_match_plain_loops(profile, data: st.DataObject) -> None:
    pt, pa = profile
    n = len(pt)
    lo = data.draw(st.integers(0, n))
    t = data.draw(st.sampled_from([float(pt[0]) - 1, float(pt[n // 2]), float(pt[-1]) + 0.25, float(pt[-1])]))
    assert gallop_forward(pt, lo, n, t) == lo + int(np.searchsorted(pt[lo:], t))
    hi = data.draw(st.integers(0, n))  # gallop_back: the answer lies at or before hi
    if t <= (pt[hi] if hi < n else np.inf):
        assert gallop_back(pt, hi, t) == int(np.searchsorted(pt[:hi], t))
    need = data.draw(st.integers(0, 7))
    short = [x for x in range(lo, hi) if pa[x] < need]
    assert last_short(pa, lo, hi, need) == (short[-1] if short else -1)
