"""The verdict rules of docs/reproduce.md ("Verdicts"), each on small hand-made inputs: the claim's own tolerance,
the seed rule (holds on 2 of 3 seeds, flips, differs), parts, overlap, setup claims counted apart, stand-ins, shared
notes, and the claims.json schema 2 round trip with the paper-vs-ours figure.

The claims are a hand-made catalogue (``fake``), so these tests do not move when a paper's catalogue does."""

from __future__ import annotations

import json

import polars as pl
import pytest

from wattsched.report.claims_figure import figure_rows
from wattsched.reproduce import claims as claims_module
from wattsched.reproduce.claims import (
    Claim,
    Spread,
    Tolerance,
    check_number,
    check_order,
    check_overlap,
    check_parts,
    check_setup,
    judge_seeds,
    not_checkable,
    seed_rule,
)
from wattsched.reproduce.report import read_claims, share_notes, verdict_counts, write_report
from wattsched.reproduce.runner import Alternative, PaperRun, ReproduceContext, Sensitivity

TOL = Tolerance(rel=0.1, abs=1.0, basis="stated: a test band")


def _claim(cid: str, kind: str, **kw) -> Claim:
    return Claim(cid, "003", f"claim {cid}", "paper value", kind, "§0", **kw)


FAKE = (
    _claim("C003-01", "number", target=(50.0,), unit="%", tolerance=TOL),
    _claim("C003-02", "order", target=(10.0, 5.0), labels=("a", "b"), unit="%", tolerance=TOL),
    _claim("C003-03", "setup"),
    _claim("C003-04", "data", target=(100.0,), unit="W"),
)


@pytest.fixture()
def fake(monkeypatch):
    """Paper 003's catalogue replaced by four hand-made claims (one per rule)."""
    monkeypatch.setattr(claims_module, "catalogue", lambda paper: FAKE)
    return FAKE


def test_the_band_is_the_claims_own_tolerance(fake) -> None:
    assert FAKE[0].band(50.0) == pytest.approx(5.0)  # 10% of 50 beats the 1 pp floor
    assert FAKE[0].band(5.0) == pytest.approx(1.0)
    assert check_number("C003-01", Spread.of([54.9])).verdict == "holds"
    off = check_number("C003-01", Spread.of([55.2]))
    assert off.verdict == "differs" and "band ±5.0" in off.note
    assert off.record()["tolerance"] == {"rel": 0.1, "abs": 1.0, "basis": "stated: a test band"}


def test_a_catalogue_number_without_a_tolerance_is_refused() -> None:
    with pytest.raises(ValueError, match="needs its own tolerance"):
        claims_module._tolerance({"id": "C009-01", "kind": "number", "target": 3.0})
    with pytest.raises(ValueError, match="non-empty basis"):
        claims_module._tolerance({"id": "C009-01", "kind": "number", "tolerance": {"rel": 0.1, "basis": " "}})
    assert claims_module._tolerance({"id": "C009-02", "kind": "order"}) is None


@pytest.mark.parametrize(
    ("pooled", "seeds", "expected"),
    [
        ("holds", ["holds", "holds", "differs"], "holds"),  # 2 of 3: two thirds
        ("holds", ["holds", "differs", "differs"], "unstable"),  # holds on the mean, fails on most seeds
        ("differs", ["holds", "differs", "differs"], "differs"),  # a third hold at most
        ("differs", ["holds", "holds", "differs"], "unstable"),
        ("differs", ["holds", "holds", "holds"], "unstable"),  # the pooled value disagrees with every seed
        ("holds", [], "holds"),  # judged on one seed (or none): the pooled verdict
        ("not checkable", ["holds"], "not checkable"),
        ("holds", ["holds"] * 6 + ["differs"] * 4, "unstable"),  # 6 of 10 < two thirds
        ("holds", ["holds"] * 7 + ["differs"] * 3, "holds"),
    ],
)
def test_the_seed_rule(pooled, seeds, expected) -> None:
    assert seed_rule(pooled, seeds) == expected


