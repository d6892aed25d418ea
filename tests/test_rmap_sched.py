"""Paper 004's RMAP policies: the §3.5 / Table 2 worked example exactly, the fair share, and the experiment."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from wattsched.studies.rmap.engine import simulate_rmap
from wattsched.studies.rmap.machine import ConfigTable, JobDetails, normalised_bounds, rmap_cab_details
from wattsched.studies.rmap.policies import RMAPPolicy, decide, fair_share, parse_rmap_policy

# Table 2 (SP-MZ class C): C1 (6×16, 115), C2 (8×12, 65), C3 (8×10, 80)
SPMZ = ConfigTable(
    "sp-mz",
    nodes=np.array([6, 8, 8]),
    cores=np.array([16, 12, 10]),
    cap=np.array([115.0, 65, 80]),
    time=np.array([447.9, 415.3, 439.2]),
    power=np.array([796.4, 783.8, 738.2]),
)
# job A: 6 nodes drawing 1,383.33 W until t = 1,000 s, so that 10 nodes and 750 W are left on 16 nodes
P_CLUSTER = 750.0 + 4150.0 / 3.0
A = ConfigTable(
    "A",
    nodes=np.array([6]),
    cores=np.array([16]),
    cap=np.array([115.0]),
    time=np.array([1000.0]),
    power=np.array([4150.0 / 3.0]),
)
DETAILS = JobDetails([SPMZ, A])
JOBS = pl.DataFrame(
    {"job_id": [1, 2], "submit_time": [0.0, 0.0], "app": ["A", "sp-mz"], "n_req": [6, 6], "t_req": [1000.0, 450.0]}
)


@pytest.mark.parametrize(
    ("name", "config", "turnaround"),
    [
        ("rmap-traditional", (6, 16, 115.0), 1447.9),
        ("rmap-naive", (8, 12, 65.0), 1415.3),
        ("rmap-adaptive-unbounded", (8, 10, 80.0), 439.2),
        ("rmap-adaptive-0", (8, 10, 80.0), 439.2),
    ],
)
def test_the_worked_example_of_section_3_5(name, config, turnaround) -> None:
    policy = parse_rmap_policy(name, "oracle")
    assert fair_share(6, 16, P_CLUSTER) == pytest.approx(800.0)
    jobs = simulate_rmap(JOBS, policy, DETAILS, p_cluster=P_CLUSTER, n_nodes=16).jobs
    b = jobs.filter(pl.col("job_id") == 2).row(0, named=True)
    assert (b["nodes"], b["cores"], b["cap"]) == config
    assert b["turnaround"] == pytest.approx(turnaround)
    assert b["start_time"] == (0.0 if turnaround < 1000 else 1000.0)


def test_decisions_on_the_example_state() -> None:
    # 750 W and 10 nodes free, P_job = 800 W, request 6 nodes × 450 s
    args = (SPMZ, 6, 450.0, 800.0, 750.0, 10, 2133.33)
    assert decide(RMAPPolicy("traditional"), *args) is None  # C1 needs 796.4 W > 750 W
    assert decide(RMAPPolicy("naive"), *args) is None  # C2 needs 783.8 W
    assert decide(RMAPPolicy("adaptive", 0.0), *args) == 2  # C3: 439.2 s ≤ 450 s, now
    assert decide(RMAPPolicy("adaptive", math.inf), *args) == 2
    tight = ConfigTable(
        "x",
        nodes=np.array([8]),
        cores=np.array([10]),
        cap=np.array([80.0]),
        time=np.array([500.0]),
        power=np.array([738.2]),
    )
    assert decide(RMAPPolicy("adaptive", 0.0), tight, 6, 450.0, 800.0, 750.0, 10, 2133.33) is None  # 500 > 450
    assert decide(RMAPPolicy("adaptive", 0.2), tight, 6, 450.0, 800.0, 750.0, 10, 2133.33) == 0  # 500 ≤ 540
    assert decide(RMAPPolicy("adaptive", 0.2), tight, 6, 450.0, 800.0, 750.0, 7, 2133.33) is None  # nodes


def test_fair_share_and_normalised_bounds() -> None:
    assert fair_share(32, 64, 10_000.0) == 5_000.0
    assert fair_share(16, 64, 8_000.0, weight=2.0) == 4_000.0
    assert np.round(normalised_bounds(), 2).tolist() == [0.44, 0.54, 0.68, 0.82, 0.95]
    assert parse_rmap_policy("rmap-adaptive-20").threshold == pytest.approx(0.2)
    assert parse_rmap_policy("rmap-adaptive").data == "model" and parse_rmap_policy("rmap-naive").data == "oracle"
    with pytest.raises(ValueError, match="unknown RMAP policy"):
        parse_rmap_policy("rmap-greedy")


def test_traditional_falls_back_to_the_largest_packed_config_within_the_bound() -> None:
    from wattsched.studies.rmap.policies import traditional_config

    table = ConfigTable(
        "t",
        nodes=np.array([8, 16, 32]),
        cores=np.array([16, 16, 16]),
        cap=np.array([115.0] * 3),
        time=np.array([400.0, 220.0, 130.0]),
        power=np.array([1500.0, 3000.0, 6000.0]),
    )
    assert table.nodes[traditional_config(table, 32, 6500.0)] == 32
    assert table.nodes[traditional_config(table, 32, 5000.0)] == 16


@pytest.fixture(scope="module")
def cab():
    from wattsched.studies.rmap.machine import fit_config_model

    oracle = rmap_cab_details(0)
    model, _ = fit_config_model(oracle, 0.1, seed=0)
    return oracle, model


def test_the_experiment_grid_and_its_report(cab, tmp_path) -> None:
    from wattsched.studies.rmap.experiment import BOUNDS, POLICIES, run_rmap_grid, write_rmap_report
    from wattsched.studies.rmap.results import rmap_summary

    oracle, model = cab
    jobs, decisions, _ = run_rmap_grid(oracle, model)
    runs = jobs.select("trace", "bound", "policy", "data").unique()
    assert runs.height == 4 * len(BOUNDS) * (len(POLICIES) + 3)
    assert (jobs.group_by("trace", "bound", "policy", "data").len()["len"] == 30).all()
    summary = rmap_summary(jobs)
    trad = summary.filter((pl.col("policy") == "rmap-traditional") & pl.col("default_data"))
    assert (trad["normalised_turnaround"] == 1.0).all()
    # allocated power never exceeds the bound (the policies' bookkeeping)
    assert (decisions["allocated_power"] <= decisions["bound"] + 1e-6).all()
    for name in ("rmap-naive", "rmap-adaptive-0", "rmap-adaptive-unbounded"):  # within the fair share
        fair = jobs.filter(pl.col("policy") == name)
        assert (fair["alloc_power"] <= fair["p_job"] + 1e-6).mean() > 0.9, name
    paths = write_rmap_report(jobs, decisions, tmp_path)
    assert any(p.name == "fig14_timeline.png" for p in paths) and (tmp_path / "summary.csv").exists()


def test_the_rmap_command_line(tmp_path) -> None:
    from typer.testing import CliRunner

    from wattsched.cli import app

    result = CliRunner().invoke(app, ["rmap", "grid", "--output", str(tmp_path / "rmap"), "--traces", "large"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rmap" / "report" / "summary.csv").exists()
    assert (tmp_path / "rmap" / "report" / "rmap_model_error_quartiles.png").exists()
    assert "large" in result.output


def test_free_power_does_not_drift_below_the_bound() -> None:
    """Seed 2's random trace 1 at 6,500 W: after many starts and ends the free power was summed incrementally to
    6,499.999… W, so a 64-node job with P_job = 6,500 W never saw ``P_job ≤ P_avail`` and waited for ever."""
    from wattsched.studies.rmap.machine import fit_config_model
    from wattsched.studies.rmap.traces import generate_rmap_trace

    oracle = rmap_cab_details(2)
    model, _ = fit_config_model(oracle, 0.1, seed=2)
    trace = generate_rmap_trace(oracle, "random1", seed=2)
    jobs = simulate_rmap(trace, parse_rmap_policy("rmap-adaptive-0"), oracle, model=model, p_cluster=6500.0).jobs
    assert jobs["end_time"].is_not_nan().all()


def test_adaptive_backfills_within_what_the_reservation_leaves() -> None:
    """The head job H is blocked and reserves 8 nodes and 700 W at 100 s, leaving 300 W beyond it. B's best
    configuration within the free 400 W (8 nodes, 400 W) would run past the reservation without fitting its
    leftovers; Adaptive then offers B the best configuration within those leftovers (4 nodes, 250 W, within t_req)."""

    def table(app, nodes, power, time):
        k = len(nodes)
        return ConfigTable(
            app,
            nodes=np.array(nodes),
            cores=np.full(k, 16),
            cap=np.array([115.0, 95.0][:k]),
            time=np.array(time),
            power=np.array(power),
        )

    details = JobDetails(
        [
            table("A", [8], [600.0], [100.0]),
            table("H", [8], [700.0], [50.0]),
            table("B", [8, 4], [400.0, 250.0], [150.0, 190.0]),
        ]
    )
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3],
            "submit_time": [0.0, 0.0, 0.0],
            "app": ["A", "H", "B"],
            "n_req": [8, 8, 8],
            "t_req": [100.0, 50.0, 200.0],
        }
    )
    out = simulate_rmap(jobs, parse_rmap_policy("rmap-adaptive-0", "oracle"), details, p_cluster=1000.0, n_nodes=16)
    rows = {r["job_id"]: r for r in out.jobs.iter_rows(named=True)}
    assert (rows[3]["start_time"], rows[3]["nodes"], rows[3]["started_by"]) == (0.0, 4, "power-aware")
    assert rows[2]["start_time"] == 100.0  # the reservation holds
