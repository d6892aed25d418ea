"""Power domains in the replay (advise/domain_replay.py): the placing EASY against the built-in one, the domains'
budgets at every instant, and the replay's per-domain report."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_advise_replay import IDLE, write_dump
from test_engine_properties import PROFILE
from test_power_engine import Cap, power_workloads
from wattsched.advise.config import load_config
from wattsched.advise.domain_replay import DomainEasy
from wattsched.advise.domains import Domain
from wattsched.advise.replay import ReplayError, replay
from wattsched.engine.simulate import OnlineEstimates, simulate
from wattsched.policies.powercheck import PowerCheck

MAX = PowerCheck.named("max")


def _caps(levels: list[int]) -> Cap:
    levels = [*levels, 20_000]  # the last level lets every job start in the end
    return Cap([0.0] + [float(10 * (i + 1)) for i in range(len(levels) - 1)], [float(v) for v in levels])


@PROFILE
@given(power_workloads(), st.lists(st.integers(200, 2000), min_size=0, max_size=3), st.booleans())
def test_without_binding_domains_it_is_the_built_in_easy_with_the_max_check(jobs, levels, one_domain) -> None:
    """The differential test of the placing policy: no domain (or one holding every node with no cap) gives
    exactly the built-in EASY's schedule with the ``max`` check, under caps that change over time."""
    cap = _caps(levels)
    built_in = simulate(jobs, "easy", 8, power_check=MAX, cap=cap).schedule
    domains = (Domain("all", frozenset(f"n{i}" for i in range(8)), 1e12),) if one_domain else ()
    placer = DomainEasy(domains, {"all": None} if one_domain else {}, 8)
    ours = simulate(jobs, placer, 8, power_check=MAX, cap=cap).schedule
    assert ours["start_time"].to_list() == built_in["start_time"].to_list()
    assert not placer.never_fits


@PROFILE
@given(power_workloads(), st.integers(300, 1500), st.integers(300, 1500))
def test_every_domain_stays_within_its_budget_and_its_nodes(jobs, budget_a, budget_b) -> None:
    """At every start, each domain's licenses per node × nodes in it stay within its budget, and its jobs within
    its nodes; jobs that no domain could take are reported, never placed inside a domain's budget silently."""
    domains = (Domain("a", frozenset({"n0", "n1", "n2", "n3"}), 0.0), Domain("b", frozenset({"n4", "n5"}), 0.0))
    budgets = {"a": budget_a, "b": budget_b}
    placer = DomainEasy(domains, budgets, 8)
    s = simulate(jobs, placer, 8, power_check=MAX, cap=_caps([])).schedule
    pos_of = {int(j): p for p, j in enumerate(jobs.sort("submit_time", "job_id")["job_id"])}
    start, end = s["start_time"].to_numpy(), s["end_time"].to_numpy()
    lic = s.join(jobs.select("job_id", "est_dyn_max", "size"), on="job_id")
    for t in np.unique(start):
        on = (start <= t) & (end > t)
        used = {"a": 0.0, "b": 0.0}
        nodes = {"a": 0, "b": 0}
        for row, running in zip(lic.iter_rows(named=True), on, strict=True):
            pos = pos_of[row["job_id"]]
            if not running or pos in placer.never_fits:
                continue
            counts = placer.placements[pos]
            assert sum(counts.values()) == row["size"] and "" not in counts  # only domain nodes, all of its nodes
            for name, k in counts.items():
                used[name] += row["est_dyn_max"] / row["size"] * k
                nodes[name] += k
        assert used["a"] <= budget_a + 1e-6 and used["b"] <= budget_b + 1e-6
        assert nodes["a"] <= 4 and nodes["b"] <= 2
    ordered = jobs.sort("submit_time", "job_id")
    for pos in placer.never_fits:  # more than the 6 domain nodes, or more power than the domains can hold
        size, need = int(ordered["size"][pos]), float(ordered["est_dyn_max"][pos])
        fits_a = size <= 4 and need <= budget_a
        fits_b = size <= 2 and need <= budget_b
        spans = size <= 6 and need / size * 4 <= budget_a and need / size * min(size, 2) <= budget_b
        assert not (fits_a or fits_b or spans)


