"""Partitions with DVFS and their EAR coefficient matrices (paper 002 / EAMC; docs/eamc.md, Model).

A :class:`Partition` is a homogeneous group of nodes with a set of available CPU frequencies and the EAR "basic"
model's hardware coefficients ``(A, B, C, D, E, F)`` for every (reference p-state r, target p-state k) pair. The
projection equations themselves live in :mod:`wattsched.studies.eamc.energy_model`.

The coefficients come from the ``en_conf`` directory of the EAMC Slurm simulator (also IEEE DataPort
10.21227/e02v-y602), read by :mod:`wattsched.studies.eamc.en_conf` (its docstring has the file layout). P-states
are ascending from ``freqMin`` in ``freqInc`` steps up to ``freqNom`` (n = 16 for p1, 20 for p2); ``freqMax``
(nominal + 0.1) is the turbo bin, which the matrices do not model. An all-zero row marks a frequency the partition
cannot run at (2.0 GHz on p1; 1.4, 1.8, 2.2, 2.5, 2.9 GHz on p2): it is skipped.

Choices (named, with the resolution of docs/decisions.md as default):

* [AMBIG-2.1] ``reference``: the block used is the nominal (last) p-state's, because the applications' signatures
  were measured at nominal frequency. Another available frequency can be given.

The coefficient matrices are learned model data, not facts of the hardware, and are not published with the paper,
so :func:`eamc_p1p2` needs the data directory. What is a fact of the paper's evaluation — 512 nodes per partition,
the CPU models, their frequency ranges — ships as the ``dvfs`` platform file ``platforms/eamc-p1p2.toml``
(docs/platforms.md) and is checked against the files, so pointing the preset at another ``en_conf`` fails loudly
instead of simulating other hardware. A user's own partitions are a file of the same format, loaded by the same
:func:`load_dvfs_platform`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from wattsched.core.platform_file import read_platform_file, validate_platform
from wattsched.studies.eamc.en_conf import DVFSConfigError, ModuleConf, find_en_conf, load_matrix, read_module_conf

__all__ = [
    "COEFFICIENT_NAMES",
    "EAMC_NODES",
    "EAMC_P1P2",
    "DVFSConfigError",
    "DVFSPlatform",
    "DVFSPlatformFile",
    "Partition",
    "PartitionFacts",
    "eamc_p1p2",
    "load_dvfs_file",
    "load_dvfs_platform",
    "load_en_conf",
    "load_partition",
]

#: Column order of the 6-parameter coefficient rows.
COEFFICIENT_NAMES: tuple[str, ...] = ("A", "B", "C", "D", "E", "F")

_FREQ_DECIMALS = 6  # GHz values are rounded to this many decimals so that 1.2 + 8·0.1 compares equal to 2.0
_FREQ_TOL = 5e-4  # a frequency given by a caller matches a p-state within 0.5 MHz


# --------------------------------------------------------------------------------------------------------------
# Platform files (kind "dvfs")
# --------------------------------------------------------------------------------------------------------------


class PartitionFacts(BaseModel):
    """One partition of a ``dvfs`` platform file: the hardware facts its coefficient files must match."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    module_id: str = Field(min_length=1, description="the module id of the partition's block in the conf")
    nodes: int = Field(gt=0)
    cpu: str = ""
    sockets: int | None = Field(default=None, gt=0)
    cores_per_socket: int | None = Field(default=None, gt=0)
    tdp_w: float | None = Field(default=None, gt=0, allow_inf_nan=False, description="W per socket")
    freq_min: float = Field(gt=0, allow_inf_nan=False, description="GHz, lowest p-state")
    freq_nominal: float = Field(gt=0, allow_inf_nan=False, description="GHz, highest non-turbo p-state")

    @model_validator(mode="after")
    def _range(self) -> PartitionFacts:
        if self.freq_nominal < self.freq_min:
            raise ValueError(f"freq_nominal ({self.freq_nominal}) is below freq_min ({self.freq_min})")
        return self


