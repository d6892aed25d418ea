"""A compiled Python policy for `wattsched simulate --policy examples/easy_compiled.py:CompiledEasy`
(docs/single-runs.md, "Compiled policies").

EASY backfilling (docs/semantics.md §3.1) written as `schedule_into(view, out)`: a static method that numba
compiles and the simulation loop calls without returning to Python, 10-30× faster than the same policy as
`schedule(view)` (docs/performance.md, "Policies written in Python"). It schedules exactly as the built-in `easy`
(tests/test_compiled_policy.py checks it on KTH-SP2 and RICC). It writes the positions of the jobs to start into
`out` and returns their count; the view has the attributes of wattsched.core.policy.View.
"""

import numpy as np

from wattsched.core.policy import CompiledPolicyBase


class CompiledEasy(CompiledPolicyBase):
    name = "compiled-easy"

    @staticmethod
    def schedule_into(view, out):
        jobs, now, free, queue = view.jobs, view.now, view.free, view.queue
        k = 0
        # the head of the queue and every job after it that fits, in order, start now
        while k < queue.shape[0] and jobs.size[queue[k]] <= free:
            out[k] = queue[k]
            free -= jobs.size[queue[k]]
            k += 1
        if k == queue.shape[0]:
            return k
        head = queue[k]
        # the head's reservation (the shadow time): when enough units free up, jobs started now included; a job
        # past its expected end is expected at its walltime
        rc = view.running.shape[0]
        ends = np.empty(k + rc)
        sizes = np.empty(k + rc, dtype=np.int64)
        for i in range(k):
            ends[i] = now + jobs.estimate[out[i]]
            sizes[i] = jobs.size[out[i]]
        for r in range(rc):
            pos = view.running[r]
            end = view.running_expected_end[r]
            ends[k + r] = end if end > now else view.running_start[r] + jobs.walltime[pos]
            sizes[k + r] = jobs.size[pos]
        avail, shadow = free, np.inf
        for i in np.argsort(ends, kind="mergesort"):
            if shadow < np.inf and ends[i] > shadow:
                break
            avail += sizes[i]
            if shadow == np.inf and avail >= jobs.size[head]:
                shadow = ends[i]
        extra = avail - jobs.size[head]
        # backfill: a later job starts if it ends by the shadow time or fits in the units the head leaves over
        for q in range(k + 1, queue.shape[0]):
            if free == 0:
                break
            pos = queue[q]
            size = jobs.size[pos]
            if size > free:
                continue
            in_time = now + jobs.estimate[pos] <= shadow
            if in_time or size <= extra:
                out[k] = pos
                k += 1
                free -= size
                if not in_time:
                    extra -= size
        return k
