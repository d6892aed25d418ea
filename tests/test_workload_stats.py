"""`wattsched data stats FILE`: workload statistics as the Parallel Workloads Archive shows them."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app
from wattsched.core.schema import Provenance, ReadResult, empty_rejects
from wattsched.workload.stats import log2_histogram, workload_stats

runner = CliRunner()


def read_of(jobs: pl.DataFrame, machine_size: int | None = 10) -> ReadResult:
    return ReadResult(jobs, empty_rejects(), Provenance(source="t.csv", format="csv", machine_size=machine_size))


def test_hand_computed_workload() -> None:
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4],
            "user_id": [7, 7, 8, None],
            "submit_time": [0.0, 50.0, 100.0, 100.0],
            "size": [1, 2, 3, 8],
            "runtime": [0.5, 10.0, 100.0, 50.0],
            "walltime": [10.0, 10.0, 200.0, 100.0],
        }
    )
    s = workload_stats(read_of(jobs))
    assert s["jobs"] == 4 and s["span_s"] == 100.0
    area = 1 * 0.5 + 2 * 10 + 3 * 100 + 8 * 50
    assert s["area_unit_s"] == area and s["offered_load"] == pytest.approx(area / (10 * 100))
    assert s["size"]["p50"] == 2.5 and s["size"]["p100"] == 8 and s["size"]["mean"] == 3.5
    assert s["size"]["serial_share"] == 0.25 and s["size"]["power_of_two_share"] == 0.75  # 1, 2, 8
    assert [(r["low"], r["count"]) for r in s["size"]["log2_histogram"]] == [(1, 1), (2, 2), (4, 0), (8, 1)]
    assert s["walltime_accuracy"]["p50"] == pytest.approx(0.5)  # 0.05, 1.0, 0.5, 0.5
    assert s["walltime_accuracy"]["killed_share"] == 0.25
    assert s["users"]["count"] == 2 and s["interarrival_s"]["p100"] == 50.0
    assert s["runtime_s"]["log2_histogram"][0] == {"low": 0, "high": 1, "count": 1}
    assert s["machine_size"] == 10 and workload_stats(read_of(jobs, None))["offered_load"] is None


def test_log2_bins_cover_every_value() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(1, 5000, 1000)
    rows = log2_histogram(values)
    assert sum(r["count"] for r in rows) == 1000
    for r in rows:
        assert r["count"] == int(((values >= r["low"]) & (values < r["high"])).sum())


@pytest.mark.data
def test_kth_sp2_matches_the_archive(tmp_path) -> None:
    # the Parallel Workloads Archive's KTH-SP2 page: 28,489 jobs by 214 users on 100 nodes over 11 months
    path = require_data("swf/KTH-SP2/log.swf")
    figure = tmp_path / "kth.png"
    result = runner.invoke(app, ["--json", "data", "stats", str(path), "--figure", str(figure)])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["jobs"] == 28_489 and stats["users"]["count"] == 214 and stats["machine_size"] == 100
    assert 0.6 < stats["offered_load"] < 0.75  # the simulated utilisation of the whole log is 0.69
    assert stats["size"]["p100"] == 100
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = runner.invoke(app, ["data", "stats", str(path)])
    assert table.exit_code == 0 and "offered load" in table.output and "log2 histograms" in table.output


def test_errors(tmp_path) -> None:
    result = runner.invoke(app, ["data", "stats", str(tmp_path / "absent.swf")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    empty = tmp_path / "empty.swf"
    empty.write_text("; MaxProcs: 4\n1 0 0 -5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = runner.invoke(app, ["data", "stats", str(empty)])
    assert result.exit_code == 2 and "every line was rejected" in result.output
