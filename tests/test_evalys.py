"""evalys / Batsim ``jobs.csv`` output: a concrete node allocation that is valid for every schedule."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app
from wattsched.engine.simulate import simulate
from wattsched.metrics.allocation import (
    EVALYS_COLUMNS,
    allocate_nodes,
    evalys_jobs,
    interval_set,
    parse_interval_set,
)

runner = CliRunner()


def assert_valid(schedule: pl.DataFrame, nodes: list[np.ndarray], machine_size: int) -> None:
    """Each job has exactly `size` distinct node ids in range, and no node is held by two jobs at once: an
    independent sweep over end (before start at equal times) and start events, holding an owner per node."""
    start = schedule["start_time"].to_numpy()
    end = schedule["end_time"].to_numpy()
    size = schedule["size"].to_numpy()
    for k, ids in enumerate(nodes):
        assert ids.size == size[k] and np.unique(ids).size == ids.size
        assert ids.min() >= 0 and ids.max() < machine_size
    ran = np.flatnonzero(end > start)  # zero-length runs hold no node over any time
    events = sorted([(end[k], 0, k) for k in ran] + [(start[k], 1, k) for k in ran])
    owner = np.full(machine_size, -1)
    for t, is_start, k in events:
        if is_start:
            assert (owner[nodes[k]] == -1).all(), f"job row {k} gets a busy node at {t}"
            owner[nodes[k]] = k
        else:
            owner[nodes[k]] = -1


def test_interval_set_syntax() -> None:
    ids = np.array([0, 1, 2, 3, 8, 10, 11])
    assert interval_set(ids) == "0-3 8 10-11"
    assert parse_interval_set("0-3 8 10-11").tolist() == ids.tolist()
    assert interval_set(np.array([5])) == "5"
    assert interval_set(np.array([], dtype=np.int64)) == ""


def test_first_fit_prefers_a_contiguous_block() -> None:
    # a holds 0-1 and b 2-3; a ends at 10 and c (2 nodes) takes them back; at 20 b ends, d (3 nodes) takes the
    # lowest contiguous block 2-4
    schedule = pl.DataFrame(
        {"start_time": [0.0, 0.0, 10.0, 20.0], "end_time": [10.0, 20.0, 30.0, 25.0], "size": [2, 2, 2, 3]}
    )
    nodes = allocate_nodes(schedule, 6)
    assert [interval_set(x) for x in nodes] == ["0-1", "2-3", "0-1", "2-4"]


def test_the_lowest_free_nodes_when_no_block_fits() -> None:
    # four one-node jobs; the ones on nodes 1 and 3 end at 5: a two-node job then gets the gaps 1 and 3
    schedule = pl.DataFrame(
        {"start_time": [0.0, 0.0, 0.0, 0.0, 5.0], "end_time": [10.0, 5.0, 10.0, 5.0, 9.0], "size": [1, 1, 1, 1, 2]}
    )
    assert [interval_set(x) for x in allocate_nodes(schedule, 4)] == ["0", "1", "2", "3", "1 3"]


@st.composite
def workloads(draw: st.DrawFn) -> tuple[pl.DataFrame, int]:
    machine = draw(st.integers(1, 24))
    n = draw(st.integers(1, 40))
    submit = np.cumsum(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)))
    size = draw(st.lists(st.integers(1, machine), min_size=n, max_size=n))
    runtime = draw(st.lists(st.integers(0, 200), min_size=n, max_size=n))
    walltime = [r + draw(st.integers(-5, 100)) for r in runtime]
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_time": submit.astype(float),
            "size": size,
            "runtime": [float(r) for r in runtime],
            "walltime": [float(max(w, 1)) for w in walltime],
        }
    )
    return jobs, machine


@settings(max_examples=100, deadline=None)
@given(workloads(), st.sampled_from(["fcfs", "easy", "conservative", "easy-sjf"]))
def test_allocation_is_valid_for_any_schedule(workload: tuple[pl.DataFrame, int], policy: str) -> None:
    jobs, machine = workload
    schedule = simulate(jobs, policy, machine).schedule
    assert_valid(schedule, allocate_nodes(schedule, machine), machine)
    table = evalys_jobs(schedule, machine)
    assert table.columns == list(EVALYS_COLUMNS)
    parsed = [parse_interval_set(x) for x in table["allocated_resources"]]
    assert_valid(schedule, parsed, machine)


def test_a_schedule_over_the_machine_is_refused() -> None:
    schedule = pl.DataFrame({"start_time": [0.0, 1.0], "end_time": [5.0, 6.0], "size": [3, 2]})
    with pytest.raises(ValueError, match="more than 4 nodes at time 1"):
        allocate_nodes(schedule, 4)


@pytest.mark.data
def test_simulate_format_evalys_on_a_real_trace(tmp_path) -> None:
    trace = require_data("swf/KTH-SP2/log.swf")
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["simulate", "--workload", str(trace), "--policy", "easy", "--output", str(out), "--format", "evalys"]
    )
    assert result.exit_code == 0, result.output
    jobs = pl.read_csv(out / "jobs.csv", schema_overrides={"allocated_resources": pl.Utf8})
    assert jobs.columns == list(EVALYS_COLUMNS)
    assert (out / "timeline.csv").is_file() and (out / "rejects.csv").is_file()
    assert not (out / "jobs.parquet").exists()
    canonical = jobs.rename(
        {
            "starting_time": "start_time",
            "finish_time": "end_time",
            "requested_number_of_resources": "size",
        }
    )
    nodes = [parse_interval_set(x) for x in jobs["allocated_resources"].fill_null("")]
    machine = int(pl.read_json(out / "summary.json")["run"].struct.field("machine_size")[0])
    assert_valid(canonical, nodes, machine)
    # evalys's own identities: execution = finish − start, waiting = start − submission, stretch = turnaround / exec
    assert (jobs["execution_time"] - (jobs["finish_time"] - jobs["starting_time"])).abs().max() == 0
    assert (jobs["waiting_time"] - (jobs["starting_time"] - jobs["submission_time"])).abs().max() == 0
    ran = jobs.filter(pl.col("execution_time") > 0)
    assert (ran["stretch"] - ran["turnaround_time"] / ran["execution_time"]).abs().max() < 1e-9
    assert set(jobs["success"].unique()) <= {0, 1}
    assert (jobs.filter(pl.col("success") == 0)["final_state"] == "COMPLETED_WALLTIME_REACHED").all()


@pytest.mark.data
def test_evalys_itself_reads_the_jobs_csv_and_finds_the_same_utilisation(tmp_path) -> None:
    # the output is for evalys: evalys parses it (interval sets included) and its utilisation agrees with ours
    from evalys.jobset import JobSet

    trace = require_data("swf/KTH-SP2/log.swf")
    out = tmp_path / "run"
    args = ["simulate", "--workload", str(trace), "--policy", "easy", "--output", str(out), "--format", "evalys"]
    assert runner.invoke(app, args).exit_code == 0
    js = JobSet.from_csv(str(out / "jobs.csv"))
    jobs = pl.read_csv(out / "jobs.csv", schema_overrides={"allocated_resources": pl.Utf8})
    assert len(js.df) == jobs.height
    assert sum(len(p) for p in js.df["allocated_resources"]) == jobs["requested_number_of_resources"].sum()
    # evalys's busy resources over time, integrated, is the work of the schedule (node-seconds)
    area = float(js.utilisation["area"].sum())  # evalys: load × duration of each step
    work = float((jobs["execution_time"] * jobs["requested_number_of_resources"]).sum())
    assert area == pytest.approx(work, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 2000), min_size=1, max_size=80))
def test_interval_sets_agree_with_procset(ids: set[int]) -> None:
    """Differential: our interval-set writer and reader against procset, the library evalys uses."""
    from procset import ProcSet

    nodes = np.asarray(sorted(ids), dtype=np.int64)
    text = interval_set(nodes)
    assert text == str(ProcSet(*nodes.tolist()))
    assert parse_interval_set(text).tolist() == list(ProcSet.from_str(text))
