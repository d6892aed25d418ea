"""The ``wattsched`` command line: one typer app whose verbs mirror the Python API."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from wattsched.core.schema import WorkloadError
from wattsched.core.store import CampaignError

app = typer.Typer(help="Power- and energy-aware HPC batch scheduling toolkit.", no_args_is_help=True)
generate_app = typer.Typer(help="Generate synthetic workloads.", no_args_is_help=True)
app.add_typer(generate_app, name="generate")
predict_app = typer.Typer(help="Add online power or runtime predictions to a workload.", no_args_is_help=True)
app.add_typer(predict_app, name="predict")
data_app = typer.Typer(help="Convert workloads between formats.", no_args_is_help=True)
app.add_typer(data_app, name="data")
dataset_app = typer.Typer(
    help="Build per-job power datasets from job tables and node telemetry (PM100 method).", no_args_is_help=True
)
app.add_typer(dataset_app, name="dataset")
campaign_app = typer.Typer(
    help="Run grids of simulations (campaigns), resumable, locally or on Dask.", no_args_is_help=True
)
app.add_typer(campaign_app, name="campaign")
eamc_app = typer.Typer(
    help="EAMC energy model (paper 002): optimal DVFS frequency and partition efficiency per app.", no_args_is_help=True
)
app.add_typer(eamc_app, name="eamc")
rmap_app = typer.Typer(
    help="RMAP (paper 004): hardware overprovisioning under a global power bound.", no_args_is_help=True
)
app.add_typer(rmap_app, name="rmap")
# Piped output (CI logs, files) gets a wide console so tables are not squeezed to 80 columns.
console = Console() if sys.stdout.isatty() else Console(width=160)
err = Console(stderr=True)

#: Runs with more jobs than this show a progress bar.
PROGRESS_THRESHOLD = 50_000


class OutputFormat(StrEnum):
    parquet = "parquet"
    csv = "csv"


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


def _parse_window(window: str | None) -> tuple[float, float] | None:
    if window is None:
        return None
    try:
        t0, t1 = (float(x) for x in window.split(":"))
    except ValueError:
        _fail(f"--metrics-window must be START:END in seconds, got {window!r}")
    return t0, t1


@app.command()
def simulate(
    workload: Annotated[Path, typer.Option(help="SWF (.swf, .swf.gz) or canonical table (.parquet, .csv).")],
    policy: Annotated[str, typer.Option(help="Policy name; see `wattsched policies`.")],
    output: Annotated[Path, typer.Option(help="Directory for jobs, timeline, rejects, summary and provenance.")],
    machine_size: Annotated[int | None, typer.Option(help="Units of the machine (overrides the header).")] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format", help="Format of the per-job table.")] = OutputFormat.parquet,
    runtime_estimate: Annotated[
        str | None, typer.Option(help="Column of runtime estimates the policy sees (default: walltime).")
    ] = None,
    metrics_window: Annotated[
        str | None, typer.Option(help="Utilisation and queue-length window START:END in seconds.")
    ] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
    platform: Annotated[str | None, typer.Option(help="Power platform: a preset (marconi100) or a TOML file.")] = None,
    power_check: Annotated[
        str | None,
        typer.Option(help="none, mean, max, naive, gaussian68, gaussian95, gaussian99 or quantile:P."),
    ] = None,
    power_source: Annotated[str, typer.Option(help="Estimates the check uses: real, predicted or naive.")] = "real",
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
    ] = "none",
    cap_file: Annotated[Path | None, typer.Option(help="Time-varying cap file (time_offset_s;power_cap_W).")] = None,
    reservation: Annotated[str, typer.Option(help="EASY reservation under power: nodes or nodes+power.")] = "nodes",
    knapsack: Annotated[
        str, typer.Option(help="Knapsack policies at the first job that does not fit: stop or skip.")
    ] = "stop",
    cap_basis: Annotated[
        str, typer.Option(help="What a fractional --cap is a fraction of: dynamic (range) or total (max power).")
    ] = "dynamic",
    subtract_idle: Annotated[
        bool, typer.Option(help="Job estimates as nodes × (per-node value − idle); off: the paper's literal form.")
    ] = True,
    sigma_scaling: Annotated[str, typer.Option(help="σ_job = nodes·σ (nodes) or √nodes·σ (sqrt).")] = "nodes",
    baseline: Annotated[bool, typer.Option(help="Compare turnarounds with EASY without a cap.")] = True,
    online_power: Annotated[
        str | None,
        typer.Option(
            help="Predict power inside the simulation, learning from simulated completions: history, "
            "ml-linear, ml-forest, ml-svr or ml-sgd (replaces --power-source)."
        ),
    ] = None,
    online_runtime: Annotated[
        str | None,
        typer.Option(
            help="Predict runtimes inside the simulation: last2, rules, walltime or oracle "
            "(replaces --runtime-estimate)."
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
        str,
        typer.Option(
            help="Jobs running or queued at --window-start: requeue (resubmitted at 0, the policy "
            "decides), prestart (running ones started at 0 without a check) or drop."
        ),
    ] = "requeue",
) -> None:
    """Simulate one policy on one workload and write DIR/jobs, timeline, rejects, summary.json (and power)."""
    from wattsched.api import run_policy, workload_window, write_run
    from wattsched.engine.simulate import SimulationError
    from wattsched.workload.load import load_workload

    try:
        read = load_workload(workload, machine_size=machine_size, strict=strict)
        if window_start is not None:
            read = workload_window(read, window_start, window_hours, prestate=prestate, machine_size=machine_size)
        elif prestate != "requeue" or window_hours != 24.0:
            raise ValueError("--window-hours and --prestate apply to a window: give --window-start")
        power = _power_setup(
            platform,
            power_check,
            power_source,
            cap,
            window,
            post_window_cap,
            cap_file,
            reservation,
            knapsack,
            cap_basis,
            subtract_idle,
            sigma_scaling,
        )
        if online_power is not None and power is None:
            _fail("--online-power needs --platform, --power-check and --cap (or --cap-file)")
        options = {
            "machine_size": machine_size,
            "window": _parse_window(metrics_window),
            "power": power,
            "baseline": baseline,
            "online_power": online_power,
            "online_runtime": online_runtime,
            "runtime_estimate": runtime_estimate,
        }
        if read.jobs.height > PROGRESS_THRESHOLD:
            with Progress(
                TextColumn("[bold]simulating[/] " + policy),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("jobs submitted"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            ) as bar:
                task = bar.add_task("sim", total=read.jobs.height)
                run = run_policy(read, policy, progress=lambda done, total: bar.update(task, completed=done), **options)
        else:
            run = run_policy(read, policy, **options)
        paths = write_run(run, output, fmt.value)
    except (WorkloadError, SimulationError, ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    _print_summary(run.summary, title=f"{policy} on {workload.name}")
    console.print(f"wrote {', '.join(str(p) for p in paths.values())}")


def _power_setup(
    platform,
    power_check,
    power_source,
    cap,
    window,
    post_window_cap,
    cap_file,
    reservation,
    knapsack,
    cap_basis,
    subtract_idle,
    sigma_scaling,
):
    """The PowerSetup the options describe, or None for a power-free run; clear errors for half-given options."""
    from wattsched.policies.powercheck import PowerCheck
    from wattsched.power.platform import PowerCapSchedule, load_cap_file, load_platform, parse_cap
    from wattsched.power.run import PowerSetup

    wants_power = any(x is not None for x in (platform, power_check, cap, window, cap_file))
    if not wants_power:
        return None
    if platform is None:
        raise ValueError("power options need --platform (e.g. --platform marconi100)")
    plat = load_platform(platform)
    check = PowerCheck.named(power_check or "none", reservation=reservation, knapsack=knapsack)
    if cap is not None and cap_file is not None:
        raise ValueError("give either --cap or --cap-file, not both")
    schedule = None
    if sigma_scaling not in ("nodes", "sqrt"):
        raise ValueError(f"--sigma-scaling must be nodes or sqrt, got {sigma_scaling!r}")
    if cap_file is not None:
        schedule = load_cap_file(cap_file, platform=plat, cap_basis=cap_basis)
    elif cap is not None:
        parse_cap(cap, plat, cap_basis=cap_basis)  # a clear error for a malformed cap before anything runs
        if window is not None:
            post = None if post_window_cap.lower() == "none" else post_window_cap
            schedule = PowerCapSchedule.window(cap, plat, window_end=window, post_window_cap=post, cap_basis=cap_basis)
        else:
            schedule = PowerCapSchedule.constant(cap, plat, cap_basis=cap_basis)
    elif window is not None:
        raise ValueError("--window needs --cap")
    if check.check != "none" and schedule is None:
        raise ValueError(f"--power-check {check.name} needs --cap or --cap-file")
    return PowerSetup(
        plat, check, power_source, schedule, window, subtract_idle=subtract_idle, sigma_scaling=sigma_scaling
    )


@app.command()
def policies() -> None:
    """List the scheduling policies."""
    from wattsched.policies.registry import POLICIES

    table = Table(title="policies")
    table.add_column("name")
    table.add_column("semantics")
    for p in POLICIES.values():
        table.add_row(p.name, p.description)
    console.print(table)


@generate_app.command("lublin")
def generate_lublin_cmd(
    output: Annotated[Path, typer.Option(help="Output file (.parquet, .csv, .swf).")],
    jobs: Annotated[int, typer.Option(help="Number of jobs.")] = 10_000,
    machine_size: Annotated[int, typer.Option(help="Processors of the target machine.")] = 256,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    load: Annotated[float | None, typer.Option(help="Target offered load (scales inter-arrival times).")] = None,
    users: Annotated[int, typer.Option(help="Number of users.")] = 100,
) -> None:
    """Generate a Lublin–Feitelson (2003) workload of rigid parallel jobs."""
    from wattsched.workload.generate import generate_lublin
    from wattsched.workload.swf import write_swf
    from wattsched.workload.tableio import write_table

    try:
        result = generate_lublin(jobs, machine_size, seed=seed, target_load=load, n_users=users)
        if output.name.endswith((".swf", ".swf.gz")):
            write_swf(result.jobs, output, provenance=result.provenance, machine_size=machine_size)
        else:
            write_table(result.jobs, output, provenance=result.provenance)
    except ValueError as exc:
        _fail(str(exc))
    console.print(f"wrote {result.jobs.height} jobs to {output}")


@generate_app.command("m100")
def generate_m100_cmd(
    output: Annotated[Path, typer.Option(help="Output Parquet file (power profiles are a list column).")],
    jobs: Annotated[int, typer.Option(help="Number of jobs.")] = 20_000,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    load: Annotated[
        float | None, typer.Option(help="Target offered load on the 980 nodes (default 0.95, docs/m100like.md).")
    ] = None,
    users: Annotated[int, typer.Option(help="Number of users.")] = 480,
    span_days: Annotated[
        float | None, typer.Option(help="Spread the submissions over this many days (default: the load's span).")
    ] = None,
) -> None:
    """Generate a Marconi100-like workload with per-job power profiles (20 s samples)."""
    from wattsched.workload.generate import generate_m100like
    from wattsched.workload.tableio import write_table

    if not output.name.endswith(".parquet"):
        _fail("power profiles are a list column: write the m100 workload as .parquet")
    try:
        result = generate_m100like(jobs, seed=seed, target_load=load, n_users=users, span_days=span_days)
        write_table(result.jobs, output, provenance=result.provenance)
    except ValueError as exc:
        _fail(str(exc))
    console.print(f"wrote {result.jobs.height} jobs with power profiles to {output}")


@generate_app.command("telemetry")
def generate_telemetry_cmd(
    output: Annotated[Path, typer.Option(help="Directory: jobs.parquet and telemetry/ (M100 ExaData layout).")],
    jobs: Annotated[int, typer.Option(help="Number of jobs.")] = 2_000,
    nodes: Annotated[int, typer.Option(help="Nodes of the machine.")] = 980,
    days: Annotated[float, typer.Option(help="Length of the telemetry (days).")] = 1.0,
    period: Annotated[float, typer.Option(help="Sample period θ (s).")] = 20.0,
    shared_share: Annotated[float, typer.Option(help="Share of jobs that also take a busy node.")] = 0.05,
    missing_share: Annotated[float, typer.Option(help="Share of (node, instant) samples missing.")] = 0.0005,
    outages: Annotated[int, typer.Option(help="Node outages of 1–6 h without telemetry.")] = 0,
    median_minutes: Annotated[float, typer.Option(help="Median job duration (min).")] = 30.0,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Generate a job table and per-PSU node telemetry for the PM100 method (streamed day by day to disk)."""
    from wattsched.dataset.synthetic import place_jobs, write_synthetic_exadata

    try:
        machine = place_jobs(
            jobs,
            n_nodes=nodes,
            hours=days * 24.0,
            period=period,
            shared_share=shared_share,
            missing_share=missing_share,
            outages=outages,
            median_seconds=median_minutes * 60.0,
            seed=seed,
        )
        output.mkdir(parents=True, exist_ok=True)
        machine.jobs.write_parquet(output / "jobs.parquet")
        rows = write_synthetic_exadata(machine, output / "telemetry")
    except ValueError as exc:
        _fail(str(exc))
    console.print(
        f"wrote {machine.jobs.height:,} jobs to {output / 'jobs.parquet'} and {2 * rows:,} PSU samples "
        f"to {output / 'telemetry'}"
    )


