"""One advisor acts on a state file at a time; another one started on it waits as a standby and takes over when the
active one stops, however it stops.

Two active advisors would size the same jobs from two views, undo each other's licenses and interleave their
cycles in one store. The active advisor holds an exclusive ``flock`` on ``<state>.lock`` for its whole life. The
kernel drops the lock with the process, even after ``kill -9``, so it is never stale and needs no timeout: a
standby that tries it every :data:`POLL_S` seconds takes over within that time. The holder writes its pid in the
file, for the standby's line and ``--once``'s refusal (the pid is only information: the lock is the flock).

The lock file is opened as :mod:`wattsched.core.safe_files` says (no symlink, ours, one link) with mode 0600: a
user who could open it could take the lock and keep every advisor on standby. ``flock`` works between the
processes of one machine; run the standby on the same machine as the active advisor.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wattsched.advise.loop import Sleeper, write_standby_status
from wattsched.core.safe_files import check_folder, open_own
from wattsched.core.structured_input import load_json

__all__ = ["POLL_S", "AdvisorLock", "lock_path", "stand_by"]

#: How often a standby tries the lock, in seconds (the longest a takeover waits once the holder is gone).
POLL_S = 0.5
#: The lock file's name: the state file's with this added.
LOCK_SUFFIX = ".lock"
#: How long a reader waits for a new holder to write its pid (the file is empty between its flock and its write).
_PID_WAIT_S = 0.5


def lock_path(state: str | Path) -> Path:
    """The lock file of the advisor state ``state``: beside it, named ``<state>.lock``."""
    state = Path(state)
    return state.with_name(state.name + LOCK_SUFFIX)


class AdvisorLock:
    """The lock that makes an advisor the active one on ``state`` (module docstring)."""

    def __init__(self, state: str | Path) -> None:
        self.state = Path(state)
        self.path = lock_path(self.state)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if no live process holds it; return whether this process holds it now. An unsafe lock
        file (a symlink, someone else's, hard-linked) is an :class:`~wattsched.core.safe_files.UnsafeFileError`."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_folder(self.path.parent, "advisor lock file")  # where anyone may swap it, two could each hold one
        fd = open_own(self.path, os.O_RDWR | os.O_CREAT, "advisor lock file", 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        # the new pid over the old one, then cut: a reader meanwhile still finds a whole first line
        data = f"{os.getpid()}\n".encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        self._fd = fd
        return True

    def holder(self) -> int | None:
        """The pid the holder wrote, None when it cannot be read (no lock file, or a holder that has not written
        it within half a second)."""
        deadline = time.monotonic() + _PID_WAIT_S
        while True:
            try:
                fd = open_own(self.path, os.O_RDONLY, "advisor lock file")
            except OSError:
                return None
            try:
                first = os.read(fd, 64).decode(errors="replace").split("\n", 1)[0].strip()
            finally:
                os.close(fd)
            if first.isdigit():
                return int(first)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.02)

    def release(self) -> None:
        """Let another advisor take over (closing the descriptor drops the flock; the file stays: deleting it
        would let two processes lock two different files)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> AdvisorLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def standby_line(state: Path, holder: int | None) -> str:
    """The one line a standby logs while another advisor holds ``state``."""
    who = f"pid {holder}" if holder is not None else "another process"
    return f"standby: {state} is held by {who}; taking over when it stops"


def _active_status_of(status_file: Path, holder: int | None) -> bool:
    """Whether ``status_file`` is the status the holder writes (both advisors given the same file): the standby
    then leaves it alone, so that it keeps saying what the active advisor does."""
    try:
        status: Any = load_json(status_file.read_text(encoding="utf-8"), status_file)  # too deep: ValueError
    except (OSError, ValueError):
        return False
    return isinstance(status, dict) and status.get("role") == "active" and status.get("pid") == holder


def stand_by(
    lock: AdvisorLock,
    sleep: Sleeper,
    *,
    status_file: str | Path | None = None,
    mode: str = "licenses",
    on_line: Callable[[str], None] | None = None,
    poll: float = POLL_S,
) -> bool:
    """Take ``lock``, waiting as a standby while another advisor holds it: one line through ``on_line`` and a
    standby status in ``status_file`` each time the holder changes, then a try every ``poll`` seconds through
    ``sleep``. Returns True once the lock is held, False when ``sleep`` said stop first."""
    announced: tuple[int | None] | None = None
    while not lock.try_acquire():
        holder = lock.holder()
        if announced != (holder,):
            announced = (holder,)
            # the status first: whoever reads the line and then the status file finds the standby's status
            if status_file is not None and not _active_status_of(Path(status_file), holder):
                write_standby_status(Path(status_file), state=lock.state, holder=holder, mode=mode)
            if on_line is not None:
                on_line(standby_line(lock.state, holder))
        if sleep(poll):
            return False
    return True
