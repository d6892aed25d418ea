"""A paper's reproduction as a function: what ``wattsched reproduce PAPER`` does, with its option names and
defaults (docs/reproduce.md). The command line adds the step log, the progress bars and the claims table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattsched.core.data_folder import shared_data_dir
from wattsched.core.executors import default_workers
from wattsched.reproduce.claims import PAPERS
from wattsched.reproduce.report import phase_line
from wattsched.reproduce.runner import ReproduceError, Reproduction, stop_workers

__all__ = [
    "PAPERS",
    "ClaimRow",
    "ReproduceError",
    "Reproduction",
    "claim_rows",
    "paper_id",
    "phase_line",
    "reproduce_paper",
    "reproduction_output",
    "stop_workers",
    "verdict_summary",
]


def paper_id(paper: str) -> str:
    """The paper's three-digit id (``1`` → ``001``); a :class:`ReproduceError` naming the choices otherwise."""
    padded = paper.zfill(3)
    if padded not in PAPERS:
        raise ReproduceError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    return padded


def reproduction_output(paper: str, quick: bool = False) -> Path:
    """The default output folder: ``reproduce-PAPER`` (``reproduce-PAPER-quick`` for the quick setting)."""
    return Path(f"reproduce-{paper_id(paper)}{'-quick' if quick else ''}")


def reproduce_paper(
    paper: str,
    output: Path | None = None,
    *,
    quick: bool = False,
    seed: int = 0,
    seed_count: int = 3,
    workers: int | None = None,
    data_dir: Path | None = None,
    options: Mapping[str, str] | None = None,
    command: str = "",
    step: Callable[[str], None] | None = None,
    track_fn: Callable[[Iterable[Any], int, str], Iterator[Any]] | None = None,
) -> Reproduction:
    """Run paper ``paper``'s experiment on ``seed_count`` consecutive seeds from ``seed`` into ``output``
    (default :func:`reproduction_output`) and write its report: results, figures, claims.json, REPORT.md/html.

    ``workers`` defaults to the CPU count, ``data_dir`` to :func:`~wattsched.core.data_folder.shared_data_dir`
    (``$WATTSCHED_DATA`` or ``../shared/data``); ``options`` are the paper's own settings (``--set NAME=VALUE``).
    On Ctrl-C or SIGTERM call :func:`stop_workers` before leaving: finished runs stay in the output folder."""
    from wattsched.reproduce.runner import reproduce

    paper = paper_id(paper)
    if seed_count < 1:
        raise ReproduceError(f"seed_count must be at least 1, got {seed_count}")
    return reproduce(
        paper,
        output or reproduction_output(paper, quick),
        quick=quick,
        seeds=tuple(range(seed, seed + seed_count)),
        workers=default_workers(workers),
        data_dir=data_dir or shared_data_dir(),
        command=command,
        step=step,
        track_fn=track_fn,
        options=options,
    )


@dataclass(frozen=True)
class ClaimRow:
    """One claim as the command line lists it: its id, the paper's value, ours and the verdict."""

    id: str
    paper: str
    ours: str
    verdict: str


def claim_rows(result: Reproduction) -> list[ClaimRow]:
    """Every claim of a reproduction, in the report's order, with the paper's value beside ours."""
    from wattsched.reproduce.claims import claim

    return [ClaimRow(r.id, claim(r.id).paper_value, r.ours_text, r.verdict) for r in result.run.claims]


def verdict_summary(result: Reproduction) -> tuple[dict[str, int], dict[str, int], str]:
    """The result claims counted per verdict, the setup checks counted apart, and the one-line tally."""
    from wattsched.reproduce.report import verdict_counts
    from wattsched.reproduce.report_render import counts_line

    counts, setup = verdict_counts(result.run.claims)
    return counts, setup, counts_line(counts, setup)
