"""Static figures of a campaign directory (PNG and SVG), the equivalents of paper 000's Figs. 3–7 plus a Gantt
chart of one run with its power timeline.

- per-metric box plots over workload windows, one facet per cap (and per policy when the grid has several):
  mean power in the window against the cap (Fig. 4), turnaround increase (Fig. 5), share of the window above the
  cap (Fig. 6), max-turnaround increase (Fig. 7c), share of jobs started in the window (Fig. 7d) and the maximum
  instantaneous cap break;
- a Gantt chart of one run (jobs over time × nodes) above its dynamic power and cap, on one time axis, which
  shows *why* a run breaks or under-uses the cap;
- prediction errors (Fig. 3): per-user MAE of the power predictor against a global-mean baseline, and predicted
  against true values.

Figures are drawn on bare :class:`matplotlib.figure.Figure` objects (no pyplot), so that making them changes
no global state and needs no display.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.collections import PolyCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, PercentFormatter

from wattsched.api import run_policy
from wattsched.campaign.runner import load_results
from wattsched.campaign.summary import (
    campaign_summary,
    capped_runs,
    estimator_label,
    estimator_order,
)
from wattsched.core.store import CampaignError, read_manifest
from wattsched.policies.powercheck import PowerCheck
from wattsched.power.platform import PowerCapSchedule, load_platform
from wattsched.power.run import PowerSetup
from wattsched.predict.evaluate import POWER_METRICS, per_user_mae
from wattsched.workload.load import load_workload

__all__ = [
    "METRICS",
    "GanttData",
    "MetricFigure",
    "campaign_summary",
    "check_colour",
    "default_gantt_run",
    "gantt_data",
    "gantt_rectangles",
    "global_mean_baseline",
    "per_user_errors",
    "plot_gantt",
    "plot_metric",
    "plot_policies",
    "plot_prediction_errors",
    "plot_prediction_scatter",
    "predicted_metrics",
    "prediction_files",
    "resample_step",
    "run_title",
    "source_colour",
    "write_figures",
]

#: Colour per power source (Okabe–Ito, readable by colour-blind readers and in grey print).
SOURCE_COLOURS = {"naive": "#7f7f7f", "predicted": "#E69F00", "real": "#0072B2"}
OTHER_COLOUR = "#009E73"
#: Above this many rectangles the Gantt's jobs are rasterised inside the SVG (a vector file stays small).
RASTERISE_ABOVE = 3000


def source_colour(source: str) -> str:
    """One colour per power source, the same in every figure and in the dashboard."""
    return SOURCE_COLOURS.get(source, OTHER_COLOUR)


# --------------------------------------------------------------------------------------------- metric boxes


@dataclass(frozen=True)
class MetricFigure:
    """One metric figure: what to plot per run (an expression over the result row), and how to read it."""

    key: str
    title: str
    ylabel: str
    value: Callable[[], pl.Expr]
    reference: str | float | None = 0.0  # "cap": a line at each facet's cap; a number: a dashed line there
    paper: str = ""


#: The metric figures, in the paper's order. Values are fractions; axes show them as percents.
METRICS: dict[str, MetricFigure] = {
    m.key: m
    for m in (
        MetricFigure(
            "power_utilisation",
            "Mean dynamic power in the power window against the cap",
            "mean dynamic power (% of the dynamic range)",
            lambda: pl.col("p_power_utilisation") * pl.col("cap"),
            "cap",
            "Fig. 4",
        ),
        MetricFigure(
            "turnaround_increase",
            "Mean turnaround increase against uncapped EASY",
            "mean turnaround increase",
            lambda: pl.col("p_turnaround_increase"),
            0.0,
            "Fig. 5",
        ),
        MetricFigure(
            "time_above_cap",
            "Share of the power window spent above the cap",
            "time above the cap (% of the window)",
            lambda: pl.col("p_time_above_cap_share"),
            None,
            "Fig. 6",
        ),
        MetricFigure(
            "max_turnaround_increase",
            "Max turnaround increase against uncapped EASY (starvation)",
            "max turnaround increase",
            lambda: pl.col("p_max_turnaround_increase"),
            0.0,
            "Fig. 7c",
        ),
        MetricFigure(
            "share_started_in_window",
            "Share of the workload's jobs started inside the power window",
            "jobs started in the window",
            lambda: pl.col("p_share_started_in_window"),
            None,
            "Fig. 7d",
        ),
        MetricFigure(
            "max_instantaneous_break",
            "Largest instantaneous cap break in the window",
            "max dynamic power / cap − 1",
            lambda: pl.col("p_max_instantaneous_break"),
            0.0,
            "",
        ),
    )
}


def _layout(estimators: list[str], checks: dict[str, str]) -> tuple[list[float], list[tuple[float, str]]]:
    """Box positions (a gap between checks, so that a check's sources stand together) and one tick per check."""
    positions: list[float] = []
    ticks: list[tuple[str, list[float]]] = []
    x, previous = 0.0, None
    for est in estimators:
        check = checks[est]
        if previous is not None:
            x += 1.0 if check == previous else 1.6
        positions.append(x)
        if check != previous:
            ticks.append((check, []))
        ticks[-1][1].append(x)
        previous = check
    return positions, [(float(np.mean(xs)), check) for check, xs in ticks]


def _hours(seconds: float) -> str:
    h = seconds / 3600.0
    return f"{h:g} h" if abs(h - round(h, 2)) < 1e-9 else f"{seconds:g} s"


#: Colour per power check, the same in every panel and figure (Okabe–Ito): conservative checks cool, aggressive
#: ones warm. The source is drawn as a hatch (predicted) or a plain box (real).
CHECK_COLOURS = {
    "naive": "#7f7f7f",
    "max": "#0072B2",
    "gaussian99": "#56B4E9",
    "gaussian95": "#009E73",
    "gaussian68": "#E69F00",
    "mean": "#D55E00",
}
PREDICTED_HATCH = "////"
#: One estimator's values above this many times the others' make the axis symmetric-log (naive dwarfs the rest).
DWARF_RATIO = 5.0


def check_colour(check: str) -> str:
    """One colour per power check (other checks: a neutral green)."""
    return CHECK_COLOURS.get(check, OTHER_COLOUR)


def _grid_shape(panels: int, ncols: int = 2) -> tuple[int, int]:
    cols = min(panels, ncols)
    return -(-panels // cols), cols


def _dwarfed(values: dict[str, np.ndarray]) -> float | None:
    """The linear threshold of a symlog axis when one series' extent dwarfs every other's, else None."""
    extents = {k: float(np.nanmax(np.abs(v))) for k, v in values.items() if v.size and np.isfinite(v).any()}
    if len(extents) < 2:
        return None
    top = max(extents, key=extents.get)
    rest = max(v for k, v in extents.items() if k != top)
    if rest > 0 and extents[top] > DWARF_RATIO * rest:
        return float(10 ** np.ceil(np.log10(rest)))
    return None


def _symlog(ax: Any, linthresh: float) -> None:
    ax.set_yscale("symlog", linthresh=linthresh, linscale=2.0)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:.3g}%"))


def plot_metric(results: pl.DataFrame, key: str, out_dir: str | Path, *, ncols: int = 2) -> list[Path]:
    """Box plots of one metric of :data:`METRICS` per estimator, over workload windows (dots = runs), one facet
    per cap and policy, wrapped ``ncols`` to a row; colour = power check (:data:`CHECK_COLOURS`), hatched =
    predicted. When one estimator (naive) dwarfs the others the axis is symmetric-log, linear near zero. Writes
    ``<key>.png`` and ``<key>.svg``."""
    spec = METRICS[key]
    runs = capped_runs(results)
    if runs.is_empty():
        raise CampaignError("no finished capped run to plot")
    runs = runs.with_columns(spec.value().cast(pl.Float64).alias("_y"))
    estimators = estimator_order(runs)
    pairs = dict(runs.select("estimator", "check").unique().rows())
    sources = dict(runs.select("estimator", "source").unique().rows())
    positions, ticks = _layout(estimators, pairs)
    caps = sorted(runs["cap"].unique().to_list())
    policies = sorted(runs["policy"].unique().to_list())
    cells = [(p, c) for p in policies for c in caps]
    nrows, cols = _grid_shape(len(cells), ncols)
    width = max(3.6, 0.42 * len(estimators) + 1.4)
    fig = Figure(figsize=(width * cols + 0.8, 3.3 * nrows + 1.6), layout="constrained")
    axes = fig.subplots(nrows, cols, sharey=True, squeeze=False).ravel()
    per_est = {e: runs.filter(pl.col("estimator") == e)["_y"].drop_nulls().drop_nans().to_numpy() for e in estimators}
    linthresh = _dwarfed(per_est) if spec.reference != "cap" else None
    rng = np.random.default_rng(0)
    for ax, (policy, cap) in zip(axes, cells, strict=False):
        cell = runs.filter((pl.col("policy") == policy) & (pl.col("cap") == cap))
        data, where, est_here = [], [], []
        for est, x in zip(estimators, positions, strict=True):
            y = cell.filter(pl.col("estimator") == est)["_y"].drop_nulls().drop_nans().to_numpy()
            if y.size:
                data.append(y)
                where.append(x)
                est_here.append(est)
        if data:
            boxes = ax.boxplot(
                data,
                positions=where,
                widths=0.7,
                showfliers=False,
                patch_artist=True,
                medianprops={"color": "black", "linewidth": 1.4},
            )
            for patch, est in zip(boxes["boxes"], est_here, strict=True):
                patch.set_facecolor(check_colour(pairs[est]))
                patch.set_alpha(0.6)
                if sources[est] == "predicted":
                    patch.set_hatch(PREDICTED_HATCH)
            for y, x, est in zip(data, where, est_here, strict=True):
                jitter = rng.uniform(-0.18, 0.18, y.size)
                ax.scatter(
                    x + jitter, y, s=9, color=check_colour(pairs[est]), edgecolors="black", linewidths=0.3, zorder=3
                )
        if spec.reference == "cap":
            ax.axhline(cap, color="black", linewidth=1.5, zorder=2)
        elif spec.reference is not None:
            ax.axhline(spec.reference, color="grey", linewidth=0.9, linestyle="--", zorder=1)
        ax.set_xticks([t for t, _ in ticks], [c for _, c in ticks], rotation=30, ha="right")
        ax.set_xlim(positions[0] - 0.8, positions[-1] + 0.8)
        if linthresh is not None:
            _symlog(ax, linthresh)
        else:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"cap {cap:g}" + (f" · {policy}" if len(policies) > 1 else ""), fontsize=10)
    for ax in axes[len(cells) :]:
        ax.set_visible(False)
    for r in range(nrows):
        axes[r * cols].set_ylabel(spec.ylabel)
    checks_present = [c for c in CHECK_COLOURS if c in set(pairs.values())] + sorted(
        set(pairs.values()) - set(CHECK_COLOURS)
    )
    handles = [Patch(facecolor=check_colour(c), alpha=0.6, edgecolor="black", label=c) for c in checks_present]
    present = set(sources.values())
    if "real" in present:
        handles.append(Patch(facecolor="white", edgecolor="black", label="real values"))
    if "predicted" in present:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch=PREDICTED_HATCH, label="predicted values"))
    if spec.reference == "cap":
        handles.append(Line2D([], [], color="black", linewidth=1.5, label="cap"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5), frameon=False)
    windows = runs["workload"].n_unique()
    window = _hours(float(runs["power_window"][0])) if "power_window" in runs.columns else "power"
    policy_note = f" ({policies[0]})" if len(policies) == 1 else ""
    scale = f" — symmetric-log axis (linear below ±{linthresh * 100:g}%)" if linthresh else ""
    fig.suptitle(
        f"{spec.title}{policy_note}\nboxes over {windows} workload window(s), dots = runs; "
        f"{window} power window" + (f" — paper 000 {spec.paper}" if spec.paper else "") + scale,
        fontsize=11,
    )
    return _save(fig, out_dir, key)


