"""P0 power metrics (docs/semantics.md §3.5, §3.7) on hand-computed timelines, plus energy-conservation properties."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.power.actual_power import energy, power_timeline
from wattsched.power.cap_metrics import (
    cap_metrics,
    max_turnaround_increase,
    policy_cap_metrics,
    power_summary,
    share_started_in_window,
    turnaround_increase,
)
from wattsched.power.platform import Platform, PowerCapSchedule

TOY = Platform(name="toy", nodes=4, idle_watts=10.0, max_node_watts=1000.0)
PROFILE = pl.List(pl.Float32)


def _run(jobs, profiles, cap=None, period=20.0):
    sched = pl.DataFrame(
        {
            "job_id": list(range(len(jobs))),
            "submit_time": [j[0] for j in jobs],
            "start_time": [j[1] for j in jobs],
            "end_time": [j[2] for j in jobs],
            "size": [j[3] for j in jobs],
        },
        schema={
            "job_id": pl.Int64,
            "submit_time": pl.Float64,
            "start_time": pl.Float64,
            "end_time": pl.Float64,
            "size": pl.Int64,
        },
    )
    prof = pl.DataFrame(
        {"job_id": list(range(len(jobs))), "power_profile": profiles},
        schema={"job_id": pl.Int64, "power_profile": PROFILE},
    )
    return sched, power_timeline(sched, prof, TOY, cap, period=period)


# A: 1 node, killed at 50 before its 4th sample; B: 2 nodes, the cap changes at 25 together with B's 2nd sample;
# C: submitted at 10, a 1-sample profile held from 20 to 70; at 20 A's sample and C's start coincide.
JOBS = [(0.0, 0.0, 50.0, 1), (0.0, 5.0, 30.0, 2), (10.0, 20.0, 70.0, 1)]
PROFILES = [[50.0, 60.0, 70.0, 80.0], [100.0, 200.0], [30.0]]
CAP = PowerCapSchedule((0.0, 25.0, 60.0), (140.0, 300.0, None))
BASELINE = [(0.0, 0.0, 50.0, 1), (0.0, 0.0, 25.0, 2), (10.0, 10.0, 45.0, 1)]


def test_window_metrics_exact() -> None:
    _, tl = _run(JOBS, PROFILES, CAP)
    # pieces in [0, 40): [0,5) 40/140, [5,20) 120/140, [20,25) 150/140, [25,30) 250/300, [30,40) 70/300
    m = cap_metrics(tl, 40.0)
    u = (Fraction(5 * 40 + 15 * 120 + 5 * 150, 140) + Fraction(5 * 250 + 10 * 70, 300)) / 40
    assert u == Fraction(183, 280)
    assert m["power_utilisation"] == pytest.approx(float(u), rel=1e-15)
    assert m["under_utilisation"] == pytest.approx(1 - float(u), rel=1e-15)
    assert m["over_utilisation"] == pytest.approx(float(u) - 1, rel=1e-15)
    assert m["trespass"] is True
    assert m["max_instantaneous_break"] == pytest.approx(150 / 140 - 1, rel=1e-15)
    assert m["time_above_cap_share"] == 5 / 40
    assert m["mean_dynamic_w"] == 4700 / 40
    assert m["max_dynamic_w"] == 250.0
    assert m["capped_share"] == 1.0


def test_equal_to_cap_is_not_a_trespass_and_uncapped_windows() -> None:
    _, tl = _run(JOBS, PROFILES, PowerCapSchedule((0.0, 25.0), (150.0, None)))
    m = cap_metrics(tl, 25.0)
    assert m["trespass"] is False
    assert m["max_instantaneous_break"] == 0.0
    assert m["time_above_cap_share"] == 0.0
    # half the window uncapped: ratios over the capped half only
    m = cap_metrics(tl, 50.0)
    assert m["capped_share"] == 0.5
    assert m["power_utilisation"] == pytest.approx((5 * 40 + 15 * 120 + 5 * 150) / 150 / 25)
    _, free = _run(JOBS, PROFILES)
    m = cap_metrics(free, 40.0)
    assert m["power_utilisation"] is None and m["trespass"] is None
    with pytest.raises(ValueError, match="non-empty"):
        cap_metrics(tl, 0.0)


def test_job_metrics() -> None:
    sched, _ = _run(JOBS, PROFILES)
    base, _ = _run(BASELINE, PROFILES)
    # turnarounds 50, 30, 60 (mean 140/3, max 60) against 50, 25, 35 (mean 110/3, max 50)
    assert turnaround_increase(sched, base) == pytest.approx(3 / 11, rel=1e-15)
    assert max_turnaround_increase(sched, base) == pytest.approx(0.2, rel=1e-15)
    assert share_started_in_window(sched, 40.0) == 1.0
    assert share_started_in_window(sched, 20.0) == 2 / 3  # start < T_win, strictly
    with pytest.raises(ValueError, match="different jobs"):
        turnaround_increase(sched, base.head(2))


def test_power_summary_keys_values_and_json() -> None:
    sched, tl = _run(JOBS, PROFILES, CAP)
    base, _ = _run(BASELINE, PROFILES)
    summary = power_summary(tl, sched, 40.0, baseline=base)
    json.dumps(summary)
    assert summary["energy_window_dynamic_j"] == 4700.0
    assert summary["energy_window_total_j"] == 4700.0 + 40 * 40
    assert summary["energy_run_dynamic_j"] == 2400.0 + 2500.0 + 1000.0
    assert summary["energy_run_total_j"] == 5900.0 + 40 * 70
    assert (summary["run_start_s"], summary["run_end_s"]) == (0.0, 70.0)
    assert summary["window_mean_dynamic_w"] == 117.5
    assert summary["trespass"] is True
    assert summary["turnaround_increase"] == pytest.approx(3 / 11)
    assert summary["share_started_in_window"] == 1.0
    assert set(summary) == {
        "window_start_s", "window_end_s", "window_mean_dynamic_w", "window_max_dynamic_w", "window_capped_share",
        "power_utilisation", "under_utilisation", "over_utilisation", "trespass", "max_instantaneous_break",
        "time_above_cap_share", "energy_window_total_j", "energy_window_dynamic_j", "run_start_s", "run_end_s",
        "energy_run_total_j", "energy_run_dynamic_j", "share_started_in_window", "turnaround_increase",
        "max_turnaround_increase", "machine_trespass", "machine_max_instantaneous_break",
        "machine_time_above_cap_share", "prestate_max_dynamic", "prestate_max_cap_ratio", "prestate_over_cap",
        "prestate_time_over_cap_share",
    }  # fmt: skip
    # without a pre-state the policy's metrics are the machine's
    assert summary["machine_trespass"] is True and summary["prestate_over_cap"] is False
    assert summary["machine_max_instantaneous_break"] == summary["max_instantaneous_break"]
    assert "turnaround_increase" not in power_summary(tl, sched, 40.0)


def _prestate_case(policy_start: float):
    # P prestarted (2 nodes, 400 W → 380 W dynamic) on [0, 100); the policy's Q (1 node, 100 W → 90 W dynamic)
    # on [policy_start, policy_start + 100); cap 300 W on [0, 200)
    sched, tl = _run(
        [(0.0, 0.0, 100.0, 2), (0.0, policy_start, policy_start + 100.0, 1)],
        [[400.0], [100.0]],
        PowerCapSchedule((0.0, 200.0), (300.0, None)),
    )
    pre_sched = sched.filter(pl.col("job_id") == 0)
    prof = pl.DataFrame(
        {"job_id": [0], "power_profile": [[400.0]]}, schema={"job_id": pl.Int64, "power_profile": PROFILE}
    )
    pre = power_timeline(pre_sched, prof, TOY, PowerCapSchedule((0.0, 200.0), (300.0, None)))
    return sched, tl, pre


def test_a_pre_state_over_the_cap_is_not_the_policys_trespass() -> None:
    _, tl, pre = _prestate_case(100.0)  # Q starts when P ends: only P is ever above the cap
    m = policy_cap_metrics(tl, pre, 200.0)
    assert m["machine_trespass"] is True and m["machine_max_instantaneous_break"] == pytest.approx(380 / 300 - 1)
    assert m["machine_time_above_cap_share"] == 0.5
    assert m["prestate_over_cap"] is True and m["prestate_max_dynamic"] == 380.0
    assert m["prestate_max_cap_ratio"] == pytest.approx(380 / 300) and m["prestate_time_over_cap_share"] == 0.5
    assert m["trespass"] is False and m["max_instantaneous_break"] == 0.0 and m["time_above_cap_share"] == 0.0


def test_the_policy_trespasses_above_max_of_cap_and_pre_state() -> None:
    sched, tl, pre = _prestate_case(50.0)  # Q adds 90 W on [50, 100) while P is over the cap
    m = policy_cap_metrics(tl, pre, 200.0)
    assert m["trespass"] is True
    assert m["max_instantaneous_break"] == pytest.approx(90 / 300)
    assert m["time_above_cap_share"] == 0.25
    assert m["machine_max_instantaneous_break"] == pytest.approx(470 / 300 - 1)
    s = power_summary(tl, sched, 200.0, prestate=pre, prestarted=np.array([True, False]))
    assert s["trespass"] is True and s["machine_trespass"] is True and s["prestate_over_cap"] is True
    # the prestarted job counts in the denominator only
    assert s["share_started_in_window"] == 0.5
    assert power_summary(tl, sched, 200.0)["share_started_in_window"] == 1.0


def test_energy_of_a_run_without_jobs() -> None:
    _, tl = _run([], [])
    assert tl.height == 1
    assert energy(tl, 0.0, 100.0) == 40.0 * 100.0


jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 2000).map(lambda x: x / 8),
        st.integers(0, 2000).map(lambda x: x / 8),
        st.integers(1, 4),
        st.lists(st.integers(0, 3000).map(float), max_size=10),
    ),
    min_size=1,
    max_size=15,
)


@settings(max_examples=150, deadline=None)
@given(jobs_strategy, st.sampled_from([20.0, 3.0]))
def test_energy_is_the_sum_of_clipped_samples(raw, period: float) -> None:
    """∫ dynamic = Σ_j Σ_k (sample_k − q·idle)·|[s + kΔ, s + (k+1)Δ) ∩ [s, e)|, the last sample held to the end."""
    jobs = [(s, s, s + d, q) for s, d, q, _ in raw]
    profiles = [p for *_, p in raw]
    sched, tl = _run(jobs, profiles, period=period)
    expected = 0.0
    for (_, s, e, q), p in zip(jobs, profiles, strict=True):
        for k, v in enumerate(p):
            lo = s + k * period
            hi = e if k == len(p) - 1 else min(e, s + (k + 1) * period)
            expected += (v - q * TOY.idle_watts) * max(0.0, hi - lo)
    run_end = max(e for _, _, e, _ in jobs)
    assert energy(tl, 0.0, run_end, "dynamic") == pytest.approx(expected, rel=1e-12, abs=1e-6)
    assert energy(tl, 0.0, run_end) == pytest.approx(expected + TOY.idle_platform_watts * run_end, rel=1e-12, abs=1e-6)
    np.testing.assert_array_equal(tl["total"].to_numpy() - tl["dynamic"].to_numpy(), TOY.idle_platform_watts)
    summary = power_summary(tl, sched, 100.0)
    assert summary["energy_run_dynamic_j"] == pytest.approx(expected, rel=1e-12, abs=1e-6)
