"""sacct's local times → epoch seconds: one time zone, DST-ambiguous and nonexistent local times counted.

sacct prints times in the client's local zone without an offset (unless ``SLURM_TIME_FORMAT`` says otherwise), so
the reader must be told the zone and must resolve the DST fall-back hour explicitly.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wattsched.core.schema import WorkloadError
from wattsched.workload.sacct.record import Reject

_NULL_TIMES = frozenset({"", "unknown", "none", "n/a", "invalid"})
_DIGITS = re.compile(r"-?\d+")


class Clock:
    """Local sacct times → epoch seconds in one zone, counting DST-ambiguous and nonexistent local times."""

    def __init__(self, timezone: str, ambiguous: str) -> None:
        try:
            self.zone = UTC if timezone.upper() in {"UTC", "Z", "ETC/UTC"} else ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise WorkloadError(f"unknown time zone {timezone!r}: {exc}") from exc
        self.fold = 1 if ambiguous == "later" else 0
        self.n_ambiguous = 0
        self.n_gap = 0
        #: local times read without an offset: they depend on the zone (epoch digits and ISO offsets do not)
        self.n_local = 0
        self._cache: dict[str, tuple[float, int]] = {}

    def epoch(self, text: str) -> float | None:
        text = text.strip()
        if text.lower() in _NULL_TIMES:
            return None
        if _DIGITS.fullmatch(text):
            return float(int(text))
        hit = self._cache.get(text)
        if hit is None:
            try:
                dt = datetime.fromisoformat(text)
            except ValueError as exc:
                raise Reject(None, f"time {text!r} is neither YYYY-MM-DDTHH:MM:SS nor epoch seconds") from exc
            hit = self._localize(dt)
            self._cache[text] = hit
        value, kind = hit
        self.n_ambiguous += kind == 1
        self.n_gap += kind == 2
        self.n_local += kind != 3
        return value

    def _localize(self, dt: datetime) -> tuple[float, int]:
        """``(epoch seconds, kind)``: kind 0 a plain local time, 1 in the DST fall-back hour, 2 in the
        spring-forward gap, 3 a time with its own offset (the zone does not apply)."""
        if dt.tzinfo is not None:
            return dt.timestamp(), 3
        if self.zone is UTC:
            return dt.replace(tzinfo=UTC).timestamp(), 0
        first, second = dt.replace(tzinfo=self.zone, fold=0), dt.replace(tzinfo=self.zone, fold=1)
        if first.utcoffset() == second.utcoffset():
            return first.timestamp(), 0
        back = first.astimezone(UTC).astimezone(self.zone).replace(tzinfo=None)
        if back == dt:  # both instants exist: the fall-back hour
            return dt.replace(tzinfo=self.zone, fold=self.fold).timestamp(), 1
        return first.timestamp(), 2  # the spring-forward gap
