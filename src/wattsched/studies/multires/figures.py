"""Figures of a dispatch campaign, the equivalents of paper 001's Figs. 1–5 (PNG and SVG), and the summary table.

- Fig. 1: distribution of job durations (the paper's "Distribution of job durations on Eurora": duration in hours
  up to the 24 h maximum, number of jobs on a log axis, the paper's long tail), with the short / medium / long
  shares of the paper's §2 beside ours;
- Fig. 2: distribution of the absolute duration-prediction error, data-driven rules against the walltime, over
  every distinct job of the instances (trace protocol: each job predicted at its submission from the jobs the
  trace shows completed by then);
- Fig. 3: slowdown per dispatcher × estimate (W, D, R as the paper: walltime, data-driven rules, real) over the
  jobs that wait in at least one combination (the paper's filter): a violin (log scale) over the jobs that wait in
  that combination, their share on top, and the mean over all filtered jobs (the paper's triangles);
- Fig. 4: slowdown box plots per job class, one panel per class that has jobs (panels wrap; a log axis only where
  the drawn range spans more than a decade, so no 1.035×10⁰ ticks);
- Fig. 5: distribution of the number of queued jobs at every second (seconds where every combination's queue is
  empty left out), on a log axis above 1 since LJF's queues dwarf the others.

Every panel gives a dispatcher one colour and shades it by estimate (W light, D middle, R full), with one legend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MultipleLocator, NullFormatter, ScalarFormatter

from wattsched.core.atomic import atomic_figure, atomic_table
from wattsched.core.scalars import as_float, as_number
from wattsched.core.schema import sort_queue_order
from wattsched.core.store import read_manifest
from wattsched.predict.runtime import predict_runtime
from wattsched.studies.multires.dispatchers import DISPATCHERS
from wattsched.studies.multires.metrics import CLASSES, moved_jobs, queue_mean, weighted_quantiles
from wattsched.studies.multires.results import (
    ESTIMATES,
    dispatch_summary,
    load_dispatch_jobs,
    queue_distributions,
)
from wattsched.workload.eurora import read_eurora

ESTIMATE_COLOURS = {"walltime": "#4c72b0", "rules": "#dd8452", "real": "#55a868"}
#: One colour per dispatcher in every panel; the estimate is the shade.
DISPATCHER_COLOURS = {
    "fifo": "#7f7f7f",
    "sjf": "#1f77b4",
    "ljf": "#ff7f0e",
    "ebf": "#2ca02c",
    "easy": "#17becf",
    "prb": "#9467bd",
    "cph": "#d62728",
}
SHADE = {"walltime": 0.35, "rules": 0.65, "real": 1.0}
NAMES = {"walltime": "walltime", "rules": "data-driven rules", "real": "real durations"}
#: The paper's letters: W = walltime, D = data-driven (rules), R = real durations.
LETTERS = {"walltime": "W", "rules": "D", "real": "R"}


def _combos(frame: pl.DataFrame) -> list[tuple[str, str]]:
    present = set(frame.select("dispatcher", "estimate").unique().iter_rows())
    return [(d, e) for d in DISPATCHERS for e in ESTIMATES if (d, e) in present]


def _save(fig: Figure, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for p in paths:
        atomic_figure(fig, p, dpi=120, bbox_inches="tight")
    return paths


def prediction_errors(directory: Path) -> pl.DataFrame:
    """Per distinct job of the campaign's instances: absolute error (s) of the rules and of the walltime."""
    # the instance files in the order they were planned (paths resolved then)
    files = list(dict.fromkeys(run["instance"] for run in read_manifest(directory)["runs"]))
    jobs, _, _ = read_eurora(files)
    jobs = sort_queue_order(jobs)
    pred = predict_runtime(jobs, "rules", "trace")["pred_runtime"]
    truth = jobs["runtime"]
    return pl.DataFrame({"rules": (pred - truth).abs(), "walltime": (jobs["walltime"] - truth).abs()})


def write_dispatch_figures(directory: str | Path, out: str | Path) -> list[Path]:
    """Write the four figures and ``summary.csv`` into ``out``; returns the paths."""
    directory, out = Path(directory), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = plot_figures(
        load_dispatch_jobs(directory), queue_distributions(directory), prediction_errors(directory), out
    )
    summary = dispatch_summary(directory)
    atomic_table(summary, out / "summary.csv")
    paths.append(out / "summary.csv")
    return paths


def _positions(combos: list[tuple[str, str]]) -> np.ndarray:
    """x positions grouped by dispatcher: the estimates side by side, a gap between dispatchers."""
    group = {d: i for i, d in enumerate(dict.fromkeys(d for d, _ in combos))}
    return np.array([group[d] * (len(ESTIMATES) + 1) + ESTIMATES.index(e) for d, e in combos], dtype=float)


