"""``wattsched reproduce PAPER``: a paper's experiment with its settings, and the report setting every claim of the
paper beside our value."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from wattsched.cli.choices import complete_paper
from wattsched.cli.common import console, emit_json, err, fail, renamed_option
from wattsched.cli.progress import track
from wattsched.cli.stoppable import exit_interrupted
from wattsched.core.errors import WorkloadError
from wattsched.core.stopping import interruptions


def reproduce(
    paper: Annotated[str, typer.Argument(help="The paper: 000, 001, 002, 003 or 004.", autocompletion=complete_paper)],
    output: Annotated[Path | None, typer.Option(help="Output folder (default: reproduce-PAPER[-quick]).")] = None,
    quick: Annotated[
        bool, typer.Option(help="The reduced setting that still shows every shape (minutes; docs/performance.md).")
    ] = False,
    seed: Annotated[int, typer.Option(help="First seed; the run uses --seed-count consecutive seeds from it.")] = 0,
    seeds: Annotated[
        int, typer.Option("--seed-count", min=1, help="How many seeds (workloads, windows, samples) to run.")
    ] = 3,
    old_seeds: Annotated[
        int | None, typer.Option("--seeds", min=1, hidden=True, help="Old name of --seed-count.")
    ] = None,
    workers: Annotated[int | None, typer.Option(min=1, help="Local worker processes (default: the CPU count).")] = None,
    data: Annotated[
        Path | None,
        typer.Option("--data-dir", help="The shared data folder (default: $WATTSCHED_DATA or ../shared/data)."),
    ] = None,
    old_data: Annotated[Path | None, typer.Option("--data", hidden=True, help="Old name of --data-dir.")] = None,
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="NAME=VALUE",
            help="A paper's own option, repeatable (e.g. 001: cph=wall=1, ewt=constant); an unknown name lists them.",
        ),
    ] = None,
) -> None:
    """Run a paper's experiment with its settings; write results.parquet, figures, claims.json and REPORT.md/html
    setting every claim of the paper beside our value and a verdict (holds, differs, unstable, not checkable)."""
    # deferred: a reproduction loads every study, the engine and the figures; `wattsched --help` should not
    from wattsched.api.reproduce import (
        ReproduceError,
        claim_rows,
        paper_id,
        phase_line,
        reproduce_paper,
        reproduction_output,
        stop_workers,
        verdict_summary,
    )

    seeds = renamed_option(seeds, old_seeds, "--seeds", "--seed-count")  # --seeds: a list of seeds elsewhere
    data = renamed_option(data, old_data, "--data", "--data-dir")  # --data-dir: the data folder everywhere
    try:
        paper = paper_id(paper)
    except ReproduceError as exc:
        fail(str(exc))
    out = output or reproduction_output(paper, quick)
    options: dict[str, str] = {}
    for item in settings or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            fail(f"--set takes NAME=VALUE, got {item!r}")
        options[name.strip()] = value.strip()
    command = "wattsched " + " ".join(sys.argv[1:]) if sys.argv[1:] else ""

    started = time.perf_counter()

    def step(message: str) -> None:
        err.print(Text(f"{time.perf_counter() - started:7.1f} s", style="dim"), message)

    try:
        result = reproduce_paper(
            paper,
            out,
            quick=quick,
            seed=seed,
            seed_count=seeds,
            workers=workers,
            data_dir=data,
            command=command,
            step=step,
            track_fn=track,
            options=options,
        )
    except interruptions():  # Ctrl-C, or SIGTERM (the root app makes it one: wattsched.cli.stoppable)
        stop_workers()
        exit_interrupted(
            f"interrupted: paper {paper}'s reproduction stopped; nothing was reported "
            f"(finished runs, if any, stay in {out})"
        )
    except (ReproduceError, WorkloadError, FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    counts, setup, tally = verdict_summary(result)
    rows = claim_rows(result)
    emit_json(
        {
            "paper": paper,
            "seconds": result.seconds,
            "verdicts": counts,
            "setup": setup,
            "claims": [{"id": r.id, "ours": r.ours, "verdict": r.verdict} for r in rows],
            "files": {k: str(p) for k, p in result.files.items()},
        }
    )
    table = Table(title=f"Paper {paper}: {tally} ({result.seconds:.0f} s)")
    for col in ("id", "paper", "ours", "verdict"):
        table.add_column(col, overflow="fold")
    for r in rows:
        colour = {"holds": "green", "differs": "yellow", "unstable": "magenta", "not checkable": "dim"}[r.verdict]
        table.add_row(r.id, r.paper, r.ours, Text(r.verdict, style=colour))
    console.print(table)
    console.print(f"wrote {', '.join(str(p) for p in result.files.values())}")
    console.print(f"phases (wall): {phase_line(result.phases)}")
