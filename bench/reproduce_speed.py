"""Issue 32, item 1: each paper's reproduction against its wall-time target, with the phase table of the run.

    .venv/bin/python bench/reproduce_speed.py                      # every paper, --quick
    .venv/bin/python bench/reproduce_speed.py --full 002 003 004   # these papers' full settings too
    .venv/bin/python bench/reproduce_speed.py --no-record 000      # print only

Targets (issue 32): every ``--quick`` ≤ 30 s wall and every full setting ≤ 5 min (paper 000 full ≤ 2 min) on an
idle 2-core machine, paper 001's CPH budget counted apart: its CP-SAT time (the ``cp_total_s`` of the CPH runs,
summed over the workers) is the paper's fixed budget per solve, so the row also gives the wall time less that
CP time divided by the workers. Each run is a fresh output folder (finished runs are reused otherwise), seeds 0–2,
the CPU count as workers, one reproduction at a time. The phase table is the run's own (``Reproduction.phases``,
also in ``claims.json``), so a row says where the time went; the load average at both ends says how busy the
machine was (a shared machine inflates every figure). Rows go to ``bench/results/targets/reproduce_speed.json``
(``bench/targets.py``) with the figures measured before issue 32 in the note.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from targets import Target, record
from wattsched.core.data_folder import shared_data_dir
from wattsched.reproduce import PAPERS, reproduce

#: (paper, setting) → wall target in seconds (issue 32, item 1).
TARGETS = {(p, "quick"): 30.0 for p in PAPERS} | {(p, "full"): 300.0 for p in PAPERS} | {("000", "full"): 120.0}
#: Before issue 32 (docs/performance.md): idle figures of issue 14 and the loaded ones of issue 27.
BEFORE = {
    ("000", "quick"): "70 s idle (issue 14), 222 s at load 2.9 (issue 27)",
    ("000", "full"): "503 s idle (issue 14), 1,071 s at load 3.2",
    ("001", "quick"): "67 s idle (issue 14), 583 s at load 6.9",
    ("001", "full"): "4,755 s at load 3.8 (its idle estimate, 20–25 min, was wrong: 4,117 s idle in issue 32)",
    ("002", "quick"): "16 s idle (issue 14), 194 s at load 6.9",
    ("002", "full"): "51 s idle (issue 14), 418 s at load 6.7",
    ("003", "quick"): "7 s idle (issue 14), 47 s loaded",
    ("003", "full"): "103 s idle (issue 14), 292 s at load 5.4",
    ("004", "quick"): "9 s idle (issue 14), 208 s loaded",
    ("004", "full"): "36 s idle (issue 14), 139 s at load 4.2",
}


def measure(paper: str, full: bool, data: Path) -> tuple[Target, dict[str, float]]:
    """Run one reproduction in a fresh folder; its target row and phase table."""
    setting = "full" if full else "quick"
    workers = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        load0, cpu0, t0 = os.getloadavg()[0], _cpu(), time.perf_counter()
        result = reproduce(paper, Path(tmp) / "out", quick=not full, seeds=(0, 1, 2), workers=workers, data_dir=data)
        wall, cpu, load = time.perf_counter() - t0, _cpu() - cpu0, max(load0, os.getloadavg()[0])
    note = f"{cpu:.0f} CPU s, load {load:.1f} (shared machine); before: {BEFORE[(paper, setting)]}"
    measured = wall
    if "cp_total_s" in result.run.results.columns:  # paper 001: CPH's CP time is the paper's budget, apart
        cp = float(result.run.results["cp_total_s"].fill_null(0).sum())
        measured = max(0.0, wall - cp / workers)
        note = f"{wall:.0f} s wall less CPH's CP time {cp:.0f} s / {workers} workers; " + note
    what = f"reproduce {paper}{' --quick' if not full else ''} wall" + (" (CPH apart)" if paper == "001" else "")
    return Target(what, round(measured, 1), TARGETS[(paper, setting)], "s", note=note), result.phases


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the reproduction's worker processes)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def phase_table(phases: dict[str, float]) -> str:
    """The phase table as markdown rows (phase, wall s, share)."""
    total = sum(phases.values()) or 1.0
    rows = [f"| {name} | {sec:,.1f} | {sec / total:.0%} |" for name, sec in phases.items()]
    return "\n".join(["| phase | wall s | share |", "|---|---:|---:|", *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("papers", nargs="*", default=list(PAPERS), help="papers to run (default: all)")
    parser.add_argument("--full", nargs="*", default=[], help="papers whose full setting runs too")
    parser.add_argument("--data", type=Path, default=None, help="shared data folder (default: ../shared/data)")
    parser.add_argument("--no-record", action="store_true", help="print only; do not write the targets file")
    args = parser.parse_args()
    data = args.data or shared_data_dir() or Path(__file__).resolve().parents[2] / "shared" / "data"
    rows = []
    todo = [(p.zfill(3), False) for p in args.papers] + [(p.zfill(3), True) for p in args.full]
    for paper, full in todo:
        row, phases = measure(paper, full, data)
        rows.append(row)
        print(f"\n{row.what}: {row.measured:.1f} s (target ≤ {row.target:.0f} s) — {row.note}", flush=True)
        print(phase_table(phases), flush=True)
    if not args.no_record:
        print(record("reproduce_speed", rows))


if __name__ == "__main__":
    main()
