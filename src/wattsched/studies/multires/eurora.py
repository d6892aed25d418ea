"""The Eurora machine (CINECA, 2014) as a :class:`NodePool` (paper 001 §2; docs/dispatch.md).

Eurora's node and queue tables are facts of the machine, so the preset ships them as package data
(``platforms/eurora.toml``, a ``multires`` platform file: docs/platforms.md) and works without the data directory;
:func:`read_node_config` and :func:`read_queue_config` read the same tables from the ``system_configs`` files of the
Eurora simulator data (``nodes_#8/32/64``, ``system_queues``) when they are at hand.

Units: node memory is in KiB, the unit the Eurora job traces use for their per-node memory (the data README says
"bytes", but 33,554,432 bytes would be 32 MB; as KiB it is 32 GiB, and the traces' 14,680,064 KiB chunks match their
"14" GB requests). Node ids are the config's 0-based ones; the job traces number the same nodes 1–64.

Expected waiting times per queue ([AMBIG-1.5]): unpublished for Eurora. ``ewt="constant"`` (the default,
docs/decisions.md) gives every queue ``default_ewt`` (1800 s, AccaSim's default); ``"queues-file"`` uses the queue
table's maximum waits; a dict is used as given. ``NodePool.queues`` also holds the key ``"default"`` (AccaSim's
convention): :func:`queue_ewt` gives it to queues the table does not name (the traces' queue ``R`` is one).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from wattsched.studies.multires.nodes import (
    DEFAULT_EWT,
    EwtChoice,
    NodeConfigError,
    NodePool,
    PoolPlatform,
    ewt_table,
    load_pool,
    load_pool_platform,
    queue_ewt,
)

__all__ = [
    "DEFAULT_EWT",
    "EURORA_PRESET",
    "EURORA_QUEUES",
    "EURORA_RESOURCES",
    "NodeConfigError",
    "eurora_pool",
    "load_pool",
    "queue_ewt",
    "read_node_config",
    "read_queue_config",
]

#: Resource types of a Eurora node, in the column order of the ``nodes_#N`` files.
EURORA_RESOURCES: tuple[str, ...] = ("cores", "gpus", "mics", "mem")
#: The built-in machine: the package's ``platforms/eurora.toml`` (kind ``multires``, docs/platforms.md).
EURORA_PRESET: PoolPlatform = load_pool_platform("eurora")
#: Eurora's queues and their maximum waiting time (s), as in ``system_configs/system_queues`` (from the preset).
EURORA_QUEUES: dict[str, float] = dict(EURORA_PRESET.queues)

_NODE_FILES = (8, 32, 64)


def _lines(path: Path) -> list[tuple[int, list[str]]]:
    """Non-blank, non-comment lines split on whitespace, with their 1-based numbers."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise NodeConfigError(f"{path}: cannot read: {exc}") from None
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].strip()
        if body:
            out.append((number, body.split()))
    if not out:
        raise NodeConfigError(f"{path}: no entries")
    return out


def read_node_config(path: str | Path) -> NodePool:
    """Read a ``nodes_#N`` file (``node_id cores gpus mics mem_KiB reserved`` per line) into a :class:`NodePool`.

    Every field must be a non-negative integer, ``reserved`` 0 or 1, node ids unique. Queues are left empty (they
    live in another file): see :func:`eurora_pool`.
    """
    path = Path(path)
    ids: list[int] = []
    rows: list[list[int]] = []
    reserved: list[bool] = []
    seen: dict[int, int] = {}
    for number, fields in _lines(path):
        where = f"{path}:{number}"
        if len(fields) != 6:
            raise NodeConfigError(
                f"{where}: expected 6 fields 'node_id cores gpus mics mem reserved', got {len(fields)}: {fields}"
            )
        try:
            values = [int(f) for f in fields]
        except ValueError:
            raise NodeConfigError(f"{where}: every field must be an integer, got {fields}") from None
        if min(values) < 0:
            raise NodeConfigError(f"{where}: negative value in {fields}")
        if values[5] not in (0, 1):
            raise NodeConfigError(f"{where}: 'reserved' must be 0 or 1, got {values[5]}")
        if values[0] in seen:
            raise NodeConfigError(f"{where}: node id {values[0]} already defined on line {seen[values[0]]}")
        seen[values[0]] = number
        ids.append(values[0])
        rows.append(values[1:5])
        reserved.append(bool(values[5]))
    return NodePool(
        name=path.name,
        resources=EURORA_RESOURCES,
        capacity=np.asarray(rows, dtype=np.int64),
        node_ids=np.asarray(ids, dtype=np.int64),
        reserved=np.asarray(reserved, dtype=bool),
        necessary=("cores",),
    )


def read_queue_config(path: str | Path) -> dict[str, float]:
    """Read a ``system_queues`` file (``name max_wait_s`` per line) into ``{queue: seconds}``."""
    path = Path(path)
    queues: dict[str, float] = {}
    for number, fields in _lines(path):
        where = f"{path}:{number}"
        if len(fields) != 2:
            raise NodeConfigError(f"{where}: expected 2 fields 'name max_wait_s', got {len(fields)}: {fields}")
        name, text = fields
        try:
            wait = float(text)
        except ValueError:
            raise NodeConfigError(f"{where}: maximum wait {text!r} of queue {name!r} is not a number") from None
        if not (math.isfinite(wait) and wait > 0):
            raise NodeConfigError(f"{where}: maximum wait of queue {name!r} must be positive seconds, got {text!r}")
        if name in queues:
            raise NodeConfigError(f"{where}: queue {name!r} defined twice")
        queues[name] = wait
    return queues


def eurora_pool(
    config_dir: str | Path | None = None,
    *,
    nodes: int = 64,
    ewt: EwtChoice = "constant",
    default_ewt: float | None = None,
) -> NodePool:
    """The Eurora machine: built in (``config_dir=None``) or read from a ``system_configs`` directory.

    ``nodes`` picks ``nodes_#<nodes>`` in the directory (8, 32, 64 exist); built in, any count up to 64 with the
    files' half-MIC, half-GPU layout. ``ewt`` sets the expected waiting time per queue (see the module docstring);
    ``pool.queues["default"]`` is ``default_ewt`` (None: the preset's, :data:`DEFAULT_EWT`) unless the dict names
    it.
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int | np.integer) or nodes < 1:
        raise ValueError(f"nodes must be a positive integer, got {nodes!r}")
    if config_dir is None:
        return EURORA_PRESET.pool(int(nodes), ewt=ewt, default_ewt=default_ewt)
    directory = Path(config_dir)
    if not directory.is_dir():
        raise NodeConfigError(f"{directory}: not a directory (expected Eurora's system_configs)")
    node_file = directory / f"nodes_#{nodes}"
    if not node_file.is_file():
        present = sorted(p.name for p in directory.glob("nodes_#*"))
        raise NodeConfigError(f"{node_file}: no such node file (present: {present}; built in: {_NODE_FILES})")
    pool = read_node_config(node_file)
    queue_file = directory / "system_queues"
    # "queues-file" needs the file (a clear error when absent); otherwise it only names the known queues
    queues = read_queue_config(queue_file) if ewt == "queues-file" or queue_file.is_file() else {}
    name = f"eurora-{nodes} ({directory})"
    return NodePool(
        name=name,
        resources=pool.resources,
        capacity=pool.capacity,
        node_ids=pool.node_ids,
        reserved=pool.reserved,
        necessary=pool.necessary,
        queues=ewt_table(ewt, queues, DEFAULT_EWT if default_ewt is None else default_ewt),
    )
