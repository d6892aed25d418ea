"""The testbed as functions: start, stop and inspect a throwaway local Slurm cluster with synthetic node power
(docs/testbed.md); what ``wattsched testbed up|down|status`` do, with their option names and defaults.

Nothing here prints: each function returns what happened, and a testbed that cannot start is a
:class:`TestbedError` (one line saying why and what to do). Importing this module stays cheap: the process
handling (psutil) is imported by the functions that use it, and its types resolve on first use (PEP 562).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wattsched.core.lazy_names import lazy_getattr
from wattsched.testbed.config import STATE_FILE, TestbedOptions, TestbedState

if TYPE_CHECKING:  # psutil: resolved on first use by __getattr__ below
    from wattsched.testbed.cluster import DownResult, UpResult
    from wattsched.testbed.procs import TestbedError
    from wattsched.testbed.status import TestbedStatus

__all__ = [
    "DEFAULT_DIR",
    "DownResult",
    "NoTestbedError",
    "TestbedError",
    "TestbedOptions",
    "TestbedState",
    "TestbedStatus",
    "TestbedUp",
    "UpResult",
    "testbed_down",
    "testbed_status",
    "testbed_up",
]

#: The default testbed folder (relative to where the command runs).
DEFAULT_DIR = Path("wattsched-testbed")

#: The toolkit types re-exported here without importing their modules (and psutil) with this one.
_LAZY = {
    "DownResult": "wattsched.testbed.cluster",
    "UpResult": "wattsched.testbed.cluster",
    "TestbedError": "wattsched.testbed.procs",
    "TestbedStatus": "wattsched.testbed.status",
}


#: A re-exported toolkit type, its module imported on first use (PEP 562).
__getattr__ = lazy_getattr(__name__, _LAZY, keep=globals())


class NoTestbedError(FileNotFoundError):
    """The folder holds no testbed (no ``testbed.json``): nothing to stop or to show. One line naming the folder
    (a FileNotFoundError: what is missing is the testbed's state file)."""


@dataclass(frozen=True)
class TestbedUp:
    """What :func:`testbed_up` did: the running testbed's state, whether it was already running (then nothing was
    started, and ``ignored`` names the options given that differ from its own, as ``"--nodes 4"``), whether the
    stale state of a crashed one was cleaned up first, and the test users it created."""

    state: TestbedState
    already_running: bool
    cleaned_stale: bool
    users_created: list[str]
    ignored: list[str]


def testbed_up(
    dir: Path = DEFAULT_DIR,
    *,
    nodes: int = 8,
    idle_watts: int = 100,
    max_watts: int = 500,
    license_total: int | None = None,
    remote_license: bool = False,
    rest: bool = False,
) -> TestbedUp:
    """Start the testbed in ``dir`` (munge, MariaDB, slurmdbd, slurmctld, one slurmd per node, the power daemon):
    ``nodes`` emulated nodes drawing ``idle_watts`` without a job and at most ``max_watts``, a power license of
    ``license_total`` W (default: nodes x max_watts, never binding; ``remote_license``: power@testbed in
    slurmdbd), and slurmrestd with JWT when ``rest``. A running testbed is left as it is (its differing options
    are reported, not applied: it cannot change under running jobs); a crashed one is cleaned up and started
    again. Needs root and the Debian packages of ``make testbed-deps``. Raises :class:`TestbedError`, or an
    OSError when the folder cannot be made or written."""
    from wattsched.testbed.cluster import up  # deferred: psutil, hostlist

    opts = TestbedOptions(
        base=dir, nodes=nodes, idle_watts=idle_watts, max_watts=max_watts, license_total=license_total,
        remote_license=remote_license, rest=rest,
    )  # fmt: skip
    result = up(opts)
    return TestbedUp(
        state=result.state, already_running=result.already_running, cleaned_stale=result.cleaned_stale,
        users_created=result.users_created, ignored=_differences(opts, result.state) if result.already_running else [],
    )  # fmt: skip


def _differences(opts: TestbedOptions, state: TestbedState) -> list[str]:
    """The options of ``up`` that differ from those of the running testbed (ignored: it runs as it is)."""
    running = {
        "--nodes": len(state.nodes), "--idle-watts": state.idle_watts, "--max-watts": state.max_watts,
        "--license-total": state.license_total, "--remote-license": state.remote_license,
        "--rest": state.rest_url is not None,
    }  # fmt: skip
    asked = {
        "--nodes": opts.nodes, "--idle-watts": opts.idle_watts, "--max-watts": opts.max_watts,
        "--license-total": opts.power_total, "--remote-license": opts.remote_license, "--rest": opts.rest,
    }  # fmt: skip
    return [f"{name} {asked[name]}" for name in running if running[name] != asked[name]]


def testbed_down(dir: Path = DEFAULT_DIR, *, purge: bool = False) -> DownResult:
    """Stop the testbed in ``dir``: cancel every job, stop the daemons in reverse order, then any other process of
    the testbed (a daemon restarted by hand is found by its configuration); delete the folder too when ``purge``.
    The processes still alive after it all are in the result's ``survivors`` (a caller should fail on them).
    Raises :class:`NoTestbedError` when ``dir`` holds no testbed."""
    if not (dir / STATE_FILE).exists():
        raise NoTestbedError(f"{dir}: no testbed here (no {STATE_FILE})")
    from wattsched.testbed.cluster import down

    return down(dir, purge=purge)


def testbed_status(dir: Path = DEFAULT_DIR) -> TestbedStatus:
    """The testbed in ``dir``: its daemons (alive or not), its nodes (state, CurrentWatts) and its power license
    (total, used); ``running`` says whether every daemon is alive. Raises :class:`NoTestbedError` when ``dir``
    holds no (readable) testbed."""
    from wattsched.testbed.status import status

    found = status(dir)
    if found is None:
        raise NoTestbedError(f"{dir}: no testbed here (no {STATE_FILE})")
    return found
