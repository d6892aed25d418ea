"""sacct reader: golden ``-P`` and ``--json`` files with Slurm's awkward fields, time zones, and a round trip."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.core.schema import REJECTS_SCHEMA, WorkloadError
from wattsched.workload.sacct import is_sacct_file, read_sacct, user_code

HEADER = (
    "JobIDRaw|JobName|User|UID|Group|Partition|QOS|Submit|Eligible|Start|End|ElapsedRaw|TimelimitRaw|State|"
    "ExitCode|NNodes|NCPUS|ReqTRES|AllocTRES|ConsumedEnergyRaw|NodeList"
)
TRES = "billing=8,cpu=8,energy=500,gres/gpu=2,mem=16G,node=1"


def rec(
    jid: str,
    name: str = "job",
    submit: str = "2024-03-01T10:00:00",
    start: str = "2024-03-01T10:01:00",
    end: str = "2024-03-01T11:01:00",
    elapsed: str = "3600",
    limit: str = "120",
    state: str = "COMPLETED",
    nodes: str = "1",
    cpus: str = "8",
    energy: str = "7200",
) -> str:
    fields = [jid, name, "alice", "1001", "staff", "gpu", "normal", submit, submit, start, end, elapsed, limit,
              state, "0:0", nodes, cpus, TRES, TRES, energy, "nid[001]"]  # fmt: skip
    return "|".join(fields)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# ------------------------------------------------------------------------------------------------------------
# -P golden file
# ------------------------------------------------------------------------------------------------------------

AWKWARD = (
    "\n".join(
        [
            HEADER,
            rec("100", "plain"),
            rec("100.batch", "batch", limit=""),
            rec("100.extern", "extern", limit=""),
            rec("100.0", "srun", limit=""),
            rec("101", "has|pipe"),
            rec("102", "multi\nline name"),
            rec("103", "never", start="Unknown", end="2024-03-01T10:05:00", elapsed="0", state="CANCELLED by 123"),
            rec("104", "killed", state="CANCELLED by 1001"),
            rec("105", "forever", limit="UNLIMITED", state="RUNNING+"),
            rec("12x", "badid"),
            rec(
                "106.0",
                "orphan-step",
                submit="2024-03-01T09:00:00",
                start="2024-03-01T09:00:30",
                end="2024-03-01T09:10:30",
                elapsed="600",
                limit="30",
            ),
            rec(
                "106.1",
                "orphan-step2",
                submit="2024-03-01T09:00:00",
                start="2024-03-01T09:05:00",
                end="2024-03-01T09:20:00",
                elapsed="900",
                limit="30",
                nodes="2",
            ),
            rec("107", "partition", limit="Partition_Limit"),
            rec("108", "running", end="Unknown", state="RUNNING"),
            rec("109", "badtime", submit="yesterday"),
            rec("110", "none-time", submit="None"),
            "111|truncated|alice",
            rec("112", "last"),
        ]
    )
    + "\n"
)


@pytest.fixture
def awkward(tmp_path: Path) -> Path:
    return write(tmp_path, "awkward.sacct", AWKWARD)


def test_awkward_fields_kept_jobs(awkward: Path) -> None:
    jobs, _, prov = read_sacct(awkward)
    by_id = {r["job_id"]: r for r in jobs.iter_rows(named=True)}
    assert sorted(by_id) == [100, 101, 102, 104, 106, 112]
    assert by_id[101]["name"] == "has|pipe"
    assert by_id[102]["name"] == "multi\nline name"
    assert by_id[104]["state"] == "CANCELLED"
    job = by_id[100]
    assert job["submit_time"] == epoch("2024-03-01T10:00:00")
    assert job["trace_start_time"] == epoch("2024-03-01T10:01:00")
    assert job["trace_end_time"] == epoch("2024-03-01T11:01:00")
    assert (job["walltime"], job["runtime"], job["size"], job["cores"], job["gpus"]) == (7200.0, 3600.0, 1, 8, 2)
    assert (job["mem"], job["energy"], job["user_id"], job["queue"]) == (16.0, 7200.0, 1001, "gpu")
    assert job["sacct_qos"] == "normal" and job["sacct_nodelist"] == "nid[001]"
    # 106 exists only as steps: built from them (earliest start, latest end, largest elapsed and size).
    built = by_id[106]
    assert built["trace_start_time"] == epoch("2024-03-01T09:00:30")
    assert built["trace_end_time"] == epoch("2024-03-01T09:20:00")
    assert (built["runtime"], built["size"], built["walltime"]) == (900.0, 2, 1800.0)
    assert jobs["submit_time"].is_sorted()
    assert prov.format == "sacct" and prov.unix_start_time == 0.0 and prov.timezone == "UTC"
    assert prov.size_unit == "nodes"
    notes = "\n".join(prov.conventions)
    assert "3 step record(s) folded" in notes
    assert "1 job(s) had only step records" in notes
    assert "re-joined into JobName" in notes


def test_awkward_fields_rejects(awkward: Path) -> None:
    _, rejects, prov = read_sacct(awkward)
    assert rejects.schema == pl.Schema(REJECTS_SCHEMA)
    rows = {r["line"]: r for r in rejects.iter_rows(named=True)}
    # Physical line numbers: header is 1; 102's name spans lines 7-8, so 103 is on line 9.
    assert rows[9]["job_id"] == 103 and rows[9]["field"] == "Start" and "never started" in rows[9]["reason"]
    assert rows[11]["job_id"] == 105 and rows[11]["field"] == "TimelimitRaw"
    assert rows[11]["reason"].startswith("walltime unknown")
    assert rows[12]["field"] == "JobIDRaw" and "'12x' is not an integer" in rows[12]["reason"]
    assert rows[12]["raw"].startswith("12x|badid|")
    assert rows[15]["job_id"] == 107 and rows[15]["field"] == "TimelimitRaw"
    assert rows[16]["job_id"] == 108 and rows[16]["field"] == "End" and "not ended" in rows[16]["reason"]
    assert rows[17]["job_id"] == 109 and rows[17]["field"] == "Submit" and "yesterday" in rows[17]["reason"]
    assert rows[18]["job_id"] == 110 and rows[18]["field"] == "submit_time"
    assert rows[19]["job_id"] == 111 and "3 fields but the header has 21" in rows[19]["reason"]
    assert rejects.height == 8 and prov.n_rejected == 8
    assert all(r["source"] == str(awkward) for r in rows.values())


def test_every_job_is_kept_or_rejected(awkward: Path) -> None:
    jobs, rejects, _ = read_sacct(awkward)
    allocations = {"100", "101", "102", "103", "104", "105", "12x", "106", "107", "108", "109", "110", "111", "112"}
    seen = {str(j) for j in jobs["job_id"]} | {str(j) for j in rejects["job_id"].drop_nulls()}
    seen |= {r.split("|")[0] for r in rejects.filter(pl.col("job_id").is_null())["raw"]}
    assert seen == allocations
    assert not set(jobs["job_id"]) & set(rejects["job_id"].drop_nulls())


def test_walltime_fallback_and_strict(awkward: Path) -> None:
    jobs, _, prov = read_sacct(awkward, walltime_fallback="runtime")
    row = jobs.filter(pl.col("job_id") == 107).row(0, named=True)
    assert row["walltime"] == row["runtime"] == 3600.0
    assert "2 job(s) with an unknown time limit got the walltime fallback" in prov.conventions
    jobs, _, _ = read_sacct(awkward, walltime_fallback=86400)
    assert jobs.filter(pl.col("job_id") == 107)["walltime"].item() == 86400.0
    with pytest.raises(WorkloadError, match=r"first at line 9, field 'Start'"):
        read_sacct(awkward, strict=True)


def test_size_unit_processors_and_machine_size(awkward: Path) -> None:
    jobs, rejects, prov = read_sacct(awkward, size_unit="processors", machine_size=4)
    assert prov.size_unit == "processors"
    assert jobs.height == 0  # every kept job has 8 CPUs > 4
    assert rejects.filter(pl.col("reason").str.contains("exceeds the machine size")).height == 6
    assert rejects.filter(pl.col("job_id") == 101)["raw"].item().startswith("101|has|pipe|")


def test_ambiguous_extra_fields_rejected(tmp_path: Path) -> None:
    header = "JobIDRaw|JobName|Comment|Submit|Start|End|ElapsedRaw|TimelimitRaw|NNodes"
    good = "1|a|c|1700000000|1700000010|1700000070|60|5|1"
    bad = "2|a|b|c|1700000000|1700000010|1700000070|60|5|1"
    jobs, rejects, _ = read_sacct(write(tmp_path, "two.psv", "\n".join([header, good, bad])))
    assert jobs["job_id"].to_list() == [1]
    row = rejects.row(0, named=True)
    assert (row["line"], row["job_id"]) == (3, 2)
    assert "10 fields but the header has 9" in row["reason"] and "ambiguous" in row["reason"]


def test_multichar_delimiter_case_insensitive_header_and_crlf(tmp_path: Path) -> None:
    text = "jobidraw^|^SUBMIT^|^jobname^|^start^|^End^|^elapsedraw^|^timelimitraw^|^nnodes\r\n"
    text += "7^|^1700000000^|^x^|^y^|^1700000005^|^1700000065^|^60^|^1^|^3\r\n"
    jobs, _, prov = read_sacct(write(tmp_path, "d.txt", text), delimiter="^|^")
    row = jobs.row(0, named=True)
    assert (row["job_id"], row["name"], row["size"], row["walltime"]) == (7, "x^|^y", 3, 60.0)
    assert "CRLF line endings" in prov.conventions


def test_jobid_only_het_and_array(tmp_path: Path) -> None:
    header = "JobID|Submit|Start|End|ElapsedRaw|TimelimitRaw|NNodes|User"
    body = [f"{jid}|1700000000|1700000010|1700000070|60|5|1|bob" for jid in ("200+0", "200+1", "300_4", "400")]
    body.append("500_[1-5]|1700000000|Unknown|Unknown|0|5|1|bob")
    jobs, rejects, _ = read_sacct(write(tmp_path, "ids.psv", "\n".join([header, *body])))
    assert jobs["job_id"].to_list() == [200, 400]
    assert jobs["sacct_job_id"].to_list() == ["200+0", "400"]
    assert jobs["user_id"].to_list() == [user_code("bob")] * 2
    reasons = dict(zip(rejects["line"], rejects["reason"], strict=True))
    assert "het-job component '200+1'" in reasons[3] and "JobIDRaw" in reasons[3]
    assert "array task '300_4'" in reasons[4]
    assert "pending array job summary" in reasons[6]


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="does not exist"):
        read_sacct(tmp_path / "nope.sacct")
    with pytest.raises(WorkloadError, match="empty"):
        read_sacct(write(tmp_path, "empty.sacct", "\n\n"))
    with pytest.raises(WorkloadError, match="not a sacct header"):
        read_sacct(write(tmp_path, "x.sacct", "a|b|c\n1|2|3\n"))
    with pytest.raises(WorkloadError, match="lacks"):
        read_sacct(write(tmp_path, "y.sacct", "JobIDRaw|Start\n1|2\n"))
    with pytest.raises(WorkloadError, match="unknown time zone"):
        read_sacct(write(tmp_path, "z.sacct", AWKWARD), timezone="Mars/Olympus")


# ------------------------------------------------------------------------------------------------------------
# Time zones
# ------------------------------------------------------------------------------------------------------------


def test_local_time_europe_rome_and_dst(tmp_path: Path) -> None:
    rows = [
        rec("1", submit="2024-07-01T12:00:00", start="2024-07-01T12:00:00", end="2024-07-01T13:00:00"),  # CEST
        rec("2", submit="2024-01-15T12:00:00", start="2024-01-15T12:00:00", end="2024-01-15T13:00:00"),  # CET
        # 2024-10-27: clocks go back 03:00 CEST → 02:00 CET; 02:30 happens twice.
        rec("3", submit="2024-10-27T02:30:00", start="2024-10-27T02:30:00", end="2024-10-27T03:30:00"),
        # 2024-03-31: clocks jump 02:00 → 03:00; 02:30 does not exist.
        # (Start 03:40 CEST = 01:40 UTC: after the gap Submit read as 01:30 UTC, else Submit after Start is rejected)
        rec("4", submit="2024-03-31T02:30:00", start="2024-03-31T03:40:00", end="2024-03-31T04:40:00"),
        rec("5", submit="1719835200", start="1719835200", end="1719838800"),  # %s epoch digits
        rec("6", submit="2024-07-01T12:00:00+0200", start="2024-07-01T12:00:00+02:00", end="2024-07-01T13:00:00Z"),
    ]
    path = write(tmp_path, "rome.sacct", "\n".join([HEADER, *rows]))
    jobs, rejects, prov = read_sacct(path, timezone="Europe/Rome")
    assert rejects.height == 0
    submit = dict(zip(jobs["job_id"], jobs["submit_time"], strict=True))
    assert submit[1] == epoch("2024-07-01T10:00:00")
    assert submit[2] == epoch("2024-01-15T11:00:00")
    assert submit[3] == epoch("2024-10-27T00:30:00")  # earlier occurrence (CEST)
    assert submit[4] == epoch("2024-03-31T01:30:00")  # pre-transition offset (CET)
    assert submit[5] == 1719835200.0
    assert submit[6] == epoch("2024-07-01T10:00:00")
    # Counted per value: job 3's Submit, Eligible and Start are ambiguous; job 4's Submit and Eligible do not exist.
    assert prov.header["input_timezone"] == "Europe/Rome" and prov.timezone == "UTC"
    assert "3 DST-ambiguous local time(s) read as the earlier occurrence" in prov.conventions
    assert "2 nonexistent local time(s) (DST gap) read with the pre-transition offset" in prov.conventions
    later, _, _ = read_sacct(path, timezone="Europe/Rome", ambiguous="later")
    assert later.filter(pl.col("job_id") == 3)["submit_time"].item() == epoch("2024-10-27T01:30:00")
    utc, _, _ = read_sacct(path)
    assert utc.filter(pl.col("job_id") == 1)["submit_time"].item() == epoch("2024-07-01T12:00:00")


# ------------------------------------------------------------------------------------------------------------
# --json
# ------------------------------------------------------------------------------------------------------------


def json_job(jid: Any, limit: Any, start: int = 1700000100, **extra: Any) -> dict[str, Any]:
    job = {
        "job_id": jid, "name": "a|b\nc", "user": "carol", "group": "lab", "partition": "booster", "qos": "normal",
        "account": "proj", "allocation_nodes": 2, "nodes": "nid[001-002]",
        "time": {"submission": 1700000000, "eligible": 1700000000, "start": start, "end": start + 600,
                 "elapsed": 600, "limit": limit},
        "state": {"current": ["COMPLETED"], "reason": "None"},
        "exit_code": {"status": ["SUCCESS"], "return_code": {"set": True, "infinite": False, "number": 0}},
        "required": {"CPUs": 64},
        "tres": {"allocated": [{"type": "cpu", "name": "", "id": 1, "count": 64},
                               {"type": "mem", "name": "", "id": 2, "count": 8192},
                               {"type": "energy", "name": "", "id": 3, "count": 36000},
                               {"type": "node", "name": "", "id": 4, "count": 2},
                               {"type": "gres", "name": "gpu", "id": 1001, "count": 8}],
                 "requested": []},
        "steps": [{"step": {"id": f"{jid}.batch"}}, {"step": {"id": f"{jid}.0"}}],
    }  # fmt: skip
    job.update(extra)
    return job


def test_json_form(tmp_path: Path) -> None:
    doc = {
        "meta": {"plugin": {"data_parser": "data_parser/v0.0.41"}},
        "jobs": [
            json_job(1, 30),  # old Slurm: plain minutes
            json_job(2, {"set": True, "infinite": False, "number": 45}),
            json_job(3, {"set": True, "infinite": True, "number": 0}),
            json_job(4, {"set": False, "infinite": False, "number": 0}),
            json_job(5, 30, start=0, state={"current": ["CANCELLED"], "reason": "None"}),
            json_job("6_1", 30),
            json_job(7, 30, state={"current": "FAILED", "reason": "None"}),
        ],
        "warnings": [],
        "errors": [],
    }
    path = write(tmp_path, "jobs.json", json.dumps(doc, indent=1))
    assert is_sacct_file(path)
    jobs, rejects, prov = read_sacct(path)
    assert prov.format == "sacct-json" and prov.n_records == 7
    assert jobs["job_id"].to_list() == [1, 2, 7]
    assert jobs["walltime"].to_list() == [1800.0, 2700.0, 1800.0]
    assert jobs["state"].to_list() == ["COMPLETED", "COMPLETED", "FAILED"]
    row = jobs.row(0, named=True)
    assert (row["submit_time"], row["trace_start_time"], row["runtime"]) == (1700000000.0, 1700000100.0, 600.0)
    assert (row["size"], row["cores"], row["gpus"], row["mem"], row["energy"]) == (2, 64, 8, 8.0, 36000.0)
    assert row["name"] == "a|b\nc" and row["user_id"] == user_code("carol") and row["sacct_exit_code"] == "0:0"
    fields = dict(zip(rejects["line"], rejects["field"], strict=True))
    assert fields == {3: "time.limit", 4: "time.limit", 5: "Start", 6: "job_id"}
    assert "14 nested step record(s) folded into their jobs (not rejects)" in prov.conventions
    jobs_p, _, _ = read_sacct(path, size_unit="processors")
    assert jobs_p["size"].to_list() == [64, 64, 64]


def test_json_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="invalid JSON"):
        read_sacct(write(tmp_path, "bad.json", "{not json"))
    with pytest.raises(WorkloadError, match="no 'jobs' array"):
        read_sacct(write(tmp_path, "other.json", '{"x": 1}'))


def test_is_sacct_file(tmp_path: Path, awkward: Path) -> None:
    assert is_sacct_file(awkward)
    assert not is_sacct_file(write(tmp_path, "t.swf", "; Version: 2.2\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n"))
    assert not is_sacct_file(tmp_path / "missing")


# ------------------------------------------------------------------------------------------------------------
# Round trip: a tiny -P writer, random jobs with awkward names
# ------------------------------------------------------------------------------------------------------------

RT_HEADER = ["JobIDRaw", "JobName", "User", "UID", "Partition", "Submit", "Start", "End", "ElapsedRaw",
             "TimelimitRaw", "State", "NNodes", "NCPUS", "AllocTRES", "ConsumedEnergyRaw"]  # fmt: skip


def write_psv(jobs: list[dict[str, Any]], epoch_digits: bool) -> str:
    """sacct -P as Slurm prints it (UTC client, or SLURM_TIME_FORMAT=%s); JobName is free text, verbatim."""

    def ts(t: int) -> str:
        return str(t) if epoch_digits else datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")

    lines = ["|".join(RT_HEADER)]
    for j in jobs:
        start, end = j["submit"] + j["wait"], j["submit"] + j["wait"] + j["elapsed"]
        lines.append("|".join([
            str(j["id"]), j["name"], j["user"], str(j["uid"]), j["partition"], ts(j["submit"]), ts(start), ts(end),
            str(j["elapsed"]), str(j["limit"]), j["state"], str(j["nodes"]), str(j["cpus"]),
            f"cpu={j['cpus']},gres/gpu={j['gpus']},node={j['nodes']}", str(j["energy"]),
        ]))  # fmt: skip
        if j["step"]:
            lines.append(f"{j['id']}.batch|batch|{j['user']}|{j['uid']}|{j['partition']}|" + "|" * 9)
    return "\n".join(lines) + "\n"


# Letters, spaces, the delimiter and newlines, avoiding the documented ambiguity of -P: after a newline, free text
# must not hold the delimiter (the line would have a full field count) nor start like a job id (digits).
NAMES = st.builds(
    str.__add__,
    st.text(alphabet=st.sampled_from(list("abcXYZ é-_.|\t")), max_size=12),
    st.text(alphabet=st.sampled_from(list("abc é-_.\n\t")), max_size=8),
)
JOB = st.fixed_dictionaries({
    "name": NAMES,
    "user": st.sampled_from(["alice", "bob", "o'neil"]),
    "uid": st.integers(0, 2**31),
    "partition": st.sampled_from(["cpu", "gpu", "debug"]),
    "submit": st.integers(1_500_000_000, 1_800_000_000),
    "wait": st.integers(0, 10_000),
    "elapsed": st.integers(0, 200_000),
    "limit": st.integers(1, 10_000),
    "state": st.sampled_from(["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 5", "OUT_OF_MEMORY"]),
    "nodes": st.integers(1, 64),
    "cpus": st.integers(1, 4096),
    "gpus": st.integers(0, 8),
    "energy": st.integers(1, 10**9),
    "step": st.booleans(),
})  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(jobs=st.lists(JOB, min_size=1, max_size=8), epoch_digits=st.booleans(), crlf=st.booleans())
def test_round_trip(jobs: list[dict[str, Any]], epoch_digits: bool, crlf: bool) -> None:
    for k, j in enumerate(jobs):
        j["id"] = 1000 + k
    text = write_psv(jobs, epoch_digits)
    if crlf:
        text = text.replace("\n", "\r\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rt.sacct"
        path.write_bytes(text.encode("utf-8"))
        got, rejects, prov = read_sacct(path)
    assert rejects.height == 0, rejects.to_dicts()
    assert prov.n_jobs == len(jobs)
    rows = {r["job_id"]: r for r in got.iter_rows(named=True)}
    for j in jobs:
        r = rows[j["id"]]
        assert r["name"] == j["name"]
        assert r["submit_time"] == j["submit"]
        assert r["trace_start_time"] == j["submit"] + j["wait"]
        assert r["trace_end_time"] == j["submit"] + j["wait"] + j["elapsed"]
        assert (r["runtime"], r["walltime"]) == (j["elapsed"], j["limit"] * 60)
        assert (r["size"], r["cores"], r["gpus"], r["energy"]) == (j["nodes"], j["cpus"], j["gpus"], j["energy"])
        assert (r["user_id"], r["sacct_user"], r["queue"]) == (j["uid"], j["user"], j["partition"])
        assert r["state"] == j["state"].split(" by ")[0]
    assert got["submit_time"].is_sorted()


def test_load_workload_dispatches_sacct_by_ending_and_by_content(tmp_path) -> None:
    from wattsched.workload.load import load_workload

    text = (
        "JobIDRaw|JobName|UID|Partition|Submit|Start|End|ElapsedRaw|TimelimitRaw|State|NNodes|NCPUS\n"
        "11|a|1000|p|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:11:00|600|60|COMPLETED|2|64\n"
    )
    for name in ("jobs.sacct", "jobs.txt", "jobs.log"):
        path = tmp_path / name
        path.write_text(text)
        read = load_workload(path, machine_size=10)
        assert read.provenance.format == "sacct"
        assert read.jobs.select("job_id", "walltime", "runtime", "size").row(0) == (11, 3600.0, 600.0, 2)


def test_reqmem_when_the_tres_have_no_memory(tmp_path: Path) -> None:
    header = "JobIDRaw|Submit|Start|End|ElapsedRaw|TimelimitRaw|State|NNodes|NCPUS|ReqMem|AllocTRES"
    lines = [header]
    for jid, reqmem, tres in (
        ("1", "16G", "cpu=8,node=2"),
        ("2", "4000Mc", "cpu=8"),
        ("3", "16Gn", "node=2"),
        ("4", "0", ""),
        ("5", "2G", "mem=1G"),
        ("6", "lots", ""),
    ):
        lines.append(
            f"{jid}|2024-03-01T10:00:00|2024-03-01T10:01:00|2024-03-01T11:01:00|3600|120|COMPLETED|2|8|{reqmem}|{tres}"
        )
    jobs, rejects, _ = read_sacct(write(tmp_path, "mem.sacct", "\n".join(lines) + "\n"))
    mem = dict(zip(jobs["job_id"].to_list(), jobs["mem"].to_list(), strict=True))
    assert mem == {1: 16.0, 2: pytest.approx(8 * 4000 / 1024), 3: 32.0, 4: None, 5: 1.0}  # AllocTRES mem wins
    assert rejects["line"].to_list() == [7] and rejects["field"].to_list() == ["ReqMem"]
    assert "lots" in rejects["reason"][0]
