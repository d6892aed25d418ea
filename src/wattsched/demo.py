"""The demos: a small power campaign (the default: ``make demo``), and a generated Lublin–Feitelson workload under
every queue policy, with one comparison table and one figure."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from wattsched.campaign.runner import CampaignRun, run_experiment
from wattsched.campaign.spec import load_spec
from wattsched.core.atomic import atomic_figure, atomic_write
from wattsched.core.executors import default_workers, shared_workers
from wattsched.core.experiment import no_log
from wattsched.engine.simulate import simulate
from wattsched.policies.registry import CORE_POLICIES
from wattsched.report.dashboard import write_dashboard
from wattsched.report.figures import write_figures
from wattsched.runs import RunOutput, run_policy, write_run
from wattsched.workload.generate import generate_lublin
from wattsched.workload.save import save_workload

#: The demo campaign (``wattsched demo``): paper 000's estimators on a few windows, two caps, with the construction
#: of ``wattsched reproduce 000`` (reproduce/paper000.py): the calibrated Marconi100-like generator, the jobs
#: running at a window's start requeued at t = 0 (so EASY+PC decides on every job under the cap), no cap after the
#: 3-h window. The README's demo paragraph says which numbers to read.
DEMO_CAMPAIGN = """\
kind = "power"
name = "demo"
platform = "marconi100"

[[workloads]]
name = "m100"
generate = {{ model = "m100", jobs = {jobs}, seed = {seed} }}
windows = {{ count = 3, hours = 24, seed = {seed}, prestate = "requeue" }}

[grid]
policies = ["easy-pc"]
checks = ["naive", "mean", "max", "gaussian68", "gaussian95", "gaussian99"]
sources = ["real", "predicted"]
caps = [0.5, 0.7]
power_window = 10800
post_window_cap = "none"

[prediction]
method = "history"
"""


@dataclass
class CampaignDemo:
    """What the campaign demo wrote: its spec, the campaign directory, the figures and the dashboard."""

    spec: Path
    campaign: Path
    run: CampaignRun
    figures: list[Path]
    dashboard: Path
    seconds: float


def run_campaign_demo(
    output: Path,
    *,
    jobs: int = 40_000,
    seed: int = 1,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = no_log,
) -> CampaignDemo:
    """Write :data:`DEMO_CAMPAIGN` as ``output/campaign.toml``, run it in ``output/campaign`` (resumed if it is
    there), then its figures and dashboard in ``output/report``."""
    t0 = time.perf_counter()
    output.mkdir(parents=True, exist_ok=True)
    spec_path = output / "campaign.toml"
    atomic_write(spec_path, DEMO_CAMPAIGN.format(jobs=jobs, seed=seed))
    campaign = output / "campaign"
    workers = default_workers(workers)
    with shared_workers():  # the figures are drawn by the campaign's worker processes (no second start-up)
        run = run_experiment(load_spec(spec_path), campaign, workers=workers, progress=progress, log=log)
        report = output / "report"
        figures = write_figures(campaign, report, workers=workers)
    dashboard = write_dashboard(campaign, report / "dashboard.html")
    return CampaignDemo(spec_path, campaign, run, figures, dashboard, time.perf_counter() - t0)


@dataclass
class DemoRow:
    policy: str
    run: RunOutput
    seconds: float


def run_demo(
    output: Path, *, jobs: int = 10_000, machine_size: int = 256, load: float = 0.85, seed: int = 1
) -> list[DemoRow]:
    """Generate the workload, simulate every policy, write per-policy results, the workload and a figure."""
    output.mkdir(parents=True, exist_ok=True)
    workload = generate_lublin(jobs, machine_size, seed=seed, target_load=load)
    save_workload(workload, output / "workload.parquet")
    simulate(workload.jobs.head(2), "easy", machine_size)  # load the compiled engine before timing anything
    rows = []
    for name in CORE_POLICIES:
        t0 = time.perf_counter()
        run = run_policy(workload, name, machine_size=machine_size)
        rows.append(DemoRow(name, run, time.perf_counter() - t0))
        write_run(run, output / name)
    plot_comparison(rows, output / "policies.png")
    return rows


def plot_comparison(rows: list[DemoRow], path: Path) -> None:
    """Mean wait and bounded slowdown per policy, and the wait distributions (CDF) side by side."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    names = [r.policy for r in rows]
    waits = [r.run.summary["metrics"]["wait_mean"] / 3600 for r in rows]
    bslds = [r.run.summary["metrics"]["bounded_slowdown_mean"] for r in rows]
    colors = plt.cm.tab10(np.arange(len(rows)))
    axes[0].bar(names, waits, color=colors)
    axes[0].set_ylabel("mean wait (h)")
    axes[0].set_yscale("log")
    axes[1].bar(names, bslds, color=colors)
    axes[1].set_ylabel("mean bounded slowdown (τ = 10 s)")
    axes[1].set_yscale("log")
    for ax in axes[:2]:
        ax.tick_params(axis="x", rotation=35)
    for r, c in zip(rows, colors, strict=True):
        w = np.sort(r.run.jobs["wait"].to_numpy())
        axes[2].plot(np.maximum(w, 1.0), np.arange(1, w.size + 1) / w.size, label=r.policy, color=c)
    axes[2].set_xscale("log")
    axes[2].set_xlabel("wait (s, values below 1 s drawn at 1 s)")
    axes[2].set_ylabel("fraction of jobs")
    axes[2].legend(fontsize=8)
    fig.suptitle("wattsched demo: queue policies on a Lublin–Feitelson workload")
    fig.tight_layout()
    atomic_figure(fig, path, dpi=120)
    plt.close(fig)
