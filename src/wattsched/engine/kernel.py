"""The event loop, compiled with numba: the only code that reads true runtimes.

Semantics (docs/semantics.md §1):

* an instant's events are applied together — every completion, then every submission — and the policy then runs
  once;
* a job started with zero duration completes at its start instant as a new event at that same instant (so the
  policy runs again at that instant, after the completion);
* the run duration of a job is min(runtime, walltime): jobs are killed at their walltime;
* every decision is validated (the job is queued and fits in the free units); an illegal one stops the run with
  an error code that the Python layer turns into a message.

All state lives in arrays passed in, so a run can be sliced into chunks (for a progress bar) and resumed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from wattsched.engine.job_queue import drop_started, qheap_pop, qheap_push, queue_insert, queue_to_front
from wattsched.policies.conservative import POL_SIZE, conservative_pass
from wattsched.policies.queue_policies import (
    BACKFILL_CONSERVATIVE,
    BACKFILL_NONE,
    KNAPSACK_EXACT_WAIT,
    PF_KNAPSACK_END,
    SUM_M,
    SUM_MAX,
    SUM_S2,
    queue_pass,
)
from wattsched.policies.sorted_pairs import insert_pair, lower_bound

# Indices into the integer state vector.
ST_FREE = 0
ST_NEXT_SUB = 1
ST_HEAP = 2
ST_QLEN = 3
ST_RUNNING = 4
ST_ERROR = 5
ST_ERROR_JOB = 6
ST_PASSES = 7
ST_MAX_QLEN = 8
ST_FINISHED = 9
ST_PENDING = 10
ST_DECISIONS = 11
ST_CAP_NEXT = 12
ST_PREDICT = 13  # 1: stop at every instant with submissions, after its completions, for an online predictor
ST_PRED_PENDING = 14  # set when stopped that way; the next call resumes with the instant's submissions
ST_DONE = 15  # number of completions logged in ``done_log``
ST_SIZE = 16

#: ``backfill`` code meaning "the decisions come from Python": the loop returns at every pass.
EXTERNAL = -1

ERR_NONE = 0
ERR_NOT_QUEUED = 1
ERR_NO_ROOM = 2
ERR_PRESTART_NO_ROOM = 3  # a job that was already running at a window's start does not fit at t = 0


class KernelState:
    """The arrays of one run; plain numpy, so the loop can stop and resume anywhere."""

    def __init__(self, n: int, machine_size: int) -> None:
        self.st = np.zeros(ST_SIZE, dtype=np.int64)
        self.st[ST_FREE] = machine_size
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.first_reservation = np.full(n, np.nan)
        self.reservation = np.full(n, np.nan)
        self.heap_t = np.empty(n, dtype=np.float64)
        self.heap_j = np.empty(n, dtype=np.int64)
        self.queue = np.empty(n, dtype=np.int64)
        self.queued = np.zeros(n, dtype=np.bool_)
        self.run_end = np.empty(n, dtype=np.float64)
        self.run_job = np.empty(n, dtype=np.int64)
        self.side_end = np.empty(n, dtype=np.float64)
        self.side_job = np.empty(n, dtype=np.int64)
        self.out = np.empty(n, dtype=np.int64)
        # conservative backfilling's persistent profile and reservation list, and the completions it has not seen
        self.prof_t = np.empty(8 * n + 8, dtype=np.float64)
        self.prof_a = np.empty(8 * n + 8, dtype=np.int64)
        self.pol = np.zeros(POL_SIZE, dtype=np.int64)  # counts, then the operation counters (conservative.py)
        self.res_t = np.empty(n, dtype=np.float64)
        self.res_j = np.empty(n, dtype=np.int64)
        self.finished = np.empty(n, dtype=np.int64)
        self.done_log = np.empty(n, dtype=np.int64)  # every completion, in order (for online predictors)
        self.assumed_end = np.full(n, np.nan)
        self.now = np.zeros(1)  # the instant of a pass handed to Python
        # the policy's power bookkeeping: Σ mean, Σ max and Σ σ² of the running jobs' estimates
        self.sums = np.zeros(3)
        self.shadow_sums = np.zeros(3)


@njit(cache=True)
def _heap_push(ht, hj, hs, t, j):
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
def _heap_pop(ht, hj, hs):
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
def _running_remove(run_end, run_job, rc, e, j):
    lo = lower_bound(run_end, rc, e)
    while run_job[lo] != j:
        lo += 1
    for x in range(lo, rc - 1):
        run_end[x] = run_end[x + 1]
        run_job[x] = run_job[x + 1]
    return rc - 1


@njit(cache=True)
def _apply(
    now,
    ns,
    out,
    n,
    queued,
    size,
    walltime,
    estimate,
    runtime,
    free,
    start,
    end,
    heap_t,
    heap_j,
    hs,
    run_end,
    run_job,
    rc,
    st,
    sums,
    est_m,
    est_max,
    est_s,
):
    """Validate and apply a pass's decisions; returns (free, hs, rc, ok). On a refusal ``st`` says why."""
    for d in range(ns):
        j = out[d]
        if j < 0 or j >= n or not queued[j]:
            st[ST_ERROR] = ERR_NOT_QUEUED
            st[ST_ERROR_JOB] = j
            return free, hs, rc, False
        if size[j] > free:
            st[ST_ERROR] = ERR_NO_ROOM
            st[ST_ERROR_JOB] = j
            return free, hs, rc, False
        queued[j] = False
        free -= size[j]
        start[j] = now
        duration = runtime[j] if runtime[j] < walltime[j] else walltime[j]
        end[j] = now + duration
        hs = _heap_push(heap_t, heap_j, hs, now + duration, j)
        rc = insert_pair(run_end, run_job, rc, now + estimate[j], j)
        sums[SUM_M] += est_m[j]
        sums[SUM_MAX] += est_max[j]
        sums[SUM_S2] += est_s[j] * est_s[j]
    return free, hs, rc, True


