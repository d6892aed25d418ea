"""The power metrics of a step-function timeline in compiled passes over the window's rows only.

The numpy formulation (``energy``, ``_pieces``) builds five or six full-length float64 temporaries per call
(piece ends, clipped durations, products, masks), and a power summary calls it five times: on a 65 M-row
Marconi100 timeline that is 3–5 s and ~2 GB of temporaries even for a 3-hour window. Here the window's rows are
found by binary search and every sum is computed without a temporary.

**Same bits as numpy.** ``np.sum`` of a contiguous float64 array is ``0.0 + pairwise(a)`` with numpy's
pairwise summation (blocks of at most 128 elements summed with 8 accumulators, halves split at multiples of 8).
Every sum here reproduces that tree on the *virtual* array the numpy code would have built (the same elements,
computed with the same float operations, in the same order), so each metric has exactly the numpy value
(tests/test_power_metric_pass.py checks it against the numpy formulation, kept there as the oracle):

- a masked sum (``seconds[capped].sum()``) is the tree over the compacted elements, fed by a cursor that walks
  the window's rows in order (the tree reads its leaves left to right);
- an energy sums over the whole timeline, zero outside the window: subtrees entirely outside the window sum to
  ±0, which leaves any other partial sum unchanged, so they are skipped.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

#: Numpy's pairwise-summation leaf size (``PW_BLOCKSIZE`` in numpy's loops_utils.h).
_PW_BLOCK = 128
#: Sequences of rows a masked sum walks: every row with time inside the window; capped rows; rows above the cap.
_KEPT, _CAPPED, _ABOVE = 0, 1, 2
#: Deepest recursion of the pairwise tree (n halves per level down to 128): 64 covers any int64 count.
_DEPTH = 64


@nb.njit(cache=True, inline="always")
def _seconds(time: np.ndarray, i: int, t0: float, t1: float) -> float:
    """``clip(min(end_i, t1) − max(time_i, t0), 0)`` with ``end_i`` the next row's time (∞ for the last)."""
    end = time[i + 1] if i + 1 < time.size else np.inf
    s = min(end, t1) - max(time[i], t0)
    return s if s > 0.0 else 0.0


@nb.njit(cache=True)
def _next_masked(
    kind: int,
    cur: np.ndarray,
    time: np.ndarray,
    dyn: np.ndarray,
    cap: np.ndarray,
    lo: int,
    t0: float,
    t1: float,
    vals: np.ndarray,
) -> None:
    """Write the next element(s) of sequence ``kind`` into ``vals`` and move the cursor past its row."""
    i = cur[0]
    while True:
        sec = _seconds(time, i, t0, t1)
        if sec > 0.0:
            if kind == _KEPT:
                vals[0] = dyn[i] * sec
                break
            c = cap[i - lo]
            if not math.isnan(c):
                if kind == _CAPPED:
                    vals[0] = sec
                    vals[1] = (dyn[i] / c) * sec
                    break
                if dyn[i] > c:
                    vals[0] = sec
                    break
        i += 1
    cur[0] = i + 1


@nb.njit(cache=True)
def _leaf_masked(
    kind: int,
    n: int,
    nsums: int,
    cur: np.ndarray,
    time: np.ndarray,
    dyn: np.ndarray,
    cap: np.ndarray,
    lo: int,
    t0: float,
    t1: float,
    out: np.ndarray,
    leaf: np.ndarray,
    vals: np.ndarray,
) -> None:
    """numpy's sum of one leaf (``n ≤ 128`` next elements of sequence ``kind``) into ``out[:nsums]``."""
    if n < 8:
        for k in range(nsums):
            out[k] = 0.0
        for _ in range(n):
            _next_masked(kind, cur, time, dyn, cap, lo, t0, t1, vals)
            for k in range(nsums):
                out[k] += vals[k]
        return
    for j in range(8):
        _next_masked(kind, cur, time, dyn, cap, lo, t0, t1, vals)
        for k in range(nsums):
            leaf[j, k] = vals[k]
    i = 8
    while i < n - (n % 8):
        for j in range(8):
            _next_masked(kind, cur, time, dyn, cap, lo, t0, t1, vals)
            for k in range(nsums):
                leaf[j, k] += vals[k]
        i += 8
    _fold(leaf, out, nsums)
    while i < n:
        _next_masked(kind, cur, time, dyn, cap, lo, t0, t1, vals)
        for k in range(nsums):
            out[k] += vals[k]
        i += 1