class DVFSPlatformFile(BaseModel):
    """A platform file of kind ``dvfs``: the partitions (in module order of ``conf``) and the conf's file name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    conf: str = Field(default="2hw.conf", min_length=1)
    primary: str = ""
    partitions: tuple[PartitionFacts, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _names(self) -> DVFSPlatformFile:
        names = [p.name for p in self.partitions]
        if len(set(names)) != len(names):
            raise ValueError(f"partition names must be unique, got {names}")
        if self.primary and self.primary not in names:
            raise ValueError(f"primary {self.primary!r} is not one of the partitions {names}")
        return self


def load_dvfs_file(name_or_path: str | Path) -> tuple[DVFSPlatformFile, str, Path | None]:
    """A ``dvfs`` platform file (preset ``eamc-p1p2`` or a path), validated; with its source and folder."""
    file = read_platform_file(name_or_path, "dvfs", error=DVFSConfigError)
    return validate_platform(DVFSPlatformFile, file.data, file.source, error=DVFSConfigError), file.source, file.folder


#: The paper's p1/p2 facts (``platforms/eamc-p1p2.toml``).
EAMC_P1P2: DVFSPlatformFile = load_dvfs_file("eamc-p1p2")[0]
#: Nodes per partition in the paper's evaluation (§5: "p1: 512 nodes", "p2: 512 nodes"): the readers' default.
EAMC_NODES: int = EAMC_P1P2.partitions[0].nodes


# --------------------------------------------------------------------------------------------------------------
# Partition
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Partition:
    """A homogeneous partition with DVFS and its EAR coefficients.

    ``pstates`` is the full frequency grid of the coefficient files (GHz, ascending); ``coefficients[r, k]`` the
    ``A..F`` row from p-state r to p-state k (zeros where unavailable). ``frequencies`` are the available ones
    and ``f_ref`` the reference frequency the application signatures are given at ([AMBIG-2.1]: nominal).
    Arrays are read-only: a partition is shared by every run.
    """

    name: str
    node_type: str
    nodes: int
    pstates: np.ndarray
    coefficients: np.ndarray
    f_ref: float
    module_id: str = ""
    cores: int | None = None
    frequencies: np.ndarray = field(init=False)
    ref_coefficients: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        pstates = np.round(np.asarray(self.pstates, dtype=np.float64), _FREQ_DECIMALS)
        coef = np.array(self.coefficients, dtype=np.float64)
        n = pstates.size
        if n == 0 or pstates.ndim != 1 or not np.all(np.diff(pstates) > 0) or pstates[0] <= 0:
            raise ValueError(f"partition {self.name!r}: p-states must be positive and strictly ascending")
        if coef.shape != (n, n, 6):
            raise ValueError(f"partition {self.name!r}: coefficients must have shape ({n}, {n}, 6), got {coef.shape}")
        if not np.isfinite(coef).all():
            raise ValueError(f"partition {self.name!r}: non-finite coefficient")
        if isinstance(self.nodes, bool) or int(self.nodes) != self.nodes or self.nodes < 1:
            raise ValueError(f"partition {self.name!r}: nodes must be a positive integer, got {self.nodes!r}")
        r = _match_frequency(pstates, self.f_ref)
        if r is None:
            raise ValueError(
                f"partition {self.name!r}: reference frequency {self.f_ref} GHz is not a p-state "
                f"({pstates[0]:g}–{pstates[-1]:g} GHz)"
            )
        block = coef[r]
        available = ~np.all(block == 0.0, axis=1)
        if not available[r]:
            raise ValueError(
                f"partition {self.name!r}: reference frequency {pstates[r]:g} GHz is unavailable "
                "(its row in its own block is all zero)"
            )
        if not np.allclose(block[r], (1, 0, 0, 1, 0, 0), atol=1e-9):
            raise ValueError(
                f"partition {self.name!r}: the row from {pstates[r]:g} GHz to itself must be the "
                f"identity (1 0 0 1 0 0), got {block[r].tolist()}"
            )
        for name, arr in (("pstates", pstates), ("coefficients", coef)):
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        freqs = pstates[available].copy()
        ref_rows = block[available].copy()
        freqs.flags.writeable = False
        ref_rows.flags.writeable = False
        object.__setattr__(self, "f_ref", float(pstates[r]))
        object.__setattr__(self, "nodes", int(self.nodes))
        object.__setattr__(self, "frequencies", freqs)
        object.__setattr__(self, "ref_coefficients", ref_rows)

    @property
    def n_frequencies(self) -> int:
        return int(self.frequencies.size)

    @property
    def f_max(self) -> float:
        """Highest available frequency (what Base Slurm runs jobs at)."""
        return float(self.frequencies[-1])

    @property
    def ref_index(self) -> int:
        """Index of ``f_ref`` in ``frequencies``."""
        return int(np.flatnonzero(self.frequencies == self.f_ref)[0])

    def frequency_index(self, frequency: float | Sequence[float] | np.ndarray) -> np.ndarray | int:
        """Index in ``frequencies`` of each given frequency (GHz); unavailable or unknown ones raise, because a
        caller asking for them has a wrong model of the partition."""
        scalar = np.ndim(frequency) == 0
        wanted = np.atleast_1d(np.asarray(frequency, dtype=np.float64))
        idx = np.searchsorted(self.frequencies, wanted - _FREQ_TOL)
        idx_c = np.minimum(idx, self.n_frequencies - 1)
        ok = np.abs(self.frequencies[idx_c] - wanted) <= _FREQ_TOL
        if not ok.all():
            bad = wanted[~ok]
            raise ValueError(
                f"partition {self.name!r}: frequency {bad[0]:g} GHz is not available; available: "
                f"{', '.join(f'{f:g}' for f in self.frequencies)}"
            )
        return int(idx_c[0]) if scalar else idx_c

    def with_reference(self, f_ref: float) -> Partition:
        """The same partition with another reference block ([AMBIG-2.1] alternative)."""
        return replace(self, f_ref=f_ref)


def _match_frequency(grid: np.ndarray, f: float) -> int | None:
    hits = np.flatnonzero(np.abs(grid - float(f)) <= _FREQ_TOL)
    return int(hits[0]) if hits.size else None


@dataclass(frozen=True)
class DVFSPlatform:
    """The partitions of a multi-cluster machine, in partition-id order. ``primary`` names the partition a job's
    requested time refers to by default (paper §3.3: "the energy model assumes this value relates to the primary
    partition"); the EAMC code uses each job's first listed partition, which is p1 in the paper's traces."""

    name: str
    partitions: tuple[Partition, ...]
    primary: str = ""

    def __post_init__(self) -> None:
        names = [p.name for p in self.partitions]
        if not names:
            raise ValueError(f"platform {self.name!r}: no partitions")
        if len(set(names)) != len(names):
            raise ValueError(f"platform {self.name!r}: duplicate partition names {names}")
        object.__setattr__(self, "partitions", tuple(self.partitions))
        if not self.primary:
            object.__setattr__(self, "primary", names[0])
        elif self.primary not in names:
            raise ValueError(f"platform {self.name!r}: primary {self.primary!r} is not one of {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.partitions)

    def index(self, partition: str | int | Partition) -> int:
        """Position of a partition given by name, index or object."""
        if isinstance(partition, Partition):
            partition = partition.name
        if isinstance(partition, int | np.integer) and not isinstance(partition, bool):
            if not 0 <= partition < len(self.partitions):
                raise KeyError(f"platform {self.name!r} has no partition index {partition}")
            return int(partition)
        try:
            return self.names.index(str(partition))
        except ValueError:
            raise KeyError(f"platform {self.name!r} has no partition {partition!r}; it has {self.names}") from None

    def __getitem__(self, partition: str | int) -> Partition:
        return self.partitions[self.index(partition)]

    def __iter__(self) -> Iterator[Partition]:
        return iter(self.partitions)

    def __len__(self) -> int:
        return len(self.partitions)

    @property
    def total_nodes(self) -> int:
        return sum(p.nodes for p in self.partitions)


def load_partition(
    module: ModuleConf,
    *,
    name: str | None = None,
    nodes: int = EAMC_NODES,
    reference: float | None = None,
    verify: bool = True,
) -> Partition:
    """Build a :class:`Partition` from a module block and its coefficient files.

    ``reference`` is the reference frequency ([AMBIG-2.1]; None = the module's nominal ``freqNom``).
    """
    table, source = load_matrix(module, verify)
    n = math.isqrt(table.shape[0])
    steps = (module.freq_nom - module.freq_min) / module.freq_inc
    if abs(steps - round(steps)) > 1e-6 or round(steps) + 1 != n:
        raise DVFSConfigError(
            f"{source}: {table.shape[0]} rows = {n}×{n} p-states, but module {module.module_id!r} "
            f"({module.path}:{module.line}) has {module.freq_min:g}–{module.freq_nom:g} GHz in {module.freq_inc:g} "
            f"steps = {steps + 1:g} p-states"
        )
    pstates = np.round(module.freq_min + module.freq_inc * np.arange(n), _FREQ_DECIMALS)
    coef = table.reshape(n, n, 6)
    f_ref = module.freq_nom if reference is None else float(reference)
    r = _match_frequency(pstates, f_ref)
    if r is None:
        raise DVFSConfigError(
            f"{source}: reference frequency {f_ref:g} GHz is not among the p-states {pstates[0]:g}–{pstates[-1]:g} GHz"
        )
    block = coef[r]
    if np.all(block == 0):
        raise DVFSConfigError(
            f"{source}:{r * n + 1}: block of the reference frequency {pstates[r]:g} GHz (lines "
            f"{r * n + 1}–{r * n + n}) is all zero: that frequency is unavailable"
        )
    if not np.allclose(block[r], (1, 0, 0, 1, 0, 0), atol=1e-9):
        raise DVFSConfigError(
            f"{source}:{r * n + r + 1}: the row from {pstates[r]:g} GHz to itself must be the "
            f"identity 1 0 0 1 0 0, got {block[r].tolist()}"
        )
    return Partition(
        name=name or module.name,
        node_type=module.description or module.module_id,
        nodes=nodes,
        pstates=pstates,
        coefficients=coef,
        f_ref=f_ref,
        module_id=module.module_id,
        cores=module.cores,
    )


def load_en_conf(
    conf: str | Path,
    *,
    names: Sequence[str] | None = None,
    nodes: int | Sequence[int] = EAMC_NODES,
    reference: float | Sequence[float | None] | None = None,
    verify: bool = True,
    platform_name: str | None = None,
) -> DVFSPlatform:
    """All partitions of a ``.conf`` file, in module order (= partition id order of the ``apps`` file).

    ``names`` default to ``p1, p2, …`` (the paper's names); ``nodes`` and ``reference`` may be per partition.
    """
    conf = Path(conf)
    modules = read_module_conf(conf)
    k = len(modules)
    names = list(names) if names is not None else [f"p{i + 1}" for i in range(k)]
    node_list = [nodes] * k if isinstance(nodes, int | np.integer) else list(nodes)
    ref_list = [reference] * k if reference is None or isinstance(reference, int | float) else list(reference)
    for label, values in (("names", names), ("nodes", node_list), ("reference", ref_list)):
        if len(values) != k:
            raise ValueError(f"{conf}: {k} modules but {len(values)} {label}")
    parts = tuple(
        load_partition(m, name=nm, nodes=nd, reference=rf, verify=verify)
        for m, nm, nd, rf in zip(modules, names, node_list, ref_list, strict=True)
    )
    return DVFSPlatform(name=platform_name or conf.stem, partitions=parts)


def load_dvfs_platform(
    name_or_path: str | Path,
    data_dir: str | Path | None = None,
    *,
    nodes: int | None = None,
    reference: float | None = None,
) -> DVFSPlatform:
    """The partitions of a ``dvfs`` platform file (a preset such as ``eamc-p1p2``, or a user's TOML/YAML file) with
    their EAR coefficients, read from the file's ``conf`` in ``data_dir`` (see :func:`find_en_conf`); a user's
    file may instead keep its conf beside it (``conf`` relative to the file). ``nodes`` overrides every partition's
    node count; ``reference`` is the reference frequency ([AMBIG-2.1]; None = nominal).

    The conf must describe the file's hardware (module ids, frequency ranges), else :class:`DVFSConfigError`.
    """
    facts, source, folder = load_dvfs_file(name_or_path)
    beside = folder / facts.conf if folder is not None else None
    conf = (
        beside if data_dir is None and beside is not None and beside.is_file() else find_en_conf(data_dir, facts.conf)
    )
    modules = read_module_conf(conf)
    k = len(facts.partitions)
    if len(modules) != k:
        raise DVFSConfigError(f"{conf}: {source} needs exactly {k} modules, got {len(modules)}")
    owner = "the paper's" if folder is None else f"{source}:"
    for module, want in zip(modules, facts.partitions, strict=True):
        got = (module.module_id, module.freq_min, module.freq_nom)
        if (
            got[0] != want.module_id
            or abs(got[1] - want.freq_min) > _FREQ_TOL
            or abs(got[2] - want.freq_nominal) > _FREQ_TOL
        ):
            cpu = f" ({want.cpu})" if want.cpu else ""
            raise DVFSConfigError(
                f"{conf}: partition {want.name} is module {got[0]} with p-states {got[1]:g}–{got[2]:g} GHz; "
                f"{owner} {want.name} is {want.module_id}{cpu} with {want.freq_min:g}–{want.freq_nominal:g} GHz"
            )
    parts = tuple(
        load_partition(m, name=f.name, nodes=f.nodes if nodes is None else nodes, reference=reference)
        for m, f in zip(modules, facts.partitions, strict=True)
    )
    return DVFSPlatform(name=facts.name, partitions=parts, primary=facts.primary)


def eamc_p1p2(
    data_dir: str | Path | None = None, *, nodes: int | None = None, reference: float | None = None
) -> DVFSPlatform:
    """The paper's p1/p2 system (preset ``eamc-p1p2``): 512 × 2×Xeon Platinum 8168 (p1, 1.2–2.7 GHz) and
    512 × 2×Xeon Gold 6254 (p2, 1.2–3.1 GHz), with the public EAR coefficients read from ``data_dir`` (see
    :func:`find_en_conf`); ``nodes`` overrides the 512 nodes per partition.
    """
    return load_dvfs_platform("eamc-p1p2", data_dir, nodes=nodes, reference=reference)
