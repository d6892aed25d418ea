"""The submit-time power guard of the shipped ``job_submit.lua`` on the live Slurm 22.05 testbed (markers slurm and
slow: fails under CI=true when the testbed cannot start), with jobs submitted and changed by a non-root user.

Five one-CPU nodes, idle 100 W, at most 500 W: a cap of 2,100 W leaves a budget of 1,600 W for the jobs, which is
slurm.conf's license total and the Lua's BUDGET_WATTS; the Lua's default is the net worst case, 400 W per node.
Truth lives only in the job comments (``testpower=W``, the testbed's convention).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from slurm_fixtures import SlurmCluster, own_testbed
from wattsched.advise.slurm import DEFAULT_MARKER, OVERSIZE_MARKER, job_submit_lua

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

NODES = 5
IDLE = 100  # W per node
MAX = 500  # W per node
W = MAX - IDLE  # the Lua's default per node: the net worst case
CAP = 2100
BUDGET = CAP - NODES * IDLE  # 1,600 W: the license total


def _install_guard(c: SlurmCluster, **constants: str) -> None:
    """The shipped job_submit.lua as docs/advisor.md installs it, its first lines set for this cluster. The first
    install returns once slurmctld's log shows it loaded; 22.05 reloads a changed script at the next submission
    (when its mtime, in whole seconds, is past the last load)."""
    conf = Path(c.env["SLURM_CONF"])
    text = job_submit_lua().read_text()
    settings = {"LICENSE": f'"{c.state.license_name}"', "DEFAULT_WATTS_PER_NODE": str(W), **constants}
    for name, value in settings.items():
        text, n = re.subn(
            rf"^local {name} = .*$", lambda _m, line=f"local {name} = {value}": line, text, count=1, flags=re.M
        )
        assert n == 1, f"job_submit.lua has no line 'local {name} = ...'"
    script = conf.parent / "job_submit.lua"
    if "JobSubmitPlugins=lua" in conf.read_text():
        time.sleep(1.1)
        script.write_text(text)
        return
    log = c.base / "log" / "slurmctld.log"
    script.write_text(text)
    script.chmod(0o644)
    conf.write_text(conf.read_text() + "JobSubmitPlugins=lua\n")
    c.run("scontrol", "reconfigure")
    deadline = time.monotonic() + 20
    while "wattsched job_submit.lua loaded" not in log.read_text():
        assert time.monotonic() < deadline, "slurmctld did not load job_submit.lua within 20 s"
        time.sleep(0.2)


def _sbatch(
    c: SlurmCluster, *args: str, user: str = "wsalice", seconds: float = 1, power: float | None = None
) -> tuple[int | None, str]:
    """sbatch as ``user`` with exactly the options given (no -N added): the job id (None when refused) and what
    sbatch printed on stderr."""
    argv = ["sbatch", "--parsable", "-o", "/dev/null", "-t", "1"]
    if power is not None:
        argv += ["--comment", f"testpower={power:g}"]
    done = c.run(*argv, *args, "--wrap", f"srun sleep {seconds:g}", user=user, check=False)
    job = int(done.stdout.strip().split(";")[0]) if done.returncode == 0 else None
    return job, done.stderr.strip()


def _show(c: SlurmCluster, job: int) -> str:
    """``scontrol show job`` as text (AdminComment holds spaces: job_fields would split it)."""
    return c.run("scontrol", "show", "job", str(job)).stdout


def _field(c: SlurmCluster, job: int, name: str) -> str:
    match = re.search(rf"\b{name}=(\S*)", _show(c, job))
    return match[1] if match else ""


def _as_user(c: SlurmCluster, *argv: str, user: str = "wsalice") -> tuple[int, str]:
    done = c.run(*argv, user=user, check=False)
    return done.returncode, done.stderr.strip()


class Sampler:
    """Measured cluster power: the sum of every node's CurrentWatts (``scontrol show node``), every second."""

    def __init__(self, c: SlurmCluster, nodes: int) -> None:
        self.c, self.nodes = c, nodes
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            out = self.c.run("scontrol", "show", "node", "-o", check=False).stdout
            watts = [float(w) for w in re.findall(r"CurrentWatts=(\d+)", out)]
            if len(watts) == self.nodes:
                self.samples.append((time.time(), sum(watts)))
            self._stop.wait(1.0)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    @property
    def peak(self) -> float:
        return max(w for _, w in self.samples)


