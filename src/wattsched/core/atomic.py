"""The one safe way to write a file: every command that writes (exports, reports, run folders, datasets, the
advisor's files) goes through here.

A write goes to a new temporary file beside its target, created exclusively with a name nobody can guess, is
flushed and synced, and is renamed over the target only when complete (``os.replace`` is atomic on one file
system). So a kill, a full disk or a writer's error leaves the previous file as it was, never half a file, and a
link planted at the target's name is replaced, never written through. :func:`atomic_files` writes several files
as one: none is renamed until all are complete, so a folder never holds half of a new run beside half of the old.

A write that fails for a reason of the system (no space left, quota, a read-only file system: an ``OSError``, or
polars' error carrying ``(os error N)``) is raised as :class:`OutputWriteError`, one line naming the file, the
cause and that the previous file is unchanged: ``no space left on device writing r.csv; the previous r.csv is
unchanged``. Any other error (a bug in a writer) keeps its own message.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import polars as pl

__all__ = [
    "AtomicFiles",
    "OutputWriteError",
    "atomic_figure",
    "atomic_file",
    "atomic_files",
    "atomic_folder",
    "atomic_parquet",
    "atomic_path",
    "atomic_table",
    "atomic_write",
    "atomic_write_bytes",
    "write_failure",
]


class OutputWriteError(OSError):
    """A file could not be written; the file at its name, if any, is the one that was there before."""

    def __init__(self, errno: int, message: str, path: Path | None = None) -> None:
        super().__init__(errno, message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return self.message


#: How an errno shows in the message of an error without one: Rust's ``(os error 28)`` (polars), Arrow's
#: ``[errno 28]`` (pyarrow's Parquet writer).
_OS_ERROR = re.compile(r"\(os error (\d+)\)|\[errno (\d+)\]", re.IGNORECASE)


_TEMPORARY = re.compile(r"^\..+\.\d+\.tmp(\.[^.]+)?$")  # the names of _temporary


def write_failure(path: Path, exc: BaseException) -> OutputWriteError | None:
    """The one-line error of a failed write of ``path`` (see the module docstring), or None when ``exc`` is not a
    failure of the system to store the data: an error that names another file (a read inside the writer) or has
    no errno is the writer's own and keeps its message."""
    if isinstance(exc, OutputWriteError):
        if exc.path is None or not _TEMPORARY.search(exc.path.name) or exc.path == Path(path):
            return exc
        if exc.errno is None:
            return exc
        return _failure(exc.errno, Path(path))  # a writer nested in another's temporary: name the user's file
    number: int | None = None
    if isinstance(exc, OSError) and exc.filename is not None:
        named = Path(str(exc.filename))
        if named != Path(path) and not _TEMPORARY.search(named.name):
            return None  # about another file: a read inside the writer
        number = exc.errno
    elif isinstance(exc, OSError):
        number = exc.errno
    if number is None and isinstance(exc, OSError | pl.exceptions.PolarsError):
        found = _OS_ERROR.search(str(exc))
        number = int(found.group(1) or found.group(2)) if found else None
    return _failure(number, Path(path)) if number else None


def _failure(number: int, path: Path) -> OutputWriteError:
    kept = f"the previous {path.name} is unchanged" if path.exists() else f"{path.name} was not written"
    return OutputWriteError(number, f"{os.strerror(number).lower()} writing {path}; {kept}", path)


@contextlib.contextmanager
def _failures_named(path: Path) -> Iterator[None]:
    """Raise a system failure inside the block as the :class:`OutputWriteError` of ``path``."""
    try:
        yield
    except Exception as exc:
        failure = write_failure(path, exc)
        if failure is None or failure is exc:
            raise
        raise failure from exc


#
# A writer may run as root in a folder others can write to (the advisor's status file in /tmp, a report folder):
# every temporary is a new file with an unpredictable name, created by ``mkstemp`` (O_CREAT|O_EXCL|O_NOFOLLOW), so
# a file or symlink planted at a name it could guess is never opened; the rename then replaces whatever is at the
# target, a planted symlink included, and never writes through it.