@app.command()
def demo(
    output: Annotated[Path, typer.Option(help="Directory for the demo's results and figures.")] = Path("demo-output"),
    kind: Annotated[
        str, typer.Option(help="campaign (power caps, checks, dashboard) or policies (Lublin).")
    ] = "campaign",
    jobs: Annotated[int | None, typer.Option(help="Jobs in the generated workload.")] = None,
    machine_size: Annotated[int, typer.Option(help="Processors (policies demo).")] = 256,
    load: Annotated[float, typer.Option(help="Offered load (policies demo).")] = 0.85,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 1,
    workers: Annotated[int | None, typer.Option(help="Worker processes (campaign demo).")] = None,
) -> None:
    """The campaign demo: a Marconi100-like workload cut into windows, EASY+PC under two caps with every power
    check on real and predicted estimates, a summary table and the HTML dashboard. ``--kind policies``: the
    seven queue policies on a Lublin workload."""
    if kind == "campaign":
        _demo_campaign(output, jobs or 40_000, seed, workers)
        return
    if kind != "policies":
        _fail(f"--kind must be campaign or policies, got {kind!r}")
    from wattsched.demo import run_demo

    jobs = jobs or 10_000
    console.print(
        f"Generating a Lublin–Feitelson workload: {jobs} jobs, {machine_size} processors, load {load}, seed {seed}"
    )
    rows = run_demo(output, jobs=jobs, machine_size=machine_size, load=load, seed=seed)
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
    import time

    from wattsched.campaign.runner import run_experiment
    from wattsched.campaign.spec import load_spec
    from wattsched.demo import DEMO_CAMPAIGN
    from wattsched.report.dashboard import write_dashboard
    from wattsched.report.figures import write_figures

    output.mkdir(parents=True, exist_ok=True)
    spec_path = output / "campaign.toml"
    spec_path.write_text(DEMO_CAMPAIGN.format(jobs=jobs, seed=seed))
    spec = load_spec(spec_path)
    console.print(
        f"Campaign {spec_path}: {jobs:,} Marconi100-like jobs (seed {seed}), 3 windows of 24 h, "
        "EASY+PC, 11 estimators × caps 0.5 and 0.7, plus EASY baselines"
    )
    t0 = time.perf_counter()
    with Progress(
        TextColumn("[bold]runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True
    ) as bar:
        task = bar.add_task("runs", total=None)
        run = run_experiment(
            spec,
            output / "campaign",
            workers=workers,
            progress=lambda d, t: bar.update(task, completed=d, total=t),
            log=lambda m: err.print(m),
        )
    report = output / "report"
    paths = write_figures(output / "campaign", report)
    dashboard = write_dashboard(output / "campaign", report / "dashboard.html")
    _print_campaign_summary(output / "campaign")
    console.print(
        f"{run.total} runs in {time.perf_counter() - t0:.0f} s; {len(paths)} figures in {report}; "
        f"dashboard: {dashboard}"
    )


CompletionOption = Annotated[
    str,
    typer.Option(
        help="Completion times the predictor learns from: auto (the trace's, else an EASY replay), "
        "trace, replay or no-wait (submit + runtime)."
    ),
]


def _write_predictions(run, output: Path, provenance) -> None:
    """The workload with its prediction columns; CSV cannot hold list columns (profiles), which it leaves out."""
    from wattsched.workload.tableio import write_table

    jobs = run.jobs
    if not output.name.lower().endswith((".parquet", ".csv", ".csv.gz")):
        _fail(f"--output must end in .parquet, .csv or .csv.gz, got {output.name}")
    if not output.name.lower().endswith(".parquet"):
        nested = [c for c, t in jobs.schema.items() if t.is_nested()]
        if nested:
            err.print(f"note: CSV cannot hold list columns; {', '.join(nested)} left out (use .parquet to keep them)")
            jobs = jobs.drop(nested)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_table(jobs, output, provenance=provenance)


def _write_extras(run, plots: Path | None, report: Path | None, what: str, unit: str) -> None:
    import json

    from wattsched.predict.evaluate import boxplot_per_user

    if plots is not None:
        path = boxplot_per_user(
            run.per_user_mae,
            plots / f"{what}_mae_per_user.png",
            title=f"{what}: MAE per user",
            ylabel=f"MAE per user ({unit})",
        )
        console.print(f"figure: {path}")
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps({**run.report, **run.info}, indent=2, default=str) + "\n")
        console.print(f"report: {report}")


