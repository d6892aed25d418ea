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
from wattsched.cli.common import console, emit_json, err, fail, print_table, progress_bar, warn
from wattsched.cli.stoppable import exit_interrupted
from wattsched.core.errors import CampaignError, WorkloadError

if TYPE_CHECKING:
    from wattsched.campaign.runner import CampaignRun
    from wattsched.core.experiment import Experiment

app = typer.Typer(help="Run grids of simulations (campaigns), resumable, locally or on Dask.", no_args_is_help=True)


def warn_ignored_executor_options(options: dict[str, Any]) -> None:
    """``--address`` names a Dask scheduler and means nothing to local processes; a remote scheduler's cluster
    has its own workers, so ``--workers`` means nothing to it: either is ignored, with a warning."""
    executor, workers, address = options.get("executor"), options.get("workers"), options.get("address")
    if address is not None and executor != "dask":
        warn(f"--address is ignored: it names a Dask scheduler and the executor is {executor} (give --executor dask)")
    if address is not None and executor == "dask" and workers is not None:
        warn("--workers is ignored: the Dask cluster at --address has its own workers")


def run_with_progress(experiment: Experiment, output: Path, **options: Any) -> CampaignRun:
    """Run a campaign with a progress bar; on Ctrl-C or SIGTERM say how far it got and exit with code 130."""
    warn_ignored_executor_options(options)
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.campaign.runner import CampaignInterrupted, run_experiment
    from wattsched.core.output_folders import FolderBusyError

    try:
        with progress_bar(f"[bold]{experiment.kind}[/] {escape(experiment.name)}", TextColumn("runs")) as bar:
            task = bar.add_task("runs", total=None)
            return run_experiment(
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
) -> None:
    """Prepare the campaign once, then run every run not done yet; safe to interrupt (Ctrl-C, SIGTERM, even
    kill -9) and run again.

    The file's ``kind`` says what it compares: power (paper 000), queue (queue policies), dispatch (paper 001),
    eamc (paper 002) or rmap (paper 004); see docs/campaigns.md."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.campaign.kinds import load_experiment

    try:
        experiment = load_experiment(spec)
        result = run_with_progress(experiment, output, executor=executor, workers=workers, address=address)
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
    from wattsched.campaign.runner import status

    try:
        st = status(directory)
    except CampaignError as exc:
        fail(str(exc))
    keys = st["keys"]
    emit_json({**{k: v for k, v in st.items() if k != "per"}, "per": st["per"].to_dicts()})
    table = Table(title=f"campaign {st['name']}: {st['done']:,} of {st['runs']:,} runs done", caption=st["kind"])
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
    from wattsched.campaign.runner import load_results
    from wattsched.core.store import atomic_table

    try:
        table = load_results(directory)
    except CampaignError as exc:
        fail(str(exc))
    atomic_table(table, output)
    emit_json({"output": str(output), "runs": table.height, "columns": table.width})
    console.print(f"wrote {table.height:,} runs × {table.width} columns to {output}")


@app.command("report")
def campaign_report(
    directory: Annotated[Path, typer.Argument(help="Campaign directory.")],
    output: Annotated[Path | None, typer.Option(help="Where figures go (default: DIR/report).")] = None,
    html: Annotated[
        bool, typer.Option(help="Also write the interactive dashboard (power campaigns; one self-contained file).")
    ] = False,
    gantt_run: Annotated[str | None, typer.Option(help="Run id for the Gantt chart (default: chosen).")] = None,
    aggregate: Annotated[
        Aggregate,
        typer.Option(
            case_sensitive=False, help="Summary over (workload window, cap) groups: mean (paper 000's) or median."
        ),
    ] = Aggregate.mean,
) -> None:
    """Figures (PNG and SVG) and tables of the campaign, its summary printed; with --html the dashboard."""
    # deferred: figures load matplotlib and plotly; `wattsched --help` should not
    from wattsched.campaign.kinds import open_experiment
    from wattsched.campaign.runner import report, summary_tables
    from wattsched.report.dashboard import write_dashboard
    from wattsched.report.figures import write_figures

    out = output or directory / "report"
    try:
        kind = open_experiment(directory).kind
        if html and kind != "power":
            err.print(
                f"warning: --html is ignored: the dashboard is drawn for power campaigns, this one is {kind}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        warn_if_partial(directory)
        paths = report(directory, out, aggregate=aggregate)
        if kind == "power":  # the power campaign's figures and dashboard are drawn by wattsched.report
            paths += write_figures(directory, out, gantt_run=gantt_run)
            if html:
                paths.append(write_dashboard(directory, out / "dashboard.html"))
        tables = summary_tables(directory, aggregate=aggregate)
    except (CampaignError, ValueError) as exc:
        fail(str(exc))
    emit_json({"output": str(out), "files": [str(p) for p in paths], "tables": {t: f.to_dicts() for t, f in tables}})
    for title, table in tables:
        print_table(table, title)
    board = f"; dashboard: {out / 'dashboard.html'}" if kind == "power" and html else ""
    console.print(f"wrote {len(paths)} files in {out}{board}")


def warn_if_partial(directory: Path) -> None:
    """Warn when some planned runs have not finished: the tables then compare only the groups (window and cap,
    or window) that every setting finished, and say how many groups that leaves out."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.campaign.runner import load_results, status
    from wattsched.campaign.summary import incomplete_group_count

    state = status(directory)
    if state["done"] >= state["runs"]:
        return
    message = (
        f"warning: partial campaign: {state['done']:,} of {state['runs']:,} runs done; the tables compare only "
        "the groups every setting has finished"
    )
    if state["kind"] == "power":
        left_out, total = incomplete_group_count(load_results(directory))
        message += f" ({left_out:,} of {total:,} (window, cap) groups left out)"
    err.print(message, markup=False, highlight=False, soft_wrap=True)


def print_campaign_summary(directory: Path, aggregate: str = "mean") -> None:
    """The campaign's summary tables (a power campaign's: per cap and, with several caps, pooled over caps)."""
    # deferred: the campaign modules load pydantic and the engine; `wattsched --help` should not
    from wattsched.campaign.runner import summary_tables

    for title, table in summary_tables(directory, aggregate=aggregate):
        print_table(table, title)
