"""The numpy power metrics as they were before issue 18 (full-length temporaries), kept verbatim as the test
oracle of the compiled passes (``wattsched.power.cap_metrics_compiled``): every metric must come out with the same
bits."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from wattsched.metrics.jobs import TIME_COLUMNS, check_schedule
from wattsched.power.cap_metrics import (
    max_turnaround_increase,
    share_started_in_window,
    turnaround_increase,
)


def energy(timeline: pl.DataFrame, t0: float, t1: float, column: str = "total") -> float:
    """Energy in joules over ``[t0, t1)``: the integral of the step function ``column`` (``total`` or ``dynamic``).

    The timeline says nothing before its first row, so a window starting earlier is refused rather than guessed.
    """
    if column not in ("total", "dynamic"):
        raise ValueError(f"column must be 'total' or 'dynamic', got {column!r}")
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 < t0:
        raise ValueError(f"energy needs a finite window with t0 ≤ t1, got [{t0}, {t1})")
    times = timeline["time"].to_numpy()
    if times.size == 0:
        raise ValueError("empty timeline")
    if t0 < times[0]:
        raise ValueError(f"window starts at {t0}, before the timeline's first row ({times[0]})")
    values = timeline[column].to_numpy()
    ends = np.append(times[1:], np.inf)
    durations = np.clip(np.minimum(ends, t1) - np.maximum(times, t0), 0.0, None)
    return float(np.sum(values * durations))  # pairwise sum: the same bits whatever the BLAS threads


def _pieces(timeline: pl.DataFrame, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dynamic, cap, seconds inside [t0, t1))`` of each piece; the cap is NaN where there is none."""
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
        raise ValueError(f"window must be finite and non-empty, got [{t0}, {t1})")
    for col in ("time", "dynamic", "cap"):
        if col not in timeline.columns:
            raise ValueError(f"timeline lacks column {col!r}; it has {timeline.columns}")
    times = timeline["time"].to_numpy()
    if times.size == 0 or t0 < times[0]:
        raise ValueError(f"window [{t0}, {t1}) starts before the timeline's first row")
    ends = np.append(times[1:], np.inf)
    seconds = np.clip(np.minimum(ends, t1) - np.maximum(times, t0), 0.0, None)
    keep = seconds > 0
    dynamic = timeline["dynamic"].to_numpy()[keep]
    cap = timeline["cap"].cast(pl.Float64).fill_null(np.nan).to_numpy()[keep]
    return dynamic, cap, seconds[keep]


def cap_metrics(timeline: pl.DataFrame, window_end: float, window_start: float = 0.0) -> dict[str, Any]:
    """P0's window metrics over ``[window_start, window_end)`` (all ratios on dynamic power):

    - ``power_utilisation`` U = time-mean of dynamic/cap over the capped part of the window;
    - ``under_utilisation`` = 1 − U and ``over_utilisation`` = U − 1 (signed: one of them is ≤ 0);
    - ``trespass``: dynamic > cap at some instant; ``max_instantaneous_break`` = max(dynamic/cap) − 1;
    - ``time_above_cap_share``: seconds with dynamic > cap over the window's length.
    """
    dynamic, cap, seconds = _pieces(timeline, float(window_start), float(window_end))
    length = float(window_end) - float(window_start)
    capped = ~np.isnan(cap)
    out: dict[str, Any] = {
        "mean_dynamic_w": float(np.sum(dynamic * seconds) / length),
        "max_dynamic_w": float(dynamic.max()),
        "capped_share": float(seconds[capped].sum() / length),
    }
    if not capped.any():
        return out | dict.fromkeys(
            (
                "power_utilisation",
                "under_utilisation",
                "over_utilisation",
                "trespass",
                "max_instantaneous_break",
                "time_above_cap_share",
            )
        )
    d, c, s = dynamic[capped], cap[capped], seconds[capped]
    if np.any(c <= 0):
        raise ValueError("a cap of 0 W in the window: ratios to it are undefined")
    ratio = d / c
    u = float(np.sum(ratio * s) / s.sum())
    above = d > c
    return out | {
        "power_utilisation": u,
        "under_utilisation": 1.0 - u,
        "over_utilisation": u - 1.0,
        "trespass": bool(above.any()),
        "max_instantaneous_break": float(ratio.max() - 1.0),
        "time_above_cap_share": float(s[above].sum() / length),
    }


#: Watts by which the machine's power must exceed max(cap, pre-state) to count as the policy's trespass, relative to
#: the cap: the two step functions are float sums of the same samples, equal up to rounding where only the
#: pre-state runs.
_TOLERANCE = 1e-9


def _on_common_times(timeline: pl.DataFrame, part: pl.DataFrame) -> pl.DataFrame:
    """``timeline`` (time, dynamic, cap) with the ``part_dynamic`` of a sub-timeline, both step functions
    evaluated on the union of their change instants (0 W for ``part`` before its first row)."""
    times = np.union1d(timeline["time"].to_numpy(), part["time"].to_numpy())
    times = times[times >= timeline["time"][0]]

    def at(frame: pl.DataFrame, column: str) -> np.ndarray:
        t = frame["time"].to_numpy()
        idx = np.searchsorted(t, times, side="right") - 1
        values = frame[column].cast(pl.Float64).fill_null(np.nan).to_numpy()
        return np.where(idx >= 0, values[np.clip(idx, 0, None)], 0.0)

    return pl.DataFrame(
        {
            "time": times,
            "dynamic": at(timeline, "dynamic"),
            "cap": at(timeline, "cap"),
            "part_dynamic": at(part, "dynamic"),
        }
    ).with_columns(pl.col("cap").fill_nan(None))