def _error_row(table: Table, label: str, stats: dict, scale: float = 1.0) -> None:
    if not stats or stats.get("jobs", 0) == 0:
        table.add_row(label, "0", "–", "–", "–", "–")
        return
    table.add_row(
        label,
        f"{stats['jobs']:,}",
        f"{stats['mae'] / scale:,.1f}",
        f"{stats['median_ae'] / scale:,.1f}",
        f"{stats['under_share']:.1%} ({stats['under_mean'] / scale:,.1f})",
        f"{stats['over_share']:.1%} ({stats['over_mean'] / scale:,.1f})",
    )


def _error_table(title: str, unit: str) -> Table:
    table = Table(title=title)
    for col in (
        "jobs",
        "count",
        f"MAE ({unit})",
        f"median AE ({unit})",
        "under-predicted (mean)",
        "over-predicted (mean)",
    ):
        table.add_column(col, justify="left" if col == "jobs" else "right")
    return table


@predict_app.command("power")
def predict_power_cmd(
    workload: Annotated[Path, typer.Option(help="Workload with measured per-node power (parquet, csv, PM100).")],
    output: Annotated[Path, typer.Option(help="Output table (.parquet or .csv) with pred_power_* columns.")],
    method: Annotated[str, typer.Option(help="history, ml-linear, ml-forest, ml-svr or ml-sgd.")] = "history",
    completion: CompletionOption = "auto",
    machine_size: Annotated[int | None, typer.Option(help="Machine size for an EASY replay.")] = None,
    platform: Annotated[
        str, typer.Option(help="Platform preset or file: its node maximum is the last fallback.")
    ] = "marconi100",
    alpha: Annotated[float, typer.Option(help="History weight exponent α (θ = (1 − (r−C)/s)^α).")] = 2.0,
    eps: Annotated[float, typer.Option(help="ε added to the whole-history window s, seconds ([AMBIG-0.4]).")] = 1.0,
    window: Annotated[float | None, typer.Option(help="Fixed history window s in seconds (default: all).")] = None,
    cv_kind: Annotated[
        str, typer.Option(help="ML: folds of RFECV and the grid search, kfold or timeseries.")
    ] = "kfold",
    max_train_rows: Annotated[
        int | None, typer.Option(help="ML: train each week on the most recent N completed jobs only (default: all).")
    ] = None,
    t0: Annotated[
        float | None, typer.Option(help="ML: start of week 0 on the submit clock (default: 1st submit).")
    ] = None,
    n_jobs: Annotated[int | None, typer.Option(help="ML: parallel workers of the cross-validation.")] = None,
    plots: Annotated[Path | None, typer.Option(help="Directory for the per-user MAE box plot (PNG).")] = None,
    report: Annotated[Path | None, typer.Option(help="Write the evaluation report as JSON here.")] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
) -> None:
    """Predict each job's power online from finished jobs only and print the MAE report.

    ML methods retrain weekly (RFECV, then a grid search, on the jobs completed so far); see docs/prediction.md."""
    from wattsched.engine.simulate import SimulationError
    from wattsched.power.platform import load_platform
    from wattsched.predict.power_history import HistoryConfig
    from wattsched.predict.run import run_power_prediction
    from wattsched.workload.load import load_workload

    try:
        plat = load_platform(platform)
        read = load_workload(workload, machine_size=machine_size, strict=strict)
        cfg = HistoryConfig(alpha=alpha, eps=eps, window=window, fallback_watts=plat.max_node_watts)
        ml = {"cv_kind": cv_kind, "max_train_rows": max_train_rows, "t0": t0, "n_jobs": n_jobs}
        run = run_power_prediction(
            read,
            method,
            completion=completion,
            machine_size=machine_size,
            history=cfg,
            **(ml if method.startswith("ml-") else {}),
        )
        _write_predictions(run, output, read.provenance)
    except (WorkloadError, SimulationError, ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    for metric, rep in run.report["metrics"].items():
        base = run.report["global_mean_baseline"].get(metric, {})
        table = _error_table(f"{method}: per-node {metric} (W), completions from {run.completion}", "W")
        _error_row(table, "all jobs", rep["overall"])
        _error_row(table, "with user history", rep.get("with_history", {}))
        _error_row(table, "without user history", rep.get("without_history", {}))
        for name, stats in rep["by_class"].items():
            _error_row(table, f"{name} jobs", stats)
        _error_row(table, "global-mean baseline", base.get("overall", {}))
        console.print(table)
        pu, bpu = rep["per_user_mae"], base.get("per_user_mae", {})
        console.print(
            f"median per-user MAE: {pu['median']:,.1f} W over {pu['users']:,} users "
            f"(global mean: {bpu.get('median', float('nan')):,.1f} W)"
        )
    console.print(f"wrote {output}")
    _write_extras(run, plots, report, "power", "W")


@predict_app.command("runtime")
def predict_runtime_cmd(
    workload: Annotated[Path, typer.Option(help="Workload (SWF, parquet, csv, PM100).")],
    output: Annotated[Path, typer.Option(help="Output table (.parquet or .csv) with a pred_runtime column.")],
    method: Annotated[str, typer.Option(help="walltime, last2, rules, or oracle (the truth, a baseline).")] = "rules",
    completion: CompletionOption = "auto",
    machine_size: Annotated[int | None, typer.Option(help="Machine size (SWF header otherwise; EASY replay).")] = None,
    min_prefix: Annotated[int, typer.Option(help="rules: shortest name prefix that counts as similar.")] = 1,
    plots: Annotated[Path | None, typer.Option(help="Directory for the per-user MAE box plot (PNG).")] = None,
    report: Annotated[Path | None, typer.Option(help="Write the evaluation report as JSON here.")] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
) -> None:
    """Predict each job's runtime online from finished jobs only and print the MAE report."""
    from wattsched.engine.simulate import SimulationError
    from wattsched.predict.run import run_runtime_prediction
    from wattsched.workload.load import load_workload

    options = {"min_prefix": min_prefix} if method == "rules" else {}
    try:
        read = load_workload(workload, machine_size=machine_size, strict=strict)
        run = run_runtime_prediction(read, method, completion=completion, machine_size=machine_size, **options)
        _write_predictions(run, output, read.provenance)
    except (WorkloadError, SimulationError, ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    rep = run.report["runtime"]
    table = _error_table(f"{method}: runtime (min), completions from {run.completion}", "min")
    _error_row(table, "all jobs", rep["overall"], 60.0)
    for name, stats in rep["by_class"].items():
        _error_row(table, f"{name} jobs", stats, 60.0)
    _error_row(table, "walltime (baseline)", rep["walltime"], 60.0)
    console.print(table)
    if "rule_share" in rep:
        shares = ", ".join(f"{r}: {s:.1%}" for r, s in rep["rule_share"].items())
        console.print(f"share of jobs per rule: {shares}")
    console.print(
        f"median per-user MAE: {rep['per_user_mae']['median'] / 60:,.1f} min over "
        f"{rep['per_user_mae']['users']:,} users"
    )
    console.print(f"wrote {output}")
    _write_extras(run, plots, report, "runtime", "s")


@dataset_app.command("build")
def dataset_build(
    jobs: Annotated[Path, typer.Option(help="Job table (.parquet or .csv): job_id, start_time, end_time, nodes.")],
    telemetry: Annotated[Path, typer.Option(help="Parquet file or directory: node, timestamp and ps0+ps1 or watts.")],
    output: Annotated[Path, typer.Option(help="Dataset (.parquet, PM100 schema); rejects: <stem>.rejects.parquet.")],
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
    executor: Annotated[str, typer.Option(help="local (processes) or dask.")] = "local",
    workers: Annotated[int, typer.Option(help="Windows read in parallel.")] = 1,
    address: Annotated[str | None, typer.Option(help="Dask scheduler address (default: a local cluster).")] = None,
) -> None:
    """Keep the exclusive jobs, extract their power series and summaries; every other job is a reject.

    The telemetry is read window by window (out of core); see docs/dataset.md."""
    from wattsched.dataset.build import build_dataset
    from wattsched.dataset.extract import ExtractionStats

    stats = ExtractionStats()
    try:
        table = pl.read_parquet(jobs) if jobs.suffix == ".parquet" else pl.read_csv(jobs)
        with Progress(
            TextColumn("[bold]telemetry windows"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rows]:,} rows"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as bar:
            task = bar.add_task("windows", total=None, rows=0)

            def progress(done: int, total: int, rows: int) -> None:
                bar.update(task, completed=done, total=total, rows=rows)

            dataset, rejects = build_dataset(
                table,
                telemetry,
                period=period,
                legacy_split=legacy_split,
                max_missing=max_missing,
                snap=snap,
                memory_gb=memory_gb,
                executor=executor,
                workers=workers,
                address=address,
                progress=progress,
                stats=stats,
            )
    except (ValueError, FileNotFoundError, pl.exceptions.PolarsError, OSError) as exc:
        _fail(str(exc))
    output.parent.mkdir(parents=True, exist_ok=True)
    dataset.write_parquet(output)
    rejects_path = output.with_name(output.stem + ".rejects.parquet")
    rejects.write_parquet(rejects_path)
    counts = ", ".join(f"{s}: {n:,}" for s, n in rejects.group_by("stage").len().sort("stage").iter_rows())
    console.print(
        f"{table.height:,} jobs: {dataset.height:,} in {output}, {rejects.height:,} rejected "
        f"({counts or 'none'}) in {rejects_path}"
    )
    console.print(f"telemetry: {stats.telemetry_rows:,} rows read in {stats.windows:,} window(s)")
    for note in stats.notes:
        console.print(f"[yellow]note:[/] {note}")


@data_app.command("fetch")
def data_fetch(
    dataset: Annotated[str, typer.Argument(help="Dataset: pm100.")],
    to: Annotated[Path, typer.Option("--to", help="Directory for the files (resumed if a fetch was interrupted).")],
    file: Annotated[
        list[str] | None, typer.Option(help="Only these files of the record (repeatable; default: job_table.parquet).")
    ] = None,
    record: Annotated[str | None, typer.Option(help="Archive record id (default: the dataset's).")] = None,
    base_url: Annotated[str, typer.Option(help="Archive (Zenodo API compatible).")] = "https://zenodo.org",
) -> None:
    """Download a public dataset from its archive record, checking checksums and resuming partial downloads."""
    from wattsched.workload.fetch import PM100_RECORD, FetchError, fetch_record

    if dataset != "pm100":
        _fail(f"unknown dataset {dataset!r}; available: pm100")
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,} bytes"),
        console=err,
        transient=True,
    ) as bar:
        tasks: dict[str, int] = {}

        def progress(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done)

        try:
            paths = fetch_record(
                record or PM100_RECORD, to, files=file or ["job_table.parquet"], base_url=base_url, progress=progress
            )
        except FetchError as exc:
            _fail(str(exc))
    for path in paths:
        console.print(f"{path} ({path.stat().st_size:,} bytes, checksum verified)")


