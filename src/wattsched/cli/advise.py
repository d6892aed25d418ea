"""``wattsched advise``: keep a Slurm cluster under a power cap with learned job power (docs/advisor.md).

A long-running reconcile loop beside slurmctld (``--once`` for one cycle), or ``--replay`` for the offline
what-if on a recorded sacct history. The options override the TOML file given with ``--config``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wattsched.cli.choices import AdviseMode, BackendKind, OvershootAction
from wattsched.cli.common import emit_json, err, fail, output, report_rejects, warn

if TYPE_CHECKING:  # imported by the commands themselves, not to print --help
    from wattsched.api.advise import AdviseRun, AdvisorConfig, CycleResult


app = typer.Typer(
    help="Keep a Slurm cluster under a power cap (docs/advisor.md); `advise status` shows what it last saw.",
)


@app.callback(invoke_without_command=True)
def advise(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="The advisor's TOML file (docs/advisor.md); the options below override it."),
    ] = None,
    cap: Annotated[
        str | None, typer.Option("--cap", help="A constant power cap for the whole cluster, e.g. 1500W or 1.2MW.")
    ] = None,
    mode: Annotated[
        AdviseMode | None,
        typer.Option(
            "--mode",
            case_sensitive=False,
            help="licenses: set each pending job's power license (default); shadow: write what it would do, "
            "change nothing; gate: release held jobs when their predicted power fits (fails closed).",
        ),
    ] = None,
    interval: Annotated[
        float | None, typer.Option("--interval", min=1.0, help="Seconds between two cycles (default 15).")
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Run one cycle, print what it did and exit.")] = False,
    state: Annotated[
        Path | None,
        typer.Option(
            "--state", help="The SQLite store (history, predictions, audit log); default wattsched-advisor.sqlite."
        ),
    ] = None,
    backend: Annotated[
        BackendKind | None,
        typer.Option("--backend", case_sensitive=False, help="cli: Slurm's commands with --json; rest: slurmrestd."),
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="slurmrestd's URL (with --backend rest).")] = None,
    status_file: Annotated[
        Path | None, typer.Option("--status-file", help="Write the last cycle as JSON here (atomic).")
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option("--metrics-port", min=1, max=65535, help="Serve Prometheus metrics on 127.0.0.1:PORT."),
    ] = None,
    actions: Annotated[
        Path | None,
        typer.Option(
            "--actions",
            help="Append every action as a JSON line here (default in shadow mode: actions.jsonl beside the state).",
        ),
    ] = None,
    report_dir: Annotated[
        Path | None,
        typer.Option(
            "--report-dir", help="Where shadow mode writes its report when it stops, and --replay its results."
        ),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            help="Offline what-if: run the advisor's decisions on this recorded sacct history (sacct --json or "
            "-P) in simulation, with and without the cap; nothing is sent to Slurm.",
        ),
    ] = None,
    print_job_submit_lua: Annotated[
        bool,
        typer.Option("--print-job-submit-lua", help="Print the shipped job_submit.lua (docs/advisor.md) and exit."),
    ] = False,
    on_overshoot: Annotated[
        OvershootAction | None,
        typer.Option(
            "--on-overshoot",
            case_sensitive=False,
            help="When the measured power is above the cap (always caught and counted): none (default), suspend "
            "or requeue the newest jobs until it is back under.",
        ),
    ] = None,
) -> None:
    """Keep a Slurm cluster under a power cap: learn each job's power from completed jobs, give every pending job
    the power license its prediction needs, and let Slurm's backfill do the rest."""
    if ctx.invoked_subcommand is not None:
        return
    if print_job_submit_lua:
        from wattsched.api.advise import job_submit_lua

        lua = job_submit_lua()
        if output.json:  # stdout holds the JSON: the path, not the file
            emit_json({"job_submit_lua": str(lua)})
        else:
            typer.echo(lua.read_text(encoding="utf-8"), nl=False)
        return
    from wattsched.api.advise import AdviseError, AdvisorConfigError, advise_config

    try:
        cfg = advise_config(
            config,
            cap=cap,
            mode=mode.value if mode else None,
            interval=interval,
            state=state,
            backend=backend.value if backend else None,
            url=url,
            status_file=status_file,
            metrics_port=metrics_port,
            report_dir=report_dir,
            on_overshoot=on_overshoot.value if on_overshoot else None,
        )
    except AdvisorConfigError as exc:
        fail(str(exc))
    if replay is not None:
        for name, value in {"--once": once, "--actions": actions, "--metrics-port": metrics_port}.items():
            if value:
                warn(f"{name} is ignored with --replay (nothing runs against Slurm)")
        emit_json(_replay(replay, cfg, report_dir))
        return
    try:
        run = _run(cfg, once=once, actions=actions)
    except AdviseError as exc:
        fail(str(exc))
    if run.interrupted:
        err.print(
            f"advisor stopped on standby, 0 cycle(s): {run.state} was held by another advisor"
            if run.role == "standby"
            else f"advisor stopped after {run.cycles} cycle(s); state kept in {run.state}"
        )
    elif run.cycle is not None:
        _print_cycle(run.cycle)
    for path in run.report_files:  # shadow mode's report, written when the loop stopped
        err.print(f"wrote {path}")
    summary = run.summary()
    emit_json(summary)
    if once and summary.get("error") is not None:
        raise typer.Exit(code=1)


