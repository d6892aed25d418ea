"""``wattsched reproduce 004 --quick``: the RMAP grid over three samples, its claims and figures."""

from __future__ import annotations

import polars as pl
import pytest

from wattsched.reproduce.paper004 import EXAMPLE_POLICIES, worked_example


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    from typer.testing import CliRunner

    from wattsched.cli import app

    out = tmp_path_factory.mktemp("r004")
    result = CliRunner().invoke(app, ["reproduce", "004", "--quick", "--output", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_the_worked_example_through_the_policies() -> None:
    got = worked_example()
    assert list(got) == list(EXAMPLE_POLICIES)
    assert [cfg for cfg, _, _ in got.values()] == ["C1", "C2", "C3", "C3"]
    assert [start for _, start, _ in got.values()] == [1000.0, 1000.0, 0.0, 0.0]
    assert [round(tt, 1) for _, _, tt in got.values()] == [1447.9, 1415.3, 439.2, 439.2]


@pytest.mark.slow
def test_claims_json_reads_back_and_the_deterministic_claims_hold(quick) -> None:
    from wattsched.reproduce.report import read_claims

    data = read_claims(quick / "claims.json")
    assert data.paper == "004" and data.quick and data.seeds == [0, 1, 2]
    verdicts = {c.id: c.verdict for c in data.claims}
    assert verdicts["C004-01"] == "holds" and verdicts["C004-02"] == "holds"
    assert sum(data.counts.values()) == 13 and data.counts.get("not checkable", 0) == 0
    for c in data.claims:  # every number claim reports its spread over the three samples
        assert c.verdict == "holds" or c.note
        for spread in c.ours.spread.values():
            assert spread.n == 3 and spread.over == "samples"
    text = (quick / "REPORT.md").read_text(encoding="utf-8")
    assert "C004-10" in text and "power-aware backfilling" in text
    # the run uses the calibrated Cab data and sets its agreement with the paper's measurements beside it
    assert "| Cab data | calibrated |" in text
    assert "The Cab data against the paper's published measurements" in text


@pytest.mark.slow
def test_results_and_figures(quick) -> None:
    results = pl.read_parquet(quick / "results.parquet")
    # 3 samples × 4 traces × 5 bounds × (7 policies + 3 with the other data source)
    assert results.height == 3 * 4 * 5 * 10
    trad = results.filter((pl.col("policy") == "rmap-traditional") & pl.col("default_data"))
    assert (trad["vs_trad"] == 1.0).all()
    # only Adaptive starts jobs below their fair share, and unbounded does so most
    assert (results.filter(~pl.col("policy").str.starts_with("rmap-adaptive"))["share_power_aware"] == 0).all()
    share = results.filter(pl.col("default_data")).group_by("policy").agg(pl.col("share_power_aware").mean())
    by = dict(share.iter_rows())
    assert by["rmap-adaptive-unbounded"] > by["rmap-adaptive-20"] >= by["rmap-adaptive-0"]
    names = {p.name for p in (quick / "figures").iterdir()}
    for stem in (
        "fig08_model_vs_oracle",
        "fig09_10_traces",
        "fig11_thresholds",
        "fig12_13_large",
        "fig14_timeline",
        "fig15_random2",
        "rmap_model_error_quartiles",
        "rmap_cab_calibration",
    ):
        assert f"{stem}.png" in names
