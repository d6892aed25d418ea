"""Figures of paper 004's experiment (Figs. 8–15), drawn from the jobs of one or more samples of the grid.

A *sample* is one draw of the synthetic Cab data, the model's training sample and the traces (column ``sample``;
absent means one sample). Result curves show the mean over samples with a band (min–max for up to
:data:`IQR_FROM` − 1 samples, the interquartile range from then on, where min–max bands of many samples overlap),
so the spread between seeds is visible; per-job panels (Figs. 12, 13, 15) and the timeline (Fig. 14) show the
first sample, since jobs differ between samples.

Every policy has one colour, label and marker in every figure (:data:`POLICY_STYLE`), facets wrap two per row, and
each figure has one legend. Drawn on bare :class:`~matplotlib.figure.Figure` objects: no pyplot state, no display.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from wattsched.core.atomic import atomic_figure
from wattsched.core.scalars import as_float, as_int
from wattsched.studies.rmap.results import WORST_CASE, with_sample
from wattsched.studies.rmap.results import rmap_run_means as run_means

TRACE_TITLES = {
    "large": "large trace (Fig. 9)",
    "small": "small trace (Fig. 10)",
    "random1": "random trace 1 (Fig. 8)",
    "random2": "random trace 2",
}
#: policy → (label, colour, marker); the same in every figure.
POLICY_STYLE: dict[str, tuple[str, str, str]] = {
    "rmap-traditional": ("Traditional", "#4d4d4d", "s"),
    "rmap-naive": ("Naive", "#e69f00", "v"),
    "rmap-adaptive-0": ("Adaptive 0%", "#d62728", "o"),
    "rmap-adaptive-10": ("Adaptive 10%", "#9467bd", "^"),
    "rmap-adaptive-20": ("Adaptive 20%", "#0072b2", "D"),
    "rmap-adaptive-30": ("Adaptive 30%", "#009e73", "P"),
    "rmap-adaptive-unbounded": ("Adaptive unbounded", "#8c564b", "X"),
}
MAIN = ("rmap-traditional", "rmap-naive", "rmap-adaptive-0", "rmap-adaptive-10")
ADAPTIVE = ("rmap-adaptive-0", "rmap-adaptive-10", "rmap-adaptive-20", "rmap-adaptive-30", "rmap-adaptive-unbounded")
TRIO = ("rmap-traditional", "rmap-adaptive-0", "rmap-adaptive-20")


def label(policy: str) -> str:
    return POLICY_STYLE.get(policy, (policy.removeprefix("rmap-"), "", ""))[0]


#: From this many samples on, bands show the interquartile range instead of min–max.
IQR_FROM = 5


def band_label(jobs: pl.DataFrame) -> str:
    """What the bands of :func:`_band` show for these jobs."""
    n = with_sample(jobs)["sample"].n_unique()
    return "interquartile range over samples" if n >= IQR_FROM else "min–max over samples"


def _band(ax, frame: pl.DataFrame, policies: Sequence[str], column: str) -> None:
    """Mean over samples per bound, with a band when there are several samples (see :data:`IQR_FROM`)."""
    for pol in policies:
        sub = frame.filter(pl.col("policy") == pol)
        if sub.height == 0:
            continue
        agg = (
            sub.group_by("x")
            .agg(
                pl.col(column).mean().alias("m"),
                pl.col(column).min().alias("lo"),
                pl.col(column).max().alias("hi"),
                pl.col(column).quantile(0.25, "linear").alias("q1"),
                pl.col(column).quantile(0.75, "linear").alias("q3"),
                pl.len().alias("n"),
            )
            .sort("x")
        )
        name, colour, marker = POLICY_STYLE[pol]
        ax.plot(agg["x"], agg["m"], marker=marker, color=colour, label=name, lw=1.6, ms=5)
        n = as_int(agg["n"].max())
        if n > 1:
            lo, hi = ("q1", "q3") if n >= IQR_FROM else ("lo", "hi")
            ax.fill_between(agg["x"], agg[lo], agg[hi], color=colour, alpha=0.12, lw=0)


def _facets(n: int, height: float = 3.4) -> tuple[Figure, list]:
    cols = 2 if n > 1 else 1
    rows = -(-n // cols)
    fig = Figure(figsize=(5.6 * cols, height * rows + 0.9), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True).ravel().tolist()
    for ax in axes[n:]:
        ax.remove()
    return fig, axes[:n]


def _bottom_xlabels(axes: list) -> None:
    """Wrapped facets share x: the axis label only under the bottom row."""
    for ax in axes:
        if not ax.get_subplotspec().is_last_row():
            ax.set_xlabel("")


def _legend(fig: Figure, policies: Sequence[str], extra: Sequence = ()) -> None:
    handles = [
        Line2D([], [], color=POLICY_STYLE[p][1], marker=POLICY_STYLE[p][2], label=POLICY_STYLE[p][0]) for p in policies
    ] + list(extra)
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), frameon=False, fontsize=9)


def _save(fig: Figure, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    atomic_figure(fig, paths[0], dpi=130)
    atomic_figure(fig, paths[1])
    return paths


def _xaxis(ax) -> None:
    ax.set_xticks(np.round(np.array([6500, 8000, 10000, 12000, 14000]) / WORST_CASE, 2))
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:.2f}")
    ax.grid(alpha=0.3)


def fig_model_vs_oracle(jobs: pl.DataFrame, out: Path, trace: str = "random1") -> list[Path]:
    """Fig. 8: mean turnaround with the oracle (measured) and the model as the policy's data, on random trace 1."""
    means = run_means(jobs).filter(pl.col("trace") == trace)
    fig = Figure(figsize=(7.2, 4.4), layout="constrained")
    ax = fig.add_subplot()
    for data, style in (("oracle", "-"), ("model", "--")):
        for pol in ("rmap-traditional", "rmap-naive", "rmap-adaptive-0"):
            sub = means.filter((pl.col("policy") == pol) & (pl.col("data") == data))
            if sub.height == 0:
                continue
            agg = sub.group_by("x").agg(pl.col("tt").mean()).sort("x")
            _, colour, marker = POLICY_STYLE[pol]
            ax.plot(
                agg["x"], agg["tt"], style, color=colour, marker=marker, ms=5, mfc="none" if data == "model" else colour
            )
    _xaxis(ax)
    ax.set(
        xlabel="global power bound / 14,720 W",
        ylabel="mean turnaround (s)",
        title=f"{TRACE_TITLES.get(trace, trace)}: measured against predicted configuration data",
    )
    extra = [
        Line2D([], [], color="k", ls="-", label="oracle data"),
        Line2D([], [], color="k", ls="--", label="model data"),
    ]
    _legend(fig, ("rmap-traditional", "rmap-naive", "rmap-adaptive-0"), extra)
    return _save(fig, out, "fig08_model_vs_oracle")


