"""Paper 002's reproduction: the quick run through the Python API (one seed), its claims.json read back, the
deterministic model-layer claim (C002-15) and the PriorityInc-V threshold option the reproduction chose."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import require_data
from wattsched.reproduce import paper002
from wattsched.reproduce.claims import catalogue
from wattsched.reproduce.report import read_claims
from wattsched.reproduce.runner import reproduce
from wattsched.studies.eamc.dvfs import eamc_p1p2
from wattsched.studies.eamc.energy_model import eamc_appdb
from wattsched.studies.eamc.experiment import grid_runs, run_eamc
from wattsched.studies.eamc.policies import EAMCOptions, build_entries
from wattsched.studies.eamc.workloads import generate_eamc_workload


@pytest.fixture(scope="module")
def data_dir() -> Path:
    return require_data("eamc/en_conf").parents[1]


@pytest.fixture(scope="module")
def quick(data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("repro002")
    return reproduce("002", out, quick=True, seeds=(3,), data_dir=data_dir)


@pytest.mark.slow
def test_quick_reproduction_writes_every_claim(quick) -> None:
    files = quick.files
    claims = read_claims(files["claims"])
    assert [c.id for c in claims.claims] == [c.id for c in catalogue("002")]
    assert all(c.verdict in ("holds", "differs") for c in claims.claims)  # the data are offline: all checkable
    results = quick.run.results
    grid = results.filter(results["setting"] == "grid")
    assert grid.height == 3 * 6 * 2  # mixes × policies × t_weight, one seed
    assert set(results["setting"]) == {"grid", "relative threshold", "load 1.5"}
    names = {p.name for p in quick.run.figures}
    assert {"fig3_vs_base_slurm.png", "fig4_vs_min_runtime.png", "fig5_optimal_partition.png"} <= names
    assert all(p.exists() for p in quick.run.figures)


@pytest.mark.slow
def test_deterministic_claims_hold(quick) -> None:
    by_id = {c.id: c for c in read_claims(quick.files["claims"]).claims}
    assert by_id["C002-15"].verdict == "holds", by_id["C002-15"].ours.text
    # ep.D is never demoted on the public model (docs/eamc.md, EPM): a fact of the model, not of the seed
    assert by_id["C002-12"].verdict == "differs"
    assert "ep.D" not in by_id["C002-12"].ours.text.split("PriorityInc-V's")[0]
    assert "equals PriorityInc in every run" in by_id["C002-12"].ours.text
    # Base Slurm places every job on its optimal partition, so the "others" of C002-13 exclude it
    record = json.loads(quick.files["claims"].read_text())
    c13 = next(c for c in record["claims"] if c["id"] == "C002-13")
    assert 0 < c13["ours"]["spread"]["others"]["mean"] < c13["ours"]["spread"]["EAMC"]["mean"] <= 100


def test_threshold_option_separates_priorityinc_v(data_dir: Path) -> None:
    """Under the reproduction's absolute threshold, PriorityInc-V demotes STREAM's p1 entries (gap 0.47) and
    differs from PriorityInc; under the relative 35% reading nothing is demoted and the two are identical."""
    platform = eamc_p1p2(data_dir)
    appdb = eamc_appdb(data_dir, platform)
    jobs = generate_eamc_workload("W50", 1500, seed=11)
    args = (
        platform,
        appdb,
        jobs["app_id"].to_numpy(),
        jobs["nodes"].to_numpy(),
        jobs["walltime"].to_numpy(),
        jobs["runtime"].to_numpy(),
        jobs["submit_time"].to_numpy(),
    )
    plain, _ = build_entries("eamc-priorityinc", *args)
    absolute, _ = build_entries(
        "eamc-priorityinc-v", *args, options=EAMCOptions(threshold_mode=paper002.THRESHOLD_MODE)
    )
    relative, _ = build_entries("eamc-priorityinc-v", *args, options=EAMCOptions(threshold_mode="relative"))
    assert paper002.THRESHOLD_MODE == "absolute"
    assert np.array_equal(relative.job, plain.job) and np.array_equal(relative.partition, plain.partition)
    assert not np.array_equal(absolute.job, plain.job)
    app = jobs["app_id"].to_numpy()[absolute.job]
    stream_p1 = (app == 8) & (absolute.partition == 0)  # gap 0.47 ≥ 0.35
    sp_mz_p2 = (app == 4) & (absolute.partition == 1)  # gap 0.355 ≥ 0.35
    last_tier = absolute.job.size - int((stream_p1 | sp_mz_p2).sum())
    assert stream_p1.any() and np.flatnonzero(stream_p1).min() >= last_tier
    ran_plain = run_eamc(jobs, platform, appdb, "eamc-priorityinc").jobs
    ran_v = run_eamc(jobs, platform, appdb, "eamc-priorityinc-v", EAMCOptions(threshold_mode="absolute")).jobs
    assert not np.array_equal(ran_plain["start_time"].to_numpy(), ran_v["start_time"].to_numpy())


def test_grid_run_ids_keep_library_defaults() -> None:
    """Options at their library defaults stay out of a run's parameters, so older result folders resume."""
    plain = grid_runs(["W13"], ["base-slurm"], [1.0], [0], 100)
    assert "threshold_mode" not in plain[0] and "load" not in plain[0]
    marked = grid_runs(["W13"], ["base-slurm"], [1.0], [0], 100, threshold_mode="absolute", load=1.5)
    assert marked[0]["threshold_mode"] == "absolute" and marked[0]["load"] == 1.5
    assert marked[0]["id"] != plain[0]["id"]
