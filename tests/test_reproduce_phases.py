"""Issue 32, item 1: a reproduction says where its wall time went (the phase table in ``claims.json`` and the
report), and what was made faster keeps its results: a campaign worker reads a window once, not once per run."""

from __future__ import annotations

import json
import os
import time

import polars as pl

from wattsched.campaign import power
from wattsched.reproduce.claims import Spread, check_exact, check_number, check_order, not_checkable
from wattsched.reproduce.report import phase_line, read_claims, write_report
from wattsched.reproduce.runner import PaperRun, Phases, ReproduceContext


def test_phases_add_up_in_order() -> None:
    phases = Phases()
    phases.enter("a")
    time.sleep(0.01)
    phases.enter("b")
    time.sleep(0.01)
    phases.enter("empty")
    phases.enter("a")  # entered again: adds to the first
    snap = phases.snapshot()
    assert list(snap) == ["a", "b"] and snap["a"] >= 0.01  # a phase that took no time is left out
    table = phases.close()
    assert table["a"] >= snap["a"] and phases.close() == table  # closed: nothing runs
    assert phase_line({"small": 0.04, "big": 2.0}) == "big 2.0 s; small 0.0 s"


def test_claims_and_report_carry_the_phase_table(tmp_path) -> None:
    results = [
        check_order("C003-01", True, "12 of 12 cases"),
        not_checkable("C003-02", "needs the Marconi100 job table and telemetry"),
        check_number("C003-03", {str(k): Spread.of([v]) for k, v in enumerate([77.0, 14.0, 5.0, 4.0])}),
        check_exact("C003-04", True, "1,000 of 1,000 jobs"),
    ]
    ctx = ReproduceContext("003", tmp_path, quick=True, seeds=(0,))
    ctx.phase("the runs")
    time.sleep(0.01)  # a phase under 0.5 ms is left out of the table: this one takes time
    run = PaperRun(pl.DataFrame({"seed": [0]}), results)
    files = write_report(ctx, run, seconds=1.0)
    phases = read_claims(files["claims"]).phases
    assert list(phases) == [
        "the runs",
        "writing the report (results.parquet, the paper-vs-ours figure, REPORT.md/html, claims.json)",
    ]
    assert all(v >= 0 for v in phases.values())
    assert "| phases |" in files["report"].read_text()
    old = json.loads(files["claims"].read_text())
    del old["phases"]  # a file written before the phase table still reads
    files["claims"].write_text(json.dumps(old))
    assert read_claims(files["claims"]).phases == {}


def test_a_worker_reads_each_window_once(tmp_path) -> None:
    path = tmp_path / "w.csv"
    pl.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 5.0], "walltime": [60.0, 60.0], "runtime": [10.0, 20.0], "size": [1, 2]}
    ).write_csv(path)
    power._WINDOWS.clear()
    first, second = power.read_window(path), power.read_window(path)
    assert first.jobs is second.jobs  # read once
    assert first.provenance == second.provenance and first.provenance is not second.provenance
    first.provenance.header["changed"] = True  # a run changing its read does not change the next run's
    assert "changed" not in power.read_window(path).provenance.header
    pl.DataFrame({"job_id": [1], "submit_time": [0.0], "walltime": [60.0], "runtime": [10.0], "size": [1]}).write_csv(
        path
    )
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))  # rewritten: read again
    assert power.read_window(path).jobs.height == 1
    for k in range(power._WINDOWS.size + 2):  # bounded
        other = tmp_path / f"o{k}.csv"
        other.write_text(path.read_text())
        power.read_window(other)
    assert len(power._WINDOWS) == power._WINDOWS.size
    power._WINDOWS.clear()
