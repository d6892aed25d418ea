"""Overshoots on a live Slurm testbed (marker slurm: fails under CI=true when it cannot start): with
``on_overshoot = "suspend"``, a user whose jobs jump to 3× their history, and a cap lowered under running jobs,
are back under the cap within two cycles; the suspended jobs are resumed when the power allows and every job
completes. The truth is the testbed's power log (``power.jsonl``, the nodes' true power every quarter second),
which the advisor never reads: it reads Slurm's CurrentWatts.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from slurm_fixtures import SlurmCluster, own_testbed
from test_advise_cluster import IDLE, MAX, _advisor, _install_lua, _wait_done, _wait_first_cycle
from wattsched.advise.store import AdvisorStore

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

INTERVAL = 2.0  # seconds between the advisor's cycles


def _over_spells(c: SlurmCluster, cap_at: object, since: float) -> list[tuple[float, float]]:
    """The spells of true cluster power above the cap (power log), as (start, seconds)."""
    spells: list[tuple[float, float]] = []
    start = None
    last = since
    for line in c.power_log():
        t = float(line["t"])
        if t < since:
            continue
        over = float(line["total_w"]) > cap_at(t) + 1e-6  # type: ignore[operator]
        if over and start is None:
            start = t
        elif not over and start is not None:
            spells.append((start, t - start))
            start = None
        last = t
    if start is not None:
        spells.append((start, last - start))
    return spells


def _within_two_cycles(spells: list[tuple[float, float]], cycles: object) -> None:
    """The issue's bar: an overshoot ends within two of the advisor's cycles. Counted in the advisor's own cycles
    (the store's), not in seconds: a cycle takes longer than its interval on a loaded machine (the CI's 2 cores
    saw a 4.2-s spell with 2-s intervals), and the meter Slurm reads lags the truth by up to a second."""
    times = sorted(float(t) for t in cycles["time"].to_list())  # type: ignore[attr-defined]
    for start, seconds in spells:
        inside = [t for t in times if start <= t <= start + seconds]
        assert len(inside) <= 2, (start, seconds, inside)
        assert seconds < 4 * INTERVAL, (start, seconds)  # and never long, whatever the load


def _config(tmp_path: Path, cap: str, extra: str = "") -> Path:
    path = tmp_path / "advisor.toml"
    path.write_text(
        f'on_overshoot = "suspend"\n{extra}[power]\nmax_watts_per_node = {MAX}\nidle_watts_per_node = {IDLE}\n'
        f"[learning]\nfall_jobs = 1\n{cap}"
    )
    return path


def test_a_3x_jump_is_suspended_within_two_cycles_and_resumed(tmp_path: Path) -> None:
    """Cap 1,200 W on 4 nodes (idle 400 W: budget 800 W). wsalice's history: 100 W above idle. Four 1-node jobs of
    hers are submitted held (``-H``) and licensed from her history near 105 W each; she releases them together,
    all four start at once and draw 300 W: 1,600 W true. (Had any of them started alone, the advisor would
    have measured it and raised the others' licenses before they started: learning from running jobs.) The
    advisor suspends the newest two (back to 1,000 W), then resumes them when the first two end."""
    cap = 1200.0
    with own_testbed(nodes=4, idle_watts=IDLE, max_watts=MAX, license_total=800) as c:
        _install_lua(c)
        state, status = tmp_path / "a.sqlite", tmp_path / "s.json"
        config = _config(tmp_path, f"[cap]\nwatts = {cap:g}\n")
        with _advisor(c, state, "--config", str(config), "--interval", f"{INTERVAL:g}", "--status-file", str(status)):
            _wait_first_cycle(status)
            history = [c.submit(user="wsalice", power=100, seconds=10, name="h") for _ in range(2)]
            _wait_done(c, history, timeout=90)
            time.sleep(2 * INTERVAL + 1)  # the history reaches the store
            jumps = [c.submit(user="wsalice", power=300, seconds=25, name="h", hold=True) for _ in range(4)]
            deadline = time.time() + 30
            while time.time() < deadline and any(
                (lic := c.job_fields(j).get("Licenses", "")) == "" or int(lic.split(":")[-1]) > 200 for j in jumps
            ):
                time.sleep(0.5)  # the advisor sizes the held jobs from her history
            since = time.time()
            c.run("scontrol", "release", ",".join(map(str, jumps)), user="wsalice")
            _wait_done(c, jumps, timeout=240)
            time.sleep(INTERVAL)
        spells = _over_spells(c, lambda t: cap, since)
        print("3x jump: spells above the cap (start, seconds):", spells)
        assert spells, "the jobs never went over the cap: the test did not test anything"
        with AdvisorStore(state) as store:
            audit = store.frame("audit")
            overshoots = store.frame("overshoots")
            cycles = store.frame("cycles")
        _within_two_cycles(spells, cycles)
        kinds = audit.filter(audit["job_id"].is_in(jumps))["kind"].to_list()
        assert kinds.count("suspend") >= 1 and kinds.count("resume") == kinds.count("suspend"), kinds
        assert overshoots.height >= 1 and overshoots["end"].null_count() == 0
        states = {c.sacct(j, "JobID,State")[0]["State"] for j in jumps}
        assert states == {"COMPLETED"}


def test_a_cap_lowered_under_running_jobs_is_met_within_two_cycles(tmp_path: Path) -> None:
    """Cap 2,000 W, then 1,500 W from a window's start, under four jobs drawing 300 W above idle (1,600 W true):
    the newest job is suspended within two cycles of the change."""
    # a remote license follows the cap cycle by cycle; a local one would get the window as a license reservation
    # made ahead, and Slurm then starts none of the jobs whose time limit reaches into it
    with own_testbed(nodes=4, idle_watts=IDLE, max_watts=MAX, license_total=1600, remote_license=True) as c:
        _install_lua(c)
        state, status = tmp_path / "b.sqlite", tmp_path / "s.json"
        change = time.time() + 20
        iso = datetime.fromtimestamp(change, UTC).isoformat()
        window = f'{{ start = "{iso}", end = "2100-01-01T00:00:00+00:00", watts = "1500W" }}'
        cap = f'[cap]\ndefault = "2000W"\nwindows = [{window}]\n'
        config = _config(tmp_path, cap)
        with _advisor(c, state, "--config", str(config), "--interval", f"{INTERVAL:g}", "--status-file", str(status)):
            _wait_first_cycle(status)
            jobs = [c.submit(user="wsbob", power=300, seconds=40, name="w") for _ in range(4)]
            for job in jobs:
                c.wait_state(job, ["RUNNING"], timeout=30)
            while time.time() < change + 6 * INTERVAL:
                time.sleep(0.5)
            data = json.loads(status.read_text())
            assert data["cap_watts"] == 1500 and not data["over_cap"], data
            _wait_done(c, jobs, timeout=240)

        def cap_at(t: float) -> float:
            return 2000.0 if t < change else 1500.0

        spells = [s for s in _over_spells(c, cap_at, change - 1) if s[0] >= change - 1]
        print("lowered cap: spells above the cap (start, seconds):", spells)
        assert spells, "the cap change never put the jobs over it: the test did not test anything"
        with AdvisorStore(state) as store:
            audit = store.frame("audit")
            _within_two_cycles(spells, store.frame("cycles"))
        assert audit.filter(audit["kind"] == "suspend").height >= 1
