"""Malformed-input corpus, part 2: Slurm sacct, ``-P`` text and ``--json`` (older layouts included). The outcome
classes are those of tests/malformed_harness.py."""

from __future__ import annotations

import copy
import json
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from malformed_harness import Accepts, Case, Error, Rejects, check_case, text_file
from wattsched.core.errors import InputWarning
from wattsched.core.schema import WorkloadError
from wattsched.workload.sacct import read_sacct

# ------------------------------------------------------------------------------------------------------ -P text

FIELDS = ["JobIDRaw", "JobName", "Partition", "State", "Submit", "Start", "End", "ElapsedRaw", "TimelimitRaw",
          "NNodes", "NCPUS", "AllocTRES"]  # fmt: skip
HEAD = "|".join(FIELDS)
BASE = {"JobIDRaw": "2", "JobName": "job", "Partition": "p", "State": "COMPLETED", "Submit": "2024-01-01T00:00:00",
        "Start": "2024-01-01T00:10:00", "End": "2024-01-01T01:10:00", "ElapsedRaw": "3600", "TimelimitRaw": "120",
        "NNodes": "2", "NCPUS": "8", "AllocTRES": "cpu=8,mem=16G,node=2,gres/gpu=1"}  # fmt: skip


def rec(**kw: str) -> str:
    return "|".join((BASE | kw)[f] for f in FIELDS)


GOOD = rec(JobIDRaw="1")


def psv(*lines: str, head: str = HEAD) -> Any:
    return text_file("jobs.sacct", "\n".join([head, GOOD, *lines]) + "\n")


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


