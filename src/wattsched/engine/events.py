"""The completion events and the running list of the compiled event loop (``engine/kernel.py``), in numba.

``event_push``/``event_pop``: a binary min-heap of (true end time, job) in two arrays, the kernel's next
completion; ``running_remove``: drop a job from the running list sorted by its *estimated* end (what the policy
sees). Kept apart from the loop so that ``kernel.py`` stays one readable function and its helpers.
"""

from __future__ import annotations

from numba import njit

from wattsched.policies.sorted_pairs import lower_bound


@njit(cache=True)
def event_push(ht, hj, hs, t, j):
    i = hs
    ht[i] = t
    hj[i] = j
    while i > 0:
        p = (i - 1) // 2
        if ht[p] <= ht[i]:
            break
        ht[p], ht[i] = ht[i], ht[p]
        hj[p], hj[i] = hj[i], hj[p]
        i = p
    return hs + 1


@njit(cache=True)
def event_pop(ht, hj, hs):
    """Remove the root; return the new size (the caller read ht[0], hj[0] first)."""
    hs -= 1
    ht[0] = ht[hs]
    hj[0] = hj[hs]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= hs:
            break
        if c + 1 < hs and ht[c + 1] < ht[c]:
            c += 1
        if ht[i] <= ht[c]:
            break
        ht[c], ht[i] = ht[i], ht[c]
        hj[c], hj[i] = hj[i], hj[c]
        i = c
    return hs


@njit(cache=True)
def running_remove(run_end, run_job, rc, e, j):
    lo = lower_bound(run_end, rc, e)
    while run_job[lo] != j:
        lo += 1
    for x in range(lo, rc - 1):
        run_end[x] = run_end[x + 1]
        run_job[x] = run_job[x + 1]
    return rc - 1
