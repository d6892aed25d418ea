"""The advisor's Slurm backends against real Slurm: the command-line tools and slurmrestd on the local testbed
(marker slurm: fails under CI=true when the testbed cannot start), the shipped job_submit.lua loaded by a real
slurmctld, and the failure paths (garbage answers, a silent command, a missing tool, slurmctld down)."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import pytest

from slurm_fixtures import IDLE_WATTS, SESSION_LICENSE, SlurmCluster, own_testbed
from wattsched.advise.backends import CAP_RESERVATION, BackendError, make_backend
from wattsched.advise.backends.cli import SlurmCLI
from wattsched.advise.records import Action, SlurmAnswerError, SlurmUnavailable
from wattsched.advise.slurm import job_submit_lua


def _fake_tool(tmp_path: Path, name: str, body: str) -> dict[str, str]:
    """An environment whose PATH finds a fake ``name`` (a shell script) before the real one."""
    tool = tmp_path / name
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ.get('PATH', '')}"}


@pytest.mark.parametrize(
    "body", ["echo 'slurm_load_jobs garbage {'", "head -c 300 /dev/urandom | base64", "echo '{\"jobs\": 5}'"]
)
def test_garbage_from_squeue_is_one_line_and_no_observation(tmp_path: Path, body: str) -> None:
    backend = SlurmCLI(license_name="power", env=_fake_tool(tmp_path, "squeue", body))
    with pytest.raises(SlurmAnswerError) as exc:
        backend.observe(None)
    assert str(exc.value).startswith("squeue --json: ") and "\n" not in str(exc.value)


def test_a_silent_command_times_out_as_unavailable(tmp_path: Path) -> None:
    backend = SlurmCLI(timeout=0.5, license_name="power", env=_fake_tool(tmp_path, "squeue", "exec sleep 30"))
    began = time.monotonic()
    with pytest.raises(SlurmUnavailable, match=r"no answer within 0.5 s"):
        backend.observe(None)
    assert time.monotonic() - began < 5


def test_failing_and_missing_tools(tmp_path: Path) -> None:
    env = _fake_tool(tmp_path, "squeue", "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1")
    with pytest.raises(SlurmUnavailable, match="Unable to contact"):
        SlurmCLI(license_name="power", env=env).observe(None)
    with pytest.raises(BackendError, match="not found on PATH"):
        SlurmCLI(license_name="power", env={"PATH": str(tmp_path / "none")}).observe(None)
    with pytest.raises(BackendError, match="kind 'pbs'"):
        make_backend({"kind": "pbs"}, os.environ)
    with pytest.raises(BackendError, match="url"):
        make_backend({"kind": "rest"}, {})


def test_the_lua_script_ships_as_package_data() -> None:
    text = job_submit_lua().read_text()
    assert "function slurm_job_submit" in text and "function slurm_job_modify" in text
    assert re.search(r"^local DEFAULT_WATTS_PER_NODE = \d+$", text, re.M)
    assert re.search(r"^local GATE = false$", text, re.M)


# ----------------------------------------------------------------------------------------------- live cluster
def _cli(cluster: SlurmCluster, **kw: object) -> SlurmCLI:
    backend = make_backend({"timeout": 10, **kw}, cluster.env)
    assert isinstance(backend, SlurmCLI)
    return backend


def _squeue_license(cluster: SlurmCluster, job: int) -> str:
    return cluster.run("squeue", "-h", "-j", str(job), "-o", "%W").stdout.strip()


@pytest.mark.slurm
@pytest.mark.slow
def test_observe_sees_queue_finished_energy_and_node_power(slurm_cluster: SlurmCluster) -> None:
    c = slurm_cluster
    backend = _cli(c)
    assert backend.probe().startswith("22.05") and backend.license_name == "power"
    t0 = time.time()
    done = c.submit(power=200, seconds=3, license_watts=300, name="done")
    c.wait_state(done, ["COMPLETED"])
    run = c.submit(power=150, seconds=60, license_watts=400, name="run")
    c.wait_state(run, ["RUNNING"])
    wait = c.submit(seconds=5, license_watts=SESSION_LICENSE - 100, name="waitlic")
    held = c.submit(seconds=5, hold=True, name="held")
    try:
        deadline = time.monotonic() + 20
        while True:  # sacct's energy lands a moment after the end; node power after the first 1 s sample
            obs = backend.observe(t0)
            finished = {j.job_id: j for j in obs.finished}
            watts = {n.name: n.current_watts for n in obs.nodes}
            queue = {j.job_id: j for j in obs.queue}
            run_nodes = queue[run].node_names if run in queue else ()
            if (done in finished and finished[done].energy_joules and run_nodes
                    and all((watts[n] or 0) > IDLE_WATTS for n in run_nodes)):  # fmt: skip
                break
            assert time.monotonic() < deadline, f"not seen in 20 s: {finished}, {watts}"
            time.sleep(1)
        assert finished[done].state == "COMPLETED" and finished[done].license_watts == 300
        # 3 s at idle + 200 W (the energy counters are sampled each second: within one second's worth)
        assert 300 * 2 <= finished[done].energy_joules <= 300 * 5
        assert queue[run].state == "RUNNING" and queue[run].license_watts == 400
        assert queue[wait].state == "PENDING" and queue[wait].license_watts == SESSION_LICENSE - 100
        assert queue[held].held and not queue[wait].held
        assert obs.license is not None and obs.license.used == 400 and obs.license.total == SESSION_LICENSE
        assert obs.slurm_version.startswith("22.05")
        assert all(j.job_id != done for j in obs.queue)
        # set_license changes what squeue shows, and the waiting job starts once it fits
        backend.apply(Action("set_license", wait, 500, "test"))
        assert _squeue_license(c, wait) == "power:500"
        c.wait_state(wait, ["RUNNING", "COMPLETED"], timeout=15)
        backend.apply(Action("release", held, None, "test"))
        assert not next(j for j in backend.observe(t0).queue if j.job_id == held).held
    finally:
        c.cancel_all()
    with pytest.raises(SlurmAnswerError, match=f"JobId={done}: refused"):
        backend.apply(Action("set_license", done, 100, "a finished job"))


@pytest.mark.slurm
@pytest.mark.slow
def test_budget_reservation_blocks_a_job_that_no_longer_fits(slurm_cluster: SlurmCluster) -> None:
    c = slurm_cluster
    backend = _cli(c)
    backend.probe()
    try:
        backend.apply(Action("set_budget", None, 500, "cap"))
        assert backend.reservations()[CAP_RESERVATION]["Licenses"] == f"power:{SESSION_LICENSE - 500}"
        small = c.submit(seconds=30, license_watts=400, name="fits")
        big = c.submit(seconds=30, license_watts=300, name="over")  # 400 + 300 > 500
        c.wait_state(small, ["RUNNING"])
        time.sleep(3)  # several scheduler passes (sched_interval=1, bf_interval=1)
        assert c.job_fields(big)["JobState"] == "PENDING" and c.job_fields(big)["Reason"] == "Licenses"
        backend.apply(Action("set_budget", None, 800, "raise"))
        c.wait_state(big, ["RUNNING"], timeout=10)
        backend.apply(Action("set_budget", None, SESSION_LICENSE, "lift"))
        assert CAP_RESERVATION not in backend.reservations()
        # time windows: reservations created, updated and deleted by reconciling
        now = time.time()
        backend.schedule_budget([(now + 3600, 1000), (now + 7200, SESSION_LICENSE), (now + 10800, 600)])
        have = backend.reservations()
        assert sorted(have) == [f"{CAP_RESERVATION}-{int(now + 3600)}", f"{CAP_RESERVATION}-{int(now + 10800)}"]
        assert have[f"{CAP_RESERVATION}-{int(now + 10800)}"]["Licenses"] == f"power:{SESSION_LICENSE - 600}"
        backend.schedule_budget([(now + 3600, 1200)])
        have = backend.reservations()
        assert list(have) == [f"{CAP_RESERVATION}-{int(now + 3600)}"]
        assert have[f"{CAP_RESERVATION}-{int(now + 3600)}"]["Licenses"] == f"power:{SESSION_LICENSE - 1200}"
    finally:
        backend.schedule_budget([])
        backend.apply(Action("set_budget", None, SESSION_LICENSE, "lift"))
        c.cancel_all()
    assert backend.reservations() == {}


@pytest.mark.slurm
@pytest.mark.slow
def test_slurmctld_down_is_unavailable_quickly(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """A slurm.conf whose controller port answers nothing: the timeout bounds the wait."""
    conf = Path(slurm_cluster.env["SLURM_CONF"]).read_text()
    dead = tmp_path / "slurm.conf"
    dead.write_text(re.sub(r"^SlurmctldPort=\d+$", "SlurmctldPort=1", conf, flags=re.M))
    backend = make_backend({"timeout": 3, "slurm_conf": str(dead)}, os.environ)
    began = time.monotonic()
    with pytest.raises(SlurmUnavailable):
        backend.probe()
    assert time.monotonic() - began < 3 * 2 + 1  # scontrol --version answers locally, ping times out


@pytest.mark.slurm
@pytest.mark.slow
def test_remote_license_count_change_takes_effect_quickly() -> None:
    with own_testbed(nodes=2, remote_license=True, license_total=1500) as c:
        backend = _cli(c)
        backend.probe()
        assert backend.license_name == "power@testbed"
        began = time.monotonic()
        backend.apply(Action("set_budget", None, 1200, "cap"))
        while backend.observe(None).license.total != 1200:  # type: ignore[union-attr]
            assert time.monotonic() - began < 5, "the remote license count did not reach slurmctld in 5 s"
            time.sleep(0.2)
        assert time.monotonic() - began < 5


@pytest.mark.slurm
@pytest.mark.slow
def test_rest_backend_observes_and_applies() -> None:
    with own_testbed(nodes=2, license_total=1000, rest=True) as c:
        backend = make_backend({"kind": "rest", "url": c.state.rest_url, "user": "root"}, c.env)
        assert backend.probe().startswith("22.05")
        run = c.submit(seconds=60, power=100, license_watts=600, name="run")
        c.wait_state(run, ["RUNNING"])
        wait = c.submit(seconds=30, license_watts=600, name="wait")
        obs = backend.observe(None)
        queue = {j.job_id: j for j in obs.queue}
        assert queue[run].state == "RUNNING" and queue[wait].reason in ("Licenses", "Priority", "None")
        assert obs.license is not None and obs.license.used == 600
        assert any(n.current_watts for n in obs.nodes)  # through scontrol: 22.05's /nodes has no power
        backend.apply(Action("hold", wait, None, "t"))
        assert next(j for j in backend.observe(None).queue if j.job_id == wait).held
        backend.apply(Action("release", wait, None, "t"))
        backend.apply(Action("set_license", wait, 300, "t"))
        assert _squeue_license(c, wait) == "power:300"
        c.wait_state(wait, ["RUNNING"], timeout=10)
        with pytest.raises(SlurmAnswerError, match="Invalid job id"):
            backend.apply(Action("set_license", 999_999, 1, "t"))


def _with_lua(c: SlurmCluster, gate: bool) -> None:
    """Install the shipped job_submit.lua into the testbed as docs/advisor.md says, and reconfigure."""
    conf = Path(c.env["SLURM_CONF"])
    text = job_submit_lua().read_text()
    if gate:
        text = text.replace("local GATE = false", "local GATE = true")
    (conf.parent / "job_submit.lua").write_text(text)
    (conf.parent / "job_submit.lua").chmod(0o644)
    if "JobSubmitPlugins=lua" not in conf.read_text():
        conf.write_text(conf.read_text() + "JobSubmitPlugins=lua\n")
    c.run("scontrol", "reconfigure")
    time.sleep(1)


@pytest.mark.slurm
@pytest.mark.slow
def test_job_submit_lua_default_license_refusals_and_gate() -> None:
    with own_testbed(nodes=2, license_total=1000) as c:
        _with_lua(c, gate=False)
        job = c.submit(user="wsalice", nodes=2, seconds=30, name="nolicense")
        fields = c.job_fields(job)
        default = 2 * int(re.search(r"DEFAULT_WATTS_PER_NODE = (\d+)", job_submit_lua().read_text())[1])  # type: ignore[index]
        assert fields["Licenses"] == f"power:{default}"
        assert "wattsched:default" in fields["AdminComment"]
        ranged = c.submit(user="wsbob", seconds=30, name="ranged", extra=["--nodes=1-2"])
        assert c.job_fields(ranged)["Licenses"] == f"power:{default}"  # the largest count: the worst case
        own = c.submit(user="wsalice", seconds=30, license_watts=300, name="own")
        # a user's own request is replaced by the default (issue 28: `-L power:1` was a way around the cap)
        assert c.job_fields(own)["Licenses"] == f"power:{default // 2}"
        assert "wattsched:default" in c.job_fields(own).get("AdminComment", "")
        lower = c.run("scontrol", "update", f"JobId={own}", "Licenses=power:10", user="wsalice", check=False)
        assert lower.returncode != 0 and "denied" in lower.stderr
        assert c.job_fields(own)["Licenses"] == f"power:{default // 2}"
        backend = _cli(c)
        backend.probe()
        backend.apply(Action("set_license", own, 200, "the advisor (root) may"))
        assert c.job_fields(own)["Licenses"] == "power:200"
        c.cancel_all()
        _with_lua(c, gate=True)
        gated = c.submit(user="wsbob", seconds=5, license_watts=100, name="gated")
        time.sleep(2)
        assert c.job_fields(gated)["JobState"] == "PENDING" and c.job_fields(gated)["Priority"] == "0"
        # "AdminComment=wattsched:default wattsched:gate": job_fields splits on spaces, so read the raw text
        assert "wattsched:gate" in c.run("scontrol", "show", "job", str(gated)).stdout
        release = c.run("scontrol", "release", str(gated), user="wsbob", check=False)
        assert release.returncode != 0 and c.job_fields(gated)["Priority"] == "0"
        backend.apply(Action("release", gated, None, "fits"))
        c.wait_state(gated, ["RUNNING", "COMPLETED"], timeout=10)
