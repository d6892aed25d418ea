"""``wattsched dataset``: per-job power datasets from job tables and node telemetry (the PM100 method)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import TextColumn

from wattsched.cli.choices import Executor
from wattsched.cli.common import console, emit_json, fail, renamed_option
from wattsched.cli.progress import progress_bar
from wattsched.cli.stoppable import exit_interrupted
from wattsched.core.stopping import interruptions

app = typer.Typer(
    help="Build per-job power datasets from job tables and node telemetry (PM100 method).", no_args_is_help=True
)


@app.command("build")
def dataset_build(
    telemetry: Annotated[Path, typer.Option(help="Parquet file or directory: node, timestamp and ps0+ps1 or watts.")],
    output: Annotated[Path, typer.Option(help="Dataset (.parquet, PM100 schema); rejects: STEM.rejects.parquet.")],
    jobs: Annotated[
        Path | None,
        typer.Option(
            "--job-table", help="Job table (.parquet or .csv): job_id, start_time, end_time, nodes. Required."
        ),
    ] = None,
    old_jobs: Annotated[Path | None, typer.Option("--jobs", hidden=True, help="Old name of --job-table.")] = None,
    period: Annotated[float, typer.Option(help="Telemetry sample period θ (s).")] = 20.0,
    legacy_split: Annotated[
        bool,
        typer.Option(
            help="Test exclusivity per month and single/multi-node, as the reference scripts (default: globally)."
        ),
    ] = False,
    max_missing: Annotated[float, typer.Option(help="Share of missing samples a job may have (0: strict).")] = 0.0,
    snap: Annotated[
        float,
        typer.Option(
            help="Use telemetry rows up to this many seconds off the θ grid, at the "
            "nearest instant (default: exact timestamps only)."
        ),
    ] = 0.0,
    memory_gb: Annotated[
        float,
        typer.Option(help="Memory for the telemetry matrices of one window, per worker (GiB); sets the window length."),
    ] = 1.0,
    executor: Annotated[
        Executor, typer.Option(case_sensitive=False, help="local (processes) or dask.")
    ] = Executor.local,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Windows read in parallel (default: the CPU count).")
    ] = None,
    address: Annotated[str | None, typer.Option(help="Dask scheduler address (default: a local cluster).")] = None,
) -> None:
    """Keep the exclusive jobs, extract their power series and summaries; every other job is a reject.

    The telemetry is read window by window (out of core); see docs/dataset.md."""
    jobs = renamed_option(jobs, old_jobs, "--jobs", "--job-table")  # --jobs is a count elsewhere
    if jobs is None:
        fail("missing option --job-table (the job table: job_id, start_time, end_time, nodes)")
    # deferred: the dataset builder loads numba, pyarrow and (optionally) dask; `wattsched --help` should not
    from wattsched.api.datasets import BUILD_ERRORS, build_power_dataset, lock_dataset_output, read_job_table

    try:  # one build per output at a time; the holder removes what a killed build of it left
        lock = lock_dataset_output(output)
    except OSError as exc:
        fail(str(exc))
    try:
        table = read_job_table(jobs)
        with progress_bar("[bold]telemetry windows", TextColumn("{task.fields[rows]:,} rows")) as bar:
            task = bar.add_task("windows", total=None, rows=0)

            def progress(done: int, total: int, rows: int) -> None:
                bar.update(task, completed=done, total=total, rows=rows)

            built = build_power_dataset(
                table,
                telemetry,
                output,
                period=period,
                legacy_split=legacy_split,
                max_missing=max_missing,
                snap=snap,
                memory_gb=memory_gb,
                executor=executor.value,
                workers=workers,
                address=address,
                progress=progress,
                lock=False,  # held above, from before the job table is read
            )
    except interruptions():  # Ctrl-C, or SIGTERM (made one by the root app); the pool's workers are ended
        exit_interrupted(
            f"interrupted: the dataset build stopped; {output} was not written (a previous build there is "
            "unchanged); run the same command again to rebuild"
        )
    except BUILD_ERRORS as exc:
        fail(str(exc))
    finally:
        lock.release()
    per_stage = built.rejected_per_stage
    stats = built.stats
    emit_json(
        {
            "jobs": built.jobs,
            "dataset": str(output),
            "kept": built.dataset.height,
            "rejects": str(built.rejects_path),
            "rejected": built.rejects.height,
            "rejected_per_stage": per_stage,
            "telemetry_rows": stats.telemetry_rows,
            "windows": stats.windows,
        }
    )
    counts = ", ".join(f"{s}: {n:,}" for s, n in per_stage.items())
    console.print(
        f"{built.jobs:,} jobs: {built.dataset.height:,} in {output}, {built.rejects.height:,} rejected "
        f"({counts or 'none'}) in {built.rejects_path}"
    )
    console.print(f"telemetry: {stats.telemetry_rows:,} rows read in {stats.windows:,} window(s)")
    for note in stats.notes:
        console.print(f"note: {note}")
