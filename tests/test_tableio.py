"""Canonical table IO (Parquet/CSV) and the load_workload dispatcher."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from wattsched.core.schema import (
    OPTIONAL_COLUMNS,
    REJECTS_SCHEMA,
    REQUIRED_COLUMNS,
    Provenance,
    WorkloadError,
)
from wattsched.workload.load import SUPPORTED_SUFFIXES, load_workload
from wattsched.workload.swf import write_swf
from wattsched.workload.tableio import METADATA_MACHINE_SIZE, METADATA_PROVENANCE, read_table, write_table


def canonical_jobs() -> pl.DataFrame:
    """Every canonical column, with nulls, in canonical order and dtypes."""
    data = {
        "job_id": [1, 2, 3],
        "submit_time": [0.0, 1.5, 1.5],
        "walltime": [100.0, 200.0, 50.0],
        "runtime": [90.0, 10.25, 50.0],
        "size": [4, 1, 16],
        "user_id": [7, None, 9],
        "group_id": [1, 1, None],
        "name": ["a,b", None, "c"],
        "queue": ["001", "batch", None],
        "partition": ["p1", None, "p2"],
        "app_id": ["12", None, "x"],
        "state": ["COMPLETED", "FAILED", None],
        "cores": [4, None, 16],
        "gpus": [0, 1, None],
        "mem": [1.5, None, 3.0],
        "power_mean": [100.0, None, 250.5],
        "power_max": [120.0, None, 300.0],
        "power_std": [1.0, None, 2.0],
        "energy": [9000.0, None, 12525.0],
        "extra_note": ["x", "y", "z"],
    }
    return pl.DataFrame(data, schema={**REQUIRED_COLUMNS, **OPTIONAL_COLUMNS, "extra_note": pl.Utf8})


@pytest.mark.parametrize("name", ["t.parquet", "t.csv", "t.csv.gz"])
def test_round_trip_preserves_values_and_dtypes(tmp_path: Path, name: str) -> None:
    jobs = canonical_jobs()
    path = tmp_path / name
    write_table(jobs, path)
    back, rejects, prov = read_table(path)
    assert rejects.height == 0 and rejects.schema == pl.Schema(REJECTS_SCHEMA)
    assert back.schema == jobs.schema
    assert back.equals(jobs)
    assert (prov.n_records, prov.n_jobs, prov.n_rejected) == (3, 3, 0)
    assert prov.format == ("parquet" if name.endswith("parquet") else "csv")


def test_parquet_keeps_provenance_and_machine_size(tmp_path: Path) -> None:
    prov = Provenance(
        source="orig.swf",
        format="swf",
        machine_size=64,
        size_unit="nodes",
        unix_start_time=100.0,
        timezone="UTC",
        header={"Note": ["n"]},
        conventions=["c1"],
    )
    path = tmp_path / "p.parquet"
    write_table(canonical_jobs(), path, provenance=prov)
    meta = pq.read_schema(path).metadata
    assert meta[METADATA_MACHINE_SIZE.encode()] == b"64" and METADATA_PROVENANCE.encode() in meta
    _, _, back = read_table(path)
    assert back.machine_size == 64 and back.size_unit == "nodes" and back.unix_start_time == 100.0
    assert back.timezone == "UTC" and back.header == {"Note": ["n"]}
    assert "[original] c1" in back.conventions
    assert "machine size 64 from Parquet metadata wattsched.machine_size" in back.conventions
    # the argument overrides the stored size and is enforced
    jobs, rejects, back = read_table(path, machine_size=8)
    assert back.machine_size == 8 and jobs["job_id"].to_list() == [1, 2]
    assert rejects["line"].to_list() == [3] and rejects["field"].to_list() == ["size"]


def test_swf_columns_survive_csv(tmp_path: Path) -> None:
    src = tmp_path / "a.swf"
    src.write_text("1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    jobs = load_workload(src).jobs
    for name in ("b.csv", "b.parquet"):
        write_table(jobs, tmp_path / name)
        back = load_workload(tmp_path / name).jobs
        assert back.schema == jobs.schema and back.equals(jobs)


def test_alias_nodes_becomes_size(tmp_path: Path) -> None:
    path = tmp_path / "n.csv"
    path.write_text("job_id,submit_time,walltime,runtime,nodes\n1,0,10,5,2\n")
    jobs, _, prov = read_table(path)
    assert jobs["size"].to_list() == [2] and jobs.schema["size"] == pl.Int64
    assert any("aliases" in c for c in prov.conventions)


def test_missing_required_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("job_id,submit_time,runtime\n1,0,5\n")
    with pytest.raises(WorkloadError, match=r"\['walltime', 'size'\]") as err:
        read_table(path)
    assert str(path) in str(err.value)


def test_csv_rejects_with_file_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text(
        "job_id,submit_time,walltime,runtime,size\n"  # line 1
        "1,0,10,5,2\n"  # 2 ok
        "2,0,10,-1,2\n"  # 3 negative run time
        "3,zero,10,5,2\n"  # 4 not a number
        "4,0,10,5,2.5\n"  # 5 not an integer
        "5,0,10,5,0\n"  # 6 size not positive
        "1,3,10,5,2\n"  # 7 duplicate job id
        "6,0,10,,2\n"  # 8 run time unknown
        "7,1,10,5,9\n"  # 9 larger than the machine
    )
    jobs, rejects, prov = read_table(path, machine_size=8)
    assert jobs["job_id"].to_list() == [1]
    assert [(r["line"], r["job_id"], r["field"]) for r in rejects.iter_rows(named=True)] == [
        (3, 2, "runtime"), (4, 3, "submit_time"), (5, 4, "size"), (6, 5, "size"), (7, 1, "job_id"),
        (8, 6, "runtime"), (9, 7, "size"),
    ]  # fmt: skip
    reasons = rejects["reason"].to_list()
    assert reasons[0] == "run time is negative"
    assert "'zero'" in reasons[1] and "not a number" in reasons[1]
    assert "'2.5'" in reasons[2] and "not an integer" in reasons[2]
    assert reasons[5] == "run time is unknown" and "machine size (8)" in reasons[6]
    lines = path.read_text().splitlines()
    assert rejects["raw"].to_list() == [lines[i - 1] for i in rejects["line"].to_list()]
    assert prov.n_records == 8 and prov.n_jobs + prov.n_rejected == prov.n_records


def test_parquet_rejects_use_row_numbers(tmp_path: Path) -> None:
    jobs = canonical_jobs().with_columns(pl.Series("runtime", [1.0, -2.0, 3.0]))
    path = tmp_path / "r.parquet"
    write_table(jobs, path)
    _, rejects, prov = read_table(path)
    assert rejects["line"].to_list() == [2] and rejects["job_id"].to_list() == [2]
    assert any("row number" in c for c in prov.conventions)


def test_parquet_datetime_submit_becomes_epoch_seconds(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {"job_id": [1], "submit_time": [datetime(2022, 1, 31, tzinfo=UTC)], "walltime": [60.0],
         "runtime": [30], "size": [1]}
    )  # fmt: skip
    path = tmp_path / "d.parquet"
    frame.write_parquet(path)
    jobs = read_table(path).jobs
    assert jobs["submit_time"].to_list() == [datetime(2022, 1, 31, tzinfo=UTC).timestamp()]
    assert jobs.schema["runtime"] == pl.Float64


def test_temporal_columns_are_converted_explicitly(tmp_path: Path) -> None:
    """A naive Datetime submit time is read as UTC and a Duration run time as seconds, and the provenance says
    both (issue 31 item 9: no conversion the user cannot see)."""
    frame = pl.DataFrame(
        {"job_id": [1], "submit_time": [datetime(2022, 1, 31, 12)], "walltime": [60.0],
         "runtime": [timedelta(seconds=90)], "size": [1]}
    )  # fmt: skip
    path = tmp_path / "t.parquet"
    frame.write_parquet(path)
    jobs, rejects, prov = read_table(path)
    assert rejects.is_empty() and jobs["runtime"].to_list() == [90.0]
    assert jobs["submit_time"].to_list() == [datetime(2022, 1, 31, 12, tzinfo=UTC).timestamp()]
    assert "submit_time: date-times (no time zone: read as UTC) converted to epoch seconds" in prov.conventions
    assert "runtime: durations converted to seconds" in prov.conventions


def test_strict_raises(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("job_id,submit_time,walltime,runtime,size\n1,0,10,5,2\n2,0,10,5,-3\n")
    with pytest.raises(WorkloadError) as err:
        read_table(path, strict=True)
    message = str(err.value)
    assert str(path) in message and "line 3" in message and "'size'" in message and "not positive" in message


@pytest.mark.parametrize(("name", "content", "why"), [
    ("e.csv", b"", "empty"),
    ("h.csv", b"job_id,submit_time,walltime,runtime,size\n", "no data rows"),
    ("e.parquet", b"", "empty"),
    ("g.parquet", b"garbage", "cannot read Parquet"),
])  # fmt: skip
def test_unreadable_tables(tmp_path: Path, name: str, content: bytes, why: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(WorkloadError, match=why):
        read_table(path)


def test_missing_table(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="does not exist"):
        read_table(tmp_path / "none.parquet")


def test_load_workload_dispatch(tmp_path: Path) -> None:
    swf = tmp_path / "a.swf"
    swf.write_text("; MaxProcs: 4\n1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    result = load_workload(swf)
    assert result.provenance.format == "swf" and result.provenance.machine_size == 4
    gz = tmp_path / "A.SWF.GZ"
    gz.write_bytes(gzip.compress(swf.read_bytes()))
    assert load_workload(gz).jobs.equals(result.jobs)
    write_swf(result.jobs, tmp_path / "b.swf", provenance=result.provenance)
    assert load_workload(tmp_path / "b.swf", strict=True).jobs.equals(result.jobs)
    for name in ("c.parquet", "c.csv", "c.csv.gz"):
        write_table(result.jobs, tmp_path / name)
        back = load_workload(tmp_path / name, machine_size=4)
        assert back.jobs.equals(result.jobs) and back.provenance.machine_size == 4
    (tmp_path / "jobs.xyz").write_text("neither SWF, sacct nor JSON\n")
    with pytest.raises(WorkloadError) as err:
        load_workload(tmp_path / "jobs.xyz")
    assert all(s in str(err.value) for s in SUPPORTED_SUFFIXES)
    with pytest.raises(WorkloadError, match="does not exist"):
        load_workload(tmp_path / "missing.swf")


def test_unreadable_column_type_is_named(tmp_path: Path) -> None:
    data = {"job_id": [1], "submit_time": [0.0], "walltime": [1.0], "runtime": [1.0], "size": [[1, 2]]}
    frame = pl.DataFrame(data)
    path = tmp_path / "l.parquet"
    frame.write_parquet(path)
    with pytest.raises(WorkloadError, match="'size'"):
        read_table(path)
    with pytest.raises(WorkloadError, match="positive"):
        read_table(path, machine_size=-4)
