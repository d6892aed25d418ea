"""Size bounds: refuse a count whose estimated memory does not fit before anything is allocated.

A typo in a job count (``jobs = 300000000`` for 300,000) used to start a generator that asked for 745 GiB and
died with a MemoryError (or drove the machine into swap) minutes later. :func:`check_fits` estimates the memory
from the count and a measured per-item footprint and raises one ``ValueError`` line naming the option or key,
the count, the estimate and the memory it was compared with.

Two references: :func:`available_bytes` (memory free for use now, psutil's ``available``) where the work starts
right away (``wattsched generate``, a generator called from Python), and :func:`total_bytes` (the machine's
physical memory) where a file is only validated (a campaign spec is also read by ``campaign status`` and
``report``, whose answer must not depend on what else runs at that moment).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil


def available_bytes() -> int:
    """Memory available to a new allocation now, without swapping (bytes)."""
    return int(psutil.virtual_memory().available)


def total_bytes() -> int:
    """The machine's physical memory (bytes)."""
    return int(psutil.virtual_memory().total)


def free_disk_bytes(path: str | Path) -> int:
    """Free space on the file system that holds ``path`` (or its nearest existing parent), in bytes."""
    p = Path(path).absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    return int(shutil.disk_usage(p).free)


def _size(n: float) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n / 1024:,.1f} KiB" if n >= 1024 else f"{n:,.1f} B"


def check_fits(
    name: str,
    count: int,
    bytes_per_item: float,
    what: str,
    *,
    limit: int | None = None,
    limit_name: str = "available",
    unit: str = "job",
    resource: str = "memory",
    value: object = None,
) -> int:
    """The estimate ``count × bytes_per_item`` in bytes; ``ValueError`` naming ``name`` when it is above ``limit``
    (default: :func:`available_bytes`). ``what`` says what is sized (``"the m100 generator"``); ``value`` is the
    option's value when it is not the count itself (``--days``); ``resource`` names what ``limit`` measures."""
    estimate = int(count * bytes_per_item)
    if limit is None:
        limit = available_bytes()
    if estimate > limit:
        raise ValueError(
            f"{name} = {count if value is None else value:,}: {what} needs about {_size(estimate)} "
            f"({count:,} × {_size(bytes_per_item)} per {unit}, measured), "
            f"more than the {_size(limit)} of {resource} {limit_name}; ask for fewer"
        )
    return estimate