@data_app.command("convert")
def data_convert(
    input: Annotated[Path, typer.Option("--input", help="Any readable workload (SWF, parquet, csv, PM100).")],
    output: Annotated[
        Path, typer.Option(help="Output by extension: .swf/.swf.gz, .parquet, .csv/.csv.gz, or .json (Batsim v4).")
    ],
    machine_size: Annotated[int | None, typer.Option(help="Machine size (when the input does not declare it).")] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
) -> None:
    """Read a workload (rejects reported) and write it in another format."""
    import dataclasses

    from wattsched.workload.batsim import write_batsim
    from wattsched.workload.load import load_workload
    from wattsched.workload.swf import write_swf
    from wattsched.workload.tableio import write_table

    name = output.name.lower()
    try:
        read = load_workload(input, machine_size=machine_size, strict=strict)
        prov = (
            read.provenance if machine_size is None else dataclasses.replace(read.provenance, machine_size=machine_size)
        )
        output.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith((".swf", ".swf.gz")):
            write_swf(read.jobs, output, provenance=prov, machine_size=prov.machine_size)
        elif name.endswith(".json"):
            write_batsim(read.jobs, output, provenance=prov)
        elif name.endswith((".parquet", ".csv", ".csv.gz")):
            jobs = read.jobs
            if not name.endswith(".parquet"):
                nested = [c for c, t in jobs.schema.items() if t.is_nested()]
                if nested:
                    err.print(f"note: CSV cannot hold list columns; {', '.join(nested)} left out")
                    jobs = jobs.drop(nested)
            write_table(jobs, output, provenance=prov)
        else:
            _fail(f"--output must end in .swf, .swf.gz, .parquet, .csv, .csv.gz or .json, got {output.name}")
    except (WorkloadError, ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    console.print(
        f"wrote {read.jobs.height:,} jobs to {output}"
        + (f" ({read.rejects.height:,} input lines rejected)" if read.rejects.height else "")
    )


@campaign_app.command("run")
def campaign_run(
    spec: Annotated[Path, typer.Argument(help="Campaign file (.toml, .yaml or .json).")],
    output: Annotated[Path, typer.Option(help="Campaign directory (created, or resumed if it holds this campaign).")],
    executor: Annotated[str, typer.Option(help="local (processes) or dask.")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes (default: the CPU count).")] = None,
    address: Annotated[
        str | None, typer.Option(help="Dask scheduler, e.g. tcp://HOST:8786 (default: a LocalCluster).")
    ] = None,
) -> None:
    """Prepare the campaign once, then run every run not done yet; safe to interrupt (Ctrl-C, SIGTERM, even
    kill -9) and run again.

    The file's ``kind`` says what it compares: power (paper 000), queue (queue policies), dispatch (paper 001),
    eamc (paper 002) or rmap (paper 004); see docs/campaigns.md."""
    from wattsched.campaign.kinds import load_experiment

    try:
        experiment = load_experiment(spec)
        result = _run_with_progress(experiment, output, executor=executor, workers=workers, address=address)
    except (CampaignError, WorkloadError, ValueError, FileNotFoundError, OSError) as exc:
        _fail(str(exc))
    console.print(
        f"{result.total} runs in {output}: {result.already_done} were done, {result.executed} ran now "
        f"({result.seconds:.1f} s)"
    )


def _run_with_progress(experiment, output: Path, **options):
    """Run a campaign with a progress bar; on Ctrl-C or SIGTERM say how far it got and exit with 130."""
    from wattsched.campaign.runner import CampaignInterrupted, run_experiment

    try:
        with Progress(
            TextColumn(f"[bold]{experiment.kind}[/] " + experiment.name),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as bar:
            task = bar.add_task("runs", total=None)
            return run_experiment(
                experiment,
                output,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                log=lambda m: err.print(m),
                **options,
            )
    except CampaignInterrupted as stop:
        err.print(f"[bold yellow]{stop}[/]")
        raise typer.Exit(code=130) from None


@campaign_app.command("status")
def campaign_status(directory: Annotated[Path, typer.Argument(help="Campaign directory.")]) -> None:
    """How many runs are done, counted by the kind's two main parameters (e.g. workload window and run kind)."""
    from wattsched.campaign.runner import status

    try:
        st = status(directory)
    except CampaignError as exc:
        _fail(str(exc))
    keys = st["keys"]
    table = Table(title=f"campaign {st['name']}: {st['done']:,} of {st['runs']:,} runs done", caption=st["kind"])
    for col in (*keys, "done", "runs"):
        table.add_column(col, justify="left" if col in keys else "right")
    for row in st["per"].iter_rows(named=True):
        table.add_row(row[keys[0]], row[keys[1]], f"{row['done']:,}", f"{row['runs']:,}")
    console.print(table)


@campaign_app.command("results")
def campaign_results(
    directory: Annotated[Path, typer.Argument(help="Campaign directory.")],
    output: Annotated[Path, typer.Option(help="One table of every finished run (.parquet or .csv).")],
) -> None:
    """Collect the finished runs into one table (query it with Polars or DuckDB)."""
    from wattsched.campaign.runner import load_results

    try:
        table = load_results(directory)
    except CampaignError as exc:
        _fail(str(exc))
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix == ".csv":
        table.write_csv(output)
    else:
        table.write_parquet(output)
    console.print(f"wrote {table.height:,} runs × {table.width} columns to {output}")


@campaign_app.command("report")
def campaign_report(
    directory: Annotated[Path, typer.Argument(help="Campaign directory.")],
    output: Annotated[Path | None, typer.Option(help="Where figures go (default: DIR/report).")] = None,
    html: Annotated[
        bool, typer.Option(help="Also write the interactive dashboard (power campaigns; one self-contained file).")
    ] = False,
    gantt_run: Annotated[str | None, typer.Option(help="Run id for the Gantt chart (default: chosen).")] = None,
    aggregate: Annotated[
        str, typer.Option(help="Summary over (workload window, cap) groups: mean (paper 000's) or median.")
    ] = "mean",
) -> None:
    """Figures (PNG and SVG) and tables of the campaign, its summary printed; with --html the dashboard."""
    from wattsched.campaign.kinds import open_experiment
    from wattsched.campaign.runner import report, summary_tables
    from wattsched.report.dashboard import write_dashboard
    from wattsched.report.figures import write_figures

    out = output or directory / "report"
    if aggregate not in ("mean", "median"):
        _fail(f"--aggregate must be mean or median, got {aggregate!r}")
    try:
        kind = open_experiment(directory).kind
        paths = report(directory, out, aggregate=aggregate)
        if kind == "power":  # the power campaign's figures and dashboard are drawn by wattsched.report
            paths += write_figures(directory, out, gantt_run=gantt_run)
            if html:
                paths.append(write_dashboard(directory, out / "dashboard.html"))
        tables = summary_tables(directory, aggregate=aggregate)
    except (CampaignError, ValueError) as exc:
        _fail(str(exc))
    for title, table in tables:
        _print_table(table, title)
    board = f"; dashboard: {out / 'dashboard.html'}" if kind == "power" and html else ""
    console.print(f"wrote {len(paths)} files in {out}{board}")


def _print_campaign_summary(directory: Path, aggregate: str = "mean") -> None:
    from wattsched.campaign.runner import summary_tables

    for title, table in summary_tables(directory, aggregate=aggregate):
        _print_table(table, title)


def _print_table(summary: pl.DataFrame, title: str) -> None:
    table = Table(title=title)
    for col in summary.columns:
        table.add_column(col, justify="left" if summary[col].dtype == pl.Utf8 else "right")
    for row in summary.iter_rows():
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row])
    console.print(table)


def _print_summary(summary: dict, title: str) -> None:
    m = summary["metrics"]
    run = summary["run"]
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
        ("jobs killed at walltime", f"{m['n_killed']:,}" if m["n_killed"] is not None else "n/a"),
        ("simulation time (s)", f"{run['simulation_seconds']:.2f}"),
    ]
    power = summary.get("power")
    if power:

        def pct(x):
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


