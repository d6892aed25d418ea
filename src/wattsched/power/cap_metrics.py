"""Power metrics of a simulated run under a cap (paper 000 §6.4–§6.6; docs/semantics.md §3.7), on a
``power_timeline`` step function.

Every window metric integrates the exact step function piece by piece, each piece weighted by how long it
lasts inside the window, with the cap in force on that piece: a 20-s spike counts for 20 s, not for one row.
Instants with no cap (null) are left out of the cap ratios; a window with no cap at all has none (``None``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from wattsched.metrics.jobs import TIME_COLUMNS, check_schedule
from wattsched.power.cap_metrics_compiled import energy_pass, window_pass, window_rows
from wattsched.power.compact_timeline import PowerSteps

#: A power timeline: the ``power_timeline`` table or its compact form (``power_steps``).
Timeline = pl.DataFrame | PowerSteps


def _timeline_arrays(timeline: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """The ``time`` and ``dynamic`` columns as float64 arrays (zero-copy for a ``power_timeline``)."""
    if isinstance(timeline, PowerSteps):
        return timeline.time, timeline.dynamic
    for col in ("time", "dynamic", "cap"):
        if col not in timeline.columns:
            raise ValueError(f"timeline lacks column {col!r}; it has {timeline.columns}")
    time = np.asarray(timeline["time"].to_numpy(), dtype=np.float64)
    dynamic = np.asarray(timeline["dynamic"].to_numpy(), dtype=np.float64)
    return time, dynamic


def _window_cap(timeline: Timeline, lo: int, hi: int) -> np.ndarray:
    """The cap of rows ``[lo, hi)`` (NaN where there is none): a copy of the window's rows only."""
    if isinstance(timeline, PowerSteps):
        return timeline.cap_rows(lo, hi)
    cap = timeline["cap"].slice(lo, hi - lo).cast(pl.Float64).fill_null(np.nan).to_numpy()
    return np.ascontiguousarray(cap, dtype=np.float64)


def _check_window(time: np.ndarray, t0: float, t1: float) -> None:
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
        raise ValueError(f"window must be finite and non-empty, got [{t0}, {t1})")
    if time.size == 0 or t0 < time[0]:
        raise ValueError(f"window [{t0}, {t1}) starts before the timeline's first row")


def cap_metrics(timeline: Timeline, window_end: float, window_start: float = 0.0) -> dict[str, Any]:
    """P0's window metrics over ``[window_start, window_end)`` (all ratios on dynamic power):

    - ``power_utilisation`` U = time-mean of dynamic/cap over the capped part of the window;
    - ``under_utilisation`` = 1 − U and ``over_utilisation`` = U − 1 (signed: one of them is ≤ 0);
    - ``trespass``: dynamic > cap at some instant; ``max_instantaneous_break`` = max(dynamic/cap) − 1;
    - ``time_above_cap_share``: seconds with dynamic > cap over the window's length.
    """
    t0, t1 = float(window_start), float(window_end)
    time, dynamic = _timeline_arrays(timeline)
    _check_window(time, t0, t1)
    lo, hi = window_rows(time, t0, t1)
    weighted, max_dyn, capped_s, ratio_s, above_s, max_ratio, min_cap, _, capped, above = window_pass(
        time, dynamic, _window_cap(timeline, lo, hi), lo, hi, t0, t1
    )
    length = t1 - t0
    out: dict[str, Any] = {
        "mean_dynamic_w": float(weighted / length),
        "max_dynamic_w": float(max_dyn),
        "capped_share": float(capped_s / length),
    }
    if not capped:
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
    if min_cap <= 0:
        raise ValueError("a cap of 0 W in the window: ratios to it are undefined")
    u = float(ratio_s / capped_s)
    return out | {
        "power_utilisation": u,
        "under_utilisation": 1.0 - u,
        "over_utilisation": u - 1.0,
        "trespass": bool(above > 0),
        "max_instantaneous_break": float(max_ratio - 1.0),
        "time_above_cap_share": float(above_s / length),
    }


#: Watts by which the machine's power must exceed max(cap, pre-state) to count as the policy's trespass, relative to
#: the cap: the two step functions are float sums of the same samples, equal up to rounding where only the
#: pre-state runs.
_TOLERANCE = 1e-9


def _window_slice(frame: Timeline, t0: float, t1: float) -> pl.DataFrame:
    """The rows of ``frame`` whose piece may overlap ``[t0, t1)`` (zero-copy): the pieces kept inside the window,
    the value in force at ``t0`` and every change inside are those of the whole frame, so every window metric
    computed on the slice (or on its union with another slice) has the same pieces and the same value."""
    if isinstance(frame, PowerSteps):
        return frame.window(float(t0), float(t1))
    time = np.asarray(frame["time"].to_numpy(), dtype=np.float64)
    lo, hi = window_rows(time, float(t0), float(t1))
    if time.size and time[0] > t0:  # nothing before the first row: keep the frame's start as it is
        lo = 0
    return frame.slice(lo, max(hi - lo, 1))


def _pieces(timeline: pl.DataFrame, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dynamic, cap, seconds inside [t0, t1))`` of each piece of a (window-sized) frame; NaN where no cap."""
    times = timeline["time"].to_numpy()
    if times.size == 0 or t0 < times[0]:
        raise ValueError(f"window [{t0}, {t1}) starts before the timeline's first row")
    ends = np.append(times[1:], np.inf)
    seconds = np.clip(np.minimum(ends, t1) - np.maximum(times, t0), 0.0, None)
    keep = seconds > 0
    dynamic = timeline["dynamic"].to_numpy()[keep]
    cap = timeline["cap"].cast(pl.Float64).fill_null(np.nan).to_numpy()[keep]
    return dynamic, cap, seconds[keep]


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
    timeline: Timeline, prestate: Timeline | None, window_end: float, window_start: float = 0.0
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
    return _policy_cap_metrics(
        timeline, prestate, cap_metrics(timeline, window_end, window_start), window_end, window_start
    )


def _policy_cap_metrics(
    timeline: Timeline,
    prestate: Timeline | None,
    machine: dict[str, Any],
    window_end: float,
    window_start: float,
) -> dict[str, Any]:
    """:func:`policy_cap_metrics` given the machine's :func:`cap_metrics` of the same window."""
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
    both = _on_common_times(
        _window_slice(timeline, window_start, window_end), _window_slice(prestate, window_start, window_end)
    )
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


