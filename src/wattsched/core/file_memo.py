"""A worker process's memory of the files it read last, for campaign runs that read the same input again and
again: a power campaign's window is simulated by every check and cap of its grid (paper 000: 45 runs), a dispatch
campaign's Eurora instance by every dispatcher and estimate (paper 001: 15), and the manifest lists a file's runs
together, so a worker takes them one after another. Reading was 40% of a paper-000 run and a third of a non-CP
paper-001 run (docs/performance.md, issue 32).

A read is kept under the file's resolved path, size and modification time, so a rewritten file is read again; at
most ``size`` reads are kept, the oldest dropped first. What ``read`` returns must not be changed by its callers
(polars frames are immutable; anything mutable is copied by the caller).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


class FileMemo(Generic[T]):
    """``memo(path)``: ``read(path)``, or the read kept for this path, size and modification time."""

    def __init__(self, read: Callable[[Path], T], size: int = 4) -> None:
        self.read = read
        self.size = size
        self.kept: dict[tuple[str, int, int], T] = {}

    def __call__(self, path: Path) -> T:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key in self.kept:
            return self.kept[key]
        value = self.read(path)
        while len(self.kept) >= self.size:
            self.kept.pop(next(iter(self.kept)))
        self.kept[key] = value
        return value

    def clear(self) -> None:
        self.kept.clear()
