"""Progress of the long commands: a live bar on a terminal, and plain lines where there is none.

rich draws nothing on a console that is not a terminal (CI logs, ``nohup``, a pipe), so a campaign run under
them printed nothing for minutes (issue 30, item 13). There, :class:`LineProgress` prints one line every
:data:`LINE_INTERVAL_S` seconds with the count, the share, the elapsed time and the time left, and a last line
when the work ends (only when it took that long: a quick command prints nothing more). Both show the time left.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Any, TypeVar

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from wattsched.cli.common import err

__all__ = ["LINE_INTERVAL_S", "LineProgress", "progress_bar", "track"]

T = TypeVar("T")

#: Seconds between two progress lines when stderr is not a terminal.
LINE_INTERVAL_S = 10.0


def _clock(seconds: float | None) -> str:
    return "?" if seconds is None else str(timedelta(seconds=round(seconds)))


class LineProgress(Progress):
    """A :class:`rich.progress.Progress` that draws no live display and prints a plain line on stderr every
    :data:`LINE_INTERVAL_S` seconds instead (see the module docstring); the same calls as the bar."""

    def __init__(self, label: str, *columns: Any, **options: Any) -> None:
        super().__init__(*columns, **{**options, "disable": True})
        self.label = Text.from_markup(label).plain
        self._last: dict[TaskID, float] = {}  # when each task's last line was printed
        self._ended: set[TaskID] = set()

    def update(self, task_id: TaskID, **fields: Any) -> None:
        super().update(task_id, **fields)
        self._maybe_print(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._maybe_print(task_id)

    def _maybe_print(self, task_id: TaskID) -> None:
        """A line every interval while the task runs; at its end a last one, if it ran for an interval."""
        task = self._tasks[task_id]
        now = time.monotonic()
        elapsed = task.elapsed or 0.0
        done = task.total is not None and task.completed >= task.total
        if done:
            if task_id in self._ended or (task_id not in self._last and elapsed < LINE_INTERVAL_S):
                return
            self._ended.add(task_id)
        elif now - self._last.get(task_id, now - elapsed) < LINE_INTERVAL_S:
            return
        self._last[task_id] = now
        count = f"{task.completed:,.0f}" + (f"/{task.total:,.0f}" if task.total is not None else "")
        share = f" ({100 * task.completed / task.total:.0f}%)" if task.total else ""
        left = "" if done else f", about {_clock(task.time_remaining)} left"
        err.print(f"{self.label}: {count}{share}, {_clock(elapsed)} elapsed{left}")


def progress_bar(label: str, *extra: ProgressColumn) -> Progress:
    """A transient progress bar on stderr (piped stdout stays clean): ``label`` (rich markup: escape any input in
    it with rich.markup.escape), the bar, done/total, the ``extra`` columns, the elapsed time and the time left;
    plain lines instead when stderr is not a terminal (:class:`LineProgress`)."""
    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        *extra,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    if not err.is_terminal:
        return LineProgress(label, *columns, console=err)
    return Progress(*columns, console=err, transient=True)


def track(items: Iterable[T], total: int, description: str) -> Iterator[T]:
    """Yield ``items`` while a progress bar counts them."""
    with progress_bar(f"[bold]{escape(description)}[/]") as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)
