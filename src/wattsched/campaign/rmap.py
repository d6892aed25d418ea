"""Paper 004's experiment (reference spec §5.4): four 30-job traces × five global power bounds × the RMAP
policies, with the oracle and the model as configuration data, and the equivalents of Figs. 8–15.

Every run is tiny (30 jobs), so the grid runs in this process. Results: ``jobs.parquet`` (every job of every
run, tagged), ``decisions.parquet`` (system power at each start), ``summary.csv`` (mean turnaround, normalised to
Traditional on the same trace and bound; jobs better than, equal to and worse than under Traditional; the
largest allocated and actual power against the bound) and the figures.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from wattsched.platform.rmap import JobDetails
from wattsched.sched.rmap import parse_rmap_policy
from wattsched.sim.rmap import simulate_rmap
from wattsched.workload.generate.rmap import TRACES, generate_rmap_trace

BOUNDS = (6500.0, 8000.0, 10000.0, 12000.0, 14000.0)
WORST_CASE = 64 * 2 * 115.0
POLICIES = ("rmap-traditional", "rmap-naive", "rmap-adaptive-0", "rmap-adaptive-10", "rmap-adaptive-20",
            "rmap-adaptive-30", "rmap-adaptive-unbounded")


def run_rmap_grid(oracle: JobDetails, model: JobDetails, *, traces: tuple[str, ...] = TRACES,
                  bounds: tuple[float, ...] = BOUNDS, policies: tuple[str, ...] = POLICIES, seed: int = 0,
                  overestimate: float = 0.0) -> tuple[pl.DataFrame, pl.DataFrame, float]:
    """``(jobs, decisions, seconds)`` of every run: each policy with its default data source, and traditional,
    naive and adaptive-0 also with the other source (for the model-versus-oracle comparison, Fig. 8)."""
    t0 = time.perf_counter()
    jobs, decisions = [], []
    for trace in traces:
        workload = generate_rmap_trace(oracle, trace, seed=seed, overestimate=overestimate)
        for bound in bounds:
            runs = [(name, None) for name in policies]
            runs += [(name, other) for name in ("rmap-traditional", "rmap-naive", "rmap-adaptive-0")
                     if name in policies
                     for other in (("model",) if parse_rmap_policy(name).data == "oracle" else ("oracle",))]
            for name, source in runs:
                policy = parse_rmap_policy(name, source)
                result = simulate_rmap(workload, policy, oracle, model=model, p_cluster=bound)
                tag = [pl.lit(trace).alias("trace"), pl.lit(bound).alias("bound"), pl.lit(name).alias("policy"),
                       pl.lit(policy.data).alias("data"), pl.lit(source is None).alias("default_data")]
                jobs.append(result.jobs.with_columns(tag))
                decisions.append(result.decisions.with_columns(tag))
    return pl.concat(jobs), pl.concat(decisions), time.perf_counter() - t0


def rmap_summary(jobs: pl.DataFrame) -> pl.DataFrame:
    """Per trace, bound, policy and data source: mean turnaround (s), normalised to Traditional (its default,
    oracle data), per-job comparisons with Traditional, and the power allocated and drawn at most."""
    key = ["trace", "bound"]
    trad = jobs.filter((pl.col("policy") == "rmap-traditional") & pl.col("default_data")).select(
        *key, "job_id", pl.col("turnaround").alias("trad_turnaround"))
    joined = jobs.join(trad, on=[*key, "job_id"], how="left")
    out = joined.group_by(*key, "policy", "data", "default_data").agg(
        pl.col("turnaround").mean().alias("mean_turnaround"),
        pl.col("trad_turnaround").mean().alias("traditional_turnaround"),
        (pl.col("turnaround") < pl.col("trad_turnaround") - 1e-6).sum().alias("jobs_better"),
        ((pl.col("turnaround") - pl.col("trad_turnaround")).abs() <= 1e-6).sum().alias("jobs_same"),
        (pl.col("turnaround") > pl.col("trad_turnaround") + 1e-6).sum().alias("jobs_worse"),
        pl.col("wait").mean().alias("mean_wait"),
        pl.col("alloc_power").mean().alias("mean_alloc_power"),
    ).with_columns((pl.col("mean_turnaround") / pl.col("traditional_turnaround")).alias("normalised_turnaround"),
                   (pl.col("bound") / WORST_CASE).round(2).alias("normalised_bound"))
    return out.sort("trace", "bound", "policy", "data")


def write_rmap_report(jobs: pl.DataFrame, decisions: pl.DataFrame, out: str | Path) -> list[Path]:
    """``summary.csv`` and the Figs. 8–15 equivalents (PNG and SVG)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    summary = rmap_summary(jobs)
    summary.write_csv(out / "summary.csv")
    paths.append(out / "summary.csv")
    default = summary.filter(pl.col("default_data"))

    def save(fig: Figure, name: str) -> None:
        for ext in ("png", "svg"):
            fig.savefig(out / f"{name}.{ext}", dpi=120, bbox_inches="tight")
            paths.append(out / f"{name}.{ext}")

    def by_bound(frame: pl.DataFrame, ax, policies: list[str], column: str, style: str = "-o") -> None:
        for pol in policies:
            sub = frame.filter(pl.col("policy") == pol).sort("bound")
            if sub.height:
                ax.plot(sub["normalised_bound"], sub[column], style, label=pol.removeprefix("rmap-"))
        ax.set_xlabel("global power bound (share of 14,720 W)")

    main = ["rmap-traditional", "rmap-naive", "rmap-adaptive-0"]
    traces = sorted(set(summary["trace"]))
    # Fig. 8: model against oracle on the random trace
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    rnd = summary.filter(pl.col("trace") == ("random1" if "random1" in traces else traces[0]))
    for data, style in (("oracle", "-o"), ("model", "--x")):
        sub = rnd.filter(pl.col("data") == data)
        for pol in main:
            s = sub.filter(pl.col("policy") == pol).sort("bound")
            if s.height:
                ax.plot(s["normalised_bound"], s["mean_turnaround"], style, label=f"{pol.removeprefix('rmap-')} "
                        f"({data})")
    ax.set(ylabel="mean turnaround (s)", title="model against measured configuration data (Fig. 8)")
    ax.set_xlabel("global power bound (share of 14,720 W)")
    ax.legend(fontsize=7)
    save(fig, "fig8_model_vs_oracle")
    # Figs. 9, 10 and the random traces: mean turnaround normalised to Traditional
    fig = Figure(figsize=(4.5 * len(traces), 4))
    for k, trace in enumerate(traces):
        ax = fig.add_subplot(1, len(traces), k + 1)
        by_bound(default.filter(pl.col("trace") == trace), ax, main, "normalised_turnaround")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set(title=trace, ylabel="turnaround / Traditional" if k == 0 else "")
    fig.axes[0].legend(fontsize=7)
    fig.suptitle("mean turnaround normalised to Traditional (Figs. 9 large, 10 small, 8 random)")
    save(fig, "fig9_10_traces")
    # Fig. 11: adaptive thresholds against naive
    fig = Figure(figsize=(4.5 * len(traces), 4))
    for k, trace in enumerate(traces):
        ax = fig.add_subplot(1, len(traces), k + 1)
        sub = default.filter(pl.col("trace") == trace)
        naive = sub.filter(pl.col("policy") == "rmap-naive").select("bound", pl.col("mean_turnaround").alias("n"))
        rel = sub.join(naive, on="bound").with_columns((pl.col("mean_turnaround") / pl.col("n")).alias("vs_naive"))
        by_bound(rel, ax, [p for p in POLICIES if p.startswith("rmap-adaptive")], "vs_naive")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set(title=trace, ylabel="turnaround / Naive" if k == 0 else "")
    fig.axes[0].legend(fontsize=7)
    fig.suptitle("Adaptive with thresholds 0–30% and unbounded (Fig. 11)")
    save(fig, "fig11_thresholds")
    # Figs. 12, 13: per job on the large trace at the lowest bound
    trio = ["rmap-traditional", "rmap-adaptive-0", "rmap-adaptive-20"]
    low = min(set(jobs["bound"]))
    for name, trace, bound, title in (("fig12_13_large", "large", low, "large trace"),
                                      ("fig15_random2", "random2", max(set(jobs["bound"])), "random trace 2")):
        sub = jobs.filter((pl.col("trace") == trace) & (pl.col("bound") == bound) & pl.col("default_data"))
        if sub.height == 0:
            continue
        fig = Figure(figsize=(12, 8))
        axes = [fig.add_subplot(3, 1, r + 1) for r in range(3)]
        width = 0.27
        for k, pol in enumerate(trio):
            p = sub.filter(pl.col("policy") == pol).sort("job_id")
            if p.height == 0:
                continue
            x = p["job_id"].to_numpy() + (k - 1) * width
            axes[0].bar(x, p["turnaround"], width, label=pol.removeprefix("rmap-"))
            axes[1].bar(x, p["wait"], width, label=f"{pol.removeprefix('rmap-')} wait")
            axes[1].bar(x, p["runtime"], width, bottom=p["wait"], alpha=0.4)
            axes[2].bar(x, p["alloc_power"], width, label=pol.removeprefix("rmap-"))
        pj = sub.filter(pl.col("policy") == trio[0]).sort("job_id")
        axes[2].plot(pj["job_id"], pj["p_job"], "k_", markersize=12, label="fair-share P_job")
        axes[0].set(ylabel="turnaround (s)", title=f"{title}, {bound:,.0f} W (Figs. 12, 13, 15)")
        axes[1].set(ylabel="wait + run (s)")
        axes[2].set(ylabel="allocated power (W)", xlabel="job")
        for ax in axes:
            ax.legend(fontsize=7)
        save(fig, name)
    # Fig. 14: allocated system power at each scheduling decision, random trace 2 at the highest bound
    fig = Figure(figsize=(8, 4))
    ax = fig.add_subplot()
    high = max(set(decisions["bound"]))
    for pol, style in (("rmap-traditional", "-o"), ("rmap-adaptive-0", "--x")):
        d = decisions.filter((pl.col("trace") == "random2") & (pl.col("bound") == high) & (pl.col("policy") == pol)
                             & pl.col("default_data")).sort("time")
        if d.height:
            ax.plot(d["time"], d["allocated_power"], style, label=pol.removeprefix("rmap-"))
    arrivals = jobs.filter((pl.col("trace") == "random2") & (pl.col("policy") == "rmap-traditional")
                           & (pl.col("bound") == high) & pl.col("default_data"))["submit_time"]
    ax.plot(arrivals, np.zeros(arrivals.len()), "b.", label="arrivals")
    ax.axhline(high, color="red", lw=0.8, label="bound")
    ax.set(xlabel="time (s)", ylabel="allocated power (W)", title="system power at each start (Fig. 14)")
    ax.legend(fontsize=7)
    save(fig, "fig14_timeline")
    return paths


def table4_check(summary: pl.DataFrame) -> dict[str, float]:
    """Improvement (%) of each policy's mean turnaround over Traditional on the large trace at 6,500 W (the
    quantity of the paper's Table 4)."""
    sub = summary.filter((pl.col("trace") == "large") & (pl.col("bound") == 6500.0) & pl.col("default_data"))
    return {r["policy"]: 100.0 * (1.0 - r["normalised_turnaround"]) for r in sub.iter_rows(named=True)
            if not math.isnan(r["normalised_turnaround"])}
