"""The ``slurm_cluster`` fixture: one live local Slurm testbed (``wattsched testbed``) for the test session.

Loaded by conftest (``pytest_plugins``). A test that uses it is marked ``@pytest.mark.slurm``; when the testbed
cannot start (not root, packages missing, a daemon failing) the test fails under CI=true and skips elsewhere,
with the reason. The cluster is always brought down at the end of the session, and ``down`` checks that no
process of it survives.

The session cluster: 6 nodes, idle 100 W, at most 500 W per node, ``Licenses=power:2000``. Jobs declare their
true power with the testbed's convention (the comment ``testpower=W``, watts per node above idle); the helpers
here set it, the code under test must never read it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: The session cluster's settings (tests may rely on them).
SESSION_NODES = 6
SESSION_LICENSE = 2000
IDLE_WATTS = 100
MAX_WATTS = 500


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def cannot_start(reason: str) -> None:
    """Fail under CI=true, skip elsewhere: the rule for tests that need a live cluster."""
    message = f"the local Slurm testbed cannot start: {reason}"
    if _ci():
        pytest.fail(message + " (CI=true requires it)")
    pytest.skip(message)


@dataclass
class SlurmCluster:
    """A running testbed and the helpers the tests need."""

    base: Path
    state: Any  # wattsched.testbed.config.TestbedState

    @property
    def env(self) -> dict[str, str]:
        """The environment of the Slurm tools for this cluster (SLURM_CONF set)."""
        return self.state.env()

    @property
    def workdir(self) -> Path:
        """A folder every test user can write to (the jobs' output goes there)."""
        return self.base / "work"

    def run(self, *argv: str, user: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Slurm command against the cluster, as ``user`` (runuser) when given."""
        full = ["runuser", "-u", user, "--", *argv] if user else list(argv)
        done = subprocess.run(full, capture_output=True, text=True, env=self.env, cwd=self.workdir, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(full)} exited {done.returncode}: {done.stderr.strip()}")
        return done

    def submit(
        self,
        user: str = "wsalice",
        nodes: int = 1,
        seconds: float = 5,
        power: float | None = None,
        license_watts: int | None = None,
        name: str = "job",
        hold: bool = False,
        extra: Sequence[str] = (),
    ) -> int:
        """``sbatch`` an ``srun sleep`` job as ``user``; ``power``: its true per-node power above idle (the comment
        ``testpower=``); ``license_watts``: its request of the power license. Returns the job id."""
        argv = ["sbatch", "--parsable", "-J", name, "-N", str(nodes), "-o", "/dev/null"]
        if power is not None:
            argv += ["--comment", f"testpower={power:g}"]
        if license_watts is not None:
            argv += ["-L", f"{self.state.license_name}:{license_watts}"]
        if hold:
            argv.append("-H")
        argv += [*extra, "--wrap", f"srun sleep {seconds:g}"]
        return int(self.run(*argv, user=user).stdout.strip().split(";")[0])

    def job_fields(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o`` of a job as a dict (empty when Slurm forgot it)."""
        done = self.run("scontrol", "show", "job", "-o", str(job_id), check=False)
        return dict(part.split("=", 1) for part in done.stdout.split() if "=" in part)

    def wait_state(self, job_id: int, states: Sequence[str], timeout: float = 60) -> str:
        """Wait until the job is in one of ``states`` (JobState of scontrol); return it."""
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            state = self.job_fields(job_id).get("JobState", "")
            if state in states:
                return state
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} still {state or 'unknown'} after {timeout:.0f} s, not in {states}")

    def node_watts(self) -> dict[str, float | None]:
        """CurrentWatts of every node as scontrol reports it (None for n/s)."""
        from wattsched.testbed.status import parse_node_line

        lines = self.run("scontrol", "show", "node", "-o").stdout.splitlines()
        return {n["name"]: n["current_watts"] for n in map(parse_node_line, lines)}

    def power_log(self) -> list[dict[str, Any]]:
        """The power daemon's lines so far (time, total watts, per-node watts, running jobs)."""
        from wattsched.testbed.power import read_power_log

        return read_power_log(Path(self.state.power_log))

    def sacct(
        self, job_id: int, fields: str = "JobID,State,ElapsedRaw,ConsumedEnergyRaw,NNodes,Start,End"
    ) -> list[dict[str, str]]:
        """``sacct -P`` rows of a job and its steps."""
        out = self.run("sacct", "-P", "-j", str(job_id), "-o", fields).stdout.splitlines()
        header = out[0].split("|")
        return [dict(zip(header, line.split("|"), strict=True)) for line in out[1:]]

    def cancel_all(self) -> None:
        """Cancel every job and wait until every node is idle again (a test leaves the cluster as it found it)."""
        jobs = self.run("squeue", "-h", "-o", "%i").stdout.split()
        if jobs:
            self.run("scancel", *jobs, check=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = self.run("sinfo", "-h", "-N", "-o", "%T").stdout.split()
            if states and all(s == "idle" for s in states):
                return
            time.sleep(0.2)
        raise AssertionError("nodes not idle 30 s after scancel")


@contextlib.contextmanager
def own_testbed(**options: Any) -> Iterator[SlurmCluster]:
    """A testbed of its own for a test (``options``: those of TestbedOptions), always brought down."""
    from wattsched.testbed.cluster import down, up
    from wattsched.testbed.config import TestbedOptions
    from wattsched.testbed.procs import TestbedError

    if os.geteuid() != 0:
        cannot_start("it needs root (mount namespaces, munge and MariaDB users)")
    base = Path(tempfile.mkdtemp(prefix="wattsched-testbed-", dir="/tmp"))  # world-searchable, unlike tmp_path
    base.chmod(0o755)
    try:
        try:
            result = up(TestbedOptions(base=base, **options))
        except TestbedError as exc:
            cannot_start(str(exc))
        yield SlurmCluster(base, result.state)
    finally:
        left = down(base)
        if not left.survivors:
            shutil.rmtree(base, ignore_errors=True)
        assert not left.survivors, f"processes of the testbed {base} survived down: {left.survivors}"


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """The session's testbed (see the module docstring)."""
    with own_testbed(
        nodes=SESSION_NODES, idle_watts=IDLE_WATTS, max_watts=MAX_WATTS, license_total=SESSION_LICENSE
    ) as cluster:
        yield cluster
