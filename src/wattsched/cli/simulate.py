"""``wattsched simulate``: one policy on one workload, optionally under a power check and cap (paper 000)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape
from rich.progress import TextColumn
from rich.table import Table

from wattsched.api.vocabulary import (
    DEFAULT_POST_WINDOW_CAP,
    POWER_PREDICTORS,
    RUNTIME_PREDICTORS,
    check_help,
    format_help,
)
from wattsched.cli.choices import (
    CapBasis,
    Knapsack,
    PowerSource,
    Prestate,
    Reservation,
    SigmaScaling,
    complete_check,
    complete_policy,
    complete_power_predictor,
    complete_runtime_predictor,
    power_check_name,
    repeated_policy_names,
)
from wattsched.cli.common import (
    PROGRESS_THRESHOLD,
    ColumnsOption,
    TimezoneOption,
    console,
    emit_json,
    err,
    fail,
    parse_window,
    report_rejects,
    warn,
    warn_ignored_timezone,
)
from wattsched.cli.config import config_callback
from wattsched.cli.progress import progress_bar
from wattsched.core.errors import WorkloadError

if TYPE_CHECKING:
    from wattsched.api import CapBasis as PowerCapBasis


class RunFormat(StrEnum):
    """Formats of a run's tables: parquet, csv, or evalys (CSV, with jobs.csv in the evalys/Batsim layout)."""

    parquet = "parquet"
    csv = "csv"
    evalys = "evalys"