def _file_mode() -> int:
    """The mode a plain ``open`` would give a new file (0o666 less the umask; ``mkstemp`` makes 0600). The umask is
    read from /proc where it can be: setting it to read it would change it for every thread meanwhile."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _temporary(path: Path, keep_suffix: bool) -> tuple[int, Path]:
    """A new temporary file beside ``path`` and its open descriptor: ``.NAME.RANDOM.PID.tmp`` (``.STEM.RANDOM.PID
    .tmp.SUFFIX`` with ``keep_suffix``). The pid lets the lock holder tell a killed writer's leftovers
    (:func:`wattsched.core.output_folders.clean_temporaries`); the random part makes the name impossible to plant."""
    stem, tail = (path.stem, path.suffix) if keep_suffix else (path.name, "")
    fd, name = tempfile.mkstemp(prefix=f".{stem}.", suffix=f".{os.getpid()}.tmp{tail}", dir=path.parent)
    return fd, Path(name)


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (some file systems cannot sync a folder: nothing more to do there)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_path(path: Path, *, keep_suffix: bool = False) -> Iterator[Path]:
    """A new temporary file next to ``path`` (see :func:`_temporary`), renamed to ``path`` when the block ends
    without error and removed otherwise; for writers that open a path themselves (Parquet, a dataset build).
    ``keep_suffix`` ends its name with ``path``'s suffix, for writers that choose a format by suffix. Writers that
    can write to an open file should use :func:`atomic_file`, which never opens a name at all."""
    path = Path(path)
    fd, tmp = _temporary(path, keep_suffix)
    os.close(fd)
    try:
        with _failures_named(path):
            yield tmp
            _settle(tmp, sync=False)  # as before: many small run tables; atomic_file syncs what must survive a crash
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@contextlib.contextmanager
def atomic_file(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """``path`` written through an open file: a new temporary (:func:`_temporary`) written, given the usual mode,
    synced and renamed over ``path`` when the block ends without error (removed otherwise), so ``path`` holds
    either all of the new content or its former state."""
    path = Path(path)
    fd, tmp = _temporary(path, keep_suffix=False)
    try:
        with _failures_named(path):
            with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
                yield f
                f.flush()
                os.fchmod(f.fileno(), _file_mode())
                os.fsync(f.fileno())
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _sync_folder(path.parent)


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` either holds all of it or does not exist (crash-safe, synced to disk)."""
    with atomic_file(path) as f:
        f.write(text)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` so that ``path`` either holds all of it or its former content (crash-safe, synced)."""
    with atomic_file(path, binary=True) as f:
        f.write(data)


def atomic_table(frame: pl.DataFrame, path: Path) -> Path:
    """``frame`` as CSV (``.csv``) or Parquet (any other name) at ``path``, through a renamed temporary; makes
    the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.lower().endswith(".csv"):
        with atomic_file(path, binary=True) as f:
            frame.write_csv(f)
    else:
        atomic_parquet(frame, path)
    return path


def atomic_parquet(frame: pl.DataFrame, path: Path) -> None:
    """Write ``frame`` as Parquet so that ``path`` either holds all of it or does not exist."""
    with atomic_path(path, keep_suffix=True) as tmp:
        frame.write_parquet(tmp)


def _settle(tmp: Path, *, sync: bool = True) -> None:
    """Give a finished temporary the usual mode (``mkstemp`` makes 0600) and sync it, through a descriptor that
    cannot follow a link planted in its place."""
    fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, _file_mode())
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


class AtomicFiles:
    """Several files written as one (:func:`atomic_files`): each goes to its own temporary; none is renamed over
    its name until every one is complete."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []  # (temporary, target)
        self.current: Path | None = None  # the target being written: named when a write fails

    def path(self, target: Path, *, keep_suffix: bool = False) -> Path:
        """A new temporary for ``target``, for writers that open a path themselves (see :func:`atomic_path`)."""
        target = Path(target)
        fd, tmp = _temporary(target, keep_suffix)
        os.close(fd)
        self._pending.append((tmp, target))
        self.current = target
        return tmp

    @contextlib.contextmanager
    def file(self, target: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
        """``target``'s temporary as an open file (see :func:`atomic_file`)."""
        tmp = self.path(target)
        with open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8", opener=_no_follow) as f:
            yield f

    def text(self, target: Path, text: str) -> None:
        with self.file(target) as f:
            f.write(text)

    def table(self, frame: pl.DataFrame, target: Path) -> None:
        """``frame`` as CSV (``.csv``) or Parquet (any other name), as :func:`atomic_table`."""
        if Path(target).name.lower().endswith(".csv"):
            with self.file(target, binary=True) as f:
                frame.write_csv(f)
        else:
            frame.write_parquet(self.path(target, keep_suffix=True))

    def _commit(self) -> None:
        for tmp, target in self._pending:
            self.current = target
            _settle(tmp)
        for tmp, target in self._pending:
            self.current = target
            os.replace(tmp, target)
        for folder in {target.parent for _, target in self._pending}:
            _sync_folder(folder)
        self._pending = []

    def _discard(self) -> None:
        for tmp, _ in self._pending:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def _no_follow(name: str, flags: int) -> int:
    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


@contextlib.contextmanager
def atomic_files() -> Iterator[AtomicFiles]:
    """Write several files as one: ``with atomic_files() as g: g.table(jobs, out / "jobs.parquet"); g.text(...)``.
    When the block ends without error every file is renamed over its name; on any error (a full disk on the last
    file) none is, the temporaries are removed and every former file is as it was."""
    group = AtomicFiles()
    try:
        try:
            yield group
            group._commit()
        except Exception as exc:
            failure = write_failure(group.current, exc) if group.current is not None else None
            if failure is None or failure is exc:
                raise
            raise failure from exc
    finally:
        group._discard()


def atomic_figure(fig: Any, path: Path, **options: Any) -> Path:
    """A matplotlib figure saved through :func:`atomic_file`, in the format its name ends with (``.png``,
    ``.svg``, ``.pdf``); ``options`` go to ``savefig`` (``dpi``, ``bbox_inches``)."""
    path = Path(path)
    with atomic_file(path, binary=True) as f:
        fig.savefig(f, format=path.suffix.lstrip(".").lower() or "png", **options)
    return path


@contextlib.contextmanager
def atomic_folder(path: Path) -> Iterator[Path]:
    """A folder of many files written as one: the block fills a new hidden folder beside ``path`` (named like a
    temporary, so the lock holder of a campaign folder cleans it after a kill); when it ends without error the
    former ``path`` is moved aside, the new folder renamed to ``path`` and the former one removed, so ``path``
    never holds parts of two outputs (the new telemetry's days beside the old one's). On error the new folder is
    removed and ``path`` is as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=f".{os.getpid()}.tmp", dir=path.parent))
    try:
        with _failures_named(path):
            yield staging
        old: Path | None = None
        if path.exists() or path.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=f".{os.getpid()}.tmp", dir=path.parent))
            os.replace(path, old)  # an empty folder is replaced by a rename
        os.replace(staging, path)
        if old is not None:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink()
        _sync_folder(path.parent)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
