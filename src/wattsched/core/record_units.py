"""What the ``line`` of a reject counts in each workload format: ``line``, ``row`` or ``record``.

Filled by the workload formats' registry (``workload/formats.py``, one declaration per format); a module of its
own, with no import, so that registering a format at import costs nothing (the CLI's ``--help`` reads the
registry for its texts).
"""

from __future__ import annotations

__all__ = ["record_unit", "register_record_unit"]

_UNITS: dict[str, str] = {}


def register_record_unit(fmt: str, unit: str) -> None:
    """Say what a reject's ``line`` counts in files of ``fmt`` (a ``provenance.format`` value)."""
    if unit not in ("line", "row", "record"):
        raise ValueError(f"a record unit is line, row or record, got {unit!r}")
    _UNITS[fmt] = unit


def record_unit(fmt: str | None) -> str:
    """``line``, ``row`` or ``record``: what the ``line`` of a reject of a ``fmt`` file counts (``line`` for a
    format no one registered)."""
    return _UNITS.get(fmt or "", "line")
