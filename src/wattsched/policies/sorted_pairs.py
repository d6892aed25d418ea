"""Sorted (time, job) pair lists in plain arrays: the running list and the reservation list use them."""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def lower_bound_in(times, lo, hi, t):
    """First index i in [lo, hi) with times[i] >= t (hi if none); times[lo:hi] is ascending."""
    while lo < hi:
        mid = (lo + hi) // 2
        if times[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def lower_bound(times, count, t):
    """First index i < count with times[i] >= t (count if none); times[:count] is ascending."""
    return lower_bound_in(times, 0, count, t)


@njit(cache=True)
def upper_bound(times, count, t):
    """First index i < count with times[i] > t (count if none); times[:count] is ascending."""
    lo = 0
    hi = count
    while lo < hi:
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def insertion_sort_pairs(keys, values, count):
    """Sort keys[:count] ascending, moving values along; linear on nearly sorted input, stable."""
    for i in range(1, count):
        if keys[i] < keys[i - 1]:
            key = keys[i]
            value = values[i]
            k = i - 1
            while k >= 0 and keys[k] > key:
                keys[k + 1] = keys[k]
                values[k + 1] = values[k]
                k -= 1
            keys[k + 1] = key
            values[k + 1] = value


@njit(cache=True)
def insert_pair(times, jobs, count, t, j):
    """Insert (t, j) keeping the first ``count`` entries sorted by (time, job index); returns the new count."""
    lo = 0
    hi = count
    while lo < hi:
        mid = (lo + hi) // 2
        if times[mid] < t or (times[mid] == t and jobs[mid] < j):
            lo = mid + 1
        else:
            hi = mid
    for x in range(count, lo, -1):
        times[x] = times[x - 1]
        jobs[x] = jobs[x - 1]
    times[lo] = t
    jobs[lo] = j
    return count + 1
