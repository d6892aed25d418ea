"""``wattsched campaign``: run a grid of simulations (resumable, locally or on Dask), then its status, results and
report. A spec with ``kind = "dispatch"`` is paper 001's dispatcher comparison; any other is the power campaign."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.progress import TextColumn
from rich.table import Table

from wattsched.cli.common import console, err, fail, print_table, progress_bar
from wattsched.core.schema import WorkloadError

app = typer.Typer(help="Run grids of simulations (campaigns), resumable, locally or on Dask.", no_args_is_help=True)


@app.command("run")
def campaign_run(
    spec: Annotated[Path, typer.Argument(help="Campaign file (.toml, .yaml or .json).")],
    output: Annotated[Path, typer.Option(help="Campaign directory (created, or resumed if it holds this campaign).")],
    executor: Annotated[str, typer.Option(help="local (processes) or dask.")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes (default: the CPU count).")] = None,
    address: Annotated[
        str | None, typer.Option(help="Dask scheduler, e.g. tcp://HOST:8786 (default: a LocalCluster).")
    ] = None,
) -> None:
    """Prepare the workloads once, then run every run not done yet; safe to interrupt and run again.

    A file with ``kind = "dispatch"`` is a dispatcher comparison on a multi-resource machine (paper 001)."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.campaign.runner import CampaignRun, run_campaign
    from wattsched.campaign.spec import CampaignError, parse_spec, read_spec_file
    from wattsched.studies.multires.experiment import is_dispatch_data, parse_dispatch_spec, run_dispatch

    try:
        data = read_spec_file(spec)
        execute: Callable[..., CampaignRun]
        if is_dispatch_data(data):
            dispatch = parse_dispatch_spec(data, str(spec))
            name, execute = dispatch.name, partial(run_dispatch, dispatch, base=spec.parent)
        else:
            power = parse_spec(data, str(spec))
            name, execute = power.name, partial(run_campaign, power)
        with progress_bar("[bold]campaign[/] " + name, TextColumn("runs")) as bar:
            task = bar.add_task("runs", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            result = execute(
                output,
                executor=executor,
                workers=workers,
                address=address,
                progress=progress,
                log=lambda m: err.print(m),
            )
    except (CampaignError, WorkloadError, ValueError, FileNotFoundError, OSError) as exc:
        fail(str(exc))
    console.print(
        f"{result.total} runs in {output}: {result.already_done} were done, {result.executed} ran now "
        f"({result.seconds:.1f} s)"
    )


@app.command("status")
def campaign_status(directory: Annotated[Path, typer.Argument(help="Campaign directory.")]) -> None:
    """How many runs are done, per workload window (per dispatcher × estimate for a dispatch campaign)."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.campaign.runner import status
    from wattsched.campaign.spec import CampaignError
    from wattsched.studies.multires.experiment import dispatch_status, is_dispatch_dir

    try:
        if is_dispatch_dir(directory):
            st = dispatch_status(directory)
            per, keys = st["per_combination"], ("dispatcher", "estimate")
        else:
            st = status(directory)
            per, keys = st["per_workload"], ("workload", "kind")
    except CampaignError as exc:
        fail(str(exc))
    table = Table(title=f"campaign {st['name']}: {st['done']:,} of {st['runs']:,} runs done")
    for col in (*keys, "done", "runs"):
        table.add_column(col, justify="left" if col in keys else "right")
    for row in per.iter_rows(named=True):
        table.add_row(row[keys[0]], row[keys[1]], f"{row['done']:,}", f"{row['runs']:,}")
    console.print(table)


@app.command("results")
def campaign_results(
    directory: Annotated[Path, typer.Argument(help="Campaign directory.")],
    output: Annotated[Path, typer.Option(help="One table of every finished run (.parquet or .csv).")],
) -> None:
    """Collect the finished runs into one table (query it with Polars or DuckDB)."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.campaign.runner import load_results
    from wattsched.campaign.spec import CampaignError
    from wattsched.studies.multires.experiment import is_dispatch_dir, load_dispatch_results

    try:
        table = load_dispatch_results(directory) if is_dispatch_dir(directory) else load_results(directory)
    except CampaignError as exc:
        fail(str(exc))
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix == ".csv":
        table.write_csv(output)
    else:
        table.write_parquet(output)
    console.print(f"wrote {table.height:,} runs × {table.width} columns to {output}")


@app.command("report")
def campaign_report(
    directory: Annotated[Path, typer.Argument(help="Campaign directory.")],
    output: Annotated[Path | None, typer.Option(help="Where figures go (default: DIR/report).")] = None,
    html: Annotated[bool, typer.Option(help="Also write the interactive dashboard (one self-contained file).")] = False,
    gantt_run: Annotated[str | None, typer.Option(help="Run id for the Gantt chart (default: chosen).")] = None,
    aggregate: Annotated[
        str, typer.Option(help="Summary over (workload window, cap) groups: mean (paper 000's) or median.")
    ] = "mean",
) -> None:
    """Figures (PNG and SVG) of the campaign, a summary table, and with --html the dashboard."""
    # deferred: figures load matplotlib and plotly; `wattsched --help` should not
    from wattsched.campaign.spec import CampaignError
    from wattsched.report.dashboard import write_dashboard
    from wattsched.report.figures import write_figures
    from wattsched.studies.multires.experiment import dispatch_summary, is_dispatch_dir
    from wattsched.studies.multires.figures import write_dispatch_figures

    out = output or directory / "report"
    if aggregate not in ("mean", "median"):
        fail(f"--aggregate must be mean or median, got {aggregate!r}")
    if is_dispatch_dir(directory):
        try:
            paths = write_dispatch_figures(directory, out)
        except (CampaignError, ValueError) as exc:
            fail(str(exc))
        print_table(dispatch_summary(directory), "dispatch campaign: per dispatcher × runtime estimate")
        console.print(f"wrote {len(paths)} files in {out}")
        return
    try:
        paths = write_figures(directory, out, gantt_run=gantt_run)
        if html:
            paths.append(write_dashboard(directory, out / "dashboard.html"))
    except (CampaignError, ValueError) as exc:
        fail(str(exc))
    print_campaign_summary(directory, aggregate)
    console.print(f"wrote {len(paths)} files in {out}" + (f"; dashboard: {out / 'dashboard.html'}" if html else ""))


def print_campaign_summary(directory: Path, aggregate: str = "mean") -> None:
    """The power campaign's summary per cap and, with several caps, pooled over caps (paper 000's table)."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.campaign.runner import load_results
    from wattsched.campaign.summary import campaign_summary, paper_summary

    results = load_results(directory)
    what = "means" if aggregate == "mean" else "medians"
    print_table(
        campaign_summary(results, stat=aggregate),
        f"campaign summary per cap: {what} over workload windows (trespass: share of runs that broke the cap)",
    )
    if results.height and results.filter(pl.col("kind") == "run")["cap"].n_unique() > 1:
        print_table(
            paper_summary(results, stat=aggregate),
            f"over every (workload window, cap) group, caps pooled ({what}; paper 000's aggregation)",
        )