@eamc_app.command("table")
def eamc_table(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="EAMC data: the en_conf directory (2hw.conf, 2hw/), or a directory above it (eamc/, the shared data "
            "root).",
            envvar="WATTSCHED_SHARED_DATA",
        ),
    ] = None,
    t_weight: Annotated[
        float, typer.Option(help="Weight of time over energy in Eq. 4/5 (the paper: 1 and 1.5).")
    ] = 1.0,
    weight_placement: Annotated[
        str, typer.Option(help="[AMBIG-2.2] paper | code (t_weight inside the square).")
    ] = "paper",
    score: Annotated[str, typer.Option(help="[AMBIG-2.3] euclidean (Eq. 5) | code_linear.")] = "euclidean",
    output: Annotated[Path | None, typer.Option(help="Also write the table to a .csv or .parquet file.")] = None,
) -> None:
    """Per app and partition of the p1/p2 system: optimal frequency (Eq. 4), time, energy and part_eff (Eq. 5)."""
    from wattsched.studies.eamc.dvfs import DVFSConfigError, eamc_p1p2
    from wattsched.studies.eamc.energy_model import eamc_appdb
    from wattsched.studies.eamc.epm import epm_table

    if output is not None and not output.name.lower().endswith((".csv", ".parquet")):
        _fail(f"--output must end in .csv or .parquet, got {output.name}")
    try:
        platform = eamc_p1p2(data_dir)
        frame = epm_table(
            platform, eamc_appdb(data_dir, platform), t_weight=t_weight, weight_placement=weight_placement, score=score
        )
    except (DVFSConfigError, ValueError) as exc:
        _fail(str(exc) + (" (--data-dir or WATTSCHED_SHARED_DATA)" if data_dir is None else ""))
    table = Table(
        title=f"EAMC p1/p2: optimal frequency and partition efficiency (t_weight = {t_weight:g}, "
        f"{weight_placement} weight, {score} score; lower part_eff is better)"
    )
    for col in (
        "app",
        "partition",
        "f_opt (GHz)",
        "time (s)",
        "power (W)",
        "energy (kJ)",
        "part_eff",
        "rank",
        "f_nom (GHz)",
        "time at f_nom (s)",
        "energy at f_nom (kJ)",
    ):
        table.add_column(col, justify="left" if col in ("app", "partition") else "right")
    for r in frame.iter_rows(named=True):
        table.add_row(
            f"{r['app_id']} {r['app']}".strip(),
            r["partition"] + (" *" if r["best"] else ""),
            f"{r['f_opt_ghz']:.1f}",
            f"{r['time_s']:.2f}",
            f"{r['power_w']:.1f}",
            f"{r['energy_j'] / 1e3:.2f}",
            f"{r['part_eff']:.4f}",
            str(r["rank"]),
            f"{r['f_nominal_ghz']:.1f}",
            f"{r['time_nominal_s']:.2f}",
            f"{r['energy_nominal_j'] / 1e3:.2f}",
        )
    console.print(table)
    console.print("* = the app's best partition (rank 0). Time and energy are per node, from the apps' reference runs.")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        if output.name.lower().endswith(".csv"):
            frame.write_csv(output)
        else:
            frame.write_parquet(output)
        console.print(f"wrote {frame.height} rows to {output}")


