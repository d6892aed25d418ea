"""A reproduction's files: ``results.parquet``, ``claims.json``, ``paper_vs_ours.png``/``.svg``, ``REPORT.md`` and
``REPORT.html``.

``claims.json`` is read back and validated by :func:`read_claims` (the schema is :class:`ClaimsFile`), so every
format written here is also read here. The report is generated from the claim results only: it holds no number
that the paper module did not compute from its run. A note segment that several claims share (a long explanation
of one mechanism) is written once, under "Shared notes", and referenced from each claim as ``[Nk]``.
"""

from __future__ import annotations

import json
import platform
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from wattsched.core.store import atomic_parquet, atomic_write
from wattsched.reproduce.claims import KINDS, VERDICTS, ClaimResult, catalogue, claim, paper_title
from wattsched.reproduce.report_render import html_report, markdown_report

if TYPE_CHECKING:
    from wattsched.reproduce.runner import PaperRun, ReproduceContext

#: 2: per-claim tolerance, per-seed verdicts, parts, the ``unstable`` verdict, ``setup`` claims counted apart,
#: alternative readings, sensitivity rows and shared notes (issue 27). Version 1 files are not read.
SCHEMA_VERSION = 2
#: A note segment at least this long that two or more claims share is written once (``shared_notes``).
SHARED_NOTE_CHARS = 160


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpreadRecord(_Strict):
    mean: float
    min: float
    max: float
    std: float = Field(ge=0)
    n: int = Field(ge=1)
    over: str
    values: list[float]


class OursRecord(_Strict):
    text: str = Field(min_length=1)
    value: float | list[float] | bool | None
    spread: dict[str, SpreadRecord]
    stand_in: bool = False


class ToleranceRecord(_Strict):
    rel: float = Field(ge=0)
    abs: float | list[float]
    basis: str = Field(min_length=1)


Verdicts = Literal[VERDICTS]  # type: ignore[valid-type]


class SeedRecord(_Strict):
    seed: int
    value: float | list[float] | bool | None
    verdict: Verdicts
    parts: dict[str, Verdicts] = Field(default_factory=dict)


class ClaimRecord(_Strict):
    """One object of ``claims.json``."""

    id: str = Field(pattern=r"^C00[0-4]-\d\d$")
    paper: Literal["000", "001", "002", "003", "004"]
    claim: str
    kind: Literal[KINDS]  # type: ignore[valid-type]
    paper_value: str
    target: list[float]
    labels: list[str]
    unit: str
    tolerance: ToleranceRecord | None
    ours: OursRecord
    per_seed: list[SeedRecord]
    parts: dict[str, Verdicts]
    verdict: Verdicts
    note: str


class AlternativeRecord(_Strict):
    name: str
    description: str
    claims: list[ClaimRecord]


class SensitivityRecord(_Strict):
    claim: str = Field(pattern=r"^C00[0-4]-\d\d$")
    change: str
    default: str
    variant: str
    effect: str


class ClaimsFile(_Strict):
    schema_version: Literal[2]
    paper: Literal["000", "001", "002", "003", "004"]
    title: str
    quick: bool
    seeds: list[int]
    seconds: float
    counts: dict[Verdicts, int]
    setup: dict[Verdicts, int]
    claims: list[ClaimRecord]
    alternatives: list[AlternativeRecord] = Field(default_factory=list)
    sensitivity: list[SensitivityRecord] = Field(default_factory=list)
    shared_notes: dict[str, str] = Field(default_factory=dict)
    #: Wall seconds per phase of the run (``runner.Phases``): where the time went; absent in older files.
    phases: dict[str, float] = Field(default_factory=dict)


def read_claims(path: Path) -> ClaimsFile:
    """Read and validate a ``claims.json`` (also checks it covers its paper's whole catalogue, and that its counts
    are the counts of its claims)."""
    data = ClaimsFile.model_validate_json(path.read_text(encoding="utf-8"))
    expected = [c.id for c in catalogue(data.paper)]
    got = [c.id for c in data.claims]
    if sorted(got) != sorted(expected):
        raise ValueError(f"{path}: claims {got} do not match paper {data.paper}'s catalogue {expected}")
    counts, setup = _tally([(c.kind, c.verdict) for c in data.claims])
    if counts != data.counts or setup != data.setup:
        raise ValueError(f"{path}: counts {data.counts} / setup {data.setup} are not those of its claims")
    return data


def _tally(rows: Sequence[tuple[str, str]]) -> tuple[dict[str, int], dict[str, int]]:
    results = Counter(v for k, v in rows if k != "setup")
    setup = Counter(v for k, v in rows if k == "setup")
    return {v: results.get(v, 0) for v in VERDICTS}, {v: setup.get(v, 0) for v in VERDICTS if setup.get(v, 0)}


def verdict_counts(results: Sequence[ClaimResult]) -> tuple[dict[str, int], dict[str, int]]:
    """Verdict counts of the result claims, and of the ``setup`` claims apart (these are not results)."""
    return _tally([(claim(r.id).kind, r.verdict) for r in results])


