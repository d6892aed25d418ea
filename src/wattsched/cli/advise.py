"""``wattsched advise``: keep a Slurm cluster under a power cap with learned job power (docs/advisor.md).

A long-running reconcile loop beside slurmctld (``--once`` for one cycle), or ``--replay`` for the offline
what-if on a recorded sacct history. The options override the TOML file given with ``--config``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from wattsched.cli.choices import AdviseMode, BackendKind, OvershootAction
from wattsched.cli.common import emit_json, err, fail, output, report_rejects, warn
from wattsched.core.stopping import interruptions


def _overrides(**options: Any) -> dict[str, Any]:
    """The options given on the command line (None = not given), for :func:`load_config`."""
    return {key: value for key, value in options.items() if value is not None}


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
        from wattsched.advise.slurm import job_submit_lua

        lua = job_submit_lua()
        if output.json:  # stdout holds the JSON: the path, not the file
            emit_json({"job_submit_lua": str(lua)})
        else:
            typer.echo(lua.read_text(encoding="utf-8"), nl=False)
        return
    from wattsched.advise.config import AdvisorConfigError, load_config

    try:
        cfg = load_config(
            config,
            **_overrides(
                cap=cap,
                mode=mode.value if mode else None,
                interval=interval,
                state=state,
                backend__kind=backend.value if backend else None,
                backend__url=url,
                status_file=status_file,
                metrics_port=metrics_port,
                report_dir=report_dir,
                on_overshoot=on_overshoot.value if on_overshoot else None,
            ),
        )
    except AdvisorConfigError as exc:
        fail(str(exc))
    if replay is not None:
        ignored = {"--once": once, "--actions": actions, "--metrics-port": metrics_port}
        emit_json(_replay(replay, cfg, report_dir, ignored))
        return
    summary = _run(cfg, once=once, actions=actions)
    emit_json(summary)
    if once and summary.get("error") is not None:
        raise typer.Exit(code=1)


def _replay(dump: Path, cfg: Any, report_dir: Path | None, ignored: dict[str, Any]) -> dict[str, Any]:
    """``--replay``: the offline what-if, one table and (with --report-dir) its files."""
    from wattsched.advise.replay import replay

    for name, value in ignored.items():
        if value:
            warn(f"{name} is ignored with --replay (nothing runs against Slurm)")
    if cfg.cap.at(0.0) is None and not cfg.cap.windows:
        fail("--replay needs a cap: give --cap WATTS or a [cap] table in --config")
    if not dump.exists():
        fail(f"{dump}: no such file (a recorded `sacct --json` or `sacct -P` history)")
    result = replay(dump, cfg)
    report_rejects(result.rejects, result.provenance.format)  # each rejected record's reason, on stderr
    summary = dict(result.summary)
    from wattsched.cli.common import console

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
        from wattsched.report.advisor import write_replay_figure

        written = [*result.write(report_dir).values(), *write_replay_figure(result, report_dir)]
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


def _run(cfg: Any, *, once: bool, actions: Path | None) -> dict[str, Any]:
    """The live loop (or one cycle): take the state's lock (or wait as a standby while another advisor holds it;
    ``--once`` refuses instead), build the backend and the store, cycle, report on stop. Returns the summary:
    ``--once``'s cycle, or the loop's cycle count, state file and mode."""
    from wattsched.advise.backends import BackendError, make_backend
    from wattsched.advise.lock import AdvisorLock, stand_by
    from wattsched.advise.records import SlurmAnswerError, SlurmUnavailable
    from wattsched.core.safe_files import UnsafeFileError, check_existing

    try:  # the top-level `license` key names the power license (else "power" or "power@<server>" is found)
        settings = cfg.backend.model_dump() | {"license": cfg.license}
        if settings["token"] is None and settings["token_env"]:
            settings["token"] = os.environ.get(settings["token_env"])
        slurm = make_backend(settings, os.environ)
    except (BackendError, SlurmUnavailable, SlurmAnswerError, ValueError) as exc:
        fail(str(exc))
    state_path = Path(cfg.state)
    if actions is None and cfg.mode == "shadow":
        actions = state_path.with_name(state_path.stem + "-actions.jsonl")
    lock = AdvisorLock(state_path)
    try:  # before anything is written: a state, lock or actions log planted by someone else is refused
        if actions is not None:
            check_existing(actions, "actions log")
        acquired = lock.try_acquire()
    except UnsafeFileError as exc:
        fail(str(exc))
    if not acquired and once:
        holder = lock.holder()
        fail(
            f"{state_path} is held by the active advisor, {f'pid {holder}' if holder else 'another process'} "
            f"(lock {lock.path}): --once acts only when no other advisor runs on this state"
        )

    def sleep(seconds: float) -> bool:
        time.sleep(seconds)
        return False

    if not acquired:
        try:
            stand_by(lock, sleep, status_file=cfg.status_file, mode=cfg.mode, on_line=_note)
        except interruptions():
            err.print(f"advisor stopped on standby, 0 cycle(s): {state_path} was held by another advisor")
            return {"cycles": 0, "state": str(state_path), "mode": cfg.mode, "role": "standby"}
    with lock:
        return _cycle(cfg, slurm, state_path, once=once, actions=actions, sleep=sleep)


def _note(line: str) -> None:
    if not output.quiet:
        err.print(line, markup=False, highlight=False, soft_wrap=True)


def _cycle(cfg: Any, slurm: Any, state_path: Path, *, once: bool, actions: Path | None, sleep: Any) -> dict[str, Any]:
    """The active advisor, the lock held: the store, the metrics server (bound only now: a standby given the
    same port would fail to bind it), one cycle or the loop."""
    from wattsched.advise.loop import Advisor, CycleResult, Metrics
    from wattsched.advise.store import AdvisorStore, StoreError

    metrics = Metrics() if cfg.metrics_port else None
    if metrics is not None:
        metrics.serve(int(cfg.metrics_port))

    def on_cycle(result: CycleResult) -> None:
        if metrics is not None:
            metrics.update(result)
        if output.quiet or once:
            return
        line = (
            f"cycle {result.cycle}: {result.running} running, {result.pending} pending, "
            f"predicted {_watts(result.predicted_running_watts)}, measured {_watts(result.measured_watts)}, "
            f"cap {_watts(result.cap_watts)}, {len(result.actions)} action(s)"
        )
        err.print(line if result.error is None else f"cycle {result.cycle}: no action: {result.error}")

    try:
        store = AdvisorStore(state_path)
    except StoreError as exc:
        fail(str(exc))
    with store:
        advisor = Advisor(cfg, slurm, store, actions_log=actions, on_cycle=on_cycle, on_note=warn)
        try:
            if once:
                result = advisor.cycle()
                _print_cycle(result)
                return result.as_json()
            if not output.quiet:
                err.print(
                    f"advisor running: mode {cfg.mode}, every {cfg.interval:g} s, state {state_path}; "
                    "Ctrl-C or SIGTERM stops it"
                )
            advisor.run(sleep)
        except interruptions():
            err.print(f"advisor stopped after {advisor.cycles} cycle(s); state kept in {state_path}")
        finally:
            advisor.close()  # alert commands still running are stopped: nothing is left behind
            if cfg.mode == "shadow" and cfg.report_dir is not None and not once:
                _shadow_report(store, Path(cfg.report_dir))
        return {"cycles": advisor.cycles, "state": str(state_path), "mode": cfg.mode}


def _shadow_report(store: Any, folder: Path) -> None:
    """Shadow mode's report (predicted power against the cap, jobs it would have delayed or advanced)."""
    from wattsched.advise.shadow_report import shadow_report, write_shadow_report
    from wattsched.report.advisor import write_shadow_figure

    report = shadow_report(store)
    for path in [*write_shadow_report(report, folder).values(), *write_shadow_figure(report, folder)]:
        err.print(f"wrote {path}")


def _watts(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f} W"


def _print_cycle(result: Any) -> None:
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
    from wattsched.advise.status import StatusError, read_status

    path = status_file
    if path is None and config is not None:
        from wattsched.advise.config import AdvisorConfigError, load_config

        try:
            path = load_config(config, cap=0).status_file  # the cap is not needed to find the file
        except AdvisorConfigError as exc:
            fail(str(exc))
    if path is None:
        fail("give --status-file FILE (the advisor's --status-file) or --config FILE with a status_file key")
    try:
        current = read_status(Path(path))
    except StatusError as exc:
        fail(str(exc))
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
