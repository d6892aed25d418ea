"""The canonical table's validation rules, shared by every reader."""

from __future__ import annotations

import re
from datetime import datetime

import polars as pl
import pytest

from wattsched.core.schema import WorkloadError, coerce_columns, validate_jobs


def frame(**cols) -> pl.DataFrame:
    base = {"job_id": [1], "submit_time": [0.0], "walltime": [10.0], "runtime": [5.0], "size": [1]}
    base.update(cols)
    return pl.DataFrame(base)


@pytest.mark.parametrize(
    ("cols", "field", "reason"),
    [
        ({"runtime": [-1.0]}, "runtime", "run time is negative"),
        ({"walltime": [-1.0]}, "walltime", "walltime is negative"),
        ({"size": [0]}, "size", "job size is not positive"),
        ({"size": [9]}, "size", "job size exceeds the machine size (8)"),
        ({"submit_time": [float("nan")]}, "submit_time", "submit time is missing or not finite"),
        ({"runtime": [None]}, "runtime", "run time is unknown"),
    ],
)
def test_each_rule_names_field_and_reason(cols, field, reason) -> None:
    good, rejects = validate_jobs(coerce_columns(frame(**cols)), machine_size=8, source="t.csv")
    assert good.height == 0
    assert rejects.select("source", "field", "reason").row(0) == ("t.csv", field, reason)


def test_duplicates_are_judged_among_valid_rows() -> None:
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 2, 2],
            "submit_time": [0.0, 1, 2, 3],
            "walltime": [10.0, -1, 5, 5],
            "runtime": [1.0, 2, 3, 3],
            "size": [1, 1, 1, 1],
            "line": [2, 3, 4, 5],
        }
    )
    good, rejects = validate_jobs(coerce_columns(jobs), machine_size=4, source="t", line_column="line")
    assert good["submit_time"].to_list() == [0.0, 2.0]  # the first valid row with id 2 is kept
    assert rejects.select("line", "reason").rows() == [
        (3, "walltime is negative"),
        (5, "duplicate job id (an earlier row has it)"),
    ]
    assert "line" not in good.columns


def test_aliases_and_missing_columns() -> None:
    assert "size" in coerce_columns(frame().rename({"size": "nodes"})).columns
    with pytest.raises(WorkloadError, match=r"lacks required column\(s\) \['walltime'\]"):
        coerce_columns(frame().drop("walltime"))


@pytest.mark.parametrize(
    ("cols", "why"),
    [
        ({"size": [True]}, "'size' is Boolean"),
        ({"submit_time": [False]}, "'submit_time' is Boolean"),
        ({"runtime": [datetime(2020, 1, 1)]}, "'runtime' is a date-time"),
        ({"submit_time": [datetime(2020, 1, 1)]}, "read the table with read_table"),  # µs if cast
        ({"name": [["a", "b"]]}, "'name' holds List"),
    ],
)
def test_coerce_refuses_what_a_cast_would_misread(cols, why: str) -> None:
    """A frame given to the simulator or a reader's end directly: a Boolean, temporal or nested column is an error
    naming the column, not a cast (true → 1, a Datetime → microseconds), issue 31 item 9."""
    with pytest.raises(WorkloadError, match=re.escape(why)):
        coerce_columns(frame(**cols))


def test_finish_read_orders_counts_and_locates() -> None:
    """finish_read: reader checks before the canonical rules, located raw text, rejects by line, jobs in queue
    order, counts in the provenance."""
    from wattsched.core.schema import Provenance, finish_read, replace_raw

    jobs = pl.DataFrame(
        {
            "job_id": [3, 1, 2, 4],
            "submit_time": [5.0, 9.0, -1.0, 1.0],
            "walltime": [10.0, 10.0, 10.0, 10.0],
            "runtime": [1.0, 1.0, -1.0, 1.0],
            "size": [1, 1, 1, 9],
            "__line": [10, 11, 12, 13],
        }
    )
    own = [{"source": "t", "line": 7, "job_id": 0, "field": "line", "reason": "short", "raw": "0 1"}]
    negative = ("submit_time", pl.col("submit_time") < 0, "submit time is negative")
    prov = Provenance(source="t", format="test", machine_size=8)
    read = finish_read(
        jobs,
        own,
        prov,
        strict=False,
        line_column="__line",
        checks=[negative],
        locate=lambda r: replace_raw(r, lambda line: f"text of {line}"),
    )
    assert read.jobs["job_id"].to_list() == [3, 1] and "__line" not in read.jobs.columns
    assert read.rejects.select("line", "field", "reason", "raw").rows() == [
        (7, "line", "short", "0 1"),
        (12, "submit_time", "submit time is negative", "text of 12"),  # the reader's check wins
        (13, "size", "job size exceeds the machine size (8)", "text of 13"),
    ]
    assert (prov.n_jobs, prov.n_rejected) == (2, 3)
    with pytest.raises(WorkloadError, match=r"t: 2 rejected row\(s\); first at line 7, field 'line': short"):
        finish_read(jobs, own, Provenance(source="t", format="t"), strict=True, line_column="__line", unit="row")


def test_finish_read_orders_rejects_by_file_then_line() -> None:
    from wattsched.core.schema import Provenance, finish_read

    own = [
        {"source": "b", "line": 1, "field": "x", "reason": "r"},
        {"source": "a", "line": 5, "field": "x", "reason": "r"},
        {"source": "b", "line": 0, "field": "x", "reason": "r"},
    ]
    read = finish_read(frame(), own, Provenance(source="a, b", format="test"), strict=False, sources=["a", "b"])
    assert read.rejects.select("source", "line").rows() == [("a", 5), ("b", 0), ("b", 1)]
