"""The harness of the malformed-input corpus (tests/test_malformed_*.py): one case = one small input and the class
of outcome it must have, judged the same way for every reader and config file.

Outcome classes:

* :class:`Error` — the reader refuses the whole input with ONE line that names the file and contains ``fragment``
  (the field or the reason); no other exception type, no newline, at most ``MAX_MESSAGE`` characters.
* :class:`Rejects` — the reader returns ``accepted`` jobs and ``rejected`` reject rows, and they account for every
  record (no silent loss); each reject names the file, a line, a field and a reason; the first reject's field is
  ``field`` and its reason contains ``reason`` when given.
* :class:`Accepts` — no reject; ``accepted`` jobs; ``check`` (a callable on the jobs) holds.

Every case runs under a wall-clock alarm (:data:`TIMEOUT_S`): a hang is a failure, not a stuck test run.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

#: Seconds one case may take (the largest case reads a few hundred kB).
TIMEOUT_S = 20
#: Longest acceptable error message: the file name, the field, the reason and a short echo of the input.
MAX_MESSAGE = 600


@dataclass(frozen=True)
class Error:
    fragment: str


@dataclass(frozen=True)
class Rejects:
    accepted: int
    rejected: int
    field: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Accepts:
    accepted: int
    check: Callable[[pl.DataFrame], bool] | None = None


Expected = Error | Rejects | Accepts
#: Makes a case's input in a folder and returns its path.
Writer = Callable[[Path], Path]


@dataclass(frozen=True)
class Case:
    """``name``: the test id; ``write(dir) -> path``: makes the input; ``expected``: its outcome class."""

    name: str
    write: Callable[[Path], Path]
    expected: Expected


class Hang(Exception):
    pass


@contextmanager
def deadline(seconds: int = TIMEOUT_S) -> Iterator[None]:
    def _alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no outcome after {seconds} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def check_case(case: Case, tmp_path: Path, read: Callable[[Path], Any], errors: tuple[type[Exception], ...]) -> None:
    """Run ``read`` on the case's input and assert its outcome class (see the module docstring)."""
    path = case.write(tmp_path)
    expected = case.expected
    try:
        with deadline():
            result = read(path)
    except Hang as exc:
        raise AssertionError(f"{case.name}: hang: {exc}") from None
    except errors as exc:
        message = str(exc)
        assert isinstance(expected, Error), f"{case.name}: expected {expected}, got error: {message}"
        assert path.name in message, f"{case.name}: the error does not name the file: {message}"
        assert "\n" not in message, f"{case.name}: not one line: {message!r}"
        assert len(message) <= MAX_MESSAGE, f"{case.name}: {len(message)} characters: {message[:200]}..."
        assert expected.fragment.lower() in message.lower(), f"{case.name}: {expected.fragment!r} not in: {message}"
        return
    # Any other exception propagates: a traceback fails the test with the exception itself.
    assert not isinstance(expected, Error), f"{case.name}: expected an error naming {expected.fragment!r}, got jobs"
    if not hasattr(result, "rejects"):  # a config file: accepted means it validated
        return
    jobs, rejects = result.jobs, result.rejects
    if isinstance(expected, Accepts):
        assert rejects.height == 0, f"{case.name}: unexpected rejects: {rejects.to_dicts()}"
        assert jobs.height == expected.accepted, f"{case.name}: {jobs.height} jobs, expected {expected.accepted}"
        if expected.check is not None:
            assert expected.check(jobs), f"{case.name}: value check failed on {jobs.to_dicts()}"
        return
    assert (jobs.height, rejects.height) == (expected.accepted, expected.rejected), (
        f"{case.name}: {jobs.height} accepted + {rejects.height} rejected, expected"
        f" {expected.accepted} + {expected.rejected}: {rejects.to_dicts()}"
    )
    for row in rejects.iter_rows(named=True):
        assert row["source"] and Path(row["source"]).name in (path.name, *[p.name for p in path.glob("*")]), row
        assert row["line"] is not None and row["reason"], f"{case.name}: reject without line or reason: {row}"
        assert row["field"], f"{case.name}: reject without a field: {row}"
    first = rejects.row(0, named=True)
    if expected.field is not None:
        assert first["field"] == expected.field, f"{case.name}: field {first['field']!r}: {first['reason']}"
    if expected.reason is not None:
        assert expected.reason.lower() in first["reason"].lower(), f"{case.name}: reason {first['reason']!r}"


def text_file(name: str, text: str | bytes) -> Callable[[Path], Path]:
    """A writer of one file holding ``text``."""

    def write(folder: Path) -> Path:
        path = folder / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        return path

    return write


def check_cli(args: list[str], named: str, fragment: str) -> str:
    """Run ``wattsched ARGS`` in-process (typer's CliRunner, under :func:`deadline`) and assert the outcome of a
    refused input as the command line gives it: a non-zero exit, exactly one ``error:`` line, which names
    ``named`` (a file name) and contains ``fragment`` (any case), at most :data:`MAX_MESSAGE` characters, and no
    traceback or ``--debug`` hint (that hint marks an exception the toolkit did not expect). Returns the line."""
    from typer.testing import CliRunner

    from wattsched.cli import app

    try:
        with deadline():
            result = CliRunner().invoke(app, args)
    except Hang as exc:
        raise AssertionError(f"{args}: hang: {exc}") from None
    shown = result.stderr + result.stdout
    assert result.exit_code != 0, f"{args}: exit 0: {shown[-500:]}"
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, f"{args}: expected one error line, got: {shown[-800:]}"
    line = errors[0]
    assert "Traceback" not in shown and "--debug" not in line, f"{args}: an unexpected exception: {line}"
    assert named in line, f"{args}: the error does not name {named}: {line}"
    assert fragment.lower() in line.lower(), f"{args}: {fragment!r} not in: {line}"
    assert len(line) <= MAX_MESSAGE, f"{args}: {len(line)} characters: {line[:200]}..."
    return line
