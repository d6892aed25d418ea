"""The advisor's figures: predicted and measured power against the cap over a shadow run (from the store), and a
replay's power over time with and without the cap. Drawn with matplotlib on bare Figures (``plots.style``);
they live here because the compute packages (``advise`` included, beside ``campaign``) draw no plots."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

from wattsched.advise.replay import ReplayResult
from wattsched.advise.shadow_report import ShadowReport
from wattsched.plots.style import OTHER_COLOUR, save_figure

__all__ = ["replay_figure", "shadow_figure", "write_replay_figure", "write_shadow_figure"]

_MEASURED, _PREDICTED, _CAP, _UNCAPPED = "#0072B2", "#E69F00", "#D55E00", "#7f7f7f"


def _dates(seconds: np.ndarray) -> np.ndarray:
    return np.array([datetime.fromtimestamp(float(s), UTC) for s in seconds], dtype=object)


def _time_axis(ax: object) -> None:
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)  # type: ignore[attr-defined]
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[attr-defined]
    ax.set_xlabel("time (UTC)")  # type: ignore[attr-defined]


def shadow_figure(report: ShadowReport) -> Figure:
    """Predicted and measured power per cycle against the cap, the would-delay/advance jobs as ticks."""
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax = fig.add_subplot()
    p = report.power
    t = _dates(p["time"].to_numpy())
    ax.step(t, p["cap"].to_numpy(), where="post", color=_CAP, lw=1.5, label="cap")
    ax.step(t, p["predicted_power"].to_numpy(), where="post", color=_PREDICTED, label="predicted (advisor)")
    ax.step(t, p["measured_power"].to_numpy(), where="post", color=_MEASURED, label="measured (CurrentWatts)")
    for would, marker in (("delay", "v"), ("advance", "^")):
        times = report.jobs.filter(report.jobs["would"] == would)["time"].to_numpy()
        if times.size:
            top = np.nanmax(p["cap"].fill_null(np.nan).to_numpy()) if p["cap"].null_count() < p.height else 0.0
            ax.plot(_dates(times), np.full(times.size, top), marker, color=OTHER_COLOUR, ls="", label=f"would {would}")
    ax.set_ylabel("power (W, the cap's basis)")
    ax.set_title("wattsched advise, shadow mode: predicted and measured power against the cap")
    _time_axis(ax)
    ax.legend(loc="best", fontsize="small")
    return fig


def replay_figure(result: ReplayResult) -> Figure:
    """A replay's power over time (the jobs' true power) with and without the cap, against the cap; with power
    domains, a second panel with each domain's power in the capped run against its own cap."""
    s = result.summary
    domains = s.get("domains") or {}
    fig = Figure(figsize=(10, 6.8 if domains else 4.2), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True) if domains else [fig.add_subplot()]
    ax = axes[0]
    p = result.power
    t = _dates(p["time"].to_numpy())
    ax.step(t, p["uncapped_watts"].to_numpy(), where="post", color=_UNCAPPED, label="without cap")
    ax.step(t, p["capped_watts"].to_numpy(), where="post", color=_MEASURED, label="with the advisor's licenses")
    ax.step(t, p["cap_watts"].to_numpy(), where="post", color=_CAP, lw=1.5, label="cap")
    ax.set_title(
        f"replay of {Path(s['dump']).name}: peak {s['peak_watts']['capped']:,.0f} W capped vs "
        f"{s['peak_watts']['uncapped']:,.0f} W; mean wait +{s['wait_s']['increase']['mean']:,.0f} s"
    )
    ax.set_ylabel("power (W, the cap's basis)")
    ax.legend(loc="best", fontsize="small")
    if domains:
        dx = axes[1]
        for k, (name, d) in enumerate(domains.items()):
            colour = f"C{k % 10}"
            dx.step(t, p[f"domain_{name}_watts"].to_numpy(), where="post", color=colour, label=name)
            dx.axhline(d["cap_watts"], color=colour, ls="--", lw=1.2)
        dx.set_ylabel("power per domain (W; dashed: its cap)")
        dx.set_title("power domains, with the advisor's licenses and placement")
        dx.legend(loc="best", fontsize="small")
    _time_axis(axes[-1])
    return fig


def write_shadow_figure(report: ShadowReport, out_dir: str | Path) -> list[Path]:
    """``advisor-power.png`` and ``.svg`` in ``out_dir``."""
    return save_figure(shadow_figure(report), out_dir, "advisor-power")


def write_replay_figure(result: ReplayResult, out_dir: str | Path) -> list[Path]:
    """``replay-power.png`` and ``.svg`` in ``out_dir``."""
    return save_figure(replay_figure(result), out_dir, "replay-power")
