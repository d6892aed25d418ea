"""No page promises less than the machine gives (issue 32, item 6).

Every command README.md and docs/ print with a run time in its comment has a measured wall time in
``docs/durations.json`` (written by ``bench/doc_durations.py``, idle, on the project's 2-core reference machine), and
the stated time covers it. A page that states a new time, or a new command with a time, needs the benchmark run for
it; a change that makes a command slower than its page says fails here once the benchmark is re-run.
"""

from __future__ import annotations

import json

import pytest

from stated_durations import LONG_S, RECORD, StatedCommand, promise, prose_above, stated_blocks, stated_commands
from test_docs_commands import BLOCKS, extract_blocks

STATED = stated_commands() + stated_blocks()
RECORDED: dict[str, dict[str, object]] = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {}


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("3 mixes × 6 policies × 2 t_weight, Figs. 3–5: about 10 s", ("about 10 s", 10.0, True)),
        ("12 samples: about 1–1.5 min", ("about 1–1.5 min", 90.0, False)),
        ("3 seeds (0, 1, 2), 4–11 min on 2 cores (222 s at load 3, 634 s at load 5)", ("4–11 min", 660.0, False)),
        ("all 206 instances, 3,090 runs: 20-25 min idle", ("20-25 min", 1500.0, False)),
        ("the full setting: 30 windows per seed, about 18 min (1,071 s at load 3)", ("about 18 min", 1080.0, True)),
        ("980 nodes, 31 days, 40,000 jobs per seed: about 9 min", ("about 9 min", 540.0, True)),
        ("paper 000's experiment, reduced: every shape", None),
        ("12 samples, 2,000 jobs", None),
    ],
)
def test_the_first_time_in_a_comment_is_the_promise(comment: str, expected: tuple[str, float, bool] | None) -> None:
    assert promise(comment) == expected


def test_the_pages_state_times_for_the_long_commands() -> None:
    """The scan finds the reproductions' promises (a parser that found none would pass everything below)."""
    commands = {c.command for c in STATED}
    assert len(STATED) >= 15
    for paper in ("000", "001", "002", "003", "004"):
        assert any(f"reproduce {paper}" in command for command in commands), paper


@pytest.mark.parametrize("stated", STATED, ids=[c.where for c in STATED])
def test_the_stated_time_covers_the_measured_one(stated: StatedCommand) -> None:
    figure = RECORDED.get(stated.command)
    if figure is None and stated.promise_s > LONG_S:
        pytest.skip(f"{stated.where}: stated at {stated.stated}; measured by `bench/doc_durations.py --long` only")
    what = f"the block at {stated.where}" if stated.block is not None else f"`{stated.command}`"
    only = stated.where if stated.block is not None else stated.command.removeprefix(".venv/bin/wattsched ")
    assert figure is not None, (
        f"{stated.where}: {what} states {stated.stated!r} but docs/durations.json has no measured time: "
        f'run `.venv/bin/python bench/doc_durations.py --only "{only}"`'
    )
    seconds = float(figure["seconds"])  # type: ignore[arg-type]
    assert seconds <= stated.allowed_s, (
        f"{stated.where}: {what} states {stated.stated!r} but took {seconds:.0f} s "
        f"(docs/durations.json, {figure['measured']}): state the measured time"
    )


def test_every_recorded_time_belongs_to_a_printed_command() -> None:
    printed = {c.command for c in STATED}
    stale = sorted(set(RECORDED) - printed)
    assert not stale, f"docs/durations.json times commands no page prints any more: {stale} (re-run the benchmark)"


def test_a_timed_block_states_its_time_in_the_prose_just_above() -> None:
    timed = [b for b in BLOCKS if "timed" in b.markers and "skip" not in b.markers]
    assert len(timed) >= 8  # the walk-throughs of README.md, docs/advisor.md, docs/testbed.md…
    silent = [b.id for b in timed if promise(prose_above(b)) is None]
    assert not silent, f"marked timed, but the prose just above states no run time: {silent}"
    assert {c.where for c in stated_blocks()} == {b.id for b in timed}


def test_the_prose_above_a_block_stops_at_the_heading_or_block_before_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\nAbout 9 s for the block above.\n\n```bash\necho a\n```\n\nThe walk-through (about 60 s):\n\n"
        "- one step;\n- another, 2 min later.\n\n<!-- docs-test: timed -->\n<!-- docs-test: slow -->\n"
        "```bash\necho b\n```\n\n## Next\n\nIt takes 3 s:\n<!-- docs-test: timed -->\n```bash\necho c\n```\n",
        encoding="utf-8",
    )
    first, second, third = extract_blocks(page)
    assert prose_above(first) == "About 9 s for the block above."
    assert prose_above(second) == "The walk-through (about 60 s):\n\n- one step;\n- another, 2 min later."
    assert promise(prose_above(second)) == ("about 60 s", 60.0, True)
    assert prose_above(third) == "It takes 3 s:" and "timed" in third.markers
