"""Multi-resource nodes (paper 001 §4; docs/dispatch.md): each node has a vector of resources (cores, GPUs, MICs,
memory) that several jobs may share. A job asks for ``chunks`` × a per-chunk vector (PBS ``select`` semantics);
chunks of one job may share a node.

The job table of a multi-resource workload carries ``chunks`` and one ``chunk_<resource>`` column per resource of
the pool (amounts per chunk, in the pool's units); see :mod:`wattsched.workload.eurora`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

#: Expected waiting time (s) of a queue no table names (AccaSim's default; [AMBIG-1.5] in docs/decisions.md).
DEFAULT_EWT = 1800.0


@dataclass(frozen=True, eq=False)
class NodePool:
    """The nodes of a multi-resource machine.

    ``capacity[n, r]`` is node n's amount of resource ``resources[r]`` (integers, in the units the workload uses);
    ``reserved`` marks nodes kept for reservations (never given to ordinary jobs); ``necessary`` names the
    resources a node must have a free unit of to be considered at all (cores: a node with no free core is
    skipped). ``queues`` maps a queue name to its expected waiting time (s), used by PRB and CPH.
    """

    name: str
    resources: tuple[str, ...]
    capacity: np.ndarray
    node_ids: np.ndarray
    reserved: np.ndarray
    necessary: tuple[str, ...] = ("cores",)
    queues: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, dtype in (("capacity", np.int64), ("node_ids", np.int64), ("reserved", bool)):
            arr = np.array(getattr(self, name), dtype=dtype)
            arr.flags.writeable = False  # a pool is shared by every run: nobody may change it in place
            object.__setattr__(self, name, arr)
        cap = self.capacity
        if cap.ndim != 2 or cap.shape[1] != len(self.resources):
            raise ValueError(f"{self.name}: capacity must be nodes × {len(self.resources)} resources, got {cap.shape}")
        if (cap < 0).any():
            raise ValueError(f"{self.name}: negative node capacity")
        if len(self.node_ids) != cap.shape[0] or len(self.reserved) != cap.shape[0]:
            raise ValueError(f"{self.name}: node ids and reserved flags must have one entry per node")
        missing = [r for r in self.necessary if r not in self.resources]
        if missing:
            raise ValueError(f"{self.name}: necessary resource(s) {missing} not among {self.resources}")

    @property
    def n_nodes(self) -> int:
        return int(self.capacity.shape[0])

    def usable(self) -> np.ndarray:
        """Capacity of the nodes ordinary jobs may use (reserved nodes have none)."""
        return np.where(self.reserved[:, None], 0, self.capacity).astype(np.int64)

    def totals(self) -> np.ndarray:
        """System total per resource over the usable nodes (the relaxed single pool of CPH)."""
        return self.usable().sum(axis=0)

    def chunk_columns(self) -> tuple[str, ...]:
        return tuple(f"chunk_{r}" for r in self.resources)


def queue_ewt(pool: NodePool, queue_names: Iterable[str | None], default: float | None = None) -> np.ndarray:
    """Expected waiting time (s) of each queue name, for PRB/CPH: ``pool.queues[name]``, else ``default``
    (None: ``pool.queues["default"]``, else :data:`DEFAULT_EWT`), so a trace queue the table lacks still ranks."""
    if default is None:
        default = pool.queues.get("default", DEFAULT_EWT)
    names = list(queue_names)
    table = pool.queues
    return np.fromiter(
        (table.get(n, default) if n is not None else default for n in names), dtype=np.float64, count=len(names)
    )