@eamc_app.command("run")
def eamc_run(
    output: Annotated[Path, typer.Option(help="Directory: jobs.parquet and summary.json.")],
    policy: Annotated[
        str,
        typer.Option(help="base-slurm, min-runtime, min-energy, eamc-reorder, eamc-priorityinc or eamc-priorityinc-v."),
    ] = "eamc-priorityinc",
    mix: Annotated[str, typer.Option(help="App mix of the generated workload: W13, W33 or W50.")] = "W13",
    workload: Annotated[
        Path | None,
        typer.Option(help="A workload table instead (job_id, submit_time, nodes, runtime, walltime, app_id)."),
    ] = None,
    jobs: Annotated[int, typer.Option(help="Jobs of the generated workload.")] = 5000,
    seed: Annotated[int, typer.Option(help="Seed of the generated workload.")] = 0,
    t_weight: Annotated[float, typer.Option(help="Weight of time over energy in Eq. 4/5.")] = 1.0,
    threshold_mode: Annotated[
        str, typer.Option(help="[AMBIG-2.4] relative (35% of the best part_eff) | absolute (a 0.35 gap, as the code).")
    ] = "relative",
    data_dir: Annotated[
        Path | None, typer.Option(help="EAMC data (the en_conf directory or above).", envvar="WATTSCHED_SHARED_DATA")
    ] = None,
) -> None:
    """Simulate one workload on the p1/p2 DVFS machine under one policy of paper 002."""
    from wattsched.studies.eamc.dvfs import DVFSConfigError, eamc_p1p2
    from wattsched.studies.eamc.energy_model import eamc_appdb
    from wattsched.studies.eamc.experiment import run_eamc
    from wattsched.studies.eamc.policies import EAMCOptions
    from wattsched.studies.eamc.workloads import generate_eamc_workload

    try:
        platform = eamc_p1p2(data_dir)
        if workload is None:
            table = generate_eamc_workload(mix, jobs, seed=seed)
        else:
            table = pl.read_parquet(workload) if workload.suffix == ".parquet" else pl.read_csv(workload)
        run = run_eamc(
            table,
            platform,
            eamc_appdb(data_dir, platform),
            policy,
            EAMCOptions(t_weight=t_weight, threshold_mode=threshold_mode),
        )
    except (DVFSConfigError, ValueError, FileNotFoundError, pl.exceptions.PolarsError) as exc:
        _fail(str(exc))
    import json

    output.mkdir(parents=True, exist_ok=True)
    run.jobs.write_parquet(output / "jobs.parquet")
    (output / "summary.json").write_text(json.dumps(run.metrics, indent=1))
    m = run.metrics
    console.print(
        f"{policy}: {m['jobs']:,} jobs, makespan {m['makespan'] / 86400:.2f} d, mean response "
        f"{m['mean_response'] / 3600:.2f} h, energy {m['sum_energy'] / 3.6e9:,.1f} MWh, mean frequency "
        f"{m['mean_frequency']:.2f} GHz, {100 * m['share_optimal']:.0f}% on their optimal partition"
    )


