"""The kernel's queue of waiting jobs, in policy order (issue 18: every queue policy linear in the work).

Three layouts of the same ``queue`` array, each giving a pass the jobs in (key, job index) order:

* a sorted run ``queue[head:head + qlen]`` (fcfs, conservative backfilling, the knapsacks, Python policies, and
  EASY while an online predictor stops the run at every instant), where jobs started as a prefix only move
  ``head`` and an insertion shifts the shorter side;
* the same sorted run with gaps, ``queue[head:head + span]``, under EASY: a size index (policies/fit_index.py)
  follows every move, and a started job stays as a gap (its leaf says so) until gaps outnumber the jobs;
* a binary min-heap ``queue[:qlen]`` on (key, job index) for passes without backfilling, which only ever read
  a prefix of the order up to the first job that does not fit: the kernel pops that prefix (O(log n) a job)
  instead of keeping the whole queue sorted (an insertion into a sorted 290k-job ljf queue shifts ~70k
  entries; measured in bench/queue_scaling.py).
"""

from __future__ import annotations

from numba import njit

from wattsched.policies.fit_index import NO_FIT, fit_fix


@njit(cache=True)
def queue_position(queue, head, span, key, j):
    """Where job j is, or would be inserted, in ``queue[head:head + span]`` (sorted by (key, job index), gaps
    included)."""
    lo = head
    hi = head + span
    kj = key[j]
    while lo < hi:
        mid = (lo + hi) // 2
        q = queue[mid]
        if key[q] < kj or (key[q] == kj and q < j):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def queue_insert(queue, head, qlen, key, j, fit, size_j):
    """Insert job j (of ``size_j`` units) into ``queue[head:head + qlen]`` keeping it sorted by (key, job index);
    returns the new (head, qlen). Appends in O(1) when j sorts last; otherwise shifts the shorter side (towards
    the free slots before ``head`` when there are some), which halves the moves of sorted orders (measured in
    bench/queue_scaling.py). Room: head + qlen never exceeds the number of jobs inserted so far. A non-empty
    ``fit`` (the size index, policies/fit_index.py) has its leaves moved alongside."""
    use = fit.shape[0] > 0
    tail = head + qlen
    if qlen == 0 or key[queue[tail - 1]] < key[j] or (key[queue[tail - 1]] == key[j] and queue[tail - 1] < j):
        queue[tail] = j
        if use:
            fit[tail] = size_j
            fit_fix(fit, tail, tail + 1)
        return head, qlen + 1
    lo = queue_position(queue, head, qlen, key, j)
    if head > 0 and lo - head < tail - lo:
        for x in range(head, lo):
            queue[x - 1] = queue[x]
        queue[lo - 1] = j
        if use:
            for x in range(head, lo):
                fit[x - 1] = fit[x]
            fit[lo - 1] = size_j
            fit_fix(fit, head - 1, lo)
        return head - 1, qlen + 1
    for x in range(tail, lo, -1):
        queue[x] = queue[x - 1]
    queue[lo] = j
    if use:
        for x in range(tail, lo, -1):
            fit[x] = fit[x - 1]
        fit[lo] = size_j
        fit_fix(fit, lo, tail + 1)
    return head, qlen + 1


@njit(cache=True)
def drop_started(queue, head, qlen, queued, ns):
    """Remove the jobs just started from ``queue[head:head + qlen]``; returns the new (head, qlen).

    Without backfilling the started jobs are the queue's first ``ns`` entries: the head index moves past them
    in O(ns). Only when a started job lies further on (backfilling) is the queue compacted, from that job on (the
    compaction had been done on every pass: 2.78 B moves for fcfs at 300k jobs). A queue with a size index
    leaves gaps instead (:func:`bury_started`)."""
    tail = head + qlen
    p = 0
    while p < ns and p < qlen and not queued[queue[head + p]]:
        p += 1
    head += p
    qlen -= p
    if p < ns:
        r = head
        while r < tail and queued[queue[r]]:  # the jobs before the first one started stay where they are
            r += 1
        w = r
        for x in range(r, tail):
            if queued[queue[x]]:
                queue[w] = queue[x]
                w += 1
        qlen = w - head
    if qlen == 0:
        head = 0
    return head, qlen


@njit(cache=True)
def bury_started(queue, head, span, key, started, ns, fit):
    """With a size index (policies/fit_index.py): the jobs ``started[:ns]`` stay in ``queue[head:head + span]``
    as gaps (their leaves become ``NO_FIT``: no pass starts them again, and the order of the others is unchanged),
    and ``head`` moves past the gaps at the front; returns the new (head, span). No compaction: moving the jobs
    after a backfilled one, and their leaves, cost EASY more than the index saved it (bench/queue_scaling.py);
    :func:`compact_live` removes the gaps once they outnumber the jobs."""
    for d in range(ns):
        x = queue_position(queue, head, span, key, started[d])
        fit[x] = NO_FIT
        fit_fix(fit, x, x + 1)
    while span > 0 and fit[head] == NO_FIT:
        head += 1
        span -= 1
    if span == 0:
        head = 0
    return head, span


@njit(cache=True)
def compact_live(queue, head, span, fit):
    """Move the jobs of ``queue[head:head + span]`` that are not gaps (their leaf in ``fit`` is not ``NO_FIT``)
    to the array's start, in order, their leaves with them, and fix the index; returns how many."""
    w = 0
    for x in range(head, head + span):
        if fit[x] != NO_FIT:
            queue[w] = queue[x]
            fit[w] = fit[x]
            w += 1
    for x in range(w, head + span):
        fit[x] = NO_FIT
    fit_fix(fit, 0, head + span)
    return w


@njit(cache=True)
def queue_to_front(queue, head, qlen):
    """Move ``queue[head:head + qlen]`` to the array's start: the state kept between calls has head 0."""
    if head > 0:
        for x in range(qlen):
            queue[x] = queue[head + x]


@njit(cache=True)
def _before(key, a, b):
    return key[a] < key[b] or (key[a] == key[b] and a < b)


@njit(cache=True)
def qheap_push(heap, size, key, j):
    """Add job j to the min-heap ``heap[:size]`` on (key, job index); returns the new size."""
    i = size
    while i > 0:
        p = (i - 1) // 2
        if not _before(key, j, heap[p]):
            break
        heap[i] = heap[p]
        i = p
    heap[i] = j
    return size + 1


@njit(cache=True)
def qheap_pop(heap, size, key):
    """Remove the first job (the caller read ``heap[0]``); returns the new size."""
    size -= 1
    last = heap[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _before(key, heap[c + 1], heap[c]):
            c += 1
        if not _before(key, heap[c], last):
            break
        heap[i] = heap[c]
        i = c
    if size > 0:
        heap[i] = last
    return size
