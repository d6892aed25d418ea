"""``wattsched testbed``: the synthetic power, the configuration, the CLI's errors, and the live cluster itself
(node power, energy accounting, licence enforcement, the remote licence, a clean ``down``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import REPO_ROOT
from slurm_fixtures import IDLE_WATTS, SESSION_LICENSE, SlurmCluster, own_testbed
from wattsched.cli.main import app
from wattsched.testbed import config as tb
from wattsched.testbed import procs
from wattsched.testbed.power import DEFAULT_TEST_POWER, job_test_power, node_watts, running_jobs
from wattsched.testbed.status import parse_node_line

RECORDED = REPO_ROOT / "tests" / "data" / "slurm-22.05"


def _state(**kw: object) -> tb.TestbedState:
    values: dict[str, object] = dict(
        base="/x", slurm_conf="/x/slurm.conf", nodes=[f"n{i}" for i in range(1, 9)], idle_watts=100, max_watts=500,
        license_name="power", license_total=1000, remote_license=False, ports={},
    )  # fmt: skip
    values.update(kw)
    return tb.TestbedState(**values)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------- without a cluster
def test_test_power_reads_the_comment_convention() -> None:
    assert job_test_power("testpower=250") == 250
    assert job_test_power("phase=2 testpower=87.5") == 87.5
    assert job_test_power("mytestpower=9") == DEFAULT_TEST_POWER  # not the key
    assert job_test_power(None) == DEFAULT_TEST_POWER
    assert job_test_power("") == DEFAULT_TEST_POWER


def test_running_jobs_of_recorded_squeue_power_the_right_nodes() -> None:
    """On the recorded 22.05 answer: only the two running jobs count (ended and pending ones are listed too)."""
    answer = json.loads((RECORDED / "squeue.json").read_text())
    jobs = running_jobs(answer)
    assert jobs == {5: (["n1", "n2", "n3"], 200.0), 6: (["n4", "n5"], 300.0)}
    watts = node_watts(_state(), jobs)
    assert watts == {"n1": 300, "n2": 300, "n3": 300, "n4": 400, "n5": 400, "n6": 100, "n7": 100, "n8": 100}
    # and Slurm itself reported exactly these through pm_counters when the answer was recorded
    lines = (RECORDED / "scontrol-show-node.txt").read_text().splitlines()
    reported = {n["name"]: n["current_watts"] for n in map(parse_node_line, lines)}
    assert reported == watts


def test_node_power_is_capped_at_max_watts() -> None:
    assert node_watts(_state(max_watts=300), {1: (["n1"], 450.0)})["n1"] == 300


def test_parse_node_line_reads_no_reading_as_none() -> None:
    line = "NodeName=n3 Arch=x86_64 State=IDLE+PLANNED CapWatts=n/a CurrentWatts=n/s AveWatts=n/s OS=Linux 6 #1 SMP"
    assert parse_node_line(line) == {"name": "n3", "state": "IDLE+PLANNED", "current_watts": None}


def test_slurm_conf_has_the_lines_that_matter(tmp_path: Path) -> None:
    ports = {"slurmctld": 1, "slurmdbd": 2, "mariadb": 3, "n1": 4, "n2": 5}
    text = tb.slurm_conf(tb.TestbedOptions(base=tmp_path, nodes=2, license_total=900), ports, "host", None)
    for line in (
        "AcctGatherEnergyType=acct_gather_energy/pm_counters", "AcctGatherNodeFreq=1",
        "JobAcctGatherFrequency=task=5,energy=1", "Licenses=power:900", "bf_licenses",
        "AccountingStorageTRES=cpu,mem,energy,node,billing,license/power", "OverSubscribe=EXCLUSIVE",
        f"AuthInfo=socket={tmp_path}/munge/munge.socket", f"AccountingStoragePass=socket={tmp_path}/munge/munge.socket",
        "NodeName=n2 NodeHostname=host NodeAddr=127.0.0.1 Port=5",
    ):  # fmt: skip
        assert line in text
    remote = tb.slurm_conf(tb.TestbedOptions(base=tmp_path, nodes=2, remote_license=True), ports, "host", None)
    assert "Licenses=" not in remote and "license/power@testbed" in remote
    # the default budget is the whole cluster at full power: it binds only when asked to
    assert tb.TestbedOptions(base=tmp_path, nodes=8, max_watts=500).power_total == 4000


def test_a_missing_program_names_itself_and_make_testbed_deps() -> None:
    with pytest.raises(procs.TestbedError, match=r"^slurmctld-not-here is not installed: `make testbed-deps` installs"):
        procs.require_programs(["sh", "slurmctld-not-here"])


@pytest.mark.parametrize("command", ["status", "down"])
def test_status_and_down_of_no_testbed_fail_in_one_line(command: str, tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["testbed", command, "--dir", str(tmp_path)])
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and "no testbed here" in lines[0] and str(tmp_path) in lines[0]


def test_up_refuses_a_folder_other_users_cannot_reach(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.skip("up checks root and the Slurm packages first")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    done = CliRunner().invoke(app, ["testbed", "up", "--dir", str(private / "tb")])
    assert done.exit_code == 2, done.output
    assert "is not searchable by other users" in done.output
    assert not (private / "tb" / "testbed.json").exists()


# ----------------------------------------------------------------------------------------- on the live cluster
def _wait(predicate, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


@pytest.mark.slurm
@pytest.mark.slow
def test_node_power_in_slurm_is_the_jobs_job_test_power(slurm_cluster: SlurmCluster) -> None:
    job = slurm_cluster.submit(user="wsalice", nodes=2, seconds=30, power=250, name="power")
    try:
        slurm_cluster.wait_state(job, ["RUNNING"])
        nodes = slurm_cluster.job_fields(job)["NodeList"]
        from hostlist import expand_hostlist

        mine = expand_hostlist(nodes)

        def at_job_power() -> dict[str, float | None] | None:
            watts = slurm_cluster.node_watts()
            return watts if all(watts[n] == IDLE_WATTS + 250 for n in mine) else None

        watts = _wait(at_job_power, 10, "CurrentWatts of the job's nodes at idle + 250")
        assert all(w == IDLE_WATTS for n, w in watts.items() if n not in mine)
        last = slurm_cluster.power_log()[-1]
        assert last["jobs"][str(job)] == mine and last["total_w"] == sum(last["nodes"].values())
        assert slurm_cluster.job_fields(job)["UserId"].startswith("wsalice(")
    finally:
        slurm_cluster.cancel_all()


@pytest.mark.slurm
@pytest.mark.slow
def test_sacct_energy_of_an_srun_job_is_power_times_nodes_times_elapsed(slurm_cluster: SlurmCluster) -> None:
    """The job's energy is its srun steps' (a batch-only job has none): compare with the step's elapsed time
    (whole seconds: a 15 s step keeps the rounding under 7 %)."""
    job = slurm_cluster.submit(user="wsbob", nodes=2, seconds=15, power=200, name="energy")
    slurm_cluster.wait_state(job, ["COMPLETED"], timeout=60)

    def accounted() -> list[dict[str, str]] | None:
        rows = slurm_cluster.sacct(job)
        return rows if rows and rows[0]["ConsumedEnergyRaw"] not in ("", "0") else None

    rows = {row["JobID"]: row for row in _wait(accounted, 20, "sacct ConsumedEnergyRaw of the job")}
    step = rows[f"{job}.0"]
    expected = (IDLE_WATTS + 200) * 2 * int(step["ElapsedRaw"])
    energy = int(rows[str(job)]["ConsumedEnergyRaw"])
    assert energy == int(step["ConsumedEnergyRaw"])  # the job's energy is its one srun step's
    assert abs(energy - expected) <= 0.10 * expected, (rows, expected)


@pytest.mark.slurm
@pytest.mark.slow
def test_two_jobs_whose_licenses_exceed_the_total_never_run_together(slurm_cluster: SlurmCluster) -> None:
    share = SESSION_LICENSE * 6 // 10  # two of them exceed the total
    first = slurm_cluster.submit(user="wsalice", seconds=5, license_watts=share, name="lic1")
    second = slurm_cluster.submit(user="wsbob", seconds=5, license_watts=share, name="lic2")
    try:
        _wait(lambda: slurm_cluster.job_fields(second).get("Reason") == "Licenses", 15, "the second job waits")
        assert slurm_cluster.job_fields(first)["JobState"] == "RUNNING"
        for job in (first, second):
            slurm_cluster.wait_state(job, ["COMPLETED"], timeout=60)
        # Slurm's own record: the second started when the first ended (sacct Start/End, seconds)
        end_first = slurm_cluster.sacct(first)[0]["End"]
        start_second = slurm_cluster.sacct(second)[0]["Start"]
        assert start_second >= end_first  # ISO timestamps order as text
        # and the power daemon never saw both running
        assert not any({str(first), str(second)} <= set(line["jobs"]) for line in slurm_cluster.power_log())
        # a request above the total is refused at submit
        refused = slurm_cluster.run(
            "sbatch", "-L", f"power:{SESSION_LICENSE + 1}", "--wrap", "true", user="wsalice", check=False
        )
        assert refused.returncode != 0 and "icense" in refused.stderr
    finally:
        slurm_cluster.cancel_all()


@pytest.mark.slurm
@pytest.mark.slow
def test_a_remote_license_count_change_takes_effect_without_restart() -> None:
    with own_testbed(nodes=2, remote_license=True, license_total=1000) as cluster:
        assert cluster.state.license_name == "power@testbed"
        job = cluster.submit(user="wsalice", seconds=30, license_watts=800, name="big")
        cluster.wait_state(job, ["RUNNING"])
        second = cluster.submit(user="wsbob", seconds=5, license_watts=800, name="waits")
        _wait(lambda: cluster.job_fields(second).get("Reason") == "Licenses", 15, "the second job waits")
        cluster.run("sacctmgr", "-i", "modify", "resource", "name=power", "server=testbed", "set", "count=2000")

        def total() -> int:
            out = cluster.run("scontrol", "show", "license", "-o", "power@testbed").stdout
            return int(dict(p.split("=", 1) for p in out.split() if "=" in p)["Total"])

        _wait(lambda: total() == 2000, 15, "the new count in slurmctld")
        cluster.wait_state(second, ["RUNNING", "COMPLETED"], timeout=15)  # it fits now: it starts
        cluster.cancel_all()


@pytest.mark.slurm
@pytest.mark.slow
def test_up_status_down_idempotence_stale_state_and_no_survivor() -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
        return subprocess.run(
            [sys.executable, "-m", "wattsched", *args], capture_output=True, text=True, env=env, timeout=120
        )

    with own_testbed(nodes=2) as cluster:
        base = str(cluster.base)
        again = cli("testbed", "up", "--dir", base)
        assert again.returncode == 0 and "already runs" in again.stderr
        assert f"export SLURM_CONF={base}/slurm.conf" in again.stdout
        status = json.loads(cli("--json", "testbed", "status", "--dir", base).stdout)
        assert status["running"] and [n["name"] for n in status["nodes"]] == ["n1", "n2"]
        assert status["license"] == {"name": "power", "total": 2 * 500, "used": 0}
        # a job runs while slurmctld crashes: up cleans the stale state (job steps included) and starts afresh
        job = cluster.submit(seconds=300)
        cluster.wait_state(job, ["RUNNING"])
        os.kill(cluster.state.pids["slurmctld"], signal.SIGKILL)
        crashed = cli("--json", "testbed", "status", "--dir", base)
        assert crashed.returncode == 1 and not json.loads(crashed.stdout)["running"]
        restarted = cli("testbed", "up", "--dir", base, "--nodes", "2")
        assert restarted.returncode == 0, restarted.stderr
        assert "cleaned the stale state" in restarted.stderr
        cluster.state = tb.TestbedState.load(cluster.base)
        assert cluster.run("squeue", "-h").stdout.strip() == ""  # a fresh cluster
        namespaces = set(cluster.state.namespaces)
        job = cluster.submit(seconds=300)
        cluster.wait_state(job, ["RUNNING"])
        down = json.loads(cli("--json", "testbed", "down", "--dir", base).stdout)
        assert down["cancelled_jobs"] == 1 and down["survivors"] == []
        assert procs.processes_of(cluster.base, namespaces) == []
        assert base not in Path("/proc/self/mounts").read_text()
