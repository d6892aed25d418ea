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
    from wattsched.core.bounds import check_fits
    from wattsched.workload.generate import generate_lublin
    from wattsched.workload.generate.footprint import LUBLIN_BYTES_PER_JOB
    from wattsched.workload.save import save_workload, workload_format

    try:
        workload_format(output)  # a wrong file name fails before the jobs are drawn
        check_fits("--jobs", jobs, LUBLIN_BYTES_PER_JOB, "the lublin generator")
        result = generate_lublin(jobs, machine_size, seed=seed, target_load=load, n_users=users)
        save_workload(result, output)
    except ValueError as exc:
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
    from wattsched.core.bounds import check_fits
    from wattsched.workload.generate import generate_m100like
    from wattsched.workload.generate.footprint import M100_BYTES_PER_JOB
    from wattsched.workload.save import save_workload

    if not output.name.endswith(".parquet"):
        fail("power profiles are a list column: write the m100 workload as .parquet")
    try:
        check_fits("--jobs", jobs, M100_BYTES_PER_JOB, "the m100 generator")
        result = generate_m100like(jobs, seed=seed, target_load=load, n_users=users, span_days=span_days)
        save_workload(result, output, "parquet")
    except ValueError as exc:
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
    from wattsched.core.bounds import check_fits, free_disk_bytes
    from wattsched.core.store import atomic_parquet
    from wattsched.dataset.synthetic import (
        BYTES_PER_JOB,
        DISK_BYTES_PER_SAMPLE,
        place_jobs,
        write_synthetic_exadata,
    )

    try:
        check_fits("--jobs", jobs, BYTES_PER_JOB, "job placement")
        if days > 0 and period > 0:  # the generator refuses the others with its own message
            samples = int(2 * nodes * (days * 86_400.0 / period + 1))
            check_fits(
                "--days",
                samples,
                DISK_BYTES_PER_SAMPLE,
                f"the telemetry of {nodes:,} nodes over {days:g} days",
                limit=free_disk_bytes(output),
                limit_name=f"free under {output}",
                unit="PSU sample",
                resource="disk",
                value=days,
            )
        machine = place_jobs(
            jobs,
            n_nodes=nodes,
            hours=days * 24.0,
            period=period,
            shared_share=shared_share,
            missing_share=missing_share,
            outages=outages,
            median_seconds=median_minutes * 60.0,
            seed=seed,
        )
        output.mkdir(parents=True, exist_ok=True)
        atomic_parquet(machine.jobs, output / "jobs.parquet")
        rows = write_synthetic_exadata(machine, output / "telemetry")
    except ValueError as exc:
        fail(str(exc))
    emit_json({"jobs": str(output / "jobs.parquet"), "n_jobs": machine.jobs.height, "psu_samples": 2 * rows})
    console.print(
        f"wrote {machine.jobs.height:,} jobs to {output / 'jobs.parquet'} and {2 * rows:,} PSU samples "
        f"to {output / 'telemetry'}"
    )
