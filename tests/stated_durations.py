"""The run times README.md and docs/ promise for printed commands, and the record of what they took.

A line of a shell block that runs ``.venv/bin/wattsched`` and states a time in its comment (``# 12 samples: about
1–1.5 min``) is a promise to the reader. The first time in the comment is the promise: a range promises its upper
end, "about"/"~" a single figure with :data:`ABOUT_SLACK` of room; figures further on (``(222 s at load 3)``) are
the page's own notes on other conditions. ``bench/doc_durations.py`` runs each such command as printed and records
its wall time in ``docs/durations.json`` (:data:`RECORD`); tests/test_docs_durations.py compares the two.
Used by both, so the benchmark and the test read the pages the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from test_docs_commands import BLOCKS, REPO_ROOT

RECORD = REPO_ROOT / "docs" / "durations.json"
#: Commands stated at more than this many seconds (the papers' longest full settings) are run only by ``--long``.
LONG_S = 900.0
#: "about 10 s" holds up to 12.5 s: a figure rounded for reading, not a bound.
ABOUT_SLACK = 1.25

COMMAND = re.compile(r"^(?:\$ )?(?P<command>\.venv/bin/wattsched\s[^#]*?)\s+#\s*(?P<comment>.*)$")
TIME = re.compile(
    r"(?P<about>\babout\s+|~\s*|≈\s*|\baround\s+)?"
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
    return found.group(0).strip(), seconds, about


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
