"""``wattsched reproduce 004 --quick``: the RMAP grid over 12 samples (4 trace draws on each of seeds 0–2) under
both readings of t_req, its claims (pooled and per seed), the alternative reading and the figures.

Since issue 27 the default t_req is a random recorded configuration at the requested node count
(``random-config``, paper 004 §6) and the packed configuration's time (``packed``) is the alternative; the tests
that counted 3 samples and one reading's rows now count 12 samples and both readings."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import wattsched.reproduce.paper004 as paper004
from wattsched.reproduce.paper004 import EXAMPLE_POLICIES, OTHER_T_REQ, T_REQ, readings, samples, worked_example
from wattsched.reproduce.runner import ReproduceContext, ReproduceError
from wattsched.studies.rmap.machine import rmap_cab_details
from wattsched.studies.rmap.traces import generate_rmap_trace


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


def test_quick_has_at_least_ten_samples_and_several_per_seed(tmp_path) -> None:
    ctx = ReproduceContext("004", tmp_path, quick=True, seeds=(0, 1, 2))
    got = samples(ctx)
    assert len(got) >= 10
    per_seed = {s: sum(d == s for _, d, _ in got) for s in (0, 1, 2)}
    assert min(per_seed.values()) >= 3  # each seed's verdict rests on several trace draws
    assert len({t for _, _, t in got}) == len(got)  # every sample has its own traces


def test_the_grid_is_the_same_on_one_and_on_two_workers(tmp_path, monkeypatch) -> None:
    """Issue 32 runs the samples on the reproduction's workers: gathered in sample order, every table is the one
    the serial loop built (one replicate on two seeds: two samples, one per worker)."""
    monkeypatch.setattr(paper004, "QUICK_REPLICATES", 1)
    grids = []
    for workers in (1, 2):
        ctx = ReproduceContext("004", tmp_path / str(workers), quick=True, seeds=(0, 1), workers=workers)
        grids.append(paper004.run_grid(ctx))
    serial, parallel = grids
    for name in ("jobs", "other", "sparse", "mix", "arrivals"):
        a, b = getattr(serial, name), getattr(parallel, name)
        assert a.height > 0 and a["sample"].unique().sort().to_list() == [0, 1], name
        assert a.equals(b), name


def test_the_t_req_option_picks_the_default_reading(tmp_path) -> None:
    assert (T_REQ, OTHER_T_REQ) == ("random-config", "packed")
    ctx = ReproduceContext("004", tmp_path)
    assert readings(ctx) == ("random-config", "packed")
    if hasattr(ctx, "options"):  # the runner's --set options
        ctx.options = {"t_req": "packed"}
        assert readings(ctx) == ("packed", "random-config")
        ctx.options = {"t_req": "fastest"}
        with pytest.raises(ReproduceError, match="t_req"):
            readings(ctx)


@pytest.mark.parametrize("kind", ["large", "random1"])
def test_the_t_req_readings_differ_in_t_req_alone(kind) -> None:
    """Both readings draw the same jobs and arrivals (the gaps scale with the mean packed time); ``packed`` asks for
    the packed configuration's time, ``random-config`` for the time of one recorded configuration at n_req nodes."""
    details = rmap_cab_details(0)
    packed = generate_rmap_trace(details, kind, seed=3, t_req="packed")
    drawn = generate_rmap_trace(details, kind, seed=3, t_req="random-config")
    same = ["job_id", "submit_time", "app", "n_req"]
    assert packed.select(same).equals(drawn.select(same))
    assert (packed["t_req"] != drawn["t_req"]).any()
    for p, d in zip(packed.iter_rows(named=True), drawn.iter_rows(named=True), strict=True):
        table = details[p["app"]]
        assert p["t_req"] == math.ceil(table.time[table.packed(p["n_req"])] / 10.0 - 1e-9) * 10.0
        at_n = np.ceil(table.time[table.nodes == d["n_req"]] / 10.0 - 1e-9) * 10.0
        assert d["t_req"] in set(at_n.tolist())
    # the packed configuration is the fastest at n_req for most apps: the drawn requests are longer on average
    assert drawn["t_req"].mean() > packed["t_req"].mean()