def _sacct(c: SlurmCluster, jobs: Sequence[int]) -> dict[str, dict[str, str]]:
    """sacct allocation lines of the jobs (array tasks and heterogeneous components each a line): state, start,
    end and the power license the job held (AllocTRES license/...)."""
    out = c.run(
        "sacct", "-X", "-n", "-P", "-j", ",".join(map(str, jobs)), "-o", "JobID,State,Start,End,AllocTRES"
    ).stdout
    rows = {}
    for line in out.splitlines():
        job, state, start, end, tres = line.split("|")
        power = re.search(rf"license/{re.escape(c.state.license_name)}=(\d+)", tres)
        rows[job] = {"state": state, "start": start, "end": end, "power": power[1] if power else ""}
    return rows


def _wait_done(c: SlurmCluster, jobs: Sequence[int], timeout: float = 60) -> None:
    for job in jobs:
        c.wait_state(job, ["COMPLETED"], timeout=timeout)


# ---------------------------------------------------------------------------------------------------------------
def test_hostile_requests_and_changes_of_a_user_get_the_guards_license() -> None:
    with own_testbed(nodes=NODES, idle_watts=IDLE, max_watts=MAX, license_total=BUDGET) as c:
        _install_guard(c, BUDGET_WATTS=str(BUDGET))
        # held by their user (-H) so that they stay pending while we look: the guard does not touch that hold
        cases = {
            ("-N", "2", "-L", "power:1"): 2 * W,  # a new user's own license is not kept
            ("-N", "1", "-L", "power:0"): W,
            ("-N", "1", "-L", "power:500,power:0"): W,
            ("-n", "4"): 4 * W,  # no -N: one task a node at most, 4 nodes
            ("-n", "2", "--ntasks-per-node=2"): 2 * W,  # one-CPU nodes: still a task a node
            ("--exclusive", "-n", "3"): 3 * W,
        }
        jobs = {}
        for args, watts in cases.items():
            job, err = _sbatch(c, "-H", *args)
            assert job is not None, (args, err)
            jobs[args] = job
            text = _show(c, job)
            assert f"Licenses=power:{watts} " in text and f"AdminComment={DEFAULT_MARKER}" in text, (args, text)
        assert "power:1 replaced by power:800" in _sbatch(c, "-H", "-N", "2", "-L", "power:1")[1]

        # larger than the budget: held by the guard with the whole budget as its license, and it stays held
        oversize = []
        for args in (("-N", "5"), ("--exclusive", "-n", "4096", "--ntasks-per-node=64")):
            job, err = _sbatch(c, *args, user="wsbob")
            assert job is not None and "job held: its worst case is 2000 W (5 nodes x 400 W)" in err, (args, err)
            oversize.append(job)
        time.sleep(3)  # five idle nodes and nothing else runnable: a job the guard let through would start now
        for job in oversize:
            text = _show(c, job)
            assert "JobState=PENDING" in text and "Priority=0 " in text, text
            assert f"Licenses=power:{BUDGET} " in text and OVERSIZE_MARKER in text, text

        # changes by the user
        two = jobs[("-N", "2", "-L", "power:1")]
        for change in ("Licenses=power:500,power:0", "Licenses=power:0", "NumNodes=4"):
            rc, err = _as_user(c, "scontrol", "update", f"JobId={two}", change)
            assert rc != 0 and "denied" in err, (change, err)
        assert (_field(c, two, "Licenses"), _field(c, two, "NumNodes")) == (f"power:{2 * W}", "2-2")
        rc, err = _as_user(c, "scontrol", "update", f"JobId={two}", "TimeLimit=5")
        assert rc == 0 and _field(c, two, "TimeLimit") == "00:05:00", err
        four = jobs[("-n", "4")]
        rc, err = _as_user(c, "scontrol", "update", f"JobId={four}", "NumTasks=5")
        assert rc != 0 and "denied" in err and _field(c, four, "NumTasks") == "4", err
        for release in (
            ("scontrol", "release", str(oversize[0])),
            ("scontrol", "update", f"JobId={oversize[0]}", "Nice=10"),
        ):
            rc, err = _as_user(c, *release, user="wsbob")
            assert rc != 0 and _field(c, oversize[0], "Priority") == "0", (release, err)
        c.run("scontrol", "update", f"JobId={two}", "Licenses=power:300")  # root (the advisor) may
        assert _field(c, two, "Licenses") == "power:300"
        c.cancel_all()

        # arrays and heterogeneous jobs: every task and every component holds the guard's license (sacct)
        array, err = _sbatch(c, "--array=0-2", "-N", "1", "-L", "power:1")
        het, err2 = _sbatch(c, "-N", "1", "-L", "power:1", ":", "-n", "2", user="wsbob")
        assert array is not None and het is not None, (err, err2)
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            rows = _sacct(c, [array, het])
            if len(rows) == 5 and all(r["state"] == "COMPLETED" for r in rows.values()):
                break
            time.sleep(0.5)
        assert {job: r["power"] for job, r in rows.items()} == {
            f"{array}_0": str(W),
            f"{array}_1": str(W),
            f"{array}_2": str(W),
            f"{het}+0": str(W),
            f"{het}+1": str(2 * W),
        }, rows

        # srun without sbatch asks for its allocation through the same plugin
        c.run("srun", "-J", "srunguard", "-N", "2", "-L", "power:1", "-t", "1", "true", user="wsalice")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # slurmdbd records the job a moment after srun returns
            out = c.run("sacct", "-X", "-n", "-P", "--name", "srunguard", "-o", "AllocTRES").stdout
            if "license/" in out:
                break
            time.sleep(0.5)
        assert f"license/power={2 * W}" in out, out

        # refuse instead of hold: one line of the guard on sbatch's stderr, then Slurm's own
        _install_guard(c, BUDGET_WATTS=str(BUDGET), OVERSIZE='"refuse"')
        job, err = _sbatch(c, "-N", "5")
        assert job is None and err.splitlines()[0] == (
            "sbatch: error: wattsched: job refused: its worst case is 2000 W (5 nodes x 400 W), above the power "
            "budget of 1600 W; ask for fewer nodes (-N) or tasks (-n)"
        ), err
        # what Slurm itself does with a license above its total (root keeps the license it asks for)
        done = c.run("sbatch", "-o", "/dev/null", "-N", "1", "-L", f"power:{BUDGET + 1}", "--wrap", "true", check=False)
        assert done.returncode != 0 and "Invalid license specification" in done.stderr, done.stderr