#: Fig. 7's four panels: (metric expression, title, y label, reference) — a, b, c, d.
POLICY_PANELS = (
    (
        lambda: pl.col("p_power_utilisation") * pl.col("cap"),
        "(a) mean power in the window",
        "% of the dynamic range",
        "cap",
    ),
    (
        lambda: -pl.col("p_turnaround_increase"),
        "(b) mean turnaround improvement vs EASY",
        "improvement (higher is better)",
        0.0,
    ),
    (
        lambda: pl.col("p_max_turnaround_increase"),
        "(c) max turnaround increase vs EASY",
        "increase (lower is better)",
        0.0,
    ),
    (lambda: pl.col("p_share_started_in_window"), "(d) jobs started in the window", "% of the workload's jobs", None),
)


def plot_policies(
    results: pl.DataFrame, out_dir: str | Path, *, labels: dict[str, str] | None = None, stem: str = "policies"
) -> list[Path]:
    """Paper 000 Fig. 7: the scheduling policies at one cap and check, four panels (a–d) in a 2 × 2 grid, one box
    per policy and source (real plain, predicted hatched), one colour per policy in every panel."""
    runs = capped_runs(results)
    if runs.is_empty():
        raise CampaignError("no finished capped run to plot")
    labels = labels or {}
    policies = list(dict.fromkeys(runs["policy"].to_list()))
    sources = [s for s in ("real", "predicted") if s in set(runs["source"].to_list())]
    palette = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"]
    colours = {p: palette[k % len(palette)] for k, p in enumerate(policies)}
    fig = Figure(figsize=(11, 8.2), layout="constrained")
    axes = fig.subplots(2, 2).ravel()
    rng = np.random.default_rng(0)
    cap = float(runs["cap"][0])
    for ax, (value, title, ylabel, reference) in zip(axes, POLICY_PANELS, strict=True):
        frame = runs.with_columns(value().cast(pl.Float64).alias("_y"))
        data, where, style = [], [], []
        for i, policy in enumerate(policies):
            for j, source in enumerate(sources):
                y = frame.filter((pl.col("policy") == policy) & (pl.col("source") == source))["_y"]
                y = y.drop_nulls().drop_nans().to_numpy()
                if y.size:
                    data.append(y)
                    where.append(i * (len(sources) + 0.6) + j)
                    style.append((policy, source))
        boxes = ax.boxplot(
            data,
            positions=where,
            widths=0.75,
            showfliers=False,
            patch_artist=True,
            medianprops={"color": "black", "linewidth": 1.4},
        )
        for patch, (policy, source) in zip(boxes["boxes"], style, strict=True):
            patch.set_facecolor(colours[policy])
            patch.set_alpha(0.6)
            if source == "predicted":
                patch.set_hatch(PREDICTED_HATCH)
        for y, x, (policy, _) in zip(data, where, style, strict=True):
            ax.scatter(
                x + rng.uniform(-0.18, 0.18, y.size),
                y,
                s=9,
                color=colours[policy],
                edgecolors="black",
                linewidths=0.3,
                zorder=3,
            )
        if reference == "cap":
            ax.axhline(cap, color="black", linewidth=1.5, zorder=2)
        elif reference is not None:
            ax.axhline(reference, color="grey", linewidth=0.9, linestyle="--", zorder=1)
        centres = [i * (len(sources) + 0.6) + (len(sources) - 1) / 2 for i in range(len(policies))]
        ax.set_xticks(centres, [labels.get(p, p) for p in policies], rotation=15)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    handles = [Patch(facecolor="white", edgecolor="black", label="real values")]
    if "predicted" in sources:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch=PREDICTED_HATCH, label="predicted values"))
    handles.append(Line2D([], [], color="black", linewidth=1.5, label="cap"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False)
    checks = ", ".join(sorted(set(runs["check"].to_list())))
    fig.suptitle(
        f"Scheduling policies at cap {cap:g} with {checks} — paper 000 Fig. 7\nboxes over "
        f"{runs['workload'].n_unique()} workload window(s), dots = runs",
        fontsize=11,
    )
    return _save(fig, out_dir, stem)


def _save(fig: Figure, out_dir: str | Path, stem: str, dpi: int = 130) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=dpi)
    fig.savefig(paths[1])
    return paths


