"""A power check is one declaration (policies/powercheck.py): a check registered here runs through EASY+PC, the
greedy and exact knapsacks and the rejection of jobs that never fit, with no other edit; the docs table, the
CLI's help and choices come from the registry."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from test_power_engine import Cap, assert_bookkeeping_under_cap, power_jobs
from wattsched.policies import powercheck
from wattsched.policies.powercheck import CheckRule, PowerCheck, check_help, check_names, check_table, register_check

REPO = Path(__file__).resolve().parents[1]

#: A check of the rule's algebra no paper has: the midpoint of the mean and max estimates, plus one σ, strict.
BLEND = CheckRule(
    "blend", "the midpoint of mean and max, plus one σ", "`(Σm + ΣM)/2 + σ < P̄`", mean=0.5, max=0.5, k=1.0, strict=True
)


@pytest.fixture
def blend() -> Iterator[CheckRule]:
    register_check(BLEND)
    try:
        yield BLEND
    finally:
        del powercheck._RULES["blend"]


def _jobs():
    # (submit, size, walltime, runtime, m, M, s): six jobs, mean 100–300 W, max 200 W above, σ 20–60 W
    rows = [(i, 1 + i % 3, 40, 30 + 5 * i, 100 + 40 * i, 300 + 40 * i, 20 + 8 * i) for i in range(6)]
    return power_jobs(rows)


def test_the_docs_table_is_the_registry() -> None:
    page = REPO / "docs" / "semantics.md"
    assert powercheck.docs_table_block(page) == check_table(), (
        "docs/semantics.md's table of power checks is behind the registry: run python -m wattsched.policies.powercheck"
    )


def test_a_registered_check_is_listed_everywhere(blend: CheckRule) -> None:
    assert "blend" in check_names() and "blend" in check_help() and "`blend`" in check_table()
    assert PowerCheck.named("BLEND").rule is blend  # any case, as the CLI passes it
    from wattsched.cli.choices import complete_check

    assert complete_check("bl") == ["blend"]


def test_a_registered_check_runs_through_every_power_policy(blend: CheckRule) -> None:
    """EASY+PC, the greedy knapsacks and the exact knapsack all keep the running jobs' estimates under the cap by
    the new rule (``assert_bookkeeping_under_cap`` writes the rule out from its coefficients), and the rule binds."""
    from wattsched.engine.simulate import simulate

    jobs = _jobs()
    cap = Cap([0.0, 60.0], [900.0, 20_000.0])
    pc = PowerCheck.named("blend")
    starts = {}
    for policy in ("easy-pc", "knapsack-wait", "knapsack-stretch", "knapsack-exact-wait"):
        schedule = simulate(jobs, policy, 8, power_check=pc, cap=cap, solver={"time_limit": 5.0}).schedule
        assert_bookkeeping_under_cap(jobs, schedule, pc, cap, 8)
        starts[policy] = schedule.sort("job_id")["start_time"].to_list()
    free = simulate(jobs, "easy", 8).schedule.sort("job_id")["start_time"].to_list()
    assert starts["easy-pc"] != free  # the rule binds: some job waits for power


def test_a_job_the_new_rule_never_admits_is_rejected(blend: CheckRule) -> None:
    m, mx, s = np.array([100.0, 800.0]), np.array([300.0, 1000.0]), np.array([10.0, 10.0])
    # level = (m + M)/2 + σ: 210 and 910 against 900 (strict)
    assert blend.never_fits(m, mx, s, 900.0).tolist() == [False, True]
    assert blend.never_fits(m, mx, s, 910.0).tolist() == [False, True]  # strict: equal is not below
    assert blend.never_fits(m, mx, s, 910.5).tolist() == [False, False]


def test_the_python_rule_is_the_compiled_one_to_the_bit() -> None:
    """``CheckRule.fits`` and the kernel's ``power_fits`` agree on random values near the cap, for every check."""
    from wattsched.policies.queue_policies import PF_A, PF_B, PF_K, PF_SIZE, PF_STRICT, power_fits

    rng = np.random.default_rng(0)
    for name in check_names():
        rule = powercheck.check_rule(name.replace(":P", ":0.9"))
        pf = np.zeros(PF_SIZE)
        pf[PF_A], pf[PF_B], pf[PF_K], pf[PF_STRICT] = rule.kernel_parameters()
        code = 1 if rule.active else 0
        for _ in range(300):
            sm, smax, ss2, m, mx, sd = rng.uniform(0, 500, 6)
            cap = rule.level(sm + m, smax + mx, ss2 + sd * sd) + rng.choice([-1e-9, 0.0, 1e-9, 0.0])
            assert power_fits(code, pf, cap, sm, smax, ss2, m, mx, sd) == rule.fits((sm, smax, ss2), m, mx, sd, cap)


def test_a_bad_declaration_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_check(CheckRule("mean", "again", "—", mean=1.0))
    with pytest.raises(ValueError, match="must be finite and ≥ 0"):
        CheckRule("negative", "x", "—", mean=-1.0)
    with pytest.raises(ValueError, match="must be finite and ≥ 0"):
        CheckRule("infinite", "x", "—", k=math.inf)
    with pytest.raises(ValueError, match="unknown power check 'nope'; choose one of none, mean"):
        PowerCheck.named("nope")
