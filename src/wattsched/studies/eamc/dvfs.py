"""Partitions with DVFS and their EAR coefficient matrices (paper 002 / EAMC; docs/eamc.md, Model).

A :class:`Partition` is a homogeneous group of nodes with a set of available CPU frequencies and the EAR "basic"
model's hardware coefficients ``(A, B, C, D, E, F)`` for every (reference p-state r, target p-state k) pair. The
projection equations themselves live in :mod:`wattsched.studies.eamc.energy_model`.

Data layout (the ``en_conf`` directory of the EAMC Slurm simulator, also IEEE DataPort 10.21227/e02v-y602):

* ``2hw.conf`` — one ``module { … }`` block per node type: ``id``, ``cores``, ``name``, ``description``,
  ``freqMin``/``freqMax``/``freqInc``/``freqNom`` (GHz) and ``models { type, parameters, modelFile }``. Module order
  is partition order: the first module is p1 (partition id 0 in ``apps``), the second p2. The ``modelFile`` paths
  are absolute paths on the authors' machine, so files are looked up by base name in ``<conf stem>/`` (``2hw/``)
  next to the conf, then next to the conf itself.
* ``<name>.energy`` (6 columns A–F), ``<name>.power`` (A B C), ``<name>.time`` (D E F) — n×n rows, block r (rows
  r·n … r·n+n−1) holds the coefficients *from* p-state r *to* every target k. P-states are ascending from
  ``freqMin`` in ``freqInc`` steps up to ``freqNom`` (n = 16 for p1, 20 for p2); ``freqMax`` (nominal + 0.1) is
  the turbo bin, which the matrices do not model. An all-zero row marks a frequency the partition cannot run at
  (2.0 GHz on p1; 1.4, 1.8, 2.2, 2.5, 2.9 GHz on p2): it is skipped.

Choices (named, with the resolution of docs/decisions.md as default):

* [AMBIG-2.1] ``reference``: the block used is the nominal (last) p-state's, because the applications' signatures
  were measured at nominal frequency. Another available frequency can be given.
* Coefficient source: the 6-column energy file when the conf declares it; the power and time files, when also
  present, must agree with it (``verify=True``), because a silent mismatch would mean two different models.

The coefficient matrices are learned model data, not facts of the hardware, and the paper does not print
them, so :func:`eamc_p1p2` needs the data directory. What is a fact of the paper's evaluation — 512 nodes per
partition, the CPU models, their frequency ranges — is embedded (:data:`EAMC_HARDWARE`) and checked against the
files, so pointing the preset at another ``en_conf`` fails loudly instead of simulating other hardware.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

__all__ = [
    "COEFFICIENT_NAMES",
    "EAMC_HARDWARE",
    "EAMC_NODES",
    "DVFSConfigError",
    "DVFSPlatform",
    "ModuleConf",
    "Partition",
    "eamc_p1p2",
    "find_en_conf",
    "load_en_conf",
    "load_partition",
    "read_coefficients",
    "read_module_conf",
]

#: Column order of the 6-parameter coefficient rows.
COEFFICIENT_NAMES: tuple[str, ...] = ("A", "B", "C", "D", "E", "F")
#: Nodes per partition in the paper's evaluation (§5: "p1: 512 nodes", "p2: 512 nodes").
EAMC_NODES = 512
#: Facts of the paper's two public partitions: CPU model, sockets × cores, TDP, frequency range (GHz).
EAMC_HARDWARE: dict[str, dict[str, object]] = {
    "p1": {"module_id": "CM", "cpu": "Xeon Platinum 8168", "sockets": 2, "cores_per_socket": 24, "tdp_w": 205,
           "freq_min": 1.2, "freq_nominal": 2.7},
    "p2": {"module_id": "ESB", "cpu": "Xeon Gold 6254", "sockets": 2, "cores_per_socket": 18, "tdp_w": 200,
           "freq_min": 1.2, "freq_nominal": 3.1},
}  # fmt: skip

_FREQ_DECIMALS = 6  # GHz values are rounded to this many decimals so that 1.2 + 8·0.1 compares equal to 2.0
_FREQ_TOL = 5e-4  # a frequency given by a caller matches a p-state within 0.5 MHz


class DVFSConfigError(ValueError):
    """An ``en_conf`` input that cannot be used; the message names the file, the line and why."""


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


# --------------------------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------------------------


def read_coefficients(path: str | Path, n_params: int) -> np.ndarray:
    """Rows of ``n_params`` numbers (one per non-blank line) as an array (rows, n_params).

    The row count must be a perfect square (n × n p-state pairs); the caller reshapes.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DVFSConfigError(f"{path}: cannot read: {exc}") from None
    rows: list[list[float]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != n_params:
            raise DVFSConfigError(f"{path}:{number}: expected {n_params} coefficients, got {len(fields)}: {line!r}")
        try:
            values = [float(f) for f in fields]
        except ValueError:
            raise DVFSConfigError(f"{path}:{number}: coefficients must be numbers, got {line!r}") from None
        if not all(math.isfinite(v) for v in values):
            raise DVFSConfigError(f"{path}:{number}: non-finite coefficient in {line!r}")
        rows.append(values)
    n = math.isqrt(len(rows))
    if not rows or n * n != len(rows):
        raise DVFSConfigError(
            f"{path}: {len(rows)} coefficient rows is not n×n for any n (one row per (reference, target) p-state pair)"
        )
    return np.asarray(rows, dtype=np.float64)


@dataclass(frozen=True)
class ModuleConf:
    """One ``module`` block of an EAMC ``.conf`` file. ``models`` maps a model type (``EAR_ENERGY``,
    ``EAR_POWER``, ``EAR_TIME``) to (number of parameters, model file as written, 1-based line)."""

    module_id: str
    name: str
    description: str
    cores: int | None
    freq_min: float
    freq_max: float
    freq_inc: float
    freq_nom: float
    models: dict[str, tuple[int, str, int]]
    path: Path
    line: int


_TOKEN = re.compile(r'"[^"\n]*"|#.*|[{}:]|[^\s{}:"#]+|"')


def _tokens(path: Path, text: str) -> list[tuple[str, int]]:
    """Tokens with their line numbers; ``#`` starts a comment outside quoted strings."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        for m in _TOKEN.finditer(line):
            tok = m.group(0)
            if tok.startswith("#"):
                break
            if tok == '"':
                raise DVFSConfigError(f"{path}:{number}: unterminated string")
            out.append((tok, number))
    return out


def _parse_block(path: Path, toks: list[tuple[str, int]], pos: int) -> tuple[dict, int]:
    """Parse ``{ key: value … name { … } … }`` starting at the ``{``; returns (items, position after ``}``)."""
    open_line = toks[pos][1]
    pos += 1
    items: dict[str, list] = {}
    while True:
        if pos >= len(toks):
            raise DVFSConfigError(f"{path}:{open_line}: '{{' is never closed")
        tok, line = toks[pos]
        if tok == "}":
            return items, pos + 1
        if tok in "{:":
            raise DVFSConfigError(f"{path}:{line}: expected a key or a block name, got {tok!r}")
        nxt = toks[pos + 1][0] if pos + 1 < len(toks) else None
        if nxt == ":":
            if pos + 2 >= len(toks) or toks[pos + 2][0] in "{}:":
                raise DVFSConfigError(f"{path}:{line}: key {tok!r} has no value")
            value, vline = toks[pos + 2]
            if vline != line:
                raise DVFSConfigError(f"{path}:{line}: key {tok!r} has no value on its line")
            items.setdefault(tok, []).append((value.strip('"'), line))
            pos += 3
        elif nxt == "{":
            sub, pos = _parse_block(path, toks, pos + 1)
            items.setdefault(tok, []).append((sub, line))
        else:
            raise DVFSConfigError(f"{path}:{line}: expected ':' or '{{' after {tok!r}")


def read_module_conf(path: str | Path) -> list[ModuleConf]:
    """Read the ``module`` blocks of an EAMC ``.conf`` file (e.g. ``2hw.conf``), in file order."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DVFSConfigError(f"{path}: cannot read: {exc}") from None
    toks = _tokens(path, text)
    modules: list[ModuleConf] = []
    pos = 0
    while pos < len(toks):
        tok, line = toks[pos]
        if tok != "module":
            raise DVFSConfigError(f"{path}:{line}: expected 'module', got {tok!r}")
        if pos + 1 >= len(toks) or toks[pos + 1][0] != "{":
            raise DVFSConfigError(f"{path}:{line}: 'module' must be followed by '{{'")
        items, pos = _parse_block(path, toks, pos + 1)
        modules.append(_module(path, line, items))
    if not modules:
        raise DVFSConfigError(f"{path}: no 'module' block")
    ids = [m.module_id for m in modules]
    for i, m in enumerate(modules):
        if m.module_id in ids[:i]:
            raise DVFSConfigError(f"{path}:{m.line}: module id {m.module_id!r} defined twice")
    return modules


def _module(path: Path, line: int, items: dict) -> ModuleConf:
    def one(key: str, required: bool = True) -> tuple[str, int] | None:
        values = items.get(key)
        if not values:
            if required:
                raise DVFSConfigError(f"{path}:{line}: module has no {key!r}")
            return None
        if len(values) > 1:
            raise DVFSConfigError(f"{path}:{values[1][1]}: {key!r} given twice in one module")
        value, vline = values[0]
        if isinstance(value, dict):
            raise DVFSConfigError(f"{path}:{vline}: {key!r} must be a value, not a block")
        return value, vline

    def number(key: str) -> float:
        text, vline = one(key)
        try:
            value = float(text)
        except ValueError:
            raise DVFSConfigError(f"{path}:{vline}: {key} must be a number (GHz), got {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise DVFSConfigError(f"{path}:{vline}: {key} must be positive, got {text!r}")
        return value

    module_id = one("id")[0]
    cores_item = one("cores", required=False)
    cores = None
    if cores_item is not None:
        try:
            cores = int(cores_item[0])
        except ValueError:
            raise DVFSConfigError(f"{path}:{cores_item[1]}: cores must be an integer, got {cores_item[0]!r}") from None
    name = one("name")[0]
    description = (one("description", required=False) or ("", 0))[0]
    fmin, fmax, finc, fnom = (number(k) for k in ("freqMin", "freqMax", "freqInc", "freqNom"))
    if not fmin <= fnom <= fmax:
        raise DVFSConfigError(
            f"{path}:{line}: module {module_id!r} needs freqMin ≤ freqNom ≤ freqMax, got {fmin:g}, {fnom:g}, {fmax:g}"
        )
    models: dict[str, tuple[int, str, int]] = {}
    for block, mline in items.get("models", []):
        if not isinstance(block, dict):
            raise DVFSConfigError(f"{path}:{mline}: 'models' must be a block")

        def get(key: str, block=block, mline=mline) -> tuple[str, int]:
            values = block.get(key)
            if not values or isinstance(values[0][0], dict):
                raise DVFSConfigError(f"{path}:{mline}: models block has no {key!r}")
            return values[0]

        kind, _ = get("type")
        params_text, pline = get("parameters")
        file_text, fline = get("modelFile")
        try:
            params = int(params_text)
        except ValueError:
            raise DVFSConfigError(f"{path}:{pline}: parameters must be an integer, got {params_text!r}") from None
        if kind in models:
            raise DVFSConfigError(f"{path}:{mline}: model type {kind!r} given twice in module {module_id!r}")
        models[kind] = (params, file_text, fline)
    return ModuleConf(
        module_id=module_id,
        name=name,
        description=description,
        cores=cores,
        freq_min=fmin,
        freq_max=fmax,
        freq_inc=finc,
        freq_nom=fnom,
        models=models,
        path=path,
        line=line,
    )


def _model_file(module: ModuleConf, kind: str) -> tuple[Path, int] | None:
    """Locate a model file of a module by base name (see the module docstring); None if the conf has none."""
    entry = module.models.get(kind)
    if entry is None:
        return None
    _, written, line = entry
    base = Path(written).name
    conf_dir = module.path.parent
    candidates = [conf_dir / module.path.stem / base, conf_dir / base, Path(written)]
    for cand in candidates:
        if cand.is_file():
            return cand, line
    raise DVFSConfigError(
        f"{module.path}:{line}: model file {written!r} not found (looked for {base!r} in "
        f"{conf_dir / module.path.stem} and {conf_dir})"
    )


_EXPECTED_PARAMS = {"EAR_ENERGY": 6, "EAR_POWER": 3, "EAR_TIME": 3}


def _load_matrix(module: ModuleConf, verify: bool) -> tuple[np.ndarray, Path]:
    """The (rows, 6) coefficient table of a module, from the energy file or the power + time pair."""
    for kind, want in _EXPECTED_PARAMS.items():
        if kind in module.models and module.models[kind][0] != want:
            raise DVFSConfigError(
                f"{module.path}:{module.models[kind][2]}: {kind} must have {want} parameters, "
                f"got {module.models[kind][0]}"
            )
    energy = _model_file(module, "EAR_ENERGY")
    power = _model_file(module, "EAR_POWER")
    time = _model_file(module, "EAR_TIME")
    if energy is None and (power is None or time is None):
        raise DVFSConfigError(
            f"{module.path}:{module.line}: module {module.module_id!r} declares neither an "
            "EAR_ENERGY model nor both EAR_POWER and EAR_TIME"
        )
    if energy is not None:
        table, source = read_coefficients(energy[0], 6), energy[0]
        if verify:
            for part, cols in ((power, slice(0, 3)), (time, slice(3, 6))):
                if part is None:
                    continue
                other = read_coefficients(part[0], 3)
                if other.shape[0] != table.shape[0]:
                    raise DVFSConfigError(f"{part[0]}: {other.shape[0]} rows, but {source} has {table.shape[0]}")
                diff = np.flatnonzero(np.abs(other - table[:, cols]).max(axis=1) > 1e-9)
                if diff.size:
                    raise DVFSConfigError(
                        f"{part[0]}: row {diff[0] + 1} disagrees with {source} row {diff[0] + 1} "
                        "(the power/time files must be the energy file's columns)"
                    )
        return table, source
    pt = read_coefficients(power[0], 3)
    tt = read_coefficients(time[0], 3)
    if pt.shape[0] != tt.shape[0]:
        raise DVFSConfigError(f"{time[0]}: {tt.shape[0]} rows, but {power[0]} has {pt.shape[0]}")
    return np.hstack([pt, tt]), power[0]


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
    table, source = _load_matrix(module, verify)
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


def find_en_conf(data_dir: str | Path | None, conf_name: str = "2hw.conf") -> Path:
    """The ``.conf`` file of an EAMC data directory, which may be given as the conf file itself, the ``en_conf``
    directory, the ``eamc`` directory above it, or the shared data root above that."""
    if data_dir is None:
        raise DVFSConfigError(
            "the EAMC model needs its data directory: the EAR coefficient matrices are learned data, not facts of "
            "the hardware, and are not embedded. Give the en_conf directory (2hw.conf, 2hw/apps, 2hw/normal*.*) from "
            "github.com/marcodamico/slurm_simulator_eamc-policy or IEEE DataPort 10.21227/e02v-y602 "
            "(in this project: ../shared/data/eamc/en_conf)"
        )
    path = Path(data_dir)
    if path.is_file():
        return path
    for cand in (path / conf_name, path / "en_conf" / conf_name, path / "eamc" / "en_conf" / conf_name):
        if cand.is_file():
            return cand
    raise DVFSConfigError(f"{path}: no {conf_name} found (looked in it, in en_conf/ and in eamc/en_conf/)")


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


def eamc_p1p2(
    data_dir: str | Path | None = None, *, nodes: int = EAMC_NODES, reference: float | None = None
) -> DVFSPlatform:
    """The paper's p1/p2 system: 512 × 2×Xeon Platinum 8168 (p1, 1.2–2.7 GHz) and 512 × 2×Xeon Gold 6254
    (p2, 1.2–3.1 GHz), with the public EAR coefficients read from ``data_dir`` (see :func:`find_en_conf`).

    The files must describe that hardware (module ids CM/ESB, frequency ranges), else :class:`DVFSConfigError`.
    """
    conf = find_en_conf(data_dir)
    platform = load_en_conf(conf, nodes=nodes, reference=reference, platform_name="eamc-p1p2")
    if len(platform) != 2:
        raise DVFSConfigError(f"{conf}: the p1/p2 preset needs exactly 2 modules, got {len(platform)}")
    for part in platform:
        facts = EAMC_HARDWARE[part.name]
        got = (part.module_id, float(part.pstates[0]), float(part.pstates[-1]))
        want = (facts["module_id"], facts["freq_min"], facts["freq_nominal"])
        if got[0] != want[0] or abs(got[1] - want[1]) > _FREQ_TOL or abs(got[2] - want[2]) > _FREQ_TOL:
            raise DVFSConfigError(
                f"{conf}: partition {part.name} is module {got[0]} with p-states "
                f"{got[1]:g}–{got[2]:g} GHz; the paper's {part.name} is {want[0]} "
                f"({facts['cpu']}) with {want[1]:g}–{want[2]:g} GHz"
            )
    return platform