def test_judge_seeds_records_each_seed_and_says_why(fake) -> None:
    pooled = [check_number("C003-01", Spread.of([48.0, 51.0, 58.0]))]  # mean 52.3: holds
    per_seed = {
        s: [check_number("C003-01", Spread.of([v]))] for s, v in zip((0, 1, 2), (48.0, 51.0, 58.0), strict=True)
    }
    (r,) = judge_seeds(pooled, per_seed)
    assert r.verdict == "holds"  # 2 of 3 seeds inside ±5
    assert [(s.seed, s.value, s.verdict) for s in r.per_seed] == [
        (0, 48.0, "holds"),
        (1, 51.0, "holds"),
        (2, 58.0, "differs"),
    ]
    assert "holds on 2 of 3 seeds" in r.note
    flipped = {s: [check_number("C003-01", Spread.of([v]))] for s, v in zip((0, 1, 2), (44.0, 51.0, 58.0), strict=True)}
    (u,) = judge_seeds([check_number("C003-01", Spread.of([44.0, 51.0, 58.0]))], flipped)
    assert u.verdict == "unstable" and "holds on 1 of 3 seeds" in u.note
    assert u.record()["per_seed"][0] == {"seed": 0, "value": 44.0, "verdict": "differs"}


def _parts(order_ok: bool, a: float, b: float):
    return check_parts(
        "C003-02",
        order=check_order("C003-02", order_ok, "a > b" if order_ok else "a < b", explain="a is below b"),
        numbers=check_number("C003-02", {"a": Spread.of([a]), "b": Spread.of([b])}),
    )


def test_parts_judge_order_and_numbers_apart(fake) -> None:
    both = _parts(True, 10.5, 5.0)
    assert both.verdict == "holds" and both.parts == {"order": "holds", "numbers": "holds"}
    numbers_off = _parts(True, 20.0, 5.0)  # the order holds, the numbers do not
    assert numbers_off.verdict == "differs" and numbers_off.parts == {"order": "holds", "numbers": "differs"}
    assert numbers_off.record()["parts"] == {"order": "holds", "numbers": "differs"}
    # per part, the seed rule: the order holds on every seed, the numbers on 1 of 3 seeds only
    per_seed = {0: [_parts(True, 10.0, 5.0)], 1: [_parts(True, 30.0, 5.0)], 2: [_parts(True, 30.0, 5.0)]}
    (r,) = judge_seeds([_parts(True, 10.0, 5.0)], per_seed)
    assert r.parts == {"order": "holds", "numbers": "unstable"} and r.verdict == "unstable"
    # each part holds on 2 of 3 seeds, but on different seeds: the whole claim holds on 1 of 3, so it cannot hold
    mixed = {0: [_parts(True, 10.0, 5.0)], 1: [_parts(False, 10.0, 5.0)], 2: [_parts(True, 30.0, 5.0)]}
    (m,) = judge_seeds([_parts(True, 10.0, 5.0)], mixed)
    assert m.parts == {"order": "holds", "numbers": "holds"} and m.verdict == "unstable"


def test_indistinguishable_is_judged_by_overlap(fake) -> None:
    same = check_overlap("C003-02", {"history": Spread.of([170.0, 175.0]), "ml": Spread.of([172.0, 180.0])})
    assert same.verdict == "holds"  # a strict order of the means (172.5 < 176) decides nothing
    apart = check_overlap("C003-02", {"history": Spread.of([170.0, 171.0]), "ml": Spread.of([172.0, 180.0])})
    assert apart.verdict == "differs" and "do not overlap" in apart.note


def test_setup_claims_are_counted_apart_and_stand_ins_are_not_judged(fake) -> None:
    results = [
        check_number("C003-01", Spread.of([50.0])),
        check_order("C003-02", False, "a < b", explain="measured"),
        check_setup("C003-03", True, "the input table matches"),
        not_checkable("C003-04", "the paper's trace is not public", stand_in=Spread.of([93.0, 97.0])),
    ]
    counts, setup = verdict_counts(results)
    assert counts == {"holds": 1, "differs": 1, "unstable": 0, "not checkable": 1}
    assert setup == {"holds": 1}
    stand_in = results[3].record()
    assert stand_in["ours"]["stand_in"] and stand_in["ours"]["text"].startswith("stand-in: 95.0 W")
    with pytest.raises(ValueError, match="not a setup claim"):
        check_setup("C003-01", True, "x")
    (judged,) = judge_seeds([results[3]], {0: [results[3]]})
    assert judged.verdict == "not checkable"


