"""Stopping cleanly, in one place for every long command (campaigns, dataset builds, reproductions, grids):

- :func:`sigterm_as_interrupt`: SIGTERM (a batch system's or ``kill``'s stop) behaves as Ctrl-C, i.e. raises
  :class:`KeyboardInterrupt` where the program is, so the same ``except``/``finally`` blocks end the workers and
  keep the finished work; a second signal while stopping ends the process at once (workers killed first).
- :func:`worker_init`: what every local worker process runs first. It ignores SIGINT (a Ctrl-C in a terminal
  reaches the whole process group; the parent ends its workers itself, so they print no traceback) and watches
  its parent: when the parent dies, even by ``kill -9``, the worker exits instead of computing on.
- :func:`stop_children`: end this process's ``multiprocessing`` children now.
- :func:`compiled_section`: around a compiled (numba) kernel, which runs no Python signal handler until it
  returns (a conservative pass on RICC runs for minutes), Ctrl-C and SIGTERM end the process at once through a
  C-level handler, with one line; enabled by the CLI only (:func:`enable_stop_in_compiled_code`).

Folder locks and the cleaning of killed writers' temporaries are in :mod:`wattsched.core.output_folders`.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

#: Exit code of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, the shell's convention).
INTERRUPTED_EXIT = 130
#: How often a worker checks that its parent is alive when the kernel cannot tell it (not Linux), in seconds.
PARENT_POLL_S = 1.0

_stopping = False


# ---------------------------------------------------------------------------------------------- signals


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """First Ctrl-C or SIGTERM: raise :class:`KeyboardInterrupt` (the program stops through its handlers). A
    second one while stopping: kill the workers and exit with 130 now (a stop that hangs can still be forced)."""
    global _stopping
    if _stopping:
        stop_children(timeout=0.0, force=True)
        os.write(2, b"interrupted again: workers killed, stopped at once\n")
        os._exit(INTERRUPTED_EXIT)
    _stopping = True
    raise KeyboardInterrupt


def interruptions() -> tuple[type[BaseException], ...]:
    """What an ``except`` clause that handles the stop should catch: :class:`KeyboardInterrupt`, and once a stop
    signal has arrived, any error. The signal raises ``KeyboardInterrupt`` wherever the program is; when that is
    inside an extension module's initialisation (a lazy import of OR-Tools or matplotlib), the module reports
    ``ImportError: initialization failed`` instead, and the stop would end as a crash with exit code 1. Use as
    ``except interruptions():`` (the expression is evaluated when an exception is matched)."""
    return (KeyboardInterrupt, Exception) if _stopping else (KeyboardInterrupt,)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise :class:`KeyboardInterrupt` once, and a second signal forces the
    exit; the previous handlers come back after. Outside the main thread (where Python cannot handle signals),
    nothing changes. Nested blocks are harmless."""
    global _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, _on_signal)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        if previous[signal.SIGINT] is not _on_signal:  # the outermost block: a later stop starts afresh
            _stopping = False


def stop_children(timeout: float = 5.0, *, force: bool = False) -> int:
    """End this process's ``multiprocessing`` children (the workers of local process pools): SIGTERM, then SIGKILL
    after ``timeout`` (at once with ``force``). Returns how many were running."""
    children = multiprocessing.active_children()
    for child in children:
        (child.kill if force else child.terminate)()
    for child in children:
        child.join(timeout)
        if child.is_alive():
            child.kill()
            child.join(timeout)
    return len(children)


# ---------------------------------------------------------------------------------------------- workers