@eamc_app.command("grid")
def eamc_grid(
    output: Annotated[Path, typer.Option(help="Grid directory (resumed if it exists); report in DIR/report.")],
    jobs: Annotated[int, typer.Option(help="Jobs per workload.")] = 5000,
    mixes: Annotated[str, typer.Option(help="Comma-separated app mixes.")] = "W13,W33,W50",
    policies: Annotated[str | None, typer.Option(help="Comma-separated policies (default: all six).")] = None,
    t_weights: Annotated[str, typer.Option(help="Comma-separated t_weight values.")] = "1,1.5",
    seeds: Annotated[str, typer.Option(help="Comma-separated workload seeds.")] = "0",
    executor: Annotated[str, typer.Option(help="local (processes) or dask.")] = "local",
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    address: Annotated[str | None, typer.Option(help="Dask scheduler address.")] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="EAMC data (the en_conf directory or above).", envvar="WATTSCHED_SHARED_DATA")
    ] = None,
) -> None:
    """Paper 002's evaluation grid (mixes × policies × t_weight × seeds), then Figs. 3–5 and summary.csv: an
    alias of ``campaign run`` with a spec of kind eamc (docs/eamc.md)."""
    from wattsched.campaign.kinds import parse_experiment
    from wattsched.campaign.runner import report
    from wattsched.studies.eamc.dvfs import DVFSConfigError

    def items(text: str) -> list[str]:
        return [x.strip() for x in text.split(",") if x.strip()]

    try:
        spec = {
            "kind": "eamc",
            "name": "eamc-grid",
            "data_dir": str(data_dir) if data_dir else None,
            "mixes": items(mixes),
            "t_weights": [float(x) for x in items(t_weights)],
            "seeds": [int(x) for x in items(seeds)],
            "jobs": jobs,
            **({"policies": items(policies)} if policies else {}),
        }
        experiment = parse_experiment(spec, "eamc grid")
        result = _run_with_progress(experiment, output, executor=executor, workers=workers, address=address)
        paths = report(output, output / "report")
    except (CampaignError, DVFSConfigError, ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    console.print(
        f"{result.total} runs in {output}: {result.executed} ran now ({result.seconds:.1f} s); report: "
        f"{len(paths)} files in {output / 'report'}"
    )


@rmap_app.command("grid")
def rmap_grid(
    output: Annotated[Path, typer.Option(help="Directory: jobs, decisions, model errors and the report.")],
    traces: Annotated[
        str, typer.Option(help="Comma-separated traces: small, large, random1, random2.")
    ] = "small,large,random1,random2",
    bounds: Annotated[
        str, typer.Option(help="Comma-separated global power bounds (W).")
    ] = "6500,8000,10000,12000,14000",
    seed: Annotated[int, typer.Option(help="Seed of the traces, the synthetic Cab data and the model sample.")] = 0,
    sample_share: Annotated[float, typer.Option(help="Share of each app's points the model trains on.")] = 0.1,
    overestimate: Annotated[float, typer.Option(help="Users overestimate t_req by up to this share.")] = 0.0,
    arrival_scale: Annotated[
        float, typer.Option(help="Mean inter-arrival time over the mean t_req ([AMBIG-4.5]; larger is sparser).")
    ] = 1.0,
    details: Annotated[
        Path | None,
        typer.Option(
            help="Measured configuration data (app, nodes, cores, cap, time, power) instead of the synthetic Cab model."
        ),
    ] = None,
    cab_data: Annotated[
        str,
        typer.Option(
            help="Parameters of the synthetic Cab model: calibrated (fitted to the "
            "paper's Fig. 2 and Table 2) or synthetic-v1."
        ),
    ] = "calibrated",
) -> None:
    """Paper 004's experiment: traces × bounds × Traditional / Naive / Adaptive (0–30%, unbounded), oracle and
    model data; summary and Figs. 6–15: an alias of ``campaign run`` with a spec of kind rmap (docs/rmap.md),
    plus every job and decision in DIR/jobs.parquet and DIR/decisions.parquet."""
    from wattsched.campaign.kinds import parse_experiment
    from wattsched.campaign.runner import report
    from wattsched.studies.rmap.experiment import load_rmap_runs, rmap_summary, table4_check

    def items(text: str) -> list[str]:
        return [x.strip() for x in text.split(",") if x.strip()]

    try:
        spec = {
            "kind": "rmap",
            "name": "rmap-grid",
            "traces": items(traces),
            "bounds": [float(b) for b in items(bounds)],
            "seed": seed,
            "sample_share": sample_share,
            "overestimate": overestimate,
            "arrival_scale": arrival_scale,
            "details": str(details) if details is not None else None,
            "cab_data": cab_data,
        }
        experiment = parse_experiment(spec, "rmap grid")
        result = _run_with_progress(experiment, output, workers=1)
        jobs, decisions = load_rmap_runs(output)
        jobs.write_parquet(output / "jobs.parquet")
        decisions.write_parquet(output / "decisions.parquet")
        paths = report(output, output / "report")
    except (CampaignError, ValueError, FileNotFoundError, RuntimeError) as exc:
        _fail(str(exc))
    summary = rmap_summary(jobs).filter(pl.col("default_data"))
    _print_table(
        summary.select(
            "trace", "bound", "policy", "mean_turnaround", "normalised_turnaround", "jobs_better", "jobs_worse"
        ),
        f"RMAP grid ({result.seconds:.1f} s): mean turnaround (s), normalised to Traditional",
    )
    if "large" in spec["traces"] and 6500.0 in spec["bounds"]:
        gains = table4_check(rmap_summary(jobs))
        console.print(
            "large trace at 6,500 W, improvement over Traditional (the paper's Table 4 quantity): "
            + ", ".join(f"{k.removeprefix('rmap-')} {v:+.1f}%" for k, v in gains.items())
        )
    console.print(f"wrote {len(paths)} report files in {output / 'report'}")


@app.command()
def reproduce(
    paper: Annotated[str, typer.Argument(help="The paper: 000, 001, 002, 003 or 004.")],
    output: Annotated[Path | None, typer.Option(help="Output folder (default: reproduce-PAPER[-quick]).")] = None,
    quick: Annotated[bool, typer.Option(help="The reduced setting that still shows every shape (≤ 3 min).")] = False,
    seed: Annotated[int, typer.Option(help="First seed; the run uses --seeds consecutive seeds from it.")] = 0,
    seeds: Annotated[int, typer.Option(min=1, help="How many seeds (workloads, windows, samples) to run.")] = 3,
    workers: Annotated[int | None, typer.Option(min=1, help="Local worker processes (default: the CPU count).")] = None,
    data: Annotated[
        Path | None, typer.Option(help="The shared data folder (default: $WATTSCHED_DATA or ../shared/data).")
    ] = None,
) -> None:
    """Run a paper's experiment with its settings; write results.parquet, figures, claims.json and REPORT.md/html
    setting every claim of the paper beside our value and a verdict (holds, differs, not checkable)."""
    import os
    import signal
    import time

    from rich.markup import escape

    from wattsched.reproduce.claims import PAPERS
    from wattsched.reproduce.runner import ReproduceError, default_data_dir, stop_workers
    from wattsched.reproduce.runner import reproduce as run_reproduction

    def fail(message: str) -> None:  # one line whatever the terminal width, and the message taken literally
        err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
        raise typer.Exit(code=2)

    given = paper
    paper = paper.zfill(3)
    if paper not in PAPERS:
        fail(f"paper must be one of {', '.join(PAPERS)}, got {given!r}")
    out = output or Path(f"reproduce-{paper}{'-quick' if quick else ''}")
    seed_list = tuple(range(seed, seed + seeds))
    command = "wattsched " + " ".join(sys.argv[1:]) if sys.argv[1:] else ""

    def _term(signum, frame):  # SIGTERM stops like Ctrl-C: finished work is kept, workers are ended
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM while stopping changes nothing
        stop_workers()  # first, so that a process pool being left does not wait for its queued tasks
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _term)
    started = time.perf_counter()

    def step(message: str) -> None:
        err.print(f"[dim]{time.perf_counter() - started:7.1f} s[/] {message}")

    def track(items, total, description):
        with Progress(
            TextColumn(f"[bold]{description}[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as bar:
            task = bar.add_task(description, total=total)
            for item in items:
                yield item
                bar.advance(task)

    try:
        result = run_reproduction(
            paper,
            out,
            quick=quick,
            seeds=seed_list,
            workers=workers or os.cpu_count() or 1,
            data_dir=data or default_data_dir(),
            command=command,
            step=step,
            track_fn=track,
        )
    except KeyboardInterrupt:
        stop_workers()
        err.print(
            f"[bold yellow]interrupted:[/] paper {paper}'s reproduction stopped; nothing was reported "
            f"(finished runs, if any, stay in {escape(str(out))})",
            soft_wrap=True,
        )
        raise typer.Exit(code=130) from None
    except (ReproduceError, WorkloadError, FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    finally:
        signal.signal(signal.SIGTERM, previous)
    counts = {v: 0 for v in ("holds", "differs", "not checkable")}
    for r in result.run.claims:
        counts[r.verdict] += 1
    table = Table(
        title=f"Paper {paper}: {counts['holds']} hold, {counts['differs']} differ, "
        f"{counts['not checkable']} not checkable ({result.seconds:.0f} s)"
    )
    for col in ("id", "paper", "ours", "verdict"):
        table.add_column(col, overflow="fold")
    from wattsched.reproduce.claims import claim as claim_of

    for r in result.run.claims:
        colour = {"holds": "green", "differs": "yellow", "not checkable": "dim"}[r.verdict]
        table.add_row(r.id, claim_of(r.id).paper_value, r.ours_text, f"[{colour}]{r.verdict}[/]")
    console.print(table)
    console.print(f"wrote {', '.join(str(p) for p in result.files.values())}")


if __name__ == "__main__":
    app()
