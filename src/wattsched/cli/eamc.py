"""``wattsched eamc``: paper 002's energy model (optimal DVFS frequency and partition efficiency per app), one
simulation on the p1/p2 machine, and the paper's evaluation grid."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, cast

import typer
from rich.table import Table

from wattsched.cli.campaign import run_with_progress
from wattsched.cli.choices import EamcMix, Executor, Score, ThresholdMode, WeightPlacement, complete_eamc_policy
from wattsched.cli.common import console, emit_json, fail, parse_items
from wattsched.core.errors import CampaignError

if TYPE_CHECKING:
    from wattsched.api.eamc import ScoreForm
    from wattsched.api.eamc import WeightPlacement as EpmWeightPlacement

app = typer.Typer(
    help="EAMC energy model (paper 002): optimal DVFS frequency and partition efficiency per app.", no_args_is_help=True
)


@app.command("table")
def eamc_table(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="EAMC data: the en_conf directory (2hw.conf, 2hw/), or a directory above it (eamc/, the shared data "
            "root; default: $WATTSCHED_DATA or ../shared/data).",
        ),
    ] = None,
    t_weight: Annotated[
        float, typer.Option(help="Weight of time over energy in Eq. 4/5 (the paper: 1 and 1.5).")
    ] = 1.0,
    weight_placement: Annotated[
        WeightPlacement,
        typer.Option(
            case_sensitive=False,
            help="Where t_weight enters Eq. 5: paper (as printed) or code (inside the square, as the authors' code); "
            "see docs/decisions.md, 2.2.",
        ),
    ] = WeightPlacement.paper,
    score: Annotated[
        Score,
        typer.Option(
            case_sensitive=False,
            help="Partition score: euclidean (Eq. 5) or code_linear (the authors' code); see docs/decisions.md, 2.3.",
        ),
    ] = Score.euclidean,
    output: Annotated[Path | None, typer.Option(help="Also write the table to a .csv or .parquet file.")] = None,
    platform_name: Annotated[
        str, typer.Option("--platform", help="The partitions: a dvfs preset or platform file (docs/platforms.md).")
    ] = "eamc-p1p2",
) -> None:
    """Per app and partition of the p1/p2 system: optimal frequency (Eq. 4), time, energy and part_eff (Eq. 5)."""
    # deferred: the study loads its data tables and the engine; `wattsched --help` should not
    from wattsched.api.eamc import DVFSConfigError, write_table
    from wattsched.api.eamc import eamc_table as table_of

    if output is not None and not output.name.lower().endswith((".csv", ".parquet")):
        fail(f"--output must end in .csv or .parquet, got {output.name}")
    try:
        frame = table_of(
            data_dir,
            t_weight=t_weight,
            # StrEnum members: the strs the Literals name
            weight_placement=cast("EpmWeightPlacement", weight_placement),
            score=cast("ScoreForm", score),
            platform=platform_name,
        )
    except (DVFSConfigError, ValueError) as exc:
        fail(str(exc))
    emit_json({"rows": frame.to_dicts(), "output": str(output) if output is not None else None})
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
        write_table(frame, output)
        console.print(f"wrote {frame.height} rows to {output}")


@app.command("run")
def eamc_run(
    output: Annotated[Path, typer.Option(help="Directory: jobs.parquet and summary.json.")],
    policy: Annotated[
        str,
        typer.Option(
            help="base-slurm, min-runtime, min-energy, eamc-reorder, eamc-priorityinc or eamc-priorityinc-v.",
            callback=lambda v: v.lower(),
            autocompletion=complete_eamc_policy,
        ),
    ] = "eamc-priorityinc",
    mix: Annotated[
        EamcMix, typer.Option(case_sensitive=False, help="App mix of the generated workload.")
    ] = EamcMix.W13,
    workload: Annotated[
        Path | None,
        typer.Option(help="A workload table instead (job_id, submit_time, nodes, runtime, walltime, app_id)."),
    ] = None,
    jobs: Annotated[int, typer.Option(help="Jobs of the generated workload.")] = 5000,
    seed: Annotated[int, typer.Option(help="Seed of the generated workload.")] = 0,
    t_weight: Annotated[float, typer.Option(help="Weight of time over energy in Eq. 4/5.")] = 1.0,
    threshold_mode: Annotated[
        ThresholdMode,
        typer.Option(
            case_sensitive=False,
            help="relative (35% of the best part_eff) or absolute (a 0.35 gap, as the authors' code); see "
            "docs/decisions.md, 2.4.",
        ),
    ] = ThresholdMode.relative,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="EAMC data (the en_conf directory or above; default: $WATTSCHED_DATA or ../shared/data)."),
    ] = None,
    platform_name: Annotated[
        str, typer.Option("--platform", help="The partitions: a dvfs preset or platform file (docs/platforms.md).")
    ] = "eamc-p1p2",
) -> None:
    """Simulate one workload on the p1/p2 DVFS machine (or the partitions of ``--platform``) under one policy of
    paper 002."""
    # deferred: the study loads its data tables and the engine; `wattsched --help` should not
    import polars as pl

    from wattsched.api.eamc import DVFSConfigError, write_eamc_run
    from wattsched.api.eamc import eamc_run as run_of

    try:
        run = run_of(
            policy,
            workload=workload,
            mix=mix,
            jobs=jobs,
            seed=seed,
            t_weight=t_weight,
            threshold_mode=cast("Literal['relative', 'absolute']", threshold_mode),
            data_dir=data_dir,
            platform=platform_name,
        )
    except (DVFSConfigError, ValueError, FileNotFoundError, pl.exceptions.PolarsError) as exc:
        fail(str(exc))
    write_eamc_run(run, output)
    m = run.metrics
    emit_json({"policy": policy, "output": str(output), "metrics": m})
    console.print(
        f"{policy}: {m['jobs']:,} jobs, makespan {m['makespan'] / 86400:.2f} d, mean response "
        f"{m['mean_response'] / 3600:.2f} h, energy {m['sum_energy'] / 3.6e9:,.1f} MWh, mean frequency "
        f"{m['mean_frequency']:.2f} GHz, {100 * m['share_optimal']:.0f}% on their optimal partition"
    )


@app.command("grid")
def eamc_grid(
    output: Annotated[Path, typer.Option(help="Grid directory (resumed if it exists); report in DIR/report.")],
    jobs: Annotated[int, typer.Option(help="Jobs per workload.")] = 5000,
    mixes: Annotated[str, typer.Option(help="Comma-separated app mixes.")] = "W13,W33,W50",
    policies: Annotated[str | None, typer.Option(help="Comma-separated policies (default: all six).")] = None,
    t_weights: Annotated[str, typer.Option(help="Comma-separated t_weight values.")] = "1,1.5",
    seeds: Annotated[str, typer.Option(help="Comma-separated workload seeds.")] = "0",
    executor: Annotated[
        Executor, typer.Option(case_sensitive=False, help="local (processes) or dask.")
    ] = Executor.local,
    workers: Annotated[int | None, typer.Option(min=1, help="Worker processes (default: the CPU count).")] = None,
    address: Annotated[str | None, typer.Option(help="Dask scheduler address.")] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="EAMC data (the en_conf directory or above; default: $WATTSCHED_DATA or ../shared/data)."),
    ] = None,
) -> None:
    """Paper 002's evaluation grid (mixes × policies × t_weight × seeds), then Figs. 3–5 and summary.csv: an alias
    of ``campaign run`` with a spec of kind eamc (docs/eamc.md)."""
    # deferred: the study loads its data tables and the engine; `wattsched --help` should not
    from wattsched.api.campaigns import eamc_grid_experiment, grid_report
    from wattsched.api.eamc import DVFSConfigError

    try:
        experiment = eamc_grid_experiment(
            jobs=jobs,
            mixes=parse_items(mixes),
            policies=parse_items(policies) if policies else None,
            t_weights=[float(x) for x in parse_items(t_weights)],
            seeds=[int(x) for x in parse_items(seeds)],
            data_dir=data_dir,
        )
        result = run_with_progress(experiment, output, executor=executor, workers=workers, address=address)
        paths = grid_report(output)
    except (CampaignError, DVFSConfigError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    emit_json(
        {"output": str(output), "runs": result.total, "executed": result.executed, "seconds": result.seconds,
         "report": [str(p) for p in paths]}
    )  # fmt: skip
    console.print(
        f"{result.total} runs in {output}: {result.executed} ran now ({result.seconds:.1f} s); report: "
        f"{len(paths)} files in {output / 'report'}"
    )
