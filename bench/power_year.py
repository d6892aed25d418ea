"""Benchmark: a year of a 3,000-node machine at Marconi100 density, end to end in memory (issue 18, item 5).

A Marconi100-like workload (``generate_m100like``, PM100-calibrated, its default offered load) on 3,000 nodes
with as many jobs as fill 365 days of submissions (~1.8 M jobs, ~510 M profile samples), then one whole power
run: EASY+PC gaussian99 with a 50 % cap over the first 3 hours, the compact power timeline (time + dynamic, 16 B
a row), the power metrics and the uncapped EASY baseline (``run_policy``). Measured in this one
single-threaded process: CPU seconds of the generation and of the run, the peak RSS of the whole (it must stay
within the machine's 24 GB) and the run's peak RSS over the RSS before it, per profile sample.

Minutes long (the generation dominates) and ~12 GB: run it alone.

    .venv/bin/python bench/power_year.py [--fraction 1.0] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from pathlib import Path

from targets import Target, record

REPO = Path(__file__).resolve().parents[1]
#: Jobs that fill one year of submissions on 3,000 nodes at the generator's default load (measured: 20,000 jobs
#: span 4.02 days).
YEAR_JOBS = 1_816_000
NODES = 3_000
RAM_MB = 24_000.0


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fraction", type=float, default=1.0, help="share of the year to generate (1.0: a year)")
    parser.add_argument("--quick", action="store_true", help="a hundredth of the year (a smoke test, < 1 min)")
    args = parser.parse_args()
    fraction = 0.01 if args.quick else args.fraction
    for var in ("POLARS_MAX_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from wattsched.api import run_policy
    from wattsched.policies.powercheck import PowerCheck
    from wattsched.power.platform import Platform, PowerCapSchedule, load_platform
    from wattsched.power.run import PowerSetup
    from wattsched.workload.generate import generate_m100like

    m100 = load_platform("marconi100")
    plat = Platform(name="marconi100-3000", nodes=NODES, idle_watts=m100.idle_watts, max_node_watts=m100.max_node_watts)
    cap = PowerCapSchedule.window(0.5, plat, window_end=10_800.0, post_window_cap="dynamic_range")
    setup = PowerSetup(plat, PowerCheck.named("gaussian99"), "real", cap, 10_800.0)
    run_policy(generate_m100like(500, seed=1, n_nodes=NODES), "easy-pc", power=setup)  # compile / load kernels

    wall = time.perf_counter()
    cpu = time.process_time()
    read = generate_m100like(round(YEAR_JOBS * fraction), seed=0, n_nodes=NODES)
    gen_cpu = time.process_time() - cpu
    samples = int(read.jobs["power_profile"].list.len().sum())
    span_days = float(read.jobs["submit_time"].max() - read.jobs["submit_time"].min()) / 86_400
    gc.collect()
    rss0 = _status_kib("VmRSS")
    gen_peak = _status_kib("VmHWM")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS to the current RSS
    cpu = time.process_time()
    run = run_policy(read, "easy-pc", power=setup)
    run_cpu = time.process_time() - cpu
    run_peak = _status_kib("VmHWM")
    peak_mb = max(gen_peak, run_peak) / 1024
    results = {
        "fraction_of_year": fraction,
        "jobs": read.jobs.height,
        "submit_span_days": span_days,
        "profile_samples": samples,
        "timeline_rows": run.power_steps.height,
        "generate_cpu_s": gen_cpu,
        "run_policy_cpu_s": run_cpu,
        "wall_s": time.perf_counter() - wall,
        "workload_rss_mb": rss0 / 1024,
        "generate_peak_rss_mb": gen_peak / 1024,
        "run_peak_rss_mb": run_peak / 1024,
        "run_bytes_per_sample": (run_peak - rss0) * 1024 / samples,
        "peak_rss_mb": peak_mb,
        "energy_run_total_j": run.summary["power"]["energy_run_total_j"],
        "power_utilisation": run.summary["power"]["power_utilisation"],
    }
    for key, value in results.items():
        print(f"{key:24s} {value:,.3f}" if isinstance(value, float) else f"{key:24s} {value:,}")
    out = REPO / "bench" / "results" / "power_year.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    scale = f"{results['jobs']:,} jobs over {span_days:.0f} days, {samples / 1e6:.0f} M samples"
    record(
        "power_year",
        [
            Target(
                "a year of a 3,000-node machine end to end: peak RSS (generation + power run)",
                peak_mb,
                RAM_MB,
                "MB",
                note=f"{scale}; generation {gen_cpu:.0f} s + run {run_cpu:.0f} s CPU; "
                f"run {results['run_bytes_per_sample']:.1f} B a sample"
                + ("" if fraction == 1.0 else f" (only {fraction:g} of the year)"),
            )
        ],
    )


if __name__ == "__main__":
    main()
