"""Optional members of wattsched's protocols, read one way.

A protocol (:class:`~wattsched.core.policy.Policy`, :class:`~wattsched.core.predictor.OnlinePredictor`, the
multi-resource ``Dispatcher``) lists only its required members, so ``isinstance`` and type checkers accept a
user's class that defines just those. Its optional members are declared, with their defaults and their meaning,
on the protocol's base class (``PolicyBase``, ``PredictorBase``, ``DispatcherBase``). A class may inherit that
base to get the defaults, or define only the required members: callers read an optional member through
:func:`optional_member`, which gives the object's own member when it has one and the declared default otherwise.
So a default is written once, beside its documentation, and no caller guesses at one.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

__all__ = ["optional_member"]

_MISSING = object()


def optional_member(obj: object, base: type, name: str) -> Any:
    """``obj.<name>`` if ``obj`` defines it, else the default ``base`` declares (bound to ``obj``).

    ``base`` must declare ``name``: reading a member no base declares is a programming error, not a default.
    The object's member is looked up without running it (its class's and its own ``__dict__``, as
    :func:`inspect.getattr_static` does), so an error raised inside a user's property is not mistaken for an absent
    member. The class's part is looked up once per class: the multi-resource loop reads ``wake_at`` at every pass,
    and two ``getattr_static`` calls there were 15 ms of a 0.2 s paper-001 run (issue 32).
    """
    default, in_class = _declared(type(obj), base, name)  # type: ignore[arg-type]  # classes hash by identity
    if in_class or name in getattr(obj, "__dict__", ()):
        return getattr(obj, name)
    if isinstance(default, property):
        return default.fget(obj) if default.fget is not None else None
    if inspect.isfunction(default):
        return types.MethodType(default, obj)
    return default


@functools.lru_cache(maxsize=256)
def _declared(cls: type, base: type, name: str) -> tuple[Any, bool]:
    """``base``'s default for ``name`` and whether ``cls`` or a class it inherits from defines ``name``."""
    default = inspect.getattr_static(base, name, _MISSING)
    if default is _MISSING:
        raise AttributeError(f"{base.__name__} declares no optional member {name!r}")
    return default, any(name in vars(k) for k in inspect.getmro(cls))
