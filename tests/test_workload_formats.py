"""A workload format is one record (workload/formats.py): a format registered here is read by load_workload and
listed by the CLI's help, with its rejects counted in its unit; the docs table is the registry; the formats with
naive local times take --timezone (Eurora too)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from test_eurora import _one, _write
from wattsched.cli import app
from wattsched.core.record_units import record_unit
from wattsched.core.schema import Provenance, ReadResult
from wattsched.workload import formats
from wattsched.workload.formats import (
    FORMATS,
    ReadOptions,
    WorkloadFormat,
    format_help,
    formats_table,
    register_format,
    supported_suffixes,
)
from wattsched.workload.load import load_workload

REPO = Path(__file__).resolve().parents[1]


def _read_jsonl(path: Path, options: ReadOptions, hint: object) -> ReadResult:
    """A toy reader: one JSON object per line with the canonical columns (what a new reader must return)."""
    from wattsched.core.schema import REJECTS_SCHEMA

    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    jobs = pl.DataFrame(rows).with_columns(pl.col("submit_time", "walltime", "runtime").cast(pl.Float64))
    provenance = Provenance(source=str(path), format="jsonl-jobs", machine_size=options.machine_size)
    return ReadResult(jobs, pl.DataFrame(schema=REJECTS_SCHEMA), provenance)


JSONL = WorkloadFormat(
    "jsonl-jobs",
    "JSON-lines job table",
    "JSON lines",
    (".jobs.jsonl",),
    _read_jsonl,
    lambda path, name: name.endswith(".jobs.jsonl"),
    units={"jsonl-jobs": "record"},
    read_from="`.jobs.jsonl`",
)


@pytest.fixture
def jsonl() -> Iterator[WorkloadFormat]:
    register_format(JSONL, before="swf")
    try:
        yield JSONL
    finally:
        FORMATS.remove(JSONL)


def test_the_docs_table_is_the_registry() -> None:
    page = REPO / "docs" / "formats.md"
    assert formats.docs_table_block(page) == formats_table(), (
        "docs/formats.md's table of formats is behind the registry: run python -m wattsched.workload.formats"
    )


def test_a_registered_format_is_read_and_listed(jsonl: WorkloadFormat, tmp_path: Path) -> None:
    path = tmp_path / "w.jobs.jsonl"
    path.write_text(
        '{"job_id": 1, "submit_time": 0, "walltime": 60, "runtime": 30, "size": 2}\n'
        '{"job_id": 2, "submit_time": 5, "walltime": 60, "runtime": 50, "size": 4}\n'
    )
    read = load_workload(path, machine_size=8)
    assert read.provenance.format == "jsonl-jobs" and read.jobs["job_id"].to_list() == [1, 2]
    assert ".jobs.jsonl" in supported_suffixes() and "JSON lines" in format_help()
    assert "`.jobs.jsonl`" in formats_table() and record_unit("jsonl-jobs") == "record"
    result = CliRunner().invoke(app, ["simulate", "--workload", str(path), "--machine-size", "8", "--policy", "easy",
                                      "--output", str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code == 0, result.output


def test_a_second_format_of_the_same_name_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_format(FORMATS[0])


def test_an_unknown_file_names_every_format_it_tried(tmp_path: Path) -> None:
    path = tmp_path / "w.dat"
    path.write_text("hello world\n")
    with pytest.raises(Exception, match="unsupported workload format") as err:
        load_workload(path)
    assert ".swf" in str(err.value) and ".log_crypt" in str(err.value)


def test_eurora_takes_a_time_zone(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    path = _write(tmp_path / "d" / "i.log_crypt", _one(1))
    as_utc = load_workload(path)
    rome = load_workload(path, timezone="Europe/Rome")  # CEST on 2014-03-31: UTC+2
    assert rome.jobs["submit_time"][0] == as_utc.jobs["submit_time"][0] - 7200
    assert "Europe/Rome" in rome.provenance.header["input_timezone"]
    with pytest.raises(Exception, match="unknown time zone 'Mars/Olympus'"):
        load_workload(path, timezone="Mars/Olympus")
    result = CliRunner().invoke(app, ["data", "stats", str(path), "--timezone", "Europe/Rome"])
    assert result.exit_code == 0 and "ignored" not in result.output, result.output
