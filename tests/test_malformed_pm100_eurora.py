"""Malformed-input corpus, part 3: PM100 job tables (Parquet with power lists) and Eurora instances. The outcome
classes are those of tests/malformed_harness.py."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from malformed_harness import Accepts, Case, Error, Rejects, Writer, check_case, text_file
from wattsched.core.schema import WorkloadError
from wattsched.workload.eurora import read_eurora
from wattsched.workload.pm100 import read_pm100

# ---------------------------------------------------------------------------------------------------------- PM100

T0 = datetime(2020, 5, 1)


def pm100_rows(**second: Any) -> dict[str, list[Any]]:
    """Two PM100 jobs (3 samples of 20 s each, 60 s run); ``second`` replaces values of the second job."""
    first = {"job_id": 1, "submit_time": T0, "start_time": T0, "end_time": T0, "time_limit": 10.0, "run_time": 60.0,
             "num_nodes_alloc": 2, "num_cores_alloc": 8, "num_gpus_alloc": 1, "mem_alloc": 16.0, "user_id": 7,
             "node_power_consumption": [600.0, 620.0, 640.0]}  # fmt: skip
    row2 = first | {"job_id": 2} | second
    return {k: [first[k], row2[k]] for k in first}


def pm100(dtypes: dict[str, pl.DataType] | None = None, name: str = "job_table.parquet", **second: Any) -> Writer:
    def write(folder: Path) -> Path:
        path = folder / name
        pl.DataFrame(pm100_rows(**second), schema_overrides=dtypes or {}, strict=False).write_parquet(path)
        return path

    return write


def pm100_frame(frame: pl.DataFrame, name: str = "job_table.parquet") -> Writer:
    def write(folder: Path) -> Path:
        path = folder / name
        frame.write_parquet(path)
        return path

    return write


def pm100_column(column: str, value: Any) -> Writer:
    """The table with every value of ``column`` replaced by ``value`` (its dtype is the value's)."""
    return pm100_frame(pl.DataFrame(pm100_rows()).with_columns(pl.lit(value).alias(column)))


def text_column(column: str, second: str) -> Writer:
    """The table with ``column`` stored as text, the second job's value ``second``."""

    def write(folder: Path) -> Path:
        rows = pm100_rows()
        rows[column] = [str(rows[column][0]), second]
        path = folder / "text.parquet"
        pl.DataFrame(rows).write_parquet(path)
        return path

    return write


U64 = {"job_id": pl.UInt64}
PM100_CASES = [
    Case("good", pm100(), Accepts(2, lambda j: j["power_mean"].to_list() == [310.0, 310.0])),
    Case("time_limit_text", text_column("time_limit", "ten"), Rejects(1, 1, "time_limit", "not a number")),
    Case("run_time_text", text_column("run_time", "1 min"), Rejects(1, 1, "run_time", "not a number")),
    Case("nodes_text", text_column("num_nodes_alloc", "two"), Rejects(1, 1, "num_nodes_alloc", "integer")),
    Case("job_id_text", text_column("job_id", "j-2"), Rejects(1, 1, "job_id", "integer")),
    Case("user_text", text_column("user_id", "alice"), Rejects(1, 1, "user_id")),
    Case("nodes_fractional", pm100(num_nodes_alloc=2.5), Rejects(1, 1, "num_nodes_alloc", "integer")),
    Case("nodes_zero", pm100(num_nodes_alloc=0), Rejects(1, 1, "size", "not positive")),
    Case("nodes_above_machine", pm100(num_nodes_alloc=981), Rejects(1, 1, "size", "machine size")),
    Case("job_id_20_digits", pm100(U64, job_id=2**64 - 1), Rejects(1, 1, "job_id", "Int64")),
    Case("power_negative", pm100(node_power_consumption=[-600.0, 620.0, 640.0]), Rejects(1, 1, "power_profile")),
    Case("power_1e30", pm100(node_power_consumption=[1e30, 1e30, 1e30]), Rejects(1, 1, "power_mean", "corrupt")),
    Case("power_nan", pm100(node_power_consumption=[float("nan"), 1.0, 2.0]), Rejects(1, 1, "power_profile", "NaN")),
    Case("power_inf", pm100(node_power_consumption=[float("inf"), 1.0, 2.0]), Rejects(1, 1, "power_profile")),
    Case("power_null_only", pm100(node_power_consumption=[None, None, None]), Rejects(1, 1, "power_profile", "null")),
    Case("power_empty", pm100(node_power_consumption=[]), Rejects(1, 1, "power_profile", "no power samples")),
    Case("power_null", pm100(node_power_consumption=None), Rejects(1, 1, "power_profile", "no power samples")),
    Case("power_short", pm100(node_power_consumption=[600.0]), Rejects(1, 1, "power_profile", "inconsistent")),
    Case("time_limit_null", pm100(time_limit=None), Rejects(1, 1, "walltime", "time limit unknown")),
    Case("time_limit_negative", pm100(time_limit=-5.0), Rejects(1, 1, "walltime")),
    Case("time_limit_1e30", pm100(time_limit=1e30), Rejects(1, 1, "walltime", "100 years")),
    Case("run_time_negative", pm100(run_time=-60.0), Rejects(1, 1)),
    Case("run_time_nan", pm100(run_time=float("nan")), Rejects(1, 1)),
    Case("submit_null", pm100(submit_time=None), Rejects(1, 1, "submit_time", "missing")),
    Case(
        "submit_ns_number",
        pm100_frame(pl.DataFrame(pm100_rows()).with_columns(pl.Series("submit_time", [1588291200.0, 1.6e18]))),
        Rejects(1, 1, "submit_time", "2100"),
    ),
    Case("duplicate_id", pm100(job_id=1), Rejects(1, 1, "job_id", "duplicate")),
    Case("mem_text", text_column("mem_alloc", "16GB"), Rejects(1, 1, "mem_alloc")),
    Case("missing_column", pm100_frame(pl.DataFrame(pm100_rows()).drop("time_limit")), Error("time_limit")),
    Case(
        "profile_not_list",
        pm100_frame(pl.DataFrame(pm100_rows()).with_columns(pl.lit("1,2").alias("node_power_consumption"))),
        Error("list of power samples"),
    ),
    Case(
        "nodes_as_list",
        pm100_frame(pl.DataFrame(pm100_rows()).with_columns(pl.lit([1, 2]).alias("num_nodes_alloc"))),
        Error("num_nodes_alloc"),
    ),
    Case("not_parquet", text_file("t.parquet", "job_id,submit_time\n"), Error("not a readable Parquet")),
    Case("no_rows", pm100_frame(pl.DataFrame(pm100_rows()).head(0)), Error("no rows")),
    Case("missing_file", lambda d: d / "absent.parquet", Error("does not exist")),
    # issue 31 item 9: a record that contradicts itself is a reject; a column cast by accident an error
    Case(
        "submitted_after_end",
        pm100(submit_time=T0 + timedelta(seconds=600)),
        Rejects(1, 1, "submit_time", "submitted after it ended"),
    ),
    Case(
        "nodes_bool", pm100({"num_nodes_alloc": pl.Boolean}, num_nodes_alloc=True), Error("'num_nodes_alloc' is Bool")
    ),
    Case("run_time_datetime", pm100_column("run_time", T0), Error("'run_time' is a date-time")),
    Case("time_limit_duration", pm100_column("time_limit", timedelta(minutes=10)), Error("'time_limit' is a Duration")),
]


@pytest.mark.parametrize("case", PM100_CASES, ids=lambda c: c.name)
def test_pm100_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, read_pm100, (WorkloadError,))


