"""The 22.05 answer parsers of the advisor's backends, on answers recorded from a live testbed
(tests/data/slurm-22.05, see its README) and on corrupted copies of them: every bad answer is one
SlurmAnswerError line naming the source, the record and the field, never a KeyError."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from wattsched.advise.backends import BackendError, check_version, parse_version
from wattsched.advise.backends import parse as p
from wattsched.advise.backends.cli import budget_windows
from wattsched.advise.records import Observation, SlurmAnswerError
from wattsched.advise.store import AdvisorStore

DATA = Path(__file__).parent / "data" / "slurm-22.05"


def _doc(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _sacct_text() -> dict[str, dict[str, str]]:
    """sacct-energy.txt (``sacct -P``, recorded with the JSON) by JobID: the cross-check of the JSON energy."""
    lines = (DATA / "sacct-energy.txt").read_text().splitlines()
    header = lines[0].split("|")
    return {row["JobID"]: row for row in (dict(zip(header, line.split("|"), strict=True)) for line in lines[1:])}


@pytest.mark.parametrize("name", ["squeue.json", "rest-slurm-jobs.json"])
def test_queue_keeps_pending_and_running_with_licenses_and_holds(name: str) -> None:
    doc = _doc(name)
    jobs = {j.job_id: j for j in p.queued_jobs(doc, name, "power")}
    states = {j["job_id"]: j["job_state"] for j in doc["jobs"]}
    assert set(jobs) == {k for k, s in states.items() if s in ("PENDING", "RUNNING")}
    assert len(jobs) < len(states)  # 22.05 lists ended jobs too: dropped here
    for raw in doc["jobs"]:
        if raw["job_id"] not in jobs:
            continue
        job = jobs[raw["job_id"]]
        assert job.license_watts == (int(raw["licenses"].split(":")[1]) if raw["licenses"] else None)
        assert job.held == (raw["priority"] == 0)
        assert job.nodes == raw["node_count"]
        assert (job.start_time is None) == (job.state == "PENDING")
        if job.state == "RUNNING":
            assert len(job.node_names) == job.nodes
    assert any(j.held for j in jobs.values()) and any(j.reason == "Licenses" for j in jobs.values())


def test_queue_and_rest_jobs_have_the_same_shape() -> None:
    """slurmrestd v0.0.38 answers the squeue JSON's shape: the same records apart from times."""
    cli = p.queued_jobs(_doc("squeue.json"), "squeue", "power")
    rest = p.queued_jobs(_doc("rest-slurm-jobs.json"), "rest", "power")
    strip = [(j.job_id, j.state, j.user, j.nodes, j.license_watts, j.held, j.reason, j.node_names) for j in cli]
    assert strip == [
        (j.job_id, j.state, j.user, j.nodes, j.license_watts, j.held, j.reason, j.node_names) for j in rest
    ]


@pytest.mark.parametrize("name", ["sacct.json", "rest-slurmdb-jobs.json"])
def test_finished_energy_matches_sacct_text(name: str) -> None:
    text = _sacct_text()
    finished = p.finished_jobs(_doc(name), name, None, "power")
    assert {j.state for j in finished} >= {"COMPLETED", "FAILED", "CANCELLED"}
    for job in finished:
        row = text[str(job.job_id)]
        if row["ConsumedEnergyRaw"]:
            assert job.energy_joules == (float(row["ConsumedEnergyRaw"]) or None)
        else:  # no job-level energy (cancelled): the srun steps' sum
            steps = [r for k, r in text.items() if k.startswith(f"{job.job_id}.") and k.split(".")[1].isdigit()]
            assert steps and job.energy_joules == sum(float(r["ConsumedEnergyRaw"]) for r in steps)
        assert job.nodes == int(row["NNodes"])
        lic = dict(x.split("=") for x in row["AllocTRES"].split(",")).get("license/power")
        assert job.license_watts == (int(lic) if lic else None)


