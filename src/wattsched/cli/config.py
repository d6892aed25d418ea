"""``--config FILE.toml`` for a command: every option of the command as a key, validated by pydantic.

The file's values become the command's defaults (click's ``default_map``), so an option given on the command
line overrides the file, and the file can supply required options too. Keys are the option names without the
dashes, with ``-`` or ``_`` (``machine-size`` or ``machine_size``); ``format`` for ``--format``. Relative
paths in the file are relative to the file. An unknown key, or a value of the wrong type, is a one-line error
naming the file and the key.

click applies the values (``default_map``); this module only validates them first. click would convert a bad
value itself, but its error names the option (``Invalid value for '--machine-size'``), not the file and the key
the user has to fix, hence the pydantic model built from the command's own option types.
"""

from __future__ import annotations

import inspect
import os
import tomllib
import typing
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from wattsched.cli.common import fail
from wattsched.core.structured_input import TooDeepError, load_toml

__all__ = ["config_callback", "config_keys"]


def config_keys(command: Callable[..., Any]) -> dict[str, tuple[str, Any]]:
    """The command's options as ``key → (parameter name, type)``; the key is the long option name without its
    dashes, with ``_`` for ``-`` (``--format`` → ``format``, ``--machine-size`` → ``machine_size``)."""
    hints = typing.get_type_hints(command, include_extras=True)
    keys: dict[str, tuple[str, Any]] = {}
    for name in inspect.signature(command).parameters:
        hint = hints.get(name)
        if name == "config" or typing.get_origin(hint) is not Annotated:
            continue
        base, *meta = typing.get_args(hint)
        info = next((m for m in meta if isinstance(m, typer.models.OptionInfo)), None)
        if info is None:
            continue
        # in Annotated form typer takes a leading "--name" as the option's declaration, kept in `default`
        named = (info.default,) if isinstance(info.default, str) and info.default.startswith("-") else ()
        decls = [d for d in (*named, *(info.param_decls or ())) if d.startswith("--")]
        key = decls[0][2:].split("/")[0].replace("-", "_") if decls else name
        keys[key] = (name, base)
    return keys


Callback = Callable[[typer.Context, typer.CallbackParam, Path | None], Path | None]


def config_callback(command: Callable[..., Any]) -> Callback:
    """The callback of an eager ``--config`` option of ``command``: reads the TOML file, validates it against
    the command's options and sets the values as the command's defaults."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
        if value is None:
            return None
        ctx.default_map = {**(ctx.default_map or {}), **read_config(value, command)}
        return value

    return callback


def read_config(path: Path, command: Callable[..., Any]) -> dict[str, Any]:
    """The file's values keyed by the command's parameter names, as click takes defaults (enums as their
    values, paths as text)."""
    # deferred: pydantic takes about 0.1 s to import; `wattsched --help` should not
    from pydantic import ConfigDict, ValidationError, create_model

    keys = config_keys(command)
    try:
        raw = load_toml(Path(path).read_text(encoding="utf-8"), path)  # nested at most MAX_DEPTH
    except FileNotFoundError:
        fail(f"--config {path}: no such file")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        fail(f"--config {path}: not valid TOML: {exc}")
    except TooDeepError as exc:
        fail(f"--config {exc}")
    given = {str(k).replace("-", "_"): v for k, v in raw.items()}
    for k, v in given.items():  # a repeatable option takes one value or a list of them, as on the command line
        if k in keys and typing.get_origin(keys[k][1]) is list and not isinstance(v, list):
            given[k] = [v]
    unknown = sorted(set(given) - set(keys))
    if unknown:
        options = ", ".join(sorted(keys))
        fail(f"--config {path}: unknown key {unknown[0]!r} (the keys are the command's options: {options})")
    model = create_model(  # type: ignore[call-overload]
        "SimulateConfig",
        __config__=ConfigDict(extra="forbid", strict=False),
        **{k: (keys[k][1], ...) for k in given},
    )
    try:
        values = model.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(x) for x in first["loc"])
        fail(f"--config {path}: key {key!r}: {first['msg']} (got {first.get('input')!r})")
    return {keys[k][0]: _click_value(getattr(values, k), Path(path).parent) for k in given}


def _click_value(value: Any, base: Path) -> Any:
    """A validated value as click takes a default; a relative path is taken relative to the config file, as
    campaign specs do, so a config file works from any directory. The join is normalised as written
    (``examples/../out``, ``out``): the system would resolve ``..`` after a symlinked folder in the symlink's
    target, i.e. outside the folder the user sees."""
    if isinstance(value, list):
        return [_click_value(v, base) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value if value.is_absolute() else os.path.normpath(base / value))
    return value