def share_notes(records: list[dict[str, Any]], *, prefix: str = "N") -> dict[str, str]:
    """Move every note segment (``; ``-separated) of at least :data:`SHARED_NOTE_CHARS` characters that two or
    more ``records`` share into the returned ``{key: text}``, replacing it in each note by ``see note [key]``."""
    seen: Counter[str] = Counter()
    for r in records:
        seen.update(set(s for s in r["note"].split("; ") if len(s) >= SHARED_NOTE_CHARS))
    shared = [s for s, n in seen.items() if n >= 2]
    keys = {s: f"{prefix}{k + 1}" for k, s in enumerate(sorted(shared, key=lambda s: min(_first(records, s))))}
    for r in records:
        r["note"] = "; ".join(f"see note [{keys[s]}]" if s in keys else s for s in r["note"].split("; "))
    return {k: s for s, k in keys.items()}


def _first(records: list[dict[str, Any]], segment: str) -> list[int]:
    return [k for k, r in enumerate(records) if segment in r["note"].split("; ")]


def write_report(ctx: ReproduceContext, run: PaperRun, *, seconds: float, command: str = "") -> dict[str, Path]:
    """Write every file of the reproduction (each atomically: an interrupted write leaves the previous file)."""
    from wattsched.report.claims_figure import plot_paper_vs_ours  # matplotlib only when writing

    out = ctx.out
    files = {
        "results": out / "results.parquet",
        "claims": out / "claims.json",
        "report": out / "REPORT.md",
        "html": out / "REPORT.html",
    }
    ctx.phase("writing the report (results.parquet, the paper-vs-ours figure, REPORT.md/html, claims.json)")
    atomic_parquet(run.results, files["results"])
    payload = claims_payload(ctx, run, seconds)
    figure = plot_paper_vs_ours(payload, out)
    files["paper_vs_ours"] = figure[0]
    meta = _meta(ctx, run, seconds, command)
    figures = [figure[0], *run.figures]
    atomic_write(files["report"], markdown_report(payload, meta, run.notes, figures, out))
    atomic_write(files["html"], html_report(payload, meta, run.notes, figures, out))
    # last, so that its phase table counts the report's writing (the figure, the two pages) too
    payload["phases"] = {k: round(v, 3) for k, v in ctx.phases.snapshot().items()}
    atomic_write(files["claims"], json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    read_claims(files["claims"])  # what we write, we read back
    return {k: files[k] for k in ("results", "claims", "report", "html", "paper_vs_ours")}


def claims_payload(ctx: ReproduceContext, run: PaperRun, seconds: float) -> dict[str, Any]:
    """The ``claims.json`` content of a finished run (schema :class:`ClaimsFile`)."""
    records = [r.record() for r in run.claims]
    alternatives: list[dict[str, Any]] = [
        {"name": a.name, "description": a.description, "claims": [r.record() for r in a.claims]}
        for a in run.alternatives
    ]
    every = records + [r for a in alternatives for r in a["claims"]]
    shared = share_notes(every)
    counts, setup = verdict_counts(run.claims)
    return {
        "schema_version": SCHEMA_VERSION,
        "paper": ctx.paper,
        "title": paper_title(ctx.paper),
        "quick": ctx.quick,
        "seeds": list(ctx.seeds),
        "seconds": round(seconds, 3),
        "counts": counts,
        "setup": setup,
        "claims": records,
        "alternatives": alternatives,
        "sensitivity": [
            {"claim": s.claim, "change": s.change, "default": s.default, "variant": s.variant, "effect": s.effect}
            for s in run.sensitivity
        ],
        "shared_notes": shared,
    }


def _meta(ctx: ReproduceContext, run: PaperRun, seconds: float, command: str) -> list[tuple[str, str]]:
    rows = [
        ("command", command or f"wattsched reproduce {ctx.paper}{' --quick' if ctx.quick else ''}"),
        ("setting", "quick (reduced; every shape, not the paper's scale)" if ctx.quick else "full"),
        ("seeds", ", ".join(str(s) for s in ctx.seeds)),
        ("run time", f"{seconds:.1f} s on {ctx.workers} worker(s)"),
        ("wattsched", version("wattsched")),
        ("python", f"{sys.version.split()[0]} on {platform.machine()}"),
        ("written", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
    ]
    rows.append(("phases", phase_line(ctx.phases.snapshot())))
    measured = measured_times(ctx.paper)
    if measured:
        rows.append(("measured wall times", measured))
    rows += [(str(k), _fmt(v)) for k, v in run.settings.items()]
    return rows


def phase_line(phases: dict[str, float]) -> str:
    """The phase table as one report line (``phase 12.3 s; …``), largest first."""
    return "; ".join(f"{name} {sec:,.1f} s" for name, sec in sorted(phases.items(), key=lambda kv: -kv[1]))


def measured_times(paper: str) -> str:
    """The quick and full wall times recorded for ``paper`` by ``bench/reproduce.py --record`` (timings.json),
    as a report line; empty when none is recorded."""
    path = resources.files("wattsched.reproduce").joinpath("timings.json")
    if not path.is_file():
        return ""
    data = json.loads(path.read_text(encoding="utf-8")).get(paper, {})
    parts = [
        f"{setting} {t['seconds']:,.0f} s wall, {t.get('cpu_seconds', 0):,.0f} CPU s (load {t.get('load', 0):.1f}, "
        f"{t['cpus']} CPUs, {t['date']})"
        for setting in ("quick", "full")
        if (t := data.get(setting))
    ]
    return "; ".join(parts) + " — bench/reproduce.py --record" if parts else ""


def _fmt(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)
