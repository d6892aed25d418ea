"""SWF reader/writer on small inline files: header, conventions, every reject reason, round trips."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.core.schema import REJECTS_SCHEMA, Provenance, WorkloadError
from wattsched.workload.swf import SWF_FIELDS, read_swf, write_swf

HEADER = """\
; Version: 2.2
; Computer: Test machine
; Information: http://example.org/
;              http://www.cs.huji.ac.il/labs/parallel/workload/
; UnixStartTime: 843480031
; TimeZoneString: Europe/Stockholm
; MaxNodes: 16
; MaxProcs: 64
; MaxQueues: 2
; Queue:  0  interactive
; Queue:  1  batch
; Note: first note
;       continues here
; Note: second note
;
"""


def swf_line(
    job: int = 1,
    submit: float = 0,
    wait: float = -1,
    run: float = 100,
    alloc: int = 4,
    req_procs: int = 4,
    req_time: float = 200,
    status: int = 1,
    user: int = 1,
    group: int = 1,
    app: int = -1,
    queue: int = 1,
    partition: int = -1,
) -> str:
    fields = [job, submit, wait, run, alloc, -1, -1, req_procs, req_time, -1, status, user, group, app, queue,
              partition, -1, -1]  # fmt: skip
    return " ".join(str(f) for f in fields)


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- header and basic conventions ---------------------------------------------------------------------------


def test_header_parsed(tmp_path: Path) -> None:
    _, rejects, prov = read_swf(write(tmp_path, HEADER + swf_line() + "\n"))
    assert prov.machine_size == 64  # MaxProcs wins over MaxNodes
    assert prov.unix_start_time == 843480031
    assert prov.timezone == "Europe/Stockholm"
    assert prov.header["Queue"] == ["0  interactive", "1  batch"]
    assert prov.header["Note"] == ["first note\ncontinues here", "second note"]
    info = "http://example.org/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"
    assert prov.header["Information"] == info
    assert prov.header["MaxNodes"] == "16"
    assert (prov.format, prov.size_unit, prov.n_records, prov.n_jobs, prov.n_rejected) == (
        "swf", "processors", 1, 1, 0
    )  # fmt: skip
    assert "machine size 64 from header MaxProcs" in prov.conventions
    assert rejects.schema == pl.Schema(REJECTS_SCHEMA)
    assert rejects.height == 0


def test_first_data_line_not_dropped(tmp_path: Path) -> None:
    text = HEADER + swf_line(job=1, submit=0) + "\n" + swf_line(job=2, submit=5) + "\n"
    jobs, _, prov = read_swf(write(tmp_path, text))
    assert jobs["job_id"].to_list() == [1, 2]
    # and without any header at all
    jobs, _, prov = read_swf(write(tmp_path, swf_line(job=7) + "\n", "bare.swf"))
    assert jobs["job_id"].to_list() == [7]
    assert prov.machine_size is None
    assert any("machine size unknown" in c for c in prov.conventions)


def test_canonical_columns_and_dtypes(tmp_path: Path) -> None:
    line = "3 10.5 7 100 8 55.5 1024 8 3600 2048 5 12 13 14 2 3 1 30"
    jobs, _, _ = read_swf(write(tmp_path, line + "\n"))
    row = jobs.row(0, named=True)
    assert row == {
        "job_id": 3, "submit_time": 10.5, "walltime": 3600.0, "runtime": 100.0, "size": 8,
        "user_id": 12, "group_id": 13, "queue": "2", "partition": "3", "app_id": "14", "state": "CANCELLED",
        "swf_wait": 7.0, "swf_alloc_procs": 8, "swf_avg_cpu": 55.5, "swf_used_mem": 1024.0,
        "swf_req_procs": 8, "swf_req_time": 3600.0, "swf_req_mem": 2048.0, "swf_status": 5,
        "swf_preceding_job": 1, "swf_think_time": 30.0,
    }  # fmt: skip
    assert jobs.schema["job_id"] == pl.Int64 and jobs.schema["size"] == pl.Int64
    assert jobs.schema["submit_time"] == pl.Float64 and jobs.schema["app_id"] == pl.Utf8


def test_unknowns_are_null_and_state_mapping(tmp_path: Path) -> None:
    lines = [
        swf_line(job=1, status=1, user=-1, group=-1, queue=-1),
        swf_line(job=2, status=0),
        swf_line(job=3, status=-1),
        swf_line(job=4, status=3),
    ]
    jobs, _, _ = read_swf(write(tmp_path, "\n".join(lines) + "\n"))
    assert jobs["state"].to_list() == ["COMPLETED", "FAILED", None, None]
    assert jobs["swf_status"].to_list() == [1, 0, None, 3]
    assert jobs["user_id"].to_list()[0] is None and jobs["queue"].to_list()[0] is None
    assert jobs["swf_wait"].null_count() == 4 and jobs["app_id"].null_count() == 4


def test_unsorted_lines_come_back_in_queue_order(tmp_path: Path) -> None:
    lines = [swf_line(job=5, submit=30), swf_line(job=2, submit=10), swf_line(job=9, submit=10),
             swf_line(job=1, submit=10), swf_line(job=3, submit=0)]  # fmt: skip
    jobs, _, _ = read_swf(write(tmp_path, "\n".join(lines) + "\n"))
    assert jobs["job_id"].to_list() == [3, 1, 2, 9, 5]
    assert jobs["submit_time"].to_list() == [0, 10, 10, 10, 30]


def test_size_falls_back_to_allocated(tmp_path: Path) -> None:
    lines = [swf_line(job=1, req_procs=-1, alloc=6), swf_line(job=2, req_procs=0, alloc=3),
             swf_line(job=3, req_procs=5, alloc=2)]  # fmt: skip
    jobs, _, _ = read_swf(write(tmp_path, "\n".join(lines) + "\n"))
    assert jobs["size"].to_list() == [6, 3, 5]
    assert jobs["swf_req_procs"].to_list() == [None, 0, 5]


def test_walltime_falls_back_to_runtime(tmp_path: Path) -> None:
    lines = [swf_line(job=1, req_time=-1, run=50), swf_line(job=2, req_time=0, run=70),
             swf_line(job=3, req_time=30, run=70)]  # fmt: skip
    jobs, _, _ = read_swf(write(tmp_path, "\n".join(lines) + "\n"))
    assert jobs["walltime"].to_list() == [50.0, 70.0, 30.0]  # job 3 exceeded its request: kept as is
    assert jobs["runtime"].to_list() == [50.0, 70.0, 70.0]


def test_number_syntax_and_precision(tmp_path: Path) -> None:
    lines = [
        "1 0.1 -1 1e3 4 -1 -1 4 +2.5E2 -1 1 1 1 -1 -1 -1 -1 -1",
        "2 .5 -1 5. 4 -1 -1 4 7200 -1 1 1 1 -1 -1 -1 -1 -1",
        "3 1234567890.123456789 -1 0.30000000000000004 4 -1 -1 4 1e-300 -1 1 1 1 -1 -1 -1 -1 -1",
        "4 12345678901234567890123 -1 3 4 -1 -1 4 10 -1 1 1 1 -1 -1 -1 -1 -1",
    ]
    jobs, rejects, _ = read_swf(write(tmp_path, "\n".join(lines) + "\n"))
    # job 4's 23-digit submit time is parsed exactly, then rejected by the MAX_SUBMIT_TIME bound (a unit error)
    assert rejects["job_id"].to_list() == [4] and rejects["field"].to_list() == ["submit_time"]
    by_id = {r["job_id"]: r for r in jobs.iter_rows(named=True)}
    assert by_id[1]["submit_time"] == 0.1 and by_id[1]["runtime"] == 1000.0 and by_id[1]["walltime"] == 250.0
    assert by_id[2]["submit_time"] == 0.5 and by_id[2]["runtime"] == 5.0
    assert by_id[3]["submit_time"] == float("1234567890.123456789")
    assert by_id[3]["runtime"] == 0.30000000000000004 and by_id[3]["walltime"] == 1e-300
    assert "year 2100" in rejects["reason"][0] and "12345678901234567890123" in rejects["raw"][0]


def test_tabs_crlf_and_leading_whitespace(tmp_path: Path) -> None:
    text = "; MaxProcs: 8\r\n\t" + swf_line(job=1).replace(" ", "\t") + "\r\n  " + swf_line(job=2) + "  \r\n"
    jobs, rejects, prov = read_swf(write(tmp_path, text))
    assert jobs["job_id"].to_list() == [1, 2]
    assert rejects.height == 0 and prov.machine_size == 8


def test_blank_lines_skipped_not_rejected(tmp_path: Path) -> None:
    text = HEADER + "\n" + swf_line(job=1) + "\n   \n\t\n" + swf_line(job=2, run=-1) + "\n\n"
    jobs, rejects, prov = read_swf(write(tmp_path, text))
    n_header = HEADER.count("\n")
    assert jobs["job_id"].to_list() == [1]
    assert rejects["line"].to_list() == [n_header + 5]
    assert prov.n_records == 2
    assert "4 blank lines skipped" in prov.conventions


def test_extra_trailing_fields_ignored(tmp_path: Path) -> None:
    lines = [swf_line(job=1) + " 68719476736 {1,2,3} q_1d 1:ppn=64:x86_64#excl", swf_line(job=2) + " extra",
             swf_line(job=3)]  # fmt: skip
    jobs, rejects, prov = read_swf(write(tmp_path, "\n".join(lines) + "\n"))
    assert jobs["job_id"].to_list() == [1, 2, 3] and rejects.height == 0
    assert "2 data lines had extra fields after the 18th (ignored)" in prov.conventions
    assert all(c.startswith("swf_") or c in jobs.columns[:11] for c in jobs.columns)


# --- rejects ------------------------------------------------------------------------------------------------


def test_every_reject_reason_with_line_and_field(tmp_path: Path) -> None:
    header = "; MaxProcs: 64\n;\n"  # lines 1-2
    lines = [
        swf_line(job=1),  # 3 ok
        "2 10 -1 100 4 -1 -1 4 200 -1 1 1 1",  # 4 too few fields
        swf_line(job=3).replace(" 100 ", " 1O0 ", 1),  # 5 non-numeric run time
        swf_line(job=4, submit=-1),  # 6 negative submit
        swf_line(job=5, run=-1),  # 7 run time unknown
        swf_line(job=6, run=-7),  # 8 run time negative
        swf_line(job=7, req_procs=-1, alloc=-1),  # 9 size unknown
        swf_line(job=8, req_procs=-1, alloc=0),  # 10 size not positive
        swf_line(job=9, req_procs=65, alloc=65),  # 11 size > machine
        swf_line(job=1, submit=50),  # 12 duplicate job id
        swf_line(job=11).replace(" 4 ", " 4.5 ", 1),  # 13 non-integer allocated processors
        swf_line(job=12),  # 14 ok
        "x13 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1",  # 15 non-numeric job number
    ]
    path = write(tmp_path, header + "\n".join(lines) + "\n")
    jobs, rejects, prov = read_swf(path)
    assert jobs["job_id"].to_list() == [1, 12]
    got = [(r["line"], r["job_id"], r["field"]) for r in rejects.iter_rows(named=True)]
    assert got == [
        (4, 2, "line"), (5, 3, "run"), (6, 4, "submit_time"), (7, 5, "runtime"), (8, 6, "runtime"),
        (9, 7, "size"), (10, 8, "size"), (11, 9, "size"), (12, 1, "job_id"), (13, 11, "alloc_procs"),
        (15, None, "job"),
    ]  # fmt: skip
    reasons = rejects["reason"].to_list()
    assert "13 fields" in reasons[0] and "18" in reasons[0]
    assert "'1O0'" in reasons[1] and "field 4 (run)" in reasons[1]
    assert "negative" in reasons[2]
    assert reasons[3] == "run time is unknown"
    assert reasons[4] == "run time is negative"
    assert reasons[5] == "job size is unknown"
    assert reasons[6] == "job size is not positive"
    assert reasons[7] == "job size exceeds the machine size (64)"
    assert "duplicate" in reasons[8]
    assert "'4.5'" in reasons[9] and "not an integer" in reasons[9]
    assert "'x13'" in reasons[10]
    raw = path.read_text().splitlines()
    assert rejects["raw"].to_list() == [raw[line - 1] for line in rejects["line"].to_list()]
    assert set(rejects["source"].to_list()) == {str(path)}
    assert prov.n_records == 13 and prov.n_jobs == 2 and prov.n_rejected == 11
    assert prov.n_jobs + prov.n_rejected == prov.n_records


def test_machine_size_override_and_maxnodes_fallback(tmp_path: Path) -> None:
    text = "; MaxNodes: 8\n" + swf_line(job=1, req_procs=8) + "\n" + swf_line(job=2, req_procs=16) + "\n"
    path = write(tmp_path, text)
    jobs, rejects, prov = read_swf(path)
    assert prov.machine_size == 8 and jobs["job_id"].to_list() == [1] and rejects["line"].to_list() == [3]
    assert "machine size 8 from header MaxNodes" in prov.conventions
    jobs, rejects, prov = read_swf(path, machine_size=32)
    assert prov.machine_size == 32 and jobs.height == 2 and rejects.height == 0
    assert "machine size 32 from the machine_size argument" in prov.conventions


def test_strict_raises_with_file_line_field_reason(tmp_path: Path) -> None:
    text = swf_line(job=1) + "\n" + swf_line(job=2, run=-1) + "\n" + "3 4 5\n"
    path = write(tmp_path, text)
    with pytest.raises(WorkloadError) as err:
        read_swf(path, strict=True)
    message = str(err.value)
    assert str(path) in message and "2 rejected line(s)" in message
    assert "line 2" in message and "'runtime'" in message and "run time is unknown" in message
    assert read_swf(write(tmp_path, swf_line() + "\n", "ok.swf"), strict=True).jobs.height == 1


@pytest.mark.parametrize(
    ("text", "why"),
    [("", "empty"), ("  \n\n", "empty"), ("; Version: 2.2\n; MaxProcs: 4\n;\n", "no data lines")],
)
def test_unreadable_files(tmp_path: Path, text: str, why: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(WorkloadError, match=why) as err:
        read_swf(path)
    assert str(path) in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="does not exist"):
        read_swf(tmp_path / "nope.swf")


def test_gzip_input(tmp_path: Path) -> None:
    text = HEADER + swf_line(job=1) + "\n" + swf_line(job=2, submit=3) + "\n"
    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(text.encode()))
    plain = read_swf(write(tmp_path, text))
    zipped = read_swf(path)
    assert zipped.jobs.equals(plain.jobs) and zipped.provenance.header == plain.provenance.header
    bad = tmp_path / "bad.swf.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(WorkloadError, match="gunzip"):
        read_swf(bad)


# --- writer -------------------------------------------------------------------------------------------------


def test_write_read_round_trip_keeps_18_fields(tmp_path: Path) -> None:
    lines = [
        "1 0 5 100 8 55.5 1024 8 3600 2048 1 12 13 14 2 3 -1 -1",
        "2 3 -1 50 4 -1 -1 -1 -1 -1 5 1 1 -1 -1 -1 1 30",
        "3 3 0 0.5 2 -1 -1 0 0 -1 7 1 1 -1 -1 -1 -1 -1",
    ]
    src = write(tmp_path, HEADER + "\n".join(lines) + "\n")
    first = read_swf(src)
    out = tmp_path / "out.swf.gz"
    write_swf(first.jobs, out, provenance=first.provenance)
    again = read_swf(out)
    assert again.jobs.equals(first.jobs)
    data = [ln for ln in gzip.decompress(out.read_bytes()).decode().splitlines() if not ln.startswith(";")]
    assert [d.split() for d in data] == [ln.split() for ln in lines]
    h = again.provenance.header
    assert h["Version"] == "2.2" and h["Computer"] == "Test machine" and h["MaxJobs"] == "3"
    assert h["MaxRecords"] == "3" and h["MaxProcs"] == "64" and h["MaxNodes"] == "16"
    assert h["Conversion"].startswith("wattsched")
    assert h["Queue"] == first.provenance.header["Queue"] and h["Note"] == first.provenance.header["Note"]
    assert again.provenance.unix_start_time == 843480031 and again.provenance.timezone == "Europe/Stockholm"


def test_write_canonical_fallbacks(tmp_path: Path) -> None:
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2],
            "submit_time": [0.0, 10.0],
            "walltime": [100.0, 60.0],
            "runtime": [50.0, 60.0],
            "size": [4, 2],
            "queue": ["batch", None],
            "state": ["COMPLETED", "TIMEOUT"],
            "start_time": [5.0, 10.0],
        }
    )
    path = tmp_path / "c.swf"
    write_swf(jobs, path, machine_size=8)
    text = path.read_text()
    data = [ln.split() for ln in text.splitlines() if not ln.startswith(";")]
    assert data[0] == ["1", "0", "5", "50", "4", "-1", "-1", "4", "100", "-1", "1", "-1", "-1", "-1", "1",
                       "-1", "-1", "-1"]  # fmt: skip
    assert data[1][10] == "-1" and data[1][14] == "-1"
    assert "; Queue: 1 batch" in text and "; MaxProcs: 8" in text
    back = read_swf(path).jobs
    assert back["walltime"].to_list() == [100.0, 60.0] and back["size"].to_list() == [4, 2]


def test_write_prefers_canonical_when_swf_columns_disagree(tmp_path: Path) -> None:
    jobs, _, prov = read_swf(write(tmp_path, swf_line(job=1, req_time=200, req_procs=4) + "\n"))
    edited = jobs.with_columns(pl.lit(500.0).alias("walltime"), pl.lit(2, dtype=pl.Int64).alias("size"))
    out = tmp_path / "e.swf"
    write_swf(edited, out, provenance=prov)
    back = read_swf(out).jobs
    assert back["walltime"].to_list() == [500.0] and back["size"].to_list() == [2]


valid_jobs = st.lists(
    st.tuples(
        st.floats(0, 1e9, allow_nan=False, allow_infinity=False),  # submit
        st.floats(0, 1e7, allow_nan=False, allow_infinity=False),  # runtime
        st.floats(1e-3, 1e7, allow_nan=False, allow_infinity=False),  # walltime (> 0: 0 means missing)
        st.integers(1, 1024),  # size
        st.one_of(st.none(), st.integers(0, 10_000)),  # user
        st.one_of(st.none(), st.integers(0, 99).map(str)),  # queue
        st.sampled_from([None, "COMPLETED", "FAILED", "CANCELLED"]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=valid_jobs, ids=st.randoms(use_true_random=False))
def test_round_trip_random_valid_jobs(tmp_path: Path, rows: list[tuple], ids) -> None:
    job_ids = ids.sample(range(1, 10_000_000), len(rows))
    jobs = pl.DataFrame(
        {
            "job_id": job_ids,
            "submit_time": [r[0] for r in rows],
            "walltime": [r[2] for r in rows],
            "runtime": [r[1] for r in rows],
            "size": [r[3] for r in rows],
            "user_id": [r[4] for r in rows],
            "queue": [r[5] for r in rows],
            "state": [r[6] for r in rows],
        },
        schema={"job_id": pl.Int64, "submit_time": pl.Float64, "walltime": pl.Float64, "runtime": pl.Float64,
                "size": pl.Int64, "user_id": pl.Int64, "queue": pl.Utf8, "state": pl.Utf8},
    )  # fmt: skip
    path = tmp_path / "rt.swf"
    write_swf(jobs, path, machine_size=1024)
    back, rejects, prov = read_swf(path)
    assert rejects.height == 0 and prov.machine_size == 1024
    expected = jobs.sort(["submit_time", "job_id"])
    assert back.select(expected.columns).equals(expected)


def test_field_names_are_the_18_swf_fields() -> None:
    assert len(SWF_FIELDS) == 18 and SWF_FIELDS[0] == "job" and SWF_FIELDS[-1] == "think_time"


def test_provenance_type(tmp_path: Path) -> None:
    prov = read_swf(write(tmp_path, swf_line() + "\n")).provenance
    assert isinstance(prov, Provenance) and prov.source.endswith("t.swf")


def test_invalid_machine_size_argument(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="positive"):
        read_swf(write(tmp_path, swf_line() + "\n"), machine_size=0)


def test_write_maps_names_and_node_units(tmp_path: Path) -> None:
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3],
            "submit_time": [0.0, 1.0, 2.0],
            "walltime": [10.0, 10.0, 10.0],
            "runtime": [5.0, 5.0, 5.0],
            "size": [1, 2, 1],
            "app_id": ["lammps", "gromacs", "lammps"],
            "partition": ["7", None, "-3"],
        }
    )
    prov = Provenance(source="m100.parquet", format="parquet", machine_size=980, size_unit="nodes")
    path = tmp_path / "n.swf"
    write_swf(jobs, path, provenance=prov)
    text = path.read_text()
    assert "; MaxNodes: 980" in text and "MaxProcs" not in text and "are nodes" in text
    assert "; Note: executable 1 is lammps" in text and "; Note: executable 2 is gromacs" in text
    back, _, back_prov = read_swf(path)
    assert back["app_id"].to_list() == ["1", "2", "1"] and back["partition"].to_list() == ["7", None, "-3"]
    assert back_prov.machine_size == 980


def test_write_requires_canonical_columns(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="size"):
        write_swf(pl.DataFrame({"job_id": [1], "submit_time": [0.0], "walltime": [1.0], "runtime": [1.0]}),
                  tmp_path / "x.swf")  # fmt: skip


def test_semicolon_separated_swf_with_text_fields_is_read(tmp_path: Path) -> None:
    # the EAMC module traces' dialect: ';' between the 18 fields, a user name and a module tag as partition
    path = tmp_path / "modules.swf"
    path.write_text(
        "1;3;-1;950;8;-1;-1;-1;-1;-1;1;tester;-1;-1;1;CM;-1;-1\n"
        "2;3;-1;950;8;-1;-1;-1;-1;-1;1;tester;-1;-1;1;DAM;-1;-1\n"
        "3;5;-1;92;0;-1;-1;-1;-1;-1;1;other;-1;-1;0;ESB;-1;-1\n"
        "4;7;-1;abc;4;-1;-1;-1;-1;-1;1;other;-1;-1;0;CM;-1;-1\n"
    )
    read = read_swf(path)
    assert read.jobs["job_id"].to_list() == [1, 2]
    assert read.jobs["partition"].to_list() == ["CM", "DAM"] and read.jobs["user_id"].to_list() == [1, 1]
    assert read.jobs["runtime"].to_list() == [950.0, 950.0]
    # the other lines are rejects with their line and reason, as in any SWF file
    assert read.rejects.select("line", "field").rows() == [(3, "size"), (4, "run")]
    assert any("';'" in c for c in read.provenance.conventions)


@pytest.mark.data
def test_the_eamc_module_trace_is_read() -> None:
    from conftest import require_data

    read = read_swf(require_data("eamc/Models/traceD2-2.swf"))
    # 3,000 lines: 80 module parts with 0 processors are rejected (size not positive), the rest are jobs
    assert read.jobs.height + read.rejects.height == 3000 and read.rejects.height == 80
    assert set(read.jobs["partition"].unique()) == {"CM", "DAM", "ESB"}
    assert set(read.rejects["reason"].unique()) == {"job size is not positive"}
