"""PM100 reader on a synthetic ``job_table.parquet`` with the real file's exact 35 columns and Arrow types."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wattsched.core.schema import REJECTS_SCHEMA, WorkloadError
from wattsched.workload.load import load_workload
from wattsched.workload.pm100 import PM100_KEPT_COLUMNS, read_pm100
from wattsched.workload.tableio import write_table

TS = pa.timestamp("us", tz="UTC")
I64, STR, F64 = pa.int64(), pa.string(), pa.float64()
WATTS = pa.list_(pa.int32())

#: The 35 columns of PM100's job_table.parquet, in file order, with their Arrow types (pm100-facts.md).
PM100_SCHEMA = pa.schema(
    [
        ("cores_alloc_layout", STR),
        ("cores_allocated", STR),
        ("cores_per_task", I64),
        ("derived_ec", I64),
        ("eligible_time", TS),
        ("end_time", TS),
        ("group_id", I64),
        ("job_id", I64),
        ("job_state", STR),
        ("nodes", pa.list_(I64)),
        ("num_cores_req", I64),
        ("num_cores_alloc", I64),
        ("num_nodes_req", I64),
        ("num_nodes_alloc", I64),
        ("num_tasks", F64),
        ("partition", STR),
        ("priority", I64),
        ("qos", STR),
        ("req_nodes", STR),
        ("req_switch", I64),
        ("run_time", I64),
        ("shared", STR),
        ("start_time", TS),
        ("state_reason", STR),
        ("submit_time", TS),
        ("threads_per_core", F64),
        ("time_limit", I64),
        ("num_gpus_req", I64),
        ("num_gpus_alloc", I64),
        ("mem_req", I64),
        ("mem_alloc", I64),
        ("user_id", I64),
        ("node_power_consumption", WATTS),
        ("mem_power_consumption", WATTS),
        ("cpu_power_consumption", WATTS),
    ]
)

T0 = datetime(2020, 5, 6, 10, 0, 0, tzinfo=UTC)


def job(
    job_id: int,
    submit: float,
    run_time: int | None,
    time_limit: int | None,
    nodes: int,
    power: list[int],
    **over: Any,
) -> dict[str, Any]:
    """One PM100 row; ``submit`` is seconds after T0, start = submit + 30 s, end = start + run_time."""
    start = T0 + timedelta(seconds=submit + 30)
    end = start + timedelta(seconds=run_time if run_time is not None else 100)
    row: dict[str, Any] = {
        "cores_alloc_layout": "{'r1': [0]}",
        "cores_allocated": "{'r1': 1}",
        "cores_per_task": 1,
        "derived_ec": 0,
        "eligible_time": T0 + timedelta(seconds=submit + 1),
        "end_time": end,
        "group_id": 25200,
        "job_id": job_id,
        "job_state": "COMPLETED",
        "nodes": list(range(nodes)),
        "num_cores_req": 4 * nodes,
        "num_cores_alloc": 128 * nodes,
        "num_nodes_req": nodes,
        "num_nodes_alloc": nodes,
        "num_tasks": 1.0,
        "partition": "1",
        "priority": 1000 + job_id,
        "qos": "normal",
        "req_nodes": None,
        "req_switch": 0,
        "run_time": run_time,
        "shared": "0",
        "start_time": start,
        "state_reason": "None",
        "submit_time": T0 + timedelta(seconds=submit),
        "threads_per_core": None,
        "time_limit": time_limit,
        "num_gpus_req": nodes,
        "num_gpus_alloc": 4 * nodes,
        "mem_req": 10 * nodes,
        "mem_alloc": 240 * nodes,
        "user_id": 300 + job_id,
        "node_power_consumption": power,
        "mem_power_consumption": [p // 10 for p in power],
        "cpu_power_consumption": [p // 5 for p in power],
    }
    row.update(over)
    return row


def fixture_rows() -> list[dict[str, Any]]:
    """Accepted jobs 101–104, then one row per reject reason (rows 5–10)."""
    return [
        job(101, 600.0, 60, 10, 1, [700, 720, 740]),
        job(102, 300.0, 80, 30, 2, [1400, 1500, 1600, 1300], qos="m100_qos_dbg", job_state="FAILED"),
        # run_time null: runtime = end − start = 100 s; earliest submit; boundary: 100 − 20·4 = 20 s is allowed.
        job(103, 0.0, None, 5, 1, [650, 660, 670, 680], partition="2"),
        job(104, 900.5, 80, 60, 4, [2800, 2900, 3000], mem_power_consumption=[], cpu_power_consumption=[]),
        job(105, 1000.0, 60, None, 1, [700, 700, 700]),
        job(106, 1000.0, 60, 0, 1, [700, 700, 700]),
        job(107, 1000.0, 60, 10, 1, []),
        job(108, 1000.0, 200, 10, 1, [700, 700, 700]),
        job(109, 1000.0, 60, 10, 1000, [700, 700, 700]),
        job(101, 1000.0, 60, 10, 1, [700, 700, 700]),
    ]


def write_pm100(path: Path, rows: list[dict[str, Any]]) -> Path:
    table = pa.Table.from_pylist(rows, schema=PM100_SCHEMA)
    pq.write_table(table, path)
    return path


@pytest.fixture
def pm100_file(tmp_path: Path) -> Path:
    return write_pm100(tmp_path / "job_table.parquet", fixture_rows())


def epoch(seconds_after_t0: float) -> float:
    return (T0 + timedelta(seconds=seconds_after_t0)).timestamp()


def test_fixture_has_exact_pm100_schema(pm100_file: Path) -> None:
    schema = pq.read_schema(pm100_file)
    assert len(schema) == 35
    assert schema.field("nodes").type == pa.list_(pa.int64())
    assert schema.field("node_power_consumption").type == pa.list_(pa.int32())
    assert schema.field("submit_time").type == pa.timestamp("us", tz="UTC")


def test_round_trip_exact_values(pm100_file: Path) -> None:
    jobs, _, prov = read_pm100(pm100_file)
    assert jobs["job_id"].to_list() == [103, 102, 101, 104]  # queue order by submit time
    assert jobs["submit_time"].to_list() == [epoch(0), epoch(300), epoch(600), epoch(900.5)]
    assert jobs["trace_start_time"].to_list() == [epoch(30), epoch(330), epoch(630), epoch(930.5)]
    assert jobs["trace_end_time"].to_list() == [epoch(130), epoch(410), epoch(690), epoch(1010.5)]
    assert jobs["walltime"].to_list() == [300.0, 1800.0, 600.0, 3600.0]
    assert jobs["runtime"].to_list() == [100.0, 80.0, 60.0, 80.0]
    assert jobs["size"].to_list() == [1, 2, 1, 4]
    assert jobs["user_id"].to_list() == [403, 402, 401, 404]
    assert jobs["group_id"].to_list() == [25200] * 4
    assert jobs["cores"].to_list() == [128, 256, 128, 512]
    assert jobs["gpus"].to_list() == [4, 8, 4, 16]
    assert jobs["mem"].to_list() == [240.0, 480.0, 240.0, 960.0]
    assert jobs["queue"].to_list() == ["normal", "m100_qos_dbg", "normal", "normal"]
    assert jobs["partition"].to_list() == ["2", "1", "1", "1"]
    assert jobs["state"].to_list() == ["COMPLETED", "FAILED", "COMPLETED", "COMPLETED"]
    assert jobs["power_profile"].to_list() == [
        [650, 660, 670, 680],
        [1400, 1500, 1600, 1300],
        [700, 720, 740],
        [2800, 2900, 3000],
    ]
    assert jobs["cpu_power_profile"].to_list()[3] == []
    assert jobs["mem_power_profile"].to_list()[2] == [70, 72, 74]
    for name in ("power_profile", "cpu_power_profile", "mem_power_profile"):
        assert jobs.schema[name] == pl.List(pl.Float32)
    assert jobs["power_mean"].to_list() == pytest.approx([665.0, 725.0, 720.0, 725.0])
    assert jobs["power_max"].to_list() == pytest.approx([680.0, 800.0, 740.0, 750.0])
    assert jobs["energy"].to_list() == pytest.approx([2660 * 20.0, 5800 * 20.0, 2160 * 20.0, 8700 * 20.0])
    assert jobs["pm100_num_cores_req"].to_list() == [4, 8, 4, 16]
    assert jobs["pm100_num_nodes_req"].to_list() == [1, 2, 1, 4]
    assert jobs["pm100_num_gpus_req"].to_list() == [1, 2, 1, 4]
    assert jobs["pm100_mem_req"].to_list() == [10, 20, 10, 40]
    assert jobs["pm100_priority"].to_list() == [1103, 1102, 1101, 1104]
    assert jobs["pm100_eligible_time"].to_list() == [epoch(1), epoch(301), epoch(601), epoch(901.5)]
    assert jobs["pm100_nodes"].to_list() == [[0], [0, 1], [0], [0, 1, 2, 3]]
    assert {f"pm100_{c}" for c in PM100_KEPT_COLUMNS} <= set(jobs.columns)
    assert "cores_alloc_layout" not in jobs.columns and "time_limit" not in jobs.columns
    assert prov.format == "pm100" and prov.size_unit == "nodes" and prov.machine_size == 980
    assert (prov.n_records, prov.n_jobs, prov.n_rejected) == (10, 4, 6)


def test_two_node_job_per_node_statistics(pm100_file: Path) -> None:
    row = read_pm100(pm100_file).jobs.filter(pl.col("job_id") == 102).row(0, named=True)
    summed = [1400, 1500, 1600, 1300]
    mean = sum(summed) / 4
    assert row["power_mean"] == pytest.approx(mean / 2)  # 725 W per node
    assert row["power_max"] == pytest.approx(1600 / 2)
    assert row["power_std"] == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in summed) / 4) / 2)
    single = read_pm100(pm100_file).jobs.filter(pl.col("job_id") == 101).row(0, named=True)
    assert single["power_std"] == pytest.approx(math.sqrt((20**2 + 0 + 20**2) / 3))  # ddof=0


def test_each_reject_reason(pm100_file: Path) -> None:
    rejects = read_pm100(pm100_file).rejects
    assert rejects.schema == pl.Schema(REJECTS_SCHEMA)
    got = {r["line"]: (r["job_id"], r["field"], r["reason"]) for r in rejects.iter_rows(named=True)}
    assert sorted(got) == [5, 6, 7, 8, 9, 10]
    assert got[5] == (105, "walltime", "time limit unknown")
    assert got[6] == (106, "walltime", "time limit unknown")
    assert got[7] == (107, "power_profile", "no power samples")
    assert got[8][:2] == (108, "power_profile") and "inconsistent with run time" in got[8][2]
    assert got[9][:2] == (109, "size") and "machine size (980)" in got[9][2]
    assert got[10][:2] == (101, "job_id") and "duplicate" in got[10][2]
    raw = rejects.filter(pl.col("line") == 8)["raw"][0]
    assert "job_id=108" in raw and "run_time=200" in raw and "samples=3" in raw
    assert rejects["raw"].null_count() == 0
    assert set(rejects["source"].to_list()) == {str(pm100_file)}


def test_length_tolerance_parameter(pm100_file: Path) -> None:
    off = read_pm100(pm100_file, length_tolerance_samples=None)
    assert 108 in off.jobs["job_id"].to_list()
    assert any("not checked" in c for c in off.provenance.conventions)
    wide = read_pm100(pm100_file, length_tolerance_samples=7)  # |200 − 60| = 140 s = 7 samples
    assert 108 in wide.jobs["job_id"].to_list()
    tight = read_pm100(pm100_file, length_tolerance_samples=0)  # job 103: 100 s vs 4 samples is 20 s off
    assert {103, 108} <= set(tight.rejects["job_id"].to_list())


def test_machine_size_none_keeps_oversized_job(pm100_file: Path) -> None:
    result = read_pm100(pm100_file, machine_size=None)
    assert 109 in result.jobs["job_id"].to_list()
    assert result.provenance.machine_size is None


def test_strict_raises_on_first_reject(pm100_file: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"line 5.*time limit unknown"):
        read_pm100(pm100_file, strict=True)
    clean = write_pm100(tmp_path / "clean.parquet", fixture_rows()[:4])
    assert read_pm100(clean, strict=True).rejects.height == 0


def test_timestamps_utc(pm100_file: Path) -> None:
    jobs, _, prov = read_pm100(pm100_file)
    assert prov.timezone == "UTC"
    first = jobs.row(0, named=True)
    assert first["submit_time"] == datetime(2020, 5, 6, 10, 0, 0, tzinfo=UTC).timestamp() == 1588759200.0
    assert jobs.schema["submit_time"] == pl.Float64


def test_conventions_document_per_node_statistics(pm100_file: Path) -> None:
    conventions = " | ".join(read_pm100(pm100_file).provenance.conventions)
    for needle in ("node-AVERAGE", "lower bound", "time_limit × 60", "GB", "UTC", "num_nodes_alloc"):
        assert needle in conventions


def test_missing_file_not_parquet_missing_columns(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="does not exist"):
        read_pm100(tmp_path / "nope.parquet")
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(WorkloadError, match=r"junk\.parquet.*not a readable Parquet"):
        read_pm100(junk)
    table = pa.Table.from_pylist(fixture_rows()[:2], schema=PM100_SCHEMA).drop_columns(["time_limit", "run_time"])
    partial = tmp_path / "partial.parquet"
    pq.write_table(table, partial)
    with pytest.raises(WorkloadError, match=r"partial.parquet.*\['time_limit', 'run_time'\]"):
        read_pm100(partial)


def test_load_workload_dispatch(pm100_file: Path, tmp_path: Path) -> None:
    via_load = load_workload(pm100_file)
    assert via_load.provenance.format == "pm100" and via_load.provenance.machine_size == 980
    assert via_load.jobs.equals(read_pm100(pm100_file).jobs)
    assert load_workload(pm100_file, machine_size=2000).provenance.machine_size == 2000
    canonical = tmp_path / "canonical.parquet"
    write_table(via_load.jobs.select("job_id", "submit_time", "walltime", "runtime", "size"), canonical)
    assert load_workload(canonical).provenance.format == "parquet"


def test_result_simulates(pm100_file: Path) -> None:
    from wattsched.engine.simulate import simulate

    jobs = read_pm100(pm100_file).jobs
    schedule = simulate(jobs, "easy", 980).schedule
    assert sorted(schedule["job_id"].to_list()) == sorted(jobs["job_id"].to_list())
    by_id = {r["job_id"]: r for r in schedule.iter_rows(named=True)}
    for row in jobs.iter_rows(named=True):
        done = by_id[row["job_id"]]
        assert done["start_time"] >= row["submit_time"]
        assert done["end_time"] - done["start_time"] == pytest.approx(min(row["runtime"], row["walltime"]))
