"""Files a process opens in place (appends, SQLite, a lock) when it may run as root in a folder others can write to.

Whole files are written through :func:`wattsched.core.store.atomic_file` (a new temporary renamed over the target),
which follows nothing. A file that must be opened where it is cannot be renamed into place, so here it is opened
with ``O_NOFOLLOW`` (a planted symlink fails to open instead of being followed), ``O_NONBLOCK`` (a planted FIFO
cannot hang the process) and checked on the open descriptor, not on the name, so the check and the use concern
the same file: it must be a regular file owned by this process's user with one link only. Another owner means
someone else put it there; a second link means writing it changes a file known by another name, which is what a
hard link planted at the name would do. Each refusal is one line naming the file and why.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import stat
from pathlib import Path

__all__ = [
    "UnsafeFileError",
    "append_line",
    "check_existing",
    "check_folder",
    "create_new",
    "open_own",
    "prepare_sqlite",
]


class UnsafeFileError(OSError):
    """A file the process would open in place is a symlink, not a regular file, someone else's, or hard-linked."""


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _check(st: os.stat_result, path: Path, what: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFileError(f"{path}: the {what} is a symbolic link: refused (it would write wherever it points)")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(f"{path}: the {what} is not a regular file: refused")
    if st.st_uid != os.geteuid():
        raise UnsafeFileError(
            f"{path}: the {what} belongs to {_user(st.st_uid)}, not to {_user(os.geteuid())} who runs this: refused "
            "(another user may have put it there); remove it or chown it"
        )
    if st.st_nlink > 1:
        raise UnsafeFileError(
            f"{path}: the {what} has {st.st_nlink} hard links: refused (writing it would change a file known by "
            "another name)"
        )


def check_folder(folder: Path, what: str) -> None:
    """Refuse a ``folder`` that others may write to without the sticky bit: there anyone may rename or delete the
    files of the ``what`` and put their own in their place, whatever the checks made when they were opened. With
    the sticky bit (``/tmp``) only a file's owner may do that."""
    st = os.stat(folder)
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise UnsafeFileError(
            f"{folder}: every user may write to this folder and it has no sticky bit (mode "
            f"{stat.filemode(st.st_mode)}): anyone could replace the {what} in it; choose another folder or "
            "`chmod +t` it"
        )


def check_existing(path: Path, what: str) -> bool:
    """Whether ``path`` exists (without following a symlink); an :class:`UnsafeFileError` when it exists and is
    not a regular file of ours with one link. For a check before handing the name to a library that opens it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    _check(st, Path(path), what)
    return True


def open_own(path: Path, flags: int, what: str, mode: int = 0o600) -> int:
    """``os.open(path, flags)`` that follows no symlink, never blocks on a FIFO and returns a descriptor only for a
    regular file of ours with one link (module docstring); ``mode`` for a file it creates."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(
                f"{path}: the {what} is a symbolic link: refused (it would write wherever it points)"
            ) from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader
            raise UnsafeFileError(f"{path}: the {what} is not a regular file: refused") from None
        raise
    try:
        _check(os.fstat(fd), path, what)
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_new(path: Path, what: str, mode: int = 0o600) -> bool:
    """Create ``path`` empty unless it exists (``O_EXCL``: a name planted meanwhile fails the creation instead of
    being opened); return whether it was created. An existing one must pass :func:`check_existing`."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except FileExistsError:
        check_existing(path, what)
        return False
    os.close(fd)
    return True


def append_line(path: Path, line: str, what: str, mode: int = 0o644) -> None:
    """Append ``line`` (a newline added) to ``path``, created with ``mode`` when missing (``O_APPEND``: a regular
    file takes the line in one write, so concurrent writers' lines never interleave)."""
    fd = open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, what, mode)
    try:
        data = (line + "\n").encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def prepare_sqlite(path: Path, what: str, mode: int = 0o600) -> None:
    """Make the files SQLite opens for the database ``path`` safe before it opens them. SQLite resolves a symlink
    at the database's name and opens it and its companions (``-journal``, ``-wal``, ``-shm``) with ``O_CREAT``
    but without ``O_EXCL`` or an owner check, so a file put at one of those names would be written. Here its
    folder must pass :func:`check_folder`; each of the four that exists must pass :func:`check_existing`; the
    database, its ``-wal`` and ``-shm`` are created when missing (``O_EXCL``, ``mode``), and a new database's
    ``-journal`` too (its switch to WAL writes one), so SQLite finds files of ours that, in a sticky folder,
    nobody else can replace. An unsafe one is an :class:`UnsafeFileError`."""
    path = Path(path)
    check_folder(path.parent, what)
    companions = {suffix: path.with_name(path.name + suffix) for suffix in ("-journal", "-wal", "-shm")}
    for suffix, companion in companions.items():
        check_existing(companion, f"{what}'s {suffix[1:]} file")
    new = create_new(path, what, mode)
    for suffix in ("-journal", "-wal", "-shm") if new else ("-wal", "-shm"):
        create_new(companions[suffix], f"{what}'s {suffix[1:]} file", mode)