def _config(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """``--config``: the TOML file's keys become simulate's defaults (wattsched.cli.config)."""
    return config_callback(simulate)(ctx, param, value)


def simulate(
    workload: Annotated[
        list[Path],
        typer.Option(
            help=format_help("The workload")[:-1] + ". Repeat it to run the same options on several workloads in "
            "one process (DIR/<name>/ each)."
        ),
    ],
    policy: Annotated[
        list[str],
        typer.Option(
            help="Policy name, any case (see wattsched policies), or a Python policy MODULE:CLASS or FILE.py:CLASS. "
            "Repeat it to run each policy on each workload (DIR/<policy>/ each).",
            callback=repeated_policy_names,
            autocompletion=complete_policy,
        ),
    ],
    output: Annotated[Path, typer.Option(help="Directory for jobs, timeline, rejects, summary and provenance.")],
    machine_size: Annotated[int | None, typer.Option(help="Units of the machine (overrides the header).")] = None,
    fmt: Annotated[
        RunFormat,
        typer.Option(
            "--format",
            case_sensitive=False,
            help="Format of the tables; evalys: CSV, jobs.csv in the evalys/Batsim layout.",
        ),
    ] = RunFormat.parquet,
    runtime_estimate: Annotated[
        str | None, typer.Option(help="Column of runtime estimates the policy sees (default: walltime).")
    ] = None,
    kill_grace: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Seconds a job may run past its walltime before it is killed (Slurm's OverTimeLimit; default: "
            "killed at the walltime). Policies still plan with the walltime.",
        ),
    ] = 0.0,
    metrics_window: Annotated[
        str | None, typer.Option(help="Utilisation and queue-length window START:END in seconds.")
    ] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
    timezone: TimezoneOption = None,
    platform: Annotated[str | None, typer.Option(help="Power platform: a preset (marconi100) or a TOML file.")] = None,
    power_check: Annotated[
        str | None,
        typer.Option(
            help=check_help(),
            callback=power_check_name,
            autocompletion=complete_check,
        ),
    ] = None,
    power_source: Annotated[
        PowerSource, typer.Option(case_sensitive=False, help="Estimates the check uses.")
    ] = PowerSource.real,
    cap: Annotated[
        str | None,
        typer.Option(
            help="Cap on dynamic power: a fraction of the platform's dynamic range, or watts with a W suffix (350000W)."
        ),
    ] = None,
    window: Annotated[
        float | None, typer.Option(help="The cap holds during [0, WINDOW) s, then --post-window-cap (paper 000).")
    ] = None,
    post_window_cap: Annotated[
        str,
        typer.Option(
            help="Cap after the window: none (default: no power check after it), dynamic_range (the "
            "artifact's 719,880 W on M100), a fraction, or watts."
        ),
    ] = DEFAULT_POST_WINDOW_CAP,
    cap_file: Annotated[Path | None, typer.Option(help="Time-varying cap file (time_offset_s;power_cap_W).")] = None,
    reservation: Annotated[
        Reservation, typer.Option(case_sensitive=False, help="What EASY's reservation under power reserves.")
    ] = Reservation.nodes,
    knapsack: Annotated[
        Knapsack,
        typer.Option(case_sensitive=False, help="What knapsack policies do at the first job that does not fit."),
    ] = Knapsack.stop,
    cap_basis: Annotated[
        CapBasis,
        typer.Option(
            case_sensitive=False,
            help="What a fractional --cap is a fraction of: dynamic (the dynamic range) or total (maximum power).",
        ),
    ] = CapBasis.dynamic,
    subtract_idle: Annotated[
        bool, typer.Option(help="Job estimates as nodes × (per-node value − idle); off: the paper's literal form.")
    ] = True,
    sigma_scaling: Annotated[
        SigmaScaling, typer.Option(case_sensitive=False, help="σ_job = nodes·σ (nodes) or √nodes·σ (sqrt).")
    ] = SigmaScaling.nodes,
    baseline: Annotated[bool, typer.Option(help="Compare turnarounds with EASY without a cap.")] = True,
    online_power: Annotated[
        str | None,
        typer.Option(
            help="Predict power inside the simulation, learning from simulated completions: "
            f"{', '.join(POWER_PREDICTORS)} (replaces --power-source).",
            autocompletion=complete_power_predictor,
        ),
    ] = None,
    online_runtime: Annotated[
        str | None,
        typer.Option(
            help=f"Predict runtimes inside the simulation: {', '.join(RUNTIME_PREDICTORS)} "
            "(replaces --runtime-estimate).",
            autocompletion=complete_runtime_predictor,
        ),
    ] = None,
    window_start: Annotated[
        float | None,
        typer.Option(
            help="Simulate only the workload window starting at this instant (s, the workload's clock); "
            "times are shifted so that it starts at 0."
        ),
    ] = None,
    window_hours: Annotated[float, typer.Option(help="Length of the --window-start window (h).")] = 24.0,
    prestate: Annotated[
        Prestate,
        typer.Option(
            case_sensitive=False,
            help="Jobs running or queued at --window-start: requeue (resubmitted at 0, the policy "
            "decides), prestart (running ones started at 0 without a check) or drop.",
        ),
    ] = Prestate.requeue,
    columns: ColumnsOption = None,
    html: Annotated[
        bool, typer.Option("--html", help="Also write report.html with the run's figures (Gantt, queue, power).")
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            callback=_config, is_eager=True, help="TOML file with options as keys; the command line overrides it."
        ),
    ] = None,
) -> None:
    """Simulate one policy on one workload and write DIR/jobs, timeline, rejects, summary.json (and power).

    Several ``--workload`` options run the same policy and options on each, in one process (no start-up per
    run): DIR/<workload name>/ each, a progress bar over the workloads and one summary row per workload. Several
    ``--policy`` options run each policy: DIR/<policy>/ (DIR/<workload name>/<policy>/ with several workloads)."""
    # deferred: the engine and the power model load numba and SciPy; `wattsched --help` should not
    from wattsched.api import (
        IgnoredOptionWarning,
        SimulationError,
        load_workload,
        machine_size_of,
        policy_power_notes,
        power_setup,
        resolve_policy,
        run_policy,
        workload_window,
        write_run,
    )

    batch = len(workload) > 1 or len(policy) > 1

    def read_one(path: Path) -> Any:
        """Read one workload (and cut its window): once per workload, whatever the number of policies."""
        read = load_workload(path, machine_size=machine_size, strict=strict, timezone=timezone, columns=columns)
        warn_ignored_timezone(timezone, read.provenance.format, read.provenance.source)
        size, size_from = machine_size_of(read.provenance, machine_size, power)
        if size_from == "platform":
            err.print(f"machine size: {size:,} nodes, from platform {platform}", markup=False, highlight=False)
        if window_start is not None:
            read = workload_window(read, window_start, window_hours, prestate=prestate, machine_size=size)
        return read

    def run_one(read: Any, spec: str, chosen: Any, out: Path) -> tuple[Any, dict[str, Path]]:
        """Simulate one read workload under one policy and write it (the single-run command, less printing)."""
        simulate_it = partial(
            run_policy,
            read,
            chosen,
            machine_size=machine_size,  # resolved again there, the same way: the summary says from where
            metrics_window=parse_window(metrics_window),
            power=power,
            baseline=baseline,
            online_power=online_power,
            online_runtime=online_runtime,
            runtime_estimate=runtime_estimate,
            kill_grace=kill_grace,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IgnoredOptionWarning)  # printed once, before the runs
            if read.jobs.height > PROGRESS_THRESHOLD and not batch:
                with progress_bar("[bold]simulating[/] " + escape(spec), TextColumn("jobs submitted")) as bar:
                    task = bar.add_task("sim", total=read.jobs.height)
                    run = simulate_it(progress=lambda done, total: bar.update(task, completed=done))
            else:
                run = simulate_it()
        paths = write_run(run, out, fmt.value)
        if html:
            from wattsched.api.reports import write_run_report  # deferred: matplotlib

            paths["report"] = write_run_report(out)
        return run, paths

    try:
        chosen = {spec: resolve_policy(spec) for spec in policy}
        if window_start is None and (prestate != "requeue" or window_hours != 24.0):
            raise ValueError("--window-hours and --prestate apply to a window: give --window-start")
        power = power_setup(
            platform,
            power_check,
            source=power_source,
            cap=cap,
            window=window,
            post_window_cap=post_window_cap,
            cap_file=cap_file,
            reservation=reservation,
            knapsack=knapsack,
            cap_basis=cast("PowerCapBasis", cap_basis),  # a StrEnum member: the str the Literal names
            subtract_idle=subtract_idle,
            sigma_scaling=sigma_scaling,
        )
        for spec in policy:
            for note in policy_power_notes(spec, power, online_power):
                warn(note)
        if not batch:
            run, paths = run_one(read_one(workload[0]), policy[0], chosen[policy[0]], output)
    except (WorkloadError, SimulationError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    if batch:
        errors = (WorkloadError, SimulationError, ValueError, OSError)
        _simulate_batch(workload, policy, output, read_one, lambda r, p, o: run_one(r, p, chosen[p], o), errors)
        return
    emit_json({**run.summary, "files": {k: str(p) for k, p in paths.items()}})
    _print_summary(run.summary, title=f"{policy[0]} on {workload[0].name}")
    report_rejects(run.rejects, run.provenance.format)
    console.print(f"wrote {', '.join(str(p) for p in paths.values())}")


def unique_folders(stems: list[str]) -> list[str]:
    """The names made unique with ``-2``, ``-3``... in the order given."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for stem in stems:
        seen[stem] = seen.get(stem, 0) + 1
        names.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
    return names


def batch_folders(workloads: list[Path]) -> list[str]:
    """One output folder name per workload: its file name without the format's suffixes, made unique with
    ``-2``, ``-3``... in the order given (two ``log.swf`` of different folders must not overwrite each other)."""
    return unique_folders([path.name.split(".")[0] or path.name for path in workloads])


def policy_folders(policies: list[str]) -> list[str]:
    """One output folder name per policy: a registered name as it is, a Python policy by its class name
    (``examples/strict_fcfs.py:StrictFcfs`` → ``StrictFcfs``), made unique in the order given."""
    return unique_folders([spec.rpartition(":")[2] or spec for spec in policies])


def _simulate_batch(
    workloads: list[Path],
    policies: list[str],
    output: Path,
    read_one: Callable[[Path], Any],
    run_one: Callable[[Any, str, Path], tuple[Any, dict[str, Path]]],
    errors: tuple[type[BaseException], ...],
) -> None:
    """Run every policy on every workload in this process, each workload read once: DIR/<workload>/ with one
    policy, DIR/<policy>/ with one workload, DIR/<workload>/<policy>/ with several of both. A workload or run
    that fails is one error line and does not stop the others; the command fails when any did (after the others
    are written)."""
    rows: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    several_workloads, several_policies = len(workloads) > 1, len(policies) > 1
    label = policies[0] if not several_policies else f"{len(policies)} policies"
    with progress_bar("[bold]simulating[/] " + escape(label), TextColumn("runs")) as bar:
        task = bar.add_task("batch", total=len(workloads) * len(policies))
        for path, wname in zip(workloads, batch_folders(workloads), strict=True):
            base = output / wname if several_workloads else output
            try:
                read = read_one(path)
            except errors as exc:
                line = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
                err.print(f"error: {line}", markup=False, highlight=False, soft_wrap=True)
                failed += [{"workload": str(path), "policy": spec, "error": str(exc)} for spec in policies]
                bar.update(task, advance=len(policies))
                continue
            for spec, pname in zip(policies, policy_folders(policies), strict=True):
                out = base / pname if several_policies else base
                try:
                    run, _ = run_one(read, spec, out)
                except errors as exc:
                    line = str(exc) if str(path) in str(exc) else f"{path}, {spec}: {exc}"
                    err.print(f"error: {line}", markup=False, highlight=False, soft_wrap=True)
                    failed.append({"workload": str(path), "policy": spec, "error": str(exc)})
                else:
                    for message in run.summary["run"]["warnings"]:
                        warn(f"{path.name}, {spec}: {message}")
                    m = run.summary["metrics"]
                    rows.append(
                        {
                            "workload": str(path),
                            "policy": spec,
                            "output": str(out),
                            "jobs": m["n_jobs"],
                            "rejected": run.summary["workload"]["rejected"],
                            "wait_mean": m["wait_mean"],
                            "bounded_slowdown_mean": m["bounded_slowdown_mean"],
                            "utilisation": m["utilisation"],
                        }
                    )
                bar.update(task, advance=1)
    emit_json({"runs": rows, "failed": failed})
    title = f"{label} on {len(workloads)} workload{'s' if several_workloads else ''}"
    table = Table(title=title)
    columns: list[tuple[str, str]] = [("workload", "left")] + ([("policy", "left")] if several_policies else [])
    columns += [
        ("jobs", "right"),
        ("rejected", "right"),
        ("mean wait (s)", "right"),
        ("mean bounded slowdown", "right"),
        ("utilisation", "right"),
    ]
    for col, justify in columns:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(
            escape(Path(r["workload"]).name),
            *([escape(r["policy"])] if several_policies else []),
            f"{r['jobs']:,}",
            f"{r['rejected']:,}",
            f"{r['wait_mean']:,.1f}",
            f"{r['bounded_slowdown_mean']:,.2f}",
            f"{r['utilisation']:.4f}",
        )
    console.print(table)
    console.print(f"wrote {len(rows)} runs under {output}")
    if failed:
        what = "runs" if several_policies else "workloads"
        total = len(workloads) * len(policies) if several_policies else len(workloads)
        fail(f"{len(failed)} of {total} {what} failed (listed above); the others are written")


def _print_summary(summary: dict[str, Any], title: str) -> None:
    """The run's summary (jobs, waits, slowdowns, utilisation and, under a cap, the power metrics) as one table."""
    m = summary["metrics"]
    run = summary["run"]
    killed = "n/a" if m["n_killed"] is None else f"{m['n_killed']:,} ({m['n_killed'] / max(m['n_jobs'], 1):.1%})"
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("jobs simulated", f"{m['n_jobs']:,}"),
        ("rejected input lines", f"{summary['workload']['rejected']:,}"),
        ("machine size", f"{run['machine_size']:,} {summary['workload']['size_unit']}"),
        ("mean / p90 / max wait (s)", f"{m['wait_mean']:,.1f} / {m['wait_p90']:,.1f} / {m['wait_max']:,.1f}"),
        ("mean turnaround (s)", f"{m['turnaround_mean']:,.1f}"),
        ("mean / max bounded slowdown", f"{m['bounded_slowdown_mean']:,.2f} / {m['bounded_slowdown_max']:,.1f}"),
        ("utilisation", f"{m['utilisation']:.4f}"),
        ("makespan, from first submit (s)", f"{m['makespan_from_first_submit']:,.0f}"),
        ("mean / max queue length", f"{m['queue_length_mean']:,.1f} / {m['queue_length_max']:,}"),
        ("jobs killed at walltime" + (f" (+{run['kill_grace']:g} s)" if run.get("kill_grace") else ""), killed),
        ("simulation time (s)", f"{run['simulation_seconds']:.2f}"),
    ]
    power = summary.get("power")
    if power:

        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.2f}%"

        rows += [
            ("power check / source", f"{power['power_check']} / {power['power_source']}"),
            ("power utilisation in the window", pct(power["power_utilisation"])),
            ("trespass / max instantaneous break", f"{power['trespass']} / {pct(power['max_instantaneous_break'])}"),
            ("share of window time above the cap", pct(power["time_above_cap_share"])),
            ("energy over the run (MJ)", f"{power['energy_run_total_j'] / 1e6:,.1f}"),
            ("jobs started in the window", pct(power["share_started_in_window"])),
        ]
        if power.get("prestate_max_dynamic"):
            rows.insert(
                -3,
                (
                    "prestarted jobs: max power / over the cap alone",
                    f"{power['prestate_max_dynamic']:,.0f} W / {power['prestate_over_cap']} "
                    f"(machine trespass {power['machine_trespass']})",
                ),
            )
        if power.get("turnaround_increase") is not None:
            rows.append(("turnaround increase vs uncapped EASY", pct(power["turnaround_increase"])))
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    for note in run["notes"]:
        console.print(f"note: {note}")
    for message in run.get("warnings", []):
        warn(message)