PSV_CASES = [
    Case("text_in_nnodes", psv(rec(NNodes="two")), Rejects(1, 1, "NNodes", "not an integer")),
    Case("text_in_tres_count", psv(rec(NNodes="", AllocTRES="cpu=8,node=abc")), Rejects(1, 1, "AllocTRES", "node")),
    Case("text_in_tres_gpu", psv(rec(AllocTRES="cpu=8,node=2,gres/gpu=many")), Rejects(1, 1, "AllocTRES", "gpu")),
    Case("fraction_in_tres_gpu", psv(rec(AllocTRES="cpu=8,node=2,gres/gpu=1.5")), Rejects(1, 1, "AllocTRES")),
    Case("text_in_tres_mem", psv(rec(AllocTRES="cpu=8,node=2,mem=lots")), Rejects(1, 1, "AllocTRES", "mem")),
    Case("job_id_20_digits", psv(rec(JobIDRaw="12345678901234567890")), Rejects(1, 1, "JobIDRaw", "Int64")),
    Case("nnodes_20_digits", psv(rec(NNodes="99999999999999999999")), Rejects(1, 1, "NNodes", "Int64")),
    Case("job_id_text", psv(rec(JobIDRaw="abc")), Rejects(1, 1, "JobIDRaw", "not an integer")),
    Case("submit_after_start", psv(rec(Submit="2024-01-01T00:20:00")), Rejects(1, 1, "Submit", "after Start")),
    Case("end_before_start", psv(rec(End="2024-01-01T00:05:00")), Rejects(1, 1, "End", "before Start")),
    Case(
        "submit_ns_epoch",
        psv(rec(Submit="1704067200000000000", Start="1704067200000000000", End="1704070800000000000")),
        Rejects(1, 1, "submit_time", "2100"),
    ),
    Case("submit_garbage_time", psv(rec(Submit="yesterday")), Rejects(1, 1, "Submit", "neither")),
    Case("never_started", psv(rec(Start="Unknown", State="CANCELLED")), Rejects(1, 1, "Start", "never started")),
    Case("not_ended", psv(rec(End="Unknown", State="RUNNING")), Rejects(1, 1, "End", "not ended")),
    Case("limit_unlimited", psv(rec(TimelimitRaw="UNLIMITED")), Rejects(1, 1, "TimelimitRaw", "walltime unknown")),
    Case("limit_partition", psv(rec(TimelimitRaw="Partition_Limit")), Rejects(1, 1, "TimelimitRaw")),
    Case("limit_infinite_minutes", psv(rec(TimelimitRaw="4294967295")), Rejects(1, 1, "TimelimitRaw", "4294967295")),
    Case("limit_no_val_minutes", psv(rec(TimelimitRaw="4294967294")), Rejects(1, 1, "TimelimitRaw")),
    Case("limit_text", psv(rec(TimelimitRaw="soon")), Rejects(1, 1, "TimelimitRaw", "duration")),
    Case("elapsed_text", psv(rec(ElapsedRaw="long")), Rejects(1, 1, "ElapsedRaw", "not an integer")),
    Case("elapsed_1e12", psv(rec(ElapsedRaw="1000000000000")), Rejects(1, 1, "runtime", "100 years")),
    # JobName is the one free-text field: extra fields are re-joined into it, so the later ones shift and NNodes
    # gets AllocTRES's text (documented in workload/sacct); without a free-text field, see the next case.
    Case("too_many_fields", psv(rec() + "|extra|more"), Rejects(1, 1, "NNodes")),
    Case(
        "too_many_fields_no_free_text",
        text_file(
            "f.sacct",
            "JobIDRaw|Submit|Start|End|NNodes|TimelimitRaw\n1|1704067200|1704067200|1704070800|1|60|surplus\n",
        ),
        Rejects(0, 1, "record", "no free-text"),
    ),
    Case("too_few_fields", psv("3|x|p"), Rejects(1, 1, "record", "truncated")),
    Case("nnodes_zero", psv(rec(NNodes="0", AllocTRES="cpu=8")), Rejects(1, 1, "size", "not positive")),
    Case(
        "array_task_without_raw",
        text_file(
            "a.sacct",
            "JobID|Submit|Start|End|NNodes|Timelimit\n"
            "5_1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|1|01:00:00\n",
        ),
        Rejects(0, 1, "JobID", "array task"),
    ),
    Case("duplicate_requeue", psv(rec(JobIDRaw="1")), Rejects(1, 1, "job_id", "duplicate")),
    Case("steps_folded", psv(rec(JobIDRaw="2.batch"), rec(JobIDRaw="2.extern"), rec()), Accepts(2)),
    Case("crlf", text_file("c.sacct", HEAD + "\r\n" + GOOD + "\r\n"), Accepts(1)),
    Case("utc_times", psv(), Accepts(1, lambda j: j["submit_time"][0] == epoch("2024-01-01T00:00:00"))),
    Case("header_only", text_file("h.sacct", HEAD + "\n"), Accepts(0)),
    Case("no_header", text_file("n.sacct", GOOD + "\n"), Error("not a sacct header")),
    Case("no_header_huge_line", text_file("l.sacct", "x" * 200_000 + "\n"), Error("not a sacct header")),
    Case("header_without_submit", text_file("s.sacct", "JobIDRaw|Start\n1|2\n"), Error("Submit")),
    Case("empty", text_file("e.sacct", "\n\n"), Error("empty")),
    Case("corrupt_gzip", text_file("g.sacct.gz", b"\x1f\x8b\x08garbage"), Error("gzip")),
    Case("missing_file", lambda d: d / "absent.sacct", Error("does not exist")),
]


@pytest.mark.parametrize("case", PSV_CASES, ids=lambda c: c.name)
def test_sacct_parsable_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, read_sacct, (WorkloadError,))


# ------------------------------------------------------------------------------------------------------- --json

T0 = 1_704_067_200  # 2024-01-01T00:00:00Z


def num(value: int | float, infinite: bool = False) -> dict[str, Any]:
    return {"set": True, "infinite": infinite, "number": value}


#: One job in the layout of Slurm 23.02+ (OpenAPI v0.0.39 and later): wrapped numbers, state lists.
JOB_23: dict[str, Any] = {
    "job_id": 2, "name": "job", "partition": "p", "user": "alice", "group": "lab", "qos": "normal",
    "account": "acct", "nodes": "n[1-2]", "allocation_nodes": 2,
    "state": {"current": ["COMPLETED"], "reason": "None"},
    "time": {"submission": T0, "start": T0 + 600, "end": T0 + 4200, "eligible": T0, "elapsed": 3600,
             "limit": num(120)},
    "exit_code": {"status": ["SUCCESS"], "return_code": num(0), "signal": {"id": num(0), "name": ""}},
    "required": {"CPUs": 8, "memory_per_cpu": num(0), "memory_per_node": num(16384)},
    "tres": {"allocated": [{"type": "cpu", "name": "", "id": 1, "count": 8},
                           {"type": "mem", "name": "", "id": 2, "count": 16384},
                           {"type": "node", "name": "", "id": 4, "count": 2},
                           {"type": "gres", "name": "gpu", "id": 1001, "count": 1}],
             "requested": []},
    "steps": [{"step": {"name": "batch"}}],
}  # fmt: skip


