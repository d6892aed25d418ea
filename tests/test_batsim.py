"""Batsim v4 workload export and ``wattsched data convert``."""

from __future__ import annotations

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
    swf = tmp_path / "kth.swf.gz"
    result = runner.invoke(app, ["data", "convert", "--input", str(kth), "--output", str(swf)])
    assert result.exit_code == 0, result.output
    again = load_workload(swf).jobs
    cols = ["job_id", "submit_time", "walltime", "runtime", "size", "user_id"]
    assert again.select(cols).equals(original.select(cols))
    result = runner.invoke(app, ["data", "convert", "--input", str(kth), "--output", str(tmp_path / "x.txt")])
    assert result.exit_code == 2
