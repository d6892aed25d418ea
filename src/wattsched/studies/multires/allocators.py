"""Node allocators for multi-resource machines (paper 001 §4, AccaSim 2017 semantics; docs/dispatch.md).

Both are "all requested chunks available": scan the nodes in some order, put as many of the job's chunks on each
node as its free resources allow (chunks of one job may share a node), and succeed only if every chunk is placed.
A node without a free unit of a *necessary* resource (cores) is skipped.

- **first fit** (FFP): nodes in index order;
- **consolidate** (best fit): nodes by ascending sum of their free amounts, recomputed for every job — the raw sum
  of heterogeneous units as in the original code ([AMBIG-1.3]: memory in KiB dominates), or with
  ``normalise=True`` the sum of free/capacity shares.

An allocation is a pair of arrays ``(nodes, counts)``: chunk counts per node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Allocation = tuple[np.ndarray, np.ndarray]

#: Allocator names.
ALLOCATORS = ("first-fit", "consolidate")


def chunks_that_fit(free: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """How many chunks of ``vec`` each node can still hold (a huge number when ``vec`` is all zero)."""
    need = vec > 0
    if not need.any():
        return np.full(free.shape[0], np.iinfo(np.int64).max // 4, dtype=np.int64)
    return (free[:, need] // vec[need]).min(axis=1)


@dataclass(frozen=True)
class Allocator:
    """Places a job's chunks on nodes; see the module docstring."""

    kind: str = "first-fit"
    normalise: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ALLOCATORS:
            raise ValueError(f"allocator must be one of {ALLOCATORS}, got {self.kind!r}")

    def order(self, free: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        if self.kind == "first-fit":
            return np.arange(free.shape[0])
        if self.normalise:
            with np.errstate(invalid="ignore", divide="ignore"):
                share = np.where(capacity > 0, free / np.maximum(capacity, 1), 0.0)
            key = share.sum(axis=1)
        else:
            key = free.sum(axis=1)
        return np.argsort(key, kind="stable")

    def place(
        self,
        free: np.ndarray,
        capacity: np.ndarray,
        chunks: int,
        vec: np.ndarray,
        necessary: np.ndarray,
        forbidden: np.ndarray | None = None,
    ) -> Allocation | None:
        """The allocation of ``chunks`` × ``vec`` on ``free`` (nodes × resources), or None if it does not fit.
        ``necessary`` is a boolean mask of the resources a node must have free; ``forbidden`` a mask of nodes
        not to use (a reservation's nodes during backfilling)."""
        fit = chunks_that_fit(free, vec)
        usable = (free[:, necessary] > 0).all(axis=1)
        if forbidden is not None:
            usable &= ~forbidden
        fit = np.where(usable, fit, 0)
        order = self.order(free, capacity)
        fit = fit[order]
        total = np.cumsum(fit)
        if total.size == 0 or total[-1] < chunks:
            return None
        last = int(np.searchsorted(total, chunks))  # first position where the running total reaches chunks
        counts = fit[: last + 1].copy()
        counts[last] -= total[last] - chunks
        keep = counts > 0
        return order[: last + 1][keep], counts[keep]


def apply(free: np.ndarray, alloc: Allocation, vec: np.ndarray, sign: int = -1) -> None:
    """Take (sign −1) or give back (+1) an allocation's resources in place."""
    nodes, counts = alloc
    free[nodes] += sign * counts[:, None] * vec[None, :]