def worker_init(parent_pid: int) -> None:
    """Run first in every local worker process (a pool's ``initializer``): ignore SIGINT and exit when the
    parent ``parent_pid`` dies. On Linux the kernel sends SIGKILL on the parent's death (``PR_SET_PDEATHSIG``);
    everywhere a daemon thread also polls ``os.getppid()`` (the portable way, and it covers a parent that died
    before the request was made)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _request_parent_death_signal()
    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="wattsched-parent-watch", daemon=True).start()


def _request_parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1  # <linux/prctl.h>
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent_pid:  # re-parented: the parent is gone
            os._exit(1)


# ------------------------------------------------------------------------------ compiled code

#: Set by the CLI's root app: library users keep Python's own signal handling.
_stop_in_compiled_code = False
_c_handler_address: int | None = None
#: What the C-level handler writes before it exits (fixed: the handler cannot build a message).
COMPILED_STOP_MESSAGE = (
    b"interrupted: stopped at once inside a compiled simulation (Ctrl-C or SIGTERM); finished runs are kept, "
    b"the unfinished one wrote nothing\n"
)


def enable_stop_in_compiled_code() -> None:
    """Let :func:`compiled_section` install its C-level handler (the CLI calls this once at start)."""
    global _stop_in_compiled_code
    _stop_in_compiled_code = True


def _compiled_handler() -> int:
    """The address of a numba ``cfunc`` signal handler that writes :data:`COMPILED_STOP_MESSAGE` and calls
    ``_exit(130)``. Compiled on first use: a Python handler cannot run while compiled code holds the interpreter,
    and a ctypes callback would wait for it; a cfunc needs neither. Its writes go through libc directly."""
    global _c_handler_address
    if _c_handler_address is None:
        import numpy as np
        from numba import cfunc, types

        libc = ctypes.CDLL(None)
        c_write = libc.write
        c_write.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
        c_write.restype = ctypes.c_ssize_t
        c_exit = libc._exit
        c_exit.argtypes = (ctypes.c_int,)
        c_exit.restype = None
        # on a terminal, first clear the progress bar's line and show the cursor it hid (no cleanup code runs)
        prefix = b"\r\x1b[2K\x1b[?25h" if os.isatty(2) else b""
        message = np.frombuffer(prefix + COMPILED_STOP_MESSAGE, dtype=np.uint8).copy()
        _keep.append(message)  # the handler reads this buffer by address: it must live as long as the process
        address, length = message.ctypes.data, message.size

        @cfunc(types.void(types.int32))
        def handler(signum: int) -> None:  # numba compiles it; it runs in signal context
            c_write(2, address, length)
            c_exit(INTERRUPTED_EXIT)

        _keep.append(handler)
        compiled = handler.address
        if compiled is None:  # numba gives the address of every compiled cfunc; this is for the type checker
            raise RuntimeError("numba gave no address for the signal handler")
        _c_handler_address = int(compiled)
    return _c_handler_address


_keep: list[Any] = []


def _c_signal(signum: int, address: int) -> None:
    """libc's ``signal``: install the C function at ``address`` as the handler of ``signum`` (Python's own
    ``signal.signal`` only takes Python callables). Looked up once: it runs around every chunk of a long run."""
    global _libc_signal
    if _libc_signal is None:
        function = ctypes.CDLL(None).signal
        function.argtypes = (ctypes.c_int, ctypes.c_void_p)
        function.restype = ctypes.c_void_p
        _libc_signal = function
    _libc_signal(signum, address)


_libc_signal: Any = None


#: Workloads from this many jobs on get the C-level handler of :func:`compiled_section`. Its numba cfunc takes
#: 0.15-0.5 s to compile (measured; it cannot be cached: it calls libc through ctypes), which a short run must not
#: pay; below this size even conservative backfilling returns to Python within seconds.
COMPILED_STOP_MIN_JOBS = 20_000


@contextlib.contextmanager
def compiled_section(jobs: int) -> Iterator[None]:
    """Within the block (a compiled kernel's call), Ctrl-C and SIGTERM end the process at once with one line and
    exit code 130; Python's handlers come back after. Nothing is lost that a normal stop would keep: results are
    written atomically after their run, a campaign's lock dies with the process, its workers follow their parent
    (:func:`worker_init`) and the next runner cleans the temporaries. A no-op unless the CLI enabled it, outside
    the main thread, in a worker (SIGINT ignored), where libc's ``signal`` is not at hand, and for workloads of
    fewer than :data:`COMPILED_STOP_MIN_JOBS` jobs."""
    if (
        not _stop_in_compiled_code
        or jobs < COMPILED_STOP_MIN_JOBS
        or threading.current_thread() is not threading.main_thread()
        or not sys.platform.startswith("linux")
        or signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    ):
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    address = _compiled_handler()
    for s in previous:
        _c_signal(int(s), address)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
