"""Malformed-input corpus, part 1: SWF and canonical job tables (CSV and Parquet). Each case is a small input
with the class of outcome it must have (tests/malformed_harness.py): an error naming the file, rejects that
account for every record, or accepted values. No case may give a traceback, a hang or a silent loss."""

from __future__ import annotations

import gzip
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from malformed_harness import Accepts, Case, Error, Rejects, Writer, check_case, text_file
from wattsched.core.schema import ReadResult, WorkloadError
from wattsched.workload.swf import read_swf
from wattsched.workload.tableio import read_table, write_table

# ------------------------------------------------------------------------------------------------------------ SWF


def swf(job: str = "2", submit: str = "10", run: str = "100", procs: str = "4", req: str = "200", **kw: str) -> str:
    """One SWF line (18 fields); keyword arguments replace fields by name."""
    fields = {"job": job, "submit": submit, "wait": "-1", "run": run, "alloc": procs, "cpu": "-1", "mem": "-1",
              "req_procs": procs, "req_time": req, "req_mem": "-1", "status": "1", "user": "1", "group": "1",
              "exe": "-1", "queue": "-1", "partition": "-1", "prec": "-1", "think": "-1"}  # fmt: skip
    fields.update(kw)
    return " ".join(fields.values())


GOOD = swf(job="1", submit="0")


def swf_file(*lines: str, header: str = "; MaxProcs: 64\n") -> Writer:
    return text_file("trace.swf", header + "\n".join([GOOD, *lines]) + "\n")


SWF_CASES = [
    Case("text_submit", swf_file(swf(submit="abc")), Rejects(1, 1, "submit", "non-numeric")),
    Case("job_id_20_digits", swf_file(swf(job="12345678901234567890")), Rejects(1, 1, "job")),
    Case("submit_ns_epoch", swf_file(swf(submit="1600000000000000000")), Rejects(1, 1, "submit_time", "2100")),
    Case("submit_1e15", swf_file(swf(submit="1e15")), Rejects(1, 1, "submit_time", "2100")),
    Case("submit_1e300", swf_file(swf(submit="1e300")), Rejects(1, 1, "submit_time")),
    Case("submit_nan", swf_file(swf(submit="nan")), Rejects(1, 1, "submit")),
    Case("submit_inf", swf_file(swf(submit="inf")), Rejects(1, 1, "submit")),
    Case("submit_negative", swf_file(swf(submit="-5")), Rejects(1, 1, "submit_time", "negative")),
    Case("runtime_unknown", swf_file(swf(run="-1")), Rejects(1, 1, "runtime", "unknown")),
    Case("runtime_1e300", swf_file(swf(run="1e300")), Rejects(1, 1, "runtime", "100 years")),
    Case("runtime_negative", swf_file(swf(run="-7")), Rejects(1, 1, "runtime", "negative")),
    Case("walltime_1e12", swf_file(swf(req="1e12")), Rejects(1, 1, "walltime", "100 years")),
    Case("walltime_missing_uses_runtime", swf_file(swf(req="-1")), Accepts(2, lambda j: j["walltime"][1] == 100)),
    Case("fractional_procs", swf_file(swf(procs="2.5")), Rejects(1, 1, "alloc_procs", "not an integer")),
    Case("size_zero", swf_file(swf(procs="0")), Rejects(1, 1, "size", "not positive")),
    Case("size_negative", swf_file(swf(procs="-3", alloc="-3")), Rejects(1, 1, "size")),
    Case("size_above_machine", swf_file(swf(procs="65")), Rejects(1, 1, "size", "machine size")),
    Case("size_1e12", swf_file(swf(procs="1000000000000"), header=""), Rejects(1, 1, "size", "corrupt")),
    Case("duplicate_id", swf_file(swf(job="1")), Rejects(1, 1, "job_id", "duplicate")),
    Case("too_few_fields", swf_file("2 10 -1 100 4"), Rejects(1, 1, "line", "fields")),
    Case("binary_garbage", swf_file("\x00\x01\x02 \xff garbage"), Rejects(1, 1)),
    Case("unicode_field", swf_file(swf(user="Ünïcode")), Rejects(1, 1, "user", "non-numeric")),
    Case("user_20_digits", swf_file(swf(user="99999999999999999999")), Rejects(1, 1, "user")),
    Case("status_text", swf_file(swf(status="OK")), Rejects(1, 1, "status")),
    Case("extra_fields_ignored", swf_file(swf() + " 7 8 9"), Accepts(2)),
    Case("tabs_and_crlf", text_file("t.swf", GOOD + "\r\n" + swf().replace(" ", "\t") + "\r\n"), Accepts(2)),
    Case("blank_lines", swf_file("", "   ", swf()), Accepts(2)),
    Case("header_maxprocs_text", swf_file(swf(), header="; MaxProcs: lots\n"), Accepts(2)),
    Case("long_line", swf_file(swf(submit="x" * 200_000)), Rejects(1, 1, "submit")),
    Case("empty_file", text_file("e.swf", ""), Error("empty")),
    Case("only_comments", text_file("c.swf", "; Version: 2.2\n; MaxProcs: 8\n"), Error("no data lines")),
    Case("corrupt_gzip", text_file("z.swf.gz", b"\x1f\x8bnot really gzip"), Error("gunzip")),
    Case("missing_file", lambda d: d / "absent.swf", Error("does not exist")),
    Case("directory", lambda d: (d / "dir.swf").mkdir() or d / "dir.swf", Error("not a regular file")),
]


