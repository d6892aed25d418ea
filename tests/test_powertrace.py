"""The exact power timeline: hand-computed cases, a naive reference, and both sorting paths agreeing."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.power import actual_power as powertrace
from wattsched.power.actual_power import energy, power_timeline
from wattsched.power.platform import Platform, PowerCapSchedule

TOY = Platform(name="toy", nodes=4, idle_watts=10.0, max_node_watts=1000.0)
PROFILE = pl.List(pl.Float32)


def _profiles(rows: dict[int, list[float] | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {"job_id": list(rows), "power_profile": list(rows.values())},
        schema={"job_id": pl.Int64, "power_profile": PROFILE},
    )


def _schedule(jobs: list[tuple[int, float, float, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "job_id": [j[0] for j in jobs],
            "submit_time": [0.0] * len(jobs),
            "start_time": [j[1] for j in jobs],
            "end_time": [j[2] for j in jobs],
            "size": [j[3] for j in jobs],
        }
    )


def test_hand_computed_timeline() -> None:
    # A: 1 node, killed at 50 (its 4th sample never runs); B: 2 nodes; C: a 1-sample profile held to its end.
    sched = _schedule([(1, 0.0, 50.0, 1), (2, 5.0, 30.0, 2), (3, 20.0, 70.0, 1)])
    prof = _profiles({3: [30.0], 2: [100.0, 200.0], 1: [50.0, 60.0, 70.0, 80.0]})
    cap = PowerCapSchedule((0.0, 25.0, 60.0), (140.0, 300.0, None))
    tl = power_timeline(sched, prof, TOY, cap)
    assert tl.columns == ["time", "total", "dynamic", "cap"]
    assert tl["time"].to_list() == [0.0, 5.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0, 70.0]
    assert tl["dynamic"].to_list() == [40.0, 120.0, 150.0, 250.0, 70.0, 80.0, 20.0, 20.0, 0.0]
    assert tl["cap"].to_list() == [140.0, 140.0, 140.0, 300.0, 300.0, 300.0, 300.0, None, None]
    assert (tl["total"] - tl["dynamic"]).to_list() == [40.0] * tl.height
    assert energy(tl, 0, 70, "dynamic") == 2400 + 2500 + 1000
    assert energy(tl, 0, 70) == 5900 + 40 * 70
    assert energy(tl, 10, 10) == 0.0
    with pytest.raises(ValueError, match="before the timeline"):
        energy(tl, -1, 10)
    with pytest.raises(ValueError, match="total"):
        energy(tl, 0, 10, "cap")


def test_cancelling_changes_make_no_row_and_no_cap_gives_nulls() -> None:
    # Job 2 starts exactly when job 1 ends, at the same power: the level never changes at t = 10.
    sched = _schedule([(1, 0.0, 10.0, 1), (2, 10.0, 20.0, 1)])
    tl = power_timeline(sched, _profiles({1: [60.0], 2: [60.0]}), TOY)
    assert tl["time"].to_list() == [0.0, 20.0]
    assert tl["dynamic"].to_list() == [50.0, 0.0]
    assert tl["cap"].null_count() == 2


def test_negative_dynamic_power_is_kept_and_empty_profiles_are_idle() -> None:
    sched = _schedule([(1, 0.0, 10.0, 2), (2, 0.0, 10.0, 3), (3, 0.0, 10.0, 1), (4, 5.0, 5.0, 1)])
    tl = power_timeline(sched, _profiles({1: [15.0], 2: [], 3: None, 4: [999.0]}), TOY)
    assert tl["dynamic"].to_list() == [-5.0, 0.0]  # 15 − 2·10 W: a node below nominal idle


def test_starts_before_zero_and_a_profile_series() -> None:
    sched = _schedule([(7, -30.0, 10.0, 1)])
    series = pl.Series("power_profile", [[20.0, 30.0, 40.0]], dtype=PROFILE)
    tl = power_timeline(sched, series, TOY, PowerCapSchedule.constant(100.0))
    assert tl["time"].to_list() == [-30.0, -10.0, 0.0, 10.0]
    assert tl["dynamic"].to_list() == [10.0, 20.0, 20.0, 0.0]  # samples at −30, −10, 10; 0 always has a row
    assert tl["cap"].to_list() == [100.0] * 4


def test_input_errors() -> None:
    sched = _schedule([(1, 0.0, 10.0, 1)])
    with pytest.raises(ValueError, match="no row in the profiles"):
        power_timeline(sched, _profiles({2: [1.0]}), TOY)
    with pytest.raises(ValueError, match="duplicate job_id"):
        power_timeline(sched, pl.concat([_profiles({1: [1.0]}), _profiles({1: [2.0]})]), TOY)
    with pytest.raises(ValueError, match="NaN"):
        power_timeline(sched, _profiles({1: [float("nan")]}), TOY)
    with pytest.raises(ValueError, match="end_time < start_time"):
        power_timeline(_schedule([(1, 5.0, 1.0, 1)]), _profiles({1: [1.0]}), TOY)
    with pytest.raises(ValueError, match="lacks column"):
        power_timeline(sched.drop("size"), _profiles({1: [1.0]}), TOY)
    with pytest.raises(ValueError, match="period"):
        power_timeline(sched, _profiles({1: [1.0]}), TOY, period=0.0)


def _naive_dynamic(jobs, profiles, t: float, period: float) -> float:
    """Σ over running jobs of (held sample − nodes·idle), straight from the definition."""
    total = 0.0
    for (_, s, e, q), p in zip(jobs, profiles, strict=True):
        if s <= t < e and p:
            k = 0
            while k + 1 < len(p) and s + (k + 1) * period <= t:
                k += 1
            total += float(np.float32(p[k])) - q * TOY.idle_watts
    return total


job_lists = st.lists(
    st.tuples(
        st.integers(0, 400).map(lambda x: x / 4),  # start on a 0.25-s grid: many coincident instants
        st.integers(0, 400).map(lambda x: x / 4),  # run length
        st.integers(1, 4),
        st.lists(st.integers(0, 400).map(float), max_size=8),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(job_lists, st.sampled_from([20.0, 7.5, 1.0]))
def test_matches_the_definition_everywhere(jobs_raw, period: float) -> None:
    jobs = [(i, s, s + d, q) for i, (s, d, q, _) in enumerate(jobs_raw)]
    profiles = [p for *_, p in jobs_raw]
    sched = _schedule(jobs) if jobs else _schedule([]).cast({"job_id": pl.Int64, "size": pl.Int64})
    prof = _profiles(dict(enumerate(profiles)))
    cap = PowerCapSchedule((0.0, 33.0), (500.0, None))
    tl = power_timeline(sched, prof, TOY, cap, period=period)
    times = tl["time"].to_numpy()
    assert np.all(np.diff(times) > 0)
    dyn = tl["dynamic"].to_numpy()
    probes = np.concatenate((times, times[:-1] + np.diff(times) / 2, times[-1:] + 1.0))
    idx = np.searchsorted(times, probes, side="right") - 1
    for t, i in zip(probes, idx, strict=True):
        assert dyn[i] == _naive_dynamic(jobs, profiles, float(t), period)
    np.testing.assert_array_equal(tl["total"].to_numpy() - dyn, TOY.idle_platform_watts)
    assert dyn[-1] == 0.0
    # every row is a real change (of the dynamic level or the cap), except the first
    cap_vals = tl["cap"].fill_null(-1.0).to_numpy()
    changed = (np.diff(dyn) != 0) | (np.diff(cap_vals) != 0)
    assert changed.all()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-1e5, 1e7, allow_nan=False), min_size=1, max_size=30),
    st.lists(st.integers(0, 30), min_size=30, max_size=30),
    st.sampled_from([None, 1, 2, 3, 8, 64]),
)
def test_bucket_sort_equals_argsort(starts, lengths, width) -> None:
    """The O(n) two-level bucket path (any block width) and a plain stable argsort give the same sorted change
    points, on arbitrary floats."""
    period = 20.0
    start = np.array(starts)
    length = np.array(lengths[: start.size], dtype=np.int64)
    end = start + length * period * 0.9
    offset = np.cumsum(length) - length
    flat = np.arange(int(length.sum()), dtype=np.float32)
    idle = np.full(start.size, 10.0)
    n = powertrace._active_samples(start, end, length, period)
    pt_time = np.concatenate((end[n > 0], [0.0]))
    pt_delta = np.zeros(pt_time.size)
    a = powertrace._sorted_events(start, n, offset, flat, idle, pt_time, pt_delta, period, method="bucket", width=width)
    b = powertrace._sorted_events(start, n, offset, flat, idle, pt_time, pt_delta, period, method="argsort")
    np.testing.assert_array_equal(a[0], b[0])
    assert np.all(np.diff(a[0]) >= 0)
    # deltas can come in another order within one instant; their per-instant sums must agree
    ua, ia = np.unique(a[0], return_index=True)
    np.testing.assert_allclose(np.add.reduceat(a[1], ia), np.add.reduceat(b[1], ia), rtol=0, atol=1e-6)
    assert ua.size == np.unique(b[0]).size
