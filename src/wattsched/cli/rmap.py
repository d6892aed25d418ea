"""``wattsched rmap``: paper 004's experiment, hardware overprovisioning under a global power bound."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wattsched.cli.campaign import run_with_progress
from wattsched.cli.choices import CabData
from wattsched.cli.common import console, emit_json, fail, parse_items, print_table
from wattsched.core.errors import CampaignError

app = typer.Typer(help="RMAP (paper 004): hardware overprovisioning under a global power bound.", no_args_is_help=True)


@app.command("grid")
def rmap_grid(
    output: Annotated[
        Path, typer.Option(help="Campaign directory (resumed if it holds this grid): jobs, decisions, model, report.")
    ],
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
        float,
        typer.Option(help="Mean inter-arrival time over the mean t_req (larger is sparser; docs/decisions.md, 4.5)."),
    ] = 1.0,
    details: Annotated[
        Path | None,
        typer.Option(
            help="Measured configuration data (app, nodes, cores, cap, time, power) instead of the synthetic Cab model."
        ),
    ] = None,
    cab_data: Annotated[
        CabData,
        typer.Option(
            case_sensitive=False,
            help="Parameters of the synthetic Cab model: calibrated (fitted to the "
            "paper's Fig. 2 and Table 2) or synthetic-v1.",
        ),
    ] = CabData.calibrated,
) -> None:
    """Paper 004's experiment: traces × bounds × Traditional / Naive / Adaptive (0–30%, unbounded), oracle and
    model data; summary and Figs. 6–15: an alias of ``campaign run`` with a spec of kind rmap (docs/rmap.md), plus
    every job and decision in DIR/jobs.parquet and DIR/decisions.parquet."""
    # deferred: the study loads its data tables and the engine; `wattsched --help` should not
    from wattsched.api.campaigns import rmap_grid_experiment, rmap_grid_report

    try:
        experiment = rmap_grid_experiment(
            traces=parse_items(traces),
            bounds=[float(b) for b in parse_items(bounds)],
            seed=seed,
            sample_share=sample_share,
            overestimate=overestimate,
            arrival_scale=arrival_scale,
            details=details,
            cab_data=cab_data,
        )
        result = run_with_progress(experiment, output, workers=1)
        written = rmap_grid_report(output)  # also DIR/jobs.parquet and DIR/decisions.parquet
    except (CampaignError, ValueError, FileNotFoundError, RuntimeError) as exc:
        fail(str(exc))
    summary = written.summary
    emit_json({"output": str(output), "runs": result.total, "seconds": result.seconds, "summary": summary.to_dicts()})
    print_table(
        summary.select(
            "trace", "bound", "policy", "mean_turnaround", "normalised_turnaround", "jobs_better", "jobs_worse"
        ),
        f"RMAP grid ({result.seconds:.1f} s): mean turnaround (s), normalised to Traditional",
    )
    if written.table4 is not None:
        console.print(
            "large trace at 6,500 W, improvement over Traditional (the paper's Table 4 quantity): "
            + ", ".join(f"{k.removeprefix('rmap-')} {v:+.1f}%" for k, v in written.table4.items())
        )
    console.print(f"wrote {len(written.paths)} report files in {output / 'report'} and {output}")
