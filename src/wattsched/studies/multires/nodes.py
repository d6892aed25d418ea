"""Multi-resource nodes (paper 001 §4; docs/dispatch.md): each node has a vector of resources (cores, GPUs, MICs,
memory) that several jobs may share. A job asks for ``chunks`` × a per-chunk vector (PBS ``select`` semantics);
chunks of one job may share a node.

The job table of a multi-resource workload carries ``chunks`` and one ``chunk_<resource>`` column per resource of
the pool (amounts per chunk, in the pool's units); see :mod:`wattsched.workload.eurora`.

A pool is described by a platform file of kind ``multires`` (docs/platforms.md): node groups, resources and
queues. :func:`load_pool` reads a preset (``eurora``, shipped in ``platforms/eurora.toml``) or a user's file
through the same reader (:mod:`wattsched.core.platform_file`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from wattsched.core.platform_file import PlatformFileError, read_platform_file, validate_platform

#: Expected waiting time (s) of a queue no table names (AccaSim's default; docs/decisions.md [AMBIG-1.5]).
DEFAULT_EWT = 1800.0

EwtChoice = Literal["constant", "queues-file"] | Mapping[str, float]


class NodeConfigError(PlatformFileError):
    """A node or queue table or a pool file that cannot be read: names the file, the line or field and why."""


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


def ewt_table(ewt: EwtChoice, table: Mapping[str, float], default_ewt: float) -> dict[str, float]:
    """Expected waiting time (s) per queue ([AMBIG-1.5]): ``"constant"`` gives every queue of ``table``
    ``default_ewt``; ``"queues-file"`` uses the table's maximum waits; a dict is used as given. The key
    ``"default"`` (AccaSim's convention) is ``default_ewt`` unless the dict names it."""
    if not (math.isfinite(default_ewt) and default_ewt > 0):
        raise ValueError(f"default_ewt must be positive seconds, got {default_ewt!r}")
    if isinstance(ewt, Mapping):
        out = {}
        for name, value in ewt.items():
            value = float(value)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"expected waiting time of queue {name!r} must be positive seconds, got {value!r}")
            out[str(name)] = value
    elif ewt == "constant":
        out = dict.fromkeys(table, float(default_ewt))
    elif ewt == "queues-file":
        out = dict(table)
    else:
        raise ValueError(f"ewt must be 'constant', 'queues-file' or a dict of seconds per queue, got {ewt!r}")
    out.setdefault("default", float(default_ewt))
    return out


# ------------------------------------------------------------------------------------------- platform files


class NodeGroup(BaseModel):
    """``count`` identical nodes: ``capacity`` per resource (non-negative integers in the workload's units)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int = Field(gt=0)
    capacity: dict[str, int]
    reserved: bool = False

    @model_validator(mode="after")
    def _non_negative(self) -> NodeGroup:
        bad = {k: v for k, v in self.capacity.items() if v < 0}
        if bad:
            raise ValueError(f"capacity must be non-negative, got {bad}")
        return self


class PoolPlatform(BaseModel):
    """A platform file of kind ``multires``: the node groups (in node-id order), resources and queues."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    resources: tuple[str, ...] = Field(min_length=1)
    necessary: tuple[str, ...] = ("cores",)
    default_ewt: float = Field(default=DEFAULT_EWT, gt=0, allow_inf_nan=False)
    groups: tuple[NodeGroup, ...] = Field(min_length=1)
    queues: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> PoolPlatform:
        if len(set(self.resources)) != len(self.resources):
            raise ValueError(f"resources must be unique, got {list(self.resources)}")
        missing = [r for r in self.necessary if r not in self.resources]
        if missing:
            raise ValueError(f"necessary resource(s) {missing} are not among resources {list(self.resources)}")
        for i, group in enumerate(self.groups):
            if set(group.capacity) != set(self.resources):
                raise ValueError(
                    f"groups.{i}.capacity must name exactly the resources {list(self.resources)}, "
                    f"got {list(group.capacity)}"
                )
        bad = {q: w for q, w in self.queues.items() if not (math.isfinite(w) and w > 0)}
        if bad:
            raise ValueError(f"queue maximum waits must be positive seconds, got {bad}")
        return self

    @property
    def n_nodes(self) -> int:
        return sum(g.count for g in self.groups)

    def counts(self, nodes: int) -> list[int]:
        """Nodes taken from each group for a pool of ``nodes``: each group in proportion (rounded down), the last
        one the remainder, so Eurora's 8- and 32-node pools keep its half-MIC, half-GPU layout."""
        total = self.n_nodes
        taken = [g.count * nodes // total for g in self.groups[:-1]]
        return [*taken, nodes - sum(taken)]

    def pool(
        self, nodes: int | None = None, *, ewt: EwtChoice = "constant", default_ewt: float | None = None
    ) -> NodePool:
        """A :class:`NodePool` of ``nodes`` nodes (None: all; see :meth:`counts`), waiting times per ``ewt``."""
        n = self.n_nodes if nodes is None else nodes
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"nodes must be a positive integer, got {n!r}")
        if n > self.n_nodes:
            raise ValueError(f"{self.name} has {self.n_nodes} nodes; got nodes={n}")
        rows, reserved = [], []
        for group, count in zip(self.groups, self.counts(int(n)), strict=True):
            rows += [[group.capacity[r] for r in self.resources]] * count
            reserved += [group.reserved] * count
        return NodePool(
            name=f"{self.name}-{n}",
            resources=self.resources,
            capacity=np.asarray(rows, dtype=np.int64).reshape(int(n), len(self.resources)),
            node_ids=np.arange(int(n), dtype=np.int64),
            reserved=np.asarray(reserved, dtype=bool),
            necessary=self.necessary,
            queues=ewt_table(ewt, self.queues, self.default_ewt if default_ewt is None else default_ewt),
        )


def load_pool_platform(name_or_path: str | Path) -> PoolPlatform:
    """A ``multires`` platform file, preset (``eurora``) or path, validated (docs/platforms.md)."""
    file = read_platform_file(name_or_path, "multires", error=NodeConfigError)
    return validate_platform(PoolPlatform, file.data, file.source, error=NodeConfigError)


def load_pool(
    name_or_path: str | Path,
    *,
    nodes: int | None = None,
    ewt: EwtChoice = "constant",
    default_ewt: float | None = None,
) -> NodePool:
    """The :class:`NodePool` of a ``multires`` platform file: a preset (``eurora``) or a user's TOML/YAML file.

    ``nodes`` takes a smaller pool (each node group in proportion); ``ewt`` and ``default_ewt`` (None: the file's)
    set the expected waiting time per queue, see :func:`ewt_table`.
    """
    return load_pool_platform(name_or_path).pool(nodes, ewt=ewt, default_ewt=default_ewt)
