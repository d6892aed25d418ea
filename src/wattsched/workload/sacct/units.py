"""sacct field values: integers, ``[D-]HH:MM:SS`` durations, TRES strings, memory units, energy sentinels.

Each parser raises :class:`~wattsched.workload.sacct.record.Reject` naming the field when a value cannot be read.
"""

from __future__ import annotations

import re

from wattsched.workload.sacct.record import Reject

#: Time-limit texts that mean "no limit known".
UNLIMITED = frozenset({"unlimited", "partition_limit", "infinite", "", "none", "unknown"})
_MEM_UNITS = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_NO_VAL_MIN = 2**63  # Slurm's NO_VAL64 / INFINITE64 sentinels are larger
#: Slurm's 32-bit time-limit sentinels: NO_VAL (0xFFFFFFFE) and INFINITE (0xFFFFFFFF) minutes mean "no limit"
#: (read as 8,171 years they would dominate every walltime statistic); they become an unknown limit.
LIMIT_SENTINEL_MIN = 0xFFFFFFFE
#: Largest integer a column can hold (Int64); a longer number is a corrupt field, rejected before it overflows.
MAX_INT = 2**63 - 1


def limit_or_none(minutes: float | None) -> float | None:
    """A time limit in minutes, or None for Slurm's NO_VAL / INFINITE sentinels (no limit)."""
    return None if minutes is None or minutes >= LIMIT_SENTINEL_MIN else minutes


def parse_int(text: str, what: str) -> int | None:
    """An integer field (empty is null); ``what`` names the field in the reject."""
    text = text.strip()
    if text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise Reject(what, f"{what} {text[:40]!r} is not an integer") from None
    if abs(value) > MAX_INT:
        raise Reject(what, f"{what} {text[:40]!r} is beyond the Int64 range")
    return value


def tres_count(tres: dict[str, str], key: str, what: str) -> int | None:
    """The integer count of ``key`` in a TRES dict (None when absent); text or a fraction is a reject naming
    ``what`` (the TRES field) and the key."""
    text = tres.get(key)
    if text is None or text.strip() == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise Reject(what, f"{what} {key}={text[:40]!r} is not a count") from None
    if not (value == value and abs(value) <= MAX_INT and value == int(value)) or value < 0:
        raise Reject(what, f"{what} {key}={text[:40]!r} is not a non-negative whole count")
    return int(value)


def parse_duration(text: str, what: str, bare_unit: float) -> float | None:
    """``[D-]HH:MM:SS`` / ``MM:SS`` (a bare number counts ``bare_unit`` seconds); sentinels are null."""
    text = text.strip()
    if text.lower() in UNLIMITED:
        return None
    try:
        days = 0.0
        if "-" in text:
            d, text = text.split("-", 1)
            days = float(d)
        parts = [float(p) for p in text.split(":")]
    except ValueError:
        raise Reject(what, f"{what} {text!r} is not a duration [D-]HH:MM:SS") from None
    if len(parts) == 1:
        return days * 86400 + parts[0] * bare_unit
    if len(parts) > 3:
        raise Reject(what, f"{what} {text!r} is not a duration [D-]HH:MM:SS")
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    return days * 86400 + seconds


def parse_tres(text: str) -> dict[str, str]:
    """``cpu=4,mem=16G,gres/gpu=2`` → ``{"cpu": "4", "mem": "16G", "gres/gpu": "2"}`` (keys lower case)."""
    out: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def tres_mem_gb(text: str | None, what: str = "TRES mem") -> float | None:
    """A TRES memory amount (MB when bare, K/M/G/T/P suffix base 1024) in GB; other text is a reject."""
    if not text:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([KMGTP]?)", text.strip(), re.IGNORECASE)
    if not m:
        raise Reject(what, f"{what} mem={text[:40]!r} is not a memory amount such as 16G")
    return float(m.group(1)) * _MEM_UNITS[m.group(2).upper()] / 1024.0


def reqmem_gb(text: str | None, ncpus: int | None, nnodes: int | None, field: str) -> float | None:
    """``ReqMem`` in GB: ``16G`` (the job's total, Slurm ≥ 21.08), ``4000Mc`` per CPU or ``16Gn`` per node (older
    Slurm), MB when bare; per-CPU/per-node amounts need NCPUS/NNodes, else unknown. ``0``/empty is unknown."""
    if not text or not text.strip():
        return None
    m = re.fullmatch(r"([\d.]+)([KMGTP]?)([cn]?)", text.strip(), re.IGNORECASE)
    if not m:
        raise Reject(field, f"{text!r} is not a memory amount such as 16G, 4000Mc or 16Gn")
    amount = float(m.group(1)) * _MEM_UNITS[m.group(2).upper()] / 1024.0
    per = m.group(3).lower()
    factor = ncpus if per == "c" else nnodes if per == "n" else 1
    return None if amount == 0 or factor is None else amount * factor


def tres_gpus(tres: dict[str, str], what: str = "TRES") -> int | None:
    """GPUs of a TRES dict: ``gres/gpu``, else the typed ``gres/gpu:<type>`` counts summed, else null."""
    if "gres/gpu" in tres:
        return tres_count(tres, "gres/gpu", what)
    typed = [tres_count(tres, k, what) or 0 for k in tres if k.startswith("gres/gpu:")]
    return sum(typed) if typed else None


def energy_or_none(value: float | None) -> float | None:
    """Energy in J, null for 0 (no energy plugin) and Slurm's NO_VAL sentinels."""
    if value is None or value <= 0 or value >= _NO_VAL_MIN:
        return None
    return float(value)
