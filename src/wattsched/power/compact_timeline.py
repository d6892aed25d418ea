"""The power timeline in its compact form: ``time`` and ``dynamic`` only, the rest derived on demand.

A ``power_timeline`` table holds four float64 columns, ``time, total, dynamic, cap``; ``total`` is
``dynamic + platform.nodes·idle`` and ``cap`` is the cap schedule read at each row, so half of its 32 bytes a
row repeat what two numbers and a handful of cap pieces already say. :class:`PowerSteps` keeps the two columns
that carry information (16 B a row: the run's memory is dominated by this timeline, ~65 M rows for a 231k-job
Marconi100 campaign) and derives the others exactly as the table computes them, for a window of rows
(:meth:`cap_rows`) or for the whole table (:meth:`frame`, the very table ``power_timeline`` returns, for files
and reports).

float32 would halve it again but is not exact: times are float64 sums ``start + k·period`` and levels are float64
running sums of float32 samples (exact in float64, not in float32), and every metric must keep its bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from wattsched.core.memory import populated_empty
from wattsched.power.platform import PowerCapSchedule


@dataclass(frozen=True, eq=False)
class PowerSteps:
    """The platform's power as an exact step function: ``dynamic[i]`` W holds on ``[time[i], time[i+1])``.

    ``idle_platform_watts`` gives ``total = dynamic + idle_platform_watts``; ``cap`` is the schedule whose
    dynamic cap is in force at each row (a row before 0 takes the first cap, as ``cap_at`` does).
    """

    time: np.ndarray
    dynamic: np.ndarray
    idle_platform_watts: float
    cap: PowerCapSchedule

    @property
    def height(self) -> int:
        """Rows of the step function (as ``DataFrame.height``)."""
        return int(self.time.size)

    def _cap_bounds(self) -> np.ndarray:
        """The first row of each cap piece (pieces that start after the last row start at ``height``)."""
        bounds = np.searchsorted(self.time, np.asarray(self.cap.times), side="left")
        bounds[0] = 0
        return bounds

    def cap_rows(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """The cap (W; NaN where there is none) of rows ``[lo, hi)``: an array of the window's size only."""
        hi = self.height if hi is None else hi
        values = np.array([np.nan if c is None else float(c) for c in self.cap.caps])
        piece = np.searchsorted(self._cap_bounds(), np.arange(lo, hi), side="right") - 1
        return values[piece]

    def total(self) -> np.ndarray:
        """``dynamic + idle_platform_watts`` over every row (a full-length array, made on demand)."""
        return np.add(self.dynamic, self.idle_platform_watts, out=populated_empty(self.height))

    def frame(self) -> pl.DataFrame:
        """The ``time, total, dynamic, cap`` table (cap null where there is none): ``power_timeline``'s output."""
        rows = self.height
        bounds = self._cap_bounds()
        counts = np.diff(np.append(bounds, rows))
        cap_col = populated_empty(rows)
        for c, lo, k in zip(self.cap.caps, bounds, counts, strict=True):
            cap_col[lo : lo + k] = np.nan if c is None else float(c)
        return pl.DataFrame(
            [
                pl.Series("time", self.time, dtype=pl.Float64),
                pl.Series("total", self.total(), dtype=pl.Float64),
                pl.Series("dynamic", self.dynamic, dtype=pl.Float64),
                pl.Series("cap", cap_col, dtype=pl.Float64, nan_to_null=True),
            ]
        )

    def window(self, t0: float, t1: float) -> pl.DataFrame:
        """:meth:`frame` of the rows whose piece may overlap ``[t0, t1)`` only (the row in force at ``t0`` to the
        last row before ``t1``)."""
        lo = max(int(np.searchsorted(self.time, t0, side="right")) - 1, 0)
        hi = max(int(np.searchsorted(self.time, t1, side="left")), lo + 1)
        # a row's cap depends on its time alone, so the slice's own frame has the whole frame's caps
        return PowerSteps(self.time[lo:hi], self.dynamic[lo:hi], self.idle_platform_watts, self.cap).frame()
