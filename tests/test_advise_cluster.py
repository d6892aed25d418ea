"""``wattsched advise`` on a real Slurm cluster (the local testbed, marker slurm: fails under CI=true when it cannot
start): the cap holds on measured power, shadow mode changes nothing, learning, faults (kill -9, slurmctld
restart, a malformed answer) and a cap that changes at run time.

Truth lives only in the job comments (``testpower=W``, the testbed's convention): the advisor never reads them,
the tests compare its predictions and Slurm's measured power against them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from slurm_fixtures import SlurmCluster, own_testbed
from wattsched.advise.slurm import job_submit_lua
from wattsched.advise.store import AdvisorStore

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

IDLE = 100  # W per node (the testbed's --idle-watts)
MAX = 500  # W per node (--max-watts): the net worst case is MAX − IDLE
NODES = 4


def _install_lua(c: SlurmCluster, *, gate: bool = False) -> None:
    """The shipped job_submit.lua, installed as docs/advisor.md says, with the default at the net worst case."""
    conf = Path(c.env["SLURM_CONF"])
    text = job_submit_lua().read_text()
    text = re.sub(
        r"^local DEFAULT_WATTS_PER_NODE = \d+$",
        f"local DEFAULT_WATTS_PER_NODE = {MAX - IDLE}",
        text,
        count=1,
        flags=re.M,
    )
    text = re.sub(r'^local LICENSE = "power"$', f'local LICENSE = "{c.state.license_name}"', text, count=1, flags=re.M)
    if gate:
        text = text.replace("local GATE = false", "local GATE = true")
    (conf.parent / "job_submit.lua").write_text(text)
    (conf.parent / "job_submit.lua").chmod(0o644)
    conf.write_text(conf.read_text() + "JobSubmitPlugins=lua\n")
    c.run("scontrol", "reconfigure")
    time.sleep(1)


def _wait_first_cycle(status: Path, timeout: float = 30) -> dict[str, object]:
    """The advisor's first successful cycle (its status file): from then on the cap is in force in Slurm. (Before
    it, only slurm.conf's license total holds; docs/advisor.md: set it to the cap's budget.)"""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if status.exists():
            data = json.loads(status.read_text())
            if data.get("ok"):
                return data
        time.sleep(0.2)
    raise AssertionError(f"no successful advisor cycle within {timeout} s")


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "advisor.toml"
    path.write_text(f"[power]\nmax_watts_per_node = {MAX}\n" + text)
    return path


def _advise_argv(state: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "wattsched", "advise", "--state", str(state), "--interval", "1", *args]


@contextmanager
def _advisor(
    c: SlurmCluster, state: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    """The advisor as its own process (as a service runs it), stopped with SIGTERM at the end."""
    log = state.with_suffix(".log").open("a")
    proc = subprocess.Popen(_advise_argv(state, *args), env=env or c.env, stdout=log, stderr=log, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


class PowerSampler:
    """Measured cluster power: the sum of every node's CurrentWatts (``scontrol show node``), every second."""

    def __init__(self, c: SlurmCluster) -> None:
        self.c = c
        self.samples: list[tuple[float, float]] = []
        self.readings: list[float] = []  # every node's CurrentWatts at every sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            out = self.c.run("scontrol", "show", "node", "-o", check=False).stdout
            watts = [float(w) for w in re.findall(r"CurrentWatts=(\d+)", out)]
            if len(watts) == NODES:
                self.samples.append((time.time(), sum(watts)))
                self.readings.extend(watts)
            self._stop.wait(1.0)

    def __enter__(self) -> PowerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    @property
    def peak(self) -> float:
        return max(w for _, w in self.samples)


def _wait_done(c: SlurmCluster, jobs: list[int], timeout: float) -> None:
    for job in jobs:
        c.wait_state(job, ["COMPLETED"], timeout=timeout)


