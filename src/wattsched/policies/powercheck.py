"""Power checks (paper 000 §5.2; docs/semantics.md §3.3): how a policy decides that a job's estimated power
fits under the cap — each check declared once, in a registry every other part reads.

The policy's platform power is the sum of the running jobs' *estimates* (never a measurement). Each job carries
job-level dynamic estimates (m, M, s): mean, max and standard deviation in watts, e.g. nodes × (per-node value −
idle). A check is a :class:`CheckRule`: the level

    a·(Σm + m_j) + b·(ΣM + M_j) + k·sqrt(Σs² + s_j²)

compared with the cap P̄ (``≤``, or ``<`` when strict). Every built-in check is one:

* ``mean`` (a = 1), ``max`` (b = 1), ``naive`` (``max`` on estimates of its own: every node at the platform's
  max − idle);
* ``gaussian68/95/99``: a = 1, k = 1, 2, 3, strict (the paper's names come from two-sided intervals: the
  one-sided probabilities are 84.1 / 97.7 / 99.87 %);
* ``quantile:P`` (improvement, §8.2): the same with k = Φ⁻¹(P), a calibrated one-sided quantile.

From the one entry come the compiled rule (the kernel reads a, b, k and the strictness from the run's
parameters: no kernel edit for a new check), the knapsacks' weight (a·m + b·M, floored at 1 W), the exact
knapsack's CP-SAT constraint, the rejection of jobs that could never fit, the CLI's choices, help and completion,
and the table of docs/semantics.md (``python -m wattsched.policies.powercheck`` rewrites it; a test fails when it
falls behind). docs/contributing.md, "Adding a power check", shows a new check registered and run.

Bookkeeping is O(1) per check: the engine keeps Σm, ΣM and Σs² of the running jobs. This module imports no
numba, so that ``--help`` and shell completion stay fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING

from wattsched.core.generated_docs import generated_block, rewrite_generated_block

if TYPE_CHECKING:  # numpy is imported where arrays are computed: --help and completion read this module
    import numpy as np

__all__ = [
    "NAMED_CHECKS",
    "CheckRule",
    "PowerCheck",
    "check_help",
    "check_names",
    "check_rule",
    "check_table",
    "register_check",
    "register_check_family",
]

_RESERVATIONS = ("nodes", "nodes+power")
_SHADOWS = ("now", "first_end")
_KNAPSACK = ("stop", "skip")


@dataclass(frozen=True)
class CheckRule:
    """One power check: its name, what it means, and its rule's coefficients (module docstring).

    ``source`` names estimates the check brings with it instead of the run's (``naive``); ``condition`` is the
    formula as docs/semantics.md prints it."""

    name: str
    summary: str
    condition: str
    mean: float = 0.0  # a
    max: float = 0.0  # b
    k: float = 0.0
    strict: bool = False
    source: str | None = None

    def __post_init__(self) -> None:
        for what in ("mean", "max", "k"):
            value = getattr(self, what)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"power check {self.name!r}: {what} must be finite and ≥ 0, got {value!r}")

    @property
    def active(self) -> bool:
        """False for ``none``: every job fits."""
        return bool(self.mean or self.max or self.k)

    def level(self, sm: float, smax: float, ss2: float) -> float:
        """The rule's left side for running sums (the candidate included), in the kernel's order of operations
        (``queue_policies.power_fits``), so that the Python and compiled checks agree to the bit."""
        v = 0.0
        if self.mean != 0.0:
            v += self.mean * sm
        if self.max != 0.0:
            v += self.max * smax
        if self.k != 0.0:
            v += self.k * math.sqrt(ss2)
        return v

    def fits(self, sums: tuple[float, float, float] | list[float], m: float, mx: float, sd: float, cap: float) -> bool:
        """Whether a job with estimates (m, mx, sd) fits under ``cap`` next to running sums (Σm, ΣM, Σs²)."""
        if not self.active or math.isinf(cap):
            return True
        v = self.level(sums[0] + m, sums[1] + mx, sums[2] + sd * sd)
        return v < cap if self.strict else v <= cap

    def weight(self, m: np.ndarray, mx: np.ndarray) -> np.ndarray:
        """The knapsacks' weight of each job: a·m + b·M, floored at 1 W ([AMBIG-0.8])."""
        import numpy as np

        w = np.zeros(np.shape(m))
        if self.mean != 0.0:
            w = w + self.mean * np.asarray(m, dtype=np.float64)
        if self.max != 0.0:
            w = w + self.max * np.asarray(mx, dtype=np.float64)
        return np.maximum(w, 1.0)

    def never_fits(self, m: np.ndarray, mx: np.ndarray, s: np.ndarray, cap: float) -> np.ndarray:
        """Jobs whose estimate alone fails the rule under ``cap`` (nothing running)."""
        import numpy as np

        if not self.active:
            return np.zeros(np.shape(m), dtype=bool)
        v = np.zeros(np.shape(m))
        if self.mean != 0.0:
            v = v + self.mean * m
        if self.max != 0.0:
            v = v + self.max * mx
        if self.k != 0.0:
            v = v + self.k * np.sqrt(s * s)
        return v >= cap if self.strict else v > cap

    def kernel_parameters(self) -> tuple[float, float, float, float]:
        """(a, b, k, strict) as the kernel reads them (``queue_policies.PF_*``)."""
        return float(self.mean), float(self.max), float(self.k), 1.0 if self.strict else 0.0


