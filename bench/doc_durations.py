"""Benchmark (issue 32, item 6): how long the commands take whose run time README.md and docs/ state.

A command line printed in a page with a run time in its comment (``.venv/bin/wattsched eamc grid ... # ...: about
10 s``) promises that time to the reader, and so does the prose above a block marked ``<!-- docs-test: timed -->``
for the whole block ("To reproduce (about 2 minutes, root):"; run as printed, after the page's blocks above it).
This benchmark runs each such command or block exactly as printed, the way tests/test_docs_commands.py runs a
page (a folder laid out like the repository root beside ``../shared/data``, the page's saved files written first),
times its wall clock, and writes the figures to ``docs/durations.json``, which is tracked:
tests/test_docs_durations.py fails when a page states less than the figure recorded for its command or block (or
when one with a stated time has no figure).

Run it on an idle machine (the load average is recorded with each figure); it first runs the set-up's warm-up, so
the figures are what a user sees after ``make setup``. Commands stated at over 15 minutes
(the longest full settings) run only with ``--long``; a figure already recorded is kept for the commands not
run this time, and dropped once no page prints its command.

    .venv/bin/python bench/doc_durations.py                 # every stated command up to 15 min: about 40 min
    .venv/bin/python bench/doc_durations.py --long          # and papers 000 and 001 in full: about 90 min more
    .venv/bin/python bench/doc_durations.py --only "eamc grid"   # the commands holding this text
    .venv/bin/python bench/doc_durations.py --only docs/testbed.md:49   # one timed block (page:line of its fence)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))  # the docs test's page layout and parser: one definition of both

import targets  # noqa: E402
from stated_durations import LONG_S, RECORD, StatedCommand, stated_blocks, stated_commands  # noqa: E402
from test_docs_commands import BLOCKS, LONG_MARKERS, Block, Pages, _env, catch_up, run_block  # noqa: E402


def _prepare(pages: Pages, page: Path) -> Path:
    """The page's working folder with its saved files and campaign specs written (what its commands read)."""
    cwd = pages.workdir(page)
    for block in BLOCKS:
        if block.page == page and "spec" in block.markers and "skip" not in block.markers:
            (cwd / block.markers["spec"]).write_text(block.text + "\n", encoding="utf-8")
    return cwd


def measure_block(block: Block, pages: Pages) -> float:
    """Wall seconds of a ``timed`` block run as printed, after the page's blocks above it (as the docs test runs
    them: the slow ones only when selected); a failure stops the benchmark."""
    cwd = catch_up(block, pages)
    # as printed: without the markers by which the docs test runs a smaller variant
    printed = dataclasses.replace(block, markers={k: v for k, v in block.markers.items() if k not in LONG_MARKERS})
    t0 = time.perf_counter()
    try:
        run_block(printed, cwd)
    except AssertionError as failed:
        raise SystemExit(str(failed)) from None
    return time.perf_counter() - t0


def measure(stated: StatedCommand, pages: Pages) -> float:
    """Wall seconds of the command as printed, from the page's folder; a failure stops the benchmark."""
    if stated.block is not None:
        return measure_block(stated.block, pages)
    cwd = _prepare(pages, stated.page)
    t0 = time.perf_counter()
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", stated.command], cwd=cwd, env=_env(), check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{stated.where}: `{stated.command}` exited {done.returncode}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", action="store_true", help="also the commands stated at over 15 minutes")
    parser.add_argument("--only", action="append", default=[], help="only the commands holding this text")
    parser.add_argument(
        "--keep",
        type=Path,
        help="run the pages in this new folder and keep it (the commands' outputs, e.g. a "
        "reproduction's results.parquet to split its time further)",
    )
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress seen as it goes, when piped
    if args.keep is not None:
        try:
            args.keep.mkdir(parents=True)  # a new folder: an output folder never mixes two runs
        except FileExistsError:
            raise SystemExit(f"--keep {args.keep}: the folder exists; give a new one") from None
    commands = stated_commands() + stated_blocks()
    old = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    record = {c.command: old[c.command] for c in commands if c.command in old}  # drop what no page prints
    firsts: dict[str, StatedCommand] = {}  # a command printed twice runs once
    for c in commands:
        firsts.setdefault(c.command, c)
    todo = [
        c
        for c in firsts.values()
        if (args.long or c.promise_s <= LONG_S)
        and (not args.only or any(text in c.command or text == c.where for text in args.only))
    ]
    print(f"{len(todo)} of {len(commands)} stated commands to run")
    # what `make setup` leaves: the numba cache is keyed on the numba modules' sources, so after an edit the first
    # command would pay the compilation (a measured 252 s instead of 126 s for `reproduce 000 --quick`)
    subprocess.run([sys.executable, "-m", "wattsched.warmup"], env=_env(), cwd=REPO, check=True)
    with contextlib.ExitStack() as stack:
        tmp = args.keep or stack.enter_context(tempfile.TemporaryDirectory(prefix="wattsched-doc-durations-"))
        pages = Pages(Path(tmp))
        for n, stated in enumerate(todo, 1):
            load = os.getloadavg()[0]
            seconds = measure(stated, pages)
            verdict = "ok" if seconds <= stated.allowed_s else "MORE THAN STATED"
            print(f"[{n}/{len(todo)}] {stated.where}: {seconds:.1f} s (stated {stated.stated!r}): {verdict}")
            record[stated.command] = {
                "seconds": round(seconds, 1),
                "page": stated.where,
                "load_before": round(load, 2),
                "cores": os.cpu_count(),
                "measured": datetime.date.today().isoformat(),
            }
            tmp_record = RECORD.with_suffix(".tmp")  # written after every command: an interrupted run keeps its figures
            tmp_record.write_text(json.dumps(dict(sorted(record.items())), indent=1, ensure_ascii=False) + "\n")
            tmp_record.replace(RECORD)

    over = [c.where for c in commands if c.command in record and record[c.command]["seconds"] > c.allowed_s]
    unmeasured = [c.where for c in commands if c.command not in record]
    print(f"stated less than measured: {over or 'none'}; not measured: {unmeasured or 'none'}")
    targets.record(
        "doc_durations",
        [
            targets.Target(
                "printed commands whose page states less time than they took (docs/durations.json)",
                len(over),
                0,
                "commands",
                note=f"{len(commands) - len(unmeasured)} of {len(commands)} stated commands measured"
                + (f"; not measured: {', '.join(unmeasured)}" if unmeasured else "")
                + (f"; over: {', '.join(over)}" if over else ""),
            )
        ],
    )


if __name__ == "__main__":
    main()