def _replay(dump: Path, cfg: AdvisorConfig, report_dir: Path | None) -> dict[str, Any]:
    """``--replay``: the offline what-if, one table and (with --report-dir) its files."""
    from wattsched.api.advise import AdviseError, advise_replay, write_advise_replay
    from wattsched.cli.common import console

    try:
        result = advise_replay(dump, cfg)
    except AdviseError as exc:
        fail(str(exc))
    report_rejects(result.rejects, result.provenance.format)  # each rejected record's reason, on stderr
    summary = dict(result.summary)
    console.print(_replay_table(summary, dump))
    console.print(
        f"{summary['jobs']} jobs replayed ({summary['rejected']} rejected, {summary['jobs_without_energy']} without "
        f"energy), {summary['machine_size']} nodes ({summary['machine_size_source']}); {summary['jobs_delayed']} "
        f"jobs delayed by the cap; {summary['instants_over_cap']} instants over the cap (at most "
        f"{summary['max_over_cap_watts']:,.0f} W over); {summary['held_above_budget']} held above the whole budget"
        + (" or any domain's" if summary["domains"] else "")
    )
    for name, d in summary["domains"].items():
        console.print(
            f"domain {name}: {d['nodes']} nodes, {d['jobs']} jobs, peak {d['peak_watts']:,.0f} W against its cap "
            f"of {d['cap_watts']:,.0f} W; {d['instants_over_cap']} instants over it"
        )
    if summary["nodes_outside_domains"]:
        warn(
            f"{summary['nodes_outside_domains']} nodes are in no power domain: the advisor never releases a job "
            "onto them (its ExcNodeList keeps each job inside its domains)"
        )
    if report_dir is not None:
        written = write_advise_replay(result, report_dir)
        for path in written:
            console.print(f"wrote {path}")
        summary = summary | {"files": [str(p) for p in written]}
    return summary


