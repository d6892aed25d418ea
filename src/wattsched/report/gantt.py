"""A Gantt chart of one campaign run (jobs over time × nodes, a concrete first-fit node allocation) above its
dynamic power and cap on one time axis, which shows *why* a run breaks or under-uses the cap; the data behind it
is shared with the interactive dashboard.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.collections import PolyCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from wattsched.campaign.power import run_power_setup
from wattsched.campaign.runner import load_results
from wattsched.campaign.summary import (
    capped_runs,
    estimator_label,
)
from wattsched.core.scalars import as_float
from wattsched.core.store import CampaignError, CampaignLayout, read_manifest
from wattsched.metrics.allocation import node_blocks
from wattsched.plots.steps import resample_step
from wattsched.plots.style import (
    RASTERISE_ABOVE,
    save_figure,
)
from wattsched.runs import run_policy
from wattsched.workload.load import load_workload

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
        for first, last_end in node_blocks(idx):
            out_job.append(k)
            out_lo.append(first)
            out_hi.append(last_end)
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
    read = load_workload(CampaignLayout(Path(campaign_dir)).workload(params["workload"]))
    setup = run_power_setup(params)
    plat = setup.platform
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
    assert out.power is not None  # run_policy with a PowerSetup always returns a power timeline
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
        verts,  # type: ignore[arg-type]  # matplotlib's stubs say a sequence; an (N, 4, 2) array is accepted
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
        as_float(data.power["cap"].max() or 0.0) if "cap" in data.power.columns else 0.0,
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
    return save_figure(fig, out_dir, stem or f"gantt_{data.run['id']}")
