"""Named policies: a queue order plus a backfilling mode. Names are what the CLI and campaigns use."""

from __future__ import annotations

from dataclasses import dataclass

from wattsched.policies.queue_policies import (
    BACKFILL_CONSERVATIVE,
    BACKFILL_EASY,
    BACKFILL_NONE,
    KNAPSACK_EXACT_STRETCH,
    KNAPSACK_EXACT_WAIT,
    KNAPSACK_STRETCH,
    KNAPSACK_WAIT,
    ORDER_FCFS,
    ORDER_LJF,
    ORDER_SAF,
    ORDER_SJF,
)


@dataclass(frozen=True)
class QueuePolicy:
    """A policy of the queue family. ``order`` sorts the queue; ``backfill`` says who may jump ahead."""

    name: str
    order: int
    backfill: int
    description: str


POLICIES: dict[str, QueuePolicy] = {
    p.name: p
    for p in (
        QueuePolicy(
            "fcfs",
            ORDER_FCFS,
            BACKFILL_NONE,
            "first come first served, strict: stop at the first job that does not fit",
        ),
        QueuePolicy(
            "sjf", ORDER_SJF, BACKFILL_NONE, "shortest runtime estimate first; stop at the first job that does not fit"
        ),
        QueuePolicy(
            "ljf", ORDER_LJF, BACKFILL_NONE, "longest runtime estimate first; stop at the first job that does not fit"
        ),
        QueuePolicy(
            "easy",
            ORDER_FCFS,
            BACKFILL_EASY,
            "EASY backfilling, FCFS order, one node-only reservation for the first blocked job",
        ),
        QueuePolicy(
            "easy-saf",
            ORDER_SAF,
            BACKFILL_EASY,
            "EASY backfilling, queue sorted by smallest area (estimate x size) first",
        ),
        QueuePolicy(
            "easy-sjf", ORDER_SJF, BACKFILL_EASY, "EASY backfilling, queue sorted by shortest runtime estimate first"
        ),
        QueuePolicy(
            "easy-pc",
            ORDER_FCFS,
            BACKFILL_EASY,
            "EASY+PC (paper 000, Algorithm 1): EASY with the power check on every start",
        ),
        QueuePolicy(
            "easy-saf-pc",
            ORDER_SAF,
            BACKFILL_EASY,
            "EASY-SAF with the power check on every start (smallest area first)",
        ),
        QueuePolicy(
            "knapsack-wait",
            ORDER_FCFS,
            KNAPSACK_WAIT,
            "greedy knapsack in the power window, profit = wait (paper 000 Alg. 2); EASY+PC after it",
        ),
        QueuePolicy(
            "knapsack-stretch",
            ORDER_FCFS,
            KNAPSACK_STRETCH,
            "greedy knapsack in the power window, profit = stretch (paper 000 Alg. 2); EASY+PC after it",
        ),
        QueuePolicy(
            "knapsack-exact-wait",
            ORDER_FCFS,
            KNAPSACK_EXACT_WAIT,
            "exact knapsack (OR-Tools CP-SAT, time-budgeted, greedy warm start), profit = wait; EASY+PC after",
        ),
        QueuePolicy(
            "knapsack-exact-stretch",
            ORDER_FCFS,
            KNAPSACK_EXACT_STRETCH,
            "exact knapsack (OR-Tools CP-SAT), profit = stretch; EASY+PC after the window",
        ),
        QueuePolicy(
            "conservative",
            ORDER_FCFS,
            BACKFILL_CONSERVATIVE,
            "conservative backfilling: every queued job holds a reservation that never moves later",
        ),
    )
}


#: The power-free queue policies (what the demo compares); the others need a power check and a cap to differ.
CORE_POLICIES: tuple[str, ...] = ("fcfs", "sjf", "ljf", "easy", "easy-sjf", "easy-saf", "conservative")


def get_policy(name: str) -> QueuePolicy:
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose one of: {', '.join(POLICIES)}") from None
