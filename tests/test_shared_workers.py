"""``core.executors.shared_workers``: the fan-outs of a reproduction share one set of worker processes (issue 32,
item 1), with the same results and the same stopping guarantees as a pool of their own."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from wattsched.core.executors import map_tasks, shared_workers


def _pid_and_square(item: int) -> tuple[int, int]:
    return os.getpid(), item * item


def _fails_on_three(item: int) -> int:
    if item == 3:
        raise ValueError("task 3 fails")
    time.sleep(0.05 if item < 3 else 30)
    return item


def _squares(items: list[int], **options: object) -> tuple[set[int], list[int]]:
    pairs = list(map_tasks(_pid_and_square, items, workers=2, **options))  # type: ignore[arg-type]
    return {pid for pid, _ in pairs}, [value for _, value in pairs]


def test_fan_outs_in_a_block_share_their_workers_and_give_the_same_results() -> None:
    items = list(range(20))
    outside_a, first = _squares(items)
    outside_b, _ = _squares(items)
    assert not outside_a & outside_b  # outside a block, each fan-out starts workers of its own
    with shared_workers():
        inside_a, ordered = _squares(items)
        inside_b, unordered = _squares(items, ordered=False, in_flight=2)
        one_task, _ = _squares([5])  # a smaller fan-out uses the first worker only
        workers = multiprocessing.active_children()
    assert ordered == first == [k * k for k in items]
    assert sorted(unordered) == first
    assert inside_a == inside_b and len(inside_a) == 2 and one_task < inside_a
    assert len(workers) == 2
    assert multiprocessing.active_children() == []  # the block's end ends its workers


def test_a_fan_out_inside_another_gets_workers_of_its_own() -> None:
    with shared_workers():
        outer = list(map_tasks(_pid_and_square, [1, 2, 3], workers=2))
        nested = []
        for _, value in map_tasks(_pid_and_square, [4, 5], workers=2):
            inner = list(map_tasks(_pid_and_square, [6, 7], workers=2))
            assert {p for p, _ in inner}.isdisjoint({p for p, _ in outer})
            nested.append((value, [v for _, v in inner]))
    assert nested == [(16, [36, 49]), (25, [36, 49])]
    assert multiprocessing.active_children() == []


def test_a_failed_fan_out_ends_the_shared_workers_and_the_next_one_starts_new_ones() -> None:
    with shared_workers():
        before, _ = _squares([1, 2])
        started = time.monotonic()
        with pytest.raises(ValueError, match="task 3 fails"):
            list(map_tasks(_fails_on_three, list(range(8)), workers=2, ordered=False))
        assert time.monotonic() - started < 20  # the sleeping task was not waited for
        assert multiprocessing.active_children() == []
        after, values = _squares([1, 2])
    assert values == [1, 4] and not before & after
    assert multiprocessing.active_children() == []


def test_closing_a_fan_out_early_ends_the_shared_workers() -> None:
    with shared_workers():
        stream = map_tasks(_fails_on_three, [0, 4, 5], workers=2)
        assert next(stream) == 0
        stream.close()  # task 4 is still running in a worker
        assert multiprocessing.active_children() == []
        assert _squares([3])[1] == [9]
    assert multiprocessing.active_children() == []


def test_a_nested_block_uses_the_outer_workers() -> None:
    with shared_workers():
        outer, _ = _squares([1, 2])
        with shared_workers():
            inner, _ = _squares([1, 2])
        again, _ = _squares([1, 2])
    assert outer == inner == again