@pytest.mark.parametrize("case", SWF_CASES, ids=lambda c: c.name)
def test_swf_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, read_swf, (WorkloadError,))


def test_corpus_sizes() -> None:
    """The issue asks for at least 30 cases per reader."""
    assert len(SWF_CASES) >= 30 and len(TABLE_CASES) >= 30


def test_strict_error_is_one_short_line(tmp_path: Path) -> None:
    """Under strict, the first reject becomes the error: file, line, field, why, and a truncated echo."""
    path = swf_file(swf(submit="y" * 5000))(tmp_path)
    with pytest.raises(WorkloadError) as info:
        read_swf(path, strict=True)
    message = str(info.value)
    assert str(path) in message and "line 3" in message and "'submit'" in message
    assert "\n" not in message and len(message) < 400


# ------------------------------------------------------------------------------------------------------ tables

HEAD = "job_id,submit_time,walltime,runtime,size"


def csv(*rows: str, head: str = HEAD, name: str = "jobs.csv") -> Writer:
    return text_file(name, "\n".join([head, "1,0,100,50,2", *rows]) + "\n")


def parquet(frame: pl.DataFrame, name: str = "jobs.parquet") -> Writer:
    def write(folder: Path) -> Path:
        path = folder / name
        frame.write_parquet(path)
        return path

    return write


def m100_like_with_profiles(folder: Path) -> Path:
    """A canonical table with a list column (what `generate m100` and `predict power` write), one job too big."""
    frame = pl.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 5.0], "walltime": [100.0, 100.0], "runtime": [50.0, 50.0],
         "size": [2, 64], "power_mean": [300.0, 310.0], "power_profile": [[290.0, 310.0], [300.0, 320.0]]}
    )  # fmt: skip
    path = folder / "m100.parquet"
    write_table(frame, path)
    return path


BIG = 2**53 + 1
T2020 = datetime(2020, 1, 1, 6, 30)
BASE = {"job_id": [1], "submit_time": [0.0], "walltime": [100.0], "runtime": [50.0], "size": [2]}


def with_row(**row: object) -> pl.DataFrame:
    """The base table plus a second job; ``row`` replaces or adds its values (a column absent from the first row
    is null there)."""
    second = {k: [v[0] + 1 if k == "job_id" else v[0]] for k, v in BASE.items()} | {k: [v] for k, v in row.items()}
    return pl.concat([pl.DataFrame(BASE), pl.DataFrame(second)], how="diagonal_relaxed")


def base_with(**columns: list[object]) -> Writer:
    """A Parquet table of the base job with ``columns`` replaced (their dtype is what the values make)."""
    return parquet(pl.DataFrame(BASE | columns))