def test_finished_since_filters_on_end_time() -> None:
    doc = _doc("sacct.json")
    every = p.finished_jobs(doc, "sacct", None, "power")
    cut = sorted(j.end_time for j in every)[len(every) // 2]
    later = p.finished_jobs(doc, "sacct", cut, "power")
    assert {j.job_id for j in later} == {j.job_id for j in every if j.end_time >= cut}
    assert 0 < len(later) < len(every)


def test_a_multi_node_batch_only_job_has_no_energy() -> None:
    """The batch step measures the first node only: for a 2-node job without srun steps, None (not a wrong
    number)."""
    doc = _doc("sacct.json")
    job = copy.deepcopy(next(j for j in doc["jobs"] if j["job_id"] == 1))
    job["tres"]["allocated"] = [t for t in job["tres"]["allocated"] if t["type"] != "energy"]
    job["steps"] = [s for s in job["steps"] if s["step"]["name"] == "batch"]
    assert job["allocation_nodes"] == 2
    (out,) = p.finished_jobs({"jobs": [job]}, "sacct", None, "power")
    assert out.energy_joules is None


def test_node_power_and_licenses_from_text_and_rest() -> None:
    nodes = p.nodes_from_scontrol((DATA / "scontrol-show-node.txt").read_text(), "scontrol show node")
    raw = {line.split()[0].split("=")[1]: line for line in (DATA / "scontrol-show-node.txt").read_text().splitlines()}
    for node in nodes:
        assert f"CurrentWatts={node.current_watts:g} " in raw[node.name]
    rest_nodes = p.nodes_from_rest(_doc("rest-slurm-nodes.json"), "rest")
    assert [n.name for n in rest_nodes] == [n.name for n in nodes]
    assert all(n.current_watts is None for n in rest_nodes)  # 22.05 REST has no power field
    local = p.licenses_from_scontrol((DATA / "scontrol-show-license.txt").read_text(), "scontrol")
    assert local == p.licenses_from_rest(_doc("rest-slurm-licenses.json"), "rest")
    remote = p.licenses_from_scontrol((DATA / "scontrol-show-license-remote.txt").read_text(), "scontrol")
    lic = p.power_license(remote, "scontrol")
    assert lic.remote and lic.name == "power@testbed"
    assert (
        p.licenses_from_scontrol((DATA / "scontrol-show-license-remote-modified.txt").read_text(), "s")[
            "power@testbed"
        ].total
        < lic.total
    )


def test_license_requests() -> None:
    assert p.license_watts("matlab:2,power:450", "power", "s", "job 1") == 450
    assert p.license_watts("power@site*300", "power@site", "s", "job 1") == 300
    assert p.license_watts("matlab", "power", "s", "job 1") is None
    assert p.license_watts("power", "power", "s", "job 1") == 1
    with pytest.raises(SlurmAnswerError, match="field licenses"):
        p.license_watts("power:1:2", "power", "s", "job 1")


def test_no_power_license_says_the_line_to_add() -> None:
    with pytest.raises(LookupError, match=r"Licenses=power:<total watts>"):
        p.power_license({}, "scontrol show licenses")


def _one_line(exc: pytest.ExceptionInfo[SlurmAnswerError]) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def _job7(doc: dict) -> dict:
    return next(j for j in doc["jobs"] if j["job_id"] == 7)


@pytest.mark.parametrize(
    ("corrupt", "field"),
    [
        (lambda d: _job7(d).pop("job_state"), "job_state"),
        (lambda d: _job7(d).update(node_count="two"), "node_count"),
        (lambda d: _job7(d).update(licenses="power:6:00"), "licenses"),
        (lambda d: _job7(d).update(priority=[1]), "priority"),
        (lambda d: _job7(d).update(job_id="7"), "job_id"),
        (lambda d: d.update(jobs={"7": 1}), "jobs"),
    ],
)
def test_corrupted_squeue_is_one_line_naming_the_field(corrupt, field: str) -> None:
    doc = _doc("squeue.json")
    corrupt(doc)
    with pytest.raises(SlurmAnswerError) as exc:
        p.queued_jobs(doc, "squeue --json", "power")
    assert exc.value.field_name == field and _one_line(exc).startswith("squeue --json: ")


@pytest.mark.parametrize(
    ("corrupt", "field"),
    [
        (lambda j: j.update(state="COMPLETED"), "state"),
        (lambda j: j["time"].update(end="soon"), "end"),
        (lambda j: j["tres"].update(allocated=7), "tres.allocated"),
        (lambda j: j["tres"]["allocated"].append({"type": "energy", "count": "lots"}), "tres.allocated"),
    ],
)
def test_corrupted_sacct_is_one_line_naming_the_job(corrupt, field: str) -> None:
    doc = _doc("sacct.json")
    corrupt(doc["jobs"][0])
    with pytest.raises(SlurmAnswerError) as exc:
        p.finished_jobs(doc, "sacct --json", None, "power")
    assert exc.value.field_name == field and exc.value.record == f"job {doc['jobs'][0]['job_id']}"
    _one_line(exc)


@pytest.mark.parametrize(
    "text", ["", "garbage", (DATA / "squeue.json").read_text()[:5000], "[1, 2]", '{"errors": [{"error": "boom"}]}']
)
def test_not_json_truncated_or_slurm_errors(text: str) -> None:
    with pytest.raises(SlurmAnswerError) as exc:
        p.load_json(text, "squeue --json")
    assert _one_line(exc).startswith("squeue --json: ")


def test_bad_text_answers() -> None:
    with pytest.raises(SlurmAnswerError, match="CurrentWatts"):
        p.nodes_from_scontrol("NodeName=n1 State=IDLE CurrentWatts=hot", "scontrol show node")
    with pytest.raises(SlurmAnswerError, match="field Total"):
        p.licenses_from_scontrol("LicenseName=power Total=x Used=0", "scontrol show licenses")


def test_version_probe() -> None:
    assert check_version(parse_version((DATA / "sinfo-version.txt").read_text())) == "22.05.8"
    with pytest.raises(BackendError, match="untested"):
        check_version("23.02.1")
    with pytest.raises(BackendError):
        parse_version("slurm unknown")


def test_budget_windows_compile_changes() -> None:
    now = 1_000_000.0
    changes = [(now - 600, 1800), (now + 3600, 1000), (now + 7200, 2000), (now + 9000, 500)]
    want = budget_windows(changes, 2000, now)
    assert want == {
        f"wattsched-cap-{int(now - 600)}": (now, now + 3600, 200),  # begun: starts now
        f"wattsched-cap-{int(now + 3600)}": (now + 3600, now + 7200, 1000),
        f"wattsched-cap-{int(now + 9000)}": (now + 9000, None, 1500),  # last: for ever
    }  # the 2000 W window needs no reservation
    assert budget_windows([(now - 100, 100), (now - 10, 2000)], 2000, now) == {}  # past windows dropped
    with pytest.raises(BackendError):
        budget_windows([(now, -1)], 2000, now)


def _recorded_observation(store_path: Path) -> tuple[Observation, AdvisorStore]:
    """The recorded cluster as one Observation, its ended jobs recorded in a fresh store."""
    queue = p.queued_jobs(_doc("squeue.json"), "squeue --json", "power")
    finished = p.finished_jobs(_doc("sacct.json"), "sacct --json", None, "power")
    nodes = p.nodes_from_scontrol((DATA / "scontrol-show-node.txt").read_text(), "scontrol show node")
    lic = p.licenses_from_scontrol((DATA / "scontrol-show-license.txt").read_text(), "scontrol show licenses")
    now = max(j.end_time for j in finished) + 1
    store = AdvisorStore(store_path)
    store.record_finished(finished, 100.0, now=now)
    return Observation(now, queue, finished, nodes, lic["power"], "22.05.8"), store


@pytest.mark.parametrize("mode", ["licenses", "gate"])
def test_decisions_on_the_recorded_cluster(tmp_path: Path, mode: str) -> None:
    """Decide on the recorded 22.05 answers: wsalice's jobs drew 250 W and wsbob's 150 W above the 100 W idle
    (the recording's test power); the pending jobs are sized between that and the 400 W worst case, running jobs
    are left alone, the cap sets the budget, and a user's own hold is never released by the gate."""
    from wattsched.advise.config import load_config
    from wattsched.advise.decide import decide
    from wattsched.advise.learn import PowerLearner

    obs, store = _recorded_observation(tmp_path / "s.sqlite")
    cfg = load_config(None, cap="1500W", mode=mode, power__max_watts_per_node=500)
    pending = [j for j in obs.queue if j.state == "PENDING"]
    running = [j for j in obs.queue if j.state == "RUNNING"]
    assert [j.job_id for j in pending] == [7, 8, 9] and [j.job_id for j in running] == [5, 6]
    estimates = PowerLearner(cfg).estimate(store.history_frame(), pending + running, obs.time, idle_watts=100.0)
    plan = decide(obs, estimates, cfg, applied={}, idle_watts=None, fresh=True, now=obs.time)
    store.close()
    by_job = {a.job_id: a for a in plan.actions if a.kind != "set_comment"}
    assert 5 not in by_job and 6 not in by_job
    # wsbob's 4-node job 8: his history is of 1-node jobs, no evidence for 4 nodes (evidence by size): the worst
    # case, 4 × 400 W, is more than the whole 700 W budget: held with its reason, never run above the cap
    assert by_job[8].kind == "hold" and by_job[8].value == 1600
    if mode == "gate":
        assert {a.kind for a in plan.actions} == {"hold", "set_comment"}  # job 9 is held by its user: untouched
        return
    assert plan.budget == 1500 - 8 * 100 and by_job[None].kind == "set_budget" and by_job[None].previous == 1000
    assert 250 <= by_job[7].value <= 400 and by_job[7].previous == 600  # wsalice, 1 node: lowered from 600 W
    assert 150 <= by_job[9].value <= 400 and by_job[9].previous == 100  # raised: 100 W is below its history