def test_the_hostile_mix_stays_under_the_cap_without_the_advisor() -> None:
    """No advisor: slurm.conf's license total (the budget) and the guard alone. A new user's -N 2 -L power:1, a
    -n 3 without -N, a -N 1 -L power:0 (each drawing the worst case, 400 W a node above idle) and a job larger than
    the budget. With the Lua before the guard, the first two ran together on all five nodes (licenses power:1 and
    power:400): 2,500 W under a 2,100 W cap. Now the measured power never goes above the cap."""
    with own_testbed(nodes=NODES, idle_watts=IDLE, max_watts=MAX, license_total=BUDGET) as c:
        _install_guard(c, BUDGET_WATTS=str(BUDGET))
        with Sampler(c, NODES) as sampler:
            two, _ = _sbatch(c, "-N", "2", "-L", "power:1", power=W, seconds=8)
            tasks, _ = _sbatch(c, "-n", "3", power=W, seconds=8, user="wsbob")
            one, _ = _sbatch(c, "-N", "1", "-L", "power:0", power=W, seconds=8)
            big, _ = _sbatch(c, "-N", "5", power=W, seconds=8, user="wsbob")
            assert two and tasks and one and big
            _wait_done(c, [two, tasks, one])
        rows = _sacct(c, [two, tasks, one])
        assert [rows[str(j)]["power"] for j in (two, tasks, one)] == [str(2 * W), str(3 * W), str(W)], rows
        assert len(sampler.samples) > 10
        assert sampler.peak <= CAP, f"measured peak {sampler.peak} W over the cap {CAP} W"
        # the licenses bound: -n 3 (1,200 W) never ran beside -N 2 (800 W), as it did before the guard
        spans = {job: (rows[str(job)]["start"], rows[str(job)]["end"]) for job in (two, tasks)}
        assert spans[tasks][1] <= spans[two][0] or spans[two][1] <= spans[tasks][0], spans
        assert sampler.peak >= NODES * IDLE + 3 * W  # and the budget was used: jobs did run side by side
        text = _show(c, big)
        assert "JobState=PENDING" in text and "Priority=0 " in text and OVERSIZE_MARKER in text, text
