"""Wall time and verdicts of each paper's reproduction (docs/performance.md, "Reproductions").

    .venv/bin/python bench/reproduce.py                 # every paper, --quick
    .venv/bin/python bench/reproduce.py --full 002 004  # these papers at full scale

``--record`` writes each measured wall time into ``src/wattsched/reproduce/timings.json`` (paper → setting →
seconds, date, CPUs), which every report quotes ("measured wall times"), so a quick report also says how long
the full setting takes.

Each reproduction runs in a fresh output folder under a temporary directory (finished runs are reused otherwise;
``--keep DIR`` writes it to ``DIR/NNN-SETTING`` instead, to read its claims afterwards),
with seeds 0–2 and the CPU count as workers, and prints one markdown row: paper, setting, wall s, hold / differ /
unstable / not checkable (result claims; setup checks apart).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from datetime import date
from pathlib import Path

from wattsched.core.data_folder import shared_data_dir
from wattsched.reproduce import PAPERS, reproduce
from wattsched.reproduce.claims import VERDICTS
from wattsched.reproduce.report import verdict_counts

TIMINGS = Path(__file__).resolve().parents[1] / "src" / "wattsched" / "reproduce" / "timings.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("papers", nargs="*", default=list(PAPERS), help="papers to run (default: all)")
    parser.add_argument("--full", action="store_true", help="the full setting instead of --quick")
    parser.add_argument("--data", type=Path, default=None, help="shared data folder (default: ../shared/data)")
    parser.add_argument("--record", action="store_true", help="record the wall times in reproduce/timings.json")
    parser.add_argument("--keep", type=Path, default=None, help="keep each report in KEEP/NNN-SETTING (claims.json)")
    args = parser.parse_args()
    data = args.data or shared_data_dir() or Path(__file__).resolve().parents[2] / "shared" / "data"
    print("| paper | setting | wall s | hold / differ / unstable / not checkable | setup |\n|---|---|---|---|---|")
    for paper in args.papers:
        setting = "full" if args.full else "quick"
        with tempfile.TemporaryDirectory() as tmp:
            out = args.keep / f"{paper.zfill(3)}-{setting}" if args.keep else Path(tmp) / "out"
            t0, cpu0, load0 = time.perf_counter(), _cpu(), os.getloadavg()[0]
            result = reproduce(
                paper.zfill(3),
                out,
                quick=not args.full,
                seeds=(0, 1, 2),
                workers=os.cpu_count() or 1,
                data_dir=data,
            )
            wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
            load = max(load0, os.getloadavg()[0])
        counts, setup = verdict_counts(result.run.claims)
        cells = " / ".join(str(counts[v]) for v in VERDICTS)
        setup_text = ", ".join(f"{k} {v}" for k, v in setup.items()) or "—"
        print(
            f"| {paper} | {setting} | {wall:.0f} ({cpu:.0f} CPU s, load {load:.1f}) | {cells} | {setup_text} |",
            flush=True,
        )
        if args.record:
            record_timing(paper.zfill(3), setting, wall, cpu, load)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the reproduction's worker processes)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def record_timing(paper: str, setting: str, seconds: float, cpu: float, load: float) -> None:
    """Write one measured wall time into the timings file the reports quote (atomically), with the CPU seconds
    and the highest 1-minute load average seen at its ends (a wall time under load says so)."""
    data = json.loads(TIMINGS.read_text(encoding="utf-8")) if TIMINGS.exists() else {}
    data.setdefault(paper, {})[setting] = {
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "load": round(load, 1),
        "date": date.today().isoformat(),
        "cpus": os.cpu_count() or 1,
    }
    tmp = TIMINGS.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(TIMINGS)


if __name__ == "__main__":
    main()