def huge_uint64_ids(folder: Path) -> Path:
    frame = pl.DataFrame(BASE | {"job_id": [1, 2**64 - 1]} | {k: v * 2 for k, v in BASE.items() if k != "job_id"},
                         schema_overrides={"job_id": pl.UInt64})  # fmt: skip
    path = folder / "uint.parquet"
    frame.write_parquet(path)
    return path


TABLE_CASES = [
    Case("csv_text_in_submit", csv("2,abc,100,50,2"), Rejects(1, 1, "submit_time", "not a number")),
    Case("csv_text_in_size", csv("2,0,100,50,four"), Rejects(1, 1, "size", "not an integer")),
    Case("csv_fractional_size", csv("2,0,100,50,2.5"), Rejects(1, 1, "size", "not an integer")),
    Case("csv_id_20_digits", csv("12345678901234567890,0,100,50,2"), Rejects(1, 1, "job_id", "Int64")),
    Case(
        "csv_ids_above_2_53_distinct",
        csv(f"{BIG},0,100,50,2", f"{BIG + 1},0,100,50,2"),
        Accepts(3, lambda j: sorted(j["job_id"].to_list())[1:] == [BIG, BIG + 1]),
    ),
    Case("csv_id_float_text", csv("2.0,0,100,50,2"), Accepts(2, lambda j: j["job_id"].to_list() == [1, 2])),
    Case("csv_submit_ns_epoch", csv("2,1700000000000000000,100,50,2"), Rejects(1, 1, "submit_time", "2100")),
    Case("csv_submit_ms_epoch", csv("2,1700000000000,100,50,2"), Rejects(1, 1, "submit_time", "2100")),
    Case("csv_submit_1e300", csv("2,1e300,100,50,2"), Rejects(1, 1, "submit_time")),
    Case("csv_submit_nan", csv("2,NaN,100,50,2"), Rejects(1, 1, "submit_time", "not finite")),
    Case("csv_runtime_inf", csv("2,0,100,inf,2"), Rejects(1, 1, "runtime", "unknown")),
    Case("csv_runtime_1e30", csv("2,0,100,1e30,2"), Rejects(1, 1, "runtime", "100 years")),
    Case("csv_walltime_negative", csv("2,0,-1,50,2"), Rejects(1, 1, "walltime", "negative")),
    Case("csv_size_zero", csv("2,0,100,50,0"), Rejects(1, 1, "size", "not positive")),
    Case("csv_size_huge", csv("2,0,100,50,99999999999"), Rejects(1, 1, "size", "corrupt")),
    Case("csv_missing_size", csv("2,0,100,50,"), Rejects(1, 1, "size", "unknown")),
    Case("csv_duplicate_id", csv("1,5,100,50,2"), Rejects(1, 1, "job_id", "duplicate")),
    Case("csv_power_negative", csv("2,0,100,50,2,-5", head=HEAD + ",power_mean"), Rejects(1, 1, "power_mean")),
    Case("csv_power_1e30", csv("2,0,100,50,2,1e30", head=HEAD + ",power_mean"), Rejects(1, 1, "power_mean")),
    Case("csv_power_nan", csv("2,0,100,50,2,nan", head=HEAD + ",power_mean"), Rejects(1, 1, "power_mean")),
    Case("csv_power_text", csv("2,0,100,50,2,hot", head=HEAD + ",power_mean"), Rejects(1, 1, "power_mean")),
    Case("csv_energy_negative", csv("2,0,100,50,2,-1", head=HEAD + ",energy"), Rejects(1, 1, "energy")),
    Case("csv_duplicated_column", csv("2,0,100,50,2,3", head=HEAD + ",size"), Error("appears twice")),
    Case("csv_missing_column", text_file("m.csv", "job_id,submit_time\n1,0\n"), Error("required column")),
    Case("csv_header_only", text_file("h.csv", HEAD + "\n"), Error("no data rows")),
    Case("csv_empty", text_file("z.csv", ""), Error("empty")),
    Case("csv_ragged_row", csv("2,0,100"), Rejects(1, 1, "runtime", "unknown")),
    Case("csv_nodes_alias", csv(head="job_id,submit_time,walltime,runtime,nodes"), Accepts(1)),
    Case("csv_unicode_extra", csv("2,0,100,50,2,Ünï", head=HEAD + ",name"), Accepts(2)),
    Case("csv_unclosed_quote", csv('2,0,100,50,"2'), Error("column 'size'")),
    Case(
        "csv_many_columns",
        text_file("w.csv", ",".join(f"c{i}" for i in range(5000)) + "\n" + "1," * 4999 + "1\n"),
        Error("required column"),
    ),
    Case("csvgz_corrupt", text_file("j.csv.gz", b"\x1f\x8bnot gzip"), Error("j.csv.gz")),
    Case("parquet_list_column_reject", m100_like_with_profiles, Rejects(1, 1, "size")),
    Case("parquet_uint64_id_huge", huge_uint64_ids, Rejects(1, 1, "job_id", "Int64")),
    Case("parquet_text_runtime", parquet(pl.DataFrame(BASE | {"runtime": ["fast"]})), Rejects(0, 1, "runtime")),
    Case("parquet_power_1e30", parquet(with_row(power_mean=1e30)), Rejects(1, 1, "power_mean", "corrupt")),
    Case("parquet_not_parquet", text_file("x.parquet", "not a parquet file"), Error("cannot read Parquet")),
    Case("parquet_list_in_size", parquet(pl.DataFrame(BASE | {"size": [[1, 2]]})), Error("size")),
    # issue 31 item 9: a column's dtype is judged before its values are cast (true would be 1, 2020 1.6e9 s)
    Case("parquet_bool_submit", base_with(submit_time=[False]), Error("'submit_time' is Boolean")),
    Case("parquet_bool_size", base_with(size=[True]), Error("'size' is Boolean")),
    Case("parquet_bool_user", parquet(with_row(user_id=True)), Error("'user_id' is Boolean")),
    Case("parquet_datetime_runtime", base_with(runtime=[T2020]), Error("'runtime' is a date-time")),
    Case("parquet_struct_in_size", base_with(size=[{"n": 2}]), Error("'size' holds Struct")),
    Case("parquet_struct_in_name", parquet(with_row(name={"first": "a"})), Error("'name' holds Struct")),
    Case("parquet_date_submit", base_with(submit_time=[T2020.date()]), Error("'submit_time' is a Date")),
    Case("parquet_time_runtime", base_with(runtime=[T2020.time()]), Error("'runtime' is a time of day")),
    Case("parquet_duration_size", base_with(size=[timedelta(2)]), Error("'size' is a Duration")),
]


