"""The compiled power-metric passes (power/cap_metrics_compiled.py) against the numpy formulation they replaced
(tests/power_metrics_oracle.py): every metric must have the same bits, on random step functions (window bounds
inside pieces, on steps, at the first row, past the last; empty windows; capped, uncapped and mixed caps) and
on a power run over a prefix of the real RICC trace."""

from __future__ import annotations

import gzip
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import power_metrics_oracle as oracle
from conftest import require_data
from wattsched.engine.simulate import simulate
from wattsched.power.actual_power import energy, power_steps, power_timeline
from wattsched.power.cap_metrics import cap_metrics, policy_cap_metrics, power_summary
from wattsched.power.cap_metrics_compiled import window_rows
from wattsched.power.platform import Platform, PowerCapSchedule
from wattsched.workload.swf.reader import read_swf


def _same(a: object, b: object) -> bool:
    """Equal with the same bits (NaN equal to NaN); dicts key by key."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


def _timeline(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(1, 700))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    steps = rng.choice([0.5, 1.0, 20.0, 1e-3, 7.25], size=n) * rng.integers(1, 5, size=n)
    time = np.cumsum(steps) - steps[0] + draw(st.sampled_from([0.0, -30.0, 12.5]))
    dynamic = rng.normal(500.0, 400.0, size=n) * 10.0 ** rng.integers(-3, 3, size=n)
    mode = draw(st.sampled_from(["capped", "none", "mixed"]))
    cap = np.full(n, 800.0) * rng.uniform(0.5, 2.0, size=n) if mode != "none" else np.full(n, np.nan)
    if mode == "mixed":
        cap[rng.random(n) < 0.3] = np.nan
    frame = pl.DataFrame({"time": time, "total": dynamic + 1234.5, "dynamic": dynamic, "cap": cap})
    return frame.with_columns(pl.col("cap").fill_nan(None))


@st.composite
def timeline_and_window(draw: st.DrawFn) -> tuple[pl.DataFrame, float, float]:
    tl = _timeline(draw)
    time = tl["time"].to_numpy()
    anchors = [*time[:: max(1, time.size // 20)], time[-1], time[-1] + 100.0]

    def bound() -> float:
        base = draw(st.sampled_from(anchors))
        return float(base + draw(st.sampled_from([0.0, 0.0, 0.3, -0.3, 5.0, 1e-9])))

    t0 = max(bound(), float(time[0]))
    t1 = bound()
    if t1 < t0:
        t0, t1 = t1, t0
        t0 = max(t0, float(time[0]))
    return tl, t0, max(t0, t1)


@settings(max_examples=300, deadline=None)
@given(timeline_and_window())
def test_cap_metrics_and_energy_have_the_numpy_bits(case: tuple[pl.DataFrame, float, float]) -> None:
    tl, t0, t1 = case
    for column in ("total", "dynamic"):
        assert _same(energy(tl, t0, t1, column), oracle.energy(tl, t0, t1, column))
    if t1 > t0:
        assert _same(cap_metrics(tl, t1, t0), oracle.cap_metrics(tl, t1, t0))
    else:  # an empty window has no metrics, in both
        with pytest.raises(ValueError, match="non-empty"):
            cap_metrics(tl, t1, t0)
        with pytest.raises(ValueError, match="non-empty"):
            oracle.cap_metrics(tl, t1, t0)


@settings(max_examples=100, deadline=None)
@given(timeline_and_window(), st.integers(0, 2**32 - 1))
def test_policy_metrics_with_a_prestate_have_the_numpy_bits(case: tuple[pl.DataFrame, float, float], seed: int) -> None:
    tl, t0, t1 = case
    if not t1 > t0:
        return
    rng = np.random.default_rng(seed)
    time = tl["time"].to_numpy()
    rows = np.sort(rng.choice(time.size, size=max(1, time.size // 3), replace=False))
    pre = pl.DataFrame({"time": time[rows] + rng.choice([0.0, 0.1], size=rows.size)}).unique("time").sort("time")
    pre = pre.with_columns(pl.Series("dynamic", rng.normal(300.0, 200.0, size=pre.height)), pl.lit(None).alias("cap"))
    assert _same(policy_cap_metrics(tl, pre, t1, t0), oracle.policy_cap_metrics(tl, pre, t1, t0))


def test_window_rows_bound_the_pieces_inside() -> None:
    time = np.array([0.0, 10.0, 20.0, 30.0])
    assert window_rows(time, 0.0, 10.0) == (0, 1)  # a window ending on a step leaves the next row out
    assert window_rows(time, 10.0, 25.0) == (1, 3)  # one starting on a step starts at that row
    assert window_rows(time, 35.0, 40.0) == (3, 4)  # past the last row: the last row holds for ever
    assert window_rows(time, 5.0, 5.0) == (0, 1)  # empty: the row in force, with no second inside it


@pytest.mark.slow
def test_power_summary_on_a_ricc_prefix_has_the_numpy_bits(tmp_path) -> None:
    """A power run over the first 4,000 jobs of the real RICC trace, with random float32 profiles and a cap
    window: every key of the power summary, with and without a pre-state, as the numpy formulation gives it."""
    trace = require_data("swf/RICC-2010-2.swf.gz")
    lines = []
    with gzip.open(trace, "rt") as f:
        for line in f:
            lines.append(line)
            if not line.startswith(";") and len(lines) > 4_000:
                break
    prefix = tmp_path / "ricc_prefix.swf"
    prefix.write_text("".join(lines))
    jobs = read_swf(prefix).jobs
    sched = simulate(jobs, "easy", 8192).schedule
    rng = np.random.default_rng(7)
    lengths = np.minimum((sched["end_time"] - sched["start_time"]).to_numpy() // 20 + 1, 200).astype(int)
    profiles = pl.Series(
        "power_profile",
        [
            (rng.uniform(150, 400, k) * q).astype(np.float32)
            for k, q in zip(lengths, sched["size"].to_numpy(), strict=True)
        ],
        dtype=pl.List(pl.Float32),
    )
    plat = Platform(name="ricc", nodes=8192, idle_watts=90.0, max_node_watts=400.0)
    span = float(sched["end_time"].max())
    cap = PowerCapSchedule((0.0, span / 3, span / 2), (None, 0.5 * plat.dynamic_range, None))
    tl = power_timeline(sched, profiles, plat, cap)
    assert tl.height > 100_000
    prestarted = (sched["start_time"] <= span / 3).to_numpy()
    pre = power_timeline(sched.filter(pl.Series(prestarted)), profiles.filter(pl.Series(prestarted)), plat, cap)
    for t0, t1 in ((span / 3, span / 2), (0.0, span), (span / 3 + 7.0, span / 3 + 1000.0)):
        assert _same(
            power_summary(tl, sched, t1, window_start=t0, prestate=pre, prestarted=prestarted),
            oracle.power_summary(tl, sched, t1, window_start=t0, prestate=pre, prestarted=prestarted),
        )
        assert _same(
            power_summary(tl, sched, t1, window_start=t0), oracle.power_summary(tl, sched, t1, window_start=t0)
        )


CAPS = PowerCapSchedule((0.0, 25.0, 60.0, 1e6), (140.0, None, 300.0, 90.0))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([None, CAPS]))
def test_power_steps_derive_the_timeline_table_and_its_metrics(seed: int, cap: PowerCapSchedule | None) -> None:
    """The compact timeline: its table is ``power_timeline``'s, its derived caps are the table's for any slice of
    rows, and every metric computed on it has the table's bits."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    start = np.round(rng.uniform(-50.0, 200.0, n), 1)
    end = start + np.round(rng.uniform(0.0, 150.0, n), 1)
    sched = pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit_time": start,
            "start_time": start,
            "end_time": end,
            "size": rng.integers(1, 4, n),
        }
    )
    profiles = pl.Series(
        "power_profile",
        [rng.uniform(5.0, 900.0, rng.integers(0, 12)).astype(np.float32).tolist() for _ in range(n)],
        dtype=pl.List(pl.Float32),
    )
    plat = Platform(name="toy", nodes=8, idle_watts=10.0, max_node_watts=1000.0)
    steps = power_steps(sched, profiles, plat, cap, period=7.0)
    table = steps.frame()
    assert table.equals(power_timeline(sched, profiles, plat, cap, period=7.0))
    lo = int(rng.integers(0, steps.height))
    hi = int(rng.integers(lo, steps.height + 1))
    want = table["cap"].slice(lo, hi - lo).fill_null(np.nan).to_numpy()
    assert np.array_equal(steps.cap_rows(lo, hi), want, equal_nan=True)
    t0 = float(table["time"][0]) + float(rng.uniform(0.0, 100.0))
    t1 = t0 + float(rng.choice([1e-3, 30.0, 500.0]))
    assert steps.window(t0, t1).equals(table.slice(*_rows_slice(table, t0, t1)))
    assert _same(
        power_summary(steps, sched, t1, window_start=t0), oracle.power_summary(table, sched, t1, window_start=t0)
    )


def _rows_slice(table: pl.DataFrame, t0: float, t1: float) -> tuple[int, int]:
    lo, hi = window_rows(table["time"].to_numpy(), t0, t1)
    return lo, max(hi - lo, 1)