# ------------------------------------------------------------------------------------------------------ Gantt


def gantt_rectangles(jobs: pl.DataFrame, machine_size: int) -> pl.DataFrame:
    """Place each job on node rows for drawing: the schedule says how many nodes a job used, not which, so
    nodes are assigned greedily in start order (the first free contiguous block that fits, else the lowest free
    nodes). One rectangle per contiguous piece: ``job_id, start, end, node_lo, node_hi`` (``node_hi``
    exclusive). Jobs of zero duration are left out (they have no area)."""
    frame = (
        jobs.select("job_id", "start_time", "end_time", "size")
        .filter(pl.col("end_time") > pl.col("start_time"))
        .sort("start_time", "job_id")
    )
    ids = frame["job_id"].to_numpy()
    start = frame["start_time"].to_numpy().astype(np.float64)
    end = frame["end_time"].to_numpy().astype(np.float64)
    size = frame["size"].to_numpy().astype(np.int64)
    free = np.ones(max(int(machine_size), 1), dtype=bool)
    running: list[tuple[float, int]] = []
    held: dict[int, np.ndarray] = {}
    out_job, out_lo, out_hi = [], [], []
    for k in range(ids.size):
        while running and running[0][0] <= start[k]:
            _, done = heapq.heappop(running)
            free[held.pop(done)] = True
        need = int(size[k])
        if need > int(free.sum()):  # more nodes in use than the machine has: draw on extra rows above it
            free = np.concatenate([free, np.ones(need - int(free.sum()), dtype=bool)])
        idx = _first_fit(free, need)
        free[idx] = False
        held[k] = idx
        heapq.heappush(running, (end[k], k))
        breaks = np.flatnonzero(np.diff(idx) != 1) + 1
        for piece in np.split(idx, breaks):
            out_job.append(k)
            out_lo.append(int(piece[0]))
            out_hi.append(int(piece[-1]) + 1)
    rows = np.asarray(out_job, dtype=np.int64)
    return pl.DataFrame(
        {
            "job_id": ids[rows] if rows.size else np.asarray([], dtype=np.int64),
            "start": start[rows],
            "end": end[rows],
            "node_lo": np.asarray(out_lo, dtype=np.int64),
            "node_hi": np.asarray(out_hi, dtype=np.int64),
        }
    )


