"""``wattsched data``: fetch public datasets and convert workloads between formats."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from wattsched.cli.choices import PublicDataset
from wattsched.cli.common import console, emit_json, err, fail
from wattsched.core.schema import WorkloadError

app = typer.Typer(help="Convert workloads between formats.", no_args_is_help=True)


@app.command("fetch")
def data_fetch(
    dataset: Annotated[PublicDataset, typer.Argument(case_sensitive=False, help="The dataset to download.")],
    to: Annotated[Path, typer.Option("--to", help="Directory for the files (resumed if a fetch was interrupted).")],
    file: Annotated[
        list[str] | None, typer.Option(help="Only these files of the record (repeatable; default: job_table.parquet).")
    ] = None,
    record: Annotated[str | None, typer.Option(help="Archive record id (default: the dataset's).")] = None,
    base_url: Annotated[str, typer.Option(help="Archive (Zenodo API compatible).")] = "https://zenodo.org",
) -> None:
    """Download a public dataset from its archive record, checking checksums and resuming partial downloads."""
    # deferred: urllib.request loads http and ssl (20 ms); `wattsched --help` should not
    from wattsched.workload.fetch import PM100_RECORD, FetchError, fetch_record

    if dataset != "pm100":
        fail(f"unknown dataset {dataset!r}; available: pm100")
    with Progress(
        TextColumn("{task.description}", style="bold", markup=False),  # a file name of the record: no markup
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
            paths = fetch_record(
                record or PM100_RECORD, to, files=file or ["job_table.parquet"], base_url=base_url, progress=progress
            )
        except FetchError as exc:
            fail(str(exc))
    emit_json({"files": [{"path": str(p), "bytes": p.stat().st_size} for p in paths]})
    for path in paths:
        console.print(f"{path} ({path.stat().st_size:,} bytes, checksum verified)")


@app.command("convert")
def data_convert(
    input: Annotated[Path, typer.Option("--input", help="Any readable workload (SWF, parquet, csv, PM100).")],
    output: Annotated[
        Path, typer.Option(help="Output by extension: .swf/.swf.gz, .parquet, .csv/.csv.gz, or .json (Batsim v4).")
    ],
    machine_size: Annotated[int | None, typer.Option(help="Machine size (when the input does not declare it).")] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
) -> None:
    """Read a workload (rejects reported) and write it in another format."""
    # deferred: the readers and writers load numba and pyarrow; `wattsched --help` should not
    from wattsched.workload.batsim import write_batsim
    from wattsched.workload.load import load_workload
    from wattsched.workload.save import SAVE_FORMATS, save_workload

    endings = (*(e for es in SAVE_FORMATS.values() for e in es), ".json")
    if not output.name.lower().endswith(endings):
        fail(f"--output must end in {', '.join(endings)}, got {output.name}")
    batsim = output.name.lower().endswith(".json")
    try:
        read = load_workload(input, machine_size=machine_size, strict=strict)
        if machine_size is not None:
            read = read._replace(provenance=dataclasses.replace(read.provenance, machine_size=machine_size))
        if batsim:  # an export: load_workload does not read Batsim JSON back
            output.parent.mkdir(parents=True, exist_ok=True)
            write_batsim(read.jobs, output, provenance=read.provenance)
        else:
            left_out = save_workload(read, output)
            if left_out:
                err.print(f"note: CSV cannot hold list columns; {', '.join(left_out)} left out")
    except (WorkloadError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    emit_json({"input": str(input), "output": str(output), "jobs": read.jobs.height, "rejected": read.rejects.height})
    console.print(
        f"wrote {read.jobs.height:,} jobs to {output}"
        + (f" ({read.rejects.height:,} input lines rejected)" if read.rejects.height else "")
    )