_RULES: dict[str, CheckRule] = {}
_FAMILIES: dict[
    str, tuple[str, str, str, Callable[[str], CheckRule]]
] = {}  # prefix -> (shown, summary, condition, build)


def register_check(rule: CheckRule) -> CheckRule:
    """Add a check under its (lower-case) name; every list of checks shows it from then on."""
    name = rule.name.lower()
    if name in _RULES or any(name.startswith(p) for p in _FAMILIES):
        raise ValueError(f"a power check named {name!r} is already registered")
    _RULES[name] = rule
    return rule


def register_check_family(
    prefix: str, shown_as: str, summary: str, condition: str, build: Callable[[str], CheckRule]
) -> None:
    """Add a family of checks with a parameter in their name (``quantile:P``): ``build(name)`` makes the rule for
    a name that starts with ``prefix`` or raises ValueError saying what is wrong with the parameter."""
    _FAMILIES[prefix.lower()] = (shown_as, summary, condition, build)


def check_rule(name: str) -> CheckRule:
    """The registered rule of ``name`` (any case), or a one-line ValueError listing the choices."""
    key = name.lower()
    if key in _RULES:
        return _RULES[key]
    for prefix, (_, _, _, build) in _FAMILIES.items():
        if key.startswith(prefix):
            return build(key)
    raise ValueError(f"unknown power check {name!r}; choose one of {', '.join(check_names())}")


def check_names() -> tuple[str, ...]:
    """Every check name, families as they are typed (``quantile:P``)."""
    return (*_RULES, *(shown for shown, _, _, _ in _FAMILIES.values()))


def check_help() -> str:
    """The ``--power-check`` help text."""
    names = check_names()
    return f"{', '.join(names[:-1])} or {names[-1]} (any case; docs/semantics.md §3.3)."


def check_table() -> str:
    """The table of docs/semantics.md §3.3: each check, its condition and what it is."""
    rows = ["| check | condition | what it is |", "|---|---|---|"]
    for rule in _RULES.values():
        rows.append(f"| `{rule.name}` | {rule.condition} | {rule.summary} |")
    for shown, summary, condition, _ in _FAMILIES.values():
        rows.append(f"| `{shown}` | {condition} | {summary} |")
    return "\n".join(rows)


def _quantile(name: str) -> CheckRule:
    text = name.split(":", 1)[1]
    try:
        p = float(text)
    except ValueError:
        raise ValueError(f"quantile check needs a probability, e.g. quantile:0.99; got {name!r}") from None
    if not 0.5 < p < 1.0:
        raise ValueError(f"quantile probability must be in (0.5, 1), got {p}")
    return CheckRule(
        name,
        f"a calibrated one-sided quantile: k = Φ⁻¹({text})",
        f"`Σm + m_j + k·sqrt(Σs² + s_j²) < P̄`, k = Φ⁻¹({text})",
        mean=1.0,
        k=NormalDist().inv_cdf(p),
        strict=True,
    )


