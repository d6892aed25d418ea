"""The job details table of paper 004 (RMAP): per application, (time, total package power) of each configuration.

Columns ``app, nodes, cores, cap, time, power``; the paper's Table 3 names ``job_id, pkg_cap_0, exec_time,
tot_pkg`` are accepted on input. :meth:`ConfigTable.fastest` is the Naive/Adaptive query: argmin time over the
configurations with power ≤ bound (and nodes ≤ a node bound), ties by fewer nodes, then less power, then table
order. Per distinct node count (≤ 15 on Cab) the eligible configurations are sorted by power with a prefix-argmin
of (time, nodes, power), so a query is two binary searches: O(log K). Nothing in the table assumes the Cab grid.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import polars as pl

from wattsched.core.atomic import atomic_table

if TYPE_CHECKING:
    from polars._typing import ColumnNameOrSelector, PolarsDataType

__all__ = ["ConfigTable", "JobDetails"]

_COLUMNS = ("app", "nodes", "cores", "cap", "time", "power")
_PAPER_NAMES = {"job_id": "app", "pkg_cap_0": "cap", "exec_time": "time", "tot_pkg": "power"}


def _cap_key(cap: float) -> float:
    return round(float(cap), 6)


def _readonly(values: Any, dtype: type) -> np.ndarray:
    array: np.ndarray = np.array(values, dtype=dtype, copy=True).reshape(-1)
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class ConfigTable:
    """The configurations of one application and their time (s) and total package power (W).

    Arrays are copied and made read-only. Equality is identity (arrays have no single truth value).
    """

    app: str
    nodes: np.ndarray
    cores: np.ndarray
    cap: np.ndarray
    time: np.ndarray
    power: np.ndarray
    _levels: np.ndarray = field(init=False, repr=False)
    _sorted_power: tuple[np.ndarray, ...] = field(init=False, repr=False)
    _best: tuple[np.ndarray, ...] = field(init=False, repr=False)
    _lookup: dict[tuple[int, int, float], int] = field(init=False, repr=False)
    _packed_key: tuple[int, float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        arrays = {
            "nodes": _readonly(self.nodes, np.int64),
            "cores": _readonly(self.cores, np.int64),
            "cap": _readonly(self.cap, np.float64),
            "time": _readonly(self.time, np.float64),
            "power": _readonly(self.power, np.float64),
        }
        k = len(arrays["nodes"])
        if k == 0:
            raise ValueError(f"{self.app}: a configuration table needs at least one configuration")
        if any(len(v) != k for v in arrays.values()):
            lengths = {name: len(value) for name, value in arrays.items()}
            raise ValueError(f"{self.app}: columns differ in length: {lengths}")
        if (arrays["nodes"] < 1).any() or (arrays["cores"] < 1).any():
            raise ValueError(f"{self.app}: nodes and cores must be ≥ 1")
        for name in ("cap", "time", "power"):
            if not np.isfinite(arrays[name]).all() or (arrays[name] < 0).any():
                raise ValueError(f"{self.app}: {name} must be finite and ≥ 0")
        for name, value in arrays.items():
            object.__setattr__(self, name, value)
        lookup: dict[tuple[int, int, float], int] = {}
        for i, key in enumerate(
            zip(arrays["nodes"].tolist(), arrays["cores"].tolist(), arrays["cap"].tolist(), strict=True)
        ):
            full = (key[0], key[1], _cap_key(key[2]))
            if full in lookup:
                raise ValueError(f"{self.app}: configuration {full} appears twice (rows {lookup[full]} and {i})")
            lookup[full] = i
        object.__setattr__(self, "_lookup", lookup)
        # the packed configuration's cores and cap, asked for at every Traditional decision: computed once (the
        # reductions per call were a third of the RMAP grid's time, measured by profiling reproduce 004)
        object.__setattr__(self, "_packed_key", (int(arrays["cores"].max()), float(arrays["cap"].max())))
        # rank of every config in the tie-broken order (time, nodes, power, row); prefix minima of ranks are argmins
        order = np.lexsort((np.arange(k), self.power, self.nodes, self.time))
        rank = np.empty(k, dtype=np.int64)
        rank[order] = np.arange(k)
        levels = np.unique(self.nodes)
        sorted_power, best = [], []
        for level in levels:
            members = np.flatnonzero(self.nodes <= level)
            members = members[np.argsort(self.power[members], kind="stable")]
            sorted_power.append(_readonly(self.power[members], np.float64))
            best.append(_readonly(order[np.minimum.accumulate(rank[members])], np.int64))
        object.__setattr__(self, "_levels", _readonly(levels, np.int64))
        object.__setattr__(self, "_sorted_power", tuple(sorted_power))
        object.__setattr__(self, "_best", tuple(best))

    def __len__(self) -> int:
        return len(self.nodes)

    def fastest(self, power_bound: float, node_bound: int | None = None) -> int | None:
        """Index of the fastest config with power ≤ ``power_bound`` (and nodes ≤ ``node_bound``), or None.

        Ties go to fewer nodes, then less power, then the earlier row — our rule for Naive — so that every
        policy using the table decides the same way. Two binary searches over pre-computed prefix argmins: O(log K).
        """
        if math.isnan(power_bound):
            raise ValueError("power_bound is NaN")
        if node_bound is None:
            level = len(self._levels) - 1
        else:
            level = int(np.searchsorted(self._levels, node_bound, side="right")) - 1
            if level < 0:
                return None
        position = int(np.searchsorted(self._sorted_power[level], power_bound, side="right")) - 1
        if position < 0:
            return None
        return int(self._best[level][position])

    def index(self, n: int, c: int, p: float) -> int | None:
        """Row of configuration (n × c, p), or None when the table lacks it (e.g. a dropped measurement)."""
        return self._lookup.get((int(n), int(c), _cap_key(p)))

    def packed(self, n: int, cores: int | None = None, cap: float | None = None) -> int | None:
        """Row of the packed config (n × all cores, highest cap) — Traditional's; defaults are the table's maxima."""
        cores_, cap_ = self._packed_key
        return self.index(n, cores_ if cores is None else cores, cap_ if cap is None else cap)

    def label(self, i: int) -> str:
        """``(n×c, p)`` as the paper writes configurations, for logs and figures."""
        return f"({self.nodes[i]}×{self.cores[i]}, {self.cap[i]:g})"

    def to_frame(self) -> pl.DataFrame:
        """The table as rows (app, nodes, cores, cap, time, power) in row order."""
        return pl.DataFrame(
            {
                "app": [self.app] * len(self),
                "nodes": self.nodes,
                "cores": self.cores,
                "cap": self.cap,
                "time": self.time,
                "power": self.power,
            }
        )


class JobDetails(Mapping[str, ConfigTable]):
    """The paper's ``job_details_table``: app → :class:`ConfigTable`, measured (oracle) or predicted."""

    def __init__(self, tables: Mapping[str, ConfigTable] | Iterable[ConfigTable]) -> None:
        items = tables.values() if isinstance(tables, Mapping) else tables
        self._tables: dict[str, ConfigTable] = {}
        for table in items:
            if table.app in self._tables:
                raise ValueError(f"application {table.app!r} appears twice")
            self._tables[table.app] = table

    def __getitem__(self, app: str) -> ConfigTable:
        return self._tables[app]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def __repr__(self) -> str:
        return f"JobDetails({', '.join(f'{a}: {len(t)}' for a, t in self._tables.items())})"

    @property
    def apps(self) -> tuple[str, ...]:
        """Application names in table order."""
        return tuple(self._tables)

    @classmethod
    def from_frame(cls, frame: pl.DataFrame) -> JobDetails:
        """Tables from rows (app, nodes, cores, cap, time, power); Table 3's column names are accepted too.

        Apps keep their first-appearance order and configs their row order, so indices are reproducible.
        """
        frame = frame.rename({k: v for k, v in _PAPER_NAMES.items() if k in frame.columns and v not in frame.columns})
        missing = [c for c in _COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"job details frame lacks column(s) {missing}; has {frame.columns}")
        tables = []
        for part in frame.select(_COLUMNS).partition_by("app", maintain_order=True):
            tables.append(
                ConfigTable(
                    app=str(part["app"][0]),
                    nodes=part["nodes"].to_numpy(),
                    cores=part["cores"].to_numpy(),
                    cap=part["cap"].to_numpy(),
                    time=part["time"].to_numpy(),
                    power=part["power"].to_numpy(),
                )
            )
        return cls(tables)

    def to_frame(self) -> pl.DataFrame:
        """All tables as rows (app, nodes, cores, cap, time, power)."""
        schema = {"app": pl.String, "nodes": pl.Int64, "cores": pl.Int64, "cap": pl.Float64, "time": pl.Float64,
                  "power": pl.Float64}  # fmt: skip
        if not self._tables:
            return pl.DataFrame(schema=schema)
        # DataFrame.cast wants a Mapping keyed by column name, selector or dtype (invariant in the key)
        return pl.concat([t.to_frame() for t in self._tables.values()]).cast(
            cast("Mapping[ColumnNameOrSelector | PolarsDataType, PolarsDataType]", schema)
        )

    @classmethod
    def read(cls, path: str | Path) -> JobDetails:
        """Read a ``.parquet`` or ``.csv`` job details table."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            return cls.from_frame(pl.read_parquet(path))
        if suffix == ".csv":
            return cls.from_frame(pl.read_csv(path))
        raise ValueError(f"{path}: unknown table type {suffix!r} (expected .parquet or .csv)")

    def write(self, path: str | Path) -> Path:
        """Write the table as ``.parquet`` or ``.csv`` (by suffix); returns the path."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in {".parquet", ".csv"}:
            raise ValueError(f"{path}: unknown table type {suffix!r} (expected .parquet or .csv)")
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_table(self.to_frame(), path)  # CSV or Parquet by the name
