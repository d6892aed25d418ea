"""Eurora: the job-instance reader, the power-prediction join and the platform preset (paper 001)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app
from wattsched.core.schema import REJECTS_SCHEMA, WorkloadError
from wattsched.studies.multires.eurora import (
    DEFAULT_EWT,
    EURORA_QUEUES,
    NodeConfigError,
    eurora_pool,
    queue_ewt,
    read_node_config,
    read_queue_config,
)
from wattsched.studies.multires.nodes import NodePool
from wattsched.workload.eurora import read_eurora, read_eurora_power_predictions
from wattsched.workload.load import load_workload

GOOD = (
    "498519;xxx;yyy;parallel;2014-03-31 09:23:29__44;16;2;0;14680064#53;16;2;0;14680064#__2014-04-01 22:02:34;"
    "2014-04-02 00:50:17;2;32;28;04:00;NA;NA;COMPLETED;2"
)
#: A one-chunk debug job with a placeholder walltime field and end time, to vary per case.
ONE = (
    "{id};exe;alice;debug;2014-03-31 09:23:29__44;1;0;0;4194304#__2014-03-31 09:23:30;{end};1;1;4;{wt};NA;NA;"
    "COMPLETED;0"
)


def _one(job_id: int, wt: str = "00:30", end: str = "2014-03-31 09:24:30") -> str:
    return ONE.format(id=job_id, wt=wt, end=end)


def _epoch(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()


def _write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------------------------------------ golden parsing


def test_multi_node_line_golden(tmp_path: Path) -> None:
    read = read_eurora(_write(tmp_path / "a.log_crypt", GOOD))
    assert read.rejects.height == 0 and read.rejects.schema == pl.Schema(REJECTS_SCHEMA)
    job = read.jobs.row(0, named=True)
    expected = {
        "job_id": 498519, "eurora_job_id": "498519", "name": "xxx", "queue": "parallel", "state": "COMPLETED",
        "submit_time": _epoch("2014-03-31 09:23:29"), "trace_start_time": _epoch("2014-04-01 22:02:34"),
        "trace_end_time": _epoch("2014-04-02 00:50:17"), "runtime": 10063.0, "walltime": 14400.0,
        "chunks": 2, "size": 2, "chunk_cores": 16, "chunk_gpus": 2, "chunk_mics": 0, "chunk_mem": 14680064,
        "cores": 32, "gpus": 4, "mics": 0, "mem": 28.0, "nodes": 2, "req_cores": 32, "req_mem_gb": 28.0,
        "app_type": 2, "eurora_nodes": [44, 53],
    }  # fmt: skip
    assert {k: job[k] for k in expected} == expected
    from wattsched.workload.sacct import user_code

    assert job["user_id"] == user_code("yyy")
    prov = read.provenance
    assert (prov.format, prov.size_unit, prov.timezone, prov.unix_start_time) == ("eurora", "chunks", "UTC", 0.0)
    assert prov.header["heterogeneous_chunks"] == 0 and prov.header["duplicate_lines"] == 0


def test_heterogeneous_entries_take_the_elementwise_max(tmp_path: Path) -> None:
    line = _one(7).replace("44;1;0;0;4194304#", "44;1;0;2;4194304#44;4;1;0;1048576#")
    read = read_eurora(_write(tmp_path / "h.log_crypt", line))
    job = read.jobs.row(0, named=True)
    assert (job["chunks"], job["chunk_cores"], job["chunk_gpus"], job["chunk_mics"]) == (2, 4, 1, 2)
    assert job["chunk_mem"] == 4194304 and job["cores"] == 8 and job["eurora_nodes"] == [44, 44]
    assert read.provenance.header["heterogeneous_chunks"] == 1


def test_missing_walltime_default_or_reject(tmp_path: Path) -> None:
    path = _write(tmp_path / "w.log_crypt", _one(1, wt=""), _one(2, wt="NA"), _one(3, wt="00:00"), _one(4))
    read = read_eurora(path)
    assert read.jobs["job_id"].to_list() == [4]
    assert read.rejects["line"].to_list() == [1, 2, 3]
    assert set(read.rejects["field"]) == {"walltime"}
    assert all("no entry for queue 'debug'" in r for r in read.rejects["reason"])
    filled = read_eurora(path, walltime_defaults={"debug": 1800})
    assert filled.rejects.height == 0
    assert filled.jobs.sort("job_id")["walltime"].to_list() == [1800.0, 1800.0, 1800.0, 1800.0]
    with pytest.raises(WorkloadError, match="walltime_defaults"):
        read_eurora(path, walltime_defaults={"debug": -1})


@pytest.mark.parametrize(
    ("line", "field", "why"),
    [
        ("498519;xxx;yyy;parallel;2014-03-31 09:23:29", "line", "expected 3 sections"),
        (_one(9).replace("alice;", ""), "line", "expected 5 ';'-separated fields"),
        (_one(9).replace(";NA;NA;", ";NA;"), "line", "expected 10 ';'-separated fields"),
        (_one(9).replace("9;exe", "9x;exe"), "job_id", "job id 9x is not a non-negative integer"),
        (_one(9).replace(";debug;", ";;"), "queue", "queue is empty"),
        (_one(9).replace("09:23:29__", "9:23__"), "arrival", "is not a 'YYYY-MM-DD HH:MM:SS'"),
        (_one(9).replace("44;1;0;0;4194304#", ""), "nodes", "no used-node entries"),
        (_one(9).replace("44;1;0;0;4194304#", "44;1;0;0#"), "nodes", "has 4 fields, expected 5"),
        (_one(9).replace("44;1;0;0;4194304#", "44;1;x;0;4194304#"), "nodes", "non-negative integer"),
        (_one(9).replace("44;1;0;0;4194304#", "44;1;0;0;4194304##"), "nodes", "used-node entry 2 is empty"),
        (_one(9).replace("44;1;0;0;4194304#", "44;0;0;0;4194304#"), "nodes", "uses no cores"),
        (_one(9, end="2014-13-31 09:24:30"), "end", "is not a 'YYYY-MM-DD HH:MM:SS'"),
        (_one(9).replace("COMPLETED;0", "COMPLETED;x"), "app_type", "application type x"),
        (_one(9).replace(";1;1;4;", ";one;1;4;"), "req_nodes", "requested nodes one"),
        (_one(9).replace(";1;1;4;", ";1;1;-4;"), "req_mem", "requested memory -4"),
        (_one(9, wt="0:3"), "walltime", "walltime 0:3 is not hh:mm"),
        (_one(9).replace("09:23:30", "09:20:00"), "start", "started before it arrived"),
        (_one(9, end="2014-03-31 09:20:00"), "runtime", "run time is negative"),
    ],
)
def test_malformed_line_is_rejected_with_file_line_field(tmp_path: Path, line: str, field: str, why: str) -> None:
    path = _write(tmp_path / "bad.log_crypt", _one(1), "", line)
    read = read_eurora(path)
    assert read.jobs["job_id"].to_list() == [1]
    assert read.rejects.height == 1
    reject = read.rejects.row(0, named=True)
    assert (reject["source"], reject["line"], reject["field"], reject["raw"]) == (str(path), 3, field, line)
    assert why in reject["reason"]
    assert read.provenance.n_records == 2 and read.provenance.header["blank_lines"] == 1
    with pytest.raises(WorkloadError, match=f"line 3, field '{field}'"):
        read_eurora(path, strict=True)


def test_overlapping_instances_keep_one_row_per_job(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    a = _write(tmp_path / "x" / "a.log_crypt", _one(1), _one(2))
    b = _write(tmp_path / "x" / "b.log_crypt", _one(2), _one(3), _one(1, end="2014-03-31 09:25:00"))
    read = read_eurora(tmp_path / "x")
    assert read.jobs["job_id"].to_list() == [1, 2, 3]
    assert read.jobs.filter(pl.col("job_id") == 1)["runtime"].item() == 60.0  # the first occurrence
    assert read.provenance.header["duplicate_lines"] == 1
    assert read.provenance.header["conflicting_duplicates"] == 1
    reject = read.rejects.row(0, named=True)
    assert (reject["source"], reject["line"], reject["field"], reject["job_id"]) == (str(b), 3, "job_id", 1)
    assert f"{a}:1" in reject["reason"]
    assert read.provenance.n_records == 5
    assert [f["lines"] for f in read.provenance.header["files"]] == [2, 3]
    assert read_eurora([b, a]).jobs.filter(pl.col("job_id") == 1)["runtime"].item() == 90.0
    with pytest.raises(WorkloadError, match="no such file"):
        read_eurora(tmp_path / "missing.log_crypt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorkloadError, match=r"no \*\.log_crypt"):
        read_eurora(tmp_path / "empty")


def test_predictions_file_and_join(tmp_path: Path) -> None:
    pred = _write(tmp_path / "power_predictions", "1.node129;93.5", "3.node129;10", "")
    table = read_eurora_power_predictions(pred)
    assert table.schema == pl.Schema({"job_id": pl.Int64, "pred_power_eurora": pl.Float64})
    assert table.rows() == [(1, 93.5), (3, 10.0)]
    read = read_eurora(_write(tmp_path / "a.log_crypt", _one(1), _one(2)), predictions=pred)
    assert read.jobs["pred_power"].to_list() == [93.5, None]
    assert (read.provenance.header["predictions_matched"], read.provenance.header["predictions_unmatched"]) == (1, 1)
    for text, why in [
        ("1.node129;abc", ":1: expected"),
        ("1.node129;5\nx;3", ":2: expected"),
        ("1.node129;5\n1.node130;6", "different predictions on lines \\[1, 2\\]"),
    ]:
        _write(tmp_path / "bad", text)
        with pytest.raises(WorkloadError, match=why):
            read_eurora_power_predictions(tmp_path / "bad")


def test_load_workload_dispatches_eurora(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    path = _write(tmp_path / "d" / "i.log_crypt", _one(1))
    assert load_workload(path).provenance.format == "eurora"
    assert load_workload(tmp_path / "d").jobs["job_id"].to_list() == [1]
    assert load_workload(path, machine_size=1).provenance.machine_size == 1


# ------------------------------------------------------------------------------------------------ platform preset


def _same_pool(a: NodePool, b: NodePool) -> bool:
    return (
        a.resources == b.resources
        and a.necessary == b.necessary
        and a.queues == b.queues
        and np.array_equal(a.capacity, b.capacity)
        and np.array_equal(a.node_ids, b.node_ids)
        and np.array_equal(a.reserved, b.reserved)
    )


def test_builtin_preset() -> None:
    pool = eurora_pool()
    assert pool.n_nodes == 64 and pool.resources == ("cores", "gpus", "mics", "mem")
    assert pool.necessary == ("cores",) and not pool.reserved.any()
    assert (pool.capacity[:, 0] == 16).all() and (pool.capacity[:, 3] == 33554432).all()
    assert (pool.capacity[:32, 2] == 2).all() and (pool.capacity[:32, 1] == 0).all()
    assert (pool.capacity[32:, 1] == 2).all() and (pool.capacity[32:, 2] == 0).all()
    assert pool.totals().tolist() == [1024, 64, 64, 64 * 33554432]
    assert pool.queues == {**dict.fromkeys(EURORA_QUEUES, 1800.0), "default": 1800.0}
    assert queue_ewt(pool, ["debug", "R", None]).tolist() == [1800.0, 1800.0, 1800.0]
    files = eurora_pool(ewt="queues-file")
    assert files.queues == {**EURORA_QUEUES, "default": DEFAULT_EWT}
    assert queue_ewt(files, ["debug", "parallel", "R"]).tolist() == [3600.0, 21600.0, 1800.0]
    assert queue_ewt(files, ["R"], default=99.0).tolist() == [99.0]
    custom = eurora_pool(ewt={"debug": 60, "R": 120}, default_ewt=600)
    assert custom.queues == {"debug": 60.0, "R": 120.0, "default": 600.0}
    assert queue_ewt(custom, ["parallel"]).tolist() == [600.0]
    eight = eurora_pool(nodes=8)
    assert eight.capacity[:, 2].tolist() == [2, 2, 2, 2, 0, 0, 0, 0]
    for bad in ({"nodes": 0}, {"nodes": 65}, {"ewt": "max"}, {"ewt": {"debug": 0}}, {"default_ewt": -1}):
        with pytest.raises(ValueError):
            eurora_pool(**bad)


def test_node_config_errors_name_file_and_line(tmp_path: Path) -> None:
    ok = "0 16 0 2 33554432 0 \n"
    cases = [
        ("0 16 0 2 33554432\n", "expected 6 fields"),
        ("0 16 zero 2 33554432 0\n", "must be an integer"),
        ("0 16 0 2 33554432 2\n", "'reserved' must be 0 or 1"),
        ("0 16 -1 2 33554432 0\n", "negative"),
        ("0 16 0 2 33554432 0\n", "node id 0 already defined on line 1"),
    ]
    for text, why in cases:
        path = _write(tmp_path / "nodes_#2", ok.rstrip("\n"), text.rstrip("\n"))
        with pytest.raises(NodeConfigError, match=f"nodes_#2:2: .*{why}"):
            read_node_config(path)
    pool = read_node_config(_write(tmp_path / "nodes_#1", "\n", "5 16 2 0 100 1  "))
    assert pool.node_ids.tolist() == [5] and pool.reserved.tolist() == [True] and pool.usable().sum() == 0
    for text, why in [
        ("debug\n", "expected 2 fields"),
        ("debug x\n", "not a number"),
        ("debug 0\n", "positive"),
        ("a 1\na 2\n", "defined twice"),
    ]:
        (tmp_path / "q").write_text(text)
        with pytest.raises(NodeConfigError, match=f"q:\\d: .*{why}"):
            read_queue_config(tmp_path / "q")
    with pytest.raises(NodeConfigError, match="no such node file"):
        eurora_pool(tmp_path, nodes=3)


@pytest.mark.data
@pytest.mark.parametrize("nodes", [8, 32, 64])
def test_builtin_preset_equals_the_data_files(nodes: int) -> None:
    configs = require_data("eurora/system_configs")
    assert read_queue_config(configs / "system_queues") == EURORA_QUEUES
    for ewt in ("constant", "queues-file"):
        from_files = eurora_pool(configs, nodes=nodes, ewt=ewt)
        assert _same_pool(from_files, eurora_pool(nodes=nodes, ewt=ewt))
    bare = eurora_pool(nodes=nodes, ewt={})
    assert _same_pool(
        read_node_config(configs / f"nodes_#{nodes}"),
        NodePool(
            name="", resources=bare.resources, capacity=bare.capacity, node_ids=bare.node_ids, reserved=bare.reserved
        ),
    )


# ------------------------------------------------------------------------------------------------ the real trace


@pytest.fixture(scope="module")
def eurora_all():
    traces = require_data("eurora/historical_traces")
    predictions = require_data("eurora/eurora_power_predictions/power_predictions")
    return read_eurora(traces, predictions=predictions)


@pytest.mark.data
def test_real_trace_counts(eurora_all) -> None:
    read = eurora_all
    jobs, prov = read.jobs, read.provenance
    assert read.rejects.height == 0
    assert jobs.height == 5930 and prov.n_jobs == 5930 and prov.n_records == 94_350
    assert prov.header["n_files"] == 206 and prov.header["duplicate_lines"] == 94_350 - 5930
    assert prov.header["conflicting_duplicates"] == 0 and prov.header["heterogeneous_chunks"] == 0
    assert prov.header["predictions_matched"] == 4795 and prov.header["predictions_unmatched"] == 1135
    assert dict(jobs["queue"].value_counts().iter_rows()) == {
        "debug": 2958,
        "parallel": 2412,
        "R": 360,
        "np_longpar": 200,
    }
    assert "R" not in EURORA_QUEUES  # the trace's queue R has no entry in system_queues
    assert prov.header["trace_node_ids"] == [1, 64]  # the node files number the nodes 0–63
    assert prov.header["chunks_not_req_nodes"] == 1 and prov.header["cores_not_req_cores"] == 1
    assert (jobs["runtime"] > 0).all() and (jobs["trace_start_time"] >= jobs["submit_time"]).all()
    assert jobs["chunks"].max() == 32 and jobs["chunk_cores"].max() == 16
    pool = eurora_pool()
    # every chunk fits one node of the preset (memory in the same KiB unit)
    assert (jobs.select(pool.chunk_columns()).to_numpy() <= pool.capacity.max(axis=0)).all()
    first = datetime.fromtimestamp(jobs["submit_time"].min(), UTC)
    last = datetime.fromtimestamp(jobs["submit_time"].max(), UTC)
    assert (first.month, first.day, last.month, last.day) == (3, 31, 4, 4)


@pytest.mark.data
def test_real_instances_match_their_folder(eurora_all) -> None:
    read = eurora_all
    files = read.provenance.header["files"]
    normal = doubled = 0
    for f in files:
        size = int(Path(f["path"]).parent.name)
        assert Path(f["path"]).name.startswith(f"hist_{size}_")
        if f["lines"] == size:
            normal += 1
            assert f["job_ids"] == size
        else:  # two N-job instances of the same second were written into one file; they mostly overlap
            doubled += 1
            assert f["lines"] == 2 * size and size < f["job_ids"] < 2 * size
    assert (normal, doubled) == (198, 8)
    one = read_eurora(Path(files[0]["path"]))
    assert one.jobs.height == int(Path(files[0]["path"]).parent.name) and one.rejects.height == 0


@pytest.mark.data
def test_real_predictions_file() -> None:
    table = read_eurora_power_predictions(require_data("eurora/eurora_power_predictions/power_predictions"))
    assert table.height == 113_998 and table["job_id"].is_unique().all()
    assert table["pred_power_eurora"].max() == pytest.approx(2582, abs=1)


@pytest.mark.data
def test_cli_convert_eurora_directory(tmp_path: Path) -> None:
    traces = require_data("eurora/historical_traces/50")
    out = tmp_path / "eurora.parquet"
    result = CliRunner().invoke(app, ["data", "convert", "--input", str(traces), "--output", str(out)])
    assert result.exit_code == 0, result.output
    back = load_workload(out)
    assert back.jobs.height == read_eurora(traces).jobs.height and "chunk_mem" in back.jobs.columns
