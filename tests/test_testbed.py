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
from wattsched.cli.root_app import app
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
def test_node_power_in_slurm_is_the_jobs_test_power(slurm_cluster: SlurmCluster) -> None:
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


def test_up_on_a_file_fails_in_one_line(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.skip("up checks root and the Slurm packages first")
    (tmp_path / "afile").write_text("")
    done = CliRunner().invoke(app, ["testbed", "up", "--dir", str(tmp_path / "afile")])
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'afile'}: File exists")


# ----------------------------------------------------------------------------------------- what `down` finds
def test_a_daemon_is_the_testbeds_by_its_configuration_never_by_a_word_in_its_arguments() -> None:
    base = Path("/tmp/tb")
    conf = "/tmp/tb/slurm.conf"

    def daemon(exe: str, *argv: str, env: dict[str, str] | None = None, cwd: str = "/") -> str | None:
        record = procs.ProcessRecord(4242, exe, (exe, *argv), env or {}, cwd)
        return procs.configured_daemon(record, base)

    # the issue's case: slurmctld restarted by hand, no marker; -f given in its forms, or SLURM_CONF, or relative
    assert daemon("/usr/sbin/slurmctld", "-D", "-i", "-f", conf) == "slurmctld"
    assert daemon("/usr/sbin/slurmctld-wlm", "-D", "-i", "-f", conf) == "slurmctld"  # Debian's, behind a link
    assert daemon("/usr/sbin/slurmctld", "-Dif", conf) == "slurmctld"
    assert daemon("/usr/sbin/slurmctld", f"-f{conf}") == "slurmctld"
    assert daemon("/usr/sbin/slurmctld", "-D", env={"SLURM_CONF": conf}) == "slurmctld"
    assert daemon("/usr/sbin/slurmctld", "-f", "slurm.conf", cwd="/tmp/tb") == "slurmctld"
    assert daemon("/usr/sbin/slurmd (deleted)", "-D", "-N", "n1", "-f", "/tmp/tb/../tb/slurm.conf") == "slurmd"
    assert daemon("/usr/sbin/slurmrestd", "127.0.0.1:6820", env={"SLURM_CONF": conf}) == "slurmrestd"
    assert daemon("/usr/sbin/slurmdbd", "-D", env={"SLURM_CONF": conf}) == "slurmdbd"
    assert daemon("/usr/sbin/munged", "-F", "--socket=/tmp/tb/munge/munge.socket") == "munged"
    assert daemon("/usr/sbin/munged", "--key-file", "/tmp/tb/munge/munge.key") == "munged"
    assert daemon("/usr/sbin/mariadbd", "--no-defaults", "--datadir=/tmp/tb/db") == "mariadbd"
    assert daemon("/usr/bin/python3.11", "-m", "wattsched.testbed.power", "/tmp/tb") == "power"
    # another configuration: another cluster's daemon, whatever its environment or other arguments say
    assert daemon("/usr/sbin/slurmctld", "-f", "/etc/slurm/slurm.conf", env={"SLURM_CONF": conf}) is None
    assert daemon("/usr/sbin/slurmctld", "-D", "-f", "/tmp/tb/slurm.conf.bak") is None
    assert daemon("/usr/sbin/slurmctld", "-D") is None  # the system's slurm.conf
    assert daemon("/usr/sbin/slurmdbd", "-D") is None
    assert daemon("/usr/sbin/munged", "--socket=/run/munge/munge.socket.2", "-L", "/tmp/tb/munge.log") is None
    assert daemon("/usr/sbin/mariadbd", "--datadir=/var/lib/mysql", "--log-error=/tmp/tb/log/x") is None
    assert daemon("/usr/bin/python3.11", "-m", "wattsched.testbed.power", "/tmp/other") is None
    # not a daemon: a shell, an editor, tail, a client, a script that names the base or even runs the command
    env = {"SLURM_CONF": conf, "WATTSCHED_TESTBED": "/tmp/tb"}
    assert daemon("/usr/bin/bash", "-c", f"slurmctld -D -i -f {conf} &", env=env) is None
    assert daemon("/usr/bin/bash", "-c", "python3 -m wattsched.testbed.power /tmp/tb", env=env) is None
    assert daemon("/usr/bin/tail", "-f", conf) is None
    assert daemon("/usr/bin/vim", conf, cwd="/tmp/tb") is None
    assert daemon("/usr/bin/squeue", "--json", env=env) is None
    assert daemon("/usr/bin/python3.11", "script.py", "wattsched.testbed.power", "/tmp/tb") is None