def _first_fit(free: np.ndarray, need: int) -> np.ndarray:
    """Indices of the first free contiguous block of ``need`` nodes, else of the lowest ``need`` free nodes."""
    edges = np.diff(np.concatenate(([0], free.astype(np.int8), [0])))
    lo, hi = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    fits = np.flatnonzero(hi - lo >= need)
    if fits.size:
        first = int(lo[fits[0]])
        return np.arange(first, first + need)
    return np.flatnonzero(free)[:need]


def resample_step(time: np.ndarray, value: np.ndarray, bins: int) -> tuple[np.ndarray, ...]:
    """Reduce a step function (``value[i]`` holds on ``[time[i], time[i+1])``) to ``bins`` equal bins: their left
    edges, time-weighted means, minima and maxima. The extremes are exact, so a cap break survives the
    reduction; the last sample only closes the last step."""
    t = np.asarray(time, dtype=np.float64)
    v = np.asarray(value, dtype=np.float64)
    if t.size < 2 or t[-1] <= t[0]:
        return t, v, v, v
    seg_t, seg_v = t[:-1], v[:-1]
    edges = np.linspace(t[0], t[-1], bins + 1)
    area = np.concatenate(([0.0], np.cumsum(seg_v * np.diff(t))))
    k = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, seg_t.size - 1)
    integral = area[k] + seg_v[k] * (edges - t[k])
    integral[-1] = area[-1]
    mean = np.diff(integral) / np.diff(edges)
    first = k[:-1]
    last = np.clip(np.searchsorted(seg_t, edges[1:], side="left") - 1, 0, seg_t.size - 1)
    # reduceat covers the segments from a bin's first up to the next bin's first (excluded); ``last`` adds the
    # segment that starts inside the bin and runs over its right edge
    vmax = np.maximum(np.maximum.reduceat(seg_v, first), seg_v[last])
    vmin = np.minimum(np.minimum.reduceat(seg_v, first), seg_v[last])
    return edges[:-1], mean, vmin, vmax