def policy_cap_metrics(
    timeline: pl.DataFrame, prestate: pl.DataFrame | None, window_end: float, window_start: float = 0.0
) -> dict[str, Any]:
    """The cap metrics split between the window's pre-state and the policy (docs/semantics.md, "Trespass").

    ``prestate`` is the power timeline of the jobs prestarted at the window's start (``None``: there are none).
    Their power bypassed every check, so the policy is answerable only for power above **max(cap, P_pre(t))**:

    - ``trespass``: dynamic(t) > max(cap(t), P_pre(t)) at some capped instant of the window;
    - ``max_instantaneous_break`` = max over the window of (dynamic − max(cap, P_pre)) / cap (≤ 0 when the
      policy never breaks the cap; the plain max(dynamic/cap) − 1 without a pre-state);
    - ``time_above_cap_share``: seconds with dynamic > max(cap, P_pre) over the window's length;
    - ``machine_trespass`` / ``machine_max_instantaneous_break`` / ``machine_time_above_cap_share``: the same on
      the machine's power alone (pre-state included), as :func:`cap_metrics` gives them;
    - ``prestate_max_dynamic`` (W), ``prestate_max_cap_ratio`` = max(P_pre/cap), ``prestate_over_cap``
      (P_pre > cap at some instant: the window was over the cap before the policy started anything) and
      ``prestate_time_over_cap_share``.

    Without prestarted jobs P_pre = 0 and the policy's metrics equal the machine's.
    """
    machine = cap_metrics(timeline, window_end, window_start)
    keys = ("trespass", "max_instantaneous_break", "time_above_cap_share")
    out = {f"machine_{k}": machine[k] for k in keys if k in machine}
    if machine.get("trespass") is None:
        return out | {
            "prestate_max_dynamic": None,
            "prestate_max_cap_ratio": None,
            "prestate_over_cap": None,
            "prestate_time_over_cap_share": None,
        }
    if prestate is None or prestate.height == 0:
        return (
            out
            | {k: machine[k] for k in keys}
            | {
                "prestate_max_dynamic": 0.0,
                "prestate_max_cap_ratio": 0.0,
                "prestate_over_cap": False,
                "prestate_time_over_cap_share": 0.0,
            }
        )
    both = _on_common_times(timeline, prestate)
    dynamic, cap, seconds = _pieces(both, float(window_start), float(window_end))
    pre, _, _ = _pieces(
        both.select("time", pl.col("part_dynamic").alias("dynamic"), "cap"), float(window_start), float(window_end)
    )
    length = float(window_end) - float(window_start)
    capped = ~np.isnan(cap)
    d, c, s, p = dynamic[capped], cap[capped], seconds[capped], pre[capped]
    excess = d - np.maximum(c, p)
    breaks = excess > _TOLERANCE * c
    return out | {
        "trespass": bool(breaks.any()),
        "max_instantaneous_break": float((excess / c).max()),
        "time_above_cap_share": float(s[breaks].sum() / length),
        "prestate_max_dynamic": float(pre.max()),
        "prestate_max_cap_ratio": float((p / c).max()),
        "prestate_over_cap": bool((p > c).any()),
        "prestate_time_over_cap_share": float(s[p > c].sum() / length),
    }


def power_summary(
    timeline: pl.DataFrame,
    schedule: pl.DataFrame,
    window_end: float,
    baseline: pl.DataFrame | None = None,
    *,
    window_start: float = 0.0,
    prestate: pl.DataFrame | None = None,
    prestarted: np.ndarray | None = None,
) -> dict[str, Any]:
    """Every P0 power metric of one run as a flat JSON-serialisable dict (energies in J, powers in W).

    The run spans ``[timeline start, last job end]``; baseline keys are present only with a ``baseline``.
    ``prestate`` is the power timeline of the window's prestarted jobs and ``prestarted`` their mask over the
    schedule's rows: the trespass metrics are then the policy's (:func:`policy_cap_metrics`) and the share
    started in the window counts the policy's starts only.
    """
    check_schedule(schedule, (*TIME_COLUMNS,))
    run_start = float(timeline["time"][0])
    run_end = max(float(schedule.select(pl.col("end_time").max()).item()) if schedule.height else run_start, run_start)
    window = cap_metrics(timeline, window_end, window_start)
    out: dict[str, Any] = {
        "window_start_s": float(window_start),
        "window_end_s": float(window_end),
        **{f"window_{k}" if k.endswith("_w") or k == "capped_share" else k: v for k, v in window.items()},
        "energy_window_total_j": energy(timeline, window_start, window_end, "total"),
        "energy_window_dynamic_j": energy(timeline, window_start, window_end, "dynamic"),
        "run_start_s": run_start,
        "run_end_s": run_end,
        "energy_run_total_j": energy(timeline, run_start, run_end, "total"),
        "energy_run_dynamic_j": energy(timeline, run_start, run_end, "dynamic"),
        "share_started_in_window": share_started_in_window(schedule, window_end, prestarted)
        if schedule.height
        else None,
    }
    out.update(policy_cap_metrics(timeline, prestate, window_end, window_start))
    if baseline is not None:
        out["turnaround_increase"] = turnaround_increase(schedule, baseline)
        out["max_turnaround_increase"] = max_turnaround_increase(schedule, baseline)
    return out
