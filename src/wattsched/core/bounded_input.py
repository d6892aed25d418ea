"""Compressed inputs read through a size limit, so that no input file can take the machine's memory.

A gzip file of 1 MB can hold a GiB of zeros. Read whole and parsed, such a file made a reader peak at 12.5 GB (a
5 GiB one would exhaust a 23 GB machine); under a memory cap it ended in ``MemoryError`` or a Rust panic. Every
reader of a compressed workload (SWF, sacct, Batsim and sacct JSON, CSV job tables) decompresses through
:func:`read_input_bytes`: in chunks, counting, and refusing in one line as soon as the output passes
:func:`decompressed_limit` — before the memory is spent.

The limit: ``WATTSCHED_MAX_INPUT_GB`` when set (gigabytes of decompressed input, to raise or lower it), else a
sixteenth of the memory this process may use: the smallest of the machine's physical memory, the address-space
limit (``ulimit -v``) and the cgroup's ``memory.max``. Sixteen because parsing takes memory: the SWF reader peaked
at about 12× the decompressed size on a file of zeros (its worst case: one line), a job table at 3–5×. On a 23 GB
machine the default is 1.4 GB of text, about 10 million SWF lines; under a 1 GB cap it is 64 MB.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import resource
import zlib
from pathlib import Path

from wattsched.core.errors import WorkloadError

__all__ = ["LIMIT_VARIABLE", "InputTooLargeError", "decompressed_limit", "is_gzip", "read_input_bytes"]

#: The environment variable that sets the limit, in gigabytes (10**9 bytes) of decompressed input.
LIMIT_VARIABLE = "WATTSCHED_MAX_INPUT_GB"

#: The share of the usable memory a decompressed input may take (see the module docstring).
MEMORY_SHARE = 1 / 16

_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"


class InputTooLargeError(WorkloadError):
    """A compressed input that decompresses to more than the limit."""


def _cgroup_limit() -> int | None:
    """The cgroup v2 ``memory.max`` of this process, when it is a number."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                text = (Path("/sys/fs/cgroup") / line[3:].lstrip("/") / "memory.max").read_text().strip()
                return None if text == "max" else int(text)
    return None


def usable_memory() -> int:
    """Bytes of memory this process may use: the least of physical memory, ``ulimit -v`` and ``memory.max``."""
    limits = [os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft > 0:
        limits.append(soft)
    cgroup = _cgroup_limit()
    if cgroup:
        limits.append(cgroup)
    return min(limits)


def decompressed_limit() -> int:
    """The most bytes a compressed input may decompress to (see the module docstring)."""
    text = os.environ.get(LIMIT_VARIABLE, "").strip()
    if text:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not value > 0 or value == float("inf"):
            raise ValueError(f"{LIMIT_VARIABLE}={text!r}: give a positive number of gigabytes")
        return int(value * 1e9)
    return int(usable_memory() * MEMORY_SHARE)


def is_gzip(path: Path) -> bool:
    """Whether ``path`` starts with gzip's magic bytes (its name may say otherwise)."""
    with Path(path).open("rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def read_input_bytes(path: str | Path, *, gzip_by_name: bool = False) -> bytes:
    """The bytes of an input file, gunzipped when it starts with gzip's magic bytes (or, with ``gzip_by_name``,
    when its name ends in ``.gz``), at most :func:`decompressed_limit` of them: a longer output is a one-line
    :class:`InputTooLargeError` naming the file and how to raise the limit; a corrupt stream a
    :class:`~wattsched.core.errors.WorkloadError`."""
    path = Path(path)
    if not path.exists():
        raise WorkloadError(f"{path}: file does not exist")
    if not path.is_file():
        raise WorkloadError(f"{path}: not a regular file")
    if not is_gzip(path) and not (gzip_by_name and path.name.lower().endswith(".gz")):
        return path.read_bytes()
    limit = decompressed_limit()
    parts: list[bytes] = []
    total = 0
    try:
        with gzip.open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                total += len(chunk)
                if total > limit:
                    raise InputTooLargeError(
                        f"{path}: decompresses to more than {limit / 1e9:.3g} GB, the limit for one input on this"
                        f" machine (a sixteenth of its usable memory); set {LIMIT_VARIABLE} to raise it"
                    )
                parts.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise WorkloadError(f"{path}: corrupt gzip, cannot gunzip: {exc}") from exc
    return b"".join(parts)