@njit(cache=True)
def run_kernel(
    backfill,
    submit,
    size,
    walltime,
    estimate,
    runtime,
    key,
    stop_after_submissions,
    st,
    start,
    end,
    first_reservation,
    reservation,
    heap_t,
    heap_j,
    queue,
    queued,
    run_end,
    run_job,
    side_end,
    side_job,
    out,
    prof_t,
    prof_a,
    pol,
    res_t,
    res_j,
    finished,
    assumed_end,
    clock,
    pcfg,
    pf,
    sums,
    shadow_sums,
    est_m,
    est_max,
    est_s,
    cap_t,
    cap_v,
    done_log,
    prestart,
):
    """Advance the simulation until all jobs ended, or until ``stop_after_submissions`` jobs were submitted
    and the current instant is fully processed, or (``backfill == EXTERNAL``) until a pass is due: then
    ``st[ST_PENDING]`` is set, ``clock[0]`` holds the instant, and the next call first applies the
    ``st[ST_DECISIONS]`` decisions written to ``out``. With ``st[ST_PREDICT]`` set, it also stops at every
    instant with submissions once that instant's completions are done (``st[ST_PRED_PENDING]``, ``clock[0]``),
    so that an online predictor can learn from them and fill in the estimates of the jobs about to be
    submitted; the next call goes on with the submissions. A job with ``prestart`` set starts at its submit
    instant without a policy decision (a job already running when a workload window opens); it is an error if
    it does not fit. Returns True when the run is complete."""
    n = submit.shape[0]
    free = st[ST_FREE]
    nxt = st[ST_NEXT_SUB]
    hs = st[ST_HEAP]
    qlen = st[ST_QLEN]
    head = 0  # the queue is queue[head:head + qlen] inside this call, queue[:qlen] between calls
    # without backfilling the queue is a heap (engine/job_queue.py); a pass sees its popped prefix in ``buf``
    # (when the keys never decrease along the submission order, as FCFS's, every arrival appends in O(1) and
    # the sorted run is cheaper: 0.97 vs 2.27 CPU s for fcfs on 1 M Lublin jobs)
    heap_mode = False
    if backfill == BACKFILL_NONE:
        for x in range(1, n):
            if key[x] < key[x - 1]:
                heap_mode = True
                break
    buf = np.empty(n if heap_mode else 0, dtype=np.int64)
    rc = st[ST_RUNNING]
    passes = st[ST_PASSES]
    max_q = st[ST_MAX_QLEN]
    fc = st[ST_FINISHED]
    if st[ST_PENDING]:
        st[ST_PENDING] = 0
        now = clock[0]
        fc = 0
        free, hs, rc, ok = _apply(
            now,
            st[ST_DECISIONS],
            out,
            n,
            queued,
            size,
            walltime,
            estimate,
            runtime,
            free,
            start,
            end,
            heap_t,
            heap_j,
            hs,
            run_end,
            run_job,
            rc,
            st,
            sums,
            est_m,
            est_max,
            est_s,
        )
        if not ok:
            return True
        if st[ST_DECISIONS] > 0:
            head, qlen = drop_started(queue, head, qlen, queued, st[ST_DECISIONS])
    pending = False
    pred_pending = False
    resume = st[ST_PRED_PENDING] == 1
    st[ST_PRED_PENDING] = 0
    nd = st[ST_DONE]
    ncap = cap_t.shape[0]
    cnext = st[ST_CAP_NEXT]
    # cap changes are timer events: they matter while jobs wait (a rising cap may unblock them)
    while nxt < n or hs > 0 or (qlen > 0 and cnext < ncap):
        if resume:  # the instant's completions are done: go on with its submissions
            resume = False
            now = clock[0]
        else:
            if nxt >= stop_after_submissions and nxt < n:
                break
            now = math.inf
            if hs > 0:
                now = heap_t[0]
            if nxt < n and submit[nxt] < now:
                now = submit[nxt]
            if qlen > 0 and cnext < ncap and cap_t[cnext] < now:
                now = cap_t[cnext]
            while cnext < ncap and cap_t[cnext] <= now:
                cnext += 1
            # 1. every completion at this instant
            while hs > 0 and heap_t[0] == now:
                j = heap_j[0]
                hs = _heap_pop(heap_t, heap_j, hs)
                free += size[j]
                rc = _running_remove(run_end, run_job, rc, start[j] + estimate[j], j)
                finished[fc] = j
                fc += 1
                done_log[nd] = j
                nd += 1
                if rc == 0:
                    sums[:] = 0.0  # exact zero when nothing runs: no drift from float additions and removals
                else:
                    sums[SUM_M] -= est_m[j]
                    sums[SUM_MAX] -= est_max[j]
                    sums[SUM_S2] -= est_s[j] * est_s[j]
            if st[ST_PREDICT] == 1 and nxt < n and submit[nxt] == now:
                pred_pending = True
                clock[0] = now
                break
        # 2. every submission at this instant (jobs already running at a window's start just start)
        while nxt < n and submit[nxt] == now:
            queued[nxt] = True
            if prestart[nxt]:
                if size[nxt] > free:
                    st[ST_ERROR] = ERR_PRESTART_NO_ROOM
                    st[ST_ERROR_JOB] = nxt
                    return True
                out[0] = nxt
                free, hs, rc, ok = _apply(
                    now,
                    1,
                    out,
                    n,
                    queued,
                    size,
                    walltime,
                    estimate,
                    runtime,
                    free,
                    start,
                    end,
                    heap_t,
                    heap_j,
                    hs,
                    run_end,
                    run_job,
                    rc,
                    st,
                    sums,
                    est_m,
                    est_max,
                    est_s,
                )
            else:
                if heap_mode:
                    qlen = qheap_push(queue, qlen, key, nxt)
                else:
                    head, qlen = queue_insert(queue, head, qlen, key, nxt)
            nxt += 1
        if qlen > max_q:
            max_q = qlen
        if qlen == 0:
            continue
        # 3. the policy, once, on the view (no true runtimes among its arguments)
        passes += 1
        if backfill == EXTERNAL or (backfill >= KNAPSACK_EXACT_WAIT and now < pf[PF_KNAPSACK_END]):
            pending = True
            clock[0] = now
            break
        if heap_mode:
            # The pass starts jobs in order while they fit and stops at the first that does not, so it only reads
            # a prefix: pop 8, 16, 32, ... jobs into ``buf`` and run the pass on the part not started yet until it
            # stops before the end of what was popped. Applying its decisions between the rounds updates free units
            # and power sums by the same additions in the same order as one pass over the whole queue would.
            fc = 0
            base = 0
            m = 0
            want = 8
            peek = True  # first round: the first job alone, left in the heap (most passes start nothing)
            while True:
                if peek:
                    buf[0] = queue[0]
                    m = 1
                while m < want and qlen > 0 and not peek:
                    buf[m] = queue[0]
                    qlen = qheap_pop(queue, qlen, key)
                    m += 1
                ns = queue_pass(
                    backfill,
                    now,
                    buf[base:m],
                    m - base,
                    free,
                    run_end,
                    run_job,
                    rc,
                    start,
                    size,
                    estimate,
                    walltime,
                    first_reservation,
                    side_end,
                    side_job,
                    out,
                    pcfg,
                    pf,
                    sums,
                    est_m,
                    est_max,
                    est_s,
                    cap_t,
                    cap_v,
                    shadow_sums,
                    submit,
                )
                free, hs, rc, ok = _apply(
                    now,
                    ns,
                    out,
                    n,
                    queued,
                    size,
                    walltime,
                    estimate,
                    runtime,
                    free,
                    start,
                    end,
                    heap_t,
                    heap_j,
                    hs,
                    run_end,
                    run_job,
                    rc,
                    st,
                    sums,
                    est_m,
                    est_max,
                    est_s,
                )
                if not ok:
                    return True
                base += ns
                if peek:
                    peek = False
                    if ns == 0:
                        m = 0  # nothing popped: nothing to push back
                        base = 0
                        break
                    qlen = qheap_pop(queue, qlen, key)  # the first job started: take it out of the heap
                if base < m or qlen == 0:
                    break
                want = 2 * m
            for x in range(base, m):
                qlen = qheap_push(queue, qlen, key, buf[x])
            continue
        if backfill == BACKFILL_CONSERVATIVE:
            ns = conservative_pass(
                now,
                queue[head : head + qlen],
                qlen,
                free,
                run_end,
                run_job,
                rc,
                start,
                size,
                estimate,
                walltime,
                reservation,
                first_reservation,
                side_end,
                side_job,
                out,
                prof_t,
                prof_a,
                pol,
                res_t,
                res_j,
                finished,
                fc,
                assumed_end,
            )
        else:
            ns = queue_pass(
                backfill,
                now,
                queue[head : head + qlen],
                qlen,
                free,
                run_end,
                run_job,
                rc,
                start,
                size,
                estimate,
                walltime,
                first_reservation,
                side_end,
                side_job,
                out,
                pcfg,
                pf,
                sums,
                est_m,
                est_max,
                est_s,
                cap_t,
                cap_v,
                shadow_sums,
                submit,
            )
        fc = 0
        # 4. validate and apply the decisions
        free, hs, rc, ok = _apply(
            now,
            ns,
            out,
            n,
            queued,
            size,
            walltime,
            estimate,
            runtime,
            free,
            start,
            end,
            heap_t,
            heap_j,
            hs,
            run_end,
            run_job,
            rc,
            st,
            sums,
            est_m,
            est_max,
            est_s,
        )
        if not ok:
            return True
        if ns > 0:
            head, qlen = drop_started(queue, head, qlen, queued, ns)
    queue_to_front(queue, head, qlen)
    st[ST_FREE] = free
    st[ST_NEXT_SUB] = nxt
    st[ST_HEAP] = hs
    st[ST_QLEN] = qlen
    st[ST_RUNNING] = rc
    st[ST_PASSES] = passes
    st[ST_MAX_QLEN] = max_q
    st[ST_FINISHED] = fc
    st[ST_CAP_NEXT] = cnext
    st[ST_DONE] = nd
    if pred_pending:
        st[ST_PRED_PENDING] = 1
        return False
    if pending:
        st[ST_PENDING] = 1
        return False
    return nxt >= n and hs == 0
