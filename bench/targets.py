"""The benchmarks' shared record of targets: each benchmark states what it measured against which target.

`make bench` (bench/run_all.py) prints one table from these records at the end, so every target of the
performance issues is visible in one place: met, or missed with the gap explained by measured counters.

A benchmark calls :func:`record` once with all its rows; the rows land in ``bench/results/targets/<bench>.json``
(overwritten on every run, so the table always shows the latest measurement).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "targets"


@dataclass(frozen=True)
class Target:
    """One measured figure against its target.

    ``lower_is_better`` says which side of ``target`` meets it (seconds, bytes: lower; runs per second: higher).
    A ``target`` of NaN marks a figure the issue asks to state without a target (printed as "stated").
    ``note`` explains a miss (with the counters that explain it) or qualifies a hit; keep it to one line.
    """

    what: str
    measured: float
    target: float
    unit: str
    lower_is_better: bool = True
    note: str = ""

    @property
    def met(self) -> bool:
        if math.isnan(self.target):
            return True
        return self.measured <= self.target if self.lower_is_better else self.measured >= self.target


def record(bench: str, rows: list[Target]) -> Path:
    """Write this benchmark's rows (replacing its previous record) and return the file written."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{bench}.json"
    payload = [{**asdict(row), "met": row.met} for row in rows]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)
    return path


def _fmt(value: float) -> str:
    if value == 0 or 0.01 <= abs(value) < 1e6:
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:.3g}"


def table() -> str:
    """All recorded targets as one Markdown table (bench, what, measured, target, met, note)."""
    lines = ["| bench | what | measured | target | met | note |", "|---|---|---:|---:|:-:|---|"]
    for path in sorted(RESULTS.glob("*.json")):
        for row in json.loads(path.read_text()):
            sign = "≤" if row["lower_is_better"] else "≥"
            stated = math.isnan(row["target"])
            target = "stated" if stated else f"{sign} {_fmt(row['target'])} {row['unit']}"
            met = "–" if stated else "yes" if row["met"] else "**no**"
            measured = f"{_fmt(row['measured'])} {row['unit']}"
            lines.append(f"| {path.stem} | {row['what']} | {measured} | {target} | {met} | {row['note']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
