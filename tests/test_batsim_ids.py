"""Batsim's string job ids kept end to end (issue 30, item 10): ``"w0!1"`` and ``"w1!1"`` were refused as
duplicates and ``"abc"`` as not an integer, and the evalys ``jobs.csv`` wrote the file stem as workload_name, so
it could not be joined with Batsim's own ``_jobs.csv``. Now: read, simulate, write with Batsim's ids."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.workload.batsim import batsim_workload
from wattsched.workload.load import load_workload

PROFILES = {"d10": {"type": "delay", "delay": 10.0}, "d30": {"type": "delay", "delay": 30.0}}


def _workload(tmp_path: Path, ids: list[object]) -> Path:
    jobs = [
        {"id": jid, "subtime": float(k), "walltime": 100.0, "res": 1 + k % 2, "profile": "d10" if k % 2 else "d30"}
        for k, jid in enumerate(ids)
    ]
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": PROFILES}))
    return path


def test_string_and_workload_prefixed_ids_are_read_and_kept(tmp_path: Path) -> None:
    read = load_workload(_workload(tmp_path, ["w0!1", "w1!1", "abc", "abc"]))
    assert read.jobs.sort("submit_time")["batsim_id"].to_list() == ["w0!1", "w1!1", "abc"]
    assert read.jobs.sort("submit_time")["job_id"].to_list() == [1, 2, 3]  # by position: "1" twice
    (reject,) = read.rejects.to_dicts()
    assert reject["line"] == 4 and "job id 'abc' is given twice (first at job 3)" in reject["reason"]
    # integer ids that are distinct stay the job ids
    plain = load_workload(_workload(tmp_path, [7, "9", "w0!12"]))
    assert sorted(plain.jobs["job_id"].to_list()) == [7, 9, 12]
    # a non-id is still a one-line reject
    bad = load_workload(_workload(tmp_path, [1, None, True]))
    assert [r["reason"] for r in bad.rejects.to_dicts()] == [
        "job id None is not a string or an integer",
        "job id True is not a string or an integer",
    ]


def test_evalys_output_joins_batsims_jobs_csv(tmp_path: Path) -> None:
    from evalys.jobset import JobSet

    workload = _workload(tmp_path, ["w0!1", "w1!1", "abc"])
    out = tmp_path / "run"
    args = ["simulate", "--workload", str(workload), "--policy", "fcfs", "--format", "evalys", "--output", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    ours = JobSet.from_csv(str(out / "jobs.csv")).df  # evalys names the id column jobID
    assert sorted(zip(ours["workload_name"], ours["jobID"].astype(str), strict=True)) == [
        ("w0", "1"),
        ("w0", "abc"),
        ("w1", "1"),
    ]
    # Batsim's own _jobs.csv names each job by the same (workload_name, job_id) pair: "w0!1" → (w0, 1), and a
    # job of a static workload without a prefix is in w0. Written here as Batsim would for this workload (no
    # Batsim on the test machine), it joins ours one to one.
    batsim = pl.DataFrame(
        {"job_id": ["1", "1", "abc"], "workload_name": ["w0", "w1", "w0"], "profile": ["d30", "d10", "d30"]}
    )
    joined = pl.read_csv(out / "jobs.csv", schema_overrides={"job_id": pl.Utf8}).join(
        batsim, on=["workload_name", "job_id"], how="inner"
    )
    assert joined.height == 3


def test_ids_survive_a_round_trip_through_batsim_json(tmp_path: Path) -> None:
    read = load_workload(_workload(tmp_path, ["w0!1", "w1!1", "abc"]))
    written = batsim_workload(read.jobs, 4)
    assert [j["id"] for j in written["jobs"]] == ["w0!1", "w1!1", "abc"]
    out = tmp_path / "again.json"
    result = CliRunner().invoke(app, ["data", "convert", "--input", str(tmp_path / "w.json"), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert load_workload(out).jobs["batsim_id"].to_list() == ["w0!1", "w1!1", "abc"]
