"""``wattsched reproduce PAPER``: run one paper's experiment with the paper's settings and write its report.

Each paper has one module, ``wattsched.reproduce.paperNNN``, with a function ``run(ctx: ReproduceContext) ->
PaperRun``. The module runs the experiment (``ctx.quick``: the reduced setting that still shows every shape;
otherwise the paper's scale where our data allows it), writes its figures under ``ctx.out``, and returns the
per-run results table and one :class:`~wattsched.reproduce.claims.ClaimResult` per claim of its catalogue.
This module checks that every claim got a result and writes ``results.parquet``, ``claims.json``, ``REPORT.md``
and ``REPORT.html`` (:mod:`wattsched.reproduce.report`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from wattsched.core.data_folder import DATA_ENV
from wattsched.core.executors import shared_workers
from wattsched.core.stopping import stop_children
from wattsched.reproduce.claims import PAPERS, ClaimResult, catalogue, judge_seeds
from wattsched.reproduce.report import write_report

T = TypeVar("T")

#: Where the shared data directory is looked for when ``--data`` is not given (first that exists).


class ReproduceError(ValueError):
    """A reproduction that cannot run (missing data, bad settings), with what to do about it."""


class Phases:
    """Wall seconds per named phase of one reproduction (docs/performance.md's phase tables come from these, never
    typed in): :meth:`enter` closes the running phase and starts the next, so a paper module marks only where a
    phase begins; a phase entered twice adds up. Recorded in ``claims.json`` (``phases``) and the report."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._current: str | None = None
        self._since = time.perf_counter()

    def enter(self, name: str | None) -> None:
        """Close the running phase (adding its wall time) and start ``name`` (``None``: none)."""
        now = time.perf_counter()
        if self._current is not None:
            self.seconds[self._current] = self.seconds.get(self._current, 0.0) + now - self._since
        self._current, self._since = name, now

    def snapshot(self) -> dict[str, float]:
        """The table so far, the running phase counted up to now (it keeps running)."""
        table = dict(self.seconds)
        if self._current is not None:
            table[self._current] = table.get(self._current, 0.0) + time.perf_counter() - self._since
        return {name: sec for name, sec in table.items() if sec >= 5e-4}

    def close(self) -> dict[str, float]:
        """Close the running phase; the table so far (phase → seconds, in the order first entered), less the
        phases that took no measurable time (a paper module that splits its run leaves the runner's own "run"
        phase empty)."""
        self.enter(None)
        return {name: sec for name, sec in self.seconds.items() if sec >= 5e-4}


@dataclass
class ReproduceContext:
    """What a paper module is given: where to write, how big to run, which seeds, how to report progress."""

    paper: str
    out: Path
    quick: bool = False
    seeds: tuple[int, ...] = (0, 1, 2)
    workers: int = 1
    data_dir: Path | None = None
    step: Callable[[str], None] = field(default=lambda message: None)
    track_fn: Callable[[Iterable[Any], int, str], Iterator[Any]] | None = None
    #: The paper's own options (``--set NAME=VALUE``), checked against the module's ``OPTIONS`` by :func:`reproduce`.
    options: dict[str, str] = field(default_factory=dict)
    #: Where the run's wall time goes (:class:`Phases`); a paper module calls :meth:`phase` where a phase begins.
    phases: Phases = field(default_factory=Phases)

    def phase(self, name: str) -> None:
        """Start phase ``name`` of the phase table (closing the running one)."""
        self.phases.enter(name)

    def data(self, relative: str, what: str) -> Path:
        """A file or folder of the shared data directory, or a :class:`ReproduceError` saying what is missing."""
        if self.data_dir is None:
            raise ReproduceError(
                f"paper {self.paper} needs {what} ({relative}); give the data directory with --data-dir DIR "
                f"or ${DATA_ENV} (in this project: ../shared/data)"
            )
        path = self.data_dir / relative
        if not path.exists():
            raise ReproduceError(f"paper {self.paper} needs {what}: {path} does not exist")
        return path

    def track(self, items: Iterable[T], total: int, description: str) -> Iterator[T]:
        """``items`` with a progress bar when the CLI gave one."""
        if self.track_fn is None:
            yield from items
        else:
            yield from self.track_fn(items, total, description)


@dataclass
class Alternative:
    """The claims that another reading of the paper moves, computed under that reading (docs/decisions.md names
    both): the report shows them beside the default's, judged by the same rules."""

    name: str
    description: str
    claims: list[ClaimResult]
    per_seed: dict[int, list[ClaimResult]] = field(default_factory=dict)


@dataclass(frozen=True)
class Sensitivity:
    """One row of a report's sensitivity table: what a part of the construction moves in a claim, measured.

    ``default`` and ``variant`` are the claim's value under the default construction and with ``change`` made
    (texts computed from runs), ``effect`` says by how much (also computed)."""

    claim: str
    change: str
    default: str
    variant: str
    effect: str