def fig_traces(jobs: pl.DataFrame, out: Path) -> list[Path]:
    """Figs. 8–10: mean turnaround normalised to Traditional per trace and bound (one facet per trace)."""
    means = run_means(jobs).filter(pl.col("default_data"))
    traces = [t for t in ("large", "small", "random1", "random2") if t in set(means["trace"])]
    fig, axes = _facets(len(traces))
    for ax, trace in zip(axes, traces, strict=True):
        _band(ax, means.filter(pl.col("trace") == trace), MAIN, "vs_trad")
        ax.axhline(1.0, color="k", lw=0.7)
        _xaxis(ax)
        ax.set(title=TRACE_TITLES[trace], ylabel="turnaround / Traditional", xlabel="global power bound / 14,720 W")
    _bottom_xlabels(axes)
    _legend(fig, MAIN)
    fig.suptitle(f"Mean turnaround normalised to Traditional (lower is better; band: {band_label(jobs)})")
    return _save(fig, out, "fig09_10_traces")


def fig_thresholds(jobs: pl.DataFrame, out: Path) -> list[Path]:
    """Fig. 11: Adaptive with thresholds 0–30% and unbounded, normalised to Naive."""
    means = run_means(jobs).filter(pl.col("default_data"))
    traces = [t for t in ("large", "random1", "random2", "small") if t in set(means["trace"])]
    fig, axes = _facets(len(traces))
    for ax, trace in zip(axes, traces, strict=True):
        _band(ax, means.filter(pl.col("trace") == trace), ADAPTIVE, "vs_naive")
        ax.axhline(1.0, color=POLICY_STYLE["rmap-naive"][1], lw=0.9, ls=":")
        _xaxis(ax)
        ax.set(
            title=TRACE_TITLES[trace].split(" (")[0],
            ylabel="turnaround / Naive",
            xlabel="global power bound / 14,720 W",
        )
    _bottom_xlabels(axes)
    _legend(fig, ADAPTIVE, [Line2D([], [], color=POLICY_STYLE["rmap-naive"][1], ls=":", label="Naive")])
    fig.suptitle(f"Adaptive with thresholds (Fig. 11; lower is better; band: {band_label(jobs)})")
    return _save(fig, out, "fig11_thresholds")


