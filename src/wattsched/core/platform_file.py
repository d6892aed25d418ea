"""Platform files: one format, one reader, for the shipped presets and a user's own machines (docs/platforms.md).

A platform file is a TOML (or YAML) table whose ``kind`` says which machine model it describes:

``power``     a homogeneous machine's power envelope (:func:`wattsched.power.platform.load_platform`; ``marconi100``)
``multires``  a pool of multi-resource nodes and its queues (:func:`wattsched.studies.multires.eurora.load_pool`;
              ``eurora``)
``dvfs``      partitions with DVFS, checked against their EAR coefficient files
              (:func:`wattsched.studies.eamc.dvfs.load_dvfs_platform`; ``eamc-p1p2``)
``rmap``      a machine with a (nodes × cores × socket cap) configuration grid
              (:func:`wattsched.studies.rmap.hardware.load_machine`; ``rmap-cab``)

The presets are package data (``platforms/<name>.toml`` beside the module that models their kind) read through
:mod:`importlib.resources`, so a preset and a user's file take the same path through :func:`read_platform_file`
and the same validation: a preset is only a file that ships with the package. This module knows where each kind's
presets are (folders of the package), not the modules that model them, so it stays at the bottom layer.

Every error is a :class:`PlatformFileError` of one line that names the file, the field and why.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

import yaml  # PyYAML has no types: ignored in pyproject.toml ([tool.mypy] overrides)
from pydantic import TypeAdapter, ValidationError

from wattsched.core.structured_input import load_toml, load_yaml

__all__ = [
    "PLATFORM_KINDS",
    "PlatformFile",
    "PlatformFileError",
    "platform_kind",
    "preset_file",
    "preset_names",
    "read_platform_file",
    "validate_platform",
    "validation_message",
]

#: Each kind of platform file and the folder of its presets inside the ``wattsched`` package: beside the module
#: that models the kind. Found through :mod:`importlib.resources` on the top package, so finding a preset imports
#: no study.
PLATFORM_KINDS: dict[str, str] = {
    "power": "power/platforms",
    "multires": "studies/multires/platforms",
    "dvfs": "studies/eamc/platforms",
    "rmap": "studies/rmap/platforms",
}
_SUFFIXES = (".toml", ".yaml", ".yml")

M = TypeVar("M")


class PlatformFileError(ValueError):
    """A platform file that cannot be used; the one-line message names the file, the field and why."""


@dataclass(frozen=True)
class PlatformFile:
    """The table of one platform file, before its kind validates it.

    ``source`` names it in messages (the path, or ``preset 'eurora' (…/eurora.toml)``); ``folder`` is the
    directory relative paths inside the file are resolved against (``None`` for a preset, which has none);
    ``description`` is the file's free text (documentation only: no model reads it).
    """

    kind: str
    data: dict[str, Any]
    source: str
    folder: Path | None
    description: str = ""


def _preset_folder(kind: str) -> Traversable:
    return resources.files("wattsched").joinpath(*PLATFORM_KINDS[kind].split("/"))


def preset_file(name: str, kind: str) -> Traversable:
    """The package data file of the preset ``name`` of ``kind`` (e.g. to copy it as the start of your own)."""
    if name not in preset_names(kind):
        raise PlatformFileError(f"{name}: not a {kind} platform preset ({preset_names(kind)})")
    return _preset_folder(kind).joinpath(f"{name}.toml")


def preset_names(kind: str) -> list[str]:
    """The names of the presets of ``kind`` shipped with the package, sorted."""
    if kind not in PLATFORM_KINDS:
        raise PlatformFileError(f"unknown platform kind {kind!r} (expected one of {sorted(PLATFORM_KINDS)})")
    folder = _preset_folder(kind)
    if not folder.is_dir():
        return []
    return sorted(entry.name[: -len(".toml")] for entry in folder.iterdir() if entry.name.endswith(".toml"))


def _parse(text: str, suffix: str, source: str) -> Any:
    if suffix == ".toml":
        try:
            return load_toml(text, source, error=PlatformFileError)  # nested at most MAX_DEPTH
        except tomllib.TOMLDecodeError as error:
            raise PlatformFileError(f"{source}: not valid TOML: {error}") from None
    try:
        return load_yaml(text, source, error=PlatformFileError)
    except yaml.YAMLError as error:
        raise PlatformFileError(f"{source}: not valid YAML: {error}") from None


def _table(data: Any, kind: str, source: str) -> tuple[dict[str, Any], str]:
    """The platform's fields and its description: the fields sit at top level, or under a ``[platform]`` table
    (then the rest of the top level is not read, so a platform can sit inside a larger file); ``kind``, if
    given, must be the one asked for."""
    if isinstance(data, dict) and isinstance(data.get("platform"), dict):
        header = {k: data[k] for k in ("kind", "description") if k in data}
        data = {**header, **data["platform"]}
    if not isinstance(data, dict):
        raise PlatformFileError(f"{source}: expected a table of platform fields, got {type(data).__name__}")
    declared = data.get("kind", kind)
    if declared != kind:
        if declared in PLATFORM_KINDS:
            raise PlatformFileError(
                f"{source}: field 'kind': a {declared!r} platform, but a {kind!r} platform is needed here"
            )
        raise PlatformFileError(f"{source}: field 'kind': {declared!r} is not one of {sorted(PLATFORM_KINDS)}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise PlatformFileError(f"{source}: field 'description': must be a string, got {type(description).__name__}")
    return {k: v for k, v in data.items() if k not in ("kind", "description")}, description


def read_platform_file(
    name_or_path: str | Path, kind: str, *, error: type[PlatformFileError] = PlatformFileError
) -> PlatformFile:
    """Find and parse a platform file of ``kind``: a preset name (``marconi100``) or a ``.toml``/``.yaml`` path.

    A name that is a preset of another kind fails with a message saying which kind it is. ``error`` is the
    :class:`PlatformFileError` subclass the kind's loader raises (e.g. ``PowerConfigError``).
    """
    try:
        names = preset_names(kind)
        if isinstance(name_or_path, str) and name_or_path in names:
            entry = _preset_folder(kind).joinpath(f"{name_or_path}.toml")
            source = f"preset {name_or_path!r} ({entry})"
            data, about = _table(_parse(entry.read_text(encoding="utf-8"), ".toml", source), kind, source)
            return PlatformFile(kind, data, source, None, about)
        path = Path(name_or_path)
        if not path.is_file():
            other = [k for k in PLATFORM_KINDS if k != kind and str(name_or_path) in preset_names(k)]
            if other:
                raise PlatformFileError(
                    f"{name_or_path}: a {other[0]!r} platform preset, but a {kind!r} platform is needed here "
                    f"({kind} presets: {names})"
                )
            raise PlatformFileError(f"{name_or_path}: neither a platform preset ({names}) nor a file")
        suffix = path.suffix.lower()
        if suffix not in _SUFFIXES:
            raise PlatformFileError(f"{path}: unknown platform file type {suffix!r} (expected .toml, .yaml or .yml)")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PlatformFileError(f"{path}: cannot read: {exc}") from None
        except UnicodeDecodeError as exc:
            raise PlatformFileError(f"{path}: not UTF-8 text (byte {exc.start}): not a platform file") from None
        data, about = _table(_parse(text, suffix, str(path)), kind, str(path))
        return PlatformFile(kind, data, str(path), path.parent, about)
    except PlatformFileError as exc:
        if error is PlatformFileError or isinstance(exc, error):
            raise
        raise error(str(exc)) from None


def platform_kind(name_or_path: str | Path) -> str:
    """The kind of a preset (by name) or of a file (its ``kind`` field; ``power`` when it has none)."""
    if isinstance(name_or_path, str):
        for kind in PLATFORM_KINDS:
            if name_or_path in preset_names(kind):
                return kind
    path = Path(name_or_path)
    if not path.is_file():
        every = sorted(name for kind in PLATFORM_KINDS for name in preset_names(kind))
        raise PlatformFileError(f"{name_or_path}: neither a platform preset ({every}) nor a file")
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise PlatformFileError(f"{path}: unknown platform file type {suffix!r} (expected .toml, .yaml or .yml)")
    try:
        data = _parse(path.read_text(encoding="utf-8"), suffix, str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise PlatformFileError(f"{path}: cannot read as UTF-8 text: {str(exc)[:80]}") from None
    kind = data.get("kind", "power") if isinstance(data, dict) else "power"
    if kind not in PLATFORM_KINDS:
        raise PlatformFileError(f"{path}: field 'kind': {kind!r} is not one of {sorted(PLATFORM_KINDS)}")
    return str(kind)


def validation_message(source: str, error: ValidationError, what: str = "platform", prefix: str = "") -> str:
    """One line: ``<source>: invalid <what>: field 'a.b': why; field 'c': why`` (``prefix`` before each field)."""
    parts = []
    for e in error.errors():
        field = prefix + ".".join(str(p) for p in e["loc"]) if e["loc"] else f"({what})"
        parts.append(f"field {field!r}: {e['msg']}")
    return f"{source}: invalid {what}: " + "; ".join(parts)


def validate_platform(
    model: type[M],
    data: dict[str, Any],
    source: str,
    *,
    what: str = "platform",
    prefix: str = "",
    error: type[PlatformFileError] = PlatformFileError,
) -> M:
    """Validate ``data`` into ``model`` (a pydantic model or a dataclass; pydantic checks the field types and
    constraints); errors become one ``error`` line naming each bad field, ``prefix`` before it (``socket.``)."""
    try:
        return TypeAdapter(model).validate_python(data)
    except ValidationError as exc:
        raise error(validation_message(source, exc, what, prefix)) from None