def test_a_long_note_shared_by_claims_is_written_once() -> None:
    long = "the mechanism " + "x" * 200
    records = [{"note": f"first; {long}"}, {"note": long}, {"note": "short; short"}]
    shared = share_notes(records)
    assert shared == {"N1": long}
    assert records[0]["note"] == "first; see note [N1]" and records[1]["note"] == "see note [N1]"
    assert records[2]["note"] == "short; short"  # short segments stay where they are


def test_schema_2_round_trip_with_alternatives_sensitivity_and_figure(fake, tmp_path) -> None:
    per_seed = {s: [check_number("C003-01", Spread.of([v]))] for s, v in ((0, 49.0), (1, 52.0), (2, 60.0))}
    results = [
        check_number("C003-01", Spread.of([49.0, 52.0, 60.0])),
        _parts(True, 10.0, 5.0),
        check_setup("C003-03", False, "one row differs", note="row 3: 81.44 s"),
        not_checkable("C003-04", "not public", stand_in=Spread.of([90.0])),
    ]
    alt = Alternative("packed", "the other reading", [check_number("C003-01", Spread.of([40.0, 41.0]))])
    sens = Sensitivity("C003-01", "no requeue", "53.7%", "48.0%", "−5.7 pp")
    run = PaperRun(pl.DataFrame({"seed": [0]}), results, per_seed=per_seed, alternatives=[alt], sensitivity=[sens])
    from wattsched.reproduce.claims import judge_seeds as judge

    run.claims = judge(run.claims, run.per_seed)
    files = write_report(ReproduceContext("003", tmp_path, quick=True, seeds=(0, 1, 2)), run, seconds=2.0)
    data = read_claims(files["claims"])
    assert data.schema_version == 2
    assert data.counts == {"holds": 2, "differs": 0, "unstable": 0, "not checkable": 1}
    assert data.setup == {"differs": 1}
    assert [s.seed for s in data.claims[0].per_seed] == [0, 1, 2]
    assert data.alternatives[0].name == "packed" and data.sensitivity[0].effect == "−5.7 pp"
    md = files["report"].read_text()
    assert "## Setup checks (not results)" in md and "## Under another reading: packed" in md
    assert "## Sensitivity" in md and "2/3: 0✓ 1✓ 2✗" in md and "(stated: a test band)" in md
    judged, stand_ins = figure_rows(json.loads(files["claims"].read_text()))
    assert [(r["id"], r["label"]) for r in judged] == [("C003-01", ""), ("C003-02", "a"), ("C003-02", "b")]
    assert judged[0]["seeds"] == [49.0, 52.0, 60.0] and judged[0]["band"] == pytest.approx(5.0)
    assert [r["id"] for r in stand_ins] == ["C003-04"]
    assert files["paper_vs_ours"].exists() and files["paper_vs_ours"].suffix == ".png"
    # counts that are not those of the claims are refused on reading
    broken = json.loads(files["claims"].read_text())
    broken["counts"]["holds"] = 3
    files["claims"].write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="not those of its claims"):
        read_claims(files["claims"])


def test_a_band_per_label(monkeypatch) -> None:
    tol = claims_module._tolerance(
        {"id": "C009-01", "kind": "number", "target": [10.0, 50.0], "tolerance": {"abs": [1.0, 8.0], "basis": "x"}}
    )
    assert tol is not None and tol.band(10.0, 0) == 1.0 and tol.band(50.0, 1) == 8.0
    assert tol.as_json()["abs"] == [1.0, 8.0]
    with pytest.raises(ValueError, match="2 values for 3 label"):
        claims_module._tolerance(
            {"id": "C009-01", "kind": "number", "target": [1.0, 2.0, 3.0], "tolerance": {"abs": [1, 2], "basis": "x"}}
        )
    fake = (_claim("C003-01", "number", target=(10.0, 50.0), labels=("a", "b"), unit="%", tolerance=tol),)
    monkeypatch.setattr(claims_module, "catalogue", lambda paper: fake)
    r = check_number("C003-01", {"a": Spread.of([12.0]), "b": Spread.of([57.0])})
    assert r.verdict == "differs" and "a: +2.0 pp" in r.note and "b:" not in r.note  # b's 7 pp is inside its 8


def test_an_overlap_of_single_values_cannot_tell(fake) -> None:
    single = check_overlap("C003-02", {"history": Spread.of([170.0]), "ml": Spread.of([172.0])})
    assert single.verdict == "unstable" and "one value each" in single.note
