"""SWF header comments: ``; Key: value`` lines into a dict, and the numbers the reader takes from them."""

from __future__ import annotations

import math
import re
from typing import Any

from wattsched.core.schema import WorkloadError

#: Header keys that may repeat; they are always stored as lists.
_LIST_KEYS = frozenset({"Queue", "Queues", "Partition", "Partitions", "Note"})

# A header key line: ``; Key: value`` with the key close to the ``;`` (continuation lines are indented
# further) and not a URL (``;   http://...`` continues the previous value).
_HEADER_RE = re.compile(r"^\s*;[ \t]{0,3}([A-Za-z][A-Za-z0-9_]*)[ \t]*:(?!//)(.*)$")


def parse_header(lines: list[str]) -> dict[str, Any]:
    """``; Key: value`` lines into a dict; repeatable keys become lists, indented lines continue a value."""
    header: dict[str, Any] = {}
    last: str | None = None
    for text in lines:
        m = _HEADER_RE.match(text)
        if m:
            key, value = m.group(1), m.group(2).strip()
            if key in _LIST_KEYS:
                header.setdefault(key, []).append(value)
            elif key in header:
                old = header[key]
                header[key] = [*old, value] if isinstance(old, list) else [old, value]
            else:
                header[key] = value
            last = key
            continue
        body = text.strip()[1:].strip()
        if not body:
            last = None  # a bare ';' ends a continued value
        elif last is not None:
            old = header[last]
            if isinstance(old, list):
                old[-1] = f"{old[-1]}\n{body}" if old[-1] else body
            else:
                header[last] = f"{old}\n{body}" if old else body
    return header


def header_number(header: dict[str, Any], key: str) -> float | None:
    value = header.get(key)
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None:
        return None
    try:
        number = float(str(value).split()[0])
    except (ValueError, IndexError):
        return None
    return number if math.isfinite(number) else None


def header_machine_size(machine_size: int | None, header: dict[str, Any]) -> tuple[int | None, str]:
    """The machine size and where it came from: argument, else header MaxProcs, else MaxNodes, else None."""
    if machine_size is not None:
        if int(machine_size) < 1:
            raise WorkloadError(f"machine_size must be a positive number of processors, got {machine_size!r}")
        return int(machine_size), "the machine_size argument"
    for key in ("MaxProcs", "MaxNodes"):
        value = header_number(header, key)
        if value is not None and value > 0:
            return int(value), f"header {key}"
    return None, ""