def _turnarounds(schedule: pl.DataFrame) -> np.ndarray:
    check_schedule(schedule, TIME_COLUMNS)
    if schedule.height == 0:
        raise ValueError("schedule is empty")
    return (schedule["end_time"] - schedule["submit_time"]).cast(pl.Float64).to_numpy()


def _check_same_jobs(schedule: pl.DataFrame, baseline: pl.DataFrame) -> None:
    if "job_id" in schedule.columns and "job_id" in baseline.columns:
        a, b = np.unique(schedule["job_id"].to_numpy()), np.unique(baseline["job_id"].to_numpy())
        if not np.array_equal(a, b):  # as sets (0.1 ms against 0.6 ms for Python sets; twice a power run)
            differ = np.setxor1d(a, b).size
            raise ValueError(f"schedule and baseline hold different jobs ({differ} differ): not comparable")


def turnaround_increase(schedule: pl.DataFrame, baseline_schedule: pl.DataFrame) -> float:
    """``(mean T − mean T_base) / mean T_base`` with T = end − submit: P0's cost of capping, against EASY uncapped."""
    _check_same_jobs(schedule, baseline_schedule)
    base = float(_turnarounds(baseline_schedule).mean())
    return (float(_turnarounds(schedule).mean()) - base) / base


def max_turnaround_increase(schedule: pl.DataFrame, baseline_schedule: pl.DataFrame) -> float:
    """``max T / max T_base − 1`` [AMBIG-0.11]: a ratio of maxima (the starved job need not be the same)."""
    _check_same_jobs(schedule, baseline_schedule)
    return float(_turnarounds(schedule).max() / _turnarounds(baseline_schedule).max() - 1.0)


def share_started_in_window(schedule: pl.DataFrame, window_end: float, prestarted: np.ndarray | None = None) -> float:
    """Jobs **the policy** started before ``window_end`` over all jobs of the workload [AMBIG-0.12]: "executed
    inside the window" means started. ``prestarted`` (aligned with ``schedule``) marks the jobs a window's
    pre-state started at 0 without a policy decision: they count in the denominator only. Requeued jobs the
    policy starts count like any other."""
    check_schedule(schedule, ("start_time",))
    if schedule.height == 0:
        raise ValueError("schedule is empty")
    started = schedule["start_time"].to_numpy() < window_end
    if prestarted is not None:
        started &= ~np.asarray(prestarted, dtype=bool)
    return float(started.sum() / schedule.height)


def power_summary(
    timeline: Timeline,
    schedule: pl.DataFrame,
    window_end: float,
    baseline: pl.DataFrame | None = None,
    *,
    window_start: float = 0.0,
    prestate: Timeline | None = None,
    prestarted: np.ndarray | None = None,
) -> dict[str, Any]:
    """Every P0 power metric of one run as a flat JSON-serialisable dict (energies in J, powers in W).

    The run spans ``[timeline start, last job end]``; baseline keys are present only with a ``baseline``.
    ``prestate`` is the power timeline of the window's prestarted jobs and ``prestarted`` their mask over the
    schedule's rows: the trespass metrics are then the policy's (:func:`policy_cap_metrics`) and the share
    started in the window counts the policy's starts only.
    """
    check_schedule(schedule, (*TIME_COLUMNS,))
    time, dynamic = _timeline_arrays(timeline)
    if time.size == 0:
        raise ValueError("empty timeline")
    run_start = float(time[0])
    run_end = max(float(schedule.select(pl.col("end_time").max()).item()) if schedule.height else run_start, run_start)
    window = cap_metrics(timeline, window_end, window_start)
    if isinstance(timeline, PowerSteps):  # total = dynamic + idle, the very sum the table's column holds
        total, idle = dynamic, timeline.idle_platform_watts
    else:
        total, idle = np.asarray(timeline["total"].to_numpy(), dtype=np.float64), 0.0
    (win_total, win_dynamic), (run_total, run_dynamic) = energy_pass(
        time,
        total,
        dynamic,
        idle,
        0.0,
        np.array([window_start, run_start], dtype=np.float64),
        np.array([window_end, run_end], dtype=np.float64),
    )
    out: dict[str, Any] = {
        "window_start_s": float(window_start),
        "window_end_s": float(window_end),
        **{f"window_{k}" if k.endswith("_w") or k == "capped_share" else k: v for k, v in window.items()},
        "energy_window_total_j": float(win_total),
        "energy_window_dynamic_j": float(win_dynamic),
        "run_start_s": run_start,
        "run_end_s": run_end,
        "energy_run_total_j": float(run_total),
        "energy_run_dynamic_j": float(run_dynamic),
        "share_started_in_window": share_started_in_window(schedule, window_end, prestarted)
        if schedule.height
        else None,
    }
    out.update(_policy_cap_metrics(timeline, prestate, window, window_end, window_start))
    if baseline is not None:
        out["turnaround_increase"] = turnaround_increase(schedule, baseline)
        out["max_turnaround_increase"] = max_turnaround_increase(schedule, baseline)
    return out
