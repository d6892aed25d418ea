"""``wattsched campaign``: run a campaign of any kind through the one runner (resumable, locally or on Dask), then
its status, results and report. The spec's ``kind`` says what it compares (docs/campaigns.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import TextColumn
from rich.table import Table

from wattsched.cli.choices import Aggregate, Executor
from wattsched.cli.common import console, emit_json, err, fail, print_table, warn
from wattsched.cli.progress import progress_bar
from wattsched.cli.stoppable import exit_interrupted
from wattsched.core.errors import CampaignError, WorkloadError
from wattsched.core.output_folders import FolderBusyError

if TYPE_CHECKING:
    from wattsched.api.campaigns import CampaignRun
    from wattsched.core.experiment import Experiment

app = typer.Typer(help="Run grids of simulations (campaigns), resumable, locally or on Dask.", no_args_is_help=True)


def run_with_progress(experiment: Experiment, output: Path, **options: Any) -> CampaignRun:
    """Run a campaign with a progress bar; on Ctrl-C or SIGTERM say how far it got and exit with code 130."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.api.campaigns import CampaignInterrupted, ignored_executor_options, run_campaign

    for note in ignored_executor_options(options.get("executor"), options.get("workers"), options.get("address")):
        warn(note)
    try:
        with progress_bar(f"[bold]{experiment.kind}[/] {escape(experiment.name)}", TextColumn("runs")) as bar:
            task = bar.add_task("runs", total=None)
            return run_campaign(
                experiment,
                output,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                log=lambda m: err.print(m),
                **options,
            )
    except CampaignInterrupted as stop:
        exit_interrupted(str(stop))
    except FolderBusyError as exc:  # another process runs a campaign in this folder
        fail(str(exc))


@app.command("run")
def campaign_run(
    spec: Annotated[Path, typer.Argument(help="Campaign file (.toml, .yaml or .json).")],
    output: Annotated[Path, typer.Option(help="Campaign directory (created, or resumed if it holds this campaign).")],
    executor: Annotated[
        Executor, typer.Option(case_sensitive=False, help="local (processes) or dask.")
    ] = Executor.local,
    workers: Annotated[int | None, typer.Option(min=1, help="Worker processes (default: the CPU count).")] = None,
    address: Annotated[
        str | None, typer.Option(help="Dask scheduler, e.g. tcp://HOST:8786 (default: a LocalCluster).")
    ] = None,
    max_runs: Annotated[
        int | None,
        typer.Option(
            min=1, help="Runs the grid may expand to (default: the spec's max_runs, else 1,000,000); refused before."
        ),
    ] = None,
) -> None:
    """Prepare the campaign once, then run every run not done yet; safe to interrupt (Ctrl-C, SIGTERM, even
    kill -9) and run again.

    The file's ``kind`` says what it compares: power (paper 000), queue (queue policies), dispatch (paper 001),
    eamc (paper 002) or rmap (paper 004); see docs/campaigns.md."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.api.campaigns import load_experiment

    try:
        experiment = load_experiment(spec)
        result = run_with_progress(
            experiment, output, executor=executor, workers=workers, address=address, max_runs=max_runs
        )
    except (CampaignError, WorkloadError, ValueError, FileNotFoundError, OSError) as exc:
        fail(str(exc))
    emit_json(
        {
            "output": str(output),
            "runs": result.total,
            "already_done": result.already_done,
            "executed": result.executed,
            "seconds": result.seconds,
        }
    )
    console.print(
        f"{result.total} runs in {output}: {result.already_done} were done, {result.executed} ran now "
        f"({result.seconds:.1f} s)"
    )


@app.command("status")
def campaign_status(directory: Annotated[Path, typer.Argument(help="Campaign directory.")]) -> None:
    """How many runs are done, counted by the kind's two main parameters (e.g. workload window and run kind)."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.api.campaigns import campaign_status

    try:
        st = campaign_status(directory)
    except CampaignError as exc:
        fail(str(exc))
    keys = st["keys"]
    emit_json({**{k: v for k, v in st.items() if k != "per"}, "per": st["per"].to_dicts()})
    table = Table(title=f"{st['kind']} campaign {st['name']}: {st['done']:,} of {st['runs']:,} runs done")
    for col in (*keys, "done", "runs"):
        table.add_column(col, justify="left" if col in keys else "right")
    for row in st["per"].iter_rows(named=True):
        table.add_row(row[keys[0]], row[keys[1]], f"{row['done']:,}", f"{row['runs']:,}")
    console.print(table)


@app.command("results")
def campaign_results(
    directory: Annotated[Path, typer.Argument(help="Campaign directory.")],
    output: Annotated[Path, typer.Option(help="One table of every finished run (.parquet or .csv).")],
) -> None:
    """Collect the finished runs into one table (query it with Polars or DuckDB)."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.api.campaigns import collect_results

    try:
        table = collect_results(directory, output)
    except CampaignError as exc:
        fail(str(exc))
    emit_json({"output": str(output), "runs": table.height, "columns": table.width})
    console.print(f"wrote {table.height:,} runs × {table.width} columns to {output}")


@app.command("report")
def campaign_report(
    directory: Annotated[Path, typer.Argument(help="Campaign directory.")],
    output: Annotated[Path | None, typer.Option(help="Where figures go (default: DIR/report).")] = None,
    html: Annotated[
        bool,
        typer.Option(
            help="Also write the HTML report, one self-contained file: the interactive dashboard of a power "
            "campaign, report.html of a queue campaign."
        ),
    ] = False,
    gantt_run: Annotated[str | None, typer.Option(help="Run id for the Gantt chart (default: chosen).")] = None,
    aggregate: Annotated[
        Aggregate,
        typer.Option(
            case_sensitive=False, help="Summary over (workload window, cap) groups: mean (paper 000's) or median."
        ),
    ] = Aggregate.mean,
) -> None:
    """Figures (PNG and SVG) and tables of the campaign, its summary printed; with --html its HTML report."""
    # deferred: figures load matplotlib and plotly; `wattsched --help` should not
    from wattsched.api.campaigns import campaign_report as report_of

    try:
        written = report_of(directory, output, html=html, gantt_run=gantt_run, aggregate=aggregate)
    except (CampaignError, ValueError) as exc:
        fail(str(exc))
    for note in written.notes:
        err.print(note, markup=False, highlight=False, soft_wrap=True)
    out, paths, tables = written.output, written.paths, written.tables
    emit_json({"output": str(out), "files": [str(p) for p in paths], "tables": {t: f.to_dicts() for t, f in tables}})
    for title, table in tables:
        print_table(table, title)
    board = f"; HTML report: {written.dashboard}" if written.dashboard is not None else ""
    console.print(f"wrote {len(paths)} files in {out}{board}")


def print_campaign_summary(directory: Path, aggregate: str = "mean") -> None:
    """The campaign's summary tables (a power campaign's: per cap and, with several caps, pooled over caps)."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.api.campaigns import summary_tables

    for title, table in summary_tables(directory, aggregate=aggregate):
        print_table(table, title)
