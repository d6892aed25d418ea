"""The PM100 exclusive-job filter: hand-made cases and random placements against a brute-force map."""

from __future__ import annotations

from collections import defaultdict

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.dataset.exclusive import EXCLUSIVE, SHARED, UNVERIFIABLE, classify_exclusive

T0 = 1_600_000_000.0  # a multiple of 20 s


def _jobs(rows) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "start_time": [r[1] for r in rows],
            "end_time": [r[2] for r in rows],
            "nodes": [r[3] for r in rows],
        },
        schema_overrides={"nodes": pl.List(pl.Utf8)},
    )


def _status(frame: pl.DataFrame) -> dict[int, str]:
    return dict(frame.select("job_id", "status").iter_rows())


def test_two_overlapping_jobs_on_one_node_are_both_excluded() -> None:
    out = classify_exclusive(
        _jobs([(1, T0, T0 + 100, ["n1"]), (2, T0 + 60, T0 + 200, ["n1"]), (3, T0, T0 + 500, ["n2"])])
    )
    assert _status(out) == {1: SHARED, 2: SHARED, 3: EXCLUSIVE}


def test_a_25_s_job_rounds_to_one_sample_and_a_shorter_one_is_unverifiable() -> None:
    out = classify_exclusive(_jobs([(1, T0 + 5, T0 + 30, ["n1"]), (2, T0 + 45, T0 + 55, ["n2"])]))
    row = out.row(0, named=True)
    assert (row["grid_start"], row["grid_end"], row["samples"], row["status"]) == (T0 + 20, T0 + 20, 1, EXCLUSIVE)
    assert _status(out)[2] == UNVERIFIABLE


def test_back_to_back_jobs_share_the_boundary_instant() -> None:
    out = classify_exclusive(
        _jobs(
            [
                (1, T0, T0 + 40, ["n1"]),
                (2, T0 + 40, T0 + 100, ["n1"]),
                (3, T0 + 41, T0 + 100, ["n2"]),
                (4, T0, T0 + 39, ["n2"]),
            ]
        )
    )
    assert _status(out) == {1: SHARED, 2: SHARED, 3: EXCLUSIVE, 4: EXCLUSIVE}


def test_a_multi_node_job_is_shared_if_any_node_is() -> None:
    out = classify_exclusive(_jobs([(1, T0, T0 + 100, ["n1", "n2", "n3"]), (2, T0 + 80, T0 + 90, ["n3"])]))
    assert _status(out) == {1: SHARED, 2: SHARED}


def test_legacy_split_misses_conflicts_across_months_and_node_counts() -> None:
    jan31 = 1_612_051_200.0 + 86_400 - 100  # 2021-01-31 23:58:20 UTC
    rows = [
        (1, jan31, jan31 + 1000, ["n1"]),
        (2, jan31 + 200, jan31 + 900, ["n1"]),  # different months
        (3, T0, T0 + 100, ["n5", "n6"]),
        (4, T0, T0 + 100, ["n5"]),
    ]  # multi- vs single-node
    assert set(_status(classify_exclusive(_jobs(rows))).values()) == {SHARED}
    assert set(_status(classify_exclusive(_jobs(rows), legacy_split=True)).values()) == {EXCLUSIVE}


def _brute(rows, period=20.0) -> dict[int, str]:
    cells = defaultdict(set)
    grid = {}
    for j, s, e, nodes in rows:
        s2 = -(-int(s) // int(period)) * period
        e2 = (int(e) // int(period)) * period
        grid[j] = (s2, e2)
        t = s2
        while t <= e2:
            for n in set(nodes):
                cells[(n, t)].add(j)
            t += period
    shared = {j for members in cells.values() if len(members) > 1 for j in members}
    return {j: UNVERIFIABLE if grid[j][0] > grid[j][1] else SHARED if j in shared else EXCLUSIVE for j, *_ in rows}


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 600),
            st.integers(0, 200),
            st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_random_placements_match_the_brute_force_occupancy_map(specs) -> None:
    rows = [(j, T0 + s, T0 + s + d, nodes) for j, (s, d, nodes) in enumerate(specs)]
    assert _status(classify_exclusive(_jobs(rows))) == _brute(rows)
