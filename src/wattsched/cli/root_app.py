"""The root ``wattsched`` app: its sub-apps, and the commands of its own (simulate, policies, demo, reproduce)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from wattsched.cli import advise, campaign, data, dataset, eamc, generate, platforms, predict, rmap, testbed
from wattsched.cli.campaign import print_campaign_summary
from wattsched.cli.choices import DemoKind
from wattsched.cli.command_group import WattschedGroup
from wattsched.cli.common import console, emit_json, err, fail, set_output_mode
from wattsched.cli.compare import compare, report
from wattsched.cli.progress import progress_bar
from wattsched.cli.reproduce import reproduce
from wattsched.cli.simulate import simulate
from wattsched.cli.stoppable import StoppableTyper, exit_interrupted

app = StoppableTyper(  # Ctrl-C and SIGTERM: one line, exit 130, no worker left (cli/stoppable.py)
    cls=WattschedGroup,  # the error path: one line per error, the traceback with --debug
    help="Power- and energy-aware HPC batch scheduling toolkit.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # --debug: the traceback, not every local variable of every frame
)
app.command()(simulate)
app.command()(compare)
app.command()(report)
app.add_typer(advise.app, name="advise")
app.add_typer(generate.app, name="generate")
app.add_typer(predict.app, name="predict")
app.add_typer(data.app, name="data")
app.add_typer(dataset.app, name="dataset")
app.add_typer(campaign.app, name="campaign")
app.add_typer(eamc.app, name="eamc")
app.add_typer(rmap.app, name="rmap")
app.add_typer(platforms.app, name="platforms")
app.add_typer(testbed.app, name="testbed")


def _print_version(value: bool) -> None:
    if value:
        from wattsched import __version__  # the package root: no heavy import

        console.print(f"wattsched {__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", envvar="WATTSCHED_DEBUG", help="Show the traceback of an error (default: one line per error)."
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print errors only (no tables, notes or progress).")
    ] = False,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the command's summary as one JSON object on stdout (its text output goes to stderr).",
        ),
    ] = False,
) -> None:
    """Power- and energy-aware HPC batch scheduling toolkit."""
    if quiet and json_output:
        raise typer.BadParameter("--quiet and --json exclude each other: --json already keeps stdout to the summary")
    set_output_mode(debug=debug, quiet=quiet, json=json_output)


@app.command()
def policies() -> None:
    """List the scheduling policies."""
    # deferred: the registry loads numba's compiled policies; `wattsched --help` should not
    from wattsched.api.vocabulary import policy_descriptions

    described = policy_descriptions()
    emit_json({"policies": [{"name": name, "semantics": semantics} for name, semantics in described]})
    table = Table(title="policies")
    table.add_column("name")
    table.add_column("semantics")
    for name, semantics in described:
        table.add_row(name, semantics)
    console.print(table)


@app.command()
def demo(
    output: Annotated[Path, typer.Option(help="Directory for the demo's results and figures.")] = Path("demo-output"),
    kind: Annotated[
        DemoKind,
        typer.Option(case_sensitive=False, help="campaign (power caps, checks, dashboard) or policies (Lublin)."),
    ] = DemoKind.campaign,
    jobs: Annotated[int | None, typer.Option(help="Jobs in the generated workload.")] = None,
    machine_size: Annotated[int, typer.Option(help="Processors (policies demo).")] = 256,
    load: Annotated[float, typer.Option(help="Offered load (policies demo).")] = 0.85,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 1,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Worker processes (campaign demo; default: the CPU count).")
    ] = None,
) -> None:
    """The campaign demo: a Marconi100-like workload cut into windows, EASY+PC under two caps with every power
    check on real and predicted estimates, a summary table and the HTML dashboard. ``--kind policies``: the
    seven queue policies on a Lublin workload."""
    if kind == "campaign":
        _demo_campaign(output, jobs or 40_000, seed, workers)
        return
    # deferred: the demo loads the engine and matplotlib; `wattsched --help` should not
    from wattsched.api import run_demo

    jobs = jobs or 10_000
    console.print(
        f"Generating a Lublin–Feitelson workload: {jobs} jobs, {machine_size} processors, load {load}, seed {seed}"
    )
    rows = run_demo(output, jobs=jobs, machine_size=machine_size, load=load, seed=seed)
    emit_json({"output": str(output), "policies": {r.policy: r.run.summary["metrics"] for r in rows}})
    table = Table(title=f"policies on {jobs} Lublin jobs ({machine_size} processors, load {load})")
    for col in (
        "policy",
        "mean wait (s)",
        "p90 wait (s)",
        "mean bsld",
        "max bsld",
        "utilisation",
        "makespan (s)",
        "simulated jobs/s",
    ):
        table.add_column(col, justify="right" if col != "policy" else "left")
    for r in rows:
        m = r.run.summary["metrics"]
        table.add_row(
            r.policy,
            f"{m['wait_mean']:,.0f}",
            f"{m['wait_p90']:,.0f}",
            f"{m['bounded_slowdown_mean']:,.2f}",
            f"{m['bounded_slowdown_max']:,.0f}",
            f"{m['utilisation']:.3f}",
            f"{m['makespan_from_first_submit']:,.0f}",
            f"{jobs / max(r.run.result.elapsed_s, 1e-9):,.0f}",
        )
    console.print(table)
    console.print(f"figure: {output / 'policies.png'}; per-policy results in {output}/<policy>/")


def _demo_campaign(output: Path, jobs: int, seed: int, workers: int | None) -> None:
    """Paper 000's campaign in small, with a progress bar, then its summary table."""
    # deferred: the campaign, its figures and dashboard load pydantic, matplotlib and plotly
    from wattsched.api import run_campaign_demo
    from wattsched.api.campaigns import CampaignInterrupted
    from wattsched.core.output_folders import FolderBusyError

    console.print(
        f"Campaign {output / 'campaign.toml'}: {jobs:,} Marconi100-like jobs (seed {seed}), 3 windows of 24 h, "
        "EASY+PC, 11 estimators × caps 0.5 and 0.7, plus EASY baselines"
    )
    try:
        with progress_bar("[bold]runs") as bar:
            task = bar.add_task("runs", total=None)
            demo = run_campaign_demo(
                output,
                jobs=jobs,
                seed=seed,
                workers=workers,
                progress=lambda d, t: bar.update(task, completed=d, total=t),
                log=lambda m: err.print(m),
            )
    except ValueError as exc:  # WorkloadError and CampaignError among them: e.g. too few jobs for a window
        fail(str(exc))
    except CampaignInterrupted as stop:  # Ctrl-C or SIGTERM: how far it got, and that it resumes
        exit_interrupted(str(stop))
    except FolderBusyError as exc:  # another demo runs in this folder
        fail(str(exc))
    emit_json({"output": str(output), "runs": demo.run.total, "seconds": demo.seconds, "dashboard": demo.dashboard})
    print_campaign_summary(demo.campaign)
    console.print(
        f"{demo.run.total} runs in {demo.seconds:.0f} s; {len(demo.figures)} figures in {output / 'report'}; "
        f"dashboard: {demo.dashboard}"
    )


app.command()(reproduce)