def fig_per_job(jobs: pl.DataFrame, out: Path, trace: str, bound: float, name: str, title: str) -> list[Path]:
    """Figs. 12–13 and 15: per job, turnaround; wait and run; allocated power with the fair-share bound."""
    jobs = with_sample(jobs)
    first = as_int(jobs["sample"].min())
    sub = jobs.filter(
        (pl.col("trace") == trace) & (pl.col("bound") == bound) & pl.col("default_data") & (pl.col("sample") == first)
    )
    if sub.height == 0:
        return []
    fig = Figure(figsize=(13, 9), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    width = 0.8 / len(TRIO)
    for k, pol in enumerate(TRIO):
        p = sub.filter(pl.col("policy") == pol).sort("job_id")
        if p.height == 0:
            continue
        x = p["job_id"].to_numpy() + (k - (len(TRIO) - 1) / 2) * width
        colour = POLICY_STYLE[pol][1]
        axes[0].bar(x, p["turnaround"], width, color=colour)
        axes[1].bar(x, p["wait"], width, color=colour, alpha=0.35, hatch="///", edgecolor=colour, lw=0)
        axes[1].bar(x, p["runtime"], width, bottom=p["wait"], color=colour)
        axes[2].bar(x, p["alloc_power"], width, color=colour)
    fair = sub.filter(pl.col("policy") == TRIO[0]).sort("job_id")
    axes[2].scatter(fair["job_id"], fair["p_job"], marker="_", s=220, color="k", lw=2, zorder=3)
    axes[0].set(ylabel="turnaround (s)")
    axes[1].set(ylabel="wait (hatched) + run (s)")
    axes[2].set(ylabel="allocated power (W)", xlabel="job")
    axes[2].axhline(bound, color="k", lw=0.6, ls=":")
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
    axes[2].set_xticks(fair["job_id"].to_list())
    extra = [
        Patch(facecolor="0.6", alpha=0.35, hatch="///", label="wait"),
        Patch(facecolor="0.4", label="run"),
        Line2D([], [], color="k", marker="_", ls="", ms=14, mew=2, label="fair-share P_job (Adaptive)"),
        Line2D([], [], color="k", lw=0.6, ls=":", label="global bound"),
    ]
    handles = [Patch(facecolor=POLICY_STYLE[p][1], label=POLICY_STYLE[p][0]) for p in TRIO] + extra
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False, fontsize=9)
    fig.suptitle(f"{title}, {bound:,.0f} W, sample {first}: per job")
    return _save(fig, out, name)


