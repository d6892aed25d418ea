"""The papers' result claims and the verdicts our runs give them.

The catalogue (``claims/NNN.toml``, one file per paper) holds what the paper says: the claim, the paper's value as
text and, where it is a number, as ``target``. Everything on our side of a verdict is computed by a paper's
reproduction module from its run, through the four constructors here (``check_number``, ``check_order``,
``check_exact``, ``not_checkable``), so no report value is typed in by hand.

The tolerance of a ``number`` claim (decision register, "claim tolerance"): our mean holds the paper's value when
``|ours − paper| ≤ max(tolerance, REL_TOLERANCE·|paper|)``, with ``tolerance`` the claim's own absolute band
(default 2 percentage points for ``%`` claims, 0 otherwise). 25% relative is the spread seen between seeds of one
synthetic workload in the paper-000 campaign; a paper's single number cannot be held to less than that.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

Verdict = Literal["holds", "differs", "not checkable"]
VERDICTS: tuple[Verdict, ...] = ("holds", "differs", "not checkable")
KINDS = ("exact", "number", "order", "data")
PAPERS = ("000", "001", "002", "003", "004")
#: Papers whose reproduction runs in one process (``reproduce/paper004.py`` takes no workers: its RMAP grid is
#: seconds long), so that the CLI warns that ``--workers`` is ignored for them.
SERIAL_PAPERS = ("004",)

#: Relative half-width of the band in which a ``number`` claim holds (see the module docstring).
REL_TOLERANCE = 0.25
#: Default absolute half-width per unit.
ABS_TOLERANCE = {"%": 2.0}


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
    tolerance: float | None = None

    def band(self, target: float) -> float:
        """Half-width of the band around ``target`` in which our value holds."""
        absolute = self.tolerance if self.tolerance is not None else ABS_TOLERANCE.get(self.unit, 0.0)
        return max(absolute, REL_TOLERANCE * abs(target))


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
                tolerance=row.get("tolerance"),
            )
        )
    return data["title"], tuple(claims)


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


@dataclass(frozen=True)
class ClaimResult:
    """Our side of one claim: the value (computed from the run), the verdict and why."""

    id: str
    verdict: Verdict
    ours_text: str
    note: str = ""
    value: float | list[float] | bool | None = None
    spreads: Mapping[str, Spread] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"{self.id}: verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.verdict != "holds" and not self.note:
            raise ValueError(f"{self.id}: a '{self.verdict}' verdict needs a note saying why")

    def record(self) -> dict[str, Any]:
        """The ``claims.json`` object of this claim (schema: reproduce/report.py ``ClaimRecord``)."""
        c = claim(self.id)
        return {
            "id": self.id,
            "paper": c.paper,
            "claim": c.claim,
            "kind": c.kind,
            "paper_value": c.paper_value,
            "ours": {
                "text": self.ours_text,
                "value": self.value,
                "spread": {label: s.as_json() for label, s in self.spreads.items()},
            },
            "verdict": self.verdict,
            "note": self.note,
        }


def check_number(
    claim_id: str,
    ours: Spread | Mapping[str, Spread],
    *,
    note: str = "",
    digits: int = 1,
    explain: str = "",
) -> ClaimResult:
    """Compare our value(s) with the paper's ``target``: one :class:`Spread`, or one per catalogue label (same
    order). Holds when every mean lies in its band (``Claim.band``). ``explain`` is added to the note when the
    claim differs (the investigation's finding: a measurement or the reason)."""
    c = claim(claim_id)
    if not c.target:
        raise ValueError(f"{claim_id} has no numeric target in the catalogue")
    spreads = dict(ours) if isinstance(ours, Mapping) else {c.labels[0] if c.labels else "value": ours}
    if len(spreads) != len(c.target):
        raise ValueError(f"{claim_id}: {len(c.target)} value(s) expected ({', '.join(c.labels)}), got {len(spreads)}")
    parts, offs = [], []
    for (label, spread), target in zip(spreads.items(), c.target, strict=True):
        diff = spread.mean - target
        ok = abs(diff) <= c.band(target)
        prefix = f"{label}: " if len(spreads) > 1 else ""
        parts.append(prefix + spread.text(c.unit, digits))
        if not ok:
            unit = "pp" if c.unit == "%" else c.unit
            band = c.band(target)
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


def check_exact(claim_id: str, ok: bool, ours: str, *, note: str = "", value: Any = None) -> ClaimResult:
    """A worked example or a deterministic number: equal, or it differs (``note`` says by how much)."""
    return ClaimResult(claim_id, "holds" if ok else "differs", ours, note, value if value is not None else bool(ok))


def not_checkable(claim_id: str, reason: str, *, ours: str = "—") -> ClaimResult:
    """Only where the data is not available offline: ``reason`` says what is missing."""
    return ClaimResult(claim_id, "not checkable", ours, reason)