def _style(ax: Axes, combos: list[tuple[str, str]], artists: list[Any], pos: np.ndarray) -> None:
    """Dispatcher colour, estimate shade (W light, D middle, R full); W/D/R ticks and dispatcher names below."""
    for art, (d, e) in zip(artists, combos, strict=True):
        art.set_facecolor(DISPATCHER_COLOURS[d])
        art.set_alpha(SHADE[e])
        art.set_edgecolor("black")
        art.set_linewidth(0.6)
    ax.set_xticks(pos, [LETTERS[e] for _, e in combos])
    for d in dict.fromkeys(d for d, _ in combos):
        x = pos[[i for i, c in enumerate(combos) if c[0] == d]].mean()
        ax.annotate(
            d.upper(),
            (x, 0),
            xycoords=("data", "axes fraction"),
            xytext=(0, -22),
            textcoords="offset points",
            ha="center",
            va="top",
            fontweight="bold",
            color=DISPATCHER_COLOURS[d],
        )
    ax.set_xlim(pos.min() - 0.8, pos.max() + 0.8)
    ax.grid(axis="y", alpha=0.3)


def _y_scale(ax: Axes, values: list[np.ndarray]) -> None:
    """Log axis with plain labels when the drawn range (5–95% and means) spans more than a decade; a plain linear
    axis otherwise (a log axis over 1–1.04 labels its ticks 1.035×10⁰, or only 1)."""
    drawn = [np.concatenate([np.percentile(v, [5, 95]), [v.mean()]]) for v in values if v.size]
    allv = np.concatenate(drawn or [np.ones(1)])
    lo, hi = float(allv.min()), float(allv.max())
    if lo > 0 and hi / lo > 10:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.yaxis.set_major_formatter(ScalarFormatter(useOffset=False))


def _legend(fig: Figure, combos: list[tuple[str, str]]) -> None:
    handles: list[Artist] = [
        Patch(facecolor=DISPATCHER_COLOURS[d], edgecolor="black", label=d.upper())
        for d in dict.fromkeys(d for d, _ in combos)
    ]
    handles += [
        Patch(facecolor="grey", alpha=SHADE[e], edgecolor="black", label=f"{LETTERS[e]} = {NAMES[e]}")
        for e in ESTIMATES
    ]
    handles.append(Line2D([], [], marker="^", color="black", linestyle="", label="mean"))
    fig.legend(handles=handles, loc="outside lower center", ncols=5, frameon=False, fontsize="small")


