"""The event loop, compiled with numba: the only code that reads true runtimes.

Semantics (docs/semantics.md §1):

* an instant's events are applied together — every completion, then every submission — and the policy then runs
  once;
* a job started with zero duration completes at its start instant as a new event at that same instant (so the
  policy runs again at that instant, after the completion);
* the run duration of a job is min(runtime, kill limit): jobs are killed at their walltime plus the run's grace
  (``kill_grace``, 0 by default; Slurm's OverTimeLimit);
* every decision is validated (the job is queued and fits in the free units); an illegal one stops the run with
  an error code that the Python layer turns into a message.

All state lives in arrays passed in, so a run can be sliced into chunks (for a progress bar) and resumed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, objmode

from wattsched.engine.compiled_pass import compiled_pass, view_snapshots
from wattsched.engine.events import event_pop, event_push, running_remove
from wattsched.engine.job_queue import (
    bury_started,
    compact_live,
    drop_started,
    qheap_pop,
    qheap_push,
    queue_insert,
    queue_to_front,
)
from wattsched.engine.kernel_state import (
    ERR_NO_ROOM,
    ERR_NOT_QUEUED,
    ERR_POLICY_FAILED,
    ERR_PRESTART_NO_ROOM,
    EXTERNAL,
    EXTERNAL_COMPILED,
    ST_CAP_NEXT,
    ST_DECISIONS,
    ST_DONE,
    ST_ERROR,
    ST_ERROR_JOB,
    ST_FINISHED,
    ST_FREE,
    ST_HEAP,
    ST_MAX_QLEN,
    ST_NEXT_SUB,
    ST_PASSES,
    ST_PENDING,
    ST_PRED_PENDING,
    ST_PREDICT,
    ST_QLEN,
    ST_RUNNING,
)
from wattsched.engine.python_pass import external_pass
from wattsched.policies.conservative import conservative_pass
from wattsched.policies.fit_index import MIN_LEAVES, fit_build, fit_leaves, fit_leaves_for
from wattsched.policies.queue_policies import (
    BACKFILL_CONSERVATIVE,
    BACKFILL_EASY,
    BACKFILL_NONE,
    KNAPSACK_EXACT_WAIT,
    PF_KNAPSACK_END,
    SUM_M,
    SUM_MAX,
    SUM_S2,
    prefix_pass,
    queue_pass,
)
from wattsched.policies.sorted_pairs import insert_pair

#: The order of :func:`run_kernel`'s ``job_arrays``: the workload, as the engine sees it.
JOB_ARRAYS = ("submit", "size", "kill_limit", "estimate", "runtime", "key", "prestart")
#: The order of :func:`run_kernel`'s ``power_arrays``: the power check's configuration and the estimates.
POWER_ARRAYS = ("pcfg", "pf", "sums", "shadow_sums", "est_m", "est_max", "est_s", "cap_t", "cap_v")


@njit(cache=True)
def _apply(now, ns, out, n, queued, jobs, free, start, end, running, hs, rc, st, power):
    """Validate and apply a pass's decisions; returns (free, hs, rc, ok). On a refusal ``st`` says why.
    ``jobs``, ``running`` and ``power`` are the bundles :func:`run_kernel` makes (see there)."""
    size, walltime, estimate, runtime = jobs
    heap_t, heap_j, run_end, run_job = running
    sums, est_m, est_max, est_s = power
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
        hs = event_push(heap_t, heap_j, hs, now + duration, j)
        rc = insert_pair(run_end, run_job, rc, now + estimate[j], j)
        sums[SUM_M] += est_m[j]
        sums[SUM_MAX] += est_max[j]
        sums[SUM_S2] += est_s[j] * est_s[j]
    return free, hs, rc, True


@njit(cache=True)
def _python_pass(now, free, queue, qlen, running, rc, start, finished, fc, sums):
    """A Python policy's pass (:func:`~wattsched.engine.python_pass.external_pass`), out of ``run_kernel``: numba
    copies the serialized function around an ``objmode`` block at every call, and inside ``run_kernel`` that copy
    (its whole body) had cost 10 µs a pass. The view's snapshots are made here, two fresh arrays (positions:
    queue, running, finished; times: expected ends, starts) that Python only slices: 2 µs a pass less than
    copying five arrays from Python."""
    ints, times = view_snapshots(queue, qlen, running, rc, start, finished, fc)
    return _call_python(now, free, qlen, rc, ints, times, sums[SUM_M], sums[SUM_MAX], sums[SUM_S2])


@njit(cache=True)
def _call_python(now, free, qlen, rc, ints, times, s_m, s_max, s_s2):
    """The ``objmode`` call alone: numba unpickles the serialized function around the block at every call, so the
    smaller the function, the cheaper (1.6 µs a pass less than with the snapshots' filling in it)."""
    with objmode(ns="int64"):
        ns = external_pass(now, free, qlen, rc, ints, times, (s_m, s_max, s_s2))
    return ns


@njit(cache=True)
def run_kernel(backfill, job_arrays, stop_after_submissions, state, power_arrays):
    """Advance the simulation until all jobs ended, or until ``stop_after_submissions`` jobs were submitted
    and the current instant is fully processed, or (an exact knapsack in its window) until a pass is due: then
    ``st[ST_PENDING]`` is set, ``clock[0]`` holds the instant, and the next call first applies the
    ``st[ST_DECISIONS]`` decisions written to ``out``. With ``st[ST_PREDICT]`` set, it also stops at every
    instant with submissions once that instant's completions are done (``st[ST_PRED_PENDING]``, ``clock[0]``),
    so that an online predictor can learn from them and fill in the estimates of the jobs about to be
    submitted; the next call goes on with the submissions. With ``backfill == EXTERNAL`` the loop hands each pass
    to the Python policy that :func:`~wattsched.engine.python_pass.handing_passes_to` names, without returning;
    with ``backfill == EXTERNAL_COMPILED`` it calls a compiled policy through the address in ``ext``
    (:mod:`wattsched.engine.compiled_pass`). A
    job with ``prestart`` set starts at its submit instant without a policy decision (a job already running when a
    workload window opens); it is an error if it does not fit. Returns True when the run is complete.

    The arguments come in three bundles (tuples, unpacked here at no cost: numba passes them as structs), in the
    orders :data:`JOB_ARRAYS`, :data:`~wattsched.engine.kernel_state.STATE_ARRAYS` (``KernelState.arrays()``) and
    :data:`POWER_ARRAYS` name; ``walltime`` is where a job is killed (its walltime plus any grace)."""
    submit, size, walltime, estimate, runtime, key, prestart = job_arrays
    (
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
        done_log,
        ext,
    ) = state
    pcfg, pf, sums, shadow_sums, est_m, est_max, est_s, cap_t, cap_v = power_arrays
    # what a pass's decisions are applied with (_apply): the jobs' sizes and times, the running set, the power sums
    jobs = (size, walltime, estimate, runtime)
    running = (heap_t, heap_j, run_end, run_job)
    power = (sums, est_m, est_max, est_s)
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
            now, st[ST_DECISIONS], out, n, queued, jobs, free, start, end, running, hs, rc, st, power
        )
        if not ok:
            return True
        if st[ST_DECISIONS] > 0:
            head, qlen = drop_started(queue, head, qlen, queued, st[ST_DECISIONS])
    # EASY's backfill scan finds the jobs that fit through a size index over the queue (policies/fit_index.py);
    # rebuilt at every call, so not when the run stops at every instant for an online predictor. With the index,
    # started jobs stay in the array as gaps: the queue is queue[head:head + span], of which qlen are waiting.
    # The index has a position for every job this call can insert (those submitted up to the end of the instant
    # of the chunk's last job), so it is never reallocated in the loop: an array variable reassigned in the loop
    # made every pass slower, fcfs on 1 M jobs 0.99 → 1.22 CPU s, although fcfs has no index.
    indexed = backfill == BACKFILL_EASY and st[ST_PREDICT] == 0
    fit = np.empty(0, np.int32)
    if indexed:
        stop = min(n, stop_after_submissions)
        last = nxt if stop <= nxt else np.searchsorted(submit, submit[stop - 1], side="right")
        fit = fit_build(queue, head, qlen, size, fit_leaves_for(head + qlen + (last - nxt) + 1))
    span = qlen
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
                hs = event_pop(heap_t, heap_j, hs)
                free += size[j]
                rc = running_remove(run_end, run_job, rc, start[j] + estimate[j], j)
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
                free, hs, rc, ok = _apply(now, 1, out, n, queued, jobs, free, start, end, running, hs, rc, st, power)
            else:
                if heap_mode:
                    qlen = qheap_push(queue, qlen, key, nxt)
                elif indexed:
                    if head + span >= fit_leaves(fit):  # cannot happen (see the index's size above)
                        raise AssertionError("the queue's size index has no room for a submission")
                    head, span = queue_insert(queue, head, span, key, nxt, fit, size[nxt])
                    qlen += 1
                else:
                    head, qlen = queue_insert(queue, head, qlen, key, nxt, fit, 0)
            nxt += 1
        if qlen > max_q:
            max_q = qlen
        if qlen == 0:
            continue
        # 3. the policy, once, on the view (no true runtimes among its arguments)
        passes += 1
        if backfill >= KNAPSACK_EXACT_WAIT and now < pf[PF_KNAPSACK_END]:
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
                ns = prefix_pass(
                    now, buf[base:m], m - base, free, size, out, pcfg, pf, sums, est_m, est_max, est_s, cap_t, cap_v
                )
                free, hs, rc, ok = _apply(now, ns, out, n, queued, jobs, free, start, end, running, hs, rc, st, power)
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
        if backfill == EXTERNAL:
            # a Python policy, called from the loop (engine/python_pass.py): returning to Python at every pass
            # and re-entering cost 8 µs a pass in numba's dispatch alone, this call about 4 µs (issue 32)
            ns = _python_pass(
                now, free, queue[head : head + qlen], qlen, (run_end, run_job), rc, start, finished, fc, sums
            )
        elif backfill == EXTERNAL_COMPILED:
            # a compiled Python policy, called through its address (engine/compiled_pass.py)
            ns = compiled_pass(
                ext,
                now,
                free,
                queue[head : head + qlen],
                qlen,
                (run_end, run_job),
                rc,
                start,
                finished,
                fc,
                sums,
                cap_t,
                cap_v,
                out,
            )
            if ns < 0 or ns > qlen:
                st[ST_ERROR] = ERR_POLICY_FAILED
                st[ST_ERROR_JOB] = ns
                clock[0] = now
                return True
        elif backfill == BACKFILL_CONSERVATIVE:
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
        elif backfill == BACKFILL_NONE:
            view = queue[head : head + qlen]
            ns = prefix_pass(now, view, qlen, free, size, out, pcfg, pf, sums, est_m, est_max, est_s, cap_t, cap_v)
        else:
            ns = queue_pass(
                backfill,
                now,
                queue[head : head + span] if indexed else queue[head : head + qlen],
                span if indexed else qlen,
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
                fit,
                head,
            )
        fc = 0
        # 4. validate and apply the decisions
        free, hs, rc, ok = _apply(now, ns, out, n, queued, jobs, free, start, end, running, hs, rc, st, power)
        if not ok:
            return True
        if ns > 0:
            if indexed:
                head, span = bury_started(queue, head, span, key, out, ns, fit)
                qlen -= ns
                if span > 2 * qlen + MIN_LEAVES:  # more gaps than jobs: close them (amortised O(1) a start)
                    span = compact_live(queue, head, span, fit)
                    head = 0
            else:
                head, qlen = drop_started(queue, head, qlen, queued, ns)
    if indexed:
        compact_live(queue, head, span, fit)  # between calls: queue[:qlen], no gaps
    else:
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
