"""Readers of the ``en_conf`` module configuration of paper 002 (EAMC) and its EAR coefficient files.

Data layout (the ``en_conf`` directory of the EAMC Slurm simulator, also IEEE DataPort 10.21227/e02v-y602):

* ``2hw.conf`` — one ``module { … }`` block per node type: ``id``, ``cores``, ``name``, ``description``,
  ``freqMin``/``freqMax``/``freqInc``/``freqNom`` (GHz) and ``models { type, parameters, modelFile }``. Module order
  is partition order: the first module is p1 (partition id 0 in ``apps``), the second p2. The ``modelFile`` paths
  are absolute paths on the authors' machine, so files are looked up by base name in ``<conf stem>/`` (``2hw/``)
  next to the conf, then next to the conf itself.
* ``<name>.energy`` (6 columns A–F), ``<name>.power`` (A B C), ``<name>.time`` (D E F) — n×n rows, block r (rows
  r·n … r·n+n−1) holds the coefficients *from* p-state r *to* every target k.

Coefficient source: the 6-column energy file when the conf declares it; the power and time files, when also
present, must agree with it (``verify=True``), because a silent mismatch would mean two different models.
The partitions built from them are in :mod:`wattsched.studies.eamc.dvfs`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

import numpy as np

from wattsched.core.data_folder import DATA_ENV, shared_data_dir
from wattsched.core.platform_file import PlatformFileError

__all__ = ["DVFSConfigError", "ModuleConf", "find_en_conf", "load_matrix", "read_coefficients", "read_module_conf"]


class DVFSConfigError(PlatformFileError):
    """An ``en_conf`` input or a ``dvfs`` platform file that cannot be used; the message names the file, the line
    or field and why."""


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
    @overload
    def one(key: str, required: Literal[True] = ...) -> tuple[str, int]: ...
    @overload
    def one(key: str, required: bool) -> tuple[str, int] | None: ...
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


def load_matrix(module: ModuleConf, verify: bool) -> tuple[np.ndarray, Path]:
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
    assert power is not None and time is not None  # no EAR_ENERGY here: both were checked above
    pt = read_coefficients(power[0], 3)
    tt = read_coefficients(time[0], 3)
    if pt.shape[0] != tt.shape[0]:
        raise DVFSConfigError(f"{time[0]}: {tt.shape[0]} rows, but {power[0]} has {pt.shape[0]}")
    return np.hstack([pt, tt]), power[0]


def find_en_conf(data_dir: str | Path | None, conf_name: str = "2hw.conf") -> Path:
    """The ``.conf`` file of an EAMC data directory, which may be given as the conf file itself, the ``en_conf``
    directory, the ``eamc`` directory above it, or the shared data root above that; without one, the shared data
    folder every command looks in (:func:`~wattsched.core.data_folder.shared_data_dir`)."""
    if data_dir is None:
        data_dir = shared_data_dir()
    if data_dir is None:
        raise DVFSConfigError(
            "the EAMC model needs its data directory: the EAR coefficient matrices are learned data, not facts of "
            "the hardware, and are not embedded. Give the en_conf directory (2hw.conf, 2hw/apps, 2hw/normal*.*) from "
            "github.com/marcodamico/slurm_simulator_eamc-policy or IEEE DataPort 10.21227/e02v-y602 "
            f"with --data-dir or ${DATA_ENV} (in this project: ../shared/data/eamc/en_conf)"
        )
    path = Path(data_dir)
    if path.is_file():
        return path
    for cand in (path / conf_name, path / "en_conf" / conf_name, path / "eamc" / "en_conf" / conf_name):
        if cand.is_file():
            return cand
    raise DVFSConfigError(f"{path}: no {conf_name} found (looked in it, in en_conf/ and in eamc/en_conf/)")
