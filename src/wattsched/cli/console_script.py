"""The ``wattsched`` console script: run the app, then leave without the interpreter's teardown.

Python's normal exit clears every module and runs the finalizers of every object; with numba's compiled code,
LLVM and polars loaded that takes ~0.2 s (measured: a 100-job ``simulate`` ends its work at 0.62 s and the
process at 0.84 s), a quarter of a short command. Everything a command writes is closed by then (files are
written inside ``with`` blocks, atomically), so after the ``atexit`` callbacks (multiprocessing's and Dask's
clean-ups among them) and a flush of stdout and stderr, the process ends with ``os._exit``. It exits normally
instead when a Python thread other than the main one is still alive (its work might not be finished), or when
``WATTSCHED_FULL_EXIT`` is set (to debug a finalizer). Only the console script does this: the app itself, as
tests and other programs call it, exits normally.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading

from wattsched.cli.root_app import app


def main(prog_name: str | None = None) -> None:
    """Run the command line and exit with its code."""
    try:
        app(prog_name=prog_name)
        code: str | int | None = 0
    except SystemExit as stop:
        code = stop.code
    leave(code)


def leave(code: str | int | None) -> None:
    """Exit with ``code`` (a ``SystemExit`` code: None, an int or a message) without the interpreter's teardown
    when that is safe (see the module docstring)."""
    if threading.active_count() > 1 or os.environ.get("WATTSCHED_FULL_EXIT"):
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()  # private, but the public atexit runs them only at the teardown skipped here
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe (`wattsched ... | head`): nothing more can be written
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