def test_arrivals_can_scale_with_the_readings_own_mean_t_req() -> None:
    details = rmap_cab_details(0)
    base = generate_rmap_trace(details, "random2", seed=3)
    own = generate_rmap_trace(details, "random2", seed=3, arrival_reference="t_req")
    packed = generate_rmap_trace(details, "random2", seed=3, t_req="packed")
    ratio = own["submit_time"][-1] / base["submit_time"][-1]
    assert ratio == pytest.approx(base["t_req"].mean() / packed["t_req"].mean())
    with pytest.raises(ValueError, match="t_req reading"):
        generate_rmap_trace(details, "large", t_req="fastest")  # type: ignore[arg-type]


@pytest.mark.slow
def test_claims_json_reads_back_and_the_deterministic_claims_hold(quick) -> None:
    from wattsched.reproduce.report import read_claims

    data = read_claims(quick / "claims.json")
    assert data.paper == "004" and data.quick and data.seeds == [0, 1, 2]
    verdicts = {c.id: c.verdict for c in data.claims}
    assert verdicts["C004-01"] == "holds" and verdicts["C004-02"] == "holds"
    assert sum(data.counts.values()) == 13 and data.counts.get("not checkable", 0) == 0
    for c in data.claims:  # every number claim reports its spread over the 12 samples
        assert c.verdict == "holds" or c.note
        for spread in c.ours.spread.values():
            assert spread.n >= 10 and spread.over == "samples"
    text = (quick / "REPORT.md").read_text(encoding="utf-8")
    assert "C004-10" in text and "power-aware backfilling" in text
    # the run uses the calibrated Cab data and sets its agreement with the paper's measurements beside it
    assert "| Cab data | calibrated |" in text
    assert "The Cab data against the paper's published measurements, on the run's data seeds 0, 1, 2" in text


@pytest.mark.slow
def test_per_seed_verdicts_and_both_readings(quick) -> None:
    from wattsched.reproduce.report import read_claims

    data = read_claims(quick / "claims.json")
    for c in data.claims:
        if c.id in ("C004-01", "C004-02"):  # seed-free: the worked example and the platform's numbers
            continue
        assert [s.seed for s in c.per_seed] == [0, 1, 2], c.id
    (alt,) = data.alternatives
    assert alt.name == "t_req = packed"
    moved = {c.id for c in alt.claims}
    assert {"C004-03", "C004-05", "C004-13"} <= moved and not moved & {"C004-01", "C004-02"}
    for c in alt.claims:
        assert [s.seed for s in c.per_seed] == [0, 1, 2]
        for spread in c.ours.spread.values():
            assert spread.n >= 10
    default = {c.id: c.ours.value for c in data.claims}
    assert any(c.ours.value != default[c.id] for c in alt.claims)
    changes = [s.change for s in data.sensitivity]
    assert any("t_req = packed" in s for s in changes) and any("sparser" in s for s in changes)
    text = (quick / "REPORT.md").read_text(encoding="utf-8")
    assert "[M1]" in text and "see note" in text and "[T4] Table 4 in seconds" in text


@pytest.mark.slow
def test_results_and_figures(quick) -> None:
    results = pl.read_parquet(quick / "results.parquet")
    # 12 samples × 4 traces × 5 bounds × (7 policies + 3 with the other data source) under the default reading,
    # and 7 policies under the other reading
    assert results.height == 12 * 4 * 5 * (10 + 7)
    assert set(results["t_req_reading"]) == {"random-config", "packed"}
    trad = results.filter((pl.col("policy") == "rmap-traditional") & pl.col("default_data"))
    assert (trad["vs_trad"] == 1.0).all()
    # only Adaptive starts jobs below their fair share, and unbounded does so most
    assert (results.filter(~pl.col("policy").str.starts_with("rmap-adaptive"))["share_power_aware"] == 0).all()
    for reading in ("random-config", "packed"):
        sub = results.filter(pl.col("default_data") & (pl.col("t_req_reading") == reading))
        by = dict(sub.group_by("policy").agg(pl.col("share_power_aware").mean()).iter_rows())
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
        "table4_seconds",
    ):
        assert f"{stem}.png" in names and f"{stem}.svg" in names
