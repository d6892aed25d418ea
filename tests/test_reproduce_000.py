"""``wattsched reproduce 000 --quick`` itself: paper 000's shape claims (trespass, ranking of breaks,
under-utilisation, time above the cap) hold on the one construction that tests, campaigns and docs share
(requeued windows, the calibrated generator, the reproduction's post-window cap), for seeds drawn fresh on every
run; real ``max`` never trespasses in any instance; claims.json reads back with the verdict rules of issue 27:
per-seed results for every seed-dependent claim, order and numbers judged apart for C000-08/12/14/19, C000-27
judged by overlap, C000-28 a setup check, C000-25/26 stand-ins; the sensitivity table and Figs. 2–3 are written.

The seeds are drawn at random from a range no other test uses (printed on failure), so a pass is not tuned to
one seed set: the orderings must hold by construction of the experiment.
"""

from __future__ import annotations

import json
import random

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.reproduce.claims import catalogue
from wattsched.reproduce.paper000 import QUICK
from wattsched.reproduce.report import read_claims

#: Claims of kind ``order`` that the issue's "Done when" requires on fresh seeds (C000-12 and C000-14 also carry
#: the paper's numbers, judged apart: their ``order`` part must hold).
SHAPE_CLAIMS = ("C000-03", "C000-12", "C000-14", "C000-16")
#: Shape claims that hold on most seeds but not all (docs/reproduce.md, the table over seeds 0–9: C000-11 on 7 of
#: 10, C000-15 on 8): with the seed rule, a fresh set of 3 seeds makes them "unstable" about one run in five or
#: ten. They must never differ, and must hold on at least one of the seeds.
MOSTLY_CLAIMS = ("C000-11", "C000-15")
#: Claims whose order and numbers are judged apart (``parts``).
PARTS_CLAIMS = ("C000-08", "C000-12", "C000-14", "C000-19")
#: Claims not computed per seed (reproduce/paper000_claims.py ``SEED_FREE``).
SEED_FREE = ("C000-25", "C000-26", "C000-27", "C000-28")
SEED = random.SystemRandom().randrange(1_000, 1_000_000)

#: Every test reads the quick reproduction (about 4 minutes on 2 cores).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("reproduce000")
    result = CliRunner().invoke(
        app, ["reproduce", "000", "--quick", "--seed", str(SEED), "--workers", "2", "--output", str(out)]
    )
    assert result.exit_code == 0, f"seed {SEED}: {result.output}"
    return {
        "out": out,
        "claims": {c.id: c for c in read_claims(out / "claims.json").claims},
        "results": pl.read_parquet(out / "results.parquet"),
    }


def test_claims_json_reads_back_with_every_claim(quick_run) -> None:
    claims = quick_run["claims"]
    assert list(claims) == [c.id for c in catalogue("000")]
    raw = json.loads((quick_run["out"] / "claims.json").read_text())
    assert raw  # the file is the schema's, read_claims validated it
    for cid in ("C000-25", "C000-26"):  # Marconi100 2022 power is not offline: ours shown, not a verdict
        assert claims[cid].verdict == "not checkable" and "stand-in" in claims[cid].note
        assert claims[cid].ours.stand_in and claims[cid].ours.text.startswith(("stand-in: history", "stand-in: ml"))
    assert claims["C000-28"].kind == "setup"
    assert claims["C000-28"].verdict == "holds" and "1,320" in claims["C000-28"].ours.text


def test_every_seed_dependent_claim_has_a_result_per_seed(quick_run) -> None:
    seeds = sorted(quick_run["results"]["seed"].unique().to_list())
    assert len(seeds) == 3
    for cid, claim in quick_run["claims"].items():
        got = sorted(s.seed for s in claim.per_seed)
        if cid in SEED_FREE:
            assert got == [], cid
        else:
            assert got == seeds, f"{cid}: per-seed results for {got}, seeds {seeds}"
            if claim.verdict == "holds":  # the seed rule: at least two thirds of the seeds hold
                assert sum(s.verdict == "holds" for s in claim.per_seed) >= 2, f"seed {SEED}: {cid}"