@dataclass
class PaperRun:
    """What a paper module returns: per-run results, a result per claim (all seeds pooled) and per seed (each
    seed's runs alone, for the seed rule of ``claims.judge_seeds``), figures (paths under ``out``), the settings
    that were run, notes for the report (differences of setting from the paper, data used), the claims under other
    readings of the paper, and sensitivity rows."""

    results: pl.DataFrame
    claims: list[ClaimResult]
    figures: list[Path] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    per_seed: dict[int, list[ClaimResult]] = field(default_factory=dict)
    alternatives: list[Alternative] = field(default_factory=list)
    sensitivity: list[Sensitivity] = field(default_factory=list)


def per_seed_claims(
    seeds: Iterable[int], compute: Callable[[int], list[ClaimResult]], *, skip: Iterable[str] = ()
) -> dict[int, list[ClaimResult]]:
    """``compute(seed)`` for every seed: the claims computed on one seed's runs alone, less the ``skip`` ids
    (claims that do not depend on the seed, or cannot be computed on one seed)."""
    leave = set(skip)
    return {seed: [r for r in compute(seed) if r.id not in leave] for seed in seeds}


@dataclass(frozen=True)
class Reproduction:
    """A finished reproduction: the paper module's run, the files written and the wall time."""

    paper: str
    run: PaperRun
    files: dict[str, Path]
    seconds: float
    #: Wall seconds per phase (:class:`Phases`), the report's writing included.
    phases: dict[str, float] = field(default_factory=dict)


def paper_module(paper: str) -> Any:
    """The module ``wattsched.reproduce.paperNNN``; a :class:`ReproduceError` if the paper is unknown or this
    version has no reproduction for it (an import error *inside* the module still propagates: that is a bug)."""
    if paper not in PAPERS:
        raise ReproduceError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    name = f"wattsched.reproduce.paper{paper}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise ReproduceError(
            f"paper {paper} has no reproduction in this version of wattsched (no module {name})"
        ) from None


def prepare_output(out: Path) -> None:
    """Create the output folder, or a :class:`ReproduceError` saying why it cannot be one."""
    if out.exists() and not out.is_dir():
        raise ReproduceError(f"the output {out} exists and is not a folder; give a folder with --output")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReproduceError(f"cannot create the output folder {out}: {exc.strerror or exc}") from None


def stop_workers(timeout: float = 5.0) -> int:
    """End the worker processes this process started (``multiprocessing`` children: the local process pools of
    a build or a campaign), so an interrupted reproduction leaves none behind. Returns how many were running."""
    return stop_children(timeout)


def check_complete(paper: str, results: list[ClaimResult]) -> None:
    """Every claim of the catalogue has exactly one result, and nothing else is reported."""
    expected = [c.id for c in catalogue(paper)]
    got = [r.id for r in results]
    missing = [i for i in expected if i not in got]
    extra = [i for i in got if i not in expected]
    dupes = sorted({i for i in got if got.count(i) > 1})
    if missing or extra or dupes:
        raise ReproduceError(
            f"paper {paper}'s reproduction is incomplete: missing {missing or 'none'}, unknown {extra or 'none'}, "
            f"repeated {dupes or 'none'}"
        )


def reproduce(
    paper: str,
    out: Path,
    *,
    quick: bool = False,
    seeds: tuple[int, ...] = (0, 1, 2),
    workers: int = 1,
    data_dir: Path | None = None,
    command: str = "",
    step: Callable[[str], None] | None = None,
    track_fn: Callable[[Iterable[Any], int, str], Iterator[Any]] | None = None,
    options: Mapping[str, str] | None = None,
) -> Reproduction:
    """Run paper ``paper``'s experiment into ``out`` and write its report (see the module docstring).

    ``options`` are the paper's own settings (the module's ``OPTIONS``: name → what it sets, with its default):
    a reading of the paper or a budget that a user may change without editing code."""
    phases = Phases()
    phases.enter("importing the paper's modules")
    module = paper_module(paper)
    if not seeds:
        raise ReproduceError("at least one seed is needed")
    known: Mapping[str, str] = getattr(module, "OPTIONS", {})
    unknown = sorted(set(options or {}) - set(known))
    if unknown:
        listed = "; ".join(f"{k}: {v}" for k, v in known.items()) or "none"
        raise ReproduceError(f"paper {paper} has no option {', '.join(unknown)} (its options: {listed})")
    prepare_output(out)
    ctx = ReproduceContext(
        paper,
        out,
        quick,
        tuple(seeds),
        max(1, workers),
        data_dir,
        step or (lambda message: None),
        track_fn,
        dict(options or {}),
        phases,
    )
    t0 = time.perf_counter()
    phases.enter("run (not split by the paper module)")
    with shared_workers():  # one set of workers for every fan-out of the run (core.executors)
        run = module.run(ctx)
    seconds = time.perf_counter() - t0
    phases.enter("judging the claims (seed rule)")
    order = {c.id: k for k, c in enumerate(catalogue(paper))}
    check_complete(paper, run.claims)
    run.claims = judge_seeds(run.claims, run.per_seed)
    run.claims.sort(key=lambda r: order[r.id])
    for alt in run.alternatives:
        alt.claims = sorted(judge_seeds(alt.claims, alt.per_seed), key=lambda r: order[r.id])
    files = write_report(ctx, run, seconds=seconds, command=command)
    return Reproduction(paper, run, files, seconds, phases.close())
