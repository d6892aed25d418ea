"""The papers' result claims and the verdict rules our runs are judged by (docs/reproduce.md, "Verdicts").

The catalogue (``claims/NNN.toml``, one file per paper) holds what the paper says: the claim, the paper's value as
text and, where it is a number, as ``target``, with the claim's own ``tolerance`` (``rel``, ``abs`` and the
``basis`` that justifies it: the paper's wording, our measured seed spread, or a stated reason). Everything on our
side of a verdict is computed by a paper's reproduction module from its run, through the constructors here, so no
report value is typed in by hand:

- ``check_number``: our pooled value against the paper's, within the claim's tolerance;
- ``check_order``: a ranking or direction, decided by the run;
- ``check_parts``: a claim the paper states as an order *and* numbers; each part judged apart (``parts``), the
  claim holds only if every part does;
- ``check_overlap``: a claim the paper states as "cannot be told apart": holds when our values' ranges overlap;
- ``check_exact``: a worked example or a deterministic number;
- ``check_setup``: a check of the configuration, the inputs or of another claim; shown apart, not a result;
- ``not_checkable``: the claim's data is not available offline; the value computed on the stand-in is shown.

A reproduction computes every claim twice over: once on all its seeds pooled, and once on each seed alone.
:func:`judge_seeds` then gives the verdict (the seed rule): ``holds`` when the pooled value holds and at least
two thirds of the seeds hold; ``differs`` when the pooled value differs and at most a third of the seeds hold;
``unstable`` otherwise (the seeds disagree). A claim judged on one seed is judged by that seed alone.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any, Literal

Verdict = Literal["holds", "differs", "unstable", "not checkable"]
VERDICTS: tuple[Verdict, ...] = ("holds", "differs", "unstable", "not checkable")
#: ``setup`` claims check a configuration, an input or another claim: shown apart, never counted as results.
KINDS = ("exact", "number", "order", "data", "setup")
#: Kinds whose value does not depend on the seed: judged once, not per seed.
SEED_FREE_KINDS = ("exact", "setup")
PAPERS = ("000", "001", "002", "003", "004")
#: The seed rule's majority: a claim holds (differs) only if at least this share of its seeds hold (differ).
SEED_MAJORITY = 2 / 3


@dataclass(frozen=True)
class Tolerance:
    """How far our value may lie from the paper's and still hold it: ``max(abs, rel·|paper|)``, and why.

    ``abs`` is one number, or one per label of the claim (a claim's labels can differ in spread: the seed-spread
    bands are measured per label)."""

    rel: float
    abs: float | tuple[float, ...]
    basis: str

    def absolute(self, index: int = 0) -> float:
        return self.abs[index] if isinstance(self.abs, tuple) else self.abs

    def band(self, target: float, index: int = 0) -> float:
        """Half-width of the band around ``target`` (the claim's ``index``-th label) in which our value holds."""
        return max(self.absolute(index), self.rel * abs(target))

    def as_json(self) -> dict[str, Any]:
        return {
            "rel": self.rel,
            "abs": list(self.abs) if isinstance(self.abs, tuple) else self.abs,
            "basis": self.basis,
        }


@dataclass(frozen=True)
class Claim:
    """One result claim of a paper, as the catalogue ``reproduce/claims/NNN.toml`` lists it (docs/reproduce.md)."""

    id: str
    paper: str
    claim: str
    paper_value: str
    kind: str
    where: str
    target: tuple[float, ...] = ()
    labels: tuple[str, ...] = ()
    unit: str = ""
    tolerance: Tolerance | None = None

    def band(self, target: float, index: int = 0) -> float:
        """Half-width of the band around ``target`` (label ``index``) in which our value holds (the claim's own
        tolerance)."""
        if self.tolerance is None:
            raise ValueError(f"{self.id} has no tolerance in the catalogue")
        return self.tolerance.band(target, index)


@cache
def paper_title(paper: str) -> str:
    return _load(paper)[0]


@cache
def catalogue(paper: str) -> tuple[Claim, ...]:
    """The claims of ``paper`` (``"000"`` … ``"004"``), in the catalogue's order."""
    return _load(paper)[1]


def claim(claim_id: str) -> Claim:
    paper = claim_id[1:4]
    for c in catalogue(paper):
        if c.id == claim_id:
            return c
    raise KeyError(f"no claim {claim_id!r} in paper {paper}'s catalogue")


def _load(paper: str) -> tuple[str, tuple[Claim, ...]]:
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    text = resources.files("wattsched.reproduce").joinpath("claims", f"{paper}.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    claims = []
    for row in data["claims"]:
        target = row.get("target", ())
        target = (float(target),) if isinstance(target, int | float) else tuple(float(t) for t in target)
        if row["kind"] not in KINDS:
            raise ValueError(f"{row['id']}: kind must be one of {KINDS}, got {row['kind']!r}")
        claims.append(
            Claim(
                id=row["id"],
                paper=paper,
                claim=row["claim"],
                paper_value=row["paper_value"],
                kind=row["kind"],
                where=row["where"],
                target=target,
                labels=tuple(row.get("labels", ())),
                unit=row.get("unit", ""),
                tolerance=_tolerance(row),
            )
        )
    return data["title"], tuple(claims)


def _tolerance(row: Mapping[str, Any]) -> Tolerance | None:
    """The catalogue row's ``tolerance = {rel, abs, basis}``; required wherever the row has a numeric target that
    a verdict compares with (``number`` claims, and ``order`` claims whose paper also gives the numbers)."""
    tol = row.get("tolerance")
    if tol is None:
        if row["kind"] == "number" or (row["kind"] == "order" and "target" in row):
            raise ValueError(f"{row['id']}: a claim with a target needs its own tolerance = {{rel, abs, basis}}")
        return None
    if not isinstance(tol, Mapping) or not str(tol.get("basis", "")).strip():
        raise ValueError(f"{row['id']}: tolerance must be a table {{rel, abs, basis}} with a non-empty basis")
    raw = tol.get("abs", 0.0)
    absolute: float | tuple[float, ...] = tuple(float(x) for x in raw) if isinstance(raw, list) else float(raw)
    n = len(row.get("target", ())) if isinstance(row.get("target"), list) else 1
    if isinstance(absolute, tuple) and len(absolute) != n:
        raise ValueError(f"{row['id']}: tolerance abs has {len(absolute)} values for {n} label(s)")
    return Tolerance(float(tol.get("rel", 0.0)), absolute, str(tol["basis"]))


@dataclass(frozen=True)
class Spread:
    """A value over several seeds, windows or instances: what the report shows as ``mean (min–max, n over)``."""

    values: tuple[float, ...]
    over: str = "seeds"

    @classmethod
    def of(cls, values: Sequence[float] | Any, over: str = "seeds") -> Spread:
        vals = tuple(float(v) for v in values)
        if not vals:
            raise ValueError("a spread needs at least one value")
        return cls(vals, over)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return math.fsum(self.values) / len(self.values)

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)

    @property
    def std(self) -> float:
        if len(self.values) < 2:
            return 0.0
        m = self.mean
        return math.sqrt(math.fsum((v - m) ** 2 for v in self.values) / (len(self.values) - 1))

    def text(self, unit: str = "", digits: int = 1) -> str:
        u = unit if unit in ("%", "") else f" {unit}"
        if self.n == 1:
            return f"{self.mean:.{digits}f}{u}"
        return f"{self.mean:.{digits}f}{u} ({self.min:.{digits}f}–{self.max:.{digits}f}, {self.n} {self.over})"

    def as_json(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "min": self.min,
            "max": self.max,
            "std": self.std,
            "n": self.n,
            "over": self.over,
            "values": list(self.values),
        }


Value = float | list[float] | bool | None


@dataclass(frozen=True)
class SeedVerdict:
    """One seed's value and verdict of a claim (the claim computed on that seed's runs alone)."""

    seed: int
    value: Value
    verdict: Verdict
    parts: Mapping[str, Verdict] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seed": self.seed, "value": self.value, "verdict": self.verdict}
        if self.parts:
            out["parts"] = dict(self.parts)
        return out


@dataclass(frozen=True)
class ClaimResult:
    """Our side of one claim: the value (computed from the run), the verdict and why.

    ``parts`` (order and numbers judged apart) and ``per_seed`` (the claim on each seed alone) are filled by
    :func:`check_parts` and :func:`judge_seeds`; ``stand_in`` marks a value computed on stand-in data."""

    id: str
    verdict: Verdict
    ours_text: str
    note: str = ""
    value: Value = None
    spreads: Mapping[str, Spread] = field(default_factory=dict)
    parts: Mapping[str, Verdict] = field(default_factory=dict)
    per_seed: tuple[SeedVerdict, ...] = ()
    stand_in: bool = False

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"{self.id}: verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.verdict != "holds" and not self.note:
            raise ValueError(f"{self.id}: a '{self.verdict}' verdict needs a note saying why")
        for name, v in self.parts.items():
            if v not in VERDICTS:
                raise ValueError(f"{self.id}: part {name!r} has verdict {v!r}")

    @property
    def kind(self) -> str:
        return claim(self.id).kind

    def record(self) -> dict[str, Any]:
        """The ``claims.json`` object of this claim (schema: reproduce/report.py ``ClaimRecord``)."""
        c = claim(self.id)
        return {
            "id": self.id,
            "paper": c.paper,
            "claim": c.claim,
            "kind": c.kind,
            "paper_value": c.paper_value,
            "target": list(c.target),
            "labels": list(c.labels),
            "unit": c.unit,
            "tolerance": c.tolerance.as_json() if c.tolerance else None,
            "ours": {
                "text": self.ours_text,
                "value": self.value,
                "spread": {label: s.as_json() for label, s in self.spreads.items()},
                "stand_in": self.stand_in,
            },
            "per_seed": [s.as_json() for s in self.per_seed],
            "parts": dict(self.parts),
            "verdict": self.verdict,
            "note": self.note,
        }


def _unit_text(unit: str) -> str:
    return "pp" if unit == "%" else unit


def check_number(
    claim_id: str,
    ours: Spread | Mapping[str, Spread],
    *,
    note: str = "",
    digits: int = 1,
    explain: str = "",
) -> ClaimResult:
    """Compare our value(s) with the paper's ``target``: one :class:`Spread`, or one per catalogue label (same
    order). Holds when every mean lies in the claim's band (``Claim.band``, from its catalogue ``tolerance``).
    ``explain`` is added to the note when the claim differs (the investigation's finding: a measurement or the
    reason)."""
    c = claim(claim_id)
    if not c.target:
        raise ValueError(f"{claim_id} has no numeric target in the catalogue")
    spreads = dict(ours) if isinstance(ours, Mapping) else {c.labels[0] if c.labels else "value": ours}
    if len(spreads) != len(c.target):
        raise ValueError(f"{claim_id}: {len(c.target)} value(s) expected ({', '.join(c.labels)}), got {len(spreads)}")
    parts, offs = [], []
    for k, ((label, spread), target) in enumerate(zip(spreads.items(), c.target, strict=True)):
        diff = spread.mean - target
        band = c.band(target, k)
        ok = abs(diff) <= band
        prefix = f"{label}: " if len(spreads) > 1 else ""
        parts.append(prefix + spread.text(c.unit, digits))
        if not ok:
            unit = _unit_text(c.unit)
            offs.append(f"{prefix}{diff:+.{digits}f} {unit} from the paper's {target:g} (band ±{band:.{digits}f})")
    verdict: Verdict = "differs" if offs else "holds"
    text_note = "; ".join(x for x in ((note,) + (("; ".join(offs), explain) if offs else ())) if x)
    values = [s.mean for s in spreads.values()]
    return ClaimResult(
        claim_id, verdict, "; ".join(parts), text_note, values[0] if len(values) == 1 else values, spreads
    )


def check_order(
    claim_id: str,
    holds: bool,
    ours: str,
    *,
    note: str = "",
    explain: str = "",
    spreads: Mapping[str, Spread] | None = None,
) -> ClaimResult:
    """A ranking or direction: ``holds`` computed from the run, ``ours`` the measured values that decide it."""
    if not holds and not (note or explain):
        raise ValueError(f"{claim_id}: an order claim that differs needs the measured difference in the note")
    full = "; ".join(x for x in (note, "" if holds else explain) if x)
    return ClaimResult(claim_id, "holds" if holds else "differs", ours, full, bool(holds), dict(spreads or {}))


def check_parts(claim_id: str, **parts: ClaimResult) -> ClaimResult:
    """A claim the paper states as an order and as numbers (``order=check_order(...)``,
    ``numbers=check_number(...)`` built for the same ``claim_id``): each part keeps its verdict in ``parts``, and
    the claim holds only if every part does (:func:`worst`)."""
    if not parts:
        raise ValueError(f"{claim_id}: check_parts needs at least one part")
    for name, part in parts.items():
        if part.id != claim_id:
            raise ValueError(f"{claim_id}: part {name!r} was computed for {part.id}")
    verdict = worst(p.verdict for p in parts.values())
    text = "; ".join(f"{name}: {p.ours_text}" for name, p in parts.items())
    note = "; ".join(f"{name}: {p.note}" for name, p in parts.items() if p.note)
    numbers = parts.get("numbers")
    spreads: dict[str, Spread] = {}
    for p in parts.values():
        spreads.update(p.spreads)
    return ClaimResult(
        claim_id,
        verdict,
        text,
        note,
        numbers.value if numbers is not None else None,
        spreads,
        parts={name: p.verdict for name, p in parts.items()},
    )


def check_overlap(claim_id: str, spreads: Mapping[str, Spread], *, note: str = "", digits: int = 1) -> ClaimResult:
    """A claim that the paper states as "cannot be told apart": holds when the ranges (min–max) of our values
    overlap, all of them at one point at least; a strict order between their means decides nothing. With one value
    each (a run on one seed) there is no range to compare: ``unstable``, and the note says so."""
    if len(spreads) < 2:
        raise ValueError(f"{claim_id}: an overlap needs at least two values")
    c = claim(claim_id)
    ours = "; ".join(f"{k} {s.text(c.unit, digits)}" for k, s in spreads.items())
    if all(s.n < 2 for s in spreads.values()):
        why = "one value each: an overlap needs a spread, so this run (one seed) cannot tell; run on several seeds"
        return ClaimResult(claim_id, "unstable", ours, "; ".join(x for x in (note, why) if x), None, dict(spreads))
    low = max(s.min for s in spreads.values())
    high = min(s.max for s in spreads.values())
    ok = low <= high
    why = "" if ok else f"the ranges do not overlap: the highest minimum {low:.{digits}f} > the lowest maximum "
    why += "" if ok else f"{high:.{digits}f}"
    full = "; ".join(x for x in (note, why) if x)
    return ClaimResult(claim_id, "holds" if ok else "differs", ours, full, bool(ok), dict(spreads))


def check_exact(claim_id: str, ok: bool, ours: str, *, note: str = "", value: Any = None) -> ClaimResult:
    """A worked example or a deterministic number: equal, or it differs (``note`` says by how much)."""
    return ClaimResult(claim_id, "holds" if ok else "differs", ours, note, value if value is not None else bool(ok))


def check_setup(claim_id: str, ok: bool, ours: str, *, note: str = "", value: Any = None) -> ClaimResult:
    """A ``setup`` claim (a configuration, an input table, or another claim's cells): right or not, shown apart."""
    if claim(claim_id).kind != "setup":
        raise ValueError(f"{claim_id} is not a setup claim in the catalogue")
    if not ok and not note:
        raise ValueError(f"{claim_id}: a setup check that fails needs a note")
    return ClaimResult(claim_id, "holds" if ok else "differs", ours, note, value if value is not None else bool(ok))


def not_checkable(claim_id: str, reason: str, *, ours: str = "—", stand_in: str | Spread | None = None) -> ClaimResult:
    """Only where the data is not available offline: ``reason`` says what is missing. ``stand_in`` is what we
    computed on the stand-in data (shown as ``stand-in: …``, the same way in every paper, never judged)."""
    if stand_in is None:
        return ClaimResult(claim_id, "not checkable", ours, reason)
    c = claim(claim_id)
    text = stand_in.text(c.unit) if isinstance(stand_in, Spread) else stand_in
    value = stand_in.mean if isinstance(stand_in, Spread) else None
    spreads = {"stand-in": stand_in} if isinstance(stand_in, Spread) else {}
    return ClaimResult(claim_id, "not checkable", f"stand-in: {text}", reason, value, spreads, stand_in=True)


#: How bad a verdict is, for combining parts: a claim is as good as its worst part.
_SEVERITY: dict[Verdict, int] = {"holds": 0, "unstable": 1, "differs": 2, "not checkable": 3}


def worst(verdicts: Sequence[Verdict] | Any) -> Verdict:
    """The worst of ``verdicts`` (holds < unstable < differs < not checkable)."""
    return max(verdicts, key=lambda v: _SEVERITY[v])


def seed_rule(pooled: Verdict, seeds: Sequence[Verdict]) -> Verdict:
    """The verdict of a claim from its pooled verdict and its per-seed verdicts (module docstring).

    Seeds whose verdict is ``not checkable`` do not vote. With no seed to vote, the pooled verdict stands."""
    votes = [v for v in seeds if v in ("holds", "differs", "unstable")]
    if pooled not in ("holds", "differs") or not votes:
        return pooled
    share = sum(v == "holds" for v in votes) / len(votes)
    if pooled == "holds" and share >= SEED_MAJORITY - 1e-9:
        return "holds"
    if pooled == "differs" and share <= 1 - SEED_MAJORITY + 1e-9:
        return "differs"
    return "unstable"


def _seed_value(r: ClaimResult) -> Value:
    v = r.value
    if isinstance(v, float | int | bool) or v is None:
        return v
    return [float(x) for x in v]


def judge_seeds(pooled: Sequence[ClaimResult], per_seed: Mapping[int, Sequence[ClaimResult]]) -> list[ClaimResult]:
    """Each pooled result with its per-seed values and the seed rule's verdict (:func:`seed_rule`).

    ``per_seed`` maps a seed to the claims computed on that seed's runs alone (a paper module may leave out a
    claim it cannot compute on one seed: a stand-in, a worked example). Claims of :data:`SEED_FREE_KINDS` and
    ``not checkable`` ones keep their pooled verdict. With parts, each part is judged by the seed rule, and so is
    the whole claim; the claim is the worst of these."""
    out = []
    for r in pooled:
        seeds = sorted(
            ((seed, x) for seed, results in per_seed.items() for x in results if x.id == r.id), key=lambda t: t[0]
        )
        if r.verdict == "not checkable" or claim(r.id).kind in SEED_FREE_KINDS or not seeds:
            rows = tuple(SeedVerdict(s, _seed_value(x), x.verdict, dict(x.parts)) for s, x in seeds)
            out.append(replace(r, per_seed=rows))
            continue
        rows = tuple(SeedVerdict(s, _seed_value(x), x.verdict, dict(x.parts)) for s, x in seeds)
        if r.parts:
            parts = {
                name: seed_rule(v, [x.parts.get(name, x.verdict) for _, x in seeds]) for name, v in r.parts.items()
            }
            # each part by the seed rule, and the whole claim too: parts that hold on different seeds do not make
            # a claim that holds on most of them
            whole = seed_rule(r.verdict, [x.verdict for _, x in seeds])
            verdict = worst([*parts.values(), whole])
        else:
            parts = {}
            verdict = seed_rule(r.verdict, [x.verdict for _, x in seeds])
        held = sum(x.verdict == "holds" for _, x in seeds)
        note = r.note
        if verdict != r.verdict or held not in (0, len(seeds)):
            which = ", ".join(f"{s}: {x.verdict}" for s, x in seeds)
            tally = f"pooled {r.verdict}; holds on {held} of {len(seeds)} seeds ({which})"
            note = "; ".join(x for x in (tally, note) if x)
        out.append(replace(r, verdict=verdict, note=note, per_seed=rows, parts=parts or r.parts))
    return out