@nb.njit(cache=True)
def _masked_sum(
    kind: int, n: int, nsums: int, time: np.ndarray, dyn: np.ndarray, cap: np.ndarray, lo: int, t0: float, t1: float
) -> np.ndarray:
    """``np.sum`` of each of the ``nsums`` element streams of sequence ``kind`` (``n`` elements)."""
    res = np.zeros((_DEPTH + 2, 2))
    left = np.zeros((_DEPTH + 2, 2))
    size = np.zeros(_DEPTH + 2, np.int64)
    stage = np.zeros(_DEPTH + 2, np.int64)
    leaf = np.zeros((8, 2))
    vals = np.zeros(2)
    cur = np.array([lo], np.int64)
    # numpy's recursion (halves at multiples of 8 down to leaves of ≤ 128), run on an explicit stack: numba's
    # on-disk cache cannot hold recursive functions. res[d] is the sum of the subtree at depth d once it returns.
    sp = 0
    size[0] = n
    stage[0] = 0
    while sp >= 0:
        m = size[sp]
        if m <= _PW_BLOCK:
            _leaf_masked(kind, m, nsums, cur, time, dyn, cap, lo, t0, t1, res[sp], leaf, vals)
            sp -= 1
            continue
        half = m // 2 - (m // 2) % 8
        if stage[sp] == 0:
            stage[sp] = 1
            size[sp + 1] = half
            stage[sp + 1] = 0
            sp += 1
        elif stage[sp] == 1:
            left[sp, :] = res[sp + 1, :]
            stage[sp] = 2
            size[sp + 1] = m - half
            stage[sp + 1] = 0
            sp += 1
        else:
            for k in range(nsums):
                res[sp, k] = left[sp, k] + res[sp + 1, k]
            sp -= 1
    out = np.zeros(2)
    for k in range(nsums):
        out[k] = 0.0 + res[0, k]
    return out


@nb.njit(cache=True)
def window_pass(time: np.ndarray, dyn: np.ndarray, cap: np.ndarray, lo: int, hi: int, t0: float, t1: float):
    """Every cap metric's reduction over the window ``[t0, t1)``, whose rows (those with a piece inside it) are
    ``[lo, hi)``; ``cap`` holds those rows' caps (NaN: none).

    Returns ``(sum(dynamic·seconds), max dynamic, capped seconds, sum(dynamic/cap·seconds) over capped pieces,
    seconds above the cap, max dynamic/cap, min cap, capped pieces, pieces above the cap)``, each reduction as
    numpy computes it on the kept pieces (``_pieces``).
    """
    kept = 0
    capped = 0
    above = 0
    max_dyn = -np.inf
    max_ratio = -np.inf
    min_cap = np.inf
    for i in range(lo, hi):
        if _seconds(time, i, t0, t1) > 0.0:
            kept += 1
            d = dyn[i]
            if d > max_dyn or math.isnan(d):
                max_dyn = d
            c = cap[i - lo]
            if not math.isnan(c):
                capped += 1
                r = d / c
                if r > max_ratio or math.isnan(r):
                    max_ratio = r
                if c < min_cap:
                    min_cap = c
                if d > c:
                    above += 1
    weighted = _masked_sum(_KEPT, kept, 1, time, dyn, cap, lo, t0, t1)[0]
    sums = _masked_sum(_CAPPED, capped, 2, time, dyn, cap, lo, t0, t1)
    over = _masked_sum(_ABOVE, above, 1, time, dyn, cap, lo, t0, t1)[0]
    return weighted, max_dyn, sums[0], sums[1], over, max_ratio, min_cap, kept, capped, above


