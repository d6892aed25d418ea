"""Paper 001's reproduction (``wattsched reproduce 001``): a small run through the Python API, its claims.json read
back, and the facts of our implementation that do not depend on the run's size."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from conftest import require_data
from wattsched.core.store import MANIFEST
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
    monkeypatch.setattr(paper001, "SIZE_CLASSES", (100, 200, 400))
    result = reproduce("001", tmp_path, quick=True, seeds=(5,), data_dir=data.parent)
    claims = read_claims(result.files["claims"])
    assert [c.id for c in claims.claims] == [c.id for c in catalogue("001")]
    by_id = {c.id: c for c in claims.claims}
    assert by_id["C001-03"].verdict == "holds"  # D < W on the same 5,930 jobs whatever the sample
    # the MAEs over the 5,930 jobs are facts of the data and the cascade (trace protocol), whatever the sample
    assert by_id["C001-01"].ours.value == pytest.approx(44.14, abs=0.01)
    assert by_id["C001-02"].ours.value == pytest.approx(75.08, abs=0.01)
    # a 5-day sample with masked users and names stands in for the paper's 10 months: never judged
    for cid in ("C001-01", "C001-02"):
        assert by_id[cid].verdict == "not checkable" and by_id[cid].ours.stand_in
        assert by_id[cid].ours.text.startswith("stand-in: ") and "not public" in by_id[cid].note
    # the default reads the per-queue expected waits of the data's system_queues
    spec = json.loads((tmp_path / "campaign" / MANIFEST).read_text())["spec"]
    assert spec["ewt"] == "queues-file" and spec["config_dir"].endswith("system_configs")
    assert "system_queues" in result.run.settings["expected wait per queue (PRB, CPH)"]
    # every seed-dependent claim is computed on the seed alone; the MAE claims are not
    assert list(result.run.per_seed) == [5]
    seeded = {r.id for r in result.run.per_seed[5]}
    assert seeded == {c.id for c in catalogue("001")} - {"C001-01", "C001-02", "C001-03"}
    assert [s.seed for s in by_id["C001-04"].per_seed] == [5]
    assert not by_id["C001-01"].per_seed
    runs = result.run.results
    assert runs.height == 3 * 5 * 3
    assert set(runs["dispatcher"]) == set(paper001.DISPATCHERS) and set(runs["estimate"]) == set(paper001.ESTIMATES)
    # per instance, the moved jobs are the same set in every combination
    assert runs.group_by("instance").agg(pl.col("moved").n_unique().alias("k"))["k"].max() == 1
    jobs = pl.concat([pl.read_parquet(p) for p in (tmp_path / "campaign" / "results").glob("*.jobs.parquet")])
    assert (jobs["slowdown"] >= 1).all() and np.isfinite(jobs["slowdown"].to_numpy()).all()
    for name in (
        "fig1_job_durations",
        "fig2_prediction_error",
        "fig3_slowdown",
        "fig4_slowdown_classes",
        "fig5_queue_length",
    ):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    assert (tmp_path / "REPORT.md").read_text().count("C001-") >= 13
    assert result.run.figures[0].name == "fig1_job_durations.png" and (tmp_path / "fig1_job_durations.svg").exists()


def test_options_reach_the_campaign_and_unknown_ones_are_refused(tmp_path, monkeypatch) -> None:
    from wattsched.reproduce import reproduce

    data = require_data("eurora")
    with pytest.raises(ReproduceError, match="no option bogus"):
        reproduce("001", tmp_path, quick=True, seeds=(0,), data_dir=data.parent, options={"bogus": "1"})
    seen: dict[str, object] = {}

    class Stop(Exception):
        pass

    def fake_campaign(ctx, files, cph, history, ewt, configs):  # type: ignore[no-untyped-def]
        seen.update(cph=cph, ewt=ewt, configs=configs)
        raise Stop

    monkeypatch.setattr(paper001, "run_campaign", fake_campaign)
    monkeypatch.setattr(paper001, "prediction_error", lambda base: (None, None))
    with pytest.raises(Stop):
        reproduce("001", tmp_path, quick=True, seeds=(0,), data_dir=data.parent)
    assert seen["ewt"] == "queues-file" and seen["cph"] == {"deterministic_time": 0.02}
    with pytest.raises(Stop):
        reproduce(
            "001", tmp_path, quick=True, seeds=(0,), data_dir=data.parent, options={"ewt": "constant", "cph": "wall=1"}
        )
    assert seen["ewt"] == "constant" and seen["cph"] == {"time_limit_s": 1.0}
    with pytest.raises(ReproduceError, match="ewt must be"):
        paper001.ewt_choice("per-user")


def test_prb_bursts_split_the_change_between_jobs_that_arrived_together_and_the_others() -> None:
    from wattsched.reproduce.paper001_claims import prb_bursts

    # instance "i": jobs 1 and 2 arrive together in queue q (a burst), job 3 alone; each waits in some combination
    rows = []
    for e, sd in (("walltime", (3.0, 2.0, 4.0)), ("real", (1.0, 2.0, 3.0))):
        for j, (t, s) in enumerate(zip((0, 0, 5), sd, strict=True), start=1):
            rows.append(
                {
                    "instance": "i",
                    "dispatcher": "prb",
                    "estimate": e,
                    "job_id": j,
                    "queue": "q",
                    "submit_time": float(t),
                    "wait": 1.0,
                    "slowdown": s,
                }
            )
    got = prb_bursts(pl.DataFrame(rows))
    assert got["moved"] == 3 and got["share"] == pytest.approx(2 / 3)
    assert got["delta"] == pytest.approx(-3.0) and got["burst_part"] == pytest.approx(2 / 3)


def test_a_seed_table_keeps_only_its_sample() -> None:
    from wattsched.reproduce.paper001_claims import Table

    runs = pl.DataFrame({"instance": ["a", "b", "c"], "slowdown": [1.0, 2.0, 3.0]})
    jobs = pl.DataFrame({"instance": ["a", "b", "c", "c"], "job_id": [1, 2, 3, 4]})
    table = Table(runs, {0: ["a", "b"], 1: ["c"]}, True, jobs)
    one = table.seed(1)
    assert one.samples == {1: ["c"]} and one.runs["instance"].to_list() == ["c"]
    assert one.jobs is not None and one.jobs.height == 2


def test_predicates_follow_the_stated_criteria() -> None:
    sd = {(d, e): 2.0 for d in paper001.DISPATCHERS for e in paper001.ESTIMATES}
    sd.update({("prb", "walltime"): 1.0, ("cph", "walltime"): 1.1, ("ljf", "walltime"): 5.0, ("sjf", "walltime"): 4.0})
    sd.update({("sjf", "real"): 1.0, ("sjf", "rules"): 2.0, ("ebf", "real"): 1.5, ("ebf", "rules"): 1.8})
    sd.update({("cph", "real"): 1.0, ("cph", "rules"): 1.3, ("ljf", "real"): 6.0, ("ljf", "rules"): 5.5})
    sd.update({("prb", "real"): 1.05, ("prb", "rules"): 1.0, ("sjf", "rules"): 1.2})
    q = {(d, e): 10.0 for d in paper001.DISPATCHERS for e in paper001.ESTIMATES}
    q.update({("prb", e): 5.0 for e in paper001.ESTIMATES})
    q.update({("sjf", "rules"): 8.0, ("sjf", "real"): 7.0, ("ebf", "rules"): 8.0, ("ebf", "real"): 8.0})
    q.update({("cph", "real"): 8.0, ("cph", "rules"): 9.5})
    got = paper001.predicates(sd, q)
    assert got == {f"C001-{k:02d}": True for k in (4, 5, 6, 7, 8, 9, 10, 12, 13)}
    sd[("prb", "real")] = 1.2  # +20%: not "unchanged"
    sd[("sjf", "rules")] = 4.5  # outside [W, R] and far from PRB/CPH
    q[("cph", "rules")] = 8.0  # CPH's queue shrinks with D too
    got = paper001.predicates(sd, q)
    assert not got["C001-07"] and not got["C001-08"] and not got["C001-10"] and not got["C001-13"]


def test_warm_start_knows_only_jobs_that_ended_before_the_instance_starts() -> None:
    from wattsched.predict.registry import make_runtime_predictor
    from wattsched.studies.multires.experiment import WarmStart, _history
    from wattsched.workload.eurora import read_eurora

    base = require_data("eurora/historical_traces")
    history = _history((str(base),))
    jobs, _, _ = read_eurora(base / "1000" / "hist_1000_20140403_145208.log_crypt")
    warm = WarmStart(make_runtime_predictor("rules"), history)
    warm.bind(jobs)
    first = jobs["submit_time"].min()
    assert warm.offset == history.filter(pl.col("trace_end_time") < first).height > 0
    cold = make_runtime_predictor("rules")
    cold.bind(jobs)
    rows = np.arange(5)
    assert (cold.predict(rows, first)["pred_runtime_rule"] == 7).all()  # nothing completed yet: the walltime
    assert (warm.predict(rows, first)["pred_runtime_rule"] < 7).all()  # the history answers
