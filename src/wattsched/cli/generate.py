"""``wattsched generate``: synthetic workloads (Lublin–Feitelson, Marconi100-like) and node telemetry."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wattsched.cli.common import console, emit_json, fail

app = typer.Typer(help="Generate synthetic workloads.", no_args_is_help=True)


@app.command("lublin")
def generate_lublin_cmd(
    output: Annotated[Path, typer.Option(help="Output file (.parquet, .csv, .csv.gz, .swf or .swf.gz).")],
    jobs: Annotated[int, typer.Option(help="Number of jobs.")] = 10_000,
    machine_size: Annotated[int, typer.Option(help="Processors of the target machine.")] = 256,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    load: Annotated[float | None, typer.Option(help="Target offered load (scales inter-arrival times).")] = None,
    users: Annotated[int, typer.Option(help="Number of users.")] = 100,
) -> None:
    """Generate a Lublin–Feitelson (2003) workload of rigid parallel jobs."""
    # deferred: the generators and writers load numba and pyarrow; `wattsched --help` should not
    from wattsched.api.generate import generate_lublin_workload

    try:
        result = generate_lublin_workload(
            output, jobs=jobs, machine_size=machine_size, seed=seed, load=load, users=users
        )
    except ValueError as exc:  # the output's name, a size too large for the memory, an option out of range
        fail(str(exc))
    emit_json({"output": str(output), "jobs": result.jobs.height})
    console.print(f"wrote {result.jobs.height} jobs to {output}")


@app.command("m100")
def generate_m100_cmd(
    output: Annotated[Path, typer.Option(help="Output Parquet file (power profiles are a list column).")],
    jobs: Annotated[int, typer.Option(help="Number of jobs.")] = 20_000,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    load: Annotated[
        float | None, typer.Option(help="Target offered load on the 980 nodes (default 0.95, docs/m100like.md).")
    ] = None,
    users: Annotated[int, typer.Option(help="Number of users.")] = 480,
    span_days: Annotated[
        float | None, typer.Option(help="Spread the submissions over this many days (default: the load's span).")
    ] = None,
) -> None:
    """Generate a Marconi100-like workload with per-job power profiles (20 s samples)."""
    # deferred: the generators and writers load numba and pyarrow; `wattsched --help` should not
    from wattsched.api.generate import generate_m100_workload

    try:
        result = generate_m100_workload(output, jobs=jobs, seed=seed, load=load, users=users, span_days=span_days)
    except ValueError as exc:  # not a .parquet output, a size too large for the memory, an option out of range
        fail(str(exc))
    emit_json({"output": str(output), "jobs": result.jobs.height})
    console.print(f"wrote {result.jobs.height} jobs with power profiles to {output}")


@app.command("telemetry")
def generate_telemetry_cmd(
    output: Annotated[Path, typer.Option(help="Directory: jobs.parquet and telemetry/ (M100 ExaData layout).")],
    jobs: Annotated[int, typer.Option(help="Number of jobs.")] = 2_000,
    nodes: Annotated[int, typer.Option(help="Nodes of the machine.")] = 980,
    days: Annotated[float, typer.Option(help="Length of the telemetry (days).")] = 1.0,
    period: Annotated[float, typer.Option(help="Sample period θ (s).")] = 20.0,
    shared_share: Annotated[float, typer.Option(help="Share of jobs that also take a busy node.")] = 0.05,
    missing_share: Annotated[float, typer.Option(help="Share of (node, instant) samples missing.")] = 0.0005,
    outages: Annotated[int, typer.Option(help="Node outages of 1–6 h without telemetry.")] = 0,
    median_minutes: Annotated[float, typer.Option(help="Median job duration (min).")] = 30.0,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Generate a job table and per-PSU node telemetry for the PM100 method (streamed day by day to disk)."""
    # deferred: the telemetry generator loads numba and pyarrow; `wattsched --help` should not
    from wattsched.api.generate import generate_node_telemetry

    try:
        made = generate_node_telemetry(
            output,
            jobs=jobs,
            nodes=nodes,
            days=days,
            period=period,
            shared_share=shared_share,
            missing_share=missing_share,
            outages=outages,
            median_minutes=median_minutes,
            seed=seed,
        )
    except ValueError as exc:  # a size too large for the memory or the disk, an option out of range
        fail(str(exc))
    emit_json({"jobs": str(made.jobs), "n_jobs": made.n_jobs, "psu_samples": made.psu_samples})
    console.print(f"wrote {made.n_jobs:,} jobs to {made.jobs} and {made.psu_samples:,} PSU samples to {made.telemetry}")