def job_21_08() -> dict[str, Any]:
    """The same job as Slurm 21.08 (OpenAPI dbv0.0.37) prints it: plain numbers, a state string, exit status text."""
    job = copy.deepcopy(JOB_23)
    job["time"]["limit"] = 120
    job["state"] = {"current": "COMPLETED", "reason": "None"}
    job["exit_code"] = {"status": "SUCCESS", "return_code": 0}
    job["required"] = {"CPUs": 8, "memory": 16384}
    return job


def job_22_05() -> dict[str, Any]:
    """Slurm 22.05 (v0.0.38): plain numbers, ``signal.signal_id``."""
    job = job_21_08()
    job["exit_code"] = {"status": "SIGNALED", "return_code": 0, "signal": {"signal_id": 9, "name": "KILL"}}
    return job


def job_20_11() -> dict[str, Any]:
    """Slurm 20.11 (v0.0.36): no ``allocation_nodes``; TRES as text (as some exporters of that era wrote it)."""
    job = job_21_08()
    del job["allocation_nodes"]
    job["tres"] = {"allocated": "cpu=8,mem=16G,node=2,gres/gpu=1", "requested": "cpu=8,node=2"}
    return job


def mutate(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of ``base`` (JOB_23) with the dotted ``path`` set to ``value`` (``...`` deletes it)."""
    job = copy.deepcopy(base or JOB_23)
    *parents, last = path.split(".")
    node = job
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return job


def doc(*jobs: Any, name: str = "jobs.json") -> Any:
    good = mutate("job_id", 1)
    return text_file(name, json.dumps({"meta": {"plugin": {"type": "openapi/dbv0.0.39"}}, "jobs": [good, *jobs]}))


JSON_CASES = [
    Case("layout_23", doc(JOB_23), Accepts(2, lambda j: j["walltime"].to_list() == [7200.0, 7200.0])),
    Case("layout_21_08", doc(job_21_08()), Accepts(2, lambda j: j["size"].to_list() == [2, 2])),
    Case("layout_22_05", doc(job_22_05()), Accepts(2, lambda j: j["sacct_exit_code"][1] == "0:9")),
    Case("layout_20_11_tres_text", doc(job_20_11()), Accepts(2, lambda j: j["gpus"].to_list() == [1, 1])),
    Case("limit_infinite_wrapped", doc(mutate("time.limit", num(0, infinite=True))), Rejects(1, 1, "time.limit")),
    Case(
        "limit_infinite_plain",
        doc(mutate("time.limit", 4294967295, job_21_08())),
        Rejects(1, 1, "time.limit", "walltime unknown"),
    ),
    Case("limit_no_val_plain", doc(mutate("time.limit", 4294967294, job_21_08())), Rejects(1, 1, "time.limit")),
    Case("limit_text", doc(mutate("time.limit", "two hours")), Rejects(1, 1, "time.limit", "not a number")),
    Case("job_id_text", doc(mutate("job_id", "2")), Rejects(1, 1, "job_id", "not an integer")),
    Case("job_id_20_digits", doc(mutate("job_id", 12345678901234567890)), Rejects(1, 1, "job_id", "Int64")),
    Case("job_id_negative", doc(mutate("job_id", -4)), Rejects(1, 1, "job_id")),
    Case("job_id_missing", doc(mutate("job_id", ...)), Rejects(1, 1, "job_id")),
    Case(
        "tres_count_text",
        doc(mutate("tres.allocated", [{"type": "gres", "name": "gpu", "count": "two"}])),
        Rejects(1, 1, "tres.allocated", "gres/gpu"),
    ),
    Case(
        "tres_node_text_no_allocation_nodes",
        doc(mutate("allocation_nodes", ...) | {"tres": {"allocated": [{"type": "node", "count": "x"}]}}),
        Rejects(1, 1, "tres.allocated", "node"),
    ),
    Case("tres_not_list", doc(mutate("tres.allocated", 5)), Rejects(1, 1, "tres.allocated")),
    Case("tres_entry_not_object", doc(mutate("tres.allocated", ["cpu"])), Rejects(1, 1, "tres.allocated")),
    Case("time_not_object", doc(mutate("time", "2024-01-01")), Rejects(1, 1, "time", "expected an object")),
    Case("state_not_object", doc(mutate("state", "COMPLETED")), Rejects(1, 1, "state")),
    Case("user_not_text", doc(mutate("user", {"name": "alice"})), Rejects(1, 1, "user")),
    Case("exit_code_text", doc(mutate("exit_code.return_code", "zero")), Rejects(1, 1, "exit_code")),
    Case("submit_after_start", doc(mutate("time.submission", T0 + 1200)), Rejects(1, 1, "time.submission")),
    Case("end_before_start", doc(mutate("time.end", T0 + 300)), Rejects(1, 1, "time.end", "before Start")),
    Case(
        "submit_1e15",
        doc(mutate("time", JOB_23["time"] | {"submission": 1e15, "start": 1e15, "end": 1e15 + 10})),
        Rejects(1, 1, "submit_time", "2100"),
    ),
    Case(
        "submit_1e300",
        doc(mutate("time", JOB_23["time"] | {"submission": 1e300, "start": 1e300, "end": 1e300})),
        Rejects(1, 1, "submit_time"),
    ),
    Case("never_started", doc(mutate("time.start", 0)), Rejects(1, 1, "Start", "never started")),
    Case("entry_not_object", doc([1, 2]), Rejects(1, 1, "record", "not an object")),
    Case("no_size", doc(mutate("allocation_nodes", ...) | {"tres": {"allocated": []}}), Rejects(1, 1, "size")),
    Case("elapsed_bool_ignored", doc(mutate("time.elapsed", True)), Accepts(2)),
    Case("steps_not_list", doc(mutate("steps", 3)), Accepts(2)),
    Case("empty_jobs", text_file("e.json", '{"jobs": []}'), Accepts(0)),
    Case("invalid_json", text_file("bad.json", '{"jobs": [ {"job_id": 1,'), Error("invalid JSON at line 1")),
    Case("no_jobs_array", text_file("nj.json", '{"meta": {}}'), Error("no 'jobs' array")),
    Case("jobs_not_array", text_file("na.json", '{"jobs": {"1": {}}}'), Error("no 'jobs' array")),
    Case("utf8_garbage", text_file("u.json", b'{"jobs": [\xff\xfe]}'), Error("invalid JSON")),
]


@pytest.mark.parametrize("case", JSON_CASES, ids=lambda c: c.name)
def test_sacct_json_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, read_sacct, (WorkloadError,))


def test_corpus_sizes() -> None:
    assert len(PSV_CASES) >= 30 and len(JSON_CASES) >= 30


def test_walltime_fallback_keeps_unlimited_jobs(tmp_path: Path) -> None:
    """The documented rule for an unknown limit: rejected unless walltime_fallback says what to use."""
    path = psv(rec(TimelimitRaw="4294967295"))(tmp_path)
    jobs, rejects, _ = read_sacct(path, walltime_fallback="runtime")
    assert rejects.height == 0 and jobs["walltime"].to_list() == [7200.0, 3600.0]


def test_timezone_converts_local_times(tmp_path: Path) -> None:
    """Local sacct times in Europe/Rome (CET, UTC+1 in January) are an hour ahead of UTC."""
    path = psv()(tmp_path)
    rome, _, prov = read_sacct(path, timezone="Europe/Rome")
    utc, _, _ = read_sacct(path)
    assert (utc["submit_time"] - rome["submit_time"]).to_list() == [3600.0]
    assert prov.header["input_timezone"] == "Europe/Rome"


NO_ELAPSED = [f for f in FIELDS if f != "ElapsedRaw"]


def dst_night(start: str = "2024-10-27T00:00:00", end: str = "2024-10-27T04:00:00") -> Any:
    """One job without ElapsedRaw across Europe/Rome's fall-back night (03:00 CEST → 02:00 CET)."""
    values = BASE | {"JobIDRaw": "1", "Submit": start, "Start": start, "End": end}
    return text_file("dst.sacct", "|".join(NO_ELAPSED) + "\n" + "|".join(values[f] for f in NO_ELAPSED) + "\n")


def test_the_assumed_zone_is_said_when_runtimes_depend_on_it(tmp_path: Path) -> None:
    """Without Elapsed, a run time is End − Start of local times: 4 h read as UTC, 5 h in Europe/Rome across its
    fall-back night. With no zone given the reader says which it assumed, once (issue 31 item 9); a zone given,
    Elapsed, or epoch times leave nothing to say."""
    path = dst_night()(tmp_path)
    with pytest.warns(InputWarning, match=r"dst.sacct: no time zone given .*read as UTC, and 1 run time") as caught:
        utc = read_sacct(path)
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    assert any("read as UTC, and 1 run time" in c for c in utc.provenance.conventions)
    epoch_times = tmp_path / "epoch"
    epoch_times.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        rome = read_sacct(path, timezone="Europe/Rome")
        read_sacct(psv()(tmp_path))  # ElapsedRaw: run times that no zone changes
        read_sacct(dst_night("1729980000", "1729994400")(epoch_times))  # epoch seconds
    assert utc.jobs["runtime"].to_list() == [14400.0] and rome.jobs["runtime"].to_list() == [18000.0]


def test_cli_says_the_assumed_zone(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from wattsched.cli import app

    runner = CliRunner()
    source = dst_night()(tmp_path)
    result = runner.invoke(app, ["data", "convert", "--workload", str(source), "--output", str(tmp_path / "a.csv")])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and "no time zone given (--timezone): local times read as UTC" in warned[0]
    zoned = ["--timezone", "Europe/Rome"]
    result = runner.invoke(
        app, ["data", "convert", "--workload", str(source), "--output", str(tmp_path / "b.csv"), *zoned]
    )
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_cli_timezone_option(tmp_path: Path) -> None:
    """`--timezone` reaches the sacct reader through `data convert` and `simulate`; for SWF it is a warning."""
    from typer.testing import CliRunner

    from wattsched.cli import app

    runner = CliRunner()
    source = psv()(tmp_path)
    for zone, shift in (("UTC", 0.0), ("Europe/Rome", -3600.0), ("America/New_York", 5 * 3600.0)):
        out = tmp_path / f"{zone.replace('/', '_')}.parquet"
        result = runner.invoke(
            app, ["data", "convert", "--input", str(source), "--output", str(out), "--timezone", zone]
        )
        assert result.exit_code == 0, result.output
        submit = pl.read_parquet(out).sort("job_id")["submit_time"].to_list()
        assert submit == [epoch("2024-01-01T00:00:00") + shift]
    result = runner.invoke(app, ["data", "convert", "--input", str(source), "--output", str(tmp_path / "x.parquet"),
                                 "--timezone", "Mars/Olympus"])  # fmt: skip
    assert result.exit_code != 0 and "unknown time zone" in result.output
    swf = tmp_path / "t.swf"
    swf.write_text("1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n")
    result = runner.invoke(app, ["data", "convert", "--input", str(swf), "--output", str(tmp_path / "t.parquet"),
                                 "--timezone", "Europe/Rome"])  # fmt: skip
    assert result.exit_code == 0 and "--timezone Europe/Rome ignored" in result.output


def test_cli_simulate_timezone(tmp_path: Path) -> None:
    """`simulate --timezone` reads sacct local times in that zone: the run's job starts at the shifted time."""
    from typer.testing import CliRunner

    from wattsched.cli import app

    runner = CliRunner()
    source = psv()(tmp_path)
    result = runner.invoke(
        app,
        [
            "simulate",
            "--workload",
            str(source),
            "--policy",
            "fcfs",
            "--output",
            str(tmp_path / "run"),
            "--timezone",
            "Europe/Rome",
            "--machine-size",
            "4",
        ],
    )
    assert result.exit_code == 0, result.output
    jobs = pl.read_parquet(tmp_path / "run" / "jobs.parquet")
    assert jobs["submit_time"].to_list() == [epoch("2024-01-01T00:00:00") - 3600.0]
