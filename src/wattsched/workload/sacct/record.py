"""What both sacct parsers share: a refused record (:class:`Reject`) and its rejects-table row, the parsed-job
tuple they hand to :func:`~wattsched.workload.sacct.read_sacct`, and the name and state conversions."""

from __future__ import annotations

import hashlib
from typing import Any

#: One parsed job: ``(line, job id, raw record text, typed values by name)``.
ParsedJob = tuple[int, int, str, dict[str, Any]]


class Reject(Exception):
    """A record that cannot become a job: carries the field and the reason."""

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def reject_row(source: str, line: int, job_id: int | None, exc: Reject, raw: str) -> dict[str, Any]:
    field = exc.field or "record"  # a problem of the whole record (field count, layout) names the record
    return {"source": source, "line": line, "job_id": job_id, "field": field, "reason": exc.reason, "raw": raw}


def user_code(name: str) -> int:
    """Stable non-negative 48-bit code of a user or group name, so ids agree across files without a UID column."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=6).digest(), "big")


def job_state(text: str | None) -> str | None:
    """The State text without ``by <uid>`` and a trailing ``+`` (``CANCELLED by 123`` → ``CANCELLED``)."""
    if text is None or not text.strip():
        return None
    return text.strip().split(" by ", 1)[0].strip().rstrip("+") or None
