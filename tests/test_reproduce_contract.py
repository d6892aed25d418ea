"""The reproduction contract: the claim catalogue matches the claims list, verdicts follow their rules, and the report
files are written and read back with their schema."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from conftest import SHARED_DATA
from wattsched.reproduce.claims import (
    PAPERS,
    Spread,
    catalogue,
    check_exact,
    check_number,
    check_order,
    claim,
    not_checkable,
)
from wattsched.reproduce.report import read_claims, write_report
from wattsched.reproduce.runner import PaperRun, ReproduceContext, ReproduceError, check_complete

CLAIMS_MD = SHARED_DATA.parent / "spec" / "claims.md"
#: The claims the catalogue reclassifies as setup checks (docs/reproduce.md, "Verdicts"): C000-28 checks a
#: constant of the full setting, C002-11 repeats C002-02/03 on the same cells, C002-15 checks the input table.
SETUP_CLAIMS = {"C000-28", "C002-11", "C002-15"}


def _spec_rows() -> dict[str, tuple[str, str, str]]:
    rows = {}
    for line in CLAIMS_MD.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| (C00\d-\d\d) \| (.*?) \| (.*?) \| (\w+) \|", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return rows


def test_catalogue_matches_the_spec_claims() -> None:
    if not CLAIMS_MD.exists():
        from conftest import require_data

        require_data("../spec/claims.md")
    spec = _spec_rows()
    ours = {c.id: c for p in PAPERS for c in catalogue(p)}
    assert sorted(ours) == sorted(spec)
    for cid, (text, value, kind) in spec.items():
        c = ours[cid]
        assert (c.claim, c.paper_value) == (text.replace("\\|", "|"), value), cid
        # a claim that checks a configuration, an input or another claim is recorded as "setup" (issue 27)
        assert c.kind == kind or (c.kind == "setup" and cid in SETUP_CLAIMS), cid
        assert len(c.labels) in (0, len(c.target)), cid


def test_number_holds_inside_the_band_and_differs_outside() -> None:
    ok = check_number("C000-01", Spread.of([70.0, 73.0, 76.0]))
    assert ok.verdict == "holds" and ok.value == pytest.approx(73.0)
    assert ok.ours_text == "73.0% (70.0–76.0, 3 seeds)"
    far = check_number("C000-01", Spread.of([30.0, 32.0]), explain="the window is short")
    assert far.verdict == "differs"
    assert "-43.0 pp from the paper's 74" in far.note and "the window is short" in far.note
    multi = check_number("C000-10", {"average": Spread.of([11.5]), "median": Spread.of([30.0])})
    assert multi.verdict == "differs" and "median" in multi.note and "average: 11.5%" in multi.ours_text
    with pytest.raises(ValueError, match="2 value"):
        check_number("C000-10", Spread.of([11.0]))


def test_order_exact_and_not_checkable_need_reasons() -> None:
    assert check_order("C000-03", True, "0 of 12 instances").verdict == "holds"
    with pytest.raises(ValueError, match="measured difference"):
        check_order("C000-03", False, "2 of 12 instances")
    assert check_order("C000-03", False, "2 of 12", explain="breaks of 1%").verdict == "differs"
    assert check_exact("C004-02", True, "14,720 W").verdict == "holds"
    with pytest.raises(ValueError, match="needs a note"):
        check_exact("C004-02", False, "14,000 W")
    nc = not_checkable("C000-25", "needs Marconi100 2022 power")
    assert nc.verdict == "not checkable" and nc.record()["note"]


def test_report_files_round_trip(tmp_path) -> None:
    results = [
        check_order("C003-01", True, "12 of 12 cases"),
        not_checkable("C003-02", "needs the Marconi100 job table and telemetry"),
        check_number("C003-03", {str(k): Spread.of([v]) for k, v in enumerate([77.0, 14.0, 5.0, 4.0])}),
        check_exact("C003-04", True, "1,000 of 1,000 jobs"),
    ]
    check_complete("003", results)
    fig = tmp_path / "fig.png"
    fig.write_bytes(b"\x89PNG\r\n")
    run = PaperRun(pl.DataFrame({"seed": [0], "x": [1.0]}), results, [fig], {"jobs": 1000}, ["a note"])
    files = write_report(ReproduceContext("003", tmp_path, quick=True, seeds=(0,)), run, seconds=1.5)
    data = read_claims(files["claims"])
    assert data.counts == {"holds": 3, "differs": 0, "unstable": 0, "not checkable": 1}
    assert data.schema_version == 2 and data.setup == {}
    assert (tmp_path / "paper_vs_ours.png").exists() and (tmp_path / "paper_vs_ours.svg").exists()
    assert [c.id for c in data.claims] == ["C003-01", "C003-02", "C003-03", "C003-04"]
    assert pl.read_parquet(files["results"]).height == 1
    md = files["report"].read_text()
    assert "3 hold, 0 differ, 0 unstable, 1 not checkable" in md and "![fig.png](fig.png)" in md and "a note" in md
    assert "![paper_vs_ours.png](paper_vs_ours.png)" in md
    assert "<img src='fig.png'" in files["html"].read_text()
    broken = json.loads(files["claims"].read_text())
    broken["claims"].pop()
    files["claims"].write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="do not match"):
        read_claims(files["claims"])


def test_incomplete_reproduction_is_refused() -> None:
    with pytest.raises(ReproduceError, match="missing"):
        check_complete("003", [check_order("C003-01", True, "ok")])


def test_every_claim_has_a_target_where_it_is_a_number() -> None:
    for p in PAPERS:
        for c in catalogue(p):
            if c.kind == "number":
                assert c.target, c.id
                assert c.tolerance is not None and c.tolerance.basis.strip(), c.id
            if c.tolerance is not None:  # every band is justified: no placeholder left in a catalogue
                assert "PROVISIONAL" not in c.tolerance.basis, c.id
    assert claim("C004-12").band(17.0) == pytest.approx(3.0)  # its own stated band: 3 jobs