@dataclass
class GanttData:
    """One run re-simulated for drawing: its parameters, its schedule (with each job's per-node mean dynamic
    power), the node rectangles and the platform's power timeline."""

    run: dict[str, Any]
    jobs: pl.DataFrame
    rectangles: pl.DataFrame
    power: pl.DataFrame
    machine_size: int
    window_end: float
    dynamic_range: float
    summary: dict[str, Any]


def default_gantt_run(campaign_dir: str | Path, results: pl.DataFrame | None = None) -> str:
    """The first finished capped run (manifest order) with the lowest cap: the hardest-constrained schedule."""
    results = load_results(campaign_dir) if results is None else results
    runs = capped_runs(results)
    if runs.is_empty():
        raise CampaignError(f"{campaign_dir}: no finished capped run to draw")
    lowest = runs["cap"].min()
    return str(runs.filter(pl.col("cap") == lowest)["id"][0])


def gantt_data(campaign_dir: str | Path, run: str) -> GanttData:
    """Re-simulate run ``run`` (an id of the manifest) as the campaign ran it; runs are deterministic, so this is
    the schedule its result file summarises."""
    manifest = read_manifest(campaign_dir)
    matches = [r for r in manifest["runs"] if r["id"] == run]
    if not matches:
        raise CampaignError(f"{campaign_dir}: no run with id {run!r} in the manifest")
    params = matches[0]
    read = load_workload(Path(campaign_dir) / "workloads" / f"{params['workload']}.parquet")
    plat = load_platform(params["platform"])
    if params["kind"] == "baseline":
        setup = PowerSetup(plat, PowerCheck.named("none"), "real", None, params["power_window"])
    else:
        cap = PowerCapSchedule.window(
            params["cap"],
            plat,
            window_end=params["power_window"],
            post_window_cap=params.get("post_window_cap", "dynamic_range"),
        )
        check = PowerCheck.named(params["check"], reservation=params["reservation"])
        setup = PowerSetup(plat, check, params["source"], cap, params["power_window"])
    out = run_policy(read, params["policy"], power=setup, baseline=False)
    power_cols = [c for c in ("job_id", "power_mean") if c in read.jobs.columns]
    wanted = ("job_id", "user_id", "submit_time", "start_time", "end_time", "size", "wait")
    jobs = out.jobs.select(c for c in wanted if c in out.jobs.columns)
    if len(power_cols) == 2:
        jobs = jobs.join(read.jobs.select(*power_cols), on="job_id", how="left").with_columns(
            (pl.col("power_mean").cast(pl.Float64) - plat.idle_watts).alias("dyn_watts_per_node")
        )
    else:
        jobs = jobs.with_columns(pl.lit(None, pl.Float64).alias("dyn_watts_per_node"))
    size = int(out.summary["run"]["machine_size"]) if "machine_size" in out.summary.get("run", {}) else plat.nodes
    return GanttData(
        params,
        jobs,
        gantt_rectangles(jobs, size),
        out.power,
        size,
        float(params["power_window"]),
        plat.dynamic_range,
        out.summary.get("power", {}),
    )