def _sacct_jobs(c: SlurmCluster, jobs: list[int]) -> dict[int, dict[str, str]]:
    """sacct of the jobs (allocation lines): state, start, end, nodes, energy."""
    fields = "JobIDRaw,State,Start,End,NNodes,ConsumedEnergyRaw,Submit"
    out = c.run("sacct", "-X", "-n", "-P", "-j", ",".join(map(str, jobs)), "-o", fields).stdout
    rows = {}
    for line in out.splitlines():
        raw, state, start, end, nodes, energy, submit = line.split("|")
        rows[int(raw)] = {
            "state": state,
            "start": start,
            "end": end,
            "nodes": nodes,
            "energy": energy,
            "submit": submit,
        }
    return rows


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _sacct_peak(c: SlurmCluster, jobs: list[int]) -> float:
    """Cluster power from sacct afterwards: each job's mean power (energy / elapsed) on its nodes, idle elsewhere,
    at every instant a job starts or ends."""
    rows = _sacct_jobs(c, jobs)
    spans = []
    for row in rows.values():
        start, end, nodes = _epoch(row["start"]), _epoch(row["end"]), int(row["nodes"])
        elapsed = max(end - start, 1.0)
        spans.append((start, end, nodes, float(row["energy"] or 0) / elapsed))
    peak = 0.0
    for t, *_ in spans:
        busy = [(n, w) for s, e, n, w in spans if s <= t < e]
        used = sum(n for n, _ in busy)
        peak = max(peak, sum(w for _, w in busy) + IDLE * (NODES - used))
    return peak


def _licenses(c: SlurmCluster, jobs: list[int]) -> dict[int, int | None]:
    out: dict[int, int | None] = {}
    for job in jobs:
        text = c.job_fields(job).get("Licenses", "")
        m = re.search(rf"{re.escape(c.state.license_name)}[:*](\d+)", text)
        out[job] = int(m[1]) if m else None
    return out


# ---------------------------------------------------------------------------------------------------------------
def test_licenses_mode_keeps_measured_power_under_the_cap_and_learns(tmp_path: Path) -> None:
    """Cap 1,200 W on 4 nodes (idle 400 W: a budget of 800 W for the jobs). Alice's jobs draw 350 W above idle,
    Bob's 150 W: four of Alice's at once would draw 1,800 W. First two jobs each build the history under the Lua
    default, then eight jobs run under learned licenses."""
    cap = 1200
    with own_testbed(nodes=NODES, idle_watts=IDLE, max_watts=MAX) as c:
        _install_lua(c)
        state = tmp_path / "advisor.sqlite"
        truth = {"wsalice": 350.0, "wsbob": 150.0}
        status = tmp_path / "s.json"
        # fall_jobs = 1: this test measures how close learning gets to the truth after two jobs, not the gradual
        # fall (tests/test_advise_learn.py) that would keep the estimates a third of the way to the worst case
        config = _config(tmp_path, '[learning]\nfall_jobs = 1\nkey = ["user"]\n')  # "learn" teaches "run"
        with (
            PowerSampler(c) as sampler,
            _advisor(c, state, "--config", str(config), "--cap", f"{cap}W", "--status-file", str(status)),
        ):
            assert _wait_first_cycle(status)["budget"] == cap - NODES * IDLE
            first = [c.submit(user=u, power=w, seconds=8, name="learn") for u, w in truth.items() for _ in range(2)]
            _wait_done(c, first, timeout=120)
            time.sleep(3)  # the advisor records the completed jobs (sacct) in its next cycle
            second = [c.submit(user=u, power=w, seconds=10, name="run") for _ in range(4) for u, w in truth.items()]
            _wait_done(c, second, timeout=240)
            time.sleep(3)  # a cycle or two more: the last jobs' energy reaches the store
        jobs = first + second
        rows = _sacct_jobs(c, jobs)
        assert {r["state"] for r in rows.values()} == {"COMPLETED"}, rows
        assert len(sampler.samples) > 20
        assert sampler.peak <= cap, f"measured peak {sampler.peak} W over the cap {cap} W"
        assert _sacct_peak(c, jobs) <= cap * 1.02  # sacct's whole-second times blur the edges by a second
        # the jobs did overlap: the cap bound, it did not merely serialise everything
        assert sampler.peak >= 400 + 350 + 150
        with AdvisorStore(state) as store:
            predictions = store.frame("predictions")
            history = store.history_frame()
            running = store.frame("running")
        assert history.height == len(jobs)
        last = {}
        for job in second:
            row = predictions.filter(predictions["job_id"] == job)
            if row.height:
                last[job] = row.sort("time")["watts_per_node"][-1]
        # What the advisor could know of each user: the per-node power sacct measured for their completed jobs, and
        # the nodes' CurrentWatts while their jobs ran (the "running" floor: never below what the key draws now).
        # Both come from the testbed's emulated meter, which jitters on a loaded machine (Slurm reads integer
        # energy counters written every 0.25 s, times in whole seconds: on 2 busy cores, jobs of Bob's 150 W read
        # 122-166 W), so the measurement is checked against the truth loosely, and the learned estimate tightly
        # against what it was learned from.
        measured = {user: history.filter(history["user"] == user)["watts_net"].drop_nulls().to_list() for user in truth}
        for user, watts in measured.items():
            assert len(watts) == 6, (user, watts)
            assert truth[user] * 0.7 <= min(watts) and max(watts) <= truth[user] * 1.3, (user, watts)
        # The advisor also scales sacct's figures by how far they under-read its own readings of the running jobs
        # (AdvisorStore.sacct_correction: a median ratio, at most the highest ratio of any job, within [1, 1.5])
        gross = dict(zip(history["job_id"].to_list(), history["watts_gross"].to_list(), strict=True))
        ratios = [
            s / n / gross[int(j)]
            for j, s, n in zip(running["job_id"], running["watts_sum"], running["samples"], strict=True)
            if n and n >= 3 and gross.get(int(j))
        ]
        top_ratio = min(max(1.0, *ratios), 1.5)
        corrected = {user: [(w + IDLE) * top_ratio - IDLE for w in watts] for user, watts in measured.items()}
        split = (truth["wsalice"] + truth["wsbob"]) / 2  # a busy node's reading belongs to the nearer user's level
        read_net = [w - IDLE for w in sampler.readings if w > IDLE]
        seen = {"wsbob": [w for w in read_net if w < split], "wsalice": [w for w in read_net if w >= split]}
        for job, user in zip(second, [u for _ in range(4) for u in truth], strict=True):
            if job in last:  # sized by the advisor (a job Slurm started at once keeps the default)
                low, high = min(measured[user]), max(*corrected[user], *seen[user])
                assert low * 0.98 <= last[job] <= high * 1.02, (job, user, last[job], measured[user], high)
                assert last[job] == pytest.approx(truth[user], rel=0.30), (job, user, last[job])
        assert len(last) >= 4


