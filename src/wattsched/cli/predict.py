"""``wattsched predict``: add online power or runtime predictions to a workload and print their error report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from wattsched.api.vocabulary import (
    DEFAULT_PREDICTION_PLATFORM,
    POWER_PREDICTORS,
    PREDICTORS,
    RUNTIME_PREDICTORS,
    format_help,
)
from wattsched.cli.choices import Completion, CvKind, complete_power_predictor, complete_runtime_predictor
from wattsched.cli.common import (
    ColumnsOption,
    TimezoneOption,
    console,
    emit_json,
    err,
    fail,
    renamed_option,
    report_rejects,
    warn_ignored_timezone,
)
from wattsched.core.errors import WorkloadError

if TYPE_CHECKING:  # imported by the commands themselves, not to print --help
    from wattsched.api import PredictionRun
    from wattsched.core.schema import ReadResult

app = typer.Typer(help="Add online power or runtime predictions to a workload.", no_args_is_help=True)


CompletionOption = Annotated[
    Completion,
    typer.Option(
        case_sensitive=False,
        help="Completion times the predictor learns from: auto (the trace's, else an EASY replay), "
        "trace, replay or no-wait (submit + runtime).",
    ),
]


def _check_output(output: Path) -> None:
    """Predictions go to a table (SWF has no column for them); checked before anything is computed."""
    from wattsched.api.predict import check_prediction_output

    try:
        check_prediction_output(output)
    except ValueError as exc:
        fail(str(exc))


def _write_predictions(run: PredictionRun, read: ReadResult, output: Path) -> None:
    """The workload with its prediction columns; CSV cannot hold list columns (profiles), which it leaves out.
    The input's rejects are listed by reason and written next to it (``<stem>.rejects.parquet`` or ``.csv``)."""
    # deferred: the writers load pyarrow and numba; `wattsched --help` should not
    from wattsched.api.predict import write_predictions
    from wattsched.core.rejects import rejects_path

    left_out = write_predictions(run, read, output)
    if left_out:
        err.print(f"note: CSV cannot hold list columns; {', '.join(left_out)} left out (use .parquet to keep them)")
    where = rejects_path(output, "csv" if ".csv" in output.name.lower() else "parquet")
    report_rejects(read.rejects, read.provenance.format, where)


def _write_extras(run: PredictionRun, plots: Path | None, report: Path | None, what: str, unit: str) -> None:
    """The per-user MAE box plot and the JSON report, when asked for."""
    # deferred: the box plot loads matplotlib; `wattsched --help` should not
    from wattsched.api import boxplot_per_user

    if plots is not None:
        path = boxplot_per_user(
            run.per_user_mae,
            plots / f"{what}_mae_per_user.png",
            title=f"{what}: MAE per user",
            ylabel=f"MAE per user ({unit})",
        )
        console.print(f"figure: {path}")
    if report is not None:
        from wattsched.api.predict import write_prediction_report

        console.print(f"report: {write_prediction_report(run, report)}")


def _error_row(table: Table, label: str, stats: dict[str, Any], scale: float = 1.0) -> None:
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


@app.command("list")
def list_predictors() -> None:
    """List the online predictors: name, kind, whether it needs scikit-learn, what it predicts from."""
    emit_json(
        {
            "predictors": [
                {"name": p.name, "kind": p.kind, "needs_sklearn": p.needs_sklearn, "description": p.description}
                for p in PREDICTORS.values()
            ]
        }
    )
    table = Table(title="predictors")
    for col in ("name", "kind", "scikit-learn", "description"):
        table.add_column(col)
    for p in PREDICTORS.values():
        table.add_row(p.name, p.kind, "yes" if p.needs_sklearn else "no", p.description)
    console.print(table)


