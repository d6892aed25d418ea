"""``wattsched data``: fetch public datasets and convert workloads between formats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from wattsched.api.vocabulary import format_help
from wattsched.cli.choices import PublicDataset
from wattsched.cli.common import (
    ColumnsOption,
    TimezoneOption,
    console,
    emit_json,
    err,
    fail,
    renamed_option,
    report_rejects,
    warn,
    warn_ignored_timezone,
)
from wattsched.core.errors import WorkloadError

app = typer.Typer(help="Convert workloads between formats.", no_args_is_help=True)


@app.command("fetch")
def data_fetch(
    dataset: Annotated[PublicDataset, typer.Argument(case_sensitive=False, help="The dataset to download.")],
    output: Annotated[
        Path | None, typer.Option(help="Directory for the files (resumed if a fetch was interrupted). Required.")
    ] = None,
    old_to: Annotated[Path | None, typer.Option("--to", hidden=True, help="Old name of --output.")] = None,
    file: Annotated[
        list[str] | None, typer.Option(help="Only these files of the record (repeatable; default: job_table.parquet).")
    ] = None,
    record: Annotated[str | None, typer.Option(help="Archive record id (default: the dataset's).")] = None,
    base_url: Annotated[
        str, typer.Option(help="Archive (Zenodo API compatible); https only (plain http only on loopback).")
    ] = "https://zenodo.org",
    max_size: Annotated[
        float, typer.Option(help="Largest file accepted, in GiB; a larger file of the record is refused.")
    ] = 64.0,
    deadline: Annotated[
        float,
        typer.Option(
            help="Seconds the whole fetch may take (default: a day); past it the download stops, its partial file "
            "kept for a resume."
        ),
    ] = 86_400.0,
    min_rate: Annotated[
        float,
        typer.Option(
            help="Slowest transfer accepted, in bytes/s averaged over --stall-window (default 1 KiB/s; 0: no "
            "minimum); a slower download is stopped as stalled, its partial file kept for a resume."
        ),
    ] = 1024.0,
    stall_window: Annotated[float, typer.Option(help="Seconds over which --min-rate is averaged.")] = 60.0,
) -> None:
    """Download a public dataset from its archive record, checking checksums and resuming partial downloads.

    Only the archive's own https links are followed; a file the record lists without a checksum, or with a name
    that is not plain printable text, is refused. A fetch past --deadline or slower than --min-rate stops with its
    partial file kept: running the same command again resumes it."""
    # deferred: urllib.request loads http and ssl (20 ms), the readers numba and pyarrow; `wattsched --help` should not
    from wattsched.api.workloads import FetchError, check_fetch_request, fetch_dataset

    to = renamed_option(output, old_to, "--to", "--output")  # --to: the end of a report's time window
    if to is None:
        fail("missing option --output (the directory for the files)")
    try:
        check_fetch_request(dataset.value, max_size, deadline=deadline, min_rate=min_rate, stall_window=stall_window)
    except ValueError as exc:  # --max-size, --deadline, --min-rate or --stall-window out of range; unknown dataset
        fail(str(exc))
    with Progress(
        TextColumn("{task.description}", markup=False, style="bold"),  # names come from the network: no markup
        BarColumn(),
        TextColumn("{task.completed:,} bytes"),
        console=err,
        transient=True,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done)

        try:
            paths = fetch_dataset(
                dataset.value,
                to,
                file=file,
                record=record,
                base_url=base_url,
                max_size=max_size,
                deadline=deadline,
                min_rate=min_rate,
                stall_window=stall_window,
                progress=progress,
            )
        except FetchError as exc:
            fail(str(exc))
    emit_json({"files": [{"path": str(p), "bytes": p.stat().st_size} for p in paths]})
    for path in paths:
        console.print(f"{path} ({path.stat().st_size:,} bytes, checksum verified)", markup=False, highlight=False)


@app.command("convert")
def data_convert(
    output: Annotated[
        Path, typer.Option(help="Output by extension: .swf/.swf.gz, .parquet, .csv/.csv.gz, or .json (Batsim v4).")
    ],
    workload: Annotated[Path | None, typer.Option(help=format_help() + " Required.")] = None,
    old_input: Annotated[Path | None, typer.Option("--input", hidden=True, help="Old name of --workload.")] = None,
    machine_size: Annotated[int | None, typer.Option(help="Machine size (when the input does not declare it).")] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
    timezone: TimezoneOption = None,
    columns: ColumnsOption = None,
) -> None:
    """Read a workload and write it in another format; rejected input records are listed by reason and written
    to OUTPUT's stem + .rejects.parquet (.rejects.csv for a CSV output). Writing no job is an error (exit 1)."""
    # deferred: the readers and writers load numba and pyarrow; `wattsched --help` should not
    from wattsched.api.workloads import EmptyWorkloadError, conversion_rejects_path, convert_workload
    from wattsched.core.rejects import AllRejectedError, write_rejects

    input = renamed_option(workload, old_input, "--input", "--workload")  # --workload: every command's input
    if input is None:
        fail("missing option --workload (the workload to convert)")
    where = conversion_rejects_path(output)
    try:
        done = convert_workload(
            input, output, machine_size=machine_size, strict=strict, timezone=timezone, columns=columns
        )
        read = done.read
        warn_ignored_timezone(timezone, read.provenance.format, read.provenance.source)
        if done.left_out:
            err.print(f"note: CSV cannot hold list columns; {', '.join(done.left_out)} left out")
    except EmptyWorkloadError as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(code=1) from None
    except AllRejectedError as exc:  # nothing written: exit 1 with the reasons, and the rejects kept
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        err.print(f"rejects: {write_rejects(exc.rejects, where)}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(code=1) from None
    except (WorkloadError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    emit_json({"input": str(input), "output": str(output), "jobs": read.jobs.height, "rejected": read.rejects.height})
    console.print(f"wrote {read.jobs.height:,} jobs to {output}", markup=False, highlight=False)
    report_rejects(read.rejects, read.provenance.format, where)


@app.command("stats")
def data_stats(
    workload: Annotated[Path | None, typer.Option(help=format_help() + " Required.")] = None,
    old_file: Annotated[
        Path | None, typer.Argument(hidden=True, help="The workload (old form of --workload).", metavar="FILE")
    ] = None,
    machine_size: Annotated[
        int | None, typer.Option(help="Machine size for the offered load (default: the one the workload declares).")
    ] = None,
    figure: Annotated[
        Path | None, typer.Option(help="Also draw size and runtime histograms, accuracy and arrivals (.png, .svg).")
    ] = None,
    timezone: TimezoneOption = None,
    columns: ColumnsOption = None,
) -> None:
    """Workload statistics as the Parallel Workloads Archive shows them: jobs, users, offered load, size and
    runtime quantiles and log2 histograms, inter-arrival times, walltime accuracy."""
    # deferred: the readers load numba and pyarrow, the figure matplotlib; `wattsched --help` should not
    from wattsched.api.workloads import EmptyWorkloadError, load_workload, workload_statistics

    if old_file is not None:
        warn(f"give the workload as --workload {old_file} (a FILE argument is its old form; the file is read)")
    file = old_file or workload  # --workload: every command's input
    if file is None:
        fail("missing option --workload (the workload to describe)")
    try:
        read = load_workload(file, machine_size=machine_size, timezone=timezone, columns=columns)
        warn_ignored_timezone(timezone, read.provenance.format, read.provenance.source)
    except (WorkloadError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    try:
        stats = workload_statistics(read, machine_size=machine_size, figure=figure, source=file)
    except EmptyWorkloadError as exc:
        fail(str(exc))
    emit_json(stats)
    _print_stats(stats)
    report_rejects(read.rejects, read.provenance.format)
    if figure is not None:
        err.print(f"figure: {figure}", markup=False, highlight=False, soft_wrap=True)


def _print_stats(stats: dict[str, Any]) -> None:
    """The statistics as three rich tables: the workload, the distributions, the log2 histograms."""
    from rich.table import Table

    def num(x: float | None, fmt: str = ",.0f") -> str:
        return "n/a" if x is None else format(x, fmt)

    head = Table(title=f"workload {stats['source']}")
    head.add_column("statistic")
    head.add_column("value", justify="right")
    users = stats["users"]
    for k, v in (
        ("jobs (rejected input lines)", f"{stats['jobs']:,} ({stats['rejected']:,})"),
        ("machine size", f"{num(stats['machine_size'])} {stats['size_unit']}"),
        ("span of submissions (days)", num(stats["span_s"] / 86400, ",.1f")),
        ("offered load", num(stats["offered_load"], ".3f")),
        ("users (top 5 share of jobs)", f"{num(users['count'])} ({num(users.get('top5_share_of_jobs'), '.1%')})"),
        (
            "serial jobs / power-of-two sizes",
            f"{stats['size']['serial_share']:.1%} / {stats['size']['power_of_two_share']:.1%}",
        ),
        ("jobs killed at walltime", num(stats["walltime_accuracy"]["killed_share"], ".1%")),
    ):
        head.add_row(k, v)
    console.print(head)
    dist = Table(title="distributions")
    dist.add_column("quantity")
    cols = ("mean", "p0", "p10", "p25", "p50", "p75", "p90", "p99", "p100")
    for c in cols:
        dist.add_column(c, justify="right")
    for label, key, fmt in (
        ("size", "size", ",.0f"),
        ("runtime (s)", "runtime_s", ",.0f"),
        ("walltime (s)", "walltime_s", ",.0f"),
        ("walltime accuracy", "walltime_accuracy", ".3f"),
        ("inter-arrival (s)", "interarrival_s", ",.0f"),
    ):
        dist.add_row(label, *(num(stats[key][c], fmt) for c in cols))
    console.print(dist)
    hist = Table(title="log2 histograms (jobs per bin [low, high))")
    hist.add_column("bin")
    hist.add_column("size", justify="right")
    hist.add_column("runtime (s)", justify="right")
    size_rows = {r["low"]: r["count"] for r in stats["size"]["log2_histogram"]}
    run_rows = {r["low"]: r["count"] for r in stats["runtime_s"]["log2_histogram"]}
    for low in sorted(set(size_rows) | set(run_rows)):
        hist.add_row(f"{low:,}–{max(2 * low, 1):,}", f"{size_rows.get(low, 0):,}", f"{run_rows.get(low, 0):,}")
    console.print(hist)