@nb.njit(cache=True)
def _leaf_energy(
    start: int, n: int, time: np.ndarray, va: np.ndarray, vb: np.ndarray, oa: float, ob: float, t0: float, t1: float
) -> tuple[float, float]:
    """numpy's sum of one leaf (rows ``[start, start + n)``, ``n ≤ 128``) of ``(va[i] + oa) · seconds(i)`` and
    ``(vb[i] + ob) · seconds(i)`` over ``[t0, t1)``. The 8 accumulators of both sums are scalars, kept in
    registers: this leaf is the whole cost of a run's energy (65 M rows at 231k jobs)."""
    if n < 8:
        x = 0.0
        y = 0.0
        for i in range(start, start + n):
            sec = _seconds(time, i, t0, t1)
            x += (va[i] + oa) * sec
            y += (vb[i] + ob) * sec
        return x, y
    i = start
    s = _seconds(time, i, t0, t1)
    a0, b0 = (va[i] + oa) * s, (vb[i] + ob) * s
    s = _seconds(time, i + 1, t0, t1)
    a1, b1 = (va[i + 1] + oa) * s, (vb[i + 1] + ob) * s
    s = _seconds(time, i + 2, t0, t1)
    a2, b2 = (va[i + 2] + oa) * s, (vb[i + 2] + ob) * s
    s = _seconds(time, i + 3, t0, t1)
    a3, b3 = (va[i + 3] + oa) * s, (vb[i + 3] + ob) * s
    s = _seconds(time, i + 4, t0, t1)
    a4, b4 = (va[i + 4] + oa) * s, (vb[i + 4] + ob) * s
    s = _seconds(time, i + 5, t0, t1)
    a5, b5 = (va[i + 5] + oa) * s, (vb[i + 5] + ob) * s
    s = _seconds(time, i + 6, t0, t1)
    a6, b6 = (va[i + 6] + oa) * s, (vb[i + 6] + ob) * s
    s = _seconds(time, i + 7, t0, t1)
    a7, b7 = (va[i + 7] + oa) * s, (vb[i + 7] + ob) * s
    stop = start + n - (n % 8)
    i = start + 8
    while i < stop:
        s = _seconds(time, i, t0, t1)
        a0 += (va[i] + oa) * s
        b0 += (vb[i] + ob) * s
        s = _seconds(time, i + 1, t0, t1)
        a1 += (va[i + 1] + oa) * s
        b1 += (vb[i + 1] + ob) * s
        s = _seconds(time, i + 2, t0, t1)
        a2 += (va[i + 2] + oa) * s
        b2 += (vb[i + 2] + ob) * s
        s = _seconds(time, i + 3, t0, t1)
        a3 += (va[i + 3] + oa) * s
        b3 += (vb[i + 3] + ob) * s
        s = _seconds(time, i + 4, t0, t1)
        a4 += (va[i + 4] + oa) * s
        b4 += (vb[i + 4] + ob) * s
        s = _seconds(time, i + 5, t0, t1)
        a5 += (va[i + 5] + oa) * s
        b5 += (vb[i + 5] + ob) * s
        s = _seconds(time, i + 6, t0, t1)
        a6 += (va[i + 6] + oa) * s
        b6 += (vb[i + 6] + ob) * s
        s = _seconds(time, i + 7, t0, t1)
        a7 += (va[i + 7] + oa) * s
        b7 += (vb[i + 7] + ob) * s
        i += 8
    x = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
    y = ((b0 + b1) + (b2 + b3)) + ((b4 + b5) + (b6 + b7))
    while i < start + n:
        s = _seconds(time, i, t0, t1)
        x += (va[i] + oa) * s
        y += (vb[i] + ob) * s
        i += 1
    return x, y