def _replay_table(summary: dict[str, Any], dump: Path) -> Any:
    """The replay's figures with and without the cap, one row per measure."""
    from rich.table import Table

    table = Table(title=f"What the cap would have cost and saved on {dump.name}")
    for column in ("measure", "with the cap", "without", "change"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    wait = summary["wait_s"]
    for stat in ("mean", "median", "p95"):
        row = [wait["capped"][stat], wait["uncapped"][stat], wait["increase"][stat]]
        table.add_row(f"wait, {stat} (s)", *(f"{v:,.1f}" for v in row))
    peak = summary["peak_watts"]
    table.add_row("peak power (W)", f"{peak['capped']:,.0f}", f"{peak['uncapped']:,.0f}", f"-{peak['saved']:,.0f}")
    energy = summary["energy_j"]
    table.add_row(
        "energy (J)", f"{energy['capped']:,.0f}", f"{energy['uncapped']:,.0f}",
        f"{energy['capped'] - energy['uncapped']:+,.0f}",
    )  # fmt: skip
    span = summary["makespan_s"]
    table.add_row(
        "makespan (s)",
        f"{span['capped']:,.0f}",
        f"{span['uncapped']:,.0f}",
        f"{span['capped'] - span['uncapped']:+,.0f}",
    )
    return table


def _run(cfg: AdvisorConfig, *, once: bool, actions: Path | None) -> AdviseRun:
    """The live loop (or one cycle) through :func:`wattsched.api.advise.advise_run`, with its progress on stderr:
    each standby line, the loop's start and each cycle (not with ``--once``, which prints its one cycle after),
    and the advisor's warnings."""
    from wattsched.api.advise import advise_run

    def on_cycle(result: CycleResult) -> None:
        if output.quiet or once:
            return
        line = (
            f"cycle {result.cycle}: {result.running} running, {result.pending} pending, "
            f"predicted {_watts(result.predicted_running_watts)}, measured {_watts(result.measured_watts)}, "
            f"cap {_watts(result.cap_watts)}, {len(result.actions)} action(s)"
        )
        err.print(line if result.error is None else f"cycle {result.cycle}: no action: {result.error}")

    def on_active() -> None:
        if not output.quiet and not once:
            err.print(
                f"advisor running: mode {cfg.mode}, every {cfg.interval:g} s, state {cfg.state}; "
                "Ctrl-C or SIGTERM stops it"
            )

    return advise_run(
        cfg, once=once, actions=actions, on_cycle=on_cycle, on_note=warn, on_standby=_note, on_active=on_active
    )


def _note(line: str) -> None:
    if not output.quiet:
        err.print(line, markup=False, highlight=False, soft_wrap=True)


def _watts(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f} W"


def _print_cycle(result: CycleResult) -> None:
    """``--once``: what the cycle saw and every action, one line each."""
    from wattsched.cli.common import console

    if result.error is not None:
        err.print(f"error: no action taken: {result.error}")
        return
    console.print(
        f"{result.running} running, {result.pending} pending; predicted {_watts(result.predicted_running_watts)}, "
        f"measured {_watts(result.measured_watts)}, cap {_watts(result.cap_watts)}, budget {_watts(result.budget)}"
    )
    for row in result.actions:
        done = "applied" if row["applied"] else ("failed: " + row["error"] if row["error"] else "not applied")
        target = f"job {row['job_id']}" if row["job_id"] is not None else "cluster"
        console.print(f"{row['kind']} {target} -> {row['value']} ({row['reason']}; {done})")


@app.command("status")
def status(
    status_file: Annotated[
        Path | None,
        typer.Option("--status-file", help="The running advisor's status file (default: the configuration's)."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="The advisor's TOML file, to find its status file.")
    ] = None,
) -> None:
    """What the running advisor last saw: the cap, the measured power, the budget, overshoots, power domains, and
    why each pending job waits."""
    from wattsched.api.advise import AdviseError, AdvisorConfigError, StatusError, advise_status

    try:
        current = advise_status(status_file, config=config)
    except (AdviseError, AdvisorConfigError, StatusError) as exc:
        fail(str(exc))
    path = current.path
    if output.json:
        emit_json(current.data | {"age_s": current.age_s})
        return
    from rich.table import Table

    from wattsched.cli.common import console

    summary = Table(title=f"The advisor ({path})", show_header=False)
    summary.add_column("what")
    summary.add_column("value")
    for what, value in current.summary():
        summary.add_row(what, value)
    console.print(summary)
    jobs = current.jobs()
    if jobs:
        table = Table(title="Pending jobs")
        for column in ("job", "user", "nodes", "license (W)", "why it waits"):
            table.add_column(column, justify="right" if column in ("job", "nodes", "license (W)") else "left")
        for job in jobs:
            license_w = job.get("license") if job.get("license") is not None else job.get("current")
            table.add_row(
                str(job.get("job_id")),
                str(job.get("user") or ""),
                str(job.get("nodes") or ""),
                "" if license_w is None else f"{license_w:,}",
                job.get("reason") or "does not wait for power",
            )
        console.print(table)
