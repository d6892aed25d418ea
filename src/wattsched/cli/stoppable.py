"""Ctrl-C and SIGTERM for every command at once: the root app is a :class:`StoppableTyper`.

Typer turns a :class:`KeyboardInterrupt` into exit code 130 without a word; a batch system's SIGTERM would kill
the process without running any ``finally``. Here SIGTERM behaves as Ctrl-C for the whole command
(:func:`wattsched.core.stopping.sigterm_as_interrupt`), the worker processes still running are ended, and one line
says what happened: the command's own (:func:`exit_interrupted`, e.g. a campaign's "N of M runs done"), or a
generic one. No traceback, exit code 130.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import typer

from wattsched.core.stopping import (
    INTERRUPTED_EXIT,
    enable_stop_in_compiled_code,
    sigterm_as_interrupt,
    stop_children,
)

_reported = False


def exit_interrupted(message: str) -> NoReturn:
    """Print ``message`` (one line, plain text, on stderr) for an interrupted command and exit with 130."""
    global _reported
    from wattsched.cli.common import err  # deferred: common imports polars; this module is loaded by every start

    err.print(message, markup=False, highlight=False, soft_wrap=True, style="bold yellow")
    _reported = True
    raise typer.Exit(code=INTERRUPTED_EXIT)


def interrupted_line() -> str:
    """The line of a command stopped without a line of its own."""
    command = " ".join(["wattsched", *sys.argv[1:]])
    return f"interrupted: `{command}` stopped before it finished (Ctrl-C or SIGTERM)"


class StoppableTyper(typer.Typer):
    """A :class:`typer.Typer` whose run stops cleanly on Ctrl-C and SIGTERM (see the module docstring)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        enable_stop_in_compiled_code()  # a long compiled pass stops at once too (core/stopping.py)
        try:
            with sigterm_as_interrupt():
                return super().__call__(*args, **kwargs)
        except SystemExit as stop:
            if stop.code == INTERRUPTED_EXIT:
                stop_children()  # a pool the command did not end itself (none is left running)
                if not _reported:
                    print(interrupted_line(), file=sys.stderr)
            raise
