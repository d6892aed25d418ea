"""A size index over the kernel's queue: the EASY backfill scan's "next waiting job that fits in ``free`` units"
without a visit to every waiting job (issue 18).

Why: the scan rejected 1.80 B of its 1.84 B visits on size alone for easy-saf on 1 M Lublin jobs (97.7%; the
machine is nearly full at every pass and the queue is long), and that made easy-sjf and easy-saf grow faster than
the trace (exponents 1.41 and 1.26; bench/queue_scaling.py).

The index is a 16-ary min-tree over the *positions* of the queue array, stored level by level in one array:
the leaves (level 0) are the sizes of the jobs in queue order (``index[x]`` for the job at ``queue[x]`` while x
is inside ``queue[head:head + qlen]``, :data:`NO_FIT` elsewhere), and each node above holds the smallest of its
:data:`FANOUT` children. Positions, not job ranks: the queue's own ordering (engine/job_queue.py) stays the only
source of the order, keys may be set late (online predictors), and the index stays about twice as long as the
queue, so it stays in cache. The queue's operations move the leaves with the jobs (contiguous copies, no lookup
of sizes) and :func:`fit_fix` recomputes the nodes above what moved.

Why 16-ary and not binary: a shift or a compaction of m positions rewrites m leaves whatever the tree; above
them a binary tree rewrites m more nodes, a 16-ary one m/15, each the minimum of 16 contiguous values. With the
binary tree, EASY on 1 M Lublin jobs took 2.90 CPU s against 2.39 s without an index (bench/queue_scaling.py).
A query reads at most 16 values per level, contiguous.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: A leaf outside the queue: larger than any job's size.
NO_FIT = np.iinfo(np.int32).max
#: Children per node.
FANOUT = 16
#: The smallest number of leaves (the index of a short queue): 16².
MIN_LEAVES = FANOUT * FANOUT


@njit(cache=True)
def fit_leaves_for(positions):
    """The number of leaves (a power of :data:`FANOUT`, at least :data:`MIN_LEAVES`) for queue positions
    ``0 .. positions - 1``."""
    p = MIN_LEAVES
    while p < positions:
        p *= FANOUT
    return p


@njit(cache=True)
def fit_leaves(index):
    """How many leaves (queue positions) ``index`` has: its length is L + L/16 + ... + 1 = (16 L - 1) / 15."""
    return (index.shape[0] * (FANOUT - 1) + 1) // FANOUT


@njit(cache=True)
def fit_build(queue, head, qlen, size, leaves):
    """A new index with ``leaves`` leaves (from :func:`fit_leaves_for`) of ``queue[head:head + qlen]``
    (``head + qlen < leaves``)."""
    total = (leaves * FANOUT - 1) // (FANOUT - 1)
    index = np.full(total, NO_FIT, dtype=np.int32)
    for x in range(head, head + qlen):
        index[x] = size[queue[x]]
    fit_fix(index, head, head + qlen)
    return index


@njit(cache=True)
def fit_fix(index, lo, hi):
    """Recompute the nodes above the leaves of positions ``lo <= x < hi`` (after the caller wrote those leaves),
    level by level: about (hi - lo) / 15 nodes, each the minimum of 16 contiguous values."""
    if lo >= hi:
        return
    below = 0  # where the level below starts in ``index``
    width = fit_leaves(index)  # its number of nodes
    while width > 1:
        here = below + width
        lo //= FANOUT
        hi = (hi - 1) // FANOUT + 1
        for p in range(lo, hi):
            first = below + p * FANOUT
            m = index[first]
            for c in range(first + 1, first + FANOUT):
                m = min(m, index[c])
            index[here + p] = m
        below = here
        width //= FANOUT


@njit(cache=True)
def fit_next(index, x, end, limit):
    """The first position ``x <= y < end`` whose job's size is at most ``limit``, or -1: the rest of x's group
    of 16 leaves, then up the levels to the first node after it whose minimum fits, then down to its first
    leaf that fits."""
    if x >= end:
        return -1
    below = 0  # where the current level starts in ``index``
    width = fit_leaves(index)  # its number of nodes
    span = 1  # leaves per node at this level
    pos = x
    while True:
        stop = (pos // FANOUT + 1) * FANOUT
        if stop > width:
            stop = width
        found = -1
        for q in range(pos, stop):
            if index[below + q] <= limit:
                found = q
                break
        if found >= 0:
            pos = found
            break
        if width <= FANOUT:  # the top group, read to its end: nothing fits
            return -1
        pos = pos // FANOUT + 1  # the parent of the next group
        below += width
        width //= FANOUT
        span *= FANOUT
        if pos >= width or pos * span >= end:  # past the last node, or past ``end``
            return -1
    while span > 1:  # down: the first child that fits (one does)
        width *= FANOUT
        below -= width
        span //= FANOUT
        pos *= FANOUT
        while index[below + pos] > limit:
            pos += 1
    return pos if pos < end else -1