def _fake_daemon(
    folder: Path, base: Path, started: list[subprocess.Popen[bytes]], *, ignore_term: bool = False
) -> subprocess.Popen[bytes]:
    """A shell copied as ``slurmctld`` and run with the testbed's slurm.conf in its arguments, without the marker:
    to ``down`` it looks like a slurmctld restarted by hand (no Slurm needed). Added to ``started`` at once, for
    the test's ``finally`` to end it whatever happens."""
    folder.mkdir(exist_ok=True)
    exe = folder / "slurmctld"
    if not exe.exists():
        shutil.copy("/bin/sh", exe)
    loop = ("trap '' TERM; " if ignore_term else "") + "while :; do sleep 0.2; done"
    env = {k: v for k, v in os.environ.items() if k != procs.MARK}
    proc = subprocess.Popen([str(exe), "-c", loop, "slurmctld", "-D", "-i", "-f", str(base / "slurm.conf")], env=env)
    started.append(proc)
    _wait(lambda: procs.strays_of(base), 10, "the fake slurmctld to show")
    return proc


def test_down_stops_a_daemon_it_did_not_start_and_counts_it(tmp_path: Path) -> None:
    base = tmp_path / "tb"
    base.mkdir()
    _state(base=str(base), slurm_conf=str(base / "slurm.conf")).save(base)
    other = tmp_path / "other"
    other.mkdir()
    started: list[subprocess.Popen[bytes]] = []
    try:
        hand = _fake_daemon(tmp_path / "bin", base, started)
        bystander = _fake_daemon(tmp_path / "bin", other, started)  # another testbed's: left alone
        assert not procs.owned(hand.pid, base)  # no marker: the old down never saw it
        done = CliRunner().invoke(app, ["testbed", "down", "--dir", str(base)])
        assert done.exit_code == 0, done.output
        assert f"1 daemons stopped (1 not started by up: slurmctld pid {hand.pid})" in done.output
        assert hand.wait(timeout=10) is not None
        assert bystander.poll() is None
    finally:
        for proc in started:
            proc.kill()
            proc.wait()


def test_down_fails_naming_each_process_that_is_still_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop that did not work (stubbed here: signals nothing): ``down`` looks again, finds the process and fails
    in one line with its pid and command, instead of counting it as stopped."""
    from wattsched.testbed import cluster

    base = tmp_path / "tb"
    base.mkdir()
    _state(base=str(base), slurm_conf=str(base / "slurm.conf")).save(base)
    started: list[subprocess.Popen[bytes]] = []
    monkeypatch.setattr(cluster, "stop", lambda pids, timeout=10: [])
    try:
        hand = _fake_daemon(tmp_path / "bin", base, started, ignore_term=True)
        done = CliRunner().invoke(app, ["testbed", "down", "--dir", str(base)])
        assert done.exit_code == 2
        lines = done.output.strip().splitlines()
        assert len(lines) == 1, done.output
        assert lines[0].startswith("error: 1 process(es) of the testbed survived down: ")
        assert f"pid {hand.pid} ({tmp_path / 'bin' / 'slurmctld'} -c trap" in lines[0]
        assert str(base / "slurm.conf") in lines[0] and "daemons stopped" not in done.output
        assert hand.poll() is None
    finally:
        for proc in started:
            proc.kill()
            proc.wait()


@pytest.mark.slurm
@pytest.mark.slow
def test_down_stops_a_slurmctld_restarted_by_hand_from_a_shell() -> None:
    """The issue's case on a real testbed: its slurmctld stopped, another started from a shell with the testbed's
    slurm.conf (no marker in its environment); ``down`` stops it and says so."""
    import psutil

    with own_testbed(nodes=1) as cluster:
        base = cluster.base
        own = cluster.state.pids["slurmctld"]
        os.kill(own, signal.SIGTERM)
        _wait(lambda: not procs.alive(own), 30, "the testbed's slurmctld to stop")
        env = {k: v for k, v in cluster.env.items() if k != procs.MARK}
        started = subprocess.run(
            ["bash", "-c", f"slurmctld -D -i -f {base}/slurm.conf > {base}/log/by-hand.out 2>&1 & echo $!"],
            env=env, capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        hand = int(started.stdout.strip())
        _wait(lambda: "UP" in cluster.run("scontrol", "ping", check=False).stdout, 30, "the hand-started slurmctld")
        assert procs.alive(hand) and not procs.owned(hand, base)
        down = subprocess.run(
            [sys.executable, "-m", "wattsched", "testbed", "down", "--dir", str(base)],
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert down.returncode == 0, down.stderr
        assert f"(1 not started by up: slurmctld pid {hand})" in down.stdout, down.stdout
        _wait(lambda: not psutil.pid_exists(hand), 10, "the hand-started slurmctld to be gone")
        assert procs.strays_of(base) == [] and procs.processes_of(base, set(cluster.state.namespaces)) == []