def plot_durations(errors: pl.DataFrame, facts: dict[str, float], out: Path) -> Path:
    """Fig. 1: the distribution of the true job durations (``errors["runtime"]``, s) in hours over the paper's 0–24 h
    range (hourly bins, jobs on a log axis), the class boundaries at 1 and 12 h, and per class the share of jobs
    and of CPU time, ours (``facts``: ``share_*``, ``cpu_*``) beside the paper's §2. PNG and SVG in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    hours = errors["runtime"].to_numpy() / 3600
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.hist(hours, bins=np.arange(0, 24.5, 0.5).tolist(), color=ESTIMATE_COLOURS["real"], alpha=0.8)
    for x in (1, 12):
        ax.axvline(x, color="black", linestyle=":", linewidth=1)
    paper = {"short": (93.15, 10.77), "medium": (6.82, 87.63), "long": (0.03, 1.6)}
    lines = ["class: jobs / CPU time, ours (paper)"] + [
        f"{c}: {100 * facts[f'share_{c}']:.2f}% / {100 * facts[f'cpu_{c}']:.1f}% ({p[0]}% / {p[1]}%)"
        for c, p in paper.items()
    ]
    ax.text(0.98, 0.97, "\n".join(lines), transform=ax.transAxes, ha="right", va="top", fontsize="small")
    ax.set(
        xlabel="job duration (hours; classes < 1 h, 1–12 h, > 12 h)",
        ylabel="number of jobs (log scale)",
        yscale="log",
        xlim=(0, 24),
        title=f"distribution of job durations ({hours.size:,} Eurora jobs, 5-day sample; paper: 372,321 jobs)",
    )
    ax.title.set_fontsize("medium")
    ax.xaxis.set_major_locator(MultipleLocator(2))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    return _save(fig, out, "fig1_job_durations")[0]


def plot_figures(
    jobs: pl.DataFrame, queues: dict[tuple[str, str], np.ndarray], errors: pl.DataFrame, out: Path
) -> list[Path]:
    """Figs. 2–5 from the runs' jobs (with ``instance``, ``wait``, ``slowdown``, ``job_class``), the queue-length
    histograms per combination and the prediction errors (``rules``, ``walltime`` in s); PNG and SVG in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    combos = _combos(jobs)
    pos = _positions(combos)
    paths: list[Path] = []

    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    top = float(max(as_number(errors["walltime"].max() or 1), as_number(errors["rules"].max() or 1))) / 60
    bins = np.linspace(0, top, 60)
    for name in ("walltime", "rules"):
        minutes = errors[name].to_numpy() / 60
        ax.hist(
            minutes,
            bins=bins,  # type: ignore[arg-type]  # matplotlib's stubs: an array of edges is accepted
            alpha=0.6,
            color=ESTIMATE_COLOURS[name],
            label=f"{LETTERS[name]}: {NAMES[name]} (MAE {minutes.mean():.1f} min)",
        )
    ax.set(
        xlabel="absolute error (min)",
        ylabel="jobs",
        yscale="log",
        title=f"duration prediction error over {errors.height:,} jobs",
    )
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.legend()
    paths += _save(fig, out, "fig2_prediction_error")

    shown = moved_jobs(jobs)
    n_moved = shown.select("instance", "job_id").unique().height
    per = {c: shown.filter((pl.col("dispatcher") == c[0]) & (pl.col("estimate") == c[1])) for c in combos}
    fig = Figure(figsize=(max(8, 0.45 * len(combos) + 2), 4.8), layout="constrained")
    ax = fig.add_subplot()
    waited = [np.log10(per[c].filter(pl.col("wait") > 0)["slowdown"].to_numpy()) for c in combos]
    parts = ax.violinplot(
        [w if w.size else np.zeros(1) for w in waited], positions=pos, widths=0.85, showextrema=False, showmedians=True
    )
    _style(ax, combos, parts["bodies"], pos)  # type: ignore[arg-type]  # matplotlib's stubs: "bodies" is a list
    parts["cmedians"].set_color("black")
    means = [as_float(per[c]["slowdown"].mean() or 1.0) for c in combos]
    ax.plot(pos, np.log10(means), "^", color="black", markersize=5)
    ax.yaxis.set_major_locator(MultipleLocator(1))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{10**v:g}"))
    for x, c, w in zip(pos, combos, waited, strict=True):
        ax.annotate(
            f"{w.size / max(per[c].height, 1):.0%}",
            (x, 1),
            xycoords=("data", "axes fraction"),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize="x-small",
        )
    ax.set(ylabel="slowdown (log scale)")
    ax.set_title(
        f"slowdown of the {n_moved:,} jobs that wait in some combination\nviolins: the jobs that wait in that "
        f"combination (share on top); ▲ mean over all {n_moved:,}",
        fontsize="medium",
        pad=14,
    )
    _legend(fig, combos)
    paths += _save(fig, out, "fig3_slowdown")

    present = [c for c in CLASSES if shown.filter(pl.col("job_class") == c).height]
    ncols = max(1, min(len(present), 2))
    nrows = -(-len(present) // ncols) if present else 1
    fig = Figure(figsize=(max(8, 0.4 * len(combos) + 2) * ncols / 1.4, 3.6 * nrows + 0.8), layout="constrained")
    if not present:  # no job waited in any combination: say so rather than save a zero-width figure
        ax = fig.add_subplot()
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no job waits in any combination", ha="center", va="center")
    for i, job_class in enumerate(present):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        cls = shown.filter(pl.col("job_class") == job_class)
        values = [
            cls.filter((pl.col("dispatcher") == d) & (pl.col("estimate") == e))["slowdown"].to_numpy()
            for d, e in combos
        ]
        box = ax.boxplot(
            [v if v.size else np.ones(1) for v in values],
            positions=pos,
            widths=0.8,
            patch_artist=True,
            showfliers=False,
            whis=(5, 95),
            medianprops={"color": "black"},
        )
        _style(ax, combos, box["boxes"], pos)
        ax.plot(pos, [v.mean() if v.size else np.nan for v in values], "^", color="black", markersize=4)
        _y_scale(ax, values)
        ax.set_title(f"{job_class} jobs ({cls.height // max(len(combos), 1):,} per combination)", fontsize="medium")
        ax.set_ylabel("slowdown")
    fig.suptitle("slowdown per job class (jobs that wait in some combination; whiskers 5–95%)")
    _legend(fig, combos)
    paths += _save(fig, out, "fig4_slowdown_classes")

    fig = Figure(figsize=(max(8, 0.45 * len(combos) + 2), 4.6), layout="constrained")
    ax = fig.add_subplot()
    stats: list[dict[str, Any]] = []
    for d, e in combos:
        hist = queues.get((d, e), np.zeros(1))
        q = weighted_quantiles(hist, (0.05, 0.25, 0.5, 0.75, 0.95))
        stats.append(
            {
                "whislo": q[0],
                "q1": q[1],
                "med": q[2],
                "q3": q[3],
                "whishi": q[4],
                "fliers": [],
                "mean": queue_mean(hist),
            }
        )
    box = ax.bxp(
        stats,
        positions=pos,
        widths=0.8,
        patch_artist=True,
        showfliers=False,
        showmeans=True,
        meanprops={"marker": "^", "markerfacecolor": "black", "markeredgecolor": "black"},
        medianprops={"color": "black"},
    )
    _style(ax, combos, box["boxes"], pos)
    ax.set_yscale("symlog", linthresh=1)  # LJF's queues dwarf the others; 0 stays on the axis
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylim(0, 1.5 * max([st["whishi"] for st in stats] + [st["mean"] for st in stats] + [1.0]))
    ax.set(ylabel="queued jobs (log scale above 1)")
    ax.set_title("queue length at every second where some combination has a queue (whiskers 5–95%)", fontsize="medium")
    _legend(fig, combos)
    paths += _save(fig, out, "fig5_queue_length")
    return [p for p in paths if p.suffix == ".png"] + [p for p in paths if p.suffix != ".png"]
