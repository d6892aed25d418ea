"""Batsim v4 workloads written and read back, JSON told apart by content, and ``wattsched data convert``."""

from __future__ import annotations

import gzip
import json

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app
from wattsched.core.schema import WorkloadError
from wattsched.workload.batsim import batsim_workload
from wattsched.workload.load import load_workload


def _jobs() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "job_id": [2, 1, 3],
            "submit_time": [5.0, 0.0, 5.0],
            "walltime": [100.0, 60.0, 2e6],
            "runtime": [1234567.5, 30.0, 1234568.5],
            "size": [4, 1, 2],
            "user_id": [7, None, 8],
        }
    )


def test_batsim_workload_golden() -> None:
    w = batsim_workload(_jobs(), 8)
    assert w["nb_res"] == 8
    assert [j["id"] for j in w["jobs"]] == ["1", "2", "3"]  # queue order
    assert w["jobs"][0] == {"id": "1", "subtime": 0.0, "walltime": 60.0, "res": 1, "profile": "delay_30.0"}
    assert w["jobs"][1]["user_id"] == 7
    # distinct runtimes never share a profile, equal ones do
    assert {p["delay"] for p in w["profiles"].values()} == {30.0, 1234567.5, 1234568.5}
    assert all(w["profiles"][j["profile"]]["type"] == "delay" for j in w["jobs"])


def test_batsim_refuses_jobs_larger_than_the_machine() -> None:
    with pytest.raises(WorkloadError, match="need more than the 3 resources"):
        batsim_workload(_jobs(), 3)


def test_convert_kth_to_batsim_and_swf_round_trip(tmp_path) -> None:
    kth = require_data("swf/KTH-SP2/log.swf")
    runner = CliRunner()
    out = tmp_path / "kth.json"
    result = runner.invoke(app, ["data", "convert", "--input", str(kth), "--output", str(out)])
    assert result.exit_code == 0, result.output
    w = json.loads(out.read_text())
    original = load_workload(kth).jobs
    assert w["nb_res"] == 100 and len(w["jobs"]) == original.height
    delays = {w["profiles"][j["profile"]]["delay"] for j in w["jobs"]}
    assert delays == set(original["runtime"].to_list())
    back = load_workload(out)  # read back by the Batsim reader: the same jobs, nb_res as the machine size
    keep = ["job_id", "submit_time", "walltime", "runtime", "size", "user_id"]
    assert back.jobs.select(keep).equals(original.select(keep)) and back.provenance.machine_size == 100
    swf = tmp_path / "kth.swf.gz"
    result = runner.invoke(app, ["data", "convert", "--input", str(kth), "--output", str(swf)])
    assert result.exit_code == 0, result.output
    again = load_workload(swf).jobs
    cols = ["job_id", "submit_time", "walltime", "runtime", "size", "user_id"]
    assert again.select(cols).equals(original.select(cols))
    result = runner.invoke(app, ["data", "convert", "--input", str(kth), "--output", str(tmp_path / "x.txt")])
    assert result.exit_code == 2


# reading Batsim workloads back, detection by content
# ------------------------------------------------------------------------------------------------------------

SWF_SMALL = """; Computer: test
; MaxProcs: 16
1 0 -1 100 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1 -1
2 5 -1 50 16 -1 -1 16 -1 -1 1 4 -1 -1 -1 -1 -1 -1
3 5 -1 7 1 -1 -1 1 60 -1 1 3 -1 -1 -1 -1 -1 -1
4 9 -1 -1 2 -1 -1 2 60 -1 1 3 -1 -1 -1 -1 -1 -1
"""


