"""Paper 004's experiment (paper 004 §6–§7; docs/rmap.md): four 30-job traces × five global power bounds × the RMAP
policies, with the oracle and the model as configuration data, and the equivalents of Figs. 8–15.

Every run is tiny (30 jobs), so the grid runs in this process. Results: ``jobs.parquet`` (every job of every
run, tagged), ``decisions.parquet`` (system power at each start), ``summary.csv`` (mean turnaround, normalised to
Traditional on the same trace and bound; jobs better than, equal to and worse than under Traditional; mean wait
and allocated power) and the figures (:mod:`wattsched.studies.rmap.figures`).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import polars as pl

from wattsched.studies.rmap.engine import simulate_rmap
from wattsched.studies.rmap.machine import JobDetails
from wattsched.studies.rmap.policies import parse_rmap_policy
from wattsched.studies.rmap.traces import TRACES, generate_rmap_trace

BOUNDS = (6500.0, 8000.0, 10000.0, 12000.0, 14000.0)
WORST_CASE = 64 * 2 * 115.0
POLICIES = (
    "rmap-traditional",
    "rmap-naive",
    "rmap-adaptive-0",
    "rmap-adaptive-10",
    "rmap-adaptive-20",
    "rmap-adaptive-30",
    "rmap-adaptive-unbounded",
)


def run_rmap_grid(
    oracle: JobDetails,
    model: JobDetails,
    *,
    traces: tuple[str, ...] = TRACES,
    bounds: tuple[float, ...] = BOUNDS,
    policies: tuple[str, ...] = POLICIES,
    seed: int = 0,
    overestimate: float = 0.0,
    arrival_scale: float = 1.0,
    other_sources: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame, float]:
    """``(jobs, decisions, seconds)`` of every run: each policy with its default data source, and (with
    ``other_sources``) traditional, naive and adaptive-0 also with the other source (for the model-versus-oracle
    comparison, Fig. 8). ``seed`` draws the traces; ``arrival_scale`` makes them sparser ([AMBIG-4.5])."""
    t0 = time.perf_counter()
    jobs, decisions = [], []
    for trace in traces:
        workload = generate_rmap_trace(oracle, trace, seed=seed, overestimate=overestimate, arrival_scale=arrival_scale)
        for bound in bounds:
            runs = [(name, None) for name in policies]
            runs += [
                (name, other)
                for name in ("rmap-traditional", "rmap-naive", "rmap-adaptive-0")
                if name in policies and other_sources
                for other in (("model",) if parse_rmap_policy(name).data == "oracle" else ("oracle",))
            ]
            for name, source in runs:
                policy = parse_rmap_policy(name, source)
                result = simulate_rmap(workload, policy, oracle, model=model, p_cluster=bound)
                tag = [
                    pl.lit(trace).alias("trace"),
                    pl.lit(bound).alias("bound"),
                    pl.lit(name).alias("policy"),
                    pl.lit(policy.data).alias("data"),
                    pl.lit(source is None).alias("default_data"),
                ]
                jobs.append(result.jobs.with_columns(tag))
                decisions.append(result.decisions.with_columns(tag))
    return pl.concat(jobs), pl.concat(decisions), time.perf_counter() - t0


def rmap_summary(jobs: pl.DataFrame) -> pl.DataFrame:
    """Per trace, bound, policy and data source: mean turnaround (s), normalised to Traditional (its default,
    oracle data), per-job comparisons with Traditional, and the power allocated and drawn at most."""
    key = ["trace", "bound"]
    trad = jobs.filter((pl.col("policy") == "rmap-traditional") & pl.col("default_data")).select(
        *key, "job_id", pl.col("turnaround").alias("trad_turnaround")
    )
    joined = jobs.join(trad, on=[*key, "job_id"], how="left")
    out = (
        joined.group_by(*key, "policy", "data", "default_data")
        .agg(
            pl.col("turnaround").mean().alias("mean_turnaround"),
            pl.col("trad_turnaround").mean().alias("traditional_turnaround"),
            (pl.col("turnaround") < pl.col("trad_turnaround") - 1e-6).sum().alias("jobs_better"),
            ((pl.col("turnaround") - pl.col("trad_turnaround")).abs() <= 1e-6).sum().alias("jobs_same"),
            (pl.col("turnaround") > pl.col("trad_turnaround") + 1e-6).sum().alias("jobs_worse"),
            pl.col("wait").mean().alias("mean_wait"),
            pl.col("alloc_power").mean().alias("mean_alloc_power"),
        )
        .with_columns(
            (pl.col("mean_turnaround") / pl.col("traditional_turnaround")).alias("normalised_turnaround"),
            (pl.col("bound") / WORST_CASE).round(2).alias("normalised_bound"),
        )
    )
    return out.sort("trace", "bound", "policy", "data")


def with_sample(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with a ``sample`` column (0 when it has none): the index of one draw of data, model and traces."""
    return frame if "sample" in frame.columns else frame.with_columns(pl.lit(0).alias("sample"))


def rmap_run_means(jobs: pl.DataFrame) -> pl.DataFrame:
    """Mean turnaround ``tt`` per sample, trace, bound, policy and data source, with its ratio to Traditional
    (``vs_trad``) and to Naive (``vs_naive``) of the same sample, trace and bound (default data), and the bound
    normalised by the worst case (``x``)."""
    jobs = with_sample(jobs)
    key = ["sample", "trace", "bound"]
    means = jobs.group_by(*key, "policy", "data", "default_data").agg(pl.col("turnaround").mean().alias("tt"))
    ref = means.filter(pl.col("default_data"))
    trad = ref.filter(pl.col("policy") == "rmap-traditional").select(*key, pl.col("tt").alias("tt_trad"))
    naive = ref.filter(pl.col("policy") == "rmap-naive").select(*key, pl.col("tt").alias("tt_naive"))
    return (
        means.join(trad, on=key, how="left")
        .join(naive, on=key, how="left")
        .with_columns(
            (pl.col("tt") / pl.col("tt_trad")).alias("vs_trad"),
            (pl.col("tt") / pl.col("tt_naive")).alias("vs_naive"),
            (pl.col("bound") / WORST_CASE).alias("x"),
        )
    )


def write_rmap_report(jobs: pl.DataFrame, decisions: pl.DataFrame, out: str | Path) -> list[Path]:
    """``summary.csv`` and the Figs. 8–15 equivalents (PNG and SVG, :mod:`wattsched.studies.rmap.figures`).
    ``decisions`` is kept for callers; Fig. 14 is drawn from the jobs' starts and ends (a step function)."""
    from wattsched.studies.rmap.figures import write_rmap_figures

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = rmap_summary(jobs)
    summary.write_csv(out / "summary.csv")
    return [out / "summary.csv", *write_rmap_figures(jobs, out)]


def table4_check(summary: pl.DataFrame) -> dict[str, float]:
    """Improvement (%) of each policy's mean turnaround over Traditional on the large trace at 6,500 W (the
    quantity of the paper's Table 4)."""
    sub = summary.filter((pl.col("trace") == "large") & (pl.col("bound") == 6500.0) & pl.col("default_data"))
    return {
        r["policy"]: 100.0 * (1.0 - r["normalised_turnaround"])
        for r in sub.iter_rows(named=True)
        if not math.isnan(r["normalised_turnaround"])
    }
