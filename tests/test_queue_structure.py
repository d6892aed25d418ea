"""The kernel's queue (head index, two-sided sorted insertion, prefix drops) against a plain sorted list.

The queue order is all a pass sees of the queue, so the same order after every operation means the same
schedules; the engine-level check (compiled engine vs the naive reference simulator) runs on a RICC prefix,
where queues are long and the head index moves, unlike the tiny hypothesis workloads of test_engine_properties.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import require_data
from reference_sim import RefJob, simulate_reference
from wattsched.engine.job_queue import drop_started as _drop_started
from wattsched.engine.job_queue import qheap_pop, qheap_push
from wattsched.engine.job_queue import queue_insert as _queue_insert
from wattsched.engine.job_queue import queue_to_front as _queue_to_front
from wattsched.engine.simulate import simulate
from wattsched.workload.swf.reader import read_swf

# one step: ("insert", key) or ("start", how many from the front, which others by position)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.sampled_from([0.0, 1.0, 2.0, 2.0, 3.0, -1.0])),
        st.tuples(st.just("start"), st.integers(0, 4), st.lists(st.integers(0, 30), max_size=3)),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(STEPS)
def test_queue_operations_keep_the_plain_sorted_order(steps: list[tuple]) -> None:
    n = sum(1 for s in steps if s[0] == "insert")
    key = np.array([s[1] for s in steps if s[0] == "insert"], dtype=np.float64)
    queue = np.full(max(n, 1), -7, dtype=np.int64)
    queued = np.zeros(max(n, 1), dtype=np.bool_)
    head, qlen, nxt = 0, 0, 0
    model: list[int] = []
    for step in steps:
        if step[0] == "insert":
            head, qlen = _queue_insert(queue, head, qlen, key, nxt)
            queued[nxt] = True
            model.append(nxt)
            model.sort(key=lambda j: (key[j], j))  # the old invariant: sorted by (key, job index)
            nxt += 1
        else:
            prefix = model[: step[1]]
            others = [model[p] for p in step[2] if p < len(model) and model[p] not in prefix]
            started = prefix + list(dict.fromkeys(others))
            for j in started:
                queued[j] = False
            if started:
                head, qlen = _drop_started(queue, head, qlen, queued, len(started))
            model = [j for j in model if queued[j]]
        assert head + qlen <= max(nxt, 1)
        assert queue[head : head + qlen].tolist() == model
    _queue_to_front(queue, head, qlen)
    assert queue[:qlen].tolist() == model


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["fcfs", "sjf", "ljf", "easy", "easy-sjf", "easy-saf"])
def test_ricc_prefix_agrees_with_the_reference_simulator(policy: str) -> None:
    jobs = read_swf(require_data("swf/RICC-2010-2.swf.gz")).jobs.head(12000)
    machine = 8192
    sched = simulate(jobs, policy, machine).schedule.sort("job_id")
    est = sched["estimate"].to_list()
    ref_jobs = [
        RefJob(i, r["submit_time"], r["size"], r["walltime"], r["runtime"], est[i])
        for i, r in enumerate(jobs.sort("job_id").iter_rows(named=True))
    ]
    order, backfill = {
        "fcfs": ("fcfs", "none"),
        "sjf": ("sjf", "none"),
        "ljf": ("ljf", "none"),
        "easy": ("fcfs", "easy"),
        "easy-sjf": ("sjf", "easy"),
        "easy-saf": ("saf", "easy"),
    }[policy]
    ref = simulate_reference(ref_jobs, machine, order, backfill)
    assert sched["start_time"].to_list() == [ref[i] for i in range(len(ref_jobs))]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([0.0, 1.0, 2.0, 2.0, -1.0]), st.integers(1, 6)), max_size=80))
def test_heap_pops_in_the_plain_sorted_order(steps: list) -> None:
    """Floats insert a job with that key; an integer k pops up to k jobs, which must come in (key, index) order."""
    key = np.array([s for s in steps if isinstance(s, float)] or [0.0], dtype=np.float64)
    heap = np.empty(len(key), dtype=np.int64)
    size, nxt = 0, 0
    model: list[int] = []
    for step in steps:
        if isinstance(step, float):
            size = qheap_push(heap, size, key, nxt)
            model.append(nxt)
            nxt += 1
        else:
            model.sort(key=lambda j: (key[j], j))
            for _ in range(min(step, size)):
                assert heap[0] == model.pop(0)
                size = qheap_pop(heap, size, key)
        assert size == len(model)