def test_swf_to_batsim_and_back_gives_the_same_jobs(tmp_path) -> None:
    swf = tmp_path / "small.swf"
    swf.write_text(SWF_SMALL)
    out = tmp_path / "x.json"
    result = CliRunner().invoke(app, ["data", "convert", "--input", str(swf), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 rejected: run time is unknown (1; first: line 6)" in " ".join(result.output.split())
    assert (tmp_path / "x.rejects.parquet").exists()
    original, back = load_workload(swf), load_workload(out)
    cols = ["job_id", "submit_time", "walltime", "runtime", "size", "user_id"]
    assert back.jobs.select(cols).equals(original.jobs.select(cols))
    assert back.provenance.format == "batsim" and back.provenance.machine_size == 16  # nb_res, as MaxProcs
    # job 2 had no requested time: SWF made the walltime its run time, and Batsim's file keeps it
    assert back.jobs.filter(pl.col("job_id") == 2)["walltime"].item() == 50.0


def _doc(jobs, profiles, nb_res=8):
    return {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}


def test_read_batsim_rejects_what_gives_no_run_time(tmp_path) -> None:
    profiles = {
        "d": {"type": "delay", "delay": 30},
        "p": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
        "nodelay": {"type": "delay"},
    }
    jobs = [
        {"id": "w0!1", "subtime": 0, "walltime": 60, "res": 2, "profile": "d", "user_id": 5},
        {"id": 2, "subtime": 1, "res": 1, "profile": "p"},
        {"id": "x", "subtime": 2, "res": 1, "profile": "d"},
        {"id": 4, "subtime": 3, "res": 1.5, "profile": "d"},
        {"id": 5, "subtime": 4, "res": 1, "profile": "missing"},
        {"id": 6, "subtime": 5, "res": 1, "profile": "nodelay"},
        {"id": 7, "subtime": 6, "res": 9, "profile": "d"},
        {"id": 8, "res": 1, "profile": "d"},
        {"id": 9, "subtime": 7, "walltime": -1, "res": 8, "profile": "d"},
    ]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(_doc(jobs, profiles)))
    read = load_workload(path)
    # "x" is a Batsim id like any other (issue 30): kept as text, and the jobs numbered by their position
    assert read.jobs["batsim_id"].to_list() == ["w0!1", "x", "9"]
    assert read.jobs["job_id"].to_list() == [1, 3, 9]
    assert read.jobs["walltime"].to_list() == [60.0, 30.0, 30.0]  # no walltime: the run time, as in SWF
    assert read.jobs["user_id"].to_list() == [5, None, None]
    reasons = dict(zip(read.rejects["line"], read.rejects["reason"], strict=True))
    assert reasons[2] == "profile 'p' has type 'parallel_homogeneous': only delay profiles give a run time"
    assert 3 not in reasons
    assert reasons[4] == "res 1.5 is not an integer"
    assert reasons[5] == "profile 'missing' is not in 'profiles'"
    assert reasons[6] == "profile 'nodelay' has no numeric 'delay'"
    assert reasons[7] == "job size exceeds the machine size (8)"
    assert reasons[8] == "'subtime' is missing"
    assert json.loads(read.rejects.filter(pl.col("line") == 7)["raw"].item())["id"] == 7  # the record's text
    with pytest.raises(WorkloadError, match=r"w.json: 6 rejected record\(s\); first at line 2"):
        load_workload(path, strict=True)


def test_nb_res_is_the_machine_size_of_simulate(tmp_path) -> None:
    path = tmp_path / "w.json"
    jobs = [{"id": i, "subtime": i, "walltime": 100, "res": 3, "profile": "d"} for i in range(1, 5)]
    path.write_text(json.dumps(_doc(jobs, {"d": {"type": "delay", "delay": 10}}, nb_res=6)))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["simulate", "--workload", str(path), "--policy", "fcfs", "--output", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["machine_size"] == 6
    assert load_workload(path, machine_size=12).provenance.machine_size == 12  # an explicit size wins


def test_json_is_told_apart_by_content(tmp_path) -> None:
    batsim = tmp_path / "workload.wl"  # an odd ending: the content decides
    batsim.write_text(
        json.dumps(_doc([{"id": 1, "subtime": 0, "res": 1, "profile": "d"}], {"d": {"type": "delay", "delay": 5}}))
    )
    assert load_workload(batsim).provenance.format == "batsim"
    gz = tmp_path / "workload.json.gz"
    gz.write_bytes(gzip.compress(batsim.read_bytes()))
    assert load_workload(gz).jobs.equals(load_workload(batsim).jobs)
    sacct = tmp_path / "sacct.json"
    sacct.write_text(json.dumps({"jobs": [{"job_id": "abc", "time": {}}]}))
    with pytest.raises(WorkloadError) as err:  # read by the sacct reader, which rejects its only job
        load_workload(sacct)
    assert "sacct.json: no usable job, every record was rejected" in str(err.value)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"tasks": [1, 2]}))
    with pytest.raises(WorkloadError, match=r"other.json: unknown JSON layout .*expected a Batsim workload"):
        load_workload(other)
    swf = tmp_path / "trace"  # no ending at all: SWF by its lines
    swf.write_text(SWF_SMALL)
    assert load_workload(swf).provenance.format == "swf"
    big = tmp_path / "late.json"  # Batsim keys beyond the sniffed head: the whole document decides
    jobs = [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}]
    big.write_text(
        json.dumps(
            {
                "description": "x" * (1 << 20) + '"job_id"',
                "jobs": jobs,
                "profiles": {"d": {"type": "delay", "delay": 1}},
            }
        )
    )
    assert load_workload(big, machine_size=2).jobs.height == 1


def test_convert_of_a_workload_with_every_line_rejected_exits_1_with_reasons(tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_doc([{"id": 1, "subtime": 0, "res": 1, "profile": "p"}], {"p": {"type": "smpi"}})))
    result = CliRunner().invoke(app, ["data", "convert", "--input", str(path), "--output", str(tmp_path / "o.csv")])
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "no usable job, every record was rejected; 1 rejected: profile 'p' has type 'smpi'" in text
    assert not (tmp_path / "o.csv").exists() and (tmp_path / "o.rejects.csv").exists()


def test_a_csv_without_a_size_converts_to_batsim_with_machine_size(tmp_path) -> None:
    """Issue 30, item 9: a job table declares no machine size, so its Batsim JSON needs one: the error names the
    option, and ``--machine-size`` gives nb_res, read back as the machine size."""
    table = tmp_path / "jobs.csv"
    table.write_text("job_id,submit_time,runtime,size,walltime\n1,0,100,4,200\n2,10,50,2,100\n")
    out = tmp_path / "jobs.json"
    runner = CliRunner()
    refused = runner.invoke(app, ["data", "convert", "--workload", str(table), "--output", str(out)])
    assert refused.exit_code == 2 and "pass --machine-size" in refused.output and not out.exists(), refused.output
    done = runner.invoke(
        app, ["data", "convert", "--workload", str(table), "--output", str(out), "--machine-size", "16"]
    )
    assert done.exit_code == 0, done.output
    back = load_workload(out)
    assert back.provenance.machine_size == 16 and back.jobs["size"].to_list() == [4, 2]
