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
from wattsched.engine.job_queue import bury_started, compact_live, qheap_pop, qheap_push
from wattsched.engine.job_queue import drop_started as _drop_started
from wattsched.engine.job_queue import queue_insert as _queue_insert
from wattsched.engine.job_queue import queue_to_front as _queue_to_front
from wattsched.engine.simulate import simulate
from wattsched.policies.fit_index import FANOUT, NO_FIT, fit_build, fit_leaves, fit_leaves_for, fit_next
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
    no_index = np.empty(0, dtype=np.int32)
    head, qlen, nxt = 0, 0, 0
    model: list[int] = []
    for step in steps:
        if step[0] == "insert":
            head, qlen = _queue_insert(queue, head, qlen, key, nxt, no_index, 0)
            queued[nxt] = True
            model.append(nxt)
            model.sort(key=lambda j: (key[j], j))  # the old invariant: sorted by (key, job index)
            nxt += 1
        else:
            started = _started(step, model)
            for j in started:
                queued[j] = False
            if started:
                head, qlen = _drop_started(queue, head, qlen, queued, len(started))
            model = [j for j in model if queued[j]]
        assert head + qlen <= max(nxt, 1)
        assert queue[head : head + qlen].tolist() == model
    _queue_to_front(queue, head, qlen)
    assert queue[:qlen].tolist() == model


def _started(step: tuple, model: list[int]) -> list[int]:
    """The jobs a "start" step starts: a prefix of the order, and others by position."""
    prefix = model[: step[1]]
    others = [model[p] for p in step[2] if p < len(model) and model[p] not in prefix]
    return prefix + list(dict.fromkeys(others))


@settings(max_examples=300, deadline=None)
@given(STEPS, st.lists(st.integers(1, 6), max_size=80))
def test_an_indexed_queue_keeps_the_order_its_gaps_and_its_size_index(steps: list[tuple], sizes: list[int]) -> None:
    """The queue with a size index (EASY): started jobs stay as gaps; the jobs that are not gaps are in the plain
    sorted order, every leaf is the size of its job (``NO_FIT`` for a gap or outside), every node is the minimum
    of its children, and every "first job that fits" query agrees with a plain scan."""
    n = sum(1 for s in steps if s[0] == "insert")
    key = np.array([s[1] for s in steps if s[0] == "insert"], dtype=np.float64)
    queue = np.full(max(n, 1), -7, dtype=np.int64)
    size = np.array(sizes[: max(n, 1)] + [1] * max(n - len(sizes), 1), dtype=np.int64)
    fit = fit_build(queue, 0, 0, size, fit_leaves_for(max(n, 1)))  # a position for every insertion
    head, span, nxt = 0, 0, 0
    model: list[int] = []
    started_ever: set[int] = set()
    for step in steps:
        if step[0] == "insert":
            head, span = _queue_insert(queue, head, span, key, nxt, fit, size[nxt])
            model.append(nxt)
            model.sort(key=lambda j: (key[j], j))
            nxt += 1
        else:
            started = _started(step, model)
            if started:
                head, span = bury_started(queue, head, span, key, np.array(started, dtype=np.int64), len(started), fit)
            started_ever |= set(started)
            model = [j for j in model if j not in started_ever]
            if span > 2 * len(model) + 2:  # as the kernel does once gaps outnumber the jobs (smaller threshold)
                span = compact_live(queue, head, span, fit)
                head = 0
        entries = queue[head : head + span].tolist()
        assert [j for j in entries if j not in started_ever] == model
        assert span == 0 or entries[0] not in started_ever  # no gap at the front
        leaves = fit_leaves(fit)
        inside = [
            int(size[queue[x]]) if head <= x < head + span and queue[x] not in started_ever else NO_FIT
            for x in range(leaves)
        ]
        assert fit[:leaves].tolist() == inside
        assert fit.tolist() == _rebuilt(inside, leaves).tolist()  # every node above too
        for limit in range(0, 6):
            for x in range(0, leaves + 1):
                for end in (head + span, leaves):
                    plain = next((y for y in range(x, end) if inside[y] <= limit), -1)
                    assert fit_next(fit, x, end, limit) == plain
    live = compact_live(queue, head, span, fit)
    assert queue[:live].tolist() == model


def _rebuilt(leaf_values: list[int], leaves: int) -> np.ndarray:
    """The index for these leaves, computed plainly: each level the minimum of each group of ``FANOUT`` below."""
    levels = [list(leaf_values)]
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([min(below[g : g + FANOUT]) for g in range(0, len(below), FANOUT)])
    return np.array([v for level in levels for v in level], dtype=np.int64)


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


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=300), st.integers(0, 40))
def test_the_size_index_finds_the_first_job_that_fits_as_a_plain_scan(sizes: list[int], head: int) -> None:
    """Every query of the index (start, end, limit) against a plain scan; long runs of jobs that do not fit make
    it leave its linear stretch (``FANOUT``) and use the tree."""
    size = np.array(sizes, dtype=np.int64)
    queue = np.zeros(head + len(sizes), dtype=np.int64)
    queue[head:] = np.arange(len(sizes))
    fit = fit_build(queue, head, len(sizes), size, fit_leaves_for(head + len(sizes)))
    leaves = fit_leaves(fit)
    inside = [sizes[x - head] if head <= x < head + len(sizes) else NO_FIT for x in range(leaves)]
    for limit in range(0, 10):
        for x in range(0, head + len(sizes) + 1):
            for end in (head + len(sizes), leaves, x + FANOUT, x + FANOUT + 1):
                plain = next((y for y in range(x, min(end, leaves)) if inside[y] <= limit), -1)
                assert fit_next(fit, x, min(end, leaves), limit) == plain
