"""Paper 001's reproduction (``wattsched reproduce 001``): a small run through the Python API, its claims.json read
back, and the facts of our implementation that do not depend on the run's size."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from conftest import require_data
from wattsched.reproduce import paper001
from wattsched.reproduce.claims import catalogue
from wattsched.reproduce.report import read_claims
from wattsched.reproduce.runner import ReproduceError


def test_cph_budget_reads_the_two_kinds_and_refuses_others() -> None:
    assert paper001.cph_budget("det=0.02") == {"deterministic_time": 0.02}
    assert paper001.cph_budget("wall=1") == {"time_limit_s": 1.0}
    for bad in ("1", "det=", "wall=-1", "cpu=1"):
        with pytest.raises(ReproduceError):
            paper001.cph_budget(bad)


def test_samples_take_the_same_number_from_every_size_class_and_depend_on_the_seed() -> None:
    base = require_data("eurora/historical_traces")
    classes = paper001.instance_classes(base)
    a = paper001.sample_instances(classes, 0, 2)
    assert [int(f.parent.name) for f in a] == [s for s in paper001.SIZE_CLASSES for _ in range(2)]
    assert a == paper001.sample_instances(classes, 0, 2)
    assert a != paper001.sample_instances(classes, 1, 2)


def test_the_rules_beat_the_walltime_on_the_eurora_sample() -> None:
    base = require_data("eurora/historical_traces")
    errors, facts = paper001.prediction_error(base)
    assert facts["jobs"] == errors.height == 5930
    assert facts["max_runtime_h"] < 12  # the 5-day sample has no long job (the paper's trace had 24 h jobs)
    assert errors["rules"].mean() < errors["walltime"].mean()
    assert (errors["rules"] >= 0).all() and (errors["walltime"] >= 0).all()


def test_quick_reproduction_on_one_seed(tmp_path, monkeypatch) -> None:
    from wattsched.reproduce import reproduce

    data = require_data("eurora")
    # the smallest size classes keep the test short; the quick setting draws from every class
    monkeypatch.setattr(paper001, "SIZE_CLASSES", (50, 200, 600))
    result = reproduce("001", tmp_path, quick=True, seeds=(5,), data_dir=data.parent)
    claims = read_claims(result.files["claims.json"])
    assert [c.id for c in claims.claims] == [c.id for c in catalogue("001")]
    by_id = {c.id: c for c in claims.claims}
    assert by_id["C001-03"].verdict == "holds"  # D < W on the same 5,930 jobs whatever the sample
    runs = result.run.results
    assert runs.height == 3 * 5 * 3
    assert set(runs["dispatcher"]) == set(paper001.DISPATCHERS) and set(runs["estimate"]) == set(paper001.ESTIMATES)
    # per instance, the moved jobs are the same set in every combination
    assert runs.group_by("instance").agg(pl.col("moved").n_unique().alias("k"))["k"].max() == 1
    jobs = pl.concat([pl.read_parquet(p) for p in (tmp_path / "campaign" / "results").glob("*.jobs.parquet")])
    assert (jobs["slowdown"] >= 1).all() and np.isfinite(jobs["slowdown"].to_numpy()).all()
    for name in ("fig2_prediction_error", "fig3_slowdown", "fig4_slowdown_classes", "fig5_queue_length"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    assert (tmp_path / "REPORT.md").read_text().count("C001-") >= 13