# --------------------------------------------------------------------------------------------------------- Eurora


def eurora_line(
    job: str = "2",
    arrival: str = "2014-03-31 11:24:53",
    nodes: str = "34;1;0;0;4194304#",
    start: str = "2014-03-31 11:25:16",
    end: str = "2014-03-31 11:26:36",
    req: str = "1;1;4",
    walltime: str = "00:30",
    queue: str = "debug",
) -> str:
    return f"{job};xxx;yyy;{queue};{arrival}__{nodes}__{start};{end};{req};{walltime};NA;NA;COMPLETED;0"


EGOOD = eurora_line(job="1")


def eurora(*lines: str, name: str = "hist_1.log_crypt") -> Writer:
    return text_file(name, "\n".join([EGOOD, *lines]) + "\n")


EURORA_CASES = [
    Case("good", eurora(eurora_line()), Accepts(2, lambda j: j["walltime"].to_list() == [1800.0, 1800.0])),
    Case("job_id_text", eurora(eurora_line(job="abc")), Rejects(1, 1, "job_id", "not a non-negative integer")),
    Case("job_id_20_digits", eurora(eurora_line(job="12345678901234567890")), Rejects(1, 1, "job_id")),
    Case("job_id_negative", eurora(eurora_line(job="-2")), Rejects(1, 1, "job_id")),
    Case("arrival_garbage", eurora(eurora_line(arrival="yesterday")), Rejects(1, 1)),
    Case("start_garbage", eurora(eurora_line(start="2014-13-45 99:99:99")), Rejects(1, 1)),
    Case("end_before_start", eurora(eurora_line(end="2014-03-31 11:20:00")), Rejects(1, 1, "runtime", "negative")),
    Case("start_before_arrival", eurora(eurora_line(start="2014-03-31 11:00:00")), Rejects(1, 1)),
    Case(
        "arrival_year_9999",
        eurora(eurora_line(arrival="9999-01-01 00:00:00", start="9999-01-01 00:01:00", end="9999-01-01 00:02:00")),
        Rejects(1, 1, "submit_time", "2100"),
    ),
    Case("walltime_text", eurora(eurora_line(walltime="soon")), Rejects(1, 1, "walltime")),
    Case("walltime_missing", eurora(eurora_line(walltime="NA")), Rejects(1, 1, "walltime")),
    Case("walltime_huge", eurora(eurora_line(walltime="99999999:00")), Rejects(1, 1, "walltime", "hh:mm")),
    Case("cores_text", eurora(eurora_line(nodes="34;one;0;0;4194304#")), Rejects(1, 1, "nodes", "integer")),
    Case("cores_fraction", eurora(eurora_line(nodes="34;1.5;0;0;4194304#")), Rejects(1, 1, "nodes")),
    Case("cores_20_digits", eurora(eurora_line(nodes="34;99999999999999999999;0;0;1#")), Rejects(1, 1, "nodes")),
    Case("entry_short", eurora(eurora_line(nodes="34;1;0#")), Rejects(1, 1, "nodes", "fields")),
    Case("no_entries", eurora(eurora_line(nodes="")), Rejects(1, 1, "nodes")),
    Case("zero_cores", eurora(eurora_line(nodes="34;0;0;0;1#")), Rejects(1, 1, "nodes", "no cores")),
    Case("two_entries", eurora(eurora_line(nodes="34;1;0;0;1#35;1;0;0;1#")), Accepts(2)),
    Case("missing_sections", eurora("2;xxx;yyy;debug;2014-03-31 11:24:53"), Rejects(1, 1)),
    Case("too_few_head_fields", eurora(eurora_line().replace("xxx;yyy;", "")), Rejects(1, 1)),
    Case("too_few_tail_fields", eurora(eurora_line().rsplit(";", 4)[0]), Rejects(1, 1)),
    Case("binary_garbage", eurora("\x00\x01\x02\xff"), Rejects(1, 1)),
    Case("unicode_queue", eurora(eurora_line(queue="dëbug")), Accepts(2)),
    Case("duplicate_identical", eurora(EGOOD), Accepts(1)),
    Case("duplicate_conflicting", eurora(eurora_line(job="1", walltime="01:00")), Rejects(1, 1)),
    Case("blank_lines", eurora("", "  ", eurora_line()), Accepts(2)),
    Case("crlf", text_file("c.log_crypt", EGOOD + "\r\n" + eurora_line() + "\r\n"), Accepts(2)),
    Case("long_line", eurora(eurora_line(queue="q" * 100_000)), Accepts(2)),
    Case("empty_file", text_file("e.log_crypt", ""), Error("no job lines")),
    Case("only_blank", text_file("b.log_crypt", "\n\n  \n"), Error("no job lines")),
    Case("missing_file", lambda d: d / "absent.log_crypt", Error("absent.log_crypt")),
    # issue 31 item 9: used-node entries bounded by the machine (the eurora preset: 64 nodes of 16 cores, 2 GPUs)
    Case(
        "cores_1e12",
        eurora(eurora_line(nodes="34;1000000000000;0;0;4194304#")),
        Rejects(1, 1, "nodes", "1000000000000 cores on one node, more than a Eurora node has (16)"),
    ),
    Case("node_id_beyond_machine", eurora(eurora_line(nodes="65;1;0;0;1#")), Rejects(1, 1, "nodes", "64 nodes")),
    Case("gpus_beyond_node", eurora(eurora_line(nodes="40;1;3;0;1#")), Rejects(1, 1, "nodes", "3 gpus")),
    Case("mem_beyond_node", eurora(eurora_line(nodes="40;1;0;0;99999999999#")), Rejects(1, 1, "nodes", "memory")),
    Case(
        "chunks_beyond_machine",
        eurora(eurora_line(nodes="".join(f"{i % 64 + 1};16;0;0;1#" for i in range(65)))),
        Rejects(1, 1, "nodes", "1040 cores in all, more than Eurora has (1024)"),
    ),
]


@pytest.mark.parametrize("case", EURORA_CASES, ids=lambda c: c.name)
def test_eurora_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, read_eurora, (WorkloadError,))


def test_corpus_sizes() -> None:
    assert len(PM100_CASES) >= 30 and len(EURORA_CASES) >= 30