@nb.njit(cache=True, inline="always")
def _fold(leaf: np.ndarray, out: np.ndarray, ns: int) -> None:
    """The 8 accumulators of a leaf combined as numpy combines them."""
    for k in range(ns):
        out[k] = ((leaf[0, k] + leaf[1, k]) + (leaf[2, k] + leaf[3, k])) + (
            (leaf[4, k] + leaf[5, k]) + (leaf[6, k] + leaf[7, k])
        )


@nb.njit(cache=True)
def _energy_window(
    time: np.ndarray, va: np.ndarray, vb: np.ndarray, oa: float, ob: float, t0: float, t1: float
) -> tuple[float, float]:
    """``np.sum((va + oa) · durations)`` and the same for ``vb``, over the whole timeline: numpy's recursion over
    all rows on an explicit stack (see ``_masked_sum``), where a subtree outside the window's rows sums to ±0,
    which changes no other partial sum, so it is not visited."""
    lo = max(int(np.searchsorted(time, t0, side="right")) - 1, 0)
    hi = int(np.searchsorted(time, t1, side="left"))
    if time.size == 0 or not t1 > t0 or lo >= hi:
        return 0.0, 0.0
    res = np.zeros((_DEPTH + 2, 2))
    left = np.zeros((_DEPTH + 2, 2))
    first = np.zeros(_DEPTH + 2, np.int64)
    size = np.zeros(_DEPTH + 2, np.int64)
    stage = np.zeros(_DEPTH + 2, np.int64)
    sp = 0
    size[0] = time.size
    while sp >= 0:
        a = first[sp]
        m = size[sp]
        if a + m <= lo or a >= hi:
            res[sp, 0] = 0.0
            res[sp, 1] = 0.0
            sp -= 1
            continue
        if m <= _PW_BLOCK:
            res[sp, 0], res[sp, 1] = _leaf_energy(a, m, time, va, vb, oa, ob, t0, t1)
            sp -= 1
            continue
        half = m // 2 - (m // 2) % 8
        if stage[sp] == 0:
            stage[sp] = 1
            first[sp + 1] = a
            size[sp + 1] = half
            stage[sp + 1] = 0
            sp += 1
        elif stage[sp] == 1:
            left[sp, 0] = res[sp + 1, 0]
            left[sp, 1] = res[sp + 1, 1]
            stage[sp] = 2
            first[sp + 1] = a + half
            size[sp + 1] = m - half
            stage[sp + 1] = 0
            sp += 1
        else:
            res[sp, 0] = left[sp, 0] + res[sp + 1, 0]
            res[sp, 1] = left[sp, 1] + res[sp + 1, 1]
            sp -= 1
    return 0.0 + res[0, 0], 0.0 + res[0, 1]


@nb.njit(cache=True)
def energy_pass(
    time: np.ndarray, va: np.ndarray, vb: np.ndarray, oa: float, ob: float, t0s: np.ndarray, t1s: np.ndarray
) -> np.ndarray:
    """Energies ``np.sum((v + o) · durations_w)`` of two step functions (``va + oa``, ``vb + ob``) over each
    window ``[t0s[w], t1s[w])`` (result ``[w, 0]`` and ``[w, 1]``), with the bits ``energy`` had on the full
    timeline, visiting only each window's rows (found by binary search)."""
    out = np.zeros((t0s.size, 2))
    for w in range(t0s.size):
        out[w, 0], out[w, 1] = _energy_window(time, va, vb, oa, ob, t0s[w], t1s[w])
    return out


def window_rows(time: np.ndarray, t0: float, t1: float) -> tuple[int, int]:
    """Rows ``[lo, hi)`` whose piece may overlap ``[t0, t1)``: from the row in force at ``t0`` to the last row
    before ``t1`` (times non-decreasing, as a timeline's are)."""
    lo = max(int(np.searchsorted(time, t0, side="right")) - 1, 0)
    hi = int(np.searchsorted(time, t1, side="left"))
    return lo, max(hi, lo)