def run_title(run: dict[str, Any]) -> str:
    """How a run is named in titles: window, policy, estimator and cap."""
    if run["kind"] == "baseline":
        return f"{run['workload']}: {run['policy']} without a cap (baseline)"
    return f"{run['workload']}: {run['policy']}, {estimator_label(run['check'], run['source'])}, cap {run['cap']:g}"


def plot_gantt(data: GanttData, out_dir: str | Path, stem: str | None = None) -> list[Path]:
    """The run's jobs as rectangles (time × nodes, coloured by per-node dynamic power) above the platform's
    dynamic power and cap, sharing the time axis; writes ``gantt_<run id>.png`` and ``.svg``."""
    rect = data.rectangles.join(data.jobs.select("job_id", "dyn_watts_per_node"), on="job_id", how="left")
    h = 3600.0
    s, e = rect["start"].to_numpy() / h, rect["end"].to_numpy() / h
    lo, hi = rect["node_lo"].to_numpy(), rect["node_hi"].to_numpy()
    verts = np.stack(
        [np.column_stack([s, lo]), np.column_stack([e, lo]), np.column_stack([e, hi]), np.column_stack([s, hi])], axis=1
    )
    watts = rect["dyn_watts_per_node"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    known = watts[np.isfinite(watts)]
    norm = Normalize(0.0, float(np.percentile(known, 99)) if known.size else 1.0)

    fig = Figure(figsize=(13, 8), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    cmap = colormaps["viridis"].with_extremes(bad="#bbbbbb")  # jobs of unknown power in grey
    coll = PolyCollection(
        verts,
        array=watts,
        cmap=cmap,
        norm=norm,
        linewidths=0.0,
        antialiased=False,
        rasterized=len(verts) > RASTERISE_ABOVE,
    )
    top.add_collection(coll)
    top.set_ylim(0, max(data.machine_size, int(hi.max()) if hi.size else 1))
    top.set_ylabel("nodes (assigned greedily)")
    bar = fig.colorbar(coll, ax=top, pad=0.01, aspect=30)
    bar.set_label("job's mean dynamic power per node (W)")

    t = data.power["time"].to_numpy()
    dyn = data.power["dynamic"].to_numpy()
    if t.size > 8000:
        left, mean, vmin, vmax = resample_step(t, dyn, 2000)
        width = (left[1] - left[0]) if left.size > 1 else 0.0
        right = left + width
        xs = np.column_stack([left, right]).ravel() / h
        bottom.fill_between(
            xs,
            np.repeat(vmin, 2) / 1e3,
            np.repeat(vmax, 2) / 1e3,
            color="#0072B2",
            alpha=0.25,
            linewidth=0,
            label="dynamic power (min–max per bin)",
        )
        bottom.plot(xs, np.repeat(mean, 2) / 1e3, color="#0072B2", linewidth=0.8, label="dynamic power (bin mean)")
    else:
        bottom.step(t / h, dyn / 1e3, where="post", color="#0072B2", linewidth=0.8, label="dynamic power")
    if "cap" in data.power.columns and data.power["cap"].is_not_null().any():
        cap = data.power["cap"].to_numpy()
        # null (no cap after the window) equals null: NaN != NaN would keep every row of the timeline
        change = np.concatenate(([True], data.power["cap"].ne_missing(data.power["cap"].shift(1)).to_numpy()[1:]))
        ct, cv = np.append(t[change], t[-1]), np.append(cap[change], cap[change][-1])
        bottom.step(ct / h, cv / 1e3, where="post", color="black", linewidth=1.4, label="cap")
    bottom.set_ylabel("platform dynamic power (kW)")
    bottom.set_xlabel("time since the window start (h)")
    highest = max(
        float(np.nanmax(dyn)) if dyn.size else 1.0,
        float(data.power["cap"].max() or 0.0) if "cap" in data.power.columns else 0.0,
    )
    bottom.set_ylim(0, 1.2 * highest / 1e3)  # room for the legend above the cap
    end = max(float(t[-1]) if t.size else 0.0, float(e.max()) * h if e.size else 0.0) / h
    bottom.set_xlim(0, end)
    for ax in (top, bottom):
        ax.axvspan(0, data.window_end / h, color="#E69F00", alpha=0.08, linewidth=0)
        ax.axvline(data.window_end / h, color="#E69F00", linewidth=1.0, linestyle="--")
        ax.grid(alpha=0.25)
    bottom.legend(loc="upper right", fontsize=8, ncols=3)
    top.text(
        data.window_end / h,
        1.0,
        " power window end",
        transform=top.get_xaxis_transform(),
        va="bottom",
        ha="left",
        fontsize=8,
        color="#a06800",
    )
    p = data.summary
    extra = ""
    if p.get("power_utilisation") is not None:
        extra = (
            f"\npower utilisation {p['power_utilisation']:.0%}, time above the cap "
            f"{p['time_above_cap_share']:.0%}, jobs started in the window {p['share_started_in_window']:.0%}"
        )
    fig.suptitle(f"Run {data.run['id']} — {run_title(data.run)} ({data.jobs.height:,} jobs){extra}", fontsize=11)
    return _save(fig, out_dir, stem or f"gantt_{data.run['id']}")


# ------------------------------------------------------------------------------------------ prediction errors


def global_mean_baseline(predictions: pl.DataFrame, metric: str) -> np.ndarray:
    """The constant predictor: every job gets the mean of ``metric`` over all jobs. A predictor worth using beats
    it; it is the floor of paper 000's Fig. 3 comparison."""
    true = predictions[metric].cast(pl.Float64).fill_null(np.nan).to_numpy()
    return np.full(true.size, np.nanmean(true) if np.isfinite(true).any() else np.nan)


def predicted_metrics(predictions: pl.DataFrame) -> list[str]:
    """The power metrics that have both a true and a predicted column."""
    return [m for m in POWER_METRICS if m in predictions.columns and f"pred_{m}" in predictions.columns]


def per_user_errors(predictions: pl.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """Per metric: the per-user MAE (W per node) of the predictor and of the global-mean baseline."""
    users = predictions["user_id"].to_numpy()
    out = {}
    for m in predicted_metrics(predictions):
        true = predictions[m].cast(pl.Float64).fill_null(np.nan).to_numpy()
        pred = predictions[f"pred_{m}"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        out[m] = {
            "predicted": per_user_mae(pred, true, users),
            "global mean": per_user_mae(global_mean_baseline(predictions, m), true, users),
        }
    return out


def plot_prediction_errors(predictions: pl.DataFrame, out_dir: str | Path, name: str, method: str = "") -> list[Path]:
    """Per-user MAE box plots per metric (paper 000 Fig. 3): the predictor against the global-mean baseline;
    writes ``prediction_mae_<name>.png/.svg``."""
    errors = per_user_errors(predictions)
    if not errors:
        raise CampaignError(f"predictions of {name!r} have no predicted power column")
    fig = Figure(figsize=(3.4 * len(errors) + 0.8, 4.3), layout="constrained")
    axes = fig.subplots(1, len(errors), squeeze=False)[0]
    colours = ["#E69F00", "#999999"]
    for ax, (metric, series) in zip(axes, errors.items(), strict=True):
        labels = list(series)
        boxes = ax.boxplot(
            [series[k] for k in labels],
            widths=0.6,
            showfliers=True,
            patch_artist=True,
            medianprops={"color": "black"},
            flierprops={"markersize": 2, "alpha": 0.4},
        )
        for patch, colour in zip(boxes["boxes"], colours, strict=True):
            patch.set_facecolor(colour)
            patch.set_alpha(0.6)
        medians = [float(np.median(series[k])) if series[k].size else np.nan for k in labels]
        names = [labels[0] + (f" ({method})" if method else ""), labels[1]]
        ax.set_xticks([1, 2], [f"{n}\nmedian {m:.0f} W" for n, m in zip(names, medians, strict=True)])
        ax.set_title(metric.replace("_", " "), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("per-user MAE (W per node)")
    users = max(v["predicted"].size for v in errors.values())
    fig.suptitle(f"Power prediction error per user, {name} ({users:,} users) — paper 000 Fig. 3", fontsize=11)
    return _save(fig, out_dir, f"prediction_mae_{name}")


def plot_prediction_scatter(predictions: pl.DataFrame, out_dir: str | Path, name: str) -> list[Path]:
    """Predicted against true per-node power, one hexbin per metric (log counts) with the diagonal; writes
    ``prediction_scatter_<name>.png/.svg``. Jobs without history sit on the fallback's horizontal line."""
    metrics = predicted_metrics(predictions)
    if not metrics:
        raise CampaignError(f"predictions of {name!r} have no predicted power column")
    fig = Figure(figsize=(4.6 * len(metrics) + 0.6, 4.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, m in zip(axes, metrics, strict=True):
        true = predictions[m].cast(pl.Float64).fill_null(np.nan).to_numpy()
        pred = predictions[f"pred_{m}"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        ok = np.isfinite(true) & np.isfinite(pred)
        true, pred = true[ok], pred[ok]
        both = np.concatenate([true, pred])
        top = 1.0
        if both.size:  # the whole range unless a few outliers would squash the rest
            high, typical = float(both.max()), float(np.percentile(both, 99.5))
            top = (high if high <= 1.5 * typical else typical * 1.1) * 1.03
        inside = (true <= top) & (pred <= top)
        hb = ax.hexbin(
            true[inside],
            pred[inside],
            gridsize=55,
            extent=(0, top, 0, top),
            bins="log",
            mincnt=1,
            cmap="magma_r",
            linewidths=0.1,
            rasterized=True,
        )  # thousands of hexagons: a raster in SVG
        if not inside.all():
            ax.text(
                0.98,
                0.02,
                f"{int((~inside).sum()):,} jobs off scale",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize=8,
            )
        ax.plot([0, top], [0, top], color="#0072B2", linewidth=1.0, linestyle="--", label="prediction = truth")
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_box_aspect(1)
        mae = float(np.mean(np.abs(pred - true))) if ok.any() else np.nan
        ax.set_title(f"{m.replace('_', ' ')} — MAE {mae:.0f} W ({int(ok.sum()):,} jobs)", fontsize=10)
        ax.set_xlabel("true (W per node)")
        ax.set_ylabel("predicted (W per node)")
        ax.legend(loc="upper left", fontsize=8, frameon=False)
        fig.colorbar(hb, ax=ax, shrink=0.8, label="jobs")
    fig.suptitle(f"Predicted against true job power, {name}", fontsize=11)
    return _save(fig, out_dir, f"prediction_scatter_{name}")


def prediction_files(campaign_dir: str | Path) -> dict[str, tuple[pl.DataFrame, dict[str, Any]]]:
    """Per workload: its prediction table and report (empty when the grid has no ``predicted`` source)."""
    folder = Path(campaign_dir) / "predictions"
    out: dict[str, tuple[pl.DataFrame, dict[str, Any]]] = {}
    if not folder.exists():
        return out
    for path in sorted(folder.glob("*.parquet")):
        if path.name.startswith("."):
            continue
        report_path = path.with_suffix(".json")
        report = json.loads(report_path.read_text()) if report_path.exists() else {}
        out[path.stem] = (pl.read_parquet(path), report)
    return out


# ------------------------------------------------------------------------------------------------------- all


def write_figures(campaign_dir: str | Path, out_dir: str | Path, *, gantt_run: str | None = None) -> list[Path]:
    """Every static figure of a campaign (PNG and SVG) in ``out_dir``; returns the files written. ``gantt_run``
    is the run id drawn as a Gantt chart (default: :func:`default_gantt_run`)."""
    results = load_results(campaign_dir)
    if capped_runs(results).is_empty():
        raise CampaignError(f"{campaign_dir}: no finished capped run yet (run the campaign first)")
    paths: list[Path] = []
    for key in METRICS:
        paths += plot_metric(results, key, out_dir)
    run = gantt_run or default_gantt_run(campaign_dir, results)
    paths += plot_gantt(gantt_data(campaign_dir, run), out_dir)
    for name, (frame, report) in prediction_files(campaign_dir).items():
        if not predicted_metrics(frame):
            continue
        if "user_id" in frame.columns:  # per-user errors need users
            paths += plot_prediction_errors(frame, out_dir, name, str(report.get("method", "")))
        paths += plot_prediction_scatter(frame, out_dir, name)
    return paths
