"""``wattsched reproduce 003 --quick``: the hand-made cases match, every synthetic job is accounted for, the report
reads back; and the comparison paths (a case that differs, a downloaded PM100 table) give the verdicts they should."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.reproduce.pm100_cases import CASES, run_case
from wattsched.reproduce.report import read_claims
from wattsched.reproduce.runner import reproduce


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("p003")
    data = tmp_path_factory.mktemp("no-data")  # no PM100 download: C003-02/03 are not checkable
    result = CliRunner().invoke(
        app, ["reproduce", "003", "--quick", "--workers", "1", "--output", str(out), "--data-dir", str(data)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_quick_reproduction_verdicts(quick) -> None:
    claims = {c.id: c for c in read_claims(quick / "claims.json").claims}
    assert claims["C003-01"].verdict == "holds"
    assert claims["C003-01"].ours.text == f"{len(CASES)} of {len(CASES)} spec cases match"
    assert claims["C003-04"].verdict == "holds" and claims["C003-04"].ours.text.startswith("3 of 3 seeds")
    for cid in ("C003-02", "C003-03"):
        assert claims[cid].verdict == "not checkable" and "wattsched data fetch pm100" in claims[cid].note
    assert "keeps" in claims["C003-02"].ours.text  # the labelled stand-in
    assert (quick / "fidelity.png").stat().st_size > 0 and (quick / "outcomes.png").stat().st_size > 0


def test_quick_results_account_for_every_job_and_recover_the_generated_power(quick) -> None:
    results = pl.read_parquet(quick / "results.parquet")
    cases = results.filter(pl.col("kind") == "spec case")
    assert cases.height == len(CASES) and cases["matches"].all()
    builds = results.filter(pl.col("kind") == "synthetic build")
    assert builds["seed"].to_list() == [0, 1, 2]
    stages = ["dataset", "exclusivity: shares a node", "exclusivity: too short", "extraction", "input"]
    assert (builds.select(pl.sum_horizontal(stages)).to_series() == builds["jobs"]).all()
    assert (builds["exclusivity: shares a node"] > 0).all() and (builds["extraction"] > 0).all()
    assert builds["series within float32"].all() and (builds["series max relative error"] < 1e-6).all()
    assert (builds["per-node mean error median %"] < 1.0).all()


def test_a_case_whose_expectation_is_wrong_differs() -> None:
    case = next(c for c in CASES if c.name == "multi-node series")
    wrong = dataclasses.replace(case, expected={1: {"outcome": "dataset", "series": [412.0, 414.0, 417.0]}})
    ok, diffs = run_case(wrong)
    assert not ok and diffs == ["job 1 series: spec [412.0, 414.0, 417.0], ours [412.0, 414.0, 416.0]"]
    shared = next(c for c in CASES if c.name == "two overlapping jobs on one node")
    ok, diffs = run_case(dataclasses.replace(shared, expected={1: {"outcome": "dataset"}}))
    assert not ok and diffs == ["job 1 outcome: spec 'dataset', ours 'exclusivity'"]


def test_a_downloaded_pm100_table_is_compared(tmp_path) -> None:
    (tmp_path / "pm100").mkdir()
    states = ["COMPLETED"] * 60 + ["FAILED"] * 20 + ["CANCELLED"] * 10 + ["TIMEOUT"] * 10
    pl.DataFrame({"job_id": range(100), "job_state": states}).write_parquet(tmp_path / "pm100" / "job_table.parquet")
    run = reproduce("003", tmp_path / "out", quick=True, seeds=(4,), data_dir=tmp_path).run
    claims = {c.id: c for c in run.claims}
    assert claims["C003-02"].verdict == "differs" and claims["C003-02"].value == 100.0
    assert claims["C003-03"].value == [60.0, 20.0, 10.0, 10.0]
    assert claims["C003-03"].verdict == "differs"  # completed 60% vs 77% is outside ±19.25 pp
    assert claims["C003-04"].verdict == "holds"