def _read_table_machine_8(path: Path) -> ReadResult:
    return read_table(path, machine_size=8) if path.name == "m100.parquet" else read_table(path)


@pytest.mark.parametrize("case", TABLE_CASES, ids=lambda c: c.name)
def test_table_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, _read_table_machine_8, (WorkloadError,))


def test_list_column_reject_shows_the_row(tmp_path: Path) -> None:
    """The reject of a table with list columns carries the row's text, profile included (it used to crash)."""
    _, rejects, _ = read_table(m100_like_with_profiles(tmp_path), machine_size=8)
    assert rejects["line"].to_list() == [2] and "[300.0, 320.0]" in rejects["raw"][0]


def test_csv_gz_round_trip_keeps_big_ids(tmp_path: Path) -> None:
    path = tmp_path / "big.csv.gz"
    path.write_bytes(gzip.compress(f"{HEAD}\n{BIG},0,100,50,2\n{BIG + 1},1,100,50,2\n".encode()))
    jobs, rejects, _ = read_table(path)
    assert rejects.height == 0 and jobs["job_id"].to_list() == [BIG, BIG + 1]


def test_long_profile_in_reject_is_shortened(tmp_path: Path) -> None:
    """A 3,000-sample profile of a rejected job shows 8 samples and its length, not 3,000 numbers."""
    frame = pl.DataFrame(BASE | {"size": [64], "power_profile": [[float(i) for i in range(3000)]]})
    path = tmp_path / "long.parquet"
    write_table(frame, path)
    _, rejects, _ = read_table(path, machine_size=8)
    assert rejects["field"].to_list() == ["size"]
    assert "(3000 values)" in rejects["raw"][0] and len(rejects["raw"][0]) < 200
