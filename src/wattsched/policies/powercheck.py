"""Power checks (paper 000 §5.2; docs/semantics.md §3.3): how a policy decides that a job's estimated power
fits under the cap.

The policy's platform power is the sum of the running jobs' *estimates* (never a measurement). Each job carries
job-level dynamic estimates (m, M, s): mean, max and standard deviation in watts, e.g. nodes × (per-node value −
idle). Checks:

* ``mean``: Σm + m_j ≤ cap;  ``max``: ΣM + M_j ≤ cap (``naive`` is ``max`` with M = (max − idle) × nodes of
  the platform);
* ``gaussian68/95/99``: μ + k·σ < cap with μ = Σm + m_j, σ = sqrt(Σs² + s_j²) and k = 1, 2, 3 (the paper's
  names come from two-sided intervals: the one-sided probabilities are 84.1 / 97.7 / 99.87 %);
* ``quantile:P`` (improvement, §8.2): the same with k = Φ⁻¹(P), a calibrated one-sided quantile.

Bookkeeping is O(1) per check: the engine keeps Σm, ΣM and Σs² of the running jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

from wattsched.policies.queue_policies import (
    CHECK_GAUSSIAN,
    CHECK_MAX,
    CHECK_MEAN,
    CHECK_NONE,
    KNAPSACK_SKIP,
    KNAPSACK_STOP,
    RESERVE_NODES,
    RESERVE_NODES_POWER,
    SHADOW_FIRST_END,
    SHADOW_NOW,
)

_CHECKS = {"none": CHECK_NONE, "mean": CHECK_MEAN, "max": CHECK_MAX, "gaussian": CHECK_GAUSSIAN}
_RESERVATIONS = {"nodes": RESERVE_NODES, "nodes+power": RESERVE_NODES_POWER}
_SHADOWS = {"now": SHADOW_NOW, "first_end": SHADOW_FIRST_END}
_KNAPSACK = {"stop": KNAPSACK_STOP, "skip": KNAPSACK_SKIP}
NAMED_CHECKS = ("none", "mean", "max", "naive", "gaussian68", "gaussian95", "gaussian99", "quantile:P")


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

    check: str = "none"
    k: float = 0.0
    reservation: str = "nodes"
    shadow_when_nodes_suffice: str = "now"
    knapsack: str = "stop"
    name: str = "none"

    def __post_init__(self) -> None:
        for value, allowed, what in (
            (self.check, _CHECKS, "check"),
            (self.reservation, _RESERVATIONS, "reservation"),
            (self.shadow_when_nodes_suffice, _SHADOWS, "shadow_when_nodes_suffice"),
            (self.knapsack, _KNAPSACK, "knapsack"),
        ):
            if value not in allowed:
                raise ValueError(f"unknown power {what} {value!r}; choose one of {', '.join(allowed)}")
        if self.check == "gaussian" and not self.k > 0:
            raise ValueError(f"a gaussian check needs k > 0, got {self.k}")

    @classmethod
    def named(
        cls, name: str, *, reservation: str = "nodes", shadow_when_nodes_suffice: str = "now", knapsack: str = "stop"
    ) -> PowerCheck:
        """``none``, ``mean``, ``max``, ``naive``, ``gaussian68``/``95``/``99`` or ``quantile:P`` (0.5 < P < 1),
        with the reservation options of the class."""

        def build(check: str, k: float = 0.0) -> PowerCheck:
            return cls(check, k, reservation, shadow_when_nodes_suffice, knapsack, name)

        gaussian_k = {"gaussian68": 1.0, "gaussian95": 2.0, "gaussian99": 3.0}
        if name in gaussian_k:
            return build("gaussian", gaussian_k[name])
        if name.startswith("quantile:"):
            try:
                p = float(name.split(":", 1)[1])
            except ValueError:
                raise ValueError(f"quantile check needs a probability, e.g. quantile:0.99; got {name!r}") from None
            if not 0.5 < p < 1.0:
                raise ValueError(f"quantile probability must be in (0.5, 1), got {p}")
            return build("gaussian", NormalDist().inv_cdf(p))
        if name == "naive":
            return build("max")
        if name in ("none", "mean", "max"):
            return build(name)
        raise ValueError(f"unknown power check {name!r}; choose one of {', '.join(NAMED_CHECKS)}")

    def codes(self) -> tuple[int, int, int, int]:
        return (
            _CHECKS[self.check],
            _RESERVATIONS[self.reservation],
            _SHADOWS[self.shadow_when_nodes_suffice],
            _KNAPSACK[self.knapsack],
        )