def power_timeline(run: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Allocated system power as a step function: (times, watts from each time on), from starts and ends."""
    starts = run.select(pl.col("start_time").alias("t"), pl.col("alloc_power").alias("dp"))
    ends = run.select(pl.col("end_time").alias("t"), (-pl.col("alloc_power")).alias("dp"))
    ev = pl.concat([starts, ends]).group_by("t").agg(pl.col("dp").sum()).sort("t")
    times = np.concatenate([[0.0], ev["t"].to_numpy()])
    watts = np.concatenate([[0.0], np.cumsum(ev["dp"].to_numpy())])
    return times, np.maximum(watts, 0.0)


def fig_timeline(jobs: pl.DataFrame, out: Path, trace: str = "random2", bound: float | None = None) -> list[Path]:
    """Fig. 14: allocated system power over time (a step function; markers at each start), and the arrivals."""
    jobs = with_sample(jobs)
    first = as_int(jobs["sample"].min())
    bound = as_float(jobs["bound"].max()) if bound is None else bound
    sub = jobs.filter(
        (pl.col("trace") == trace) & (pl.col("bound") == bound) & pl.col("default_data") & (pl.col("sample") == first)
    )
    if sub.height == 0:
        return []
    fig = Figure(figsize=(10, 4.4), layout="constrained")
    ax = fig.add_subplot()
    for pol, ls in (("rmap-traditional", "-"), ("rmap-adaptive-0", "--")):
        run = sub.filter(pl.col("policy") == pol)
        if run.height == 0:
            continue
        t, w = power_timeline(run)
        _, colour, marker = POLICY_STYLE[pol]
        ax.step(t, w, where="post", color=colour, ls=ls, lw=1.5)
        at = run.sort("start_time")["start_time"].to_numpy()
        ax.plot(at, w[np.searchsorted(t, at, side="right") - 1], ls="", marker=marker, color=colour, ms=4)
    arrivals = sub.filter(pl.col("policy") == "rmap-traditional")["submit_time"].to_numpy()
    ax.plot(arrivals, np.full(arrivals.size, bound * 0.02), ls="", marker="|", color="tab:blue", ms=10)
    ax.axhline(bound, color="k", lw=0.7, ls=":")
    ax.set(
        xlabel="time (s)",
        ylabel="allocated power (W)",
        ylim=(0, bound * 1.08),
        title=f"random trace 2 at {bound:,.0f} W (sample {first}): allocated power; markers at each start",
    )
    ax.grid(alpha=0.3)
    extra = [
        Line2D([], [], color="tab:blue", marker="|", ls="", ms=10, label="arrivals"),
        Line2D([], [], color="k", lw=0.7, ls=":", label="global bound"),
    ]
    handles = [
        Line2D([], [], color=POLICY_STYLE[p][1], ls=ls, marker=POLICY_STYLE[p][2], label=POLICY_STYLE[p][0])
        for p, ls in (("rmap-traditional", "-"), ("rmap-adaptive-0", "--"))
    ]
    fig.legend(handles=handles + extra, loc="outside lower center", ncols=4, frameon=False, fontsize=9)
    return _save(fig, out, "fig14_timeline")


def write_rmap_figures(jobs: pl.DataFrame, out: str | Path) -> list[Path]:
    """Figs. 8–15 (PNG and SVG) into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    low, high = as_float(jobs["bound"].min()), as_float(jobs["bound"].max())
    paths: list[Path] = []
    if "model" in set(jobs["data"]) and "oracle" in set(jobs["data"]):
        paths += fig_model_vs_oracle(jobs, out)
    paths += fig_traces(jobs, out)
    paths += fig_thresholds(jobs, out)
    paths += fig_per_job(jobs, out, "large", low, "fig12_13_large", "large trace")
    paths += fig_timeline(jobs, out, "random2", high)
    paths += fig_per_job(jobs, out, "random2", high, "fig15_random2", "random trace 2")
    return paths