def test_a_user_without_history_gets_the_default_and_shadow_mode_changes_nothing(tmp_path: Path) -> None:
    with own_testbed(nodes=2, idle_watts=IDLE, max_watts=MAX, license_total=1000) as c:
        blocker = c.submit(user="wsalice", power=100, seconds=60, license_watts=1000, name="blocker")
        c.wait_state(blocker, ["RUNNING"])
        pending = [c.submit(user="wsbob", power=200, seconds=5, license_watts=lic, name="p") for lic in (300, 700)]
        before = _licenses(c, pending)
        state = tmp_path / "shadow.sqlite"
        report = tmp_path / "report"
        options = ["--config", str(_config(tmp_path, "")), "--cap", "1000W", "--mode", "shadow"]
        cmd = _advise_argv(state, *options, "--report-dir", str(report))
        actions = state.with_name("shadow-actions.jsonl")
        with _advisor(c, state, *options, "--report-dir", str(report)) as proc:
            # a cycle or two: until the first license it would set is logged (a loaded machine takes longer than
            # the 1-s interval to start the advisor and run its first cycle), then a second for the report
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "set_license" not in (
                actions.read_text() if actions.exists() else ""
            ):
                time.sleep(0.5)
            time.sleep(2)
        assert proc.returncode == 0, state.with_suffix(".log").read_text()
        assert _licenses(c, pending) == before  # nothing written to Slurm
        assert "wattsched-cap" not in c.run("scontrol", "show", "reservation", "-o", check=False).stdout
        lines = [json.loads(x) for x in actions.read_text().splitlines()]
        assert lines and all(not row["applied"] for row in lines)
        sized = {row["job_id"]: row["value"] for row in lines if row["kind"] == "set_license"}
        # no history for wsbob: the default, the net worst case (500 − 100) per node, with no margin on top
        assert sized == {pending[0]: MAX - IDLE} or sized == {pending[0]: MAX - IDLE, pending[1]: MAX - IDLE}
        assert (report / "power.csv").exists() and (report / "advisor-power.png").exists()
        once = subprocess.run([*cmd, "--once"], env=c.env, capture_output=True, text=True, timeout=60)
        assert once.returncode == 0 and "set_license job" in once.stdout and _licenses(c, pending) == before


