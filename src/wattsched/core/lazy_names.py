"""Names a package re-exports without importing their modules with it (PEP 562's module ``__getattr__``).

``import wattsched``, ``wattsched.api`` and the API's advise and testbed modules stay cheap this way: numba,
polars, pydantic or psutil load when a name that needs them is first used, not when ``--help`` is printed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(owner: str, exports: Mapping[str, str], keep: dict[str, Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the names in ``exports`` (name → the module defining it), imported at their
    first lookup. With ``keep`` (the module's ``globals()``) a name is stored there and never looked up again;
    without, each lookup reads it from its module (a name replaced there, by a test's monkeypatch for one, is the
    one returned). Any other name is an ``AttributeError`` naming ``owner``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        if keep is not None:
            keep[name] = value
        return value

    return __getattr__