DOMAINS = [
    {"name": "r1", "nodes": "nid[001-004]", "watts": "500W"},  # budget 500 − 4 × 50 = 300 W: below every license
    {"name": "r2", "nodes": "nid[005-008]", "watts": "900W"},  # budget 700 W: one alice job (2 × 250 W) at a time
]


def _config(**extra):
    return load_config(
        None, cap=1400.0, mode="gate", power__idle_watts_per_node=IDLE, power__max_watts_per_node=400, **extra
    )


def test_a_binding_layout_is_replayed_domain_by_domain(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "dump.sacct")
    plain = replay(dump, _config()).summary
    result = replay(dump, _config(domains=DOMAINS))
    s = result.summary
    assert set(s["domains"]) == {"r1", "r2"} and s["nodes_outside_domains"] == 0
    r1, r2 = s["domains"]["r1"], s["domains"]["r2"]
    assert r1["cap_watts"] == 500 and r1["nodes"] == 4 and r2["jobs"] > 0
    # every job ran in one domain or another, and the layout costs waiting (r1's 300 W is below every license)
    assert r1["jobs"] + r2["jobs"] >= s["jobs"] - s["held_above_budget"]
    assert s["wait_s"]["capped"]["mean"] > plain["wait_s"]["capped"]["mean"]
    assert r1["peak_watts"] <= 500 and r2["peak_watts"] <= 900  # the licenses bound the true power here
    assert s["peak_watts"]["capped"] <= 1400 and s["instants_over_cap"] == 0
    # the per-domain power is in power.csv, and the domains' sum plus nothing else is the cluster's (net basis)
    power = result.power
    total = power["domain_r1_watts"] + power["domain_r2_watts"]
    assert np.allclose(total.to_numpy(), power["capped_watts"].to_numpy())
    written = pl.read_csv(result.write(tmp_path / "out")["power"])
    assert {"domain_r1_watts", "domain_r2_watts"} <= set(written.columns)


def test_a_layout_a_job_cannot_fit_holds_it(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "dump.sacct", n=12)
    small = [{"name": "one", "nodes": "nid001", "watts": "2kW"}]  # one node: no 2-node job ever fits
    s = replay(dump, _config(domains=small)).summary
    assert s["held_above_budget"] == 12 and s["nodes_outside_domains"] == 7
    assert s["domains"]["one"]["jobs"] == 0 and s["domains"]["one"]["peak_watts"] == pytest.approx(IDLE)


def test_domains_that_do_not_match_the_dump_are_refused(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "dump.sacct", n=5)
    other = [{"name": "x", "nodes": "gpu[01-04]", "watts": "1kW"}]
    with pytest.raises(ReplayError, match="another cluster's nodes"):
        replay(dump, _config(domains=other))
    many = [{"name": "x", "nodes": "nid[001-016]", "watts": "1kW"}]
    with pytest.raises(ReplayError, match="more than the 8 of the replayed machine"):
        replay(dump, _config(domains=many))
    with pytest.raises(ReplayError, match="EASY only"):
        replay(dump, _config(domains=DOMAINS), policy="fcfs")


def test_a_python_policy_sees_the_online_estimates_of_the_jobs_it_schedules(tmp_path: Path) -> None:
    """The estimates an online predictor writes at each submission reach a Python policy's view (they were a
    copy taken before the run: a policy saw zeros)."""
    seen: list[float] = []

    class Record(DomainEasy):
        def schedule(self, view):  # type: ignore[no-untyped-def]
            seen.extend(float(view.jobs.est_dyn_max[p]) for p in view.queue)
            return super().schedule(view)

    class Constant:
        outputs = ("watts",)

        def bind(self, jobs):  # type: ignore[no-untyped-def]
            pass

        def observe(self, rows, ends):  # type: ignore[no-untyped-def]
            pass

        def predict(self, rows, now):  # type: ignore[no-untyped-def]
            return {"watts": np.full(len(rows), 123.0)}

    frame = pl.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 1.0], "size": [1, 1], "walltime": [10.0, 10.0], "runtime": [5.0, 5.0]}
    )
    convert = lambda rows, out: (out["watts"], out["watts"], np.zeros(len(rows)))  # noqa: E731
    simulate(
        frame, Record((), {}, 2), 2, power_check=MAX, cap=_caps([]), online=OnlineEstimates(Constant(), power=convert)
    )
    assert seen and all(math.isclose(v, 123.0) for v in seen)