@pytest.mark.parametrize("claim_id", PARTS_CLAIMS)
def test_order_and_numbers_are_judged_apart(quick_run, claim_id) -> None:
    claim = quick_run["claims"][claim_id]
    assert set(claim.parts) == {"order", "numbers"}, claim_id
    # the claim holds only if both parts hold, and the whole claim holds on two thirds of the seeds too
    if claim.verdict == "holds":
        assert all(v == "holds" for v in claim.parts.values())
        assert sum(s.verdict == "holds" for s in claim.per_seed) >= 2
    elif all(v == "holds" for v in claim.parts.values()):
        assert claim.verdict == "unstable" and sum(s.verdict == "holds" for s in claim.per_seed) < 2
    assert all(set(s.parts) == {"order", "numbers"} for s in claim.per_seed)


def test_c000_27_is_judged_by_overlap(quick_run) -> None:
    claim = quick_run["claims"]["C000-27"]
    assert set(claim.parts) == {"mean", "max", "std"}  # one overlap per metric, history against each ML method
    assert "stand-in" in claim.note
    for metric, verdict in claim.parts.items():
        spreads = [s for k, s in claim.ours.spread.items() if k.endswith(f" {metric}")]
        assert len(spreads) >= 2, f"{metric}: {list(claim.ours.spread)}"
        overlap = max(s.min for s in spreads) <= min(s.max for s in spreads)
        assert verdict == ("holds" if overlap else "differs"), f"seed {SEED}: {metric} {claim.ours.text}"


def test_sensitivity_rows_and_predictor_figures(quick_run) -> None:
    raw = json.loads((quick_run["out"] / "claims.json").read_text())
    rows = raw["sensitivity"]
    assert {r["claim"] for r in rows} >= {"C000-02", "C000-08", "C000-12", "C000-14"}
    assert all(r["default"] and r["variant"] and r["effect"] for r in rows)
    for stem in ("fig2_power_distributions", "fig3_prediction_mae"):
        assert (quick_run["out"] / "figures" / f"{stem}.png").exists()
        assert (quick_run["out"] / "figures" / f"{stem}.svg").exists()
    assert "fig2_power_distributions.png" in (quick_run["out"] / "REPORT.md").read_text()


@pytest.mark.parametrize("claim_id", SHAPE_CLAIMS)
def test_shape_claims_hold_on_fresh_seeds(quick_run, claim_id) -> None:
    claim = quick_run["claims"][claim_id]
    verdict = claim.parts.get("order", claim.verdict)
    assert verdict == "holds", f"seed {SEED}: {claim_id} {claim.ours.text} — {claim.note}"


@pytest.mark.parametrize("claim_id", MOSTLY_CLAIMS)
def test_mostly_holding_claims_never_differ_on_fresh_seeds(quick_run, claim_id) -> None:
    claim = quick_run["claims"][claim_id]
    assert claim.verdict in ("holds", "unstable"), f"seed {SEED}: {claim_id} {claim.ours.text} — {claim.note}"
    assert any(s.verdict == "holds" for s in claim.per_seed), f"seed {SEED}: {claim_id} holds on no seed"


def test_real_max_never_trespasses_in_any_instance(quick_run) -> None:
    runs = quick_run["results"].filter(
        (pl.col("kind") == "run") & (pl.col("check") == "max") & (pl.col("source") == "real")
    )
    assert runs.height == 3 * QUICK.windows * 4  # 3 seeds × windows × 4 caps (estimators campaign)
    assert not runs["p_trespass"].any(), f"seed {SEED}: {runs.filter(pl.col('p_trespass'))['workload'].to_list()}"
    assert quick_run["claims"]["C000-03"].ours.text.startswith(f"0 of {runs.height} instances")


def test_every_window_is_built_by_requeue_and_runs_have_the_paper_grid(quick_run) -> None:
    res = quick_run["results"]
    assert res.filter(pl.col("kind") == "run")["prestarted"].sum() == 0  # requeue: nothing starts unchecked
    est = res.filter((pl.col("experiment") == "estimators") & (pl.col("kind") == "run"))
    assert est.select("check", "source").unique().height == 11
    assert sorted(est["cap"].unique().to_list()) == [0.4, 0.5, 0.6, 0.7]
    pol = res.filter((pl.col("experiment") == "policies") & (pl.col("kind") == "run"))
    assert sorted(pol["policy"].unique().to_list()) == ["easy-pc", "easy-saf-pc", "knapsack-stretch", "knapsack-wait"]
    assert (quick_run["out"] / "campaign.toml").exists() and (quick_run["out"] / "REPORT.md").exists()