@app.command("power")
def predict_power_cmd(
    workload: Annotated[Path, typer.Option(help="Workload with measured per-node power (parquet, csv, PM100).")],
    output: Annotated[Path, typer.Option(help="Output table (.parquet or .csv) with pred_power_* columns.")],
    method: Annotated[
        str,
        typer.Option(
            help=f"{', '.join(POWER_PREDICTORS)} (see wattsched predict list).",
            autocompletion=complete_power_predictor,
        ),
    ] = "history",
    completion: CompletionOption = Completion.auto,
    machine_size: Annotated[int | None, typer.Option(help="Machine size for an EASY replay.")] = None,
    platform: Annotated[
        str, typer.Option(help="Platform preset or file: its node maximum is the last fallback.")
    ] = DEFAULT_PREDICTION_PLATFORM,
    alpha: Annotated[float, typer.Option(help="History weight exponent α (θ = (1 − (r−C)/s)^α).")] = 2.0,
    eps: Annotated[
        float, typer.Option(help="ε added to the whole-history window s, seconds (docs/decisions.md, 0.4).")
    ] = 1.0,
    window: Annotated[
        float | None, typer.Option("--history-window", help="Fixed history window s in seconds (default: all).")
    ] = None,
    old_window: Annotated[
        float | None, typer.Option("--window", hidden=True, help="Old name of --history-window.")
    ] = None,
    cv_kind: Annotated[
        CvKind, typer.Option(case_sensitive=False, help="ML: folds of RFECV and the grid search.")
    ] = CvKind.kfold,
    max_train_rows: Annotated[
        int | None, typer.Option(help="ML: train each week on the most recent N completed jobs only (default: all).")
    ] = None,
    t0: Annotated[
        float | None, typer.Option(help="ML: start of week 0 on the submit clock (default: 1st submit).")
    ] = None,
    n_jobs: Annotated[
        int | None,
        typer.Option("--cv-workers", min=1, help="ML: parallel workers of the cross-validation (default: 1)."),
    ] = None,
    old_n_jobs: Annotated[int | None, typer.Option("--n-jobs", hidden=True, help="Old name of --cv-workers.")] = None,
    plots: Annotated[Path | None, typer.Option(help="Directory for the per-user MAE box plot (PNG).")] = None,
    report: Annotated[Path | None, typer.Option(help="Write the evaluation report as JSON here.")] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
    timezone: TimezoneOption = None,
    columns: ColumnsOption = None,
) -> None:
    """Predict each job's power online from finished jobs only and print the MAE report.

    ML methods retrain weekly (RFECV, then a grid search, on the jobs completed so far); see docs/prediction.md."""
    # deferred: the predictors load numba, SciPy and (ML) scikit-learn; `wattsched --help` should not
    from wattsched.api import SimulationError, load_workload
    from wattsched.api.predict import predict_power

    window = renamed_option(window, old_window, "--window", "--history-window")  # --window: simulate's cap window
    n_jobs = renamed_option(n_jobs, old_n_jobs, "--n-jobs", "--cv-workers")  # --jobs: a count of jobs
    _check_output(output)
    try:
        read = load_workload(workload, machine_size=machine_size, strict=strict, timezone=timezone, columns=columns)
        warn_ignored_timezone(timezone, read.provenance.format, read.provenance.source)
        run = predict_power(
            read,
            method,
            completion=completion,
            machine_size=machine_size,
            platform=platform,
            alpha=alpha,
            eps=eps,
            history_window=window,
            cv_kind=cv_kind,
            max_train_rows=max_train_rows,
            t0=t0,
            cv_workers=n_jobs,
        )
        _write_predictions(run, read, output)
    except (WorkloadError, SimulationError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    emit_json({"method": method, "completion": run.completion, "output": str(output), "report": run.report})
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


@app.command("runtime")
def predict_runtime_cmd(
    workload: Annotated[Path, typer.Option(help=format_help("The workload"))],
    output: Annotated[Path, typer.Option(help="Output table (.parquet or .csv) with a pred_runtime column.")],
    method: Annotated[
        str,
        typer.Option(
            help=f"{', '.join(RUNTIME_PREDICTORS)} (see wattsched predict list).",
            autocompletion=complete_runtime_predictor,
        ),
    ] = "rules",
    completion: CompletionOption = Completion.auto,
    machine_size: Annotated[int | None, typer.Option(help="Machine size (SWF header otherwise; EASY replay).")] = None,
    platform: Annotated[
        str | None, typer.Option(help="Platform preset or file: its node count sizes the EASY replay.")
    ] = None,
    min_prefix: Annotated[int, typer.Option(help="rules: shortest name prefix that counts as similar.")] = 1,
    plots: Annotated[Path | None, typer.Option(help="Directory for the per-user MAE box plot (PNG).")] = None,
    report: Annotated[Path | None, typer.Option(help="Write the evaluation report as JSON here.")] = None,
    strict: Annotated[bool, typer.Option(help="Turn any rejected input line into an error.")] = False,
    timezone: TimezoneOption = None,
    columns: ColumnsOption = None,
) -> None:
    """Predict each job's runtime online from finished jobs only and print the MAE report."""
    # deferred: the predictors load numba; `wattsched --help` should not
    from wattsched.api import SimulationError, load_workload
    from wattsched.api.predict import predict_runtime

    _check_output(output)
    try:
        read = load_workload(workload, machine_size=machine_size, strict=strict, timezone=timezone, columns=columns)
        warn_ignored_timezone(timezone, read.provenance.format, read.provenance.source)
        run = predict_runtime(
            read, method, completion=completion, machine_size=machine_size, platform=platform, min_prefix=min_prefix
        )
        _write_predictions(run, read, output)
    except (WorkloadError, SimulationError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    emit_json({"method": method, "completion": run.completion, "output": str(output), "report": run.report})
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
