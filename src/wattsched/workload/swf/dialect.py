"""SWF written with ``;`` between the fields and text in some of them: the EAMC repository's module traces
(``Models/traceD2-2.swf``: 18 fields per line, the user as a name, field 16 a module tag CM/DAM/ESB of the
DEEP-EST modular machine).

The lines are rewritten, line for line (so line numbers are the file's), into standard SWF before the compiled
tokenizer reads them: ``;`` becomes a space, and a text value of the user (12), group (13), application (14),
queue (15) or partition (16) field becomes a number, users and groups by order of first appearance (as the
archive anonymises them) and the three text fields kept by name through :func:`restore_labels`. Any other text is
left for the reader to reject as in any SWF file."""

from __future__ import annotations

import polars as pl

#: 0-based positions of the SWF fields that may hold text in this dialect, and the canonical column of each.
TEXT_FIELDS = {11: "user_id", 12: "group_id", 13: "app_id", 14: "queue", 15: "partition"}
#: Columns whose names are restored after reading (the others stay numbered, as anonymised ids).
NAMED_COLUMNS = ("app_id", "queue", "partition")


def is_semicolon_swf(data: bytes) -> bool:
    """True when the first data line (not blank, not a ``;`` comment) separates its fields with ``;``."""
    for raw in data[:65536].splitlines():
        line = raw.strip()
        if not line or line.startswith(b";"):
            continue
        return b";" in line
    return False


def rewrite_semicolon_swf(data: bytes) -> tuple[bytes, dict[str, dict[int, str]]]:
    """The file as standard SWF, and per text column the number given to each name (to restore them)."""
    codes: dict[int, dict[str, int]] = {k: {} for k in TEXT_FIELDS}
    out = []
    for raw in data.splitlines():
        line = raw.strip()
        if not line or line.startswith(b";"):
            out.append(raw)
            continue
        fields = line.decode("utf-8", errors="replace").split(";")
        for k, value in enumerate(fields):
            value = value.strip()
            if k in codes and value and not _is_number(value):
                value = str(codes[k].setdefault(value, len(codes[k]) + 1))
            fields[k] = value
        out.append(" ".join(fields).encode())
    labels = {TEXT_FIELDS[k]: {n: name for name, n in names.items()} for k, names in codes.items() if names}
    return b"\n".join(out) + b"\n", labels


def restore_labels(jobs: pl.DataFrame, labels: dict[str, dict[int, str]]) -> pl.DataFrame:
    """The text columns (:data:`NAMED_COLUMNS`) back to their names; numbered users and groups stay numbers."""
    for column, names in labels.items():
        if column in NAMED_COLUMNS and column in jobs.columns:
            mapping = {str(n): name for n, name in names.items()}
            jobs = jobs.with_columns(pl.col(column).replace(mapping))
    return jobs


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