def _shim(folder: Path, name: str, body: str) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{folder}:{os.environ.get('PATH', '')}"}


def test_faults_kill_9_mid_cycle_slurmctld_restart_and_a_malformed_answer(tmp_path: Path) -> None:
    from wattsched.testbed.cluster import restart_slurmctld

    with own_testbed(nodes=2, idle_watts=IDLE, max_watts=MAX) as c:
        _install_lua(c)
        state = tmp_path / "advisor.sqlite"
        config = str(_config(tmp_path, '[learning]\nkey = ["user"]\n'))  # the "h" jobs teach the "p" ones
        # a first cycle on the idle cluster measures a node's idle power (kept in the store)
        first = subprocess.run(
            [*_advise_argv(state, "--config", config, "--cap", "1200W"), "--once"],
            env=c.env,
            capture_output=True,
            text=True,
        )
        assert first.returncode == 0, first.stderr
        # 16-s jobs: the energy counter slurmd reads at a job's end lags by the power daemon's period, longer on a
        # loaded machine; 8-s jobs read 11% low once on CI (learned 233 W with the 5% margin, truth 250 W)
        history = [c.submit(user="wsalice", power=250, seconds=16, name="h") for _ in range(2)]
        _wait_done(c, history, timeout=90)
        blocker = c.submit(user="wsbob", power=100, seconds=120, nodes=2, name="blocker")
        c.wait_state(blocker, ["RUNNING"])
        pending = [c.submit(user="wsalice", power=250, seconds=3, name="p") for _ in range(3)]
        default = _licenses(c, pending)
        assert set(default.values()) == {MAX - IDLE}

        # 1. a malformed squeue answer: one line, exit 1, no action
        env = c.env | _shim(tmp_path / "bad", "squeue", 'echo \'{"jobs": [{"job_id": "x"\'')
        bad = subprocess.run(
            [*_advise_argv(state, "--config", config, "--cap", "1200W"), "--once"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "squeue --json" in bad.stderr, bad.stderr
        assert _licenses(c, pending) == default

        # 2. killed with -9 in the middle of applying (scontrol update slowed down by a shim), then restarted
        marker = tmp_path / "updating"
        real = subprocess.run(["which", "scontrol"], capture_output=True, text=True).stdout.strip()
        slow = _shim(
            tmp_path / "slow",
            "scontrol",
            f'if [ "$1" = update ]; then touch {marker}; sleep 30; fi\nexec {real} "$@"',
        )
        proc = subprocess.Popen(
            _advise_argv(state, "--config", config, "--cap", "1200W"), env=c.env | slow, start_new_session=True
        )
        deadline = time.time() + 60
        while not marker.exists() and time.time() < deadline:
            time.sleep(0.2)
        assert marker.exists(), "the advisor never applied anything"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        with AdvisorStore(state) as store:  # intact, nothing counted twice
            assert store.history_frame().height == 2
        done = subprocess.run(
            [*_advise_argv(state, "--config", config, "--cap", "1200W"), "--once"],
            env=c.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        after = _licenses(c, pending)
        # learned: lowered from the default, to about the jobs' true power (250 W above idle) with the margin on
        # top; sacct's energy misses a job's last instants at full power, a few per cent of 16 s
        assert all(v is not None and 0.95 * 250 <= v < MAX - IDLE for v in after.values()), after
        with AdvisorStore(state) as store:
            assert store.history_frame().height == 2
            audit = store.frame("audit")
        lowered = audit.filter((audit["kind"] == "set_license") & (audit["applied"] == 1))
        assert lowered.height >= len(pending)

        # 3. slurmctld restarted under a running advisor: cycles without an answer act on nothing, then resume
        with _advisor(c, state, "--config", config, "--cap", "1200W", "--status-file", str(tmp_path / "status.json")):
            time.sleep(2)
            restart_slurmctld(c.base)
            # right after the restart the controller answers before it has its nodes' power back (every node at
            # 0 W): those cycles are untrusted and act on nothing; the advisor is back once the readings are
            deadline, status = time.time() + 90, {}
            while time.time() < deadline:
                time.sleep(1)
                status = json.loads((tmp_path / "status.json").read_text())
                if status["error"] is None:
                    break
            assert status["error"] is None and status["slurm_version"].startswith("22.05"), status
        assert _licenses(c, pending) == after
        with AdvisorStore(state) as store:
            errors = [e for e in store.frame("audit")["error"].to_list() if e]
        print("cycles without action around the restart:", sorted({e.split(":")[0] for e in errors}))
        c.run("scancel", str(blocker))
        _wait_done(c, pending, timeout=60)


def test_a_cap_changed_at_run_time_takes_effect_within_one_cycle(tmp_path: Path) -> None:
    """A remote license: the cap drops from 1,800 W to 1,000 W at a window's start; within one cycle (1 s) the
    license count follows (1,000 − 2 × 100 idle = 800 W) and a job of 700 W no longer starts beside one of 300 W."""
    with own_testbed(nodes=2, idle_watts=IDLE, max_watts=MAX, remote_license=True, license_total=1600) as c:
        start = time.time() + 8
        iso = datetime.fromtimestamp(start, UTC).isoformat()
        config = tmp_path / "advisor.toml"
        config.write_text(
            f'[cap]\ndefault = "1800W"\nwindows = [{{ start = "{iso}", end = "2100-01-01T00:00:00+00:00", '
            f'watts = "1000W" }}]\n[power]\nidle_watts_per_node = {IDLE}\n'
        )
        state = tmp_path / "advisor.sqlite"

        def total() -> int:
            text = c.run("scontrol", "show", "license", "-o").stdout
            return int(re.search(r"Total=(\d+)", text)[1])  # type: ignore[index]

        with _advisor(c, state, "--config", str(config)):
            deadline = time.time() + 20
            while total() != 1600 and time.time() < deadline:
                time.sleep(0.5)
            assert total() == 1600  # 1,800 − 200 idle
            while time.time() < start:
                time.sleep(0.2)
            changed = None
            while time.time() < start + 10:
                if total() == 800:
                    changed = time.time()
                    break
                time.sleep(0.2)
            assert changed is not None and changed - start <= 1 + 3, "the cap did not take effect within one cycle"
            small = c.submit(user="wsalice", power=200, seconds=20, license_watts=300, name="small")
            c.wait_state(small, ["RUNNING"])
            big = c.submit(user="wsbob", power=400, seconds=5, license_watts=700, name="big")
            # it never starts beside the small one; Slurm's reason says why once its scheduler has looked again
            # (an update of the job — its license, its AdminComment — resets the reason until the next pass)
            reasons = set()
            for _ in range(12):
                time.sleep(0.5)
                fields = c.job_fields(big)
                assert fields["JobState"] == "PENDING", fields
                reasons.add(fields["Reason"])
            assert "Licenses" in reasons, reasons


def test_gate_mode_releases_held_jobs_that_fit_and_fails_closed(tmp_path: Path) -> None:
    """GATE = true in job_submit.lua: every job is held at submit; the advisor releases jobs in submit order while
    their predicted power fits (no history: the 400 W worst case each, budget 1,100 − 3 × 100 = 800 W),
    and with the advisor stopped nothing is released."""
    with own_testbed(nodes=3, idle_watts=IDLE, max_watts=MAX) as c:
        _install_lua(c, gate=True)
        state = tmp_path / "gate.sqlite"
        config = str(_config(tmp_path, f"idle_watts_per_node = {IDLE}\n"))  # appended to the [power] table
        jobs = [c.submit(user="wsalice", power=300, seconds=12, name="g") for _ in range(3)]
        time.sleep(2)
        for job in jobs:  # AdminComment holds "wattsched:default wattsched:gate": read the raw text
            text = c.run("scontrol", "show", "job", str(job)).stdout
            assert "JobState=PENDING" in text and "wattsched:gate" in text, text
        with _advisor(c, state, "--config", config, "--cap", "1100W", "--mode", "gate"):
            for job in jobs[:2]:
                c.wait_state(job, ["RUNNING"], timeout=30)
            time.sleep(3)
            assert c.job_fields(jobs[2])["JobState"] == "PENDING"  # 2 × 400 W committed: the third does not fit
            c.wait_state(jobs[2], ["RUNNING", "COMPLETED"], timeout=60)  # released once one has ended
        late = c.submit(user="wsbob", power=100, seconds=3, name="late")
        time.sleep(4)
        assert c.job_fields(late)["JobState"] == "PENDING"  # no advisor: it stays held (fails closed)
        with AdvisorStore(state) as store:
            audit = store.frame("audit")
        assert audit.filter((audit["kind"] == "release") & (audit["applied"] == 1)).height == 3
