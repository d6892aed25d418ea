"""One writer per output folder, and what killed writers leave behind.

- :class:`FolderLock`: one writer per campaign folder or dataset output, the holder's pid named in the refusal;
- :func:`clean_temporaries` / :func:`clean_temporaries_of`: remove the temporaries of killed atomic writes
  (``core.store.atomic_path``), called by the lock holder only.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["LOCK_NAME", "FolderBusyError", "FolderLock", "clean_temporaries", "clean_temporaries_of", "is_temporary"]

#: The name of a folder's lock file (kept after release: deleting it would let two processes lock two files).
LOCK_NAME = ".wattsched.lock"
#: An atomic write's temporary: ``.NAME.RANDOM.PID.tmp`` or ``.STEM.RANDOM.PID.tmp.SUFFIX`` (``core.store``; the
#: random part, absent from earlier versions' names, is taken in by ``.+``).
_TEMPORARY = re.compile(r"^\..+\.\d+\.tmp(\.[^.]+)?$")


class FolderBusyError(OSError):
    """Another live process holds the lock of a campaign folder or dataset output."""


class FolderLock:
    """An exclusive, non-blocking lock on ``folder`` (its file ``name`` inside), held until :meth:`release`
    or the process ends (the kernel drops it even after ``kill -9``, so a lock is never stale).

    ``fcntl.flock`` rather than the ``filelock`` package: ``filelock`` truncates the lock file on every attempt,
    so a refused process would erase the holder's pid, which the refusal must name; ``flock`` is what
    ``filelock`` uses on POSIX anyway. Windows has no ``fcntl``: there the lock is not taken (a warning says so)."""

    def __init__(self, folder: Path, what: str, name: str = LOCK_NAME) -> None:
        self.path = Path(folder) / name
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        try:
            import fcntl
        except ImportError:  # not POSIX
            import warnings

            warnings.warn(f"no file locking on this platform: {self.what} is not protected", stacklevel=2)
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise FolderBusyError(
                f"{self.what} is in use by process {holder} (lock {self.path}); wait for it to finish or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def is_temporary(path: Path) -> bool:
    """Whether ``path`` is an atomic write's temporary (``.NAME.RANDOM.PID.tmp[SUFFIX]``, see
    :func:`wattsched.core.store.atomic_path`)."""
    return _TEMPORARY.match(path.name) is not None


def clean_temporaries(folder: Path, prefix: str = ".") -> int:
    """Remove the temporaries of killed writers under ``folder`` (recursively) whose name starts with ``prefix``;
    returns how many. Only the lock holder may call it: then no live process is writing them."""
    removed = 0
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    for path in folder.rglob(f"{prefix}*"):
        if path.is_file() and is_temporary(path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
    return removed


def clean_temporaries_of(targets: list[Path]) -> int:
    """Remove the temporaries of killed writers of the files ``targets`` only (next to each; other files' and
    folders' are left alone); returns how many. Only the holder of the targets' lock may call it."""
    removed = 0
    for target in targets:
        target = Path(target)
        name, stem, suffix = (re.escape(x) for x in (target.name, target.stem, target.suffix))
        # atomic_path's two forms: .NAME.RANDOM.PID.tmp, and .STEM.RANDOM.PID.tmp.SUFFIX (keep_suffix); RANDOM is
        # mkstemp's 8 characters (earlier versions wrote none)
        rand = r"(?:[a-z0-9_]{8}\.)?"
        own = re.compile(rf"^\.(?:{name}\.{rand}\d+\.tmp|{stem}\.{rand}\d+\.tmp{suffix})$")
        if not target.parent.is_dir():
            continue
        for path in target.parent.glob(".*.tmp*"):
            if path.is_file() and own.match(path.name):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
    return removed