for _rule in (
    CheckRule("none", "no check: every job fits", "—"),
    CheckRule("mean", "the running jobs' mean estimates", "`Σm + m_j ≤ P̄`", mean=1.0),
    CheckRule("max", "the running jobs' max estimates", "`ΣM + M_j ≤ P̄`", max=1.0),
    CheckRule(
        "naive",
        "`max` on every node at the platform's max − idle (paper 000's naive estimator)",
        "`ΣM + M_j ≤ P̄`, M = nodes × (max − idle)",
        max=1.0,
        source="naive",
    ),
    *(
        CheckRule(
            f"gaussian{pct}",
            f"mean + {k}σ of a Gaussian sum (one-sided {one_sided} %)",
            f"`Σm + m_j + {k}·sqrt(Σs² + s_j²) < P̄` (strict, as the paper)",
            mean=1.0,
            k=float(k),
            strict=True,
        )
        for pct, k, one_sided in (("68", 1, "84.1"), ("95", 2, "97.7"), ("99", 3, "99.87"))
    ),
):
    register_check(_rule)
register_check_family(
    "quantile:",
    "quantile:P",
    "a calibrated one-sided quantile P, 0.5 < P < 1 (k = 1/2/3 are one-sided 84.1/97.7/99.87 %)",
    "`Σm + m_j + k·sqrt(Σs² + s_j²) < P̄`, k = Φ⁻¹(P)",
    _quantile,
)

#: The check names at import (families as typed); :func:`check_names` also lists checks registered later.
NAMED_CHECKS = check_names()


@dataclass(frozen=True)
class PowerCheck:
    """A power check and the EASY reservation options that go with it.

    ``reservation``: ``nodes`` (faithful: the priority job's reservation ignores power, [AMBIG-0.7]) or
    ``nodes+power`` (its shadow time is when both its units and its estimated power fit, and jobs backfilled
    past it must fit next to it). ``shadow_when_nodes_suffice``: for a priority job blocked by power alone,
    ``now`` (default; extra = free − size) or ``first_end`` (easy.cpp's walk to the first expected end).
    ``knapsack``: what the greedy knapsacks do at the first job that does not fit: ``stop`` (faithful) or
    ``skip`` it and go on.
    """

    name: str = "none"
    reservation: str = "nodes"
    shadow_when_nodes_suffice: str = "now"
    knapsack: str = "stop"
    rule: CheckRule = field(default_factory=lambda: check_rule("none"))

    def __post_init__(self) -> None:
        for value, allowed, what in (
            (self.reservation, _RESERVATIONS, "reservation"),
            (self.shadow_when_nodes_suffice, _SHADOWS, "shadow_when_nodes_suffice"),
            (self.knapsack, _KNAPSACK, "knapsack"),
        ):
            if value not in allowed:
                raise ValueError(f"unknown power {what} {value!r}; choose one of {', '.join(allowed)}")

    @classmethod
    def named(
        cls, name: str, *, reservation: str = "nodes", shadow_when_nodes_suffice: str = "now", knapsack: str = "stop"
    ) -> PowerCheck:
        """A registered check by name (:func:`check_names`, any case), with the reservation options of the
        class."""
        rule = check_rule(name)
        return cls(name.lower(), reservation, shadow_when_nodes_suffice, knapsack, rule)

    @property
    def active(self) -> bool:
        return self.rule.active

    @property
    def k(self) -> float:
        return self.rule.k

    def codes(self) -> tuple[int, int, int, int]:
        """The kernel's integer configuration (``queue_policies.PC_*``); the rule's coefficients go in its float
        parameters (:meth:`CheckRule.kernel_parameters`)."""
        from wattsched.policies import queue_policies as q  # numba: only when a run is built

        return (
            q.CHECK_RULE if self.rule.active else q.CHECK_NONE,
            (q.RESERVE_NODES, q.RESERVE_NODES_POWER)[_RESERVATIONS.index(self.reservation)],
            (q.SHADOW_NOW, q.SHADOW_FIRST_END)[_SHADOWS.index(self.shadow_when_nodes_suffice)],
            (q.KNAPSACK_STOP, q.KNAPSACK_SKIP)[_KNAPSACK.index(self.knapsack)],
        )


def docs_table_block(page: Path) -> str:
    """The table now between the ``checks`` markers of ``page`` (for the test that it is up to date)."""
    return generated_block(page, "checks")


if __name__ == "__main__":  # python -m wattsched.policies.powercheck: rewrite docs/semantics.md's table
    changed = rewrite_generated_block(Path("docs/semantics.md"), "checks", check_table())
    print("docs/semantics.md:", "table rewritten" if changed else "table up to date")
