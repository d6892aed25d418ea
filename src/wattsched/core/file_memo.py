"""A worker process's memory of the files it read last, for campaign runs that read the same input again and
again: a power campaign's window is simulated by every check and cap of its grid (paper 000: 45 runs), a dispatch
campaign's Eurora instance by every dispatcher and estimate (paper 001: 15), and the manifest lists a file's runs
together, so a worker takes them one after another. Reading was 40% of a paper-000 run and a third of a non-CP
paper-001 run (docs/performance.md, issue 32).

A read is kept under the file's resolved path, size and modification time, so a rewritten file is read again; at
most ``size`` reads are kept, the one unused longest dropped first (:class:`Recent`, which other per-worker memories
use too). What ``read`` returns must not be changed by its callers
(polars frames are immutable; anything mutable is copied by the caller).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


class Recent(Generic[T]):
    """The last ``size`` values used, by key: a value found or put becomes the newest; putting one more drops the
    one unused longest."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.kept: dict[Hashable, T] = {}

    def __len__(self) -> int:
        return len(self.kept)

    def get(self, key: Hashable) -> T | None:
        value = self.kept.pop(key, None)
        if value is not None:
            self.kept[key] = value
        return value

    def put(self, key: Hashable, value: T) -> None:
        self.kept.pop(key, None)
        while self.kept and len(self.kept) >= self.size:
            self.kept.pop(next(iter(self.kept)))
        if self.size > 0:
            self.kept[key] = value

    def clear(self) -> None:
        self.kept.clear()


class FileMemo(Generic[T]):
    """``memo(path)``: ``read(path)``, or the read kept for this path, size and modification time."""

    def __init__(self, read: Callable[[Path], T], size: int = 4) -> None:
        self.read = read
        self.recent: Recent[T] = Recent(size)

    def __call__(self, path: Path) -> T:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        value = self.recent.get(key)
        if value is None:
            value = self.read(path)
            self.recent.put(key, value)
        return value

    def __len__(self) -> int:
        return len(self.recent)

    @property
    def size(self) -> int:
        """How many reads are kept at most."""
        return self.recent.size

    def clear(self) -> None:
        self.recent.clear()
