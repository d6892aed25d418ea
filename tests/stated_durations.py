"""The run times README.md and docs/ promise for printed commands, and the record of what they took.

A line of a shell block that runs ``.venv/bin/wattsched`` and states a time in its comment (``# 12 samples: about
1–1.5 min``) is a promise to the reader. The first time in the comment is the promise: a range promises its upper
end, "about"/"~" a single figure with :data:`ABOUT_SLACK` of room; figures further on (``(222 s at load 3)``) are
the page's own notes on other conditions. ``bench/doc_durations.py`` runs each such command as printed and records
its wall time in ``docs/durations.json`` (:data:`RECORD`); tests/test_docs_durations.py compares the two.
Used by both, so the benchmark and the test read the pages the same way.

A block marked ``<!-- docs-test: timed -->`` is promised as a whole: the first time in the prose between the block
and the heading or block above it ("To reproduce (about 2 minutes, root):") is the run time of the block's
commands, run as printed in the page's folder after the page's blocks above it (:func:`stated_blocks`; recorded
under :attr:`StatedCommand.command`, the block's page and text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from test_docs_commands import BLOCKS, REPO_ROOT, Block

RECORD = REPO_ROOT / "docs" / "durations.json"
#: Commands stated at more than this many seconds (the papers' longest full settings) are run only by ``--long``.
LONG_S = 900.0
#: "about 10 s" holds up to 12.5 s: a figure rounded for reading, not a bound.
ABOUT_SLACK = 1.25

COMMAND = re.compile(r"^(?:\$ )?(?P<command>\.venv/bin/wattsched\s[^#]*?)\s+#\s*(?P<comment>.*)$")
TIME = re.compile(
    r"(?P<about>\b[Aa]bout\s+|~\s*|≈\s*|\b[Aa]round\s+)?"
    r"(?P<low>\d[\d,]*(?:\.\d+)?)(?:\s*[–-]\s*(?P<high>\d[\d,]*(?:\.\d+)?))?"
    r"\s*(?P<unit>seconds?|s|minutes?|min|hours?|h)\b"
)
UNIT_S = {"s": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "minute": 60.0, "minutes": 60.0}
UNIT_S |= {"h": 3600.0, "hour": 3600.0, "hours": 3600.0}


@dataclass(frozen=True)
class StatedCommand:
    """One printed command with the run time its page states for it."""

    page: Path
    line: int  # 1-based, in the page
    command: str
    stated: str  # the promise as printed ("about 10 s", "4–11 min")
    promise_s: float
    about: bool
    block: Block | None = None  # a ``timed`` block, promised as a whole (``command`` is then its record key)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"

    @property
    def allowed_s(self) -> float:
        """The longest measured time that keeps the promise."""
        return self.promise_s * (ABOUT_SLACK if self.about else 1.0)


def promise(comment: str) -> tuple[str, float, bool] | None:
    """The first time stated in a command's comment: (as printed, seconds, whether "about" a single figure)."""
    found = TIME.search(comment)
    if found is None:
        return None
    figure = found.group("high") or found.group("low")
    seconds = float(figure.replace(",", "")) * UNIT_S[found.group("unit")]
    about = found.group("about") is not None and found.group("high") is None
    return " ".join(found.group(0).split()), seconds, about


def stated_commands() -> list[StatedCommand]:
    """Every printed command with a stated time, in page order (blocks the docs test skips are left out: they
    need what no test machine has, a download or a Slurm cluster)."""
    found = []
    for block in BLOCKS:
        if block.kind != "shell" or "skip" in block.markers:
            continue
        lines = block.page.read_text(encoding="utf-8").splitlines()
        for offset, text in enumerate(block.text.splitlines(), 1):
            match = COMMAND.match(text.strip())
            stated = promise(match.group("comment")) if match else None
            if match is None or stated is None:
                continue
            line = block.line + offset
            assert lines[line - 1].strip() == text.strip(), f"{block.page}:{line}: line numbers out of step"
            found.append(StatedCommand(block.page, line, match.group("command"), *stated))
    return found


#: An HTML comment of a page (the docs-test markers): not prose a reader sees.
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def prose_above(block: Block) -> str:
    """The prose a reader sees between ``block`` and the heading or fenced block above it."""
    before = "\n".join(block.page.read_text(encoding="utf-8").splitlines()[: block.line - 1])
    kept: list[str] = []
    for text in reversed(_COMMENT.sub("", before).splitlines()):
        if text.lstrip().startswith(("```", "~~~", "#")):
            break
        kept.append(text)
    return "\n".join(reversed(kept)).strip()


def block_key(block: Block) -> str:
    """A ``timed`` block's key in the record: its page and text, so an edited block needs a new figure."""
    return f"block of {block.page.relative_to(REPO_ROOT)}:\n{block.text}"


def stated_blocks() -> list[StatedCommand]:
    """Every block marked ``timed`` with the time the prose above it states (a block whose prose states none is
    reported by tests/test_docs_durations.py)."""
    found = []
    for block in BLOCKS:
        if "timed" not in block.markers or "skip" in block.markers:
            continue
        stated = promise(prose_above(block))
        if stated is not None:
            found.append(StatedCommand(block.page, block.line, block_key(block), *stated, block=block))
    return found
